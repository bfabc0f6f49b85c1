//! A cycle's output file written by a thread of its own.
//!
//! The merge and the queue writers are single-threaded, and on a small machine the second core
//! is idle while they run: the copy into the page cache (the `write` calls) moves there. Every
//! [`START_WRITEBACK_EVERY`] bytes the thread also syncs what it has written (the filler goes
//! on meanwhile, up to [`IN_FLIGHT`] chunks ahead), so the fsync before the commit point finds
//! little left to do, as RocksDB's `bytes_per_sync` does.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

const CHUNK: usize = 1 << 20;
/// Chunks filled and not yet written: the memory this costs, and how far the filler may run ahead.
const IN_FLIGHT: usize = 4;
const START_WRITEBACK_EVERY: u64 = 16 << 20;

/// What the thread is given to write.
enum Work {
    Chunk(Vec<u8>),
    /// A whole file's contents, copied in by the kernel (`copy_file_range`).
    File(File),
}

pub struct BackgroundWriter {
    buf: Vec<u8>,
    to_thread: Option<SyncSender<Work>>,
    /// Written chunks come back to be filled again.
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<std::io::Result<File>>>,
}

impl BackgroundWriter {
    /// A writer of a file that is synced as it goes and at the end.
    pub fn new(file: File) -> std::io::Result<BackgroundWriter> {
        BackgroundWriter::start(file, true)
    }

    /// A writer of a scratch file, read back and removed by this process: never synced.
    pub fn scratch(file: File) -> std::io::Result<BackgroundWriter> {
        BackgroundWriter::start(file, false)
    }

    fn start(file: File, sync: bool) -> std::io::Result<BackgroundWriter> {
        let (to_thread, chunks) = sync_channel::<Work>(IN_FLIGHT);
        let (give_back, spare) = sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let thread = std::thread::Builder::new()
            .name("bgwrite".into())
            .spawn(move || write_chunks(file, &chunks, &give_back, sync))?;
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
        self.hand_over(Work::Chunk(full))
    }

    fn hand_over(&mut self, work: Work) -> std::io::Result<()> {
        let sent = self.to_thread.as_ref().map(|t| t.send(work));
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

    /// Appends the whole of `src` (from its start) after what was written so far.
    pub fn append_file(&mut self, src: File) -> std::io::Result<()> {
        self.send()?;
        self.hand_over(Work::File(src))
    }

    /// Writes what is left, syncs the file (data and size; not a scratch file's) and gives it
    /// back.
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
    chunks: &Receiver<Work>,
    give_back: &SyncSender<Vec<u8>>,
    sync: bool,
) -> std::io::Result<File> {
    let (mut written, mut started) = (0u64, 0u64);
    for work in chunks.iter() {
        match work {
            Work::Chunk(mut chunk) => {
                file.write_all(&chunk)?;
                written += chunk.len() as u64;
                chunk.clear();
                let _ = give_back.try_send(chunk);
            }
            Work::File(mut src) => {
                src.seek(SeekFrom::Start(0))?;
                written += std::io::copy(&mut src, &mut file)?;
            }
        }
        if sync && written - started >= START_WRITEBACK_EVERY {
            start_writeback(&file);
            started = written;
        }
    }
    if sync {
        file.sync_all()?;
    }
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
        // A file appended whole, then more writes.
        let other = dir.path().join("other");
        let appended: Vec<u8> = (0..CHUNK + 5).map(|i| (i % 251) as u8).collect();
        std::fs::write(&other, &appended).unwrap();
        let mut src = File::options().read(true).write(true).open(&other).unwrap();
        src.seek(SeekFrom::End(0)).unwrap();
        w.append_file(src).unwrap();
        expected.extend_from_slice(&appended);
        w.write_all(b"tail\n").unwrap();
        expected.extend_from_slice(b"tail\n");
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
