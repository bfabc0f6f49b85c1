//! What makes a queue file bad besides its syntax (which `focuser_formats::queue`
//! checks): a header for another master or node, a record whose URL is not what the master
//! writes or whose id is not that URL's.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};

use focuser_formats::queue::{QueueError, QueueHeader, QueueReader, QueueRecord};
use focuser_formats::urls::{self, MAX_URL_LENGTH};

/// Longest routing domain (a DNS name).
const MAX_DOMAIN: usize = 253;

/// Whom a file must be for.
#[derive(Debug, Clone)]
pub struct Expect<'a> {
    /// The inbox's master (`Loader.Inbox.<master>`).
    pub master: &'a str,
    /// `node_id`, when set.
    pub node: Option<u32>,
}

/// Reads `file` from its start (through the same open file: its offset moves) and checks its
/// header against `expect`.
pub fn open(file: &File, expect: &Expect<'_>) -> Result<QueueReader<BufReader<File>>, QueueError> {
    let cannot = |e: std::io::Error| QueueError {
        line: 0,
        message: format!("cannot read: {e}"),
    };
    let mut file = file.try_clone().map_err(cannot)?;
    file.seek(SeekFrom::Start(0)).map_err(cannot)?;
    let reader = QueueReader::new(BufReader::with_capacity(1 << 16, file))?;
    check_header(&reader.header, expect)?;
    Ok(reader)
}

fn check_header(h: &QueueHeader, expect: &Expect<'_>) -> Result<(), QueueError> {
    let wrong = |message: String| Err(QueueError { line: 1, message });
    if h.master != expect.master {
        return wrong(format!(
            "a queue file of master {:?} in the inbox of {:?}",
            h.master, expect.master
        ));
    }
    match expect.node {
        Some(node) if node != h.node => wrong(format!(
            "a queue file for node {}, this is node {node}",
            h.node
        )),
        _ => Ok(()),
    }
}

/// A file checked whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The header's `time=` (seconds).
    pub time: i64,
    pub records: u64,
}

/// Reads the whole file, checking every record.
pub fn whole_file(file: &File, expect: &Expect<'_>) -> Result<Checked, QueueError> {
    let mut reader = open(file, expect)?;
    let time = reader.header.time;
    let mut n = 0;
    while let Some(r) = reader.next_record()? {
        check_record(&r).map_err(|message| QueueError {
            line: reader.line(),
            message,
        })?;
        n += 1;
    }
    Ok(Checked { time, records: n })
}

/// A record as the master writes it: an http(s) URL in its normal form (ASCII, no white
/// space), the URL's id and domain.
pub fn check_record(r: &QueueRecord) -> Result<(), String> {
    let rest = r
        .url
        .strip_prefix("http://")
        .or_else(|| r.url.strip_prefix("https://"))
        .ok_or("not an http or https URL")?;
    if r.url.len() > MAX_URL_LENGTH {
        return Err(format!("URL longer than {MAX_URL_LENGTH} bytes"));
    }
    if !r.url.bytes().all(|b| b.is_ascii_graphic()) || r.url.contains('#') {
        return Err("URL is not in its normal form (white space, non-ASCII or a fragment)".into());
    }
    if urls::url_id(&r.url) != r.id {
        return Err(format!("id {} is not the id of the URL", r.id));
    }
    if r.domain.len() > MAX_DOMAIN || r.domain != urls::domain_of(host(rest)) {
        return Err(format!("domain {:?} is not the URL's", r.domain));
    }
    Ok(())
}

/// The host of `rest` (a URL after `scheme://`): no user info, no port.
fn host(rest: &str) -> &str {
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let host = authority
        .rfind('@')
        .map_or(authority, |at| &authority[at + 1..]);
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rfind(':').map_or(host, |colon| &host[..colon])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(url: &str, domain: &str) -> QueueRecord {
        QueueRecord {
            id: urls::url_id(url),
            url: url.into(),
            domain: domain.into(),
            timestamp: 0,
            hits: 1,
            updatetag: String::new(),
            new: true,
        }
    }

    #[test]
    fn records_are_checked() {
        assert_eq!(
            check_record(&record("http://www.a.ru/x?y=1", "a.ru")),
            Ok(())
        );
        assert_eq!(check_record(&record("https://u@a.ru:81/", "a.ru")), Ok(()));
        assert_eq!(check_record(&record("http://[::1]:8080/", "[::1]")), Ok(()));
        let bad = [
            (record("ftp://a.ru/", "a.ru"), "not an http"),
            (record("http://a.ru/a b", "a.ru"), "normal form"),
            (record("http://a.ru/#x", "a.ru"), "normal form"),
            (record("http://a.ru/", "b.ru"), "domain"),
            (
                QueueRecord {
                    id: 7,
                    ..record("http://a.ru/", "a.ru")
                },
                "is not the id",
            ),
        ];
        for (r, why) in bad {
            let e = check_record(&r).unwrap_err();
            assert!(e.contains(why), "{}: {e}", r.url);
        }
    }

    #[test]
    fn damaged_files_are_refused_or_read_never_a_panic() {
        use focuser_formats::queue::{QueueHeader, QueueWriter};
        let header = QueueHeader {
            master: "m1".into(),
            cycle: 1,
            node: 1,
            time: 1_700_000_000,
        };
        let mut w = QueueWriter::new(Vec::new(), &header).unwrap();
        for u in ["http://a.ru/x?y=1", "https://www.b.ru:8080/"] {
            let d = urls::domain_of(u.split('/').nth(2).unwrap().split(':').next().unwrap());
            w.write(&record(u, &d)).unwrap();
        }
        let good = w.finish().unwrap().0;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q");
        let expect = Expect {
            master: "m1",
            node: Some(1),
        };
        let check = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            whole_file(&File::open(&path).unwrap(), &expect).map(|c| c.records)
        };
        assert_eq!(check(&good), Ok(2));
        let mut refused = 0;
        for i in 0..good.len() {
            for b in [b'\t', b'\n', b'0', b'#', 0xff] {
                let mut bad = good.clone();
                bad[i] = b;
                if check(&bad).is_err() {
                    refused += 1;
                }
            }
            // Cut anywhere before the trailer's end (its newline may go).
            if i < good.len() - 1 {
                assert!(check(&good[..i]).is_err(), "cut at {i}");
            }
        }
        assert!(
            refused > good.len() * 4,
            "most damage is noticed: {refused}"
        );
    }
}
