//! Whole files into the inbox: a temporary name, the size and CRC checked, fsync, rename.

use std::fs::File;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::Path;

use focuser_schema::fsutil;
use focuser_schema::segment::crc;

use super::{add, RecvShared};
use crate::wire::frame::put_string;
use crate::wire::frame::Fields;
use crate::wire::handshake::{self, Accepted};
use crate::wire::messages::{check_file_name, code};
use crate::wire::{read_frame, write_frame, FileBegin, FrameError, FrameType};

pub(super) fn receive(
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
    a: &Accepted,
    sh: &RecvShared,
) -> anyhow::Result<()> {
    let inbox = sh.inbox_dir.join(&a.hello.stream);
    std::fs::create_dir_all(&inbox)?;
    handshake::welcome(w, a, Default::default())?;
    loop {
        let f = match read_frame(r, sh.max_frame) {
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
            add(&sh.counts.bad_names, 1);
            handshake::refuse(w, code::BAD_NAME, reason);
            anyhow::bail!("refused file name {:?}: {reason}", begin.name);
        }
        let tmp = inbox.join(format!(".{}.tmp", begin.name));
        match take_file(r, &tmp, &begin, sh.max_frame) {
            Ok(()) => {}
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                if let Some(BadFile(reason)) = e.downcast_ref::<BadFile>() {
                    handshake::refuse(w, code::BAD_FILE, reason);
                }
                return Err(e.context(format!("file {}", begin.name)));
            }
        }
        fsutil::publish(&tmp, &inbox.join(&begin.name))?;
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

/// Writes the file's FILE_DATA frames to `tmp` and checks them against FILE_END; fsyncs.
fn take_file(
    r: &mut BufReader<TcpStream>,
    tmp: &Path,
    begin: &FileBegin,
    max: usize,
) -> anyhow::Result<()> {
    let mut out = File::create(tmp)?;
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

/// A file that arrived damaged: refused with this reason.
#[derive(Debug)]
pub(super) struct BadFile(pub &'static str);

impl std::fmt::Display for BadFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for BadFile {}
