//! The archive's own retention (docs/operations.md#the-archives-retention): the archive is the
//! store the reader ships, and also where pages due again are re-indexed from. Its owner says
//! which segments it still needs in a floor file, `<Archive.Dir>/retention.floor` (a position
//! file, docs/formats.md#position-files): the oldest segment kept. A reader with
//! `Store.FloorFile` deletes only below it, whatever its senders have shipped.
//!
//! Kept: every segment written to in the last `Url.SteadyMax` days (the largest
//! `steady_level`: no URL is re-indexed from an older copy), but at most `Archive.KeepBytes`
//! (0: no cap) counted from the newest segment: past the cap the oldest go first. The active
//! segment is always kept. A segment's age is its item file's modification time: the time of
//! its last write (sealed segments are not written again). Never above where the node's page
//! analysis (multidoc) is: what it has not read yet stays, whatever its age or the cap.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use focuser_daemon::episode::Episode;
use focuser_daemon::Config;
use focuser_formats::segment::{
    index_path, item_path, list_segments, read_position, write_position, Position, SegmentError,
};
use focuser_schema::models::MultidocPosition;

use crate::config::YacobotConfig;
use crate::worker::Ctx;

/// The floor file's name in the archive directory.
pub const FLOOR_FILE: &str = "retention.floor";
/// How often the floor is recomputed (segments age without being written).
const EVERY: Duration = Duration::from_secs(60);

/// The oldest segment of `dir` still needed: kept by age (`keep_days`), cut by size
/// (`keep_bytes`, 0: no cap), never above the active segment. `None`: no segment yet.
pub fn floor(
    dir: &Path,
    keep_days: f64,
    keep_bytes: u64,
    now: SystemTime,
) -> Result<Option<u64>, SegmentError> {
    let ids = list_segments(dir)?;
    let Some(&active) = ids.last() else {
        return Ok(None);
    };
    let keep = Duration::from_secs_f64((keep_days * 86_400.0).clamp(0.0, 1e12));
    let mut by_age = active;
    for &id in &ids {
        let p = item_path(dir, id);
        let written = std::fs::metadata(&p)
            .and_then(|m| m.modified())
            .map_err(|error| SegmentError::Io { path: p, error })?;
        // A clock gone backwards makes a segment young: kept.
        if now.duration_since(written).unwrap_or_default() < keep {
            by_age = id;
            break;
        }
    }
    let mut by_size = 0;
    if keep_bytes > 0 {
        let mut total = 0u64;
        for &id in ids.iter().rev() {
            for p in [item_path(dir, id), index_path(dir, id)] {
                total += std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            }
            if total > keep_bytes && id != active {
                by_size = id + 1;
                break;
            }
        }
    }
    Ok(Some(by_age.max(by_size).min(active)))
}

/// The segment the node's page analysis (multidoc) is reading the archive in: `None` when it is
/// off; not started yet: the first (everything stays).
pub fn analysis_at(ctx: &Ctx, cfg: &Config<YacobotConfig>) -> anyhow::Result<Option<u64>> {
    let d = &cfg.daemon;
    if !d.multidoc.enable {
        return Ok(None);
    }
    let store = crate::multidoc::store_name(&cfg.common.path(&d.archive.dir));
    let at = ctx.db.run("reading the page analysis position", |c| {
        MultidocPosition::find(c, &d.node, &store)
    })?;
    Ok(Some(at.map_or(Position::START.file_id, |p| p.file_id)))
}

/// Publishes the floor now and then, and whenever asked to (a segment was sealed).
pub struct Floor {
    dir: PathBuf,
    file: PathBuf,
    published: Option<(Instant, u64)>,
    /// Failing to publish only leaves the old floor in force (it keeps more): logged, the
    /// crawl goes on.
    failing: Episode,
}

impl Floor {
    pub fn new(archive_dir: &Path) -> Floor {
        Floor {
            dir: archive_dir.to_path_buf(),
            file: archive_dir.join(FLOOR_FILE),
            published: None,
            failing: Episode::new(format!(
                "publishing {}",
                archive_dir.join(FLOOR_FILE).display()
            )),
        }
    }

    /// The floor last published (or found already published).
    pub fn published(&self) -> Option<u64> {
        self.published.map(|(_, id)| id)
    }

