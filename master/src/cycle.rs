//! One master cycle (docs/design.md#master-cycle), all or nothing.
//!
//! Commit protocol (docs/formats.md): the journal is written first (cycle number, clock,
//! inputs); then every output is written under a temporary name and fsynced — new
//! current_log, queue files, reject files — with the routing plan journaled before it reaches
//! the database. Journaling `prepared` is the commit point. Publishing renames the outputs
//! into place, disposes of the inputs and removes the journal; it is idempotent, so a crash
//! during it is finished at the next start, and a crash before it redoes the cycle with the
//! same inputs, clock and plan, which yields the same bytes.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use anyhow::{anyhow, Context};

use crate::config::MasterConfig;
use crate::current_log;
use crate::ingest::{self, IngestStats};
use crate::join;
pub use crate::join::Tally;
use crate::journal::Journal;
use crate::logsaver;
use crate::names;
use crate::route::{Assignment, DomainMap};

/// Where the domain map lives: the database, behind retries in the daemon.
pub trait DomainStore: Send {
    /// The map at the start of a cycle (domains_from_db).
    fn load(&mut self) -> anyhow::Result<DomainMap>;
    /// Writes `plan` (idempotently) and returns the node each planned domain has in the
    /// database afterwards — ours, or another master's if it was first.
    fn apply(
        &mut self,
        plan: &[Assignment],
        by: &str,
        now: i64,
    ) -> anyhow::Result<HashMap<String, u32>>;
}

/// What a cycle did (logged, and shown on the status page).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CycleStats {
    pub seq: u64,
    pub ingest: IngestStats,
    pub parts: usize,
    /// What the join and filter_url counted.
    pub join: Tally,
    pub new_domains: u64,
    pub per_node: BTreeMap<u32, u64>,
    pub current_log_entries: u64,
    pub seconds: f64,
}

impl CycleStats {
    pub fn forwarded(&self) -> u64 {
        self.join.forwarded_new + self.join.forwarded_window + self.join.forwarded_updatetag
    }
}

/// The master's directories, as configured (relative to rootdir, the working directory).
pub struct Master<'a> {
    pub cfg: &'a MasterConfig,
    /// Inputs set aside ([`Master::set_aside_count`]).
    pub(crate) set_aside: AtomicU64,
}

/// An input an attempt at a cycle could not use: it is taken out and the cycle is computed
/// again without it.
struct Unusable {
    /// Its place in the journal's inputs.
    input: usize,
    why: String,
    /// Set aside for good; otherwise (still changing) left in place for a later cycle.
    set_aside: bool,
}

impl<'a> Master<'a> {
    pub fn new(cfg: &'a MasterConfig) -> Self {
        Master {
            cfg,
            set_aside: AtomicU64::new(0),
        }
    }
}

