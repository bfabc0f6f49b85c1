//! URL identity every daemon agrees on (docs/design.md#master-cycle, analyze_dump): WHATWG
//! normalisation, the 64-bit URL id, the routing domain and the doc id. Specified in
//! docs/formats.md.

use std::borrow::Cow;

use md5::{Digest, Md5};

mod host;
pub use host::{host_kind, host_of, ip_kind, non_public, HostKind};

/// The `Url.MaxLength` default (docs/formats.md#url-normalisation): longer normalised URLs are
/// rejected.
pub const MAX_URL_LENGTH: usize = 2048;

/// A URL as focuser stores and routes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalUrl {
    /// WHATWG serialisation: scheme and host lower-cased, IDN in punycode, default port and
    /// fragment removed. Always ASCII.
    pub url: String,
    pub id: u64,
    pub domain: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("URL does not parse")]
    Unparsable,
    #[error("not an http or https URL")]
    Scheme,
    #[error("URL has no host")]
    NoHost,
    #[error("URL longer than {0} bytes")]
    TooLong(usize),
    #[error("URL domain longer than {MAX_DOMAIN_LENGTH} bytes")]
    DomainTooLong,
}

/// The longest routing domain: a DNS name's length, and the database's columns'.
pub const MAX_DOMAIN_LENGTH: usize = 253;

/// A URL in its normal form, before its id is computed: for callers with many URLs, whose ids
/// [`url_ids`] computes side by side. Borrowed from the raw URL when that was normal already
/// (most are), so a caller that only copies it on costs no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalForm<'a> {
    pub url: Cow<'a, str>,
    pub domain: Cow<'a, str>,
    /// Where `domain` is in `url` (it is the URL's host, less a leading `www.`), for callers
    /// that keep the URL and want the domain's name without another copy.
    pub domain_at: Option<usize>,
}

impl NormalForm<'_> {
    pub fn with_id(self, id: u64) -> NormalUrl {
        NormalUrl {
            url: self.url.into_owned(),
            id,
            domain: self.domain.into_owned(),
        }
    }
}

/// Normalises `raw` and computes its id and domain.
pub fn normalize(raw: &str, max_len: usize) -> Result<NormalUrl, UrlError> {
    normal_form(raw, max_len).map(|n| {
        let id = url_id(&n.url);
        n.with_id(id)
    })
}

/// Normalises `raw` and finds its domain: [`normalize`] but the id.
pub fn normal_form(raw: &str, max_len: usize) -> Result<NormalForm<'_>, UrlError> {
    // Parsing cannot shrink a URL by more than its fragment, and percent-encoding only grows
    // it, so a raw URL this long is rejected without parsing it (a 10 MB line costs nothing).
    if raw.len() > max_len.saturating_mul(4) {
        return Err(UrlError::TooLong(max_len));
    }
    if let Some(host) = already_normal(raw) {
        if raw.len() > max_len {
            return Err(UrlError::TooLong(max_len));
        }
        // The host is lower-case already: domain_of without its copies.
        let domain = host.strip_prefix("www.").filter(|d| !d.is_empty());
        let domain = domain.unwrap_or(host);
        if domain.len() > MAX_DOMAIN_LENGTH {
            return Err(UrlError::DomainTooLong);
        }
        return Ok(NormalForm {
            url: Cow::Borrowed(raw),
            domain: Cow::Borrowed(domain),
            domain_at: Some(offset_in(raw, domain)),
        });
    }
    let mut parsed = url::Url::parse(raw.trim()).map_err(|_| UrlError::Unparsable)?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(UrlError::Scheme);
    }
    parsed.set_fragment(None);
    let host = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or(UrlError::NoHost)?;
    let domain = domain_of(host);
    if domain.len() > MAX_DOMAIN_LENGTH {
        return Err(UrlError::DomainTooLong);
    }
    // The host is a piece of the serialisation, which becomes the URL's text.
    let domain_at = host
        .ends_with(domain.as_str())
        .then(|| offset_in(parsed.as_str(), host) + host.len() - domain.len());
    let url: String = parsed.into();
    if url.len() > max_len {
        return Err(UrlError::TooLong(max_len));
    }
    Ok(NormalForm {
        url: Cow::Owned(url),
        domain: Cow::Owned(domain),
        domain_at,
    })
}

/// Where `piece`, a subslice of `whole`, starts in it.
fn offset_in(whole: &str, piece: &str) -> usize {
    piece.as_ptr() as usize - whole.as_ptr() as usize
}

