//! The loader (docs/design.md#yacobot-loader): queue files from one inbox per master, in name
//! order, each applied in one transaction recorded in `queue_applied`, so that a file is applied
//! exactly once, even across crashes. A bad file (bad header, bad line, missing trailer, a record
//! that is not the master's) is moved to `<inbox>/bad/` with the reason in `bad/<name>.why`, and
//! nothing of it is applied.

mod apply;
mod check;
mod inbox;
mod left;
mod masters;
pub mod qargs;
mod stats;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apply::{Applied, Batching, LoadError, Loaded, QueueFile};
use check::Expect;
use focuser_daemon::clock;
use focuser_daemon::episode::Episode;
use focuser_daemon::Config;
use focuser_formats::queue::QueueError;
use focuser_schema::models::LoaderWatermark;
use inbox::Held;
use left::Left;
use log::Level;
pub use stats::{FileRow, LoaderStats};

use crate::config::YacobotConfig;
use crate::exclude::By;
use crate::status::add;
use crate::worker::{Ctx, Step, Worker};

/// A file that fails with a database error (not a lost connection) this many times in a
/// row is taken to be one the database cannot hold, and goes to `bad/`.
const MAX_DB_FAILURES: u32 = 3;

/// A file of an inbox being handled.
#[derive(Clone, Copy)]
struct InboxFile<'a> {
    master: &'a str,
    /// Its name (lossy, for the log and the status page).
    name: &'a str,
    path: &'a Path,
    started: Instant,
}

/// The worker: a pass over the inboxes every `Loader.Interval` seconds; its state between
/// passes.
#[derive(Default)]
pub struct Loader {
    stats: Arc<LoaderStats>,
    db_failures: HashMap<PathBuf, u32>,
    /// Files that could not be moved away: one line each, not one a pass.
    left: Left,
    /// An inbox that cannot be read, by master: one line, not one a pass.
    unreadable: HashMap<String, Episode>,
    /// `Url.StartFile` was read (at the first step).
    started: bool,
    /// When the loader began (seconds, this host's clock, as `loader_watermark.handled_at`):
    /// in duplicate mode, a primary that never handled a file is taken to keep up until
    /// `Loader.FailoverAfter` after it.
    began: i64,
    /// Duplicate mode: the primary has handled no file for `Loader.FailoverAfter`.
    failover: Option<Episode>,
}

impl Worker for Loader {
    const NAME: &'static str = "loader";
    type Figures = LoaderStats;

    fn enabled(cfg: &YacobotConfig) -> bool {
        cfg.loader.enable
    }

    fn open(_ctx: &Arc<Ctx>, stats: Arc<LoaderStats>) -> anyhow::Result<Loader> {
        Ok(Loader {
            stats,
            ..Loader::default()
        })
    }

    fn step(&mut self, ctx: &Ctx, once: bool) -> anyhow::Result<Step> {
        let cfg = ctx.config();
        if !self.started {
            if let Err(e) = self
                .start_file(ctx, &cfg)
                .and_then(|()| self.start_mode(ctx, &cfg))
            {
                return Ok(Step::Failed(e));
            }
            self.began = clock::unix_secs();
            self.started = true;
        }
        let files = self.pass(ctx, &cfg);
        if once {
            log::info!("--once: {files} queue files handled");
            return Ok(Step::Done);
        }
        Ok(Step::Idle(Duration::from_secs(cfg.daemon.loader.interval)))
    }

    fn close(self, _ctx: &Ctx) {}
}

