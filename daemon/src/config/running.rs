//! The running config, shared with the daemon's threads. A reload replaces it; a thread takes
//! the current one at each unit of work (a batch, a cycle, a connection), so that what a
//! reload applies reaches it without the thread keeping a copy of its own.

use std::sync::{Arc, RwLock};

use super::Config;

pub struct RunningConfig<T>(Arc<RwLock<Arc<Config<T>>>>);

impl<T> Clone for RunningConfig<T> {
    fn clone(&self) -> Self {
        RunningConfig(Arc::clone(&self.0))
    }
}

impl<T> RunningConfig<T> {
    pub fn new(config: Config<T>) -> RunningConfig<T> {
        RunningConfig(Arc::new(RwLock::new(Arc::new(config))))
    }

    /// The config as it is now.
    pub fn get(&self) -> Arc<Config<T>> {
        match self.0.read() {
            Ok(c) => Arc::clone(&c),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    pub(crate) fn set(&self, config: Arc<Config<T>>) {
        match self.0.write() {
            Ok(mut c) => *c = config,
            Err(poisoned) => *poisoned.into_inner() = config,
        }
    }
}
