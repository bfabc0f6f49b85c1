//! The reflog line parser of the master's hot loop: the same verdicts as
//! [`reflog::parse_line`] (property-tested below), cheaper on good lines. The tabs come from
//! [`scan`], an ASCII line needs no UTF-8 check but the conversion of its URL and tag, and the
//! last timestamp is remembered (lines come in time order, so most lines repeat their
//! predecessor's second). Anything unusual goes to `reflog::parse_line`, which then names the
//! reason.

use focuser_formats::reflog::{self, ReflogLine, Reject};
use focuser_formats::stamp;

use super::scan;

pub struct Parser {
    offset: i64,
    /// The last timestamp text parsed, and its value.
    last: Option<([u8; 14], i64)>,
}

impl Parser {
    /// `offset`: the reflog's zone in seconds east of UTC.
    pub fn new(offset: i64) -> Self {
        Parser { offset, last: None }
    }

    /// [`Parser::parse_scanned`] of a line not scanned yet.
    #[cfg(test)]
    pub fn parse<'a>(&mut self, line: &'a [u8]) -> Result<ReflogLine<'a>, Reject> {
        // A line of its own has no newline: its one line is the whole of it.
        let mut verdict = None;
        let _ = scan::lines::<()>(line, |s| {
            if s.at.start == 0 && s.at.end == line.len() {
                verdict.get_or_insert_with(|| self.parse_scanned(s));
            }
            Ok(())
        });
        verdict.unwrap_or_else(|| reflog::parse_line(line, self.offset))
    }

    /// [`Parser::parse`] of `line`, whose tabs [`scan::lines`] found (`l`, relative to it).
    pub fn parse_scanned<'a>(&mut self, s: scan::Scanned<'a>) -> Result<ReflogLine<'a>, Reject> {
        match self.fast(s) {
            Some(l) => Ok(l),
            None => reflog::parse_line(s.bytes, self.offset),
        }
    }

    /// A good line of 6 or 7 fields; `None` for anything else.
    fn fast<'a>(&mut self, s: scan::Scanned<'a>) -> Option<ReflogLine<'a>> {
        let (line, l) = (s.bytes, s.at);
        let n = l.n_tabs;
        if !(5..=scan::TABS).contains(&n) {
            return None;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let tabs = &l.tabs;
        let field = |k: usize| {
            let from = if k == 0 { 0 } else { tabs[k - 1] as usize + 1 };
            let to = if k < n { tabs[k] as usize } else { line.len() };
            from..to
        };
        let text = &line[field(2)];
        let timestamp = match self.last {
            Some((last, ts)) if last[..] == *text => ts,
            _ => {
                let ts = stamp::parse(text, self.offset)?;
                self.last = Some((text.try_into().ok()?, ts));
                ts
            }
        };
        let hits = reflog::parse_hits(&line[field(5)])?;
        // An ASCII line is UTF-8 and is not checked again. Otherwise the whole line is, as
        // parse_line checks the fields it keeps.
        let (url, updatetag) = if s.ascii() {
            let url = s.str(field(4))?;
            let tag = if n == 6 { s.str(field(6))?.trim() } else { "" };
            (url, tag)
        } else {
            let line = std::str::from_utf8(line).ok()?;
            let tag = if n == 6 { line[field(6)].trim() } else { "" };
            (&line[field(4)], tag)
        };
        Some(ReflogLine {
            timestamp,
            url,
            hits,
            updatetag,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pieces lines are made of: good fields, and every kind of damage.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"20231114221320".to_vec()),
            Just(b"20231114221321".to_vec()),
            Just(b"20230229000000".to_vec()),
            Just(b"2023111422132".to_vec()),
            Just(b"http://a.ru/x?y=1".to_vec()),
            Just("http://пример.рф/".as_bytes().to_vec()),
            Just(b"5".to_vec()),
            Just(b"12".to_vec()),
            Just(b"-1".to_vec()),
            Just(b"99999999999999999999".to_vec()),
            Just(b" tag ".to_vec()),
            Just("\u{a0}t\u{2003}".as_bytes().to_vec()),
            Just(b"\xff".to_vec()),
            Just(b"\t".to_vec()),
            Just(b"\r".to_vec()),
            Just(b" ".to_vec()),
            Just(Vec::new()),
            prop::collection::vec(any::<u8>(), 0..4),
        ]
    }

    /// Lines of 5 to 8 fields made of those pieces, plus arbitrary bytes.
    fn line() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => prop::collection::vec(prop::collection::vec(piece(), 0..3), 5..9).prop_map(
                |fields| {
                    let fields: Vec<Vec<u8>> = fields.into_iter().map(|f| f.concat()).collect();
                    fields.join(&b'\t')
                }
            ),
            1 => prop::collection::vec(any::<u8>(), 0..40),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The same verdict as `reflog::parse_line`, whatever line came before.
        #[test]
        fn agrees_with_parse_line(lines in prop::collection::vec(line(), 1..6), offset in prop_oneof![Just(0i64), Just(10800i64)]) {
            let mut p = Parser::new(offset);
            for l in &lines {
                prop_assert_eq!(p.parse(l), reflog::parse_line(l, offset), "{}", String::from_utf8_lossy(l));
            }
        }
    }

    #[test]
    fn a_cached_timestamp_is_still_checked_per_line() {
        let mut p = Parser::new(0);
        let good = b"b\t5\t20231114221320\t1\thttp://a.ru/\t1\tt";
        let t = p.parse(good).unwrap().timestamp;
        assert_eq!(p.parse(good).unwrap().timestamp, t);
        assert_eq!(
            p.parse(b"b\t5\t2023111422132x\t1\thttp://a.ru/\t1\tt"),
            Err(Reject::Timestamp)
        );
        assert_eq!(
            p.parse(b"b\t5\t20231114221320\t1\thttp://a.ru/\xff\t1\tt"),
            Err(Reject::Utf8)
        );
        assert_eq!(
            p.parse(b"b\xff\t5\t20231114221320\t1\thttp://a.ru/\t1\t")
                .ok()
                .map(|l| l.url),
            None
        );
        // The priority field is not checked at all, as parse_line does.
        assert!(p
            .parse(b"b\t\xff\t20231114221320\t1\thttp://a.ru/\t1\t")
            .is_ok());
    }
}
