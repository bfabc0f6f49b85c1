//! `Fetch.Backend = mirror`: pages read from a local mirror tree laid out as `wget --mirror`
//! writes it: `http://host:81/a/b?x=1` is `MirrorDir/host:81/a/b?x=1`, and a path ending in
//! `/` (or naming a directory) is its `index.html`. For crawling from a copy (replays, tests,
//! sites delivered as archives). A missing file is a 404; the content type comes from the
//! file's extension.
//!
//! URLs come from queue files, that is from the network: a URL is never trusted as a path.
//! Every part of it must be a plain name (no `.`/`..`, no empty part, no control character).
//! A file that cannot be read fails with kind `network` (the mirror is this backend's network).

use std::collections::VecDeque;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::downloader::{
    Completed, Document, DownloadError, Downloader, FailKind, Outcome, Request,
};
use crate::config::FetchConfig;

pub struct Mirror {
    root: PathBuf,
    max_bytes: u64,
    mime_types: Vec<String>,
    /// Files read per `perform`.
    per_perform: usize,
    queue: VecDeque<Request>,
}

impl Mirror {
    pub fn new(root: PathBuf, cfg: &FetchConfig) -> Self {
        Mirror {
            root,
            max_bytes: cfg.max_bytes,
            mime_types: cfg.allowed_types.clone(),
            per_perform: cfg.connections.max(1) as usize,
            queue: VecDeque::new(),
        }
    }

    /// `Fetch.AllowedTypes`: exact, or `type/*`; empty allows every type.
    fn allowed(&self, content_type: &str) -> bool {
        let major = content_type.split('/').next().unwrap_or("");
        self.mime_types.is_empty()
            || self
                .mime_types
                .iter()
                .any(|m| m == content_type || m.strip_suffix("/*").is_some_and(|t| t == major))
    }

    fn fetch(&self, url: &str) -> Outcome {
        let path = match mirror_path(&self.root, url) {
            Ok(p) => p,
            Err(reason) => {
                return Outcome::Failed {
                    kind: FailKind::Url,
                    reason: reason.into(),
                    status: None,
                }
            }
        };
        let dir = path.is_dir();
        let path = if dir { path.join("index.html") } else { path };
        let io_failure = |e: std::io::Error| Outcome::Failed {
            kind: FailKind::Network,
            reason: format!("{}: {e}", path.display()),
            status: None,
        };
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            // A directory the mirror holds without its index page was not mirrored whole:
            // that is the mirror's failure, not the page's.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !dir => {
                return Outcome::Gone { status: 404 }
            }
            Err(e) => return io_failure(e),
        };
        let content_type = content_type(&path).to_string();
        if !self.allowed(&content_type) {
            return Outcome::WrongType { content_type };
        }
        let mut body = Vec::new();
        // One byte more than allowed tells a document that is too long, without reading it.
        if let Err(e) = file.take(self.max_bytes + 1).read_to_end(&mut body) {
            return io_failure(e);
        }
        if body.len() as u64 > self.max_bytes {
            return Outcome::TooLarge {
                limit: self.max_bytes,
            };
        }
        Outcome::Fetched(Document {
            content_type,
            body,
            redirects: Vec::new(),
        })
    }
}

impl Downloader for Mirror {
    fn submit(&mut self, request: Request) {
        self.queue.push_back(request);
    }

    fn pending(&self) -> usize {
        self.queue.len()
    }

    fn in_flight(&self) -> usize {
        0
    }

    fn perform(&mut self, max_wait: Duration) -> Result<Vec<Completed>, DownloadError> {
        if self.queue.is_empty() {
            std::thread::sleep(max_wait);
            return Ok(Vec::new());
        }
        let mut done = Vec::new();
        while done.len() < self.per_perform {
            let Some(request) = self.queue.pop_front() else {
                break;
            };
            let started = Instant::now();
            let outcome = self.fetch(&request.url);
            let (status, bytes) = match &outcome {
                Outcome::Fetched(d) => (Some(200), d.body.len() as u64),
                Outcome::Gone { status } => (Some(*status), 0),
                _ => (None, 0),
            };
            let took = started.elapsed();
            done.push(Completed {
                final_url: request.url.clone(),
                request,
                outcome,
                status,
                elapsed: took,
                fetch_time: took,
                bytes,
                tries: 1,
            });
        }
        Ok(done)
    }
}

/// Where `url` is in the mirror rooted at `root`.
fn mirror_path(root: &Path, url: &str) -> Result<PathBuf, &'static str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or("not an http or https URL")?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority
        .rfind('@')
        .map_or(authority, |at| &authority[at + 1..]);
    let (path, query) = match rest[end..].split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (&rest[end..], None),
    };
    let mut parts: Vec<&str> = vec![host];
    parts.extend(path.split('/').skip(1));
    let last_empty = parts.last().is_some_and(|p| p.is_empty());
    if last_empty {
        parts.pop();
    }
    let mut out = root.to_path_buf();
    let count = parts.len();
    for (i, part) in parts.into_iter().enumerate() {
        if part.is_empty() || part == "." || part == ".." || part.bytes().any(|b| b < 0x20) {
            return Err("the URL does not map to a file of the mirror");
        }
        match query {
            Some(q) if i + 1 == count && !last_empty => out.push(format!("{part}?{q}")),
            _ => out.push(part),
        }
    }
    if last_empty {
        out.push(match query {
            Some(q) => format!("index.html?{q}"),
            None => "index.html".into(),
        });
    }
    Ok(out)
}

/// The content type of a mirrored file, from its extension (`wget` keeps the server's names).
fn content_type(path: &Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = name.split('?').next().unwrap_or(name);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        None | Some("html" | "htm" | "php" | "asp" | "aspx" | "jsp") => "text/html",
        Some("xhtml") => "application/xhtml+xml",
        Some("txt") => "text/plain",
        Some("xml") => "application/xml",
        Some("json") => "application/json",
        Some("pdf") => "application/pdf",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("png") => "image/png",
        Some("gif") => "image/gif",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_map_to_plain_paths_of_the_mirror() {
        let root = Path::new("/m");
        let p = |u| mirror_path(root, u).map(|p| p.display().to_string());
        assert_eq!(p("http://a.ru/"), Ok("/m/a.ru/index.html".into()));
        assert_eq!(p("http://a.ru/x/y.html"), Ok("/m/a.ru/x/y.html".into()));
        assert_eq!(p("https://u@a.ru:81/x?q=1"), Ok("/m/a.ru:81/x?q=1".into()));
        assert_eq!(
            p("http://a.ru/d/?q=1"),
            Ok("/m/a.ru/d/index.html?q=1".into())
        );
        assert_eq!(p("http://a.ru/%2e%2e/x"), Ok("/m/a.ru/%2e%2e/x".into()));
        for bad in [
            "http://a.ru/../etc/passwd",
            "http://a.ru/x//y",
            "http://../x",
            "ftp://a.ru/",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert_eq!(content_type(Path::new("/m/a/index.html?x=1")), "text/html");
        assert_eq!(content_type(Path::new("/m/a/b.PDF")), "application/pdf");
        assert_eq!(content_type(Path::new("/m/a/plain")), "text/html");
    }
}
