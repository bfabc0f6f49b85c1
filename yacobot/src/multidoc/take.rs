//! Taking a batch from the archive: the items after the position, each page analysed at once
//! without its domain's evidence (decode, blocks, fingerprints: what the evidence to load
//! depends on), its body dropped before the next is read.

use focuser_daemon::episode::Episode;
use focuser_formats::segment::{Cursor, Position, SegmentError, Status, StoredItem};
use focuser_formats::urls;
use focuser_multidoc::analyze::{analyze, Analysis};
use focuser_multidoc::decode::DecodeError;
use log::Level;

use super::stats::MultiDocStats;

/// An archived page.
pub struct PageIn {
    /// The URL id (the item's doc id).
    pub id: u64,
    pub url: String,
    pub domain: String,
    /// Where its item is.
    pub place: Position,
}

/// What an archive item asks of the worker.
pub enum Taken {
    /// A page, and its analysis without evidence (or why there is none).
    Page(PageIn, Box<Result<Analysis, DecodeError>>),
    /// A `DELETE` item: the URL's analysis goes.
    Gone { id: u64, place: Position },
}

/// A batch: its items in archive order, and the position after them.
pub struct Batch {
    pub items: Vec<Taken>,
    pub to: Position,
}

impl Batch {
    pub fn pages(&self) -> impl Iterator<Item = (&PageIn, &Result<Analysis, DecodeError>)> {
        self.items.iter().filter_map(|t| match t {
            Taken::Page(p, a) => Some((p, &**a)),
            Taken::Gone { .. } => None,
        })
    }
}

/// Items read at most for a batch of `pages` pages (`DELETE` items are cheap, but a batch
/// stays bounded).
const ITEMS_PER_PAGE: usize = 4;

/// Reads up to `pages` pages (and the `DELETE` items among them) from `cursor`, each page
/// analysed with at most `max_bytes`. A damaged record is counted, logged as an episode and
/// gone past; another error ends the batch (an error if it is empty: the step fails and is
/// tried again).
pub fn take(
    cursor: &mut Cursor,
    pages: usize,
    max_bytes: usize,
    stats: &MultiDocStats,
    damage: &mut Episode,
) -> Result<Batch, SegmentError> {
    let mut items = Vec::new();
    let mut n = 0;
    while n < pages && items.len() < pages * ITEMS_PER_PAGE {
        let stored = match cursor.next() {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(e) if e.is_damage() => {
                stats.error("store", e.items_skipped());
                damage.occurred(Level::Warn, &format!("{e}; the worker goes on after it"));
                continue;
            }
            Err(e) if items.is_empty() => return Err(e),
            Err(_) => break,
        };
        if let Some((from, to)) = cursor.take_gap() {
            log::warn!(
                "multidoc: archive segments {from}..{to} were deleted before they were analysed"
            );
        }
        // A copy kept by the archive's compaction: the page was analysed when downloaded.
        if stored.item.status == Status::Keep {
            continue;
        }
        let Some(t) = taken(stored, max_bytes) else {
            stats.error("store", 1);
            damage.occurred(
                Level::Warn,
                &"an item whose doc id or URL is not a page's; passed over",
            );
            continue;
        };
        n += usize::from(matches!(t, Taken::Page(..)));
        items.push(t);
    }
    Ok(Batch {
        items,
        to: cursor.position(),
    })
}

/// What item `s` asks for; `None` if it is not a page's item (its doc id is not a URL id in
/// hex, or its URL is not a URL).
pub fn taken(s: StoredItem, max_bytes: usize) -> Option<Taken> {
    let doc_id = std::str::from_utf8(&s.item.doc_id).ok()?;
    let id = u64::from_str_radix(doc_id, 16).ok()?;
    let place = Position {
        file_id: s.file_id,
        item_idx: s.item_idx,
    };
    if s.item.status == Status::Delete {
        return Some(Taken::Gone { id, place });
    }
    let url = String::from_utf8(s.item.url).ok()?;
    let (_, host) = urls::host_of(&url);
    if host.is_empty() {
        return None;
    }
    let domain = urls::domain_of(host);
    // The archive keeps the body only: the charset comes from a BOM, a <meta> or the detector.
    let analysis = analyze(&s.item.content, None, max_bytes, None);
    Some(Taken::Page(
        PageIn {
            id,
            url,
            domain,
            place,
        },
        Box::new(analysis),
    ))
}
