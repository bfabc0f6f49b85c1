//! The yacobot daemon: its workers on threads of their own, signals, and the figures the
//! main loop keeps (the number of due URLs).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use focuser_daemon::{Runtime, Signal};
use focuser_schema::models::{Url, VrResource};

use crate::config::YacobotConfig;
use crate::worker::{self, Ctx};
use crate::{crawl, loader, qargfilter, resources};

/// How often the main loop counts the due URLs (and reads the resources in error) for the
/// status page.
const COUNT_DUE_EVERY: Duration = Duration::from_secs(5);
/// Resources in error the status page lists at most.
const RESOURCES_SHOWN: i64 = 50;

type Worker = (&'static str, JoinHandle<anyhow::Result<()>>);

pub fn main_loop(rt: &mut Runtime<YacobotConfig>) -> anyhow::Result<()> {
    let db = rt
        .database()
        .cloned()
        .ok_or_else(|| anyhow!("no database configured"))?;
    let ctx = Arc::new(Ctx::new(db, rt.config().clone(), rt.stop_flag()));
    rt.add_status_source(ctx.stats.clone());
    if rt.config().daemon.resources.enable {
        rt.add_status_source(ctx.resources.clone());
    }
    if rt.once() {
        return once(&ctx);
    }
    let daemon = &rt.config().daemon;
    let mut workers: Vec<Worker> = Vec::new();
    if daemon.qargfilter.enable {
        workers.push(spawn(&ctx, "qargfilter", |c| {
            qargfilter::run(c);
            Ok(())
        })?);
    }
    if daemon.loader.enable {
        workers.push(spawn(&ctx, "loader", |c| {
            loader::run(c);
            Ok(())
        })?);
    }
    if daemon.crawl.enable {
        workers.push(spawn(&ctx, "crawl", crawl::run)?);
    }
    if daemon.resources.enable {
        workers.push(spawn(&ctx, "resources", resources::run)?);
    }
    log::info!(
        "yacobot {}: workers {}",
        daemon.node,
        workers
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut counted = Instant::now() - COUNT_DUE_EVERY;
    let mut failed = None;
    loop {
        match rt.next_signal(Duration::from_millis(250)) {
            Some(Signal::Stop) => break,
            Some(Signal::Rotate) => {
                ctx.rotate.store(true, Ordering::SeqCst);
                ctx.rotate_resources.store(true, Ordering::SeqCst);
            }
            Some(Signal::Reload) => {
                if let Ok(mut c) = ctx.config.write() {
                    *c = rt.config().clone();
                }
            }
            Some(Signal::ReopenLog) | None => {}
        }
        if rt.stopping() {
            break;
        }
        if let Some(i) = workers.iter().position(|(_, h)| h.is_finished()) {
            failed = Some(workers.remove(i));
            break;
        }
        // During an outage the workers wait for the database; the main loop does not, so
        // that signals are still obeyed.
        let health = ctx.db.health();
        let db_away = health.outages() > 0 && !health.is_up();
        if counted.elapsed() >= COUNT_DUE_EVERY && !db_away {
            counted = Instant::now();
            if let Ok(n) = ctx
                .db
                .run("counting due URLs", |c| Url::count_due(c, worker::now()))
            {
                ctx.stats.due.store(n.max(0) as u64, Ordering::Relaxed);
            }
            ctx.stats.sample_pages();
            if let Ok(r) = ctx.db.run("reading the resources in error", |c| {
                VrResource::in_error(c, RESOURCES_SHOWN)
            }) {
                ctx.stats.set_resources_in_error(&r);
            }
        }
    }
    ctx.stop.store(true, Ordering::SeqCst);
    let mut result = Ok(());
    if let Some((name, handle)) = failed {
        result = match handle.join() {
            Ok(Err(e)) => Err(e.context(format!("the {name} worker stopped"))),
            _ => Err(anyhow!("the {name} worker stopped")),
        };
    }
    for (name, handle) in workers {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => log::error!("{name}: {e:#}"),
            Err(_) => log::error!("{name}: the worker panicked"),
        }
    }
    result
}

fn spawn(
    ctx: &Arc<Ctx>,
    name: &'static str,
    body: impl FnOnce(Arc<Ctx>) -> anyhow::Result<()> + Send + 'static,
) -> anyhow::Result<Worker> {
    let ctx = Arc::clone(ctx);
    let handle = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || body(ctx))
        .with_context(|| format!("starting the {name} worker"))?;
    Ok((name, handle))
}

/// `--once`: one qargfilter import, every queue file ready, then crawl until nothing is due,
/// then one resources scan with every run it starts.
fn once(ctx: &Arc<Ctx>) -> anyhow::Result<()> {
    let cfg = ctx
        .config()
        .ok_or_else(|| anyhow!("config lock poisoned"))?;
    if cfg.daemon.qargfilter.enable {
        qargfilter::Import::default().once(ctx)?;
    }
    if cfg.daemon.loader.enable {
        let files = loader::Loader::default().pass(ctx, &cfg);
        log::info!("--once: {files} queue files handled");
    }
    if cfg.daemon.crawl.enable {
        crawl::until_idle(ctx)?;
    }
    if cfg.daemon.resources.enable {
        resources::once(ctx)?;
    }
    Ok(())
}
