//! A data source's sitemap → the feed URLs it lists (docs/design.md#yacobot-resources;
//! docs/formats.md "Sitemaps"). Two forms, told apart by content: a plain list (one URL a line) or
//! an XML `urlset` / `sitemapindex`. Every URL must start with `http` and be shorter than 255
//! bytes.

use std::collections::HashSet;
use std::fmt;

use md5::{Digest, Md5};
use quick_xml::events::Event;

use crate::encoding::{self, EncodingError};
use crate::xml_text::{line_col, push_entity};

/// A URL this many bytes long or longer is a format error (`resource_status.url` is
/// `VARCHAR(255)`).
pub const MAX_URL_BYTES: usize = 255;
/// Bad lines quoted in a format error; the rest are only counted.
const QUOTED_BAD_LINES: usize = 3;
/// Characters of a bad line quoted in a format error.
const EXCERPT_CHARS: usize = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SitemapKind {
    /// One URL a line.
    UrlList,
    /// XML `<urlset>`: the `<loc>` of each `<url>` is a feed URL.
    UrlSet,
    /// XML `<sitemapindex>`: the `<loc>` of each `<sitemap>` is another sitemap, which the
    /// caller fetches and parses in turn (one level: an index listed by an index is an error
    /// of the caller's).
    SitemapIndex,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sitemap {
    pub kind: SitemapKind,
    /// The URLs in the order listed, duplicates removed (the first is kept).
    pub urls: Vec<String>,
    /// Hex MD5 of the body as received ([`sitemap_md5`]).
    pub md5: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineProblem {
    NotHttp,
    /// Its length in bytes.
    TooLong(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based line of the sitemap (of the `<loc>` in an XML sitemap).
    pub line: u64,
    pub problem: LineProblem,
    /// The start of the line, at most 60 characters.
    pub excerpt: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problem {
            LineProblem::NotHttp => write!(
                f,
                "line {} does not start with http: \"{}\"",
                self.line, self.excerpt
            ),
            LineProblem::TooLong(len) => write!(
                f,
                "line {} is {len} bytes long (URLs must be shorter than {MAX_URL_BYTES}): \"{}…\"",
                self.line, self.excerpt
            ),
        }
    }
}

/// Why a sitemap was rejected. `Display` is a short sentence for `fetch_detail`; the caller
/// puts the data source's name in front of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SitemapError {
    #[error("the sitemap is empty")]
    Empty,
    #[error("the sitemap lists no URLs")]
    NoUrls,
    #[error("the sitemap cannot be decoded: {0}")]
    Encoding(#[from] EncodingError),
    #[error("the sitemap has a format error: {}", bad_lines(.bad, *.count))]
    Format {
        /// The first bad lines, in order.
        bad: Vec<BadLine>,
        /// Bad lines in all.
        count: usize,
    },
    #[error("the sitemap is not well-formed XML: {message} (line {line}, column {column})")]
    Xml {
        line: u64,
        column: u64,
        message: String,
    },
    #[error("the XML document is not a sitemap: its root element is <{0}>, not <urlset> or <sitemapindex>")]
    NotASitemap(String),
}

fn bad_lines(bad: &[BadLine], count: usize) -> String {
    let mut s = bad
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if count > bad.len() {
        s.push_str(&format!(" ({count} bad lines in all)"));
    }
    s
}

/// Hex MD5 of a sitemap body as received: the unchanged-sitemap check compares it with
/// `vr_open_datasource.sitemap_md5`.
pub fn sitemap_md5(body: &[u8]) -> String {
    crate::hex::encode(&Md5::digest(body))
}

/// Parses a sitemap body. `http_charset` is the charset of the response's `Content-Type`.
pub fn parse(body: &[u8], http_charset: Option<&str>) -> Result<Sitemap, SitemapError> {
    let text = encoding::decode_bytes(body, http_charset)?;
    let content = text.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    if content.is_empty() {
        return Err(SitemapError::Empty);
    }
    let mut urls = Urls::default();
    let kind = if content.starts_with('<') {
        parse_xml(&text, &mut urls)?
    } else {
        for (i, line) in text.split('\n').enumerate() {
            urls.push(i as u64 + 1, line);
        }
        SitemapKind::UrlList
    };
    if urls.bad_count > 0 {
        return Err(SitemapError::Format {
            bad: urls.bad,
            count: urls.bad_count,
        });
    }
    if urls.urls.is_empty() {
        return Err(SitemapError::NoUrls);
    }
    Ok(Sitemap {
        kind,
        urls: urls.urls,
        md5: sitemap_md5(body),
    })
}

#[derive(Default)]
struct Urls {
    urls: Vec<String>,
    seen: HashSet<String>,
    bad: Vec<BadLine>,
    bad_count: usize,
}

impl Urls {
    /// One line or `<loc>`: blanks around it trimmed, a blank one skipped.
    fn push(&mut self, line_no: u64, raw: &str) {
        let url = raw.trim();
        if url.is_empty() {
            return;
        }
        let problem = if url.len() >= MAX_URL_BYTES {
            Some(LineProblem::TooLong(url.len()))
        } else if !url.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("http")) {
            Some(LineProblem::NotHttp)
        } else {
            None
        };
        match problem {
            Some(problem) => {
                self.bad_count += 1;
                if self.bad.len() < QUOTED_BAD_LINES {
                    self.bad.push(BadLine {
                        line: line_no,
                        problem,
                        excerpt: url.chars().take(EXCERPT_CHARS).collect(),
                    });
                }
            }
            None if self.seen.insert(url.to_string()) => self.urls.push(url.to_string()),
            None => {}
        }
    }
}

/// An XML sitemap: the `<loc>` children of `<url>` (urlset) or `<sitemap>` (sitemapindex),
/// by local name so that any namespace prefix is accepted.
fn parse_xml(text: &str, urls: &mut Urls) -> Result<SitemapKind, SitemapError> {
    let mut reader = quick_xml::Reader::from_str(text);
    let xml_error = |offset: u64, message: String| {
        let (line, column) = line_col(text, offset);
        SitemapError::Xml {
            line,
            column,
            message,
        }
    };
    let mut kind = None;
    let mut stack: Vec<String> = Vec::new();
    let mut loc: Option<(u64, String)> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| xml_error(reader.error_position(), e.to_string()))?;
        match event {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_string();
                if stack.is_empty() && kind.is_none() {
                    kind = Some(root_kind(&name)?);
                }
                let entry = matches!(stack.last().map(String::as_str), Some("url" | "sitemap"));
                if stack.len() == 2 && entry && name == "loc" {
                    let (line, _) = line_col(text, reader.buffer_position());
                    loc = Some((line, String::new()));
                }
                stack.push(name);
            }
            Event::End(_) => {
                if stack.len() == 3 {
                    if let Some((line, value)) = loc.take() {
                        urls.push(line, &value);
                    }
                }
                stack.pop();
            }
            Event::Empty(e) if stack.is_empty() && kind.is_none() => {
                kind = Some(root_kind(e.local_name().as_ref())?);
            }
            Event::Text(t) => {
                if let Some((_, value)) = &mut loc {
                    value.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some((_, value)) = &mut loc {
                    value.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) => {
                if let Some((_, value)) = &mut loc {
                    push_entity(value, &r)
                        .map_err(|e| xml_error(reader.buffer_position(), e.to_string()))?;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(xml_error(
            text.len() as u64,
            format!("the document ends inside <{open}> (truncated?)"),
        ));
    }
    kind.ok_or(SitemapError::NoUrls)
}

fn root_kind(name: &str) -> Result<SitemapKind, SitemapError> {
    match name {
        "urlset" => Ok(SitemapKind::UrlSet),
        "sitemapindex" => Ok(SitemapKind::SitemapIndex),
        _ => Err(SitemapError::NotASitemap(name.to_string())),
    }
}
