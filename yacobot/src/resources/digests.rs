//! Item digest files (docs/formats.md "Item digest file"): after each run, every stored item
//! of the resource by key (MD5, digest of the canonical form, feed URL, live or deleted), as
//! `vr_data` holds them once the run is accounted. The next automatic run of the resource on
//! this node diffs against the file instead of reading its items back from `vr_data`, and
//! knows an unchanged item by its digest without computing its MD5.
//!
//! A file is trusted only while it describes the resource's latest run: it carries the
//! `process_timestamp` id of the run that wrote it, and a run whose previous run is another
//! one (on another node, interrupted, or a run whose file could not be written) reads
//! `vr_data`. Manual runs always read `vr_data`. A damaged file is refused, named and counted,
//! and the run reads `vr_data`.

use std::io::Write;
use std::path::PathBuf;

use chrono::{DateTime, NaiveDateTime};
use focuser_feed::hex;
use focuser_formats::fsutil;
use focuser_formats::segment::crc;
use focuser_schema::models::DataStatus;

const MAGIC: &[u8; 8] = b"FOCDIG01";
const HEADER: usize = 8 + 4 + 8 + 8 + 4;
/// `run_start` of a run without a `fetch_start`.
const NO_START: i64 = i64::MIN;
/// A file larger than this is refused: a resource's items are capped well below it.
const MAX_FILE: u64 = 1 << 30;

const HAS_DIGEST: u8 = 1;
const HAS_STATUS_ID: u8 = 2;
const LIVE: u8 = 4;

/// One stored item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub keyword: String,
    /// Lower-case hex MD5 (`vr_data.md5_sum`).
    pub md5: String,
    pub digest: Option<u128>,
    pub status_id: Option<u64>,
    /// `vr_data.data_status`.
    pub data_status: DataStatus,
}

/// The items of a resource after the run `run_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestFile {
    pub res_id: u32,
    pub run_id: u64,
    /// That run's `process_timestamp.fetch_start`: with the id, it tells the run from another
    /// that reuses its id (a database restored from a backup).
    pub run_start: Option<NaiveDateTime>,
    pub entries: Vec<Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    #[error("item digest file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("item digest file {path}: {why}")]
    Malformed { path: PathBuf, why: String },
}

/// The folder of the digest files of one node.
pub struct DigestDir {
    dir: PathBuf,
}

impl DigestDir {
    pub fn open(dir: PathBuf) -> std::io::Result<DigestDir> {
        std::fs::create_dir_all(&dir)?;
        Ok(DigestDir { dir })
    }

    pub fn path(&self, res_id: u32) -> PathBuf {
        self.dir.join(format!("{res_id}.dig"))
    }

    /// The file of `res_id`; `None` when there is none.
    pub fn load(&self, res_id: u32) -> Result<Option<DigestFile>, DigestError> {
        let path = self.path(res_id);
        let io = |source| DigestError::Io {
            path: path.clone(),
            source,
        };
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        if len > MAX_FILE {
            return Err(DigestError::Malformed {
                path,
                why: format!("{len} bytes, more than {MAX_FILE}"),
            });
        }
        let bytes = std::fs::read(&path).map_err(io)?;
        let file = decode(&bytes).map_err(|why| DigestError::Malformed {
            path: path.clone(),
            why,
        })?;
        if file.res_id != res_id {
            return Err(DigestError::Malformed {
                path,
                why: format!("written for resource {}", file.res_id),
            });
        }
        Ok(Some(file))
    }

