//! The one runner of yacobot's workers: each on a thread of its own, stepped until the daemon
//! stops; signals passed on between steps; a failed step logged as an episode and tried again
//! after a back-off; an error that stops the worker stops the daemon. With `--once` each runs
//! on the caller's thread until it is done, in the order they are added.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use focuser_daemon::backoff::Backoff;
use focuser_daemon::episode::Episode;
use focuser_daemon::status::StatusSource;
use focuser_daemon::{Runtime, Signal};
use log::Level;

use crate::config::YacobotConfig;
use crate::worker::{Ctx, Step, Worker};

/// The wait after a failed step: doubling from the first to the last.
const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(60);

/// The workers of a daemon (or of a `--once` run).
pub struct Workers {
    ctx: Arc<Ctx>,
    once: bool,
    running: Vec<Running>,
    /// The first worker found ended before the stop.
    ended: Option<usize>,
}

/// A worker on its thread, and how the main loop reaches it.
struct Running {
    name: &'static str,
    thread: JoinHandle<anyhow::Result<()>>,
    signals: Sender<Signal>,
    wake: Arc<AtomicBool>,
}

/// Signals for a worker thread, and the flag that ends its wait when one comes.
struct Inbox {
    signals: Receiver<Signal>,
    wake: Arc<AtomicBool>,
}

impl Workers {
    pub fn new(ctx: &Arc<Ctx>, once: bool) -> Workers {
        Workers {
            ctx: Arc::clone(ctx),
            once,
            running: Vec::new(),
            ended: None,
        }
    }

    /// Runs `W` if the config switches it on: its figures on the status page, then the worker
    /// on a thread of its own (with `--once`: here, until it is done).
    pub fn run<W: Worker>(&mut self, rt: &Runtime<YacobotConfig>) -> anyhow::Result<()> {
        if !W::enabled(&self.ctx.config().daemon) {
            return Ok(());
        }
        let figures = Arc::new(W::Figures::default());
        rt.add_status_source(Arc::clone(&figures) as Arc<dyn StatusSource>);
        if self.once {
            return once::<W>(&self.ctx, figures);
        }
        let (signals, receiver) = mpsc::channel();
        let wake = Arc::new(AtomicBool::new(false));
        let inbox = Inbox {
            signals: receiver,
            wake: Arc::clone(&wake),
        };
        let ctx = Arc::clone(&self.ctx);
        let thread = std::thread::Builder::new()
            .name(W::NAME.into())
            .spawn(move || drive::<W>(&ctx, figures, Some(&inbox)))
            .with_context(|| format!("starting the {} worker", W::NAME))?;
        self.running.push(Running {
            name: W::NAME,
            thread,
            signals,
            wake,
        });
        Ok(())
    }

