//! A resend request: the file `reader resend` writes into `state_dir` for the running sender
//! (docs/formats.md, "Resend requests"). One per receiver, named for it; the daemon adds the
//! snapshot position when it takes the request up, so that a restart goes on with the same one.

use std::io::Write;
use std::path::{Path, PathBuf};

use focuser_formats::fsutil;
use focuser_formats::segment::Position;

use crate::sender::SenderSpec;

/// A request file is a few short lines: anything longer is refused unread.
pub const MAX_REQUEST_BYTES: u64 = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub group: String,
    pub address: String,
    /// Names the resend's stream (`<stream>.resend<id>`): unix milliseconds of the request.
    pub id: u64,
    /// Set by the daemon when it starts the resend: items before it are resent.
    pub snapshot: Option<Position>,
    /// Set with `snapshot`: whether the live set is read from the store or from its owner's
    /// snapshot (`Store.SnapshotDir`); a restart goes on the same way.
    pub from: Option<Source>,
}

/// Where a resend reads the live set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Store,
    Owner,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Store => "store",
            Source::Owner => "owner",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: longer than {MAX_REQUEST_BYTES} bytes", .0.display())]
    TooLong(PathBuf),
    #[error("{}: line {line}: {reason}", .path.display())]
    Bad {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{}: begun reading the live set from the {}, which Store.SnapshotDir now says is not where it is: run `reader resend` again", .0.display(), .1.name())]
    Source(PathBuf, Source, Source),
    #[error("the owner's snapshot is not whole: {0}; {1}")]
    Snapshot(String, String),
    #[error("{}: names no sender of this reader (a resend request is `resend_<group>_<k>_<address>.req`)", .0.display())]
    NoSender(PathBuf),
}

/// The request file for `spec`'s receiver.
pub fn request_path(spec: &SenderSpec) -> PathBuf {
    sibling(&spec.position_file, "resend_", "req")
}

/// Where a resend to `spec`'s receiver keeps its position.
pub fn position_path(spec: &SenderSpec) -> PathBuf {
    sibling(&spec.position_file, "resend_", "dat")
}

/// `pos_<group>_<k>_<address>.dat` becomes `<prefix><group>_<k>_<address>.<ext>`.
fn sibling(position_file: &Path, prefix: &str, ext: &str) -> PathBuf {
    let name = position_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rest = name.strip_prefix("pos_").unwrap_or(&name);
    position_file.with_file_name(format!("{prefix}{rest}.{ext}"))
}

impl Request {
    pub fn new(spec: &SenderSpec, id: u64) -> Request {
        Request {
            group: spec.group.clone(),
            address: spec.address.clone(),
            id,
            snapshot: None,
            from: None,
        }
    }

    pub fn encode(&self) -> String {
        let mut t = format!(
            "group = {}\naddress = {}\nid = {}\n",
            self.group, self.address, self.id
        );
        if let Some(p) = self.snapshot {
            t.push_str(&format!("snapshot = {p}\n"));
        }
        if let Some(f) = self.from {
            t.push_str(&format!("from = {}\n", f.name()));
        }
        t
    }

    /// Published atomically: the daemon never reads half a request.
    pub fn write(&self, path: &Path) -> Result<(), RequestError> {
        fsutil::write_atomically(path, |w| w.write_all(self.encode().as_bytes())).map_err(
            |source| RequestError::Io {
                path: path.into(),
                source,
            },
        )
    }