    /// Deletes the file of `res_id`, if there is one (a withdrawn or removed resource).
    pub fn remove(&self, res_id: u32) -> Result<(), DigestError> {
        let path = self.path(res_id);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(DigestError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }

    /// Publishes the file atomically (temporary name, fsync, rename, fsync of the folder).
    pub fn save(&self, file: &DigestFile) -> Result<(), DigestError> {
        let path = self.path(file.res_id);
        let bytes = encode(file).map_err(|why| DigestError::Malformed {
            path: path.clone(),
            why,
        })?;
        fsutil::write_atomically(&path, |w| w.write_all(&bytes))
            .map_err(|source| DigestError::Io { path, source })
    }
}

pub fn encode(file: &DigestFile) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(HEADER + file.entries.len() * 64 + 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&file.res_id.to_le_bytes());
    out.extend_from_slice(&file.run_id.to_le_bytes());
    let start = file.run_start.map_or(NO_START, |t| t.and_utc().timestamp());
    out.extend_from_slice(&start.to_le_bytes());
    let count = u32::try_from(file.entries.len()).map_err(|_| "too many items".to_string())?;
    out.extend_from_slice(&count.to_le_bytes());
    for e in &file.entries {
        let len = u16::try_from(e.keyword.len())
            .map_err(|_| format!("a key of {} bytes", e.keyword.len()))?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(e.keyword.as_bytes());
        out.extend_from_slice(
            &hex::decode_md5(&e.md5).ok_or_else(|| format!("bad MD5 {:?}", e.md5))?,
        );
        let mut flags = 0;
        if e.digest.is_some() {
            flags |= HAS_DIGEST;
        }
        if e.status_id.is_some() {
            flags |= HAS_STATUS_ID;
        }
        if e.data_status == DataStatus::Live {
            flags |= LIVE;
        }
        out.push(flags);
        if let Some(d) = e.digest {
            out.extend_from_slice(&d.to_le_bytes());
        }
        if let Some(s) = e.status_id {
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
    let sum = crc::crc32c(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// Reads `n` bytes off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], String> {
    if rest.len() < n {
        return Err(format!("ends inside {what}"));
    }
    let (a, b) = rest.split_at(n);
    *rest = b;
    Ok(a)
}

fn arr<const N: usize>(rest: &mut &[u8], what: &str) -> Result<[u8; N], String> {
    let b = take(rest, N, what)?;
    let mut a = [0; N];
    a.copy_from_slice(b);
    Ok(a)
}

pub fn decode(bytes: &[u8]) -> Result<DigestFile, String> {
    if bytes.len() < HEADER + 4 {
        return Err(format!("{} bytes, shorter than a header", bytes.len()));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 4);
    let mut stored = [0; 4];
    stored.copy_from_slice(sum);
    if crc::crc32c(body) != u32::from_le_bytes(stored) {
        return Err("fails its CRC (torn or damaged)".into());
    }
    let mut rest = body;
    if take(&mut rest, 8, "the magic")? != MAGIC {
        return Err("not an item digest file (bad magic)".into());
    }
    let res_id = u32::from_le_bytes(arr(&mut rest, "the header")?);
    let run_id = u64::from_le_bytes(arr(&mut rest, "the header")?);
    let run_start = match i64::from_le_bytes(arr(&mut rest, "the header")?) {
        NO_START => None,
        s => Some(
            DateTime::from_timestamp(s, 0)
                .ok_or_else(|| format!("run start {s} out of range"))?
                .naive_utc(),
        ),
    };
    let count = u32::from_le_bytes(arr(&mut rest, "the header")?) as usize;
    // Every entry takes at least 19 bytes: a count the file cannot hold is refused before
    // anything is allocated for it.
    if count > rest.len() / 19 {
        return Err(format!("{count} items announced in {} bytes", rest.len()));
    }
    // Reserved for at most 64 Ki entries ahead: the rest grows with what is really read.
    let mut entries = Vec::with_capacity(count.min(1 << 16));
    for n in 1..=count {
        let what = format!("item {n}");
        let len = u16::from_le_bytes(arr(&mut rest, &what)?) as usize;
        let keyword = std::str::from_utf8(take(&mut rest, len, &what)?)
            .map_err(|_| format!("{what}: the key is not UTF-8"))?
            .to_string();
        let md5 = hex::encode(&arr::<16>(&mut rest, &what)?);
        let flags = arr::<1>(&mut rest, &what)?[0];
        if flags & !(HAS_DIGEST | HAS_STATUS_ID | LIVE) != 0 {
            return Err(format!("{what}: unknown flags {flags:#04x}"));
        }
        let digest = (flags & HAS_DIGEST != 0)
            .then(|| arr(&mut rest, &what).map(u128::from_le_bytes))
            .transpose()?;
        let status_id = (flags & HAS_STATUS_ID != 0)
            .then(|| arr(&mut rest, &what).map(u64::from_le_bytes))
            .transpose()?;
        entries.push(Entry {
            keyword,
            md5,
            digest,
            status_id,
            data_status: if flags & LIVE != 0 {
                DataStatus::Live
            } else {
                DataStatus::Deleted
            },
        });
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes after the last item", rest.len()));
    }
    Ok(DigestFile {
        res_id,
        run_id,
        run_start,
        entries,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> DigestFile {
        DigestFile {
            res_id: 7,
            run_id: 42,
            run_start: DateTime::from_timestamp(1_764_000_000, 0).map(|t| t.naive_utc()),
            entries: vec![
                Entry {
                    keyword: "商品-1".into(),
                    md5: "900150983cd24fb0d6963f7d28e17f72".into(),
                    digest: Some(u128::MAX - 5),
                    status_id: Some(9),
                    data_status: DataStatus::Live,
                },
                Entry {
                    keyword: String::new(),
                    md5: "d41d8cd98f00b204e9800998ecf8427e".into(),
                    digest: None,
                    status_id: None,
                    data_status: DataStatus::Deleted,
                },
            ],
        }
    }

    #[test]
    fn round_trip() {
        let f = sample();
        assert_eq!(decode(&encode(&f).unwrap()).unwrap(), f);
        let empty = DigestFile {
            entries: vec![],
            run_start: None,
            ..sample()
        };
        assert_eq!(decode(&encode(&empty).unwrap()).unwrap(), empty);
    }

    #[test]
    fn every_cut_and_every_flipped_bit_is_refused() {
        let bytes = encode(&sample()).unwrap();
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n]).is_err(), "cut at {n}");
        }
        for i in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[i / 8] ^= 1 << (i % 8);
            assert!(decode(&b).is_err(), "bit {i}");
        }
    }

