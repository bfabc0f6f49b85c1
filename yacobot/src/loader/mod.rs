//! The loader (SPEC §6): queue files from one inbox per master, in name order, each applied
//! in one transaction recorded in `queue_applied`, so that a file is applied exactly once,
//! even across crashes. A bad file (bad header, bad line, missing trailer, a record that is
//! not the master's) is moved to `<inbox>/bad/` with the reason in `bad/<name>.why`, and
//! nothing of it is applied.

mod apply;
mod check;
mod inbox;
pub mod qargs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use apply::{Applied, Batching, LoadError, QueueFile};
use check::Expect;
use focuser_daemon::Config;

use crate::config::YacobotConfig;
use crate::status::{add, FileRow};
use crate::worker::{self, Ctx};

/// A file that fails with a database error (not a lost connection) this many times in a
/// row is taken to be one the database cannot hold, and goes to `bad/`.
const MAX_DB_FAILURES: u32 = 3;

/// The loader's state between passes.
#[derive(Default)]
pub struct Loader {
    db_failures: HashMap<PathBuf, u32>,
}

/// The worker thread: a pass over the inboxes every `Loader.Interval` seconds.
pub fn run(ctx: Arc<Ctx>) {
    let mut loader = Loader::default();
    let never = AtomicBool::new(false);
    loop {
        let Some(cfg) = ctx.config() else { return };
        loader.pass(&ctx, &cfg);
        if !ctx.pause(Duration::from_secs(cfg.daemon.loader.interval), &never) {
            return;
        }
    }
}

impl Loader {
    /// Every file ready in every inbox, each inbox in name order. Returns the files handled.
    pub fn pass(&mut self, ctx: &Ctx, cfg: &Config<YacobotConfig>) -> usize {
        let mut handled = 0;
        for (master, dir) in &cfg.daemon.loader.inbox {
            let dir = cfg.common.path(dir);
            let files = std::fs::create_dir_all(&dir).and_then(|()| inbox::ready(&dir));
            let files = match files {
                Ok(f) => f,
                Err(e) => {
                    log::error!("inbox {master}: {}: {e}", dir.display());
                    continue;
                }
            };
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
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let expect = Expect {
            master,
            node: cfg.daemon.node_id,
        };
        let checked = if name.len() > 255 || !name.is_ascii() {
            Err("the file name is not ASCII of at most 255 bytes (queue_applied.file_name)".into())
        } else {
            check::whole_file(path, &expect).map_err(|e| e.to_string())
        };
        let records = match checked {
            Ok(n) => n,
            Err(why) => return self.reject(ctx, master, &name, path, &why, started),
        };
        let file = QueueFile {
            source: master,
            name: &name,
            path,
            expect,
            records,
        };
        let loader = &cfg.daemon.loader;
        log::debug!("inbox {master}: loading {name} ({records} URLs)");
        let row = |result: &str, bad: bool| FileRow {
            time: worker::now().format("%Y-%m-%d %H:%M:%S").to_string(),
            inbox: master.to_string(),
            file: name.clone(),
            records,
            seconds: started.elapsed().as_secs_f64(),
            result: result.to_string(),
            bad,
        };
        let how = Batching {
            batch: loader.batch,
            sort_buffer: loader.sort_buffer,
        };
        match apply::apply_file(ctx, &file, how, worker::now()) {
            Ok(Applied::Applied(args)) => {
                self.db_failures.remove(path);
                let s = &ctx.stats;
                add(&s.files_applied, 1);
                add(&s.urls_loaded, records);
                add(&s.args_dropped, args.dropped);
                add(&s.args_kept, args.kept);
                add(&s.rules_new, args.new_rules);
                log::info!(
                    "inbox {master}: applied {name}: {records} URLs, query arguments {} dropped, {} kept ({} new), {:.2} s",
                    args.dropped,
                    args.kept,
                    args.new_rules,
                    started.elapsed().as_secs_f64()
                );
                ctx.stats.file_done(row("applied", false));
                done_with(path, loader.keep_applied);
            }
            Ok(Applied::Already) => {
                self.db_failures.remove(path);
                add(&ctx.stats.files_already, 1);
                log::warn!(
                    "inbox {master}: {name} was applied before (queue_applied); not applied again"
                );
                ctx.stats.file_done(row("already applied", false));
                done_with(path, loader.keep_applied);
            }
            Err(LoadError::Bad(e)) => {
                self.reject(ctx, master, &name, path, &e.to_string(), started)
            }
            Err(LoadError::Stopped) => {
                log::info!("inbox {master}: stopping: {name} was rolled back; it is applied at the next start")
            }
            Err(LoadError::Db(e)) => {
                let n = self.db_failures.entry(path.to_path_buf()).or_insert(0);
                *n += 1;
                if *n >= MAX_DB_FAILURES {
                    self.db_failures.remove(path);
                    let why = format!("the database refused it {MAX_DB_FAILURES} times: {e}");
                    self.reject(ctx, master, &name, path, &why, started);
                } else {
                    log::error!("inbox {master}: {name} not applied, tried again later: {e}");
                }
            }
        }
    }

    fn reject(
        &mut self,
        ctx: &Ctx,
        master: &str,
        name: &str,
        path: &Path,
        why: &str,
        started: Instant,
    ) {
        add(&ctx.stats.files_bad, 1);
        match inbox::reject(path, why) {
            Ok(_) => log::error!("inbox {master}: bad queue file {name}: {why}; moved to bad/"),
            Err(e) => log::error!(
                "inbox {master}: bad queue file {name}: {why}; cannot move it to bad/: {e}"
            ),
        }
        ctx.stats.file_done(FileRow {
            time: worker::now().format("%Y-%m-%d %H:%M:%S").to_string(),
            inbox: master.to_string(),
            file: name.to_string(),
            records: 0,
            seconds: started.elapsed().as_secs_f64(),
            result: why.to_string(),
            bad: true,
        });
    }
}

/// An applied file leaves the inbox: to `done/`, or deleted. If this fails (or the process
/// dies first), the next pass finds the file recorded in `queue_applied` and tries again.
fn done_with(path: &Path, keep: bool) {
    let result = if keep {
        inbox::move_into(path, "done").map(|_| ())
    } else {
        inbox::remove(path)
    };
    if let Err(e) = result {
        log::error!("{}: applied, but cannot move it away: {e}", path.display());
    }
}
