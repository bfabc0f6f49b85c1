//! Withdrawal (docs/design.md#yacobot-withdrawal): the crawl worker owns the archive, so it is
//! the one that announces a URL's departure downstream. Marked rows (`url.withdraw`, set by
//! `Url::withdraw`: qargfilter's merging, the frontier's expiry) are taken in batches; each
//! batch is claimed for this crawler's withdrawal tag in the transaction that records where
//! in the archive its items begin (`withdraw_position`); a `DELETE` item is appended for each
//! row and synced; then the rows are removed. After a `kill -9` between the sync and the
//! removal, the rows the tag still holds are looked up in the archive from that place: the
//! items found there are not appended again, the others are. No `DELETE` is lost, none is
//! written twice.
//!
//! A batch is taken only when no fetched page waits to be booked (nothing appended since the
//! last sync but this batch's items), and never of a URL held by a live claim (one being
//! fetched is withdrawn after its booking, so that its `DELETE` follows its `UPDATE`).

use std::time::{Duration, Instant};

use chrono::TimeDelta;
use focuser_daemon::clock;
use focuser_formats::segment::{Cursor, Position, Status};
use focuser_formats::urls;
use focuser_schema::models::{WithdrawPosition, WithdrawReason, Withdrawal};
use rustc_hash::FxHashSet;

use super::archive::Archive;
use super::stats::CrawlStats;
use crate::status::add;
use crate::worker::Ctx;

/// Rows per batch.
pub const BATCH: i64 = 500;
/// How often the crawler looks for marked rows when the last look found none.
const LOOK_EVERY: Duration = Duration::from_secs(1);

pub struct Withdrawer {
    node: String,
    /// The archive's name in `withdraw_position` (its folder, as `multidoc_position` names it).
    store: String,
    /// What this crawler writes in `url.claimed_by` for the batch it holds: the same across
    /// restarts of the same node and archive (unlike the fetch claims' `node/pid`).
    tag: String,
    /// Whether the rows held under the tag must be looked for (at start, after a failure).
    check_held: bool,
    next_look: Option<Instant>,
}

/// The tag of a node's crawler writing to `store`.
pub fn tag(node: &str, store: &str) -> String {
    format!(
        "withdraw:{:016x}",
        urls::url_id(&format!("{node}\n{store}"))
    )
}

impl Withdrawer {
    pub fn new(node: &str, store: &str) -> Withdrawer {
        Withdrawer {
            node: node.to_string(),
            store: store.to_string(),
            tag: tag(node, store),
            check_held: true,
            next_look: None,
        }
    }

    /// Whether a look is due (`now`: whatever the last look found).
    pub fn due(&self, now: bool) -> bool {
        now || self.check_held || self.next_look.is_none_or(|t| Instant::now() >= t)
    }

    /// One batch, if there is one: returns the rows it took (removed, or given back when a
    /// queue file brought them hits meanwhile). On an error the batch stays held and is
    /// finished by a later call.
    pub fn step(
        &mut self,
        ctx: &Ctx,
        archive: Option<&mut Archive>,
        claim_ttl: u64,
        stats: &CrawlStats,
    ) -> anyhow::Result<usize> {
        let r = self.batch(ctx, archive, claim_ttl, stats);
        match &r {
            Ok(n) if (*n as i64) < BATCH => {
                self.next_look = Some(Instant::now() + LOOK_EVERY);
            }
            Ok(_) => self.next_look = None,
            Err(_) => self.check_held = true,
        }
        r
    }

