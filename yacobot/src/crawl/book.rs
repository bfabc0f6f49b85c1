//! What the crawler writes to `url` for a URL it is done with, by what became of it.

use std::time::Duration;

use chrono::NaiveDateTime;
use focuser_formats::segment::Position;
use focuser_schema::models::{FetchState, Url, UrlChanges};
use md5::{Digest, Md5};

use super::bookkeeping::{adapt_steady, after_days, next_indexed, retry_at};
use crate::config::UrlConfig;

/// The clock and the settings every booking of a batch shares.
pub struct Env<'a> {
    pub now: NaiveDateTime,
    pub url: &'a UrlConfig,
    /// `Crawl.RetryLater`.
    pub retry_later: u64,
    /// Days until the next dictionary (see `bookkeeping::dictionary_days`).
    pub dictionary_days: f64,
}

/// The changes to one URL row; the strings they refer to are owned here.
#[derive(Debug, Clone)]
pub struct Booking {
    pub id: u64,
    base: UrlChanges<'static>,
    md5: Option<String>,
    doc_id: Option<String>,
    error: Option<String>,
}

impl Booking {
    /// The segment its archived copy is in, if it has one.
    pub fn archived_at(&self) -> Option<u64> {
        self.base.archive_file.flatten()
    }

    pub fn changes(&self) -> UrlChanges<'_> {
        UrlChanges {
            content_md5: self.md5.as_deref().map(Some).or(self.base.content_md5),
            doc_id: self.doc_id.as_deref().map(Some),
            fetch_error: Some(self.error.as_deref()),
            ..self.base.clone()
        }
    }

    /// The `next_indexed` written.
    pub fn next_indexed(&self) -> Option<NaiveDateTime> {
        self.base.next_indexed
    }
}

fn millis(d: Duration) -> Option<Option<u32>> {
    Some(Some(u32::try_from(d.as_millis()).unwrap_or(u32::MAX)))
}

fn archived(pos: Option<Position>) -> (Option<Option<u64>>, Option<Option<u32>>) {
    (Some(pos.map(|p| p.file_id)), Some(pos.map(|p| p.item_idx)))
}

/// Indexed now: no hits pending, due again by the dictionary and `steady`.
fn indexed(env: &Env<'_>, steady: f64) -> UrlChanges<'static> {
    UrlChanges {
        hits: Some(0),
        download_prio: Some(0),
        last_indexed: Some(Some(env.now)),
        next_indexed: Some(next_indexed(env.now, steady, env.dictionary_days)),
        steady_level: Some(steady),
        errors: Some(0),
        ..UrlChanges::default()
    }
}

pub fn md5_hex(body: &[u8]) -> String {
    focuser_feed::hex::encode(&Md5::digest(body))
}

/// Downloaded and archived at `pos` (`None`: the archive is off).
pub fn fetched(
    u: &Url,
    status: u16,
    body: &[u8],
    elapsed: Duration,
    pos: Option<Position>,
    env: &Env<'_>,
) -> Booking {
    let md5 = md5_hex(body);
    let changed = u.content_md5.as_ref().map(|old| *old != md5);
    let steady = adapt_steady(u.steady_level, changed, env.url);
    let (archive_file, archive_item) = archived(pos);
    Booking {
        id: u.id,
        base: UrlChanges {
            last_downloaded: Some(Some(env.now)),
            http_status: Some(Some(status)),
            fetch_state: Some(FetchState::Fetched),
            fetch_ms: millis(elapsed),
            last_fetch: Some(Some(env.now)),
            archive_file,
            archive_item,
            ..indexed(env, steady)
        },
        md5: Some(md5),
        doc_id: Some(focuser_formats::urls::doc_id(u.id)),
        error: None,
    }
}

/// Re-indexed from its archived copy, now written again at `pos`; not downloaded.
pub fn from_archive(u: &Url, pos: Position, env: &Env<'_>) -> Booking {
    let (archive_file, archive_item) = archived(Some(pos));
    Booking {
        id: u.id,
        base: UrlChanges {
            fetch_state: Some(FetchState::Fetched),
            archive_file,
            archive_item,
            ..indexed(env, u.steady_level)
        },
        md5: None,
        doc_id: Some(focuser_formats::urls::doc_id(u.id)),
        error: None,
    }
}

/// 404/410: gone, announced with a DELETE item; checked again when next due.
pub fn gone(u: &Url, status: u16, elapsed: Duration, env: &Env<'_>) -> Booking {
    Booking {
        id: u.id,
        base: UrlChanges {
            http_status: Some(Some(status)),
            fetch_state: Some(FetchState::Gone),
            fetch_ms: millis(elapsed),
            last_fetch: Some(Some(env.now)),
            content_md5: Some(None),
            archive_file: Some(None),
            archive_item: Some(None),
            ..indexed(env, u.steady_level)
        },
        md5: None,
        doc_id: u.doc_id.clone(),
        error: Some(format!("gone: HTTP {status}")),
    }
}

/// Refused for good (robots.txt, too large, wrong type): indexed with nothing, so that it
/// waits for its next turn instead of being fetched again at once.
pub fn refused(
    u: &Url,
    kind: &str,
    reason: &str,
    status: Option<u16>,
    elapsed: Duration,
    env: &Env<'_>,
) -> Booking {
    Booking {
        id: u.id,
        base: UrlChanges {
            http_status: Some(status),
            fetch_state: Some(FetchState::Failed),
            fetch_ms: millis(elapsed),
            last_fetch: Some(Some(env.now)),
            errors: Some(u.errors.saturating_add(1)),
            ..indexed(env, u.steady_level)
        },
        md5: None,
        doc_id: u.doc_id.clone(),
        error: Some(cut(&format!("{kind}: {reason}"))),
    }
}

/// Claimed, then found excluded by the exclusion file (`why`: its file, line and rule): not
/// fetched; parked until `Url.ReindexPeriod` days from now, its hits kept, so that it comes
/// back by itself once the rule is lifted.
pub fn excluded(u: &Url, why: &str, env: &Env<'_>) -> Booking {
    Booking {
        id: u.id,
        base: UrlChanges {
            next_indexed: Some(after_days(env.now, env.url.reindex_period)),
            fetch_state: Some(FetchState::Excluded),
            ..UrlChanges::default()
        },
        md5: None,
        doc_id: u.doc_id.clone(),
        error: Some(cut(&format!("excluded: {why}"))),
    }
}

/// Failed after the fetcher's tries: hits stay, tried again after `Crawl.RetryLater`,
/// doubling per failure in a row.
pub fn failed(
    u: &Url,
    kind: &str,
    reason: &str,
    status: Option<u16>,
    elapsed: Duration,
    env: &Env<'_>,
) -> Booking {
    let errors = u.errors.saturating_add(1);
    Booking {
        id: u.id,
        base: UrlChanges {
            next_indexed: Some(retry_at(env.now, errors, env.retry_later, env.url)),
            http_status: Some(status),
            fetch_state: Some(FetchState::Failed),
            fetch_ms: millis(elapsed),
            last_fetch: Some(Some(env.now)),
            errors: Some(errors),
            ..UrlChanges::default()
        },
        md5: None,
        doc_id: u.doc_id.clone(),
        error: Some(cut(&format!("{kind}: {reason}"))),
    }
}

/// `fetch_error` holds 255 characters.
fn cut(s: &str) -> String {
    s.chars().take(255).collect()
}