impl Master<'_> {
    pub(crate) fn current_log(&self) -> PathBuf {
        self.cfg.state_dir.join("current_log")
    }

    pub(crate) fn queue_name(&self, seq: u64) -> String {
        format!("{}-{seq:010}.q", self.cfg.name)
    }

    fn ensure_dirs(&self) -> anyhow::Result<()> {
        for d in [
            &self.cfg.state_dir,
            &self.cfg.queue_dir,
            &self.cfg.rejects_dir,
            &self.cfg.tmp_dir,
        ] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        if let Some(d) = &self.cfg.done_dir {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        Ok(())
    }

    /// Finishes or redoes a cycle a crash interrupted. Returns the cycle number, if any.
    pub fn recover(&self, store: &mut dyn DomainStore) -> anyhow::Result<Option<u64>> {
        self.ensure_dirs()?;
        let Some(journal) = Journal::load(&self.cfg.state_dir)? else {
            return Ok(None);
        };
        if journal.prepared {
            log::warn!(
                "cycle {}: was interrupted while publishing; finishing it",
                journal.seq
            );
            self.publish(&journal)?;
        } else {
            log::warn!(
                "cycle {}: was interrupted; redoing it with the same inputs and clock",
                journal.seq
            );
            self.execute(journal, store)?;
        }
        Ok(Some(journal_seq_done(&self.cfg.state_dir)?))
    }

    /// Runs a cycle over the ready inputs (`explicit`: given files, left in place, as
    /// `master replay` does). `None` when there is nothing to do.
    pub fn run(
        &self,
        store: &mut dyn DomainStore,
        now: i64,
        explicit: Option<Vec<PathBuf>>,
    ) -> anyhow::Result<Option<CycleStats>> {
        self.ensure_dirs()?;
        match explicit {
            Some(files) => self.run_inputs(store, now, files, true),
            None => {
                let ready = self.incoming()?.ready;
                self.run_inputs(store, now, ready, false)
            }
        }
    }

    /// Runs a cycle over `inputs` (`keep_inputs`: they stay where they are). `None` when there
    /// is nothing to do, or every input had to be left out.
    pub fn run_inputs(
        &self,
        store: &mut dyn DomainStore,
        now: i64,
        inputs: Vec<PathBuf>,
        keep_inputs: bool,
    ) -> anyhow::Result<Option<CycleStats>> {
        self.ensure_dirs()?;
        if let Some(j) = Journal::load(&self.cfg.state_dir)? {
            return Err(anyhow!(
                "cycle {} is still journaled; recover it first",
                j.seq
            ));
        }
        if inputs.is_empty() {
            return Ok(None);
        }
        let seq = match current_log::Reader::open(&self.current_log())? {
            Some(r) => r.cycle + 1,
            None => 1,
        };
        let journal = Journal {
            seq,
            now,
            keep_inputs,
            inputs,
            plan: None,
            prepared: false,
        };
        journal.save(&self.cfg.state_dir)?;
        self.execute(journal, store)
    }

    /// Computes the journaled cycle; an input it cannot use is taken out (and set aside, if
    /// it cannot be processed at all) and the cycle computed again without it, so that the
    /// journal is never redone over the same bad input for ever. `None`: no input was left.
    fn execute(
        &self,
        mut journal: Journal,
        store: &mut dyn DomainStore,
    ) -> anyhow::Result<Option<CycleStats>> {
        loop {
            let unusable = match self.attempt(&mut journal, store)? {
                Ok(stats) => return Ok(Some(stats)),
                Err(u) => u,
            };
            let input = journal.inputs.remove(unusable.input);
            if unusable.set_aside {
                self.set_aside(
                    &input,
                    &unusable.why,
                    Some(journal.seq),
                    journal.keep_inputs,
                )?;
            } else {
                log::warn!(
                    "cycle {}: {}: {}; left for a later cycle",
                    journal.seq,
                    names::printable(input.as_os_str()),
                    unusable.why
                );
            }
            // The plan was made with that input: planned again (what reached the database is
            // in the map the next attempt reads).
            journal.plan = None;
            if journal.inputs.is_empty() {
                self.discard_temporaries(journal.seq)?;
                Journal::remove(&self.cfg.state_dir)?;
                return Ok(None);
            }
            journal.save(&self.cfg.state_dir)?;
        }
    }

    /// Computes every output under temporary names, commits, publishes; or says which input
    /// it could not use.
    fn attempt(
        &self,
        journal: &mut Journal,
        store: &mut dyn DomainStore,
    ) -> anyhow::Result<Result<CycleStats, Unusable>> {
        let started = Instant::now();
        let cfg = self.cfg;
        self.discard_temporaries(journal.seq)?;
        let (map, mut ingested) = match self.read_inputs(journal, store)? {
            Ok(read) => read,
            Err(unusable) => return Ok(Err(unusable)),
        };
        let mut domains = std::mem::take(&mut ingested.domains);
        let parts = ingested.parts;
        log::debug!(
            "cycle {}: read {} lines into {parts} part(s) in {:.2} s",
            journal.seq,
            ingested.stats.lines,
            started.elapsed().as_secs_f64()
        );
        let mut stats = CycleStats {
            seq: journal.seq,
            parts,
            ingest: ingested.stats.clone(),
            ..Default::default()
        };

        // join + filter_url, in id order, on two threads: the new current_log and the
        // forwarded URLs.
        let next_log = cfg.state_dir.join("current_log.next");
        let rules = join::Rules {
            now: journal.now,
            window: cfg.filter.window,
            retention: cfg.filter.retention,
        };
        let joined = join::join(
            &ingested,
            &mut domains,
            &self.current_log(),
            &next_log,
            journal.seq,
            &cfg.tmp_dir,
            rules,
        )?;
        // The aggregates are merged: their memory goes back before the queue files are written.
        drop_aside(ingested.take_runs());
        let out = joined.log;
        // Synced while the cycle goes on; waited for before the commit point.
        let log_synced = std::thread::spawn(move || out.finish().map(drop));
        stats.join = joined.tally;
        stats.current_log_entries = joined.log_entries;

        log::debug!(
            "cycle {}: joined and filtered in {:.2} s",
            journal.seq,
            started.elapsed().as_secs_f64()
        );
        let mut forwarded = joined.forwarded;
        let (new_domains, writers) = self.route_and_save(
            journal,
            store,
            &map,
            &domains.names,
            &joined.counts,
            &mut forwarded,
        )?;
        stats.new_domains = new_domains;
        log::debug!(
            "cycle {}: routed and queue files written in {:.2} s",
            journal.seq,
            started.elapsed().as_secs_f64()
        );
        drop_aside(forwarded);
        for h in 0..2 {
            focuser_formats::fsutil::remove_if_exists(&join::forwarded_path(&cfg.tmp_dir, h))?;
        }
        sync_outputs(writers, &ingested.rejects, log_synced, &mut stats)?;
        log::debug!(
            "cycle {}: files synced in {:.2} s",
            journal.seq,
            started.elapsed().as_secs_f64()
        );
        if let Some(changed) = self.changed_input(journal, &ingested.sizes) {
            return Ok(Err(changed));
        }
        journal.prepared = true;
        journal.save(&cfg.state_dir)?;
        self.publish(journal)?;
        stats.seconds = started.elapsed().as_secs_f64();
        Ok(Ok(stats))
    }

    /// The inputs read (on threads of their own) while the domain map is read from the
    /// database; or the input that could not be read.
    #[allow(clippy::type_complexity)]
    fn read_inputs(
        &self,
        journal: &Journal,
        store: &mut dyn DomainStore,
    ) -> anyhow::Result<Result<(DomainMap, ingest::Ingested), Unusable>> {
        let cfg = self.cfg;
        let rules = ingest::LineRules {
            offset: cfg.utc_offset().map_err(|e| anyhow!(e))?,
            max_url: cfg.url.max_length,
            hosts: cfg.host_policy(),
        };
        // The domain map is read from the database while the inputs are read.
        let (map, ingested) = std::thread::scope(|scope| {
            let reading = scope.spawn(|| {
                ingest::ingest(
                    &journal.inputs,
                    ingest::threads(),
                    cfg.memory_budget(),
                    (&cfg.tmp_dir, &cfg.rejects_dir),
                    rules,
                )
            });
            let map = store.load().context("reading the domain map");
            let ingested = reading
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("reading thread panicked")));
            (map, ingested)
        });
        let ingested = match ingested {
            Err(e) => match ingest::failed_input(&e) {
                Some(failed) => {
                    return Ok(Err(Unusable {
                        input: failed.input,
                        why: failed.error.to_string(),
                        set_aside: true,
                    }))
                }
                None => return Err(anyhow::Error::new(e).context("reading the reflog files")),
            },
            Ok(i) => i,
        };
        Ok(Ok((map?, ingested)))
    }

    /// An input that changed size since the cycle read it (`sizes`): written to still, its
    /// disposal would lose what was added. It waits for a later cycle. (`master replay`'s
    /// inputs stay where they are: no loss.)
    fn changed_input(&self, journal: &Journal, sizes: &[u64]) -> Option<Unusable> {
        if journal.keep_inputs {
            return None;
        }
        journal
            .inputs
            .iter()
            .zip(sizes)
            .enumerate()
            .find_map(|(input, (path, &read))| {
                let now = std::fs::metadata(path).ok()?.len();
                (now != read).then(|| Unusable {
                    input,
                    why: format!("changed while the cycle read it ({read} bytes read, {now} now)"),
                    set_aside: false,
                })
            })
    }
}

