//! What a completed fetch comes to: its copy appended to the archive (a deletion for a page
//! gone), its figures, and its [`Booking`].

use focuser_formats::segment::Status;
use focuser_schema::models::Url;

use super::archive::Archive;
use super::book::{self, Booking, Env};
use super::downloader::{Completed, Outcome};
use super::stats::{CrawlStats, ErrorRow};
use crate::status::add;

/// Archives what `c` brought (when there is an archive) and says how to book it.
pub fn booking(
    mut archive: Option<&mut Archive>,
    s: &CrawlStats,
    u: &Url,
    c: Completed,
    env: &Env<'_>,
) -> anyhow::Result<Booking> {
    let error = |kind: &str, reason: &str| {
        log::info!("{}: {kind}: {reason}", u.url);
        s.fetch_error(ErrorRow {
            time: env.now.format("%Y-%m-%d %H:%M:%S").to_string(),
            url: u.url.clone(),
            kind: kind.to_string(),
            reason: reason.to_string(),
        });
    };
    let status = c.status;
    Ok(match c.outcome {
        Outcome::Fetched(doc) => {
            let pos = match archive.as_mut() {
                Some(a) => Some(a.append(Status::Update, u.id, &u.url, &doc.body)?),
                None => None,
            };
            add(&s.pages, 1);
            add(&s.bytes, doc.body.len() as u64);
            log::debug!("fetched {}: {} bytes", u.url, doc.body.len());
            let status = status.unwrap_or(200);
            book::fetched(u, status, &doc.body, c.fetch_time, pos, env)
        }
        Outcome::Gone { status } => {
            if let Some(a) = archive {
                a.append(Status::Delete, u.id, &u.url, &[])?;
            }
            add(&s.gone, 1);
            log::info!("{}: gone (HTTP {status})", u.url);
            book::gone(u, status, c.fetch_time, env)
        }
        Outcome::Disallowed => {
            let reason = "disallowed by robots.txt";
            error("disallowed", reason);
            book::refused(u, "disallowed", reason, status, c.fetch_time, env)
        }
        Outcome::TooLarge { limit } => {
            let reason = format!("longer than {limit} bytes");
            error("too_large", &reason);
            book::refused(u, "too_large", &reason, status, c.fetch_time, env)
        }
        Outcome::WrongType { content_type } => {
            let reason = format!("content type {content_type}");
            error("wrong_type", &reason);
            book::refused(u, "wrong_type", &reason, status, c.fetch_time, env)
        }
        Outcome::Failed { kind, reason, .. } => {
            error(kind.name(), &reason);
            book::failed(u, kind.name(), &reason, status, c.fetch_time, env)
        }
    })
}
