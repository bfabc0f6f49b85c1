//! One page fetched for `yacobot analyze URL`, through the crawler's own fetcher
//! (focuser-fetch) with the `Fetch.*` settings: robots.txt, limits, retries, and the refusal of
//! internal addresses unless `Fetch.AllowPrivate` names them.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use focuser_fetch::{Fetcher, Outcome, Request};

use crate::config::FetchConfig;

/// What the server sent.
pub struct Fetched {
    pub body: Vec<u8>,
    pub content_type: String,
    /// The URL after redirects.
    pub url: String,
}

/// Fetches `url`; anything but a document is an error saying why.
pub fn fetch(url: &str, cfg: &FetchConfig) -> anyhow::Result<Fetched> {
    let settings = cfg.fetcher().map_err(|e| anyhow!(e))?;
    // The fetcher ends every request within its own timeouts; this is only a backstop.
    let tries = f64::from(settings.retries) + 2.0;
    let per_try = settings.connect_timeout + settings.timeout + settings.retry_delay;
    let backstop = per_try.mul_f64(tries) * 2 + settings.max_retry_after + Duration::from_secs(30);
    let mut fetcher = Fetcher::new(settings)?;
    fetcher.submit(Request {
        token: 0,
        url: url.to_owned(),
    });
    let start = Instant::now();
    loop {
        if let Some(done) = fetcher.perform(Duration::from_millis(200))?.pop() {
            return match done.outcome {
                Outcome::Fetched(doc) => Ok(Fetched {
                    body: doc.body,
                    content_type: doc.content_type,
                    url: done.final_url,
                }),
                other => Err(anyhow!("not fetched: {}", why(&other))),
            };
        }
        if start.elapsed() > backstop {
            bail!("no answer within {} s", backstop.as_secs());
        }
    }
}

/// Why a fetch gave no document, in a few words naming the key that decided it.
fn why(o: &Outcome) -> String {
    match o {
        Outcome::Fetched(_) => "fetched".into(),
        Outcome::Gone { status } => format!("HTTP {status} (gone)"),
        Outcome::Disallowed => "disallowed by robots.txt".into(),
        Outcome::TooLarge { limit } => format!("larger than {limit} bytes (Fetch.MaxBytes)"),
        Outcome::WrongType { content_type } => {
            format!("content type {content_type:?} is not in Fetch.AllowedTypes")
        }
        Outcome::Failed { kind, reason, .. } => format!("{}: {reason}", kind.name()),
    }
}