/// The host of `raw` if WHATWG parsing would give `raw` back unchanged, else `None`.
///
/// Most URLs in a reflog are already normal, and the full parser (IDNA, percent-encoding,
/// dot segments) costs more than everything else done to a new URL. This accepts only a
/// conservative shape, checked against the parser by a property test: lower-case
/// `http`/`https`, a lower-case ASCII host of non-empty labels whose last label starts with a
/// letter (so it is not an IPv4 address) and none starting `xn--`, no user info or port, a
/// path starting `/` without `.`/`..` segments, an optional query, no fragment, and only
/// characters that neither parser stage would encode, decode or drop.
fn already_normal(raw: &str) -> Option<&str> {
    let b = raw.as_bytes();
    let scheme = if b.starts_with(b"http://") {
        7
    } else if b.starts_with(b"https://") {
        8
    } else {
        return None;
    };
    // The host: labels up to the first `/` (none: not this shape).
    let (mut i, mut label) = (scheme, scheme);
    let mut last_label;
    loop {
        match *b.get(i)? {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => {}
            c @ (b'.' | b'/') => {
                if i == label || b[label..i].starts_with(b"xn--") {
                    return None;
                }
                last_label = label;
                label = i + 1;
                if c == b'/' {
                    break;
                }
            }
            _ => return None,
        }
        i += 1;
    }
    if !b[last_label].is_ascii_lowercase() {
        return None;
    }
    let host = &raw[scheme..i];
    // The path, up to the first `?`: characters kept as they are, no `.` or `..` segment.
    let mut segment = i + 1;
    i += 1;
    loop {
        let c = b.get(i).copied();
        if matches!(c, None | Some(b'/' | b'?')) {
            if matches!(&b[segment..i], b"." | b"..") {
                return None;
            }
            segment = i + 1;
        }
        match c {
            None => return Some(host),
            Some(b'?') => break,
            // Kept as it is, unless it spells a dot.
            Some(b'%') => {
                let hex = b.get(i + 1..i + 3)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) || hex.eq_ignore_ascii_case(b"2e") {
                    return None;
                }
            }
            Some(c) if PATH_KEPT[c as usize] => {}
            Some(_) => return None,
        }
        i += 1;
    }
    b[i + 1..]
        .iter()
        .all(|&c| QUERY_KEPT[c as usize])
        .then_some(host)
}

/// Bytes the parser keeps as they are in a path (`%` is checked apart).
const PATH_KEPT: [bool; 256] = kept(b"-_~!$&'()*+,;=:@/.");
/// Bytes the parser keeps as they are in a query.
const QUERY_KEPT: [bool; 256] = kept(b"-_~!$&()*+,;=:@/.?%");

/// ASCII letters and digits, and `extra`.
const fn kept(extra: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = (c as u8).is_ascii_alphanumeric();
        c += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
}

/// The 64-bit URL id: the first 8 bytes of the MD5 of the normalised URL, big-endian.
pub fn url_id(normalized: &str) -> u64 {
    let digest = Md5::digest(normalized.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The ids of `normalized` (see [`url_id`]), several computed side by side; `out` is as long.
pub fn url_ids(normalized: &[&str], out: &mut [u64]) {
    crate::md5_lanes::md5_prefixes(normalized, out);
}

/// The routing domain of a host: lower-cased, a leading `www.` removed.
pub fn domain_of(host: &str) -> String {
    let host = host.to_ascii_lowercase();
    match host.strip_prefix("www.") {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => host,
    }
}

/// The doc id of a page in the item/index segments: its URL id as 16 lower-case hex digits.
pub fn doc_id(id: u64) -> String {
    format!("{id:016x}")
}

/// A normalised URL cut at its query: `(base, query)`, the `?` in neither (the fragment is
/// gone already). `http://a.ru/p?x=1&y` → `("http://a.ru/p", Some("x=1&y"))`.
pub fn split_query(url: &str) -> (&str, Option<&str>) {
    match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    }
}

/// The query arguments of a query string, in order; empty ones (`a=1&&b`) are skipped.
pub fn query_args(query: &str) -> impl Iterator<Item = &str> {
    query.split('&').filter(|a| !a.is_empty())
}

/// The name of a query argument as it appears in the URL (percent-encoded): what precedes
/// the first `=`, or the whole argument.
pub fn arg_name(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(name, _)| name)
}

/// `url` without the query arguments `drop` picks (given each argument as it appears, `name=value`
/// or `name`): the others in their order joined by `&`, no `?` when none is left, empty arguments
/// left out. This is the URL the loader stores (docs/design.md#yacobot-query-arguments), whose id
/// is [`url_id`] of it. Borrowed, as it is, when nothing is dropped.
pub fn without_args<'a>(url: &'a str, mut drop: impl FnMut(&'a str) -> bool) -> Cow<'a, str> {
    let (base, query) = split_query(url);
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        return Cow::Borrowed(url);
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut dropped = false;
    for arg in query_args(query) {
        if drop(arg) {
            dropped = true;
        } else {
            kept.push(arg);
        }
    }
    if !dropped {
        Cow::Borrowed(url)
    } else if kept.is_empty() {
        Cow::Borrowed(base)
    } else {
        Cow::Owned(format!("{base}?{}", kept.join("&")))
    }
}

/// `path_hash` of `path_arg_name`, `query_args` and `url`: the first 8 bytes of the MD5 of
/// host (with a non-default port) and path of a normalised URL, without scheme, user info and
/// query, read big-endian. `https://u@www.a.ru:8080/p/q?x=1` hashes `www.a.ru:8080/p/q`.
pub fn path_hash(url: &str) -> u64 {
    let (base, _) = split_query(url);
    let rest = base.split_once("://").map_or(base, |(_, rest)| rest);
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    url_id(rest)
}

#[cfg(test)]
mod tests;
