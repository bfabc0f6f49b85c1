//! A data source's sitemap as fetched: its URLs, or a sentence for `fetch_detail` saying why
//! it failed (docs/design.md#yacobot-resources; docs/formats.md "Sitemaps").

use focuser_feed::encoding::charset_of_content_type;
use focuser_feed::sitemap::{self, SitemapKind};
use focuser_fetch::{Completed, Outcome};

/// What one sitemap gave.
pub enum Got {
    Urls {
        urls: Vec<String>,
        md5: String,
    },
    /// A `sitemapindex`: the sitemaps it lists, fetched in turn (one level).
    Index {
        sitemaps: Vec<String>,
        md5: String,
    },
}

/// The outcome of a fetched sitemap.
pub fn parse(c: &Completed, child: bool) -> Result<Got, String> {
    let doc = match &c.outcome {
        Outcome::Fetched(doc) => doc,
        other => {
            return Err(format!(
                "the sitemap {} could not be fetched: {}",
                c.request.url,
                why(other)
            ))
        }
    };
    let charset = charset_of_content_type(&doc.content_type);
    let map = sitemap::parse(&doc.body, charset).map_err(|e| format!("{}: {e}", c.request.url))?;
    match map.kind {
        SitemapKind::SitemapIndex if child => Err(format!(
            "{}: a sitemap index lists another sitemap index (one level only)",
            c.request.url
        )),
        SitemapKind::SitemapIndex => Ok(Got::Index {
            sitemaps: map.urls,
            md5: map.md5,
        }),
        SitemapKind::UrlList | SitemapKind::UrlSet => Ok(Got::Urls {
            urls: map.urls,
            md5: map.md5,
        }),
    }
}

/// Why a fetch did not give a document, in a few words.
pub fn why(o: &Outcome) -> String {
    match o {
        Outcome::Fetched(_) => "fetched".into(),
        Outcome::Gone { status } => format!("HTTP {status}"),
        Outcome::Disallowed => "disallowed by robots.txt".into(),
        Outcome::TooLarge { limit } => format!("larger than {limit} bytes (Resources.MaxBytes)"),
        Outcome::WrongType { content_type } => format!("content type {content_type}"),
        Outcome::Failed { kind, reason, .. } => format!("{}: {reason}", kind.name()),
    }
}
