//! The exclusion file (the source's `excldb`; docs/formats.md "Exclusion file"): URLs a
//! crawler node neither stores nor fetches. One rule a line — `domain D`, `host H[:PORT]`,
//! `prefix URL`, `path /PREFIX` or `pattern GLOB` — with `#` comments. A file with one bad line
//! is refused whole ([`ExcludeError`] names the line), so that a typo never lets through what
//! the rules before it kept out.
//!
//! Rules are matched against a URL as stored (normalised by [`crate::urls::normalize`]): the
//! values of `domain`, `host`, `prefix` and `path` rules are normalised the same way when the
//! file is read, so `HTTP://WWW.Example.COM:80/a` in a rule is `http://www.example.com/a`.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

use crate::urls;

mod glob;
#[cfg(test)]
mod tests;

use glob::Glob;

/// The largest exclusion file read (its rules are held in memory).
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// The longest line (a rule's value is a URL of at most [`urls::MAX_URL_LENGTH`] bytes).
pub const MAX_LINE_BYTES: usize = 4096;

/// Why an exclusion file is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExcludeError {
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("{0}")]
    File(String),
}

/// What a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The URL's host is the domain or a name under it.
    Domain,
    /// The URL's host is this one (and its port this one, when the rule has a port).
    Host,
    /// The URL starts with this (normalised) URL.
    Prefix,
    /// The URL's path (with its query) starts with this, on any host.
    Path,
    /// The whole URL matches this glob (`*`: any run of characters).
    Pattern,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Domain => "domain",
            Kind::Host => "host",
            Kind::Prefix => "prefix",
            Kind::Path => "path",
            Kind::Pattern => "pattern",
        }
    }

    fn parse(word: &str) -> Option<Kind> {
        Some(match word {
            "domain" => Kind::Domain,
            "host" => Kind::Host,
            "prefix" => Kind::Prefix,
            "path" => Kind::Path,
            "pattern" => Kind::Pattern,
            _ => return None,
        })
    }
}

/// One rule as written (its value normalised), and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub line: usize,
    pub kind: Kind,
    pub value: String,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {} {}", self.line, self.kind.name(), self.value)
    }
}

/// The rules of one file, indexed for matching: domains and hosts by name, prefixes by the
/// URL's origin; `path` and `pattern` rules are tried one by one (keep them few).
#[derive(Debug, Default)]
pub struct Exclusions {
    rules: Vec<Rule>,
    domains: HashMap<String, usize>,
    /// Host name → `(port, rule)`; a port of `None` stands for every port.
    hosts: HashMap<String, Vec<(Option<u16>, usize)>>,
    /// `scheme://authority` → `(prefix, rule)`.
    prefixes: HashMap<String, Vec<(String, usize)>>,
    paths: Vec<(String, usize)>,
    patterns: Vec<(Glob, usize)>,
}

/// Rules of each kind, for the log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub domains: usize,
    pub hosts: usize,
    pub prefixes: usize,
    pub paths: usize,
    pub patterns: usize,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} domain, {} host, {} prefix, {} path, {} pattern",
            self.domains, self.hosts, self.prefixes, self.paths, self.patterns
        )
    }
}

impl Exclusions {
    /// Reads and parses a file of at most [`MAX_FILE_BYTES`].
    pub fn load(path: &Path) -> Result<Exclusions, ExcludeError> {
        let io = |e: std::io::Error| ExcludeError::File(format!("cannot read: {e}"));
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(ExcludeError::File("not a regular file".into()));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(ExcludeError::File(format!(
                "larger than {MAX_FILE_BYTES} bytes"
            )));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        Exclusions::parse(&bytes)
    }

