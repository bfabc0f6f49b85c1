//! A store's files cut short at every byte offset — the sealed segment's and the active one's,
//! item file and index — and what each reader makes of it: `reader dump`, `reader stat`, the
//! sender's batches (ITEMS and RECORDS) and the writer's recovery. None may panic; each names
//! the damage; the sender ships every item whose record is whole and counts the others.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use focuser_daemon::Config;
use focuser_formats::segment::record::{FILE_HEADER_LEN, RECORD_HEADER_LEN};
use focuser_formats::segment::{
    index_path, item_path, Cursor, Item, Origin, Partition, Position, Status, SyncPolicy, Writer,
    WriterOptions,
};
use proptest::prelude::*;

use super::Batcher;
use crate::config::{ReaderConfig, SendConfig};
use crate::sender::{SenderSpec, SenderState, Settings};
use crate::wire::frame::read_frame_unchecked;
use crate::wire::BatchRef;

/// Segments 1 and 2 sealed, 3 active.
const SEGMENTS: u64 = 3;

fn item(n: u32, size: usize) -> Item {
    Item {
        status: if n.is_multiple_of(4) {
            Status::Delete
        } else {
            Status::Update
        },
        doc_id: format!("d{n}").into_bytes(),
        url: format!("http://h.example/{n}").into_bytes(),
        content: vec![b'a' + (n % 26) as u8; size],
        time_ms: 1_700_000_000_000,
        origin: Origin::default(),
    }
}

fn opts() -> WriterOptions {
    WriterOptions {
        max_age_s: 0,
        max_items: 1000,
        max_bytes: 1 << 30,
        sync: SyncPolicy {
            every_items: 1,
            every_ms: 0,
        },
    }
}

/// A store written once: each file's bytes, and where each segment's records end.
struct Fixture {
    files: Vec<(String, Vec<u8>)>,
    /// Per segment, the end offset of each record.
    ends: Vec<Vec<u64>>,
}

fn at(file_id: u64, item_idx: u32) -> Position {
    Position { file_id, item_idx }
}

impl Fixture {
    fn build(sizes: &[Vec<usize>]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = Writer::open(dir.path(), opts()).unwrap();
        let mut n = 0;
        let mut ends = Vec::new();
        for (s, seg) in sizes.iter().enumerate() {
            if s > 0 {
                w.rotate().unwrap();
            }
            let mut end = FILE_HEADER_LEN as u64;
            let mut e = Vec::new();
            for &size in seg {
                n += 1;
                let it = item(n, size);
                w.append(&it).unwrap();
                end += (RECORD_HEADER_LEN + it.doc_id.len() + it.url.len() + size) as u64;
                e.push(end);
            }
            ends.push(e);
        }
        w.close().unwrap();
        let mut files = Vec::new();
        for id in 1..=SEGMENTS {
            for p in [item_path(dir.path(), id), index_path(dir.path(), id)] {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                files.push((name, std::fs::read(&p).unwrap()));
            }
        }
        Fixture { files, ends }
    }

    /// Writes the store into `dir` afresh with `target` cut to `len` bytes.
    fn lay_out(&self, dir: &Path, target: &str, len: usize) {
        for (name, bytes) in &self.files {
            let b = if name == target { &bytes[..len] } else { bytes };
            std::fs::write(dir.join(name), b).unwrap();
        }
    }

    fn len(&self, name: &str) -> usize {
        self.files.iter().find(|(n, _)| n == name).unwrap().1.len()
    }

    /// Every item's position, in store order.
    fn all(&self) -> Vec<Position> {
        (1..=SEGMENTS)
            .flat_map(|id| (1..=self.ends[id as usize - 1].len() as u32).map(move |k| at(id, k)))
            .collect()
    }
}

/// What a cut should leave: the items a reader gets and how many it skips as damaged.
struct Expected {
    readable: Vec<Position>,
    skipped: u64,
}

