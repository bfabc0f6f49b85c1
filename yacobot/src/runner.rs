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