/// The queue files, the reject files and the new current_log (`log_synced`, already on its
/// way) synced, all at once: the disk sees them together. The queue files' counts go into
/// `stats`.
fn sync_outputs(
    writers: BTreeMap<u32, logsaver::Queue>,
    rejects: &[(PathBuf, PathBuf)],
    log_synced: std::thread::JoinHandle<std::io::Result<()>>,
    stats: &mut CycleStats,
) -> anyhow::Result<()> {
    let mut queues = Vec::new();
    for (node, (_, w)) in writers {
        let (out, n) = w.finish()?;
        queues.push(out);
        stats.per_node.insert(node, n);
    }
    let mut files = Vec::new();
    for (tmp, _) in rejects {
        files.push(File::open(tmp)?);
    }
    // Every file synced at once: the disk sees them together.
    std::thread::scope(|scope| {
        let syncs: Vec<_> = queues
            .into_iter()
            .map(|q| scope.spawn(move || q.finish().map(drop)))
            .chain(files.iter().map(|f| scope.spawn(move || f.sync_all())))
            .collect();
        syncs.into_iter().try_for_each(|s| {
            s.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("fsync thread panicked")))
        })
    })?;
    log_synced
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("fsync thread panicked")))
        .context("syncing the new current_log")?;
    Ok(())
}

/// Frees `x` on a thread of its own: giving back hundreds of megabytes takes a while, and the
/// cycle has better things to do meanwhile (the fsyncs are ahead).
fn drop_aside<T: Send + 'static>(x: T) {
    if std::thread::Builder::new()
        .name("drop".into())
        .spawn(move || drop(x))
        .is_err()
    {
        log::debug!("no thread to free a cycle's memory on: freed in place");
    }
}

/// The cycle number in current_log after a recovery.
fn journal_seq_done(state_dir: &Path) -> anyhow::Result<u64> {
    Ok(current_log::Reader::open(&state_dir.join("current_log"))?
        .map(|r| r.cycle)
        .unwrap_or(0))
}
