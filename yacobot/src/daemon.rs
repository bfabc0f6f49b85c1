//! The yacobot daemon: its workers (one line each, below), signals passed on to them, and the
//! figures the main loop keeps (the number of due URLs, the resources in error).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use focuser_daemon::{clock, Runtime, Signal};
use focuser_schema::models::{Url, VrResource};

use crate::config::YacobotConfig;
use crate::runner::Workers;
use crate::status::NodeStats;
use crate::worker::Ctx;
use crate::{crawl, expiry, loader, multidoc, pathbinder, qargfilter, resources};

/// How often the main loop counts the due URLs (and reads the resources in error) for the
/// status page.
const COUNT_DUE_EVERY: Duration = Duration::from_secs(5);
/// Resources in error the status page lists at most.
const RESOURCES_SHOWN: i64 = 50;

pub fn main_loop(rt: &mut Runtime<YacobotConfig>) -> anyhow::Result<()> {
    let ctx = Arc::new(Ctx::new(
        rt.require_database()?,
        rt.config().clone(),
        rt.stop(),
    ));
    ctx.exclusion.load(rt.config())?;
    let node = Arc::new(NodeStats::default());
    rt.add_status_source(node.clone());
    rt.add_status_source(ctx.exclusion.clone());
    // The workers, each switched on by its `Enable`; with `--once` they run in this order,
    // one after the other, each until it is done.
    let mut workers = Workers::new(&ctx, rt.once());
    workers.run::<qargfilter::Qargfilter>(rt)?;
    workers.run::<loader::Loader>(rt)?;
    workers.run::<expiry::Expiry>(rt)?;
    workers.run::<crawl::Crawler>(rt)?;
    workers.run::<multidoc::MultiDoc>(rt)?;
    workers.run::<pathbinder::PathBinder>(rt)?;
    workers.run::<resources::Resources>(rt)?;
    if rt.once() {
        return Ok(());
    }
    log::info!(
        "yacobot {}: workers {}",
        rt.config().daemon.node,
        workers.names().join(", ")
    );
    let mut counted = Instant::now() - COUNT_DUE_EVERY;
    loop {
        match rt.next_signal(Duration::from_millis(250)) {
            Some(Signal::Stop) => break,
            Some(Signal::Rotate) => workers.signal(Signal::Rotate),
            Some(Signal::Reload) => {
                ctx.reload(rt.config().clone());
                ctx.exclusion.reload(rt.config());
                workers.signal(Signal::Reload);
            }
            Some(Signal::ReopenLog) | None => {}
        }
        if rt.stopping() || workers.one_ended() {
            break;
        }
        if counted.elapsed() >= COUNT_DUE_EVERY && count(&ctx, &node) {
            counted = Instant::now();
        }
    }
    ctx.stop.set();
    workers.join()
}

/// Counts the due URLs and reads the resources in error, unless the database is away: during
/// an outage the workers wait for it; the main loop does not, so that signals are still
/// obeyed. Returns whether it looked.
fn count(ctx: &Ctx, node: &NodeStats) -> bool {
    let health = ctx.db.health();
    if health.outages() > 0 && !health.is_up() {
        return false;
    }
    if let Ok(n) = ctx
        .db
        .run("counting due URLs", |c| Url::count_due(c, clock::db_now()))
    {
        node.due.store(n.max(0) as u64, Ordering::Relaxed);
    }
    if let Ok(r) = ctx.db.run("reading the resources in error", |c| {
        VrResource::in_error(c, RESOURCES_SHOWN)
    }) {
        node.set_resources_in_error(&r);
    }
    true
}
