//! The operator's tools: `reader dump FILE` and `reader stat`.

use std::fmt::Write as _;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use focuser_formats::segment::record::{
    self, FileHeader, RecordHeader, FILE_HEADER_LEN, INDEX_ENTRY_LEN, INDEX_MAGIC, ITEM_MAGIC,
    RECORD_HEADER_LEN,
};
use focuser_formats::segment::{list_segments, store_bytes, IndexEntry, Item, SegmentIndex};

use crate::config::ReaderConfig;
use crate::sender::lag::lag;
use crate::sender::resend::request::{request_path, Request};
use crate::sender::SenderSpec;

/// Prints an item file's records (or an index file's entries) as JSON lines. Damage stops
/// the dump with an error naming the offset and what it skips; what came before it has been
/// printed.
pub fn dump(path: &Path, out: &mut impl Write) -> anyhow::Result<u64> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut head = [0u8; FILE_HEADER_LEN];
    r.read_exact(&mut head)
        .map_err(|_| anyhow::anyhow!("{}: shorter than a header", path.display()))?;
    if let Ok(h) = FileHeader::decode(&head, INDEX_MAGIC) {
        return dump_index(path, h, &mut r, out);
    }
    let h = FileHeader::decode(&head, ITEM_MAGIC)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut offset = FILE_HEADER_LEN as u64;
    let mut n = 0;
    let mut buf = vec![0u8; RECORD_HEADER_LEN];
    while offset < len {
        let bad = |reason: &str| {
            anyhow::anyhow!(
                "{}: offset {offset}: {reason}; {n} records before it printed, the {} bytes \
                 from there on skipped",
                path.display(),
                len - offset
            )
        };
        buf.resize(RECORD_HEADER_LEN, 0);
        r.read_exact(&mut buf)
            .map_err(|_| bad("torn record header"))?;
        let rh = RecordHeader::decode(&buf).map_err(&bad)?;
        buf.resize(rh.len as usize, 0);
        r.read_exact(&mut buf[RECORD_HEADER_LEN..])
            .map_err(|_| bad("torn record"))?;
        let (rh, item) = record::decode_record(&buf).map_err(&bad)?;
        if rh.file_id != h.file_id {
            return Err(bad("record of another segment"));
        }
        writeln!(out, "{}", record_json(&rh, &item))?;
        offset += rh.len as u64;
        n += 1;
    }
    Ok(n)
}

fn record_json(rh: &RecordHeader, item: &Item) -> serde_json::Value {
    let mut v = serde_json::json!({
        "file_id": rh.file_id,
        "item_idx": rh.item_idx,
        "status": item.status.name(),
        "doc_id": String::from_utf8_lossy(&item.doc_id),
        "url": String::from_utf8_lossy(&item.url),
        "time_ms": item.time_ms,
        "content_len": item.content.len(),
        "content": String::from_utf8_lossy(&item.content),
    });
    if item.origin.stream != 0 {
        v["origin"] = serde_json::json!({
            "stream": item.origin.stream,
            "file_id": item.origin.file_id,
            "item_idx": item.origin.item_idx,
        });
    }
    v
}

fn dump_index(
    path: &Path,
    h: FileHeader,
    r: &mut impl Read,
    out: &mut impl Write,
) -> anyhow::Result<u64> {
    let mut b = Vec::new();
    r.read_to_end(&mut b)?;
    let mut n = 0;
    for (i, chunk) in b.chunks(INDEX_ENTRY_LEN).enumerate() {
        let idx = i as u32 + 1;
        let e = IndexEntry::decode(chunk, idx).map_err(|e| {
            anyhow::anyhow!(
                "{}: entry {idx} (offset {}): {e}",
                path.display(),
                FILE_HEADER_LEN + i * INDEX_ENTRY_LEN
            )
        })?;
        writeln!(
            out,
            "{}",
            serde_json::json!({"file_id": h.file_id, "item_idx": idx, "offset": e.offset, "doc_hash": e.doc_hash})
        )?;
        n += 1;
    }
    Ok(n)
}

/// Every sender's position and lag, and the store's size, as a table.
pub fn stat(cfg: &ReaderConfig, store: &Path, state_dir: &Path) -> anyhow::Result<String> {
    let now = focuser_daemon::clock::unix_millis();
    let mut out = String::new();
    let ids = list_segments(store).unwrap_or_default();
    let _ = writeln!(
        out,
        "store {}: {} segments ({}..{}), {} bytes",
        store.display(),
        ids.len(),
        ids.first().copied().unwrap_or(0),
        ids.last().copied().unwrap_or(0),
        store_bytes(store).unwrap_or(0)
    );
    // Damage readers pass over (and senders count): each damaged segment, once.
    for &id in &ids {
        match SegmentIndex::open(store, id) {
            Ok(Some(seg)) => {
                if let Some(d) = seg.damage() {
                    let _ = writeln!(out, "{d}");
                }
            }
            Err(e) if e.is_damage() => {
                let _ = writeln!(out, "{e}");
            }
            _ => {}
        }
    }
    let _ = writeln!(
        out,
        "{:<12} {:<24} {:>9} {:>16} {:>10} {:>10} {:>10}",
        "group", "receiver", "partition", "position", "lag items", "lag s", "lost"
    );
    for spec in SenderSpec::all(cfg, state_dir).map_err(anyhow::Error::msg)? {
        let (pos, err) = spec.load_position();
        let l = lag(store, pos, spec.partition)?;
        let _ = writeln!(
            out,
            "{:<12} {:<24} {:>9} {:>16} {:>10} {:>10.1} {:>10}{}",
            spec.group,
            spec.address,
            format!("{}/{}", spec.partition.index, spec.partition.count),
            pos.to_string(),
            l.items,
            l.seconds(now),
            spec.load_lost(),
            err.map(|e| format!("  ({e})")).unwrap_or_default()
        );
    }
    Ok(out)
}

/// `reader resend --group G --address A`: asks the running sender to send that receiver the
/// store's live set again (docs/operations.md, "Rebuilding a receiver"). Returns the request
/// file written.
pub fn request_resend(
    cfg: &ReaderConfig,
    state_dir: &Path,
    group: &str,
    address: &str,
) -> anyhow::Result<std::path::PathBuf> {
    let specs = SenderSpec::all(cfg, state_dir).map_err(anyhow::Error::msg)?;
    let Some(spec) = specs
        .iter()
        .find(|s| s.group == group && s.address == address)
    else {
        let known: Vec<String> = specs
            .iter()
            .map(|s| format!("{} {}", s.group, s.address))
            .collect();
        anyhow::bail!(
            "no receiver {address} in group {group} in this config; its receivers: {}",
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        );
    };
    let path = request_path(spec);
    if std::fs::symlink_metadata(&path).is_ok() {
        anyhow::bail!(
            "{}: a resend to {group} {address} is already requested or running; it ends by \
             itself (remove the file to cancel it)",
            path.display()
        );
    }
    Request::new(spec, focuser_daemon::clock::unix_millis().max(1)).write(&path)?;
    Ok(path)
}
