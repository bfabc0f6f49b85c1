//! sendfile: whole files from a spool directory (or sealed segment pairs) to a receiver's
//! inbox, in order, each confirmed before the next; the last one shipped is recorded.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;

use focuser_formats::fsutil;
use focuser_formats::segment::crc;
use focuser_formats::segment::{index_path, item_path, list_segments};

use focuser_daemon::backoff::Backoff;

use crate::config::SendFileConfig;
use crate::sender::trouble::Trouble;
use crate::sender::SendCtx;
use crate::wire::frame::{encode_frame, Fields};
use crate::wire::handshake;
use crate::wire::{FileBegin, FrameType, Mode};

const CHUNK: usize = 1 << 20;
/// Names that are not UTF-8 warned about (once each); beyond this many, no more are.
const ODD_NAMES_KEPT: usize = 1000;

pub struct FileShipper {
    pub n: u32,
    pub cfg: SendFileConfig,
    pub dir: PathBuf,
    /// `state_dir/sendfile_<n>_<inbox>.last`: the order key of the last file shipped.
    pub state_file: PathBuf,
    pub shipped: AtomicU64,
    pub bytes: AtomicU64,
    pub failures: AtomicU64,
    pub connected: AtomicBool,
    pub last: Mutex<Option<String>>,
    trouble: Mutex<Trouble>,
    /// Spool files whose names are not UTF-8: left alone, and said so once.
    odd_names: Mutex<HashSet<OsString>>,
}

/// A file to ship, with the key that orders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    pub key: String,
    pub path: PathBuf,
    pub name: String,
}

impl FileShipper {
    pub fn new(n: u32, cfg: SendFileConfig, dir: PathBuf, state_dir: &Path) -> FileShipper {
        let state_file = state_dir.join(format!("sendfile_{n}_{}.last", cfg.inbox));
        let last = std::fs::read_to_string(&state_file)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        FileShipper {
            n,
            dir,
            state_file,
            shipped: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            connected: AtomicBool::new(false),
            last: Mutex::new(last),
            trouble: Mutex::new(Trouble::new(format!("sendfile {n} to {}", cfg.address))),
            odd_names: Mutex::new(HashSet::new()),
            cfg,
        }
    }

    /// A spool file whose name is not UTF-8 cannot be named to the receiver: it is left
    /// alone, warned about once (not at every look at the spool).
    fn odd_name(&self, name: OsString) {
        let Ok(mut seen) = self.odd_names.lock() else {
            return;
        };
        if seen.len() < ODD_NAMES_KEPT && !seen.contains(&name) {
            log::warn!(
                "sendfile {}: {}: {name:?}: not a UTF-8 file name; left alone",
                self.n,
                self.dir.display()
            );
            seen.insert(name);
        }
    }

    fn last(&self) -> Option<String> {
        self.last.lock().ok().and_then(|l| l.clone())
    }

