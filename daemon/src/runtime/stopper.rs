//! What a stop signal sets in motion, and the exit without the main loop's cooperation.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::pidfile;

/// What a stop signal sets in motion, from the signal thread: the stop flag every worker
/// polls, and a watchdog that ends the process if the graceful stop takes too long.
#[derive(Clone)]
pub(super) struct Stopper {
    pub(super) stop: Arc<AtomicBool>,
    pub(super) timeout: Arc<AtomicU64>,
    pub(super) pidfile: Option<PathBuf>,
}

impl Stopper {
    pub(super) fn begin(&self) {
        if self.stop.swap(true, Ordering::SeqCst) {
            return;
        }
        let timeout = Duration::from_secs(self.timeout.load(Ordering::Relaxed));
        log::info!("stopping (at most {} s)", timeout.as_secs());
        let pidfile = self.pidfile.clone();
        let _ = std::thread::Builder::new()
            .name("stop-watchdog".into())
            .spawn(move || {
                std::thread::sleep(timeout);
                log::error!(
                    "did not stop within stop_timeout ({} s): exiting now",
                    timeout.as_secs()
                );
                exit_now(pidfile.as_deref());
            });
    }
}

/// Exit without the main loop's cooperation (second stop signal, stop watchdog).
pub(super) fn exit_now(pidfile: Option<&Path>) -> ! {
    if let Some(p) = pidfile {
        pidfile::remove_if_ours(p);
    }
    log::logger().flush();
    std::process::exit(1);
}
