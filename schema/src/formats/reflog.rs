//! One reflog line (SPEC §5): `batch_id \t priority \t timestamp \t page_id \t url \t hits \t
//! updatetag`, after a header line that is ignored. A trailing `\r` is dropped, and a line
//! without the trailing updatetag field (six fields) has an empty updatetag.

use crate::formats::stamp;
use crate::urls::{self, NormalForm, NormalUrl, UrlError};

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
        }
    }

    pub const KINDS: [&'static str; 9] = [
        "empty",
        "line_too_long",
        "fields",
        "utf8",
        "timestamp",
        "hits",
        "scheme",
        "url_too_long",
        "url",
    ];
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
}