    fn batch(
        &mut self,
        ctx: &Ctx,
        archive: Option<&mut Archive>,
        claim_ttl: u64,
        stats: &CrawlStats,
    ) -> anyhow::Result<usize> {
        let tag = self.tag.clone();
        let mut rows = Vec::new();
        let mut durable = FxHashSet::default();
        if self.check_held {
            rows = ctx.db.run("reading the URLs held for withdrawal", |c| {
                Withdrawal::held(c, &tag)
            })?;
            if !rows.is_empty() {
                durable = self.already_appended(ctx, archive.as_deref(), &rows)?;
                add(&stats.withdraw_found, durable.len() as u64);
                log::info!(
                    "withdrawal: {} URLs held from an interrupted batch, {} of their DELETE items already in the archive",
                    rows.len(),
                    durable.len()
                );
            }
            self.check_held = false;
        }
        if rows.is_empty() {
            let begins = archive
                .as_deref()
                .map(|a| a.position())
                .unwrap_or(Position::START);
            let now = clock::db_now();
            let expires = now + TimeDelta::seconds(claim_ttl as i64);
            let (node, store) = (self.node.clone(), self.store.clone());
            rows = ctx.db.run("taking URLs to withdraw", |c| {
                Withdrawal::take(
                    c,
                    &tag,
                    &node,
                    &store,
                    (begins.file_id, begins.item_idx),
                    now,
                    expires,
                    BATCH,
                )
            })?;
        }
        if rows.is_empty() {
            return Ok(0);
        }
        if let Some(a) = archive {
            let mut appended = 0;
            for r in rows.iter().filter(|r| !durable.contains(&r.id)) {
                a.append(Status::Delete, r.id, &r.url, &[])?;
                appended += 1;
            }
            a.sync()?;
            add(&stats.withdraw_items, appended);
        }
        let ids: Vec<u64> = rows.iter().map(|r| r.id).collect();
        let removed = ctx.db.run("removing withdrawn URLs", |c| {
            Withdrawal::remove(c, &tag, &ids)
        })?;
        for r in &rows {
            match r.withdraw {
                Some(WithdrawReason::Merged) => add(&stats.withdrawn_merged, 1),
                Some(WithdrawReason::Expired) => add(&stats.withdrawn_expired, 1),
                _ => add(&stats.withdrawn_other, 1),
            }
        }
        log::debug!(
            "withdrawal: {} URLs announced gone, {removed} removed",
            rows.len()
        );
        Ok(rows.len())
    }

    /// The ids among `rows` whose `DELETE` item is in the archive after the place their
    /// batch was taken at (a crash came after they were made durable).
    fn already_appended(
        &self,
        ctx: &Ctx,
        archive: Option<&Archive>,
        rows: &[Withdrawal],
    ) -> anyhow::Result<FxHashSet<u64>> {
        let Some(archive) = archive else {
            return Ok(FxHashSet::default());
        };
        let (node, store) = (self.node.clone(), self.store.clone());
        let begins = ctx
            .db
            .run("reading where the withdrawal batch began", |c| {
                WithdrawPosition::find(c, &node, &store)
            })?;
        let Some(begins) = begins else {
            return Ok(FxHashSet::default());
        };
        let wanted: FxHashSet<String> = rows.iter().map(|r| urls::doc_id(r.id)).collect();
        let (file_id, item_idx) = begins.place();
        let mut cursor = Cursor::new(archive.dir(), Position { file_id, item_idx }, None);
        let mut found = FxHashSet::default();
        loop {
            match cursor.next() {
                Ok(Some(s)) => {
                    if s.item.status == Status::Delete {
                        if let Ok(doc) = std::str::from_utf8(&s.item.doc_id) {
                            if wanted.contains(doc) {
                                if let Ok(id) = u64::from_str_radix(doc, 16) {
                                    found.insert(id);
                                }
                            }
                        }
                    }
                }
                Ok(None) => break,
                Err(e) if e.is_damage() => log::warn!("withdrawal: archive: {e}"),
                Err(e) => return Err(e.into()),
            }
        }
        if let Some((from, to)) = cursor.take_gap() {
            log::warn!(
                "withdrawal: archive segments {from}..{to} are gone: DELETE items there cannot be told apart and are appended again"
            );
        }
        Ok(found)
    }
}
