//! current_log: round trips, damage found, split reads and continuations.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::read::MAX_LINE_BYTES;
use super::*;

fn write_log(path: &Path, ids: &[u64]) {
    let file = BufWriter::new(File::create(path).unwrap());
    let mut w = Writer::new(file, 4).unwrap();
    for &id in ids {
        w.write(
            &Entry {
                id,
                fwd_ts: 10,
                tag: "t",
                pending: 2,
                last_seen: 20,
            },
            "a.ru",
            "http://a.ru/",
        )
        .unwrap();
    }
    let (mut f, n) = w.finish().unwrap();
    f.flush().unwrap();
    assert_eq!(n, ids.len() as u64);
}

fn read_all(path: &Path) -> Result<Vec<(u64, String)>, LogError> {
    let mut r = Reader::open(path)?.unwrap();
    let mut out = Vec::new();
    while let Some(e) = r.next_entry()? {
        out.push((e.entry.id, format!("{e:?}")));
    }
    Ok(out)
}

#[test]
fn a_line_without_end_is_damage_not_a_memory_hog() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("current_log");
    let mut text = format!("{MAGIC} cycle=3\n").into_bytes();
    text.extend(std::iter::repeat_n(b'a', MAX_LINE_BYTES + 10));
    std::fs::write(&p, text).unwrap();
    let err = read_all(&p).unwrap_err().to_string();
    assert!(err.contains("longer than"), "{err}");
}

#[test]
fn round_trip_and_damage_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("current_log");
    assert!(Reader::open(&p).unwrap().is_none());
    write_log(&p, &[1, 5, u64::MAX]);
    let all = read_all(&p).unwrap();
    assert_eq!(
        all.iter().map(|e| e.0).collect::<Vec<_>>(),
        [1, 5, u64::MAX]
    );
    assert_eq!(Reader::open(&p).unwrap().unwrap().cycle, 4);

    let good = std::fs::read_to_string(&p).unwrap();
    for (damaged, message) in [
        (good.replace("\t2\tt\t", "\t3\tt\t"), "does not match"),
        (
            good.lines()
                .take(3)
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
            "without its trailer",
        ),
        (
            good.replacen("0000000000000005", "0000000000000000", 1),
            "out of id order",
        ),
        (good.replace(MAGIC, "#other"), "not a current_log"),
    ] {
        std::fs::write(&p, damaged).unwrap();
        let e = read_all(&p).unwrap_err().to_string();
        assert!(e.contains(message), "{e}");
    }
}

/// Reads a split file whole: both halves to their end, then the trailer.
fn read_split(path: &Path, at: u64) -> Result<Vec<(u64, String)>, LogError> {
    let (mut lower, mut upper) = Reader::open_split(path, at)?.unwrap();
    let mut out = Vec::new();
    for r in [&mut lower, &mut upper] {
        while let Some(e) = r.next_entry()? {
            out.push((e.entry.id, format!("{e:?}")));
        }
    }
    check_split(&lower, &upper)?;
    Ok(out)
}

fn entry(id: u64, tag: &str) -> Entry<'_> {
    Entry {
        id,
        fwd_ts: id as i64 % 1000,
        tag,
        pending: id % 7,
        last_seen: 5,
    }
}