impl Loader {
    /// `Url.StartFile`, once, before the first pass (a failure is tried again at the next
    /// step: what was added already is known then, and left alone).
    fn start_file(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> anyhow::Result<()> {
        let Some(file) = &cfg.daemon.url.start_file else {
            return Ok(());
        };
        let counts = crate::start::file::read(ctx, cfg, &cfg.common.path(file))?;
        self.stats.start_file(&counts);
        Ok(())
    }

    /// In disjoint mode the watermarks of an earlier duplicate mode are forgotten: the
    /// masters' files did not count each other's hits meanwhile.
    fn start_mode(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> anyhow::Result<()> {
        if cfg.daemon.loader.duplicate_primary().is_some() {
            return Ok(());
        }
        let n = ctx
            .db
            .run("forgetting the loader's watermarks", LoaderWatermark::clear)?;
        if n > 0 {
            log::info!("Loader.Mode = disjoint: {n} watermarks of the duplicate mode forgotten");
        }
        Ok(())
    }

    /// Whether a file of another master than the primary waits while the primary keeps up
    /// (counted); a failover (the primary silent for `Loader.FailoverAfter`) is logged as one
    /// episode. Only the header is read: a held file is not read whole at every pass.
    fn hold(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        at: &InboxFile<'_>,
        file: &Held,
        expect: &Expect<'_>,
    ) -> Result<bool, QueueError> {
        let loader = &cfg.daemon.loader;
        let master = at.master;
        let Some(primary) = loader.duplicate_primary().filter(|&p| p != master) else {
            return Ok(false);
        };
        let time = check::open(&file.file, expect)?.header.time;
        let held = self.held(ctx, cfg, primary, master, time);
        if held {
            add(&self.stats.files_held, 1);
            log::debug!("inbox {master}: {} held: the primary keeps up", at.name);
        }
        Ok(held)
    }

    fn held(
        &mut self,
        ctx: &Ctx,
        cfg: &Config<YacobotConfig>,
        primary: &str,
        master: &str,
        time: i64,
    ) -> bool {
        let loader = &cfg.daemon.loader;
        let marks = match ctx
            .db
            .run("reading the loader's watermarks", LoaderWatermark::all)
        {
            Ok(m) => m,
            Err(e) => {
                log::error!("inbox {master}: files held: cannot read the watermarks: {e}");
                return true;
            }
        };
        let now = clock::unix_secs();
        let held = masters::held(
            &marks,
            primary,
            time,
            self.began,
            now,
            loader.failover_after,
        );
        let covered = marks.iter().map(|m| masters::secs(m.covered)).max();
        if !held && covered.is_none_or(|c| time > c) {
            let why = format!(
                "no file of the primary for {} s (Loader.FailoverAfter): the files of {master} fill the gap",
                loader.failover_after
            );
            self.failover
                .get_or_insert_with(|| Episode::new(format!("Loader.Primary = {primary}")))
                .occurred(Level::Warn, &why);
        }
        held
    }

    /// Every file ready in every inbox, each inbox in name order (the primary's first, in
    /// duplicate mode). Returns the files handled.
    pub fn pass(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> usize {
        let mut handled = 0;
        let primary = cfg.daemon.loader.duplicate_primary();
        let mut inboxes: Vec<_> = cfg.daemon.loader.inbox.iter().collect();
        inboxes.sort_by_key(|(master, _)| Some(master.as_str()) != primary);
        self.stats.files_held.store(0, Ordering::Relaxed);
        for (master, dir) in inboxes {
            let dir = cfg.common.path(dir);
            let files = std::fs::create_dir_all(&dir).and_then(|()| inbox::ready(&dir));
            let episode = self
                .unreadable
                .entry(master.clone())
                .or_insert_with(|| Episode::new(format!("inbox {master}: {}", dir.display())));
            let files = match files {
                Ok(f) => {
                    episode.resolved(&"readable again");
                    f
                }
                Err(e) => {
                    episode.occurred(Level::Error, &e);
                    continue;
                }
            };
            self.left.listed(&dir, &files);
            for path in files {
                if ctx.stopping() {
                    return handled;
                }
                self.load(ctx, cfg, master, &path);
                handled += 1;
            }
        }
        handled
    }

    fn load(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>, master: &str, path: &Path) {
        let started = Instant::now();
        // A name that is not UTF-8 comes out with U+FFFD: not ASCII either.
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let at = InboxFile {
            master,
            name: &name,
            path,
            started,
        };
        let bad =
            |loader: &mut Loader, held: Option<&Held>, why: &str| loader.reject(&at, held, why);
        if name.len() > 255 || !name.is_ascii() {
            let why = "the file name is not ASCII of at most 255 bytes (queue_applied.file_name)";
            return bad(self, None, why);
        }
        let held = match Held::open(path) {
            Ok(h) => h,
            // Taken away since the scan (by an operator): nothing to do.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => return bad(self, None, &format!("cannot open: {e}")),
        };
        let expect = Expect {
            master,
            node: cfg.daemon.node_id,
        };
        let primary = cfg.daemon.loader.duplicate_primary();
        match self.hold(ctx, cfg, &at, &held, &expect) {
            Ok(false) => {}
            Ok(true) => return,
            Err(e) => return bad(self, Some(&held), &e.to_string()),
        }
        let checked = match check::whole_file(&held.file, &expect) {
            Ok(c) => c,
            Err(e) => return bad(self, Some(&held), &e.to_string()),
        };
        let records = checked.records;
        let file = QueueFile {
            source: master,
            name: &name,
            held: &held,
            expect,
            records,
            time: checked.time,
            duplicate: primary.is_some(),
        };
        log::debug!("inbox {master}: loading {name} ({records} URLs)");
        let loader = &cfg.daemon.loader;
        let how = Batching {
            batch: loader.batch,
            sort_buffer: loader.sort_buffer,
        };
        let result = apply::apply_file(ctx, &file, how, clock::db_now());
        let row = |result: &str| FileRow {
            time: clock::db_now().format("%Y-%m-%d %H:%M:%S").to_string(),
            inbox: master.to_string(),
            file: name.clone(),
            records,
            seconds: started.elapsed().as_secs_f64(),
            result: result.to_string(),
            bad: false,
        };
        if matches!(result, Ok(Applied::Loaded(_) | Applied::Skipped)) && primary == Some(master) {
            if let Some(failover) = &mut self.failover {
                failover.resolved(&"the primary's files are handled again");
            }
        }
        match result {
            Ok(Applied::Loaded(loaded)) => {
                self.db_failures.remove(path);
                ctx.exclusion.counted(By::Loader, loaded.excluded);
                note_applied(&self.stats, &at, records, loaded);
                self.stats.file_done(row("applied"));
                self.done_with(&at, &held, loader.keep_applied);
            }
            Ok(Applied::Skipped) => {
                self.db_failures.remove(path);
                add(&self.stats.files_skipped, 1);
                log::info!(
                    "inbox {master}: skipped {name}: {records} URLs, another master's files had counted its period (Loader.Mode = duplicate)"
                );
                self.stats
                    .file_done(row("skipped: counted from another master"));
                self.done_with(&at, &held, loader.keep_applied);
            }
            Ok(Applied::Already { row_count }) if u64::from(row_count) != records => {
                self.db_failures.remove(path);
                let why = format!(
                    "a file of this name was applied before with {row_count} URLs, this one has {records}: not applied"
                );
                bad(self, Some(&held), &why);
            }
            Ok(Applied::Already { .. }) => {
                self.db_failures.remove(path);
                // One this loader applied or found before and could not move away: said then.
                if !self.left.contains(path) {
                    add(&self.stats.files_already, 1);
                    log::warn!(
                        "inbox {master}: {name} was applied before (queue_applied); not applied again"
                    );
                    self.stats.file_done(row("already applied"));
                }
                self.done_with(&at, &held, loader.keep_applied);
            }
            Err(LoadError::Bad(e)) => bad(self, Some(&held), &e.to_string()),
            Err(LoadError::Stopped) => {
                log::info!("inbox {master}: stopping: {name} was rolled back; it is applied at the next start")
            }
            Err(LoadError::Db(e)) => {
                let n = self.db_failures.entry(path.to_path_buf()).or_insert(0);
                *n += 1;
                if *n >= MAX_DB_FAILURES {
                    self.db_failures.remove(path);
                    let why = format!("the database refused it {MAX_DB_FAILURES} times: {e}");
                    bad(self, Some(&held), &why);
                } else {
                    log::error!("inbox {master}: {name} not applied, tried again later: {e}");
                }
            }
        }
    }

    /// Sets a bad file aside in `bad/` (unless another file was renamed over its name since it
    /// was opened: that one is checked at the next pass). A file that cannot be moved is
    /// logged once, and then in a summary a minute while it stays.
    fn reject(&mut self, at: &InboxFile<'_>, held: Option<&Held>, why: &str) {
        let InboxFile {
            master,
            name,
            path,
            started,
        } = *at;
        if held.is_some_and(|h| !h.named(path)) {
            log::error!(
                "inbox {master}: bad queue file {name}: {why}; another file was put under its name meanwhile: left for the next pass"
            );
        } else {
            match inbox::reject(path, why) {
                Ok(_) => {
                    self.left.moved(path);
                    log::error!("inbox {master}: bad queue file {name}: {why}; moved to bad/");
                }
                Err(e) => {
                    let detail = format!("bad queue file: {why}; cannot move it to bad/: {e}");
                    if !self.left.failed(master, name, path, &detail) {
                        return;
                    }
                }
            }
        }
        add(&self.stats.files_bad, 1);
        self.stats.file_done(FileRow {
            time: clock::db_now().format("%Y-%m-%d %H:%M:%S").to_string(),
            inbox: master.to_string(),
            file: name.to_string(),
            records: 0,
            seconds: started.elapsed().as_secs_f64(),
            result: why.to_string(),
            bad: true,
        });
    }

    /// An applied file leaves the inbox: to `done/`, or deleted. If this fails (or the process
    /// dies first), the next pass finds the file recorded in `queue_applied` and tries again.
    /// A file renamed over the applied one's name meanwhile is another file: left for the next
    /// pass.
    fn done_with(&mut self, at: &InboxFile<'_>, held: &Held, keep: bool) {
        let InboxFile {
            master, name, path, ..
        } = *at;
        if !held.named(path) {
            log::warn!(
                "inbox {master}: {name}: applied, but another file was put under its name meanwhile: left for the next pass"
            );
            return;
        }
        let result = if keep {
            inbox::move_into(path, "done").map(|_| ())
        } else {
            inbox::remove(path)
        };
        match result {
            Ok(()) => self.left.moved(path),
            Err(e) => {
                let detail = format!("applied, but cannot move it away: {e}");
                self.left.failed(master, name, path, &detail);
            }
        }
    }
}

/// Counts and logs a file applied.
fn note_applied(s: &LoaderStats, at: &InboxFile<'_>, records: u64, loaded: Loaded) {
    let args = loaded.args;
    add(&s.files_applied, 1);
    add(&s.urls_loaded, records);
    add(&s.args_dropped, args.dropped);
    add(&s.args_kept, args.kept);
    add(&s.rules_new, args.new_rules);
    add(&s.urls_counted_elsewhere, loaded.counted_elsewhere);
    let mut excluded = match loaded.excluded {
        0 => String::new(),
        n => format!(", {n} excluded (Url.ExcludeFile)"),
    };
    if loaded.counted_elsewhere > 0 {
        excluded += &format!(
            ", {} counted from another master's files before",
            loaded.counted_elsewhere
        );
    }
    log::info!(
        "inbox {}: applied {}: {records} URLs, query arguments {} dropped, {} kept ({} new){excluded}, {:.2} s",
        at.master,
        at.name,
        args.dropped,
        args.kept,
        args.new_rules,
        at.started.elapsed().as_secs_f64()
    );
}