fn expected(fx: &Fixture, seg: u64, item_file: bool, len: u64) -> Expected {
    let ends = &fx.ends[seg as usize - 1];
    let n = ends.len() as u32;
    let active = seg == SEGMENTS;
    let (kept, skipped) = if !item_file {
        // A sealed segment's index is completed by a scan; the active one's items are
        // visible as far as whole entries go.
        let entries = (len.saturating_sub(FILE_HEADER_LEN as u64) / 16) as u32;
        (if active { entries.min(n) } else { n }, 0)
    } else if len < FILE_HEADER_LEN as u64 {
        (0, 1)
    } else {
        let whole = ends.iter().filter(|&&e| e <= len).count() as u32;
        (whole, u64::from(n - whole))
    };
    let readable = fx
        .all()
        .into_iter()
        .filter(|p| p.file_id != seg || p.item_idx <= kept)
        .collect();
    Expected { readable, skipped }
}

struct Sender {
    st: SenderState,
    settings: Settings,
}

fn sender(state: &Path) -> Sender {
    let spec = SenderSpec {
        group: "Index.0".into(),
        address: "127.0.0.1:1".into(),
        partition: Partition { count: 1, index: 0 },
        statuses: vec![Status::Update, Status::Delete],
        stream: "n.Index.0".into(),
        position_file: state.join("pos.dat"),
        lost_file: state.join("lost.txt"),
    };
    let send = SendConfig {
        batch_items: 3,
        ..SendConfig::default()
    };
    Sender {
        st: SenderState::new(spec),
        settings: Settings {
            max_frame: 1 << 20,
            send,
        },
    }
}

/// Builds batches from the oldest item until the sender is caught up: the positions shipped
/// (each frame decoded as the receiver decodes it, its CRCs checked) and how many items the
/// sender counted as damaged.
fn ship(dir: &Path, state: &Path, records: bool) -> (Vec<Position>, u64) {
    let s = sender(state);
    let mut b = Batcher::new(Cursor::new(dir, Position::START, None));
    let mut shipped = Vec::new();
    let (mut payload, mut crcs) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..100 {
        let built = match records {
            true => b.records(&s.st, &s.settings),
            false => b.items(&s.st, &s.settings),
        }
        .unwrap_or_else(|e| panic!("a batch failed: {e}"));
        let head = read_frame_unchecked(&mut &b.out[..], 1 << 20, &mut payload).unwrap();
        let batch = BatchRef::decode_checked(&payload, head, &mut crcs).unwrap();
        shipped.extend(batch.items.iter().map(|w| w.at));
        if built.count == 0 && last == Some(built.upto) {
            let corrupt = s.st.corrupt_items.load(Ordering::Relaxed);
            return (shipped, corrupt);
        }
        last = Some(built.upto);
    }
    panic!("the sender never caught up");
}

fn check_dump(path: &Path, item_file: bool, ends: &[u64], len: u64) {
    let mut out = Vec::new();
    let r = crate::tools::dump(path, &mut out);
    let lines = out.iter().filter(|&&b| b == b'\n').count();
    let boundary = |e: &u64| *e == len;
    let clean = if item_file {
        len == FILE_HEADER_LEN as u64 || ends.iter().any(boundary)
    } else {
        len >= FILE_HEADER_LEN as u64 && (len - FILE_HEADER_LEN as u64).is_multiple_of(16)
    };
    match r {
        Ok(n) => {
            assert!(clean, "{} cut at {len}: no error", path.display());
            assert_eq!(n as usize, lines);
        }
        Err(e) => {
            let e = e.to_string();
            assert!(!clean, "{} cut at {len}: {e}", path.display());
            assert!(e.contains(&path.display().to_string()), "{e}");
            if item_file && len > FILE_HEADER_LEN as u64 {
                let from = ends.iter().rev().find(|&&e| e < len).copied();
                let from = from.unwrap_or(FILE_HEADER_LEN as u64);
                assert!(e.contains(&format!("offset {from}:")), "{e}");
                assert_eq!(lines, ends.iter().filter(|&&e| e < len).count());
            }
        }
    }
}