    /// Recomputes the floor when due (or `now`) and writes it atomically if it moved;
    /// `reading` says which segment the archive's other reader (multidoc) is in, if any;
    /// `compact(from, below)` moves the copies still needed out of the segments the new floor
    /// lets go (`super::compact`) before it is written: if it fails, the old floor stays.
    pub fn tend(
        &mut self,
        keep_days: f64,
        keep_bytes: u64,
        now: bool,
        reading: impl FnOnce() -> anyhow::Result<Option<u64>>,
        compact: impl FnOnce(u64, u64) -> anyhow::Result<()>,
    ) {
        if !now && self.published.is_some_and(|(t, _)| t.elapsed() < EVERY) {
            return;
        }
        match reading().and_then(|r| self.publish(keep_days, keep_bytes, r, compact)) {
            Ok(()) => self.failing.resolved(&"published again"),
            Err(e) => self.failing.occurred(log::Level::Error, &format!("{e:#}")),
        };
    }

    fn publish(
        &mut self,
        keep_days: f64,
        keep_bytes: u64,
        reading: Option<u64>,
        compact: impl FnOnce(u64, u64) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let Some(id) = floor(&self.dir, keep_days, keep_bytes, SystemTime::now())? else {
            return Ok(());
        };
        let id = reading.map_or(id, |r| id.min(r));
        let at = Position {
            file_id: id,
            item_idx: 1,
        };
        let same = match self.published {
            Some((_, old)) => old == id,
            None => read_position(&self.file).ok().flatten() == Some(at),
        };
        if !same {
            if let Some(&oldest) = list_segments(&self.dir)?.first() {
                compact(oldest, id)?;
            }
            write_position(&self.file, at)?;
            log::info!("archive: retention floor at segment {id}");
        }
        self.published = Some((Instant::now(), id));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use focuser_formats::segment::{ItemRef, Origin, Status, Writer, WriterOptions};

    fn store(segments: u64) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = Writer::open(dir.path(), WriterOptions::default()).unwrap();
        for n in 0..segments {
            w.append_ref(&ItemRef {
                status: Status::Update,
                doc_id: format!("{n:016x}").as_bytes(),
                url: b"http://a.ru/",
                content: &[b'x'; 1000],
                time_ms: 0,
                origin: Origin::default(),
            })
            .unwrap();
            w.rotate().unwrap();
        }
        w.close().unwrap();
        dir
    }

    fn age(dir: &Path, id: u64, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 86_400);
        let f = std::fs::File::options()
            .append(true)
            .open(item_path(dir, id))
            .unwrap();
        f.set_modified(t).unwrap();
    }

    #[test]
    fn kept_by_age_then_cut_by_size() {
        let dir = store(4); // 1..=4 sealed, 5 active
        let d = dir.path();
        assert_eq!(list_segments(d).unwrap(), vec![1, 2, 3, 4, 5]);
        for (id, days) in [(1, 30), (2, 20), (3, 5)] {
            age(d, id, days);
        }
        let now = SystemTime::now();
        assert_eq!(floor(d, 60.0, 0, now).unwrap(), Some(1));
        assert_eq!(floor(d, 10.0, 0, now).unwrap(), Some(3));
        assert_eq!(floor(d, 1.0, 0, now).unwrap(), Some(4));
        // About 1 kB a segment: 2.5 kB keeps the active one and two sealed ones.
        assert_eq!(floor(d, 60.0, 2_500, now).unwrap(), Some(3));
        assert_eq!(floor(d, 60.0, 1, now).unwrap(), Some(5), "the active stays");
        assert_eq!(
            floor(tempfile::tempdir().unwrap().path(), 1.0, 0, now).unwrap(),
            None
        );
    }

    #[test]
    fn published_atomically_and_never_above_the_other_reader() {
        let dir = store(3); // 1..=3 sealed, 4 active
        let d = dir.path();
        for id in 1..=3 {
            age(d, id, 30);
        }
        let file = d.join(FLOOR_FILE);
        let mut f = Floor::new(d);
        f.tend(10.0, 0, true, || Ok(Some(2)), |_, _| Ok(()));
        assert_eq!(read_position(&file).unwrap().map(|p| p.file_id), Some(2));
        f.tend(10.0, 0, true, || Ok(None), |_, _| Ok(()));
        assert_eq!(read_position(&file).unwrap().map(|p| p.file_id), Some(4));
        assert_eq!(f.published(), Some(4));
        // The other reader's position unknown: the floor published stays.
        f.tend(
            10.0,
            0,
            true,
            || Err(anyhow::anyhow!("database away")),
            |_, _| Ok(()),
        );
        assert_eq!(read_position(&file).unwrap().map(|p| p.file_id), Some(4));
        assert_eq!(
            list_segments(d).unwrap(),
            vec![1, 2, 3, 4],
            "the owner deletes nothing"
        );
    }
}