    /// Files after the last one shipped, in order.
    pub fn ready(&self) -> std::io::Result<Vec<Ready>> {
        let mut out = Vec::new();
        if self.cfg.kind == "segments" {
            let ids = list_segments(&self.dir).map_err(std::io::Error::other)?;
            // Only sealed segments: all but the last.
            for &id in ids.iter().take(ids.len().saturating_sub(1)) {
                for (k, p) in [
                    (0, index_path(&self.dir, id)),
                    (1, item_path(&self.dir, id)),
                ] {
                    let name = p
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    out.push(Ready {
                        key: format!("{id:020}.{k}"),
                        path: p,
                        name,
                    });
                }
            }
        } else {
            let pattern = glob::Pattern::new(&self.cfg.pattern).map_err(std::io::Error::other)?;
            for entry in std::fs::read_dir(&self.dir)? {
                let entry = entry?;
                let name = match entry.file_name().into_string() {
                    Ok(name) => name,
                    Err(odd) => {
                        self.odd_name(odd);
                        continue;
                    }
                };
                if name.starts_with('.') || !pattern.matches(&name) || !entry.file_type()?.is_file()
                {
                    continue;
                }
                out.push(Ready {
                    key: name.clone(),
                    path: entry.path(),
                    name,
                });
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        if let Some(last) = self.last() {
            out.retain(|r| r.key > last);
        }
        Ok(out)
    }

    /// For retention: the first segment this shipper has not shipped whole, when it ships
    /// the sealed segments of `store` (`None`: it ships something else).
    pub fn needs_from(&self, store: &Path) -> Option<u64> {
        if self.cfg.kind != "segments" || !same_dir(&self.dir, store) {
            return None;
        }
        // Keys are `<id:020>.0` (the index file) and `<id:020>.1` (the item file, sent last).
        Some(match self.last() {
            None => 0,
            Some(key) => match key.split_once('.') {
                Some((id, "1")) => id.parse::<u64>().map_or(0, |id| id.saturating_add(1)),
                Some((id, _)) => id.parse::<u64>().unwrap_or(0),
                // Not a key this shipper writes: keep everything.
                None => 0,
            },
        })
    }

    fn record(&self, key: &str) -> std::io::Result<()> {
        fsutil::write_atomically(&self.state_file, |w| writeln!(w, "{key}"))?;
        if let Ok(mut l) = self.last.lock() {
            *l = Some(key.to_string());
        }
        Ok(())
    }
}

/// Ships until the stop flag is set. `MaxFrame` and `Send.RetryMin`/`Send.RetryMax` are
/// taken from the running config (see [`SendCtx::settings`]).
pub fn run(sh: Arc<FileShipper>, ctx: Arc<SendCtx>) {
    let mut limits = (f64::NAN, f64::NAN);
    let mut backoff = Backoff::new(Duration::ZERO, Duration::ZERO);
    while !ctx.stop.is_set() {
        ctx.backoff(&mut backoff, &mut limits);
        match ship_ready(&sh, &ctx) {
            Ok(0) => {
                ctx.stop.sleep(Duration::from_millis(500));
            }
            Ok(_) => {
                backoff.succeeded();
                if let Ok(mut t) = sh.trouble.lock() {
                    t.recovered();
                }
            }
            Err(e) => {
                sh.failures.fetch_add(1, Ordering::Relaxed);
                let wait = backoff.failed();
                if let Ok(mut t) = sh.trouble.lock() {
                    t.failed(&format_args!("{e:#}"), wait);
                }
                ctx.stop.sleep(wait);
            }
        }
        sh.connected.store(false, Ordering::SeqCst);
    }
}

/// Ships every ready file over one connection; returns how many.
pub fn ship_ready(sh: &FileShipper, ctx: &SendCtx) -> anyhow::Result<usize> {
    let ready = sh.ready()?;
    if ready.is_empty() {
        return Ok(0);
    }
    let addr = sh
        .cfg
        .address
        .to_socket_addrs()
        .context("resolving")?
        .next()
        .ok_or_else(|| anyhow::anyhow!("resolving: {} resolves to no address", sh.cfg.address))?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).context("connect")?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.set_write_timeout(Some(Duration::from_secs(60)))?;
    handshake::client(&mut s, &ctx.secret, Mode::Files, &sh.cfg.inbox).context("handshake")?;
    sh.connected.store(true, Ordering::SeqCst);
    let mut r = BufReader::new(s.try_clone()?);
    let mut done = 0;
    for f in ready {
        if ctx.stop.is_set() {
            break;
        }
        let max_frame = ctx.settings().max_frame;
        let size = send_file(&mut s, &f, max_frame)?;
        let ack = handshake::expect(&mut r, FrameType::FileAck, max_frame)?;
        let mut fl = Fields::new(&ack, "FILE_ACK");
        let name = fl.string()?;
        if name != f.name {
            anyhow::bail!("acknowledged {name:?}, sent {:?}", f.name);
        }
        sh.record(&f.key)?;
        if sh.cfg.remove && sh.cfg.kind == "spool" {
            std::fs::remove_file(&f.path)?;
        }
        sh.shipped.fetch_add(1, Ordering::Relaxed);
        sh.bytes.fetch_add(size, Ordering::Relaxed);
        log::info!(
            "sendfile {}: shipped {} ({size} bytes) to {}",
            sh.n,
            f.name,
            sh.cfg.address
        );
        done += 1;
    }
    Ok(done)
}

/// Whether two paths name one directory (the config may spell a store two ways).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn send_file(s: &mut TcpStream, f: &Ready, max_frame: usize) -> anyhow::Result<u64> {
    let mut file = File::open(&f.path)?;
    let size = file.metadata()?.len();
    let begin = FileBegin {
        name: f.name.clone(),
        size,
    };
    let mut out = Vec::with_capacity(CHUNK + 64);
    encode_frame(FrameType::FileBegin, &begin.encode(), &mut out);
    s.write_all(&out)?;
    let mut buf = vec![0u8; CHUNK.min(max_frame - 16)];
    let mut crc = 0u32;
    let mut sent = 0u64;
    while sent < size {
        let n = file.read(&mut buf)?;
        if n == 0 {
            anyhow::bail!("{} shrank while being sent", f.path.display());
        }
        let n = n.min((size - sent) as usize);
        crc = crc::append(crc, &buf[..n]);
        out.clear();
        encode_frame(FrameType::FileData, &buf[..n], &mut out);
        s.write_all(&out)?;
        sent += n as u64;
    }
    out.clear();
    encode_frame(FrameType::FileEnd, &crc.to_le_bytes(), &mut out);
    s.write_all(&out)?;
    Ok(size)
}
