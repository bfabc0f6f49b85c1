//! Whole files into the inbox. Each transfer writes a temporary file of its own (never shared
//! with another transfer of the same name), checks size and CRC, fsyncs, and publishes it
//! under its name only if that name is free: the same bytes already there are a resend
//! (acknowledged again), different ones a conflict (refused, ERROR 5, the file there kept).
//! What is published is thus always exactly what one FILE_ACK acknowledged, whole.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use focuser_formats::fsutil;
use focuser_formats::segment::crc;

use super::admit::{Refusal, RefusedError};
use super::{add, RecvShared};
use crate::wire::frame::put_string;
use crate::wire::frame::Fields;
use crate::wire::handshake::{self, Accepted};
use crate::wire::messages::{check_file_name, code};
use crate::wire::{read_frame, write_frame, FileBegin, FrameError, FrameType};

/// Temporary names start with this (and end with `.tmp`): leftovers of a crash are removed at
/// start ([`remove_temporaries`]); the loader skips every name starting with a dot.
const TEMP_PREFIX: &str = ".recv-";

/// Makes the inbox of `inbox` (a sendfile stream) if need be; returns its directory.
pub(super) fn open_inbox(sh: &RecvShared, inbox: &str) -> std::io::Result<PathBuf> {
    let dir = sh.inbox_dir.join(inbox);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub(super) fn receive(
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
    a: &Accepted,
    sh: &RecvShared,
) -> anyhow::Result<()> {
    let inbox = sh.inbox_dir.join(&a.hello.stream);
    loop {
        let f = match sh.next_frame_max(r).and_then(|max| read_frame(r, max)) {
            Ok(f) => f,
            Err(FrameError::Closed) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if f.kind != FrameType::FileBegin {
            return Err(FrameError::BadPayload {
                what: "files",
                reason: "expected FILE_BEGIN",
            }
            .into());
        }
        let begin = FileBegin::decode(&f.payload)?;
        if let Err(reason) = check_file_name(&begin.name) {
            handshake::refuse(w, code::BAD_NAME, reason);
            let message = format!("refused file name {:?}: {reason}", begin.name);
            return Err(RefusedError::new(Refusal::BadName, message)
                .class(reason)
                .into());
        }
        let tmp = temporary(&inbox, &begin.name);
        let taken = take_file(r, &tmp, &begin, sh.max_frame())
            .and_then(|()| publish(&tmp, &inbox.join(&begin.name)));
        // Published as a link, or refused: either way the temporary name goes.
        let _ = std::fs::remove_file(&tmp);
        if let Err(e) = taken {
            if let Some(BadFile(reason)) = e.downcast_ref::<BadFile>() {
                handshake::refuse(w, code::BAD_FILE, reason);
                let message = format!("file {}: {reason}", begin.name);
                return Err(RefusedError::new(Refusal::BadFile, message)
                    .class(reason)
                    .into());
            }
            return Err(e.context(format!("file {}", begin.name)));
        }
        add(&sh.counts.files, 1);
        add(&sh.counts.file_bytes, begin.size);
        log::info!(
            "{}: received {} ({} bytes)",
            a.hello.stream,
            begin.name,
            begin.size
        );
        let mut ack = Vec::new();
        put_string(&mut ack, &begin.name);
        write_frame(w, FrameType::FileAck, &ack)?;
    }
}

/// A temporary name no other transfer has: this process's id and a count, and the start of
/// the file's name for whoever looks (cut so that the whole always fits in 255 bytes).
fn temporary(inbox: &Path, name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut cut = name.len().min(100);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    inbox.join(format!(
        "{TEMP_PREFIX}{}-{n}-{}.tmp",
        std::process::id(),
        &name[..cut]
    ))
}

/// Writes the file's FILE_DATA frames to `tmp` and checks them against FILE_END; fsyncs.
fn take_file(
    r: &mut BufReader<TcpStream>,
    tmp: &Path,
    begin: &FileBegin,
    max: usize,
) -> anyhow::Result<()> {
    let mut out = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    let mut got = 0u64;
    let mut crc = 0u32;
    loop {
        let f = read_frame(r, max)?;
        match f.kind {
            FrameType::FileData => {
                got += f.payload.len() as u64;
                if got > begin.size {
                    return Err(BadFile("more data than the announced size").into());
                }
                crc = crc::append(crc, &f.payload);
                out.write_all(&f.payload)?;
            }
            FrameType::FileEnd => {
                let mut fl = Fields::new(&f.payload, "FILE_END");
                let want = fl.u32()?;
                fl.end()?;
                if got != begin.size {
                    return Err(BadFile("size differs from the announced size").into());
                }
                if want != crc {
                    return Err(BadFile("CRC mismatch").into());
                }
                out.sync_all()?;
                return Ok(());
            }
            _ => {
                return Err(FrameError::BadPayload {
                    what: "file",
                    reason: "expected FILE_DATA or FILE_END",
                }
                .into())
            }
        }
    }
}

/// Publishes the synced `tmp` as `target` (a link: it fails, atomically, if the name is
/// taken), then makes the name durable. A name taken by the same bytes is a resend.
fn publish(tmp: &Path, target: &Path) -> anyhow::Result<()> {
    // The file there may be taken away (by the loader) while it is compared: look again.
    for _ in 0..3 {
        match std::fs::hard_link(tmp, target) {
            Ok(()) => {
                let dir = target.parent().unwrap_or(Path::new("."));
                fsutil::sync_dir(dir)?;
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                match same_bytes(tmp, target) {
                    Ok(true) => return Ok(()),
                    Ok(false) => {
                        return Err(BadFile(
                            "a different file of this name is in the inbox; it is kept",
                        )
                        .into())
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(anyhow::anyhow!("{}: kept changing", target.display()))
}

fn same_bytes(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    if fa.metadata()?.len() != fb.metadata()?.len() {
        return Ok(false);
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(true);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// Removes the temporaries a crash left in the inboxes under `inbox_dir`; returns how many.
pub fn remove_temporaries(inbox_dir: &Path) -> std::io::Result<usize> {
    let inboxes = match std::fs::read_dir(inbox_dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for inbox in inboxes {
        let inbox = inbox?;
        if !inbox.file_type()?.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(inbox.path())? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(TEMP_PREFIX) && name.ends_with(".tmp") {
                std::fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// A file that arrived damaged, or cannot be published: refused with this reason.
#[derive(Debug)]
pub(super) struct BadFile(pub &'static str);

impl std::fmt::Display for BadFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for BadFile {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn temporaries_are_unique_fit_any_name_and_are_cleaned_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join("m1");
        std::fs::create_dir(&inbox).unwrap();
        let long = "é".repeat(127) + "x"; // 255 bytes, a cut inside a character
        let (t1, t2) = (temporary(&inbox, &long), temporary(&inbox, &long));
        assert_ne!(t1, t2);
        for t in [&t1, &t2] {
            let name = t.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.len() <= 255 && name.starts_with(".recv-"), "{name}");
            std::fs::write(t, b"partial").unwrap();
        }
        std::fs::write(inbox.join("kept.q"), b"q").unwrap();
        std::fs::write(inbox.join(".operator-moving-in.q"), b"q").unwrap();
        assert_eq!(remove_temporaries(dir.path()).unwrap(), 2);
        let mut left: Vec<String> = std::fs::read_dir(&inbox)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [".operator-moving-in.q", "kept.q"]);
        assert_eq!(remove_temporaries(&dir.path().join("none")).unwrap(), 0);
    }
}
