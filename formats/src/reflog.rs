//! One reflog line (docs/formats.md#reflog-files-masters-input):
//! `batch_id \t priority \t timestamp \t page_id \t url \t hits \t updatetag`, after a header
//! line that is ignored. A trailing `\r` is dropped, and a line without the trailing updatetag
//! field (six fields) has an empty updatetag. A last line without its `\n` is torn (a file
//! still being written, or cut short) and is rejected.

use crate::stamp;
use crate::urls::{self, HostKind, NormalForm, NormalUrl, UrlError};

/// The fields the master uses, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflogLine<'a> {
    /// Seconds since the epoch (UTC).
    pub timestamp: i64,
    pub url: &'a str,
    pub hits: u64,
    pub updatetag: &'a str,
}

/// Why a line was rejected (the reject file's reason column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Reject {
    #[error("empty line")]
    Empty,
    #[error("line longer than {0} bytes")]
    LineTooLong(usize),
    #[error("expected 7 tab-separated fields, found {0}")]
    Fields(usize),
    #[error("not valid UTF-8")]
    Utf8,
    #[error("timestamp is not YYYYMMDDhhmmss")]
    Timestamp,
    #[error("hits is not a non-negative integer")]
    Hits,
    #[error("{0}")]
    Url(UrlError),
    #[error("torn line (no newline at the end of the file)")]
    Torn,
    #[error("URL has user info")]
    UserInfo,
    #[error("URL host is an IP address")]
    IpLiteral,
    #[error("URL host is a loopback or private address")]
    InternalHost,
}

impl Reject {
    /// A short stable name, for counters and metrics labels.
    pub fn kind(&self) -> &'static str {
        match self {
            Reject::Empty => "empty",
            Reject::LineTooLong(_) => "line_too_long",
            Reject::Fields(_) => "fields",
            Reject::Utf8 => "utf8",
            Reject::Timestamp => "timestamp",
            Reject::Hits => "hits",
            Reject::Url(UrlError::Scheme) => "scheme",
            Reject::Url(UrlError::TooLong(_)) => "url_too_long",
            Reject::Url(UrlError::Unparsable | UrlError::NoHost | UrlError::DomainTooLong) => "url",
            Reject::Torn => "torn",
            Reject::UserInfo => "userinfo",
            Reject::IpLiteral => "ip_literal",
            Reject::InternalHost => "internal_host",
        }
    }

    pub const KINDS: [&'static str; 13] = [
        "empty",
        "line_too_long",
        "fields",
        "utf8",
        "timestamp",
        "hits",
        "scheme",
        "url_too_long",
        "url",
        "torn",
        "userinfo",
        "ip_literal",
        "internal_host",
    ];
}

/// Which URL hosts the master forwards (`Url.AllowIpLiterals`, `Url.AllowPrivate`): by default
/// neither IP addresses nor this machine's or private networks' hosts, so that a reflog line
/// cannot send the crawlers to an internal service (SSRF).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostPolicy {
    /// Public IP addresses as hosts.
    pub allow_ip_literals: bool,
    /// Loopback and private addresses and `localhost` (test setups).
    pub allow_internal: bool,
}

/// Refuses a normalised URL with user info, or whose host `policy` does not allow (see
/// [`urls::host_kind`]).
pub fn check_host(normalized: &str, policy: HostPolicy) -> Result<(), Reject> {
    let (userinfo, host) = urls::host_of(normalized);
    if userinfo {
        return Err(Reject::UserInfo);
    }
    match urls::host_kind(host) {
        HostKind::Name => Ok(()),
        HostKind::PublicIp if policy.allow_ip_literals => Ok(()),
        HostKind::PublicIp => Err(Reject::IpLiteral),
        HostKind::Loopback | HostKind::Private if policy.allow_internal => Ok(()),
        HostKind::Loopback | HostKind::Private => Err(Reject::InternalHost),
        HostKind::Invalid => Err(Reject::Url(UrlError::Unparsable)),
    }
}

/// `text` made safe to print on a terminal, reversibly: a byte that is not part of printable
/// UTF-8 — a control character (C0 but tab, DEL, C1) or invalid UTF-8 — is written `\xHH`,
/// and a backslash `\\`. Everything else, tabs included, is kept as it is.
pub fn escape(text: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for chunk in text.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push(c),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Splits and checks the fields of `line` (without its `\n`); `offset` is the reflog's time
/// zone in seconds east of UTC. The URL is checked later, by [`normalize_url`].
pub fn parse_line(line: &[u8], offset: i64) -> Result<ReflogLine<'_>, Reject> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(Reject::Empty);
    }
    let mut fields: [&[u8]; 7] = [&[]; 7];
    let mut n = 0;
    for field in line.split(|&b| b == b'\t') {
        if n == 7 {
            return Err(Reject::Fields(line.split(|&b| b == b'\t').count()));
        }
        fields[n] = field;
        n += 1;
    }
    if n < 6 {
        return Err(Reject::Fields(n));
    }
    let timestamp = stamp::parse(fields[2], offset).ok_or(Reject::Timestamp)?;
    let hits = parse_hits(fields[5]).ok_or(Reject::Hits)?;
    let url = std::str::from_utf8(fields[4]).map_err(|_| Reject::Utf8)?;
    let updatetag = std::str::from_utf8(fields[6])
        .map_err(|_| Reject::Utf8)?
        .trim();
    if std::str::from_utf8(fields[0]).is_err() || std::str::from_utf8(fields[3]).is_err() {
        return Err(Reject::Utf8);
    }
    Ok(ReflogLine {
        timestamp,
        url,
        hits,
        updatetag,
    })
}