#[test]
fn a_split_read_sees_every_entry_once_at_any_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("current_log");
    assert!(Reader::open_split(&p, 1 << 63).unwrap().is_none());
    // Ids spread over the whole range, lines of varied length (one longer than a probe's
    // buffer), and the ends of the id space.
    let mut ids: Vec<u64> = (1..400u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    ids.extend([0, u64::MAX]);
    ids.sort_unstable();
    ids.dedup();
    let long = "x".repeat(20_000);
    let mut w = Writer::new(BufWriter::new(File::create(&p).unwrap()), 9).unwrap();
    for &id in &ids {
        let url = if id % 5 == 0 {
            long.as_str()
        } else {
            "http://a.ru/"
        };
        w.write(&entry(id, if id % 3 == 0 { "t" } else { "" }), "a.ru", url)
            .unwrap();
    }
    w.finish().unwrap().0.flush().unwrap();
    let whole = read_all(&p).unwrap();
    assert_eq!(whole.len(), ids.len());
    for at in [0, 1, 1 << 63, u64::MAX, ids[17], ids[17] + 1, ids[200] - 1] {
        assert_eq!(read_split(&p, at).unwrap(), whole, "split at {at:x}");
        let (lower, _) = Reader::open_split(&p, at).unwrap().unwrap();
        assert_eq!(lower.cycle, 9);
    }

    // An empty log splits into two empty halves.
    let empty = dir.path().join("empty");
    let w = Writer::new(BufWriter::new(File::create(&empty).unwrap()), 2).unwrap();
    w.finish().unwrap().0.flush().unwrap();
    assert!(read_split(&empty, 1 << 63).unwrap().is_empty());

    // Damage is found by the half that reads it, or by the trailer check.
    let good = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    let swapped = {
        let mut l = lines.clone();
        l.swap(100, 300);
        l.join("\n") + "\n"
    };
    let changed = good.replacen("\ta.ru\thttp://a.ru/\n", "\ta.ru\thttp://b.ru/\n", 1);
    let last_entry = lines.len() - 2;
    lines.remove(last_entry);
    let dropped = lines.join("\n") + "\n";
    for (damaged, message) in [
        (swapped, "out of id order"),
        (changed, "does not match"),
        (dropped, "does not match"),
        (good[..good.len() - 30].to_string(), "without its trailer"),
    ] {
        std::fs::write(&p, &damaged).unwrap();
        for at in [1 << 63, ids[150], ids[350]] {
            let e = read_split(&p, at).unwrap_err().to_string();
            assert!(e.contains(message), "split at {at:x}: {e}");
        }
    }
    // A byte that is not UTF-8, in either half.
    for nth in [5, 390] {
        let mut bytes = good.clone().into_bytes();
        let line_start = good.match_indices('\n').nth(nth).unwrap().0 + 1;
        let url = line_start + good[line_start..].find("http").unwrap();
        bytes[url] = 0xff;
        std::fs::write(&p, &bytes).unwrap();
        assert!(read_all(&p)
            .unwrap_err()
            .to_string()
            .contains("not valid UTF-8"));
        let e = read_split(&p, 1 << 63).unwrap_err().to_string();
        assert!(e.contains("not valid UTF-8"), "{e}");
    }
}

#[test]
fn a_continuation_appended_gives_the_bytes_of_one_writer() {
    let ids: Vec<u64> = (0..50u64).map(|i| i * 1_000_003).collect();
    let mut one = Writer::new(Vec::new(), 3).unwrap();
    for &id in &ids {
        one.write(&entry(id, "v"), "a.ru", "http://a.ru/x").unwrap();
    }
    let (one, n) = one.finish().unwrap();
    assert_eq!(n, 50);
    for cut in [0, 1, 25, 50] {
        let mut lower = Writer::new(Vec::new(), 3).unwrap();
        let mut upper = Writer::continuation(Vec::new());
        for &id in &ids[..cut] {
            lower
                .write(&entry(id, "v"), "a.ru", "http://a.ru/x")
                .unwrap();
        }
        for &id in &ids[cut..] {
            upper
                .write(&entry(id, "v"), "a.ru", "http://a.ru/x")
                .unwrap();
        }
        let (bytes, entries) = upper.into_entries().unwrap();
        lower
            .append(entries, |out| {
                out.extend_from_slice(&bytes);
                Ok(())
            })
            .unwrap();
        let (two, n) = lower.finish().unwrap();
        assert_eq!(
            (String::from_utf8(two).unwrap(), n),
            (String::from_utf8(one.clone()).unwrap(), 50),
            "cut {cut}"
        );
    }
}