    /// Malformed contents behind a good CRC: the decoder names them, never panics.
    #[test]
    fn malformed_contents_are_named() {
        let seal = |mut body: Vec<u8>| {
            let sum = crc::crc32c(&body);
            body.extend_from_slice(&sum.to_le_bytes());
            body
        };
        let header = |count: u32| {
            let mut h = MAGIC.to_vec();
            h.extend_from_slice(&7u32.to_le_bytes());
            h.extend_from_slice(&1u64.to_le_bytes());
            h.extend_from_slice(&NO_START.to_le_bytes());
            h.extend_from_slice(&count.to_le_bytes());
            h
        };
        let err = |b: Vec<u8>| decode(&seal(b)).unwrap_err();
        assert!(err(header(u32::MAX)).contains("announced"));
        let mut bad_magic = header(0);
        bad_magic[0] = b'X';
        assert!(err(bad_magic).contains("magic"));
        let mut bad_key = header(1);
        bad_key.extend_from_slice(&2u16.to_le_bytes());
        bad_key.extend_from_slice(&[0xff, 0xfe]);
        bad_key.extend_from_slice(&[0; 17]);
        assert!(err(bad_key).contains("not UTF-8"));
        let mut bad_flags = header(1);
        bad_flags.extend_from_slice(&0u16.to_le_bytes());
        bad_flags.extend_from_slice(&[0; 16]);
        bad_flags.extend_from_slice(&[0x80, 0, 0]);
        assert!(err(bad_flags).contains("unknown flags"));
        let mut short = header(1);
        short.extend_from_slice(&0u16.to_le_bytes());
        short.extend_from_slice(&[0; 16]);
        short.push(HAS_DIGEST);
        short.extend_from_slice(&[0; 3]);
        assert!(err(short).contains("ends inside item 1"));
        let mut trailing = header(0);
        trailing.extend_from_slice(&[0; 20]);
        assert!(err(trailing).contains("after the last item"));
    }

    #[test]
    fn files_are_published_and_checked_for_their_resource() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DigestDir::open(tmp.path().join("digests")).unwrap();
        assert_eq!(dir.load(7).unwrap(), None);
        dir.save(&sample()).unwrap();
        assert_eq!(dir.load(7).unwrap(), Some(sample()));
        std::fs::copy(dir.path(7), dir.path(8)).unwrap();
        let e = dir.load(8).unwrap_err().to_string();
        assert!(
            e.contains("8.dig") && e.contains("written for resource 7"),
            "{e}"
        );
        std::fs::write(dir.path(9), b"garbage").unwrap();
        let e = dir.load(9).unwrap_err().to_string();
        assert!(
            e.contains("9.dig") && e.contains("shorter than a header"),
            "{e}"
        );
    }
}