    /// Reads the request for `spec`: every line `key = value`, each key once, the group and
    /// address those of `spec` (the file's name), numbers in range.
    pub fn read(path: &Path, spec: &SenderSpec) -> Result<Request, RequestError> {
        let io = |source| RequestError::Io {
            path: path.into(),
            source,
        };
        let meta = std::fs::symlink_metadata(path).map_err(io)?;
        if !meta.file_type().is_file() {
            return Err(bad(path, 0, "not a regular file"));
        }
        if meta.len() > MAX_REQUEST_BYTES {
            return Err(RequestError::TooLong(path.into()));
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        Request::parse(path, &text, spec)
    }

    pub fn parse(path: &Path, text: &str, spec: &SenderSpec) -> Result<Request, RequestError> {
        let (mut group, mut address, mut id, mut snapshot, mut from) =
            (None, None, None, None, None);
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(bad(path, n, "expected `key = value`"));
            };
            let (key, value) = (key.trim(), value.trim());
            let slot = match key {
                "group" => &mut group,
                "address" => &mut address,
                "id" => &mut id,
                "snapshot" => &mut snapshot,
                "from" => &mut from,
                _ => return Err(bad(path, n, &format!("unknown key {key:?}"))),
            };
            if slot.replace(value.to_string()).is_some() {
                return Err(bad(path, n, &format!("{key} given twice")));
            }
            match key {
                "group" if value != spec.group => {
                    return Err(bad(
                        path,
                        n,
                        &format!("group {value:?}: the file is for {}", spec.group),
                    ))
                }
                "address" if value != spec.address => {
                    return Err(bad(
                        path,
                        n,
                        &format!("address {value:?}: the file is for {}", spec.address),
                    ))
                }
                "id" if !value.parse::<u64>().is_ok_and(|v| v > 0) => {
                    return Err(bad(path, n, "id: not a number from 1 to 2^64-1"))
                }
                "snapshot" if Position::parse(value).is_none() => {
                    return Err(bad(path, n, "snapshot: not a position FILE:ITEM in range"))
                }
                "from" if !matches!(value, "store" | "owner") => {
                    return Err(bad(path, n, "from: `store` or `owner`"))
                }
                _ => {}
            }
        }
        let missing = |what: &str| bad(path, 0, &format!("no {what}"));
        group.ok_or_else(|| missing("group"))?;
        address.ok_or_else(|| missing("address"))?;
        Ok(Request {
            group: spec.group.clone(),
            address: spec.address.clone(),
            id: id
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| missing("id"))?,
            snapshot: snapshot.and_then(|v| Position::parse(&v)),
            from: from.map(|v| {
                if v == "owner" {
                    Source::Owner
                } else {
                    Source::Store
                }
            }),
        })
    }
}

fn bad(path: &Path, line: usize, reason: &str) -> RequestError {
    RequestError::Bad {
        path: path.into(),
        line,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use focuser_formats::segment::{Partition, Status};

    fn spec() -> SenderSpec {
        SenderSpec {
            group: "Index.0".into(),
            address: "127.0.0.1:9".into(),
            partition: Partition { count: 1, index: 0 },
            statuses: vec![Status::Update],
            stream: "n.Index.0".into(),
            position_file: "/s/pos_Index.0_0_127.0.0.1_9.dat".into(),
            lost_file: "/s/lost".into(),
        }
    }

    #[test]
    fn a_request_round_trips_and_is_named_for_its_receiver() {
        let s = spec();
        assert_eq!(
            request_path(&s),
            Path::new("/s/resend_Index.0_0_127.0.0.1_9.req")
        );
        let mut r = Request::new(&s, 17);
        r.snapshot = Some(Position {
            file_id: 3,
            item_idx: 4,
        });
        r.from = Some(Source::Owner);
        assert_eq!(Request::parse(Path::new("f"), &r.encode(), &s).unwrap(), r);
    }

    #[test]
    fn hostile_requests_are_refused_with_file_and_line() {
        let s = spec();
        let head = "group = Index.0\naddress = 127.0.0.1:9\n";
        for (text, want) in [
            ("group = ../../etc\n", "line 1: group"),
            (
                &format!("{head}id = 99999999999999999999999\n")[..],
                "line 3: id",
            ),
            (&format!("{head}id = 0\n")[..], "line 3: id"),
            (
                &format!("{head}id = 1\nsnapshot = 1:99999999999\n")[..],
                "line 4: snapshot",
            ),
            (
                &format!("{head}id = 1\nid = 2\n")[..],
                "line 4: id given twice",
            ),
            (
                &format!("{head}id = 1\nstore = /etc\n")[..],
                "line 4: unknown key",
            ),
            (&format!("{head}garbage\n")[..], "line 3: expected"),
            (&format!("{head}id = 1\nfrom = disk\n")[..], "line 4: from"),
            (head, "no id"),
        ] {
            let e = Request::parse(Path::new("f.req"), text, &s)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