/// Recovery at the writer's next start: what it cuts and keeps, and the store goes on.
fn check_recovery(dir: &Path, fx: &Fixture, seg: u64, item_file: bool, len: u64) {
    let (mut w, rec) = Writer::open(dir, opts()).unwrap();
    let ends = &fx.ends[SEGMENTS as usize - 1];
    if seg == SEGMENTS && item_file && len < FILE_HEADER_LEN as u64 {
        assert!(rec.left_behind.is_some(), "{rec:?}");
        assert_eq!((rec.file_id, rec.items), (SEGMENTS + 1, 0));
    } else if seg == SEGMENTS && item_file {
        let whole = ends.iter().filter(|&&e| e <= len).count();
        let end = ends[..whole]
            .last()
            .copied()
            .unwrap_or(FILE_HEADER_LEN as u64);
        assert_eq!((rec.file_id, rec.items as usize), (SEGMENTS, whole));
        assert_eq!(rec.cut_bytes, len - end);
    } else {
        assert_eq!((rec.file_id, rec.items as usize), (SEGMENTS, ends.len()));
        assert_eq!(rec.cut_bytes, 0);
    }
    let next = w.append(&item(999, 3)).unwrap();
    w.close().unwrap();
    // The active segment reads whole again, and the new item after what survived.
    let mut c = Cursor::new(dir, at(next.file_id, 1), None);
    let mut got = Vec::new();
    while let Some(s) = c.next().unwrap() {
        got.push(at(s.file_id, s.item_idx));
    }
    assert_eq!(got.last(), Some(&next));
    assert_eq!(got.len(), next.item_idx as usize);
}

fn check_cut(fx: &Fixture, cfg: &ReaderConfig, seg: u64, item_file: bool, len: usize) {
    let d = tempfile::tempdir_in(scratch()).unwrap();
    let (dir, state) = (d.path().join("store"), d.path().join("state"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let target: PathBuf = match item_file {
        true => item_path(&dir, seg),
        false => index_path(&dir, seg),
    };
    let name = target.file_name().unwrap().to_string_lossy().into_owned();
    fx.lay_out(&dir, &name, len);
    let len = len as u64;
    let what = format!("{name} cut at {len}");
    check_dump(&target, item_file, &fx.ends[seg as usize - 1], len);
    let text = crate::tools::stat(cfg, &dir, &state).unwrap();
    let want = expected(fx, seg, item_file, len);
    // A sealed segment's damage is named; so is a header too short to read.
    let named = want.skipped > 0 && (seg < SEGMENTS || len < FILE_HEADER_LEN as u64);
    assert_eq!(text.contains(&name), named, "{what}: {text}");
    for records in [false, true] {
        let (shipped, corrupt) = ship(&dir, &state, records);
        let how = format!("{what}, records: {records}");
        assert_eq!(shipped, want.readable, "{how}");
        assert_eq!(corrupt, want.skipped, "{how}");
    }
    check_recovery(&dir, fx, seg, item_file, len);
}

/// Where the stores are laid out: a tmpfs if there is one (the writer's recovery fsyncs).
fn scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => shm.to_path_buf(),
        false => std::env::temp_dir(),
    }
}

fn config(dir: &Path) -> Config<ReaderConfig> {
    let cf = dir.join("reader.cf");
    std::fs::write(
        &cf,
        format!(
            "rootdir = {}\nname = n\nsecret_file = secret\nIndex.0.Addresses = 127.0.0.1:1\n",
            dir.display()
        ),
    )
    .unwrap();
    Config::<ReaderConfig>::load(&cf, None).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2))]

    #[test]
    fn a_store_cut_at_any_byte_is_read_around_its_damage_and_recovered(
        sizes in prop::collection::vec(prop::collection::vec(0usize..32, 3..=5), 3)
    ) {
        let fx = Fixture::build(&sizes);
        let c = tempfile::tempdir().unwrap();
        let cfg = config(c.path());
        for seg in [2, SEGMENTS] {
            for item_file in [true, false] {
                let name = match item_file {
                    true => format!("item_{seg:010}.dat"),
                    false => format!("index_{seg:010}.dat"),
                };
                for len in 0..fx.len(&name) {
                    check_cut(&fx, &cfg.daemon, seg, item_file, len);
                }
            }
        }
    }
}