    /// Parses a whole file; the first bad line refuses it.
    pub fn parse(text: &[u8]) -> Result<Exclusions, ExcludeError> {
        let mut ex = Exclusions::default();
        let mut seen: HashSet<(Kind, String)> = HashSet::new();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            let bad = |message: String| ExcludeError::Line { line, message };
            if raw.len() > MAX_LINE_BYTES {
                return Err(bad(format!("longer than {MAX_LINE_BYTES} bytes")));
            }
            let text = std::str::from_utf8(raw).map_err(|e| {
                bad(format!(
                    "not UTF-8 (byte {} of the line)",
                    e.valid_up_to() + 1
                ))
            })?;
            let Some((kind, value)) = split_rule(text).map_err(bad)? else {
                continue;
            };
            let value = normal_value(kind, value)
                .map_err(|e| bad(format!("{} {value:?}: {e}", kind.name())))?;
            if seen.insert((kind, value.clone())) {
                ex.add(Rule { line, kind, value }).map_err(bad)?;
            }
        }
        Ok(ex)
    }

    fn add(&mut self, rule: Rule) -> Result<(), String> {
        let n = self.rules.len();
        match rule.kind {
            Kind::Domain => {
                self.domains.insert(rule.value.clone(), n);
            }
            Kind::Host => {
                let (host, port) = split_port(&rule.value);
                self.hosts
                    .entry(host.to_string())
                    .or_default()
                    .push((port, n));
            }
            Kind::Prefix => {
                let (origin, _) = origin_and_path(&rule.value);
                let origin = origin.to_string();
                self.prefixes
                    .entry(origin)
                    .or_default()
                    .push((rule.value.clone(), n));
            }
            Kind::Path => self.paths.push((rule.value.clone(), n)),
            Kind::Pattern => self.patterns.push((Glob::new(&rule.value)?, n)),
        }
        self.rules.push(rule);
        Ok(())
    }

    /// How many rules (duplicates counted once).
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn counts(&self) -> Counts {
        Counts {
            domains: self.domains.len(),
            hosts: self.hosts.values().map(Vec::len).sum(),
            prefixes: self.prefixes.values().map(Vec::len).sum(),
            paths: self.paths.len(),
            patterns: self.patterns.len(),
        }
    }

    /// The first rule (in file order among those that match) that excludes `url`, a
    /// normalised URL; `None` if no rule does.
    pub fn matching(&self, url: &str) -> Option<&Rule> {
        if self.rules.is_empty() {
            return None;
        }
        let (origin, path) = origin_and_path(url);
        let (_, host) = urls::host_of(url);
        let mut best: Option<usize> = None;
        let mut found = |n: usize| best = Some(best.map_or(n, |b| b.min(n)));
        // The host and every name it is under: `a.b.c`, `b.c`, `c`.
        let mut name = host;
        loop {
            if let Some(&n) = self.domains.get(name) {
                found(n);
            }
            match name.split_once('.') {
                Some((_, rest)) if !rest.is_empty() => name = rest,
                _ => break,
            }
        }
        if let Some(ports) = self.hosts.get(host) {
            let port = url_port(url);
            for &(p, n) in ports {
                if p.is_none() || p == port {
                    found(n);
                }
            }
        }
        if let Some(list) = self.prefixes.get(origin) {
            for (prefix, n) in list {
                if url.starts_with(prefix.as_str()) {
                    found(*n);
                }
            }
        }
        for (prefix, n) in &self.paths {
            if path.starts_with(prefix.as_str()) {
                found(*n);
            }
        }
        for (glob, n) in &self.patterns {
            if glob.matches(url) {
                found(*n);
            }
        }
        best.and_then(|n| self.rules.get(n))
    }

    pub fn excludes(&self, url: &str) -> bool {
        self.matching(url).is_some()
    }
}

