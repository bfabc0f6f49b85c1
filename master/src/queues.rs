//! route and logsaver (docs/design.md#master-cycle, steps 5–7) at once: the plan is journaled
//! (before it reaches the database, so a redo reuses it) and written to partner_domain on a
//! thread of its own while the queue files are written as planned. Another master may have
//! given a planned domain first: then the queue files are written again, by the nodes the
//! database holds.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::time::Instant;

use anyhow::{anyhow, Context};
use focuser_formats::fsutil;
use focuser_formats::queue::{QueueHeader, QueueWriter};

use crate::bgwrite::BackgroundWriter;
use crate::config::MasterConfig;
use crate::cycle::{DomainStore, Master};
use crate::journal::Journal;
use crate::logsaver::{self, ForwardedList};
use crate::route::{self, Assignment, DomainCounts, DomainMap};

impl Master<'_> {
    /// Routes the cycle's new domains and writes the queue files. Returns the number of new
    /// domains and the queue files, by node.
    pub(crate) fn route_and_save(
        &self,
        journal: &mut Journal,
        store: &mut dyn DomainStore,
        map: &DomainMap,
        names: &[String],
        counts: &[DomainCounts],
        forwarded: &mut [ForwardedList],
    ) -> anyhow::Result<(u64, BTreeMap<u32, logsaver::Queue>)> {
        // Each domain's node at the start of the cycle; only domains without one are planned.
        let routed: Vec<Option<u32>> = names.iter().map(|d| map.routed(d)).collect();
        let plan = match journal.plan.clone() {
            Some(plan) => plan,
            None => route::plan_routed(
                map,
                names
                    .iter()
                    .zip(counts)
                    .zip(&routed)
                    .map(|((d, c), r)| (d.as_str(), *c, *r)),
            )?,
        };
        let node_of = |assigned: &HashMap<String, u32>| -> Vec<Option<u32>> {
            names
                .iter()
                .zip(&routed)
                .map(|(d, r)| r.or_else(|| assigned.get(d).copied()))
                .collect()
        };
        let planned: HashMap<String, u32> =
            plan.iter().map(|a| (a.domain.clone(), a.node)).collect();

        // logsaver: one queue file per node, records in id order.
        let (seq, now, cfg) = (journal.seq, journal.now, self.cfg);
        let open = |node: u32| self.open_queue(seq, now, node);
        let (assigned, writers) = std::thread::scope(|scope| {
            let plan = &plan;
            let routing = scope.spawn(move || save_plan(journal, store, plan, cfg));
            let t = Instant::now();
            let writers = logsaver::write_queues(forwarded, &node_of(&planned), &open);
            log::debug!(
                "cycle {seq}: queue records copied in {:.3} s",
                t.elapsed().as_secs_f64()
            );
            let assigned = routing
                .join()
                .unwrap_or_else(|_| Err(anyhow!("routing thread panicked")));
            (assigned, writers)
        });
        let assigned = assigned?;
        let mut writers = writers?;
        let mut taken: Vec<&String> = planned
            .iter()
            .filter(|(d, n)| assigned.get(*d) != Some(*n))
            .map(|(d, _)| d)
            .collect();
        taken.sort();
        if !taken.is_empty() {
            log::warn!(
                "cycle {seq}: {} planned domain(s) went to another master's node first \
                 (e.g. {}); writing the queue files again",
                taken.len(),
                taken[0]
            );
            drop(writers);
            self.discard_queue_temporaries(seq)?;
            writers = logsaver::write_queues(forwarded, &node_of(&assigned), &open)?;
        }
        Ok((plan.len() as u64, writers))
    }

    /// Cycle `seq`'s queue file for `node`, under a temporary name.
    fn open_queue(&self, seq: u64, now: i64, node: u32) -> anyhow::Result<logsaver::Queue> {
        let dir = self.cfg.queue_dir.join(node.to_string());
        std::fs::create_dir_all(&dir)?;
        let tmp = fsutil::temp_path(&dir.join(self.queue_name(seq)));
        let header = QueueHeader {
            master: self.cfg.name.clone(),
            cycle: seq,
            node,
            time: now,
        };
        let w = QueueWriter::new(BackgroundWriter::new(File::create(&tmp)?)?, &header)?;
        Ok((tmp, w))
    }
}

/// The plan journaled (once: a redo reuses it), then written to partner_domain: the domains
/// the database holds now, and their nodes.
fn save_plan(
    journal: &mut Journal,
    store: &mut dyn DomainStore,
    plan: &[Assignment],
    cfg: &MasterConfig,
) -> anyhow::Result<HashMap<String, u32>> {
    let t = Instant::now();
    if journal.plan.is_none() {
        journal.plan = Some(plan.to_vec());
        journal.save(&cfg.state_dir)?;
    }
    if plan.is_empty() {
        return Ok(HashMap::new());
    }
    let journaled = t.elapsed().as_secs_f64();
    let assigned = store
        .apply(plan, &cfg.name, journal.now)
        .context("writing partner_domain");
    log::debug!(
        "cycle {}: plan of {} domain(s) journaled in {journaled:.3} s, written to \
         partner_domain in {:.3} s",
        journal.seq,
        plan.len(),
        t.elapsed().as_secs_f64() - journaled
    );
    assigned
}
