//! A cycle's output file written by a thread of its own.
//!
//! The merge and the queue writers are single-threaded, and on a small machine the second core
//! is idle while they run: the copy into the page cache (the `write` calls) moves there. Every
//! [`START_WRITEBACK_EVERY`] bytes the thread also syncs what it has written (the filler goes
//! on meanwhile, up to [`IN_FLIGHT`] chunks ahead), so the fsync before the commit point finds
//! little left to do, as RocksDB's `bytes_per_sync` does.

use std::fs::File;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

const CHUNK: usize = 1 << 20;
/// Chunks filled and not yet written: the memory this costs, and how far the filler may run ahead.
const IN_FLIGHT: usize = 4;
const START_WRITEBACK_EVERY: u64 = 16 << 20;

pub struct BackgroundWriter {
    buf: Vec<u8>,
    to_thread: Option<SyncSender<Vec<u8>>>,
    /// Written chunks come back to be filled again.
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<std::io::Result<File>>>,
}

impl BackgroundWriter {
    pub fn new(file: File) -> std::io::Result<BackgroundWriter> {
        let (to_thread, chunks) = sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let thread = std::thread::Builder::new()
            .name("bgwrite".into())
            .spawn(move || write_chunks(file, &chunks, &give_back))?;
        Ok(BackgroundWriter {
            buf: Vec::with_capacity(CHUNK),
            to_thread: Some(to_thread),
            spare,
            thread: Some(thread),
        })
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.buf, next);
        let sent = self.to_thread.as_ref().map(|t| t.send(full));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped on an error: that error.
            _ => Err(self
                .finish_thread()
                .err()
                .unwrap_or_else(|| std::io::Error::other("writer thread ended early"))),
        }
    }

    fn finish_thread(&mut self) -> std::io::Result<File> {
        self.to_thread = None;
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("writer thread panicked"))),
            None => Err(std::io::Error::other("file already finished")),
        }
    }

    /// Writes what is left, syncs the file (data and size) and gives it back.
    pub fn finish(mut self) -> std::io::Result<File> {
        self.send()?;
        self.finish_thread()
    }
}

impl Write for BackgroundWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > CHUNK {
            self.send()?;
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    /// Nothing: the data reaches the file in chunks, and all of it by [`BackgroundWriter::finish`].
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        // A cycle that failed: the thread ends when the channel closes; its file is discarded.
        self.to_thread = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_chunks(
    mut file: File,
    chunks: &Receiver<Vec<u8>>,
    give_back: &SyncSender<Vec<u8>>,
) -> std::io::Result<File> {
    let (mut written, mut started) = (0u64, 0u64);
    for mut chunk in chunks.iter() {
        file.write_all(&chunk)?;
        written += chunk.len() as u64;
        if written - started >= START_WRITEBACK_EVERY {
            start_writeback(&file);
            started = written;
        }
        chunk.clear();
        let _ = give_back.try_send(chunk);
    }
    file.sync_all()?;
    Ok(file)
}

/// Syncs what was written so far. Only a head start: the fsync at the end is what makes the
/// file durable, so a failure here is left to it.
fn start_writeback(file: &File) {
    let _ = file.sync_data();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_arrives_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut w = BackgroundWriter::new(File::create(&path).unwrap()).unwrap();
        let mut expected = Vec::new();
        for i in 0..200_000u32 {
            let line = format!("{i}\t{}\n", "x".repeat((i % 300) as usize));
            w.write_all(line.as_bytes()).unwrap();
            expected.extend_from_slice(line.as_bytes());
        }
        // A write larger than a chunk.
        let big = vec![b'y'; 3 * CHUNK + 17];
        w.write_all(&big).unwrap();
        expected.extend_from_slice(&big);
        let file = w.finish().unwrap();
        assert_eq!(file.metadata().unwrap().len(), expected.len() as u64);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn a_write_error_is_reported() {
        // A file opened read-only cannot be written: the error comes back, no panic.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro");
        std::fs::write(&path, b"").unwrap();
        let mut w = BackgroundWriter::new(File::open(&path).unwrap()).unwrap();
        let mut failed = false;
        for _ in 0..20 {
            if w.write_all(&vec![b'z'; CHUNK]).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed || w.finish().is_err());
    }
}
