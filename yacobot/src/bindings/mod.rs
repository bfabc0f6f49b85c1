//! Ad bindings in the page analysis worker (`Bindings.Enable`; docs/bindings.md,
//! docs/operations.md "yacobot: bindings"): each page the worker analyses is bound, in the
//! worker's batch, with the weighted blocks and categories it has just made ([`page`]); the
//! bindings that changed are appended to the bindings store before the batch's transaction,
//! which writes `binding_page` and the store's committed place with the analysis rows and the
//! position ([`store`]). The dictionaries in force are looked at every batch ([`dicts`]).
//!
//! Binding inside the analysis worker rather than in a worker of its own: the page's weighted
//! words and categories are in hand (a second worker would read and analyse every page
//! again, or they would have to be stored), and one transaction moves the analysis, the
//! bindings and the position together, so crash safety is the analysis's own.

pub mod admin;
pub mod dicts;
pub mod page;
pub mod places;
pub mod stats;
pub mod store;

use std::sync::Arc;

use chrono::NaiveDateTime;
use focuser_daemon::db::Database;
use focuser_daemon::Config;
use focuser_formats::segment::Position;

use crate::config::YacobotConfig;
pub use page::{BindReader, PageBinder};
pub use stats::BindStats;
pub use store::{Shipment, Store};

/// The bindings half of the analysis worker.
pub struct Bindings {
    pub binder: PageBinder,
    store: Store,
    stats: Arc<BindStats>,
}

impl Bindings {
    /// `None` when `Bindings.Enable` is off.
    pub fn open(
        cfg: &Config<YacobotConfig>,
        db: &Database,
        stats: Arc<BindStats>,
    ) -> anyhow::Result<Option<Bindings>> {
        let d = &cfg.daemon;
        if !d.bindings.enable {
            return Ok(None);
        }
        let dir = cfg.common.path(&d.bindings.dir);
        let store = Store::open(&dir, d.segment.writer_options(), db, &d.node)?;
        log::info!("bindings: appending changed bindings to {}", store.name);
        stats
            .enabled
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(Some(Bindings {
            binder: PageBinder::new()?,
            store,
            stats,
        }))
    }

    /// At each batch: a dictionary loaded since is compiled and used from this batch on.
    pub fn refresh(&mut self, db: &Database) -> anyhow::Result<()> {
        self.binder.outcomes.clear();
        let news = self
            .binder
            .dicts
            .refresh(db, &mut self.binder.reader.tokenizer)?;
        for n in &news {
            log::info!("bindings: dictionary {n} in force");
        }
        if !news.is_empty() || self.binder.dicts.all().is_empty() {
            let all: Vec<String> = self
                .binder
                .dicts
                .all()
                .iter()
                .map(|l| format!("{} {}", l.dict.kind().name(), l.row.version))
                .collect();
            self.stats.set_dicts(if all.is_empty() {
                "none loaded".into()
            } else {
                all.join(", ")
            });
        }
        Ok(())
    }

    /// The batch's bindings compared, the changes appended and synced: what its transaction
    /// writes. `reached`: the archive position after the batch.
    pub fn ship(
        &mut self,
        db: &Database,
        reached: Position,
        now: NaiveDateTime,
    ) -> anyhow::Result<Shipment> {
        let outcomes = std::mem::take(&mut self.binder.outcomes);
        self.store.ship(db, &outcomes, reached, now)
    }

    pub fn store_name(&self) -> &str {
        &self.store.name
    }

    /// The batch's transaction committed.
    pub fn committed(&mut self, s: &Shipment) {
        self.store.committed(s);
        self.stats.batch(s);
    }

    pub fn housekeeping(&mut self) -> anyhow::Result<()> {
        self.store.housekeeping()
    }

    pub fn close(self) {
        if let Err(e) = self.store.close() {
            log::warn!("bindings: closing the store: {e:#}");
        }
    }
}
