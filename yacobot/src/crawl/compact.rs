//! The archive's compaction (docs/operations.md#the-archives-retention): before the retention
//! floor passes a segment, the current copies in it of URLs that may still be re-indexed from
//! the archive (downloaded less than `steady_level` days ago) are appended again to the active
//! segment as `KEEP` items (never shipped: receivers get no second document), made durable,
//! and only then do their `url.archive_file`/`archive_item` point there, in one transaction;
//! the floor is published after that commit. A crash before the commit leaves the old places
//! booked and the floor where it was (the next try copies them again; the orphaned `KEEP`
//! items go with their segment); after it, the floor moves at the next try. So the floor never
//! passes a copy still booked there.

use focuser_daemon::clock;
use focuser_schema::models::{MovedCopy, Url};

use super::archive::Archive;
use super::bookkeeping::recently_downloaded;
use crate::worker::Ctx;

/// Moves the copies still needed out of segments `from..below`; returns how many moved.
pub fn compact(archive: &mut Archive, ctx: &Ctx, from: u64, below: u64) -> anyhow::Result<usize> {
    if from >= below {
        return Ok(0);
    }
    let copies = ctx.db.run("finding archived copies below the floor", |c| {
        Url::copies_in(c, from, below)
    })?;
    let now = clock::db_now();
    let mut moves = Vec::new();
    for c in copies {
        if !recently_downloaded(c.last_downloaded, c.steady_level, now) {
            continue; // downloaded when next due: its copy is not needed
        }
        // Gone or unreadable: it is downloaded when due, as without compaction.
        let Some(copy) = archive.copy(c.archive_file, c.archive_item, c.id) else {
            continue;
        };
        let to = archive.keep(&copy)?;
        moves.push(MovedCopy {
            id: c.id,
            from: (c.archive_file, c.archive_item),
            to: (to.file_id, to.item_idx),
        });
    }
    if moves.is_empty() {
        return Ok(0);
    }
    archive.sync()?;
    let moved = ctx.db.run("booking the archive's moved copies", |c| {
        diesel::Connection::transaction(c, |c| Url::move_copies(c, &moves))
    })?;
    log::info!(
        "archive: compaction kept {moved} copies from segments {from}..{below} (of {} copied)",
        moves.len()
    );
    Ok(moved)
}