/// A line's rule kind and value: `None` for a blank or comment line. A `#` at the start of
/// the line or after a space or tab starts a comment (a URL may hold `#` elsewhere).
fn split_rule(line: &str) -> Result<Option<(Kind, &str)>, String> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut end = line.len();
    let mut prev_blank = true;
    for (i, c) in line.char_indices() {
        if c == '#' && prev_blank {
            end = i;
            break;
        }
        prev_blank = c == ' ' || c == '\t';
    }
    let mut words = line[..end].split_whitespace();
    let Some(kind) = words.next() else {
        return Ok(None);
    };
    let kind = Kind::parse(kind)
        .ok_or_else(|| format!("unknown rule {kind:?} (domain, host, prefix, path or pattern)"))?;
    let value = words
        .next()
        .ok_or_else(|| format!("{} without a value", kind.name()))?;
    if let Some(extra) = words.next() {
        return Err(format!(
            "{} {value}: one value a line, then {extra:?}",
            kind.name()
        ));
    }
    Ok(Some((kind, value)))
}

/// A rule's value as URLs are matched: normalised like the URLs themselves.
fn normal_value(kind: Kind, value: &str) -> Result<String, String> {
    match kind {
        Kind::Domain => {
            let only = "a domain name only (no scheme, port or path)";
            if value.contains([':', '/', '@', '?', '#', '[']) {
                return Err(only.into());
            }
            let url = normal_url(&format!("http://{value}/"))?;
            let (_, host) = urls::host_of(&url);
            if url != format!("http://{host}/") {
                return Err(only.into());
            }
            if urls::host_kind(host) != urls::HostKind::Name {
                return Err("an address is not a domain: use a host rule".into());
            }
            Ok(host.to_string())
        }
        Kind::Host => {
            let (host, port) = match value.rsplit_once(':') {
                Some((host, port)) if !port.contains(']') => {
                    let port: u16 = port.parse().map_err(|_| format!("bad port {port:?}"))?;
                    (host, Some(port))
                }
                _ => (value, None),
            };
            if host.contains(':') && !host.starts_with('[') {
                return Err("one port at most (an IPv6 address goes in brackets)".into());
            }
            let url = normal_url(&format!("http://{host}/"))?;
            let (_, name) = urls::host_of(&url);
            if url != format!("http://{name}/") {
                return Err("a host name or address, and a port (host or host:port)".into());
            }
            Ok(match port {
                Some(port) => format!("{name}:{port}"),
                None => name.to_string(),
            })
        }
        Kind::Prefix => {
            let url = normal_url(value)?;
            if !matches!(url.split_once("://"), Some(("http" | "https", _))) {
                return Err("an http or https URL".into());
            }
            Ok(url)
        }
        Kind::Path => {
            if !value.starts_with('/') {
                return Err("a path starting with /".into());
            }
            let url = normal_url(&format!("http://x{value}"))?;
            Ok(url.strip_prefix("http://x").unwrap_or(&url).to_string())
        }
        Kind::Pattern => Glob::new(value).map(|_| value.to_string()),
    }
}

/// `value` parsed and written back by the WHATWG rules.
fn normal_url(value: &str) -> Result<String, String> {
    let url = url::Url::parse(value).map_err(|e| e.to_string())?;
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err("no user info or fragment".into());
    }
    let url: String = url.into();
    if url.len() > urls::MAX_URL_LENGTH {
        return Err(format!("longer than {} bytes", urls::MAX_URL_LENGTH));
    }
    Ok(url)
}

/// `host:port` → its parts; a host alone (or an IPv6 address in brackets) has no port.
fn split_port(host_port: &str) -> (&str, Option<u16>) {
    match host_port.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()),
        _ => (host_port, None),
    }
}

/// A normalised URL cut where its path starts: `("http://a.ru:81", "/p?q")`.
fn origin_and_path(url: &str) -> (&str, &str) {
    let after = url.find("://").map_or(0, |i| i + 3);
    let at = url[after..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after + i);
    (&url[..at], &url[at..])
}

/// The port a normalised http(s) URL is fetched from.
fn url_port(url: &str) -> Option<u16> {
    let (origin, _) = origin_and_path(url);
    let (scheme, authority) = origin.split_once("://")?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    match split_port(host_port) {
        (_, Some(port)) => Some(port),
        _ => match scheme {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        },
    }
}
