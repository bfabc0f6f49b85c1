//! A sender's position file, written off the shipping path.
//!
//! Writing it atomically costs two fsyncs (the file, then the directory after the rename):
//! milliseconds on a quiet disk, tens on a busy one, as long as shipping thousands of items.
//! The session hands each position to save to this thread and goes on; it waits only when the
//! one before is still queued (the disk is slower than the saves asked for), so every position
//! asked for is written, in order. The shared saved position — what retention and lag go by —
//! moves only once its file is durable.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{Scope, ScopedJoinHandle};

use focuser_formats::segment::{write_position, Position};

use super::SenderState;

pub(super) struct Saver<'scope> {
    to_thread: Option<SyncSender<Position>>,
    thread: Option<ScopedJoinHandle<'scope, ()>>,
    /// The first write that failed: the session ends on it.
    failed: Arc<Mutex<Option<String>>>,
}

impl<'scope> Saver<'scope> {
    pub(super) fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        st: &'env SenderState,
    ) -> std::io::Result<Saver<'scope>> {
        // One position queued while another is written.
        let (to_thread, positions) = sync_channel::<Position>(1);
        let failed = Arc::new(Mutex::new(None));
        let report = Arc::clone(&failed);
        let thread = std::thread::Builder::new()
            .name("sender-position".into())
            .spawn_scoped(scope, move || {
                for pos in positions.iter() {
                    match write_position(&st.spec.position_file, pos) {
                        Ok(()) => {
                            if let Ok(mut p) = st.saved.lock() {
                                *p = pos;
                            }
                        }
                        Err(e) => {
                            if let Ok(mut f) = report.lock() {
                                f.get_or_insert(e.to_string());
                            }
                        }
                    }
                }
            })?;
        Ok(Saver {
            to_thread: Some(to_thread),
            thread: Some(thread),
            failed,
        })
    }

    /// Queues `pos` to be written; an error if an earlier write failed.
    pub(super) fn save(&self, pos: Position) -> Result<(), String> {
        self.check()?;
        match &self.to_thread {
            Some(t) => t
                .send(pos)
                .map_err(|_| "the position writer stopped".to_string()),
            None => Err("the position writer stopped".into()),
        }
    }

    pub(super) fn check(&self) -> Result<(), String> {
        match self.failed.lock().map(|f| f.clone()) {
            Ok(Some(e)) => Err(e),
            Ok(None) => Ok(()),
            Err(_) => Err("the position writer failed".into()),
        }
    }

    /// Waits until every position queued is written; the first error, if any.
    pub(super) fn finish(&mut self) -> Result<(), String> {
        self.to_thread = None;
        if let Some(t) = self.thread.take() {
            t.join()
                .map_err(|_| "the position writer panicked".to_string())?;
        }
        self.check()
    }
}

impl Drop for Saver<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sender::SenderSpec;
    use focuser_formats::segment::{read_position, Partition, Status};

    fn state(position_file: std::path::PathBuf) -> SenderState {
        SenderState::new(SenderSpec {
            group: "Index.0".into(),
            address: "127.0.0.1:1".into(),
            partition: Partition { count: 1, index: 0 },
            statuses: vec![Status::Update],
            stream: "t.Index.0".into(),
            lost_file: position_file.with_extension("lost"),
            position_file,
        })
    }

    fn pos(item_idx: u32) -> Position {
        Position {
            file_id: 3,
            item_idx,
        }
    }

    #[test]
    fn every_position_is_written_in_order_and_shared_once_durable() {
        let dir = tempfile::tempdir().unwrap();
        let st = state(dir.path().join("pos.dat"));
        std::thread::scope(|scope| {
            let mut saver = Saver::start(scope, &st).unwrap();
            for k in 1..=200 {
                saver.save(pos(k)).unwrap();
                // What is shared never runs ahead of what the file holds.
                let shared = st.saved();
                if let Some(on_disk) = read_position(&st.spec.position_file).unwrap() {
                    assert!(shared <= on_disk, "{shared} shared, {on_disk} on disk");
                } else {
                    assert_eq!(shared, Position::START);
                }
            }
            saver.finish().unwrap();
        });
        assert_eq!(st.saved(), pos(200));
        assert_eq!(
            read_position(&st.spec.position_file).unwrap(),
            Some(pos(200))
        );
    }

    #[test]
    fn a_failed_write_ends_the_session_and_moves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // The position file's directory does not exist: every write fails.
        let st = state(dir.path().join("missing/pos.dat"));
        let before = st.saved();
        std::thread::scope(|scope| {
            let mut saver = Saver::start(scope, &st).unwrap();
            saver.save(pos(1)).unwrap();
            let e = saver.finish().unwrap_err();
            assert!(e.contains("pos.dat"), "{e}");
            assert!(saver.save(pos(2)).is_err());
        });
        assert_eq!(st.saved(), before);
    }
}
