//! A resend from the store's owner (`Store.SnapshotDir`, docs/formats.md "Resend snapshots"):
//! the store keeps no live set (its shipped segments are gone), so the resend asks the owner
//! for one (`<name>.ask`), waits for the folder `<name>/` the owner publishes, checks it
//! against its manifest, and sends from it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use focuser_daemon::episode::Episode;
use focuser_formats::fsutil;
use focuser_formats::segment::{Cursor, Position};
use focuser_formats::snapshot::{Ask, Manifest, ASK_SUFFIX, MANIFEST};

use super::super::{SendCtx, SenderSpec, SenderState};
use super::request::{request_path, Request};

/// How long the owner may take before the wait is logged as trouble.
const PATIENCE: Duration = Duration::from_secs(60);

/// The snapshot of the resend `id` to `spec`'s receiver: `<stream>.<k>.resend<id>`, in the
/// characters a snapshot name allows.
pub fn name(spec: &SenderSpec, id: u64) -> String {
    format!("{}{id}", prefix(spec))
}

/// What every snapshot name of `spec`'s receiver starts with.
fn prefix(spec: &SenderSpec) -> String {
    format!("{}.{}.resend", spec.stream, spec.partition.index)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// How waiting for a snapshot ended.
pub enum Ready {
    Snapshot(PathBuf),
    Stopped,
    Cancelled,
    /// The owner's snapshot cannot be used: why.
    Bad(String),
}

/// Asks the owner (once) and waits for the snapshot, until the daemon stops or the request
/// file is removed; a published snapshot is checked whole before anything is sent from it.
pub fn ready(dir: &Path, name: &str, st: &SenderState, ctx: &SendCtx, request: &Path) -> Ready {
    let folder = dir.join(name);
    let ask = dir.join(format!("{name}{ASK_SUFFIX}"));
    let since = Instant::now();
    let mut waiting = Episode::new(format!(
        "resend to {} {}: waiting for snapshot {}",
        st.spec.group,
        st.spec.address,
        folder.display()
    ));
    let mut asked = false;
    loop {
        if ctx.stop.is_set() {
            return Ready::Stopped;
        }
        if !request.exists() {
            return Ready::Cancelled;
        }
        if folder.is_dir() {
            waiting.resolved(&"it is there");
            return match check(&folder) {
                Ok(m) => {
                    log::info!(
                        "resend to {} {}: snapshot {} of {} items, the store at {}",
                        st.spec.group,
                        st.spec.address,
                        folder.display(),
                        m.items,
                        m.position
                    );
                    Ready::Snapshot(folder)
                }
                Err(why) => Ready::Bad(why),
            };
        }
        if !asked && !ask.exists() {
            let who = Ask {
                stream: st.spec.stream.clone(),
                receiver: format!("{} {}", st.spec.group, st.spec.address),
            };
            let wrote = std::fs::create_dir_all(dir).and_then(|()| {
                fsutil::write_atomically(&ask, |w| {
                    std::io::Write::write_all(w, who.encode().as_bytes())
                })
            });
            match wrote {
                Ok(()) => log::info!(
                    "resend to {} {}: asked the store's owner for the live set ({})",
                    st.spec.group,
                    st.spec.address,
                    ask.display()
                ),
                Err(e) => {
                    waiting.occurred(log::Level::Error, &format!("{}: {e}", ask.display()));
                }
            }
        }
        asked = ask.exists();
        if since.elapsed() > PATIENCE {
            let _ = waiting.occurred(
                log::Level::Warn,
                &format!(
                    "not there after {} s (is the owner running? yacobot's resources worker writes it)",
                    since.elapsed().as_secs()
                ),
            );
        }
        ctx.stop.sleep(Duration::from_secs(1));
    }
}

/// A snapshot is whole: its manifest reads, and its segments hold exactly the items it says,
/// none damaged.
fn check(folder: &Path) -> Result<Manifest, String> {
    let m = Manifest::read(&folder.join(MANIFEST)).map_err(|e| e.to_string())?;
    let mut cursor = Cursor::new(folder, Position::START, None);
    let mut n = 0u64;
    loop {
        match cursor.next() {
            Ok(Some(_)) => n += 1,
            Ok(None) => break,
            Err(e) => return Err(format!("{}: {e}", folder.display())),
        }
    }
    if n != m.items {
        return Err(format!(
            "{}: {n} items, its manifest says {}",
            folder.display(),
            m.items
        ));
    }
    Ok(m)
}

/// The ask, then the snapshot: gone (the ask first, so that the owner does not write it
/// again).
pub fn remove(dir: &Path, name: &str) -> std::io::Result<()> {
    fsutil::remove_if_exists(&dir.join(format!("{name}{ASK_SUFFIX}")))?;
    match std::fs::remove_dir_all(dir.join(name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// A snapshot refused: its ask removed, the folder kept for the operator as `<name>.bad`
/// (replacing an older one); returns where.
pub fn set_aside(dir: &Path, name: &str) -> std::io::Result<PathBuf> {
    fsutil::remove_if_exists(&dir.join(format!("{name}{ASK_SUFFIX}")))?;
    let aside = dir.join(format!("{name}.bad"));
    if aside.exists() {
        std::fs::remove_dir_all(&aside)?;
    }
    std::fs::rename(dir.join(name), &aside)?;
    Ok(aside)
}

/// At start: the asks and snapshots of this reader's receivers that no request names any
/// more (a crash between a resend's end and their removal) are removed.
pub fn remove_orphans(dir: &Path, specs: &[SenderSpec]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut wanted = HashSet::new();
    for spec in specs {
        if let Ok(r) = Request::read(&request_path(spec), spec) {
            wanted.insert(name(spec, r.id));
        }
    }
    let prefixes: Vec<String> = specs.iter().map(prefix).collect();
    for e in entries.filter_map(|e| e.ok()) {
        let file = e.file_name().to_string_lossy().into_owned();
        let base = file.strip_suffix(ASK_SUFFIX).unwrap_or(&file);
        let ours = prefixes.iter().any(|p| {
            base.strip_prefix(p.as_str())
                .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        });
        if ours && !wanted.contains(base) {
            match remove(dir, base) {
                Ok(()) => log::info!(
                    "{}: removed snapshot {base}, which no resend request names",
                    dir.display()
                ),
                Err(e) => log::error!("{}: removing snapshot {base}: {e}", dir.display()),
            }
        }
    }
}
