//! Writing a current_log, whole or as a continuation appended to another writer's file.

use std::fs::File;
use std::io::{BufWriter, Write};

use focuser_formats::num;
use focuser_formats::segment::crc;

use super::MAGIC;
use crate::filter::Entry;

/// Writes a current_log; entries must come in increasing id order. Lines are made in a block
/// of [`BLOCK`] bytes, whose checksum is taken and which is then written whole.
pub struct Writer<W: Write> {
    out: W,
    count: u64,
    crc: u32,
    /// The bytes of the entry lines written.
    bytes: u64,
    block: Vec<u8>,
}

/// Bytes of entry lines gathered before they are checksummed and written.
const BLOCK: usize = 64 << 10;

/// The entries a [`Writer::continuation`] wrote, to be accounted by [`Writer::append`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entries {
    pub count: u64,
    pub crc: u32,
    pub bytes: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, cycle: u64) -> std::io::Result<Self> {
        writeln!(out, "{MAGIC} cycle={cycle}")?;
        Ok(Self::continuation(out))
    }

    /// A writer of entries only, no header: those of a later id range, written at the same
    /// time as the earlier ones and then appended to their file ([`Writer::append`]).
    pub fn continuation(out: W) -> Self {
        Writer {
            out,
            count: 0,
            crc: 0,
            bytes: 0,
            block: Vec::with_capacity(BLOCK + 4096),
        }
    }

    pub fn write(&mut self, e: &Entry, domain: &str, url: &str) -> std::io::Result<()> {
        let l = &mut self.block;
        num::push_hex16(l, e.id);
        l.push(b'\t');
        num::push_i64(l, e.fwd_ts);
        l.push(b'\t');
        num::push_i64(l, e.last_seen);
        l.push(b'\t');
        num::push_u64(l, e.pending);
        for text in [e.tag, domain, url] {
            l.push(b'\t');
            l.extend_from_slice(text.as_bytes());
        }
        l.push(b'\n');
        self.count += 1;
        if l.len() >= BLOCK {
            self.write_block()?;
        }
        Ok(())
    }

    fn write_block(&mut self) -> std::io::Result<()> {
        self.crc = crc::append(self.crc, &self.block);
        self.bytes += self.block.len() as u64;
        self.out.write_all(&self.block)?;
        self.block.clear();
        Ok(())
    }

    /// A continuation's output and what it holds (no trailer).
    pub fn into_entries(mut self) -> std::io::Result<(W, Entries)> {
        self.write_block()?;
        let entries = Entries {
            count: self.count,
            crc: self.crc,
            bytes: self.bytes,
        };
        Ok((self.out, entries))
    }

    /// Appends a continuation's entries: `copy` puts its bytes into the output, and they are
    /// accounted in the trailer.
    pub fn append(
        &mut self,
        entries: Entries,
        copy: impl FnOnce(&mut W) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.write_block()?;
        copy(&mut self.out)?;
        self.crc = crc::combine(self.crc, entries.crc, entries.bytes);
        self.count += entries.count;
        self.bytes += entries.bytes;
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<(W, u64)> {
        self.write_block()?;
        writeln!(
            self.out,
            "#end entries={} crc32c={:08x}",
            self.count, self.crc
        )?;
        Ok((self.out, self.count))
    }
}

/// A writer into a file (the caller publishes it).
pub type FileWriter = Writer<BufWriter<File>>;