/// Normalises a reflog URL (see [`urls::normalize`]).
pub fn normalize_url(url: &str, max_len: usize) -> Result<NormalUrl, Reject> {
    urls::normalize(url, max_len).map_err(Reject::Url)
}

/// [`normalize_url`] but the id (see [`urls::normal_form`]).
pub fn normal_form(url: &str, max_len: usize) -> Result<NormalForm<'_>, Reject> {
    urls::normal_form(url, max_len).map_err(Reject::Url)
}

/// The hits column: 1 to 19 ASCII digits.
pub fn parse_hits(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 19 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        text.iter()
            .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0')),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_example_parses() {
        let l = parse_line(b"2011072806593795\t5\t20110727200841\t2310\thttp://fatalenergy.com.ru/power/index.php?newsid=1185458796\t1\t0", 0).unwrap();
        assert_eq!((l.timestamp, l.hits, l.updatetag), (1311797321, 1, "0"));
        assert_eq!(
            l.url,
            "http://fatalenergy.com.ru/power/index.php?newsid=1185458796"
        );
        let six = parse_line(
            b"b\t5\t20110727200844\t1038\thttp://www.3dnews.ru/search/\t1\r",
            0,
        )
        .unwrap();
        assert_eq!(six.updatetag, "");
    }

    #[test]
    fn every_bad_line_has_a_reason() {
        let cases: [(&[u8], Reject); 9] = [
            (b"", Reject::Empty),
            (b"  \r", Reject::Empty),
            (b"b\t5\t20110727200841\t1\thttp://a/", Reject::Fields(5)),
            (
                b"b\t5\t20110727200841\t1\thttp://a/\t1\tt\textra",
                Reject::Fields(8),
            ),
            (
                b"b\t5\t2011-07-27 20:08\t1\thttp://a/\t1\tt",
                Reject::Timestamp,
            ),
            (b"b\t5\t20110727200841\t1\thttp://a/\t-1\tt", Reject::Hits),
            (b"b\t5\t20110727200841\t1\thttp://a/\tmany\tt", Reject::Hits),
            (
                b"b\t5\t20110727200841\t1\thttp://a/\xff\t1\tt",
                Reject::Utf8,
            ),
            (
                b"b\t5\t20110727200841\t1\thttp://a/\t99999999999999999999\tt",
                Reject::Hits,
            ),
        ];
        for (line, reason) in cases {
            assert_eq!(
                parse_line(line, 0),
                Err(reason),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(
            normalize_url("ftp://a/", 2048),
            Err(Reject::Url(UrlError::Scheme))
        );
        assert_eq!(
            Reject::Url(UrlError::TooLong(2048)).to_string(),
            "URL longer than 2048 bytes"
        );
    }

    #[test]
    fn hosts_the_master_refuses() {
        let strict = HostPolicy::default();
        let internal = HostPolicy {
            allow_internal: true,
            ..strict
        };
        let both = HostPolicy {
            allow_ip_literals: true,
            allow_internal: true,
        };
        for (raw, by_default, allow_internal, allow_both) in [
            ("http://a.ru/x", Ok(()), Ok(()), Ok(())),
            (
                "http://user:pw@a.ru/",
                Err(Reject::UserInfo),
                Err(Reject::UserInfo),
                Err(Reject::UserInfo),
            ),
            (
                "http://8.8.8.8/",
                Err(Reject::IpLiteral),
                Err(Reject::IpLiteral),
                Ok(()),
            ),
            (
                "http://127.0.0.1:8080/",
                Err(Reject::InternalHost),
                Ok(()),
                Ok(()),
            ),
            (
                "http://2130706433/",
                Err(Reject::InternalHost),
                Ok(()),
                Ok(()),
            ),
            ("http://0x7f.1/", Err(Reject::InternalHost), Ok(()), Ok(())),
            ("http://[::1]/", Err(Reject::InternalHost), Ok(()), Ok(())),
            (
                "http://[fd00::1]/",
                Err(Reject::InternalHost),
                Ok(()),
                Ok(()),
            ),
            (
                "http://169.254.169.254/latest",
                Err(Reject::InternalHost),
                Ok(()),
                Ok(()),
            ),
            (
                "http://LocalHost./",
                Err(Reject::InternalHost),
                Ok(()),
                Ok(()),
            ),
            (
                "http://api.localhost/",
                Err(Reject::InternalHost),
                Ok(()),
                Ok(()),
            ),
        ] {
            let n = normalize_url(raw, 2048).unwrap();
            assert_eq!(check_host(&n.url, strict), by_default, "{raw}");
            assert_eq!(check_host(&n.url, internal), allow_internal, "{raw}");
            assert_eq!(check_host(&n.url, both), allow_both, "{raw}");
        }
    }

    #[test]
    fn escaping_keeps_text_and_spells_out_the_rest() {
        assert_eq!(escape("b\t5\tпример é".as_bytes()), "b\t5\tпример é");
        assert_eq!(
            escape(b"\x1b[31mred\x1b[0m\r\x00\x7f\\n"),
            "\\x1b[31mred\\x1b[0m\\x0d\\x00\\x7f\\\\n"
        );
        // C1 controls (U+009B is a CSI on some terminals) and invalid UTF-8, byte by byte.
        assert_eq!(escape("a\u{9b}b".as_bytes()), "a\\xc2\\x9bb");
        assert_eq!(escape(b"\xff\xd0"), "\\xff\\xd0");
        for e in [escape(b"\x1b\x07\x08\x0c\x9b"), escape("\u{85}".as_bytes())] {
            assert!(!e.chars().any(|c| c.is_control() && c != '\t'), "{e}");
        }
    }
}