    /// The names of the workers running, in the order they started.
    pub fn names(&self) -> Vec<&'static str> {
        self.running.iter().map(|r| r.name).collect()
    }

    /// Passes a signal on to every worker, ending the waits of those that take it.
    pub fn signal(&self, signal: Signal) {
        for r in &self.running {
            if r.signals.send(signal).is_ok() {
                r.wake.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }

    /// Whether a worker has ended (which only a stop should do): the daemon stops with it.
    pub fn one_ended(&mut self) -> bool {
        self.ended = self.running.iter().position(|r| r.thread.is_finished());
        self.ended.is_some()
    }

    /// After the stop is set: waits for every worker. The one found ended gives the daemon's
    /// error; the others' errors are logged.
    pub fn join(self) -> anyhow::Result<()> {
        let ended = self.ended;
        let mut result = Ok(());
        for (i, r) in self.running.into_iter().enumerate() {
            let name = r.name;
            match (r.thread.join(), Some(i) == ended) {
                (Ok(Err(e)), true) => {
                    result = Err(e.context(format!("the {name} worker stopped")));
                }
                (_, true) => result = Err(anyhow!("the {name} worker stopped")),
                (Ok(Ok(())), false) => {}
                (Ok(Err(e)), false) => log::error!("{name}: {e:#}"),
                (Err(_), false) => log::error!("{name}: the worker panicked"),
            }
        }
        result
    }
}

/// `W` on this thread until it is done (`--once`, and the tools' and benchmarks' runs).
pub fn once<W: Worker>(ctx: &Arc<Ctx>, figures: Arc<W::Figures>) -> anyhow::Result<()> {
    drive::<W>(ctx, figures, None)
}

/// Opens `W`, steps it until the daemon stops or it is done, and closes it.
fn drive<W: Worker>(
    ctx: &Arc<Ctx>,
    figures: Arc<W::Figures>,
    inbox: Option<&Inbox>,
) -> anyhow::Result<()> {
    let mut worker = W::open(ctx, figures)?;
    let result = steps(&mut worker, ctx, inbox);
    worker.close(ctx);
    result
}

fn steps<W: Worker>(worker: &mut W, ctx: &Ctx, inbox: Option<&Inbox>) -> anyhow::Result<()> {
    let once = inbox.is_none();
    let mut backoff = Backoff::new(FIRST_RETRY, MAX_RETRY);
    let mut failing = Episode::new(W::NAME);
    let mut next = Instant::now();
    loop {
        if ctx.stopping() {
            return Ok(());
        }
        if let Some(inbox) = inbox {
            for signal in inbox.signals.try_iter() {
                if worker.on_signal(signal) {
                    next = Instant::now();
                }
            }
        }
        let wait = next.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            ctx.stop.sleep_or_wake(wait, inbox.map(|i| i.wake.as_ref()));
            continue;
        }
        let step = worker.step(ctx, once)?;
        if !matches!(step, Step::Failed(_)) {
            backoff.succeeded();
            failing.resolved(&"working again");
        }
        match step {
            Step::Busy => {}
            Step::Idle(d) => next = Instant::now() + d,
            Step::Done => return Ok(()),
            Step::Failed(e) if once => return Err(e),
            Step::Failed(e) => {
                failing.occurred(Level::Error, &format_args!("{e:#}"));
                next = Instant::now() + backoff.failed();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::VecDeque;
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    use focuser_daemon::db::Database;
    use focuser_daemon::status::Figure;
    use focuser_daemon::stop::Stop;
    use focuser_daemon::Config;

    use super::*;

    /// What a scripted worker does at each step, and what it saw.
    #[derive(Default)]
    struct Script {
        steps: Mutex<VecDeque<&'static str>>,
        stepped: Mutex<Vec<Instant>>,
        signals: Mutex<Vec<Signal>>,
        closed: AtomicBool,
    }

    impl StatusSource for Script {
        fn figures(&self) -> Vec<Figure> {
            Vec::new()
        }
    }

    struct Scripted(Arc<Script>);

    impl Worker for Scripted {
        const NAME: &'static str = "scripted";
        type Figures = Script;

        fn enabled(_cfg: &YacobotConfig) -> bool {
            true
        }

        fn open(_ctx: &Arc<Ctx>, script: Arc<Script>) -> anyhow::Result<Scripted> {
            Ok(Scripted(script))
        }

        fn step(&mut self, _ctx: &Ctx, _once: bool) -> anyhow::Result<Step> {
            self.0.stepped.lock().unwrap().push(Instant::now());
            Ok(match self.0.steps.lock().unwrap().pop_front() {
                Some("busy") => Step::Busy,
                Some("idle") => Step::Idle(Duration::from_secs(3600)),
                Some("failed") => Step::Failed(anyhow!("the database refused it")),
                Some("fatal") => return Err(anyhow!("no space left")),
                _ => Step::Done,
            })
        }

        fn on_signal(&mut self, signal: Signal) -> bool {
            self.0.signals.lock().unwrap().push(signal);
            signal == Signal::Rotate
        }

        fn close(self, _ctx: &Ctx) {
            self.0.closed.store(true, Ordering::SeqCst);
        }
    }

    /// A context whose database is never reached (the pool connects lazily).
    fn ctx(dir: &tempfile::TempDir) -> Arc<Ctx> {
        let file = dir.path().join("yacobot.cf");
        std::fs::write(&file, "node = t\nLoader.Enable = 0\n").unwrap();
        let url = "mysql://nobody@127.0.0.1:9/none";
        let config = Config::<YacobotConfig>::load(&file, Some(url.into())).unwrap();
        let stop = Stop::new();
        let db = Database::of(&config.common, 1, &stop).unwrap();
        Arc::new(Ctx::new(db, config, stop))
    }

    fn script(steps: &[&'static str]) -> Arc<Script> {
        let s = Script::default();
        s.steps.lock().unwrap().extend(steps);
        Arc::new(s)
    }

    #[test]
    fn once_steps_until_done_and_a_failed_or_fatal_step_is_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let s = script(&["busy", "busy", "done"]);
        once::<Scripted>(&ctx, Arc::clone(&s)).unwrap();
        assert_eq!(s.stepped.lock().unwrap().len(), 3);
        assert!(s.closed.load(Ordering::SeqCst));
        for (how, error) in [("failed", "refused"), ("fatal", "no space")] {
            let s = script(&[how, "done"]);
            let e = once::<Scripted>(&ctx, Arc::clone(&s)).unwrap_err();
            assert!(e.to_string().contains(error), "{e}");
            assert_eq!(s.stepped.lock().unwrap().len(), 1);
            assert!(s.closed.load(Ordering::SeqCst), "closed after an error too");
        }
    }

    #[test]
    fn a_failed_step_is_tried_again_after_a_back_off_and_a_signal_ends_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let s = script(&["failed", "idle", "done"]);
        let (signals, receiver) = mpsc::channel();
        let wake = Arc::new(AtomicBool::new(false));
        let inbox = Inbox {
            signals: receiver,
            wake: Arc::clone(&wake),
        };
        let t = Instant::now();
        let sender = {
            let (s, stop) = (Arc::clone(&s), ctx.stop.clone());
            std::thread::spawn(move || {
                // Once the worker idles (its second step), SIGUSR2 then SIGUSR1.
                while s.stepped.lock().unwrap().len() < 2 {
                    std::thread::sleep(Duration::from_millis(10));
                }
                for signal in [Signal::Reload, Signal::Rotate] {
                    signals.send(signal).unwrap();
                    wake.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(200));
                }
                // A worker still waiting is stopped: the test fails rather than hangs.
                let deadline = Instant::now() + Duration::from_secs(30);
                while s.stepped.lock().unwrap().len() < 3 && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                stop.set();
            })
        };
        drive::<Scripted>(&ctx, Arc::clone(&s), Some(&inbox)).unwrap();
        sender.join().unwrap();
        let stepped = s.stepped.lock().unwrap().clone();
        assert_eq!(stepped.len(), 3, "the signal ended the idle wait");
        assert!(stepped[1] - stepped[0] >= FIRST_RETRY, "a back-off");
        assert!(t.elapsed() < Duration::from_secs(30));
        assert_eq!(*s.signals.lock().unwrap(), [Signal::Reload, Signal::Rotate]);
        assert!(s.closed.load(Ordering::SeqCst));
    }

    #[test]
    fn the_stop_ends_a_wait_and_closes_the_worker() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let s = script(&["idle", "done"]);
        let (_signals, receiver) = mpsc::channel();
        let inbox = Inbox {
            signals: receiver,
            wake: Arc::new(AtomicBool::new(false)),
        };
        let stop = ctx.stop.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            stop.set();
        });
        let t = Instant::now();
        drive::<Scripted>(&ctx, Arc::clone(&s), Some(&inbox)).unwrap();
        stopper.join().unwrap();
        assert!(t.elapsed() < Duration::from_secs(30));
        assert_eq!(s.stepped.lock().unwrap().len(), 1, "no step after the stop");
        assert!(s.closed.load(Ordering::SeqCst));
    }
}
