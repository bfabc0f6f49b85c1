//! `reader --recv`: accepts senders that are in `allowdb` and prove the shared secret, stores
//! their items durably before acknowledging them, and takes whole files into its inbox.

mod files;
mod status;
pub mod store;
mod streams;

use std::collections::HashMap;
use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use focuser_daemon::access::AllowList;
use focuser_schema::segment::Position;

use crate::wire::frame::{encode_frame, read_frame_unchecked};
use crate::wire::handshake::{self, Accepted, ProtoError};
use crate::wire::messages::{code, put_position};
use crate::wire::{BatchRef, FrameError, FrameType, Mode, Secret};
pub use store::{Applied, RecvStore, StoreError};

/// How long a peer has to finish the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What every connection of one receiver shares.
pub struct RecvShared {
    pub store: Mutex<RecvStore>,
    pub secret: Secret,
    pub allow: AllowList,
    pub max_frame: usize,
    pub inbox_dir: PathBuf,
    pub idle: Duration,
    pub max_connections: usize,
    pub stop: Arc<AtomicBool>,
    pub counts: RecvCounts,
    conns: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
}

/// Running totals for the status page.
#[derive(Default)]
pub struct RecvCounts {
    pub connections: AtomicUsize,
    pub batches: AtomicU64,
    pub stored: AtomicU64,
    pub duplicates: AtomicU64,
    pub bytes: AtomicU64,
    pub files: AtomicU64,
    pub file_bytes: AtomicU64,
    pub refused_peers: AtomicU64,
    pub auth_failures: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub bad_names: AtomicU64,
    pub store_errors: AtomicU64,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl RecvShared {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: RecvStore,
        secret: Secret,
        allow: AllowList,
        max_frame: usize,
        inbox_dir: PathBuf,
        idle: Duration,
        max_connections: usize,
        stop: Arc<AtomicBool>,
    ) -> RecvShared {
        RecvShared {
            store: Mutex::new(store),
            secret,
            allow,
            max_frame,
            inbox_dir,
            idle,
            max_connections,
            stop,
            counts: RecvCounts::default(),
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(1),
        }
    }

    /// Closes every open connection (at stop: their threads then end).
    pub fn close_all(&self) {
        if let Ok(conns) = self.conns.lock() {
            for s in conns.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Accepts connections until the stop flag is set; one thread per connection.
pub fn serve(listener: TcpListener, shared: Arc<RecvShared>) -> std::io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("recv-accept".into())
        .spawn(move || {
            let mut workers: Vec<JoinHandle<()>> = Vec::new();
            while !shared.stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, peer)) => {
                        workers.retain(|h| !h.is_finished());
                        if let Some(h) = start_connection(s, peer, &shared) {
                            workers.push(h);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(e) => {
                        log::warn!("accept: {e}");
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
            }
            shared.close_all();
            for h in workers {
                let _ = h.join();
            }
        })
}

fn start_connection(
    s: TcpStream,
    peer: SocketAddr,
    sh: &Arc<RecvShared>,
) -> Option<JoinHandle<()>> {
    let c = &sh.counts;
    if !sh.allow.allows(peer.ip()) {
        log::warn!("refused {peer}: not in allowdb");
        add(&c.refused_peers, 1);
        let mut s = s;
        handshake::refuse(&mut s, code::NOT_ALLOWED, "this address is not allowed");
        return None;
    }
    if c.connections.load(Ordering::SeqCst) >= sh.max_connections {
        log::warn!("refused {peer}: Recv.MaxConnections reached");
        let mut s = s;
        handshake::refuse(&mut s, code::BUSY, "too many connections");
        return None;
    }
    let id = sh.next_conn.fetch_add(1, Ordering::Relaxed);
    if let (Ok(clone), Ok(mut conns)) = (s.try_clone(), sh.conns.lock()) {
        conns.insert(id, clone);
    }
    c.connections.fetch_add(1, Ordering::SeqCst);
    let shared = Arc::clone(sh);
    let spawned = std::thread::Builder::new()
        .name(format!("recv-{peer}"))
        .spawn(move || {
            if let Err(e) = connection(s, peer, &shared) {
                log::warn!("{peer}: {e:#}");
            }
            if let Ok(mut conns) = shared.conns.lock() {
                conns.remove(&id);
            }
            shared.counts.connections.fetch_sub(1, Ordering::SeqCst);
        });
    match spawned {
        Ok(h) => Some(h),
        Err(e) => {
            log::error!("cannot start a thread for {peer}: {e}");
            sh.counts.connections.fetch_sub(1, Ordering::SeqCst);
            None
        }
    }
}

fn connection(s: TcpStream, peer: SocketAddr, sh: &RecvShared) -> anyhow::Result<()> {
    s.set_nonblocking(false)?;
    // A peer gets a few seconds to prove itself, however long the idle timeout is.
    s.set_read_timeout(Some(sh.idle.min(HANDSHAKE_TIMEOUT)))?;
    s.set_nodelay(true)?;
    let mut w = s.try_clone()?;
    let mut r = BufReader::with_capacity(1 << 20, s);
    let accepted = {
        let mut both = ReadWrite {
            r: &mut r,
            w: &mut w,
        };
        match handshake::server(&mut both, &sh.secret) {
            Ok(a) => a,
            Err(e) => {
                if let ProtoError::Frame(fe) = &e {
                    if !matches!(fe, FrameError::Io(_) | FrameError::Closed) {
                        handshake::refuse(both.w, code::PROTOCOL, &fe.to_string());
                    }
                }
                match e {
                    ProtoError::Auth(_) => add(&sh.counts.auth_failures, 1),
                    ProtoError::BadStream { .. } => add(&sh.counts.bad_names, 1),
                    _ => add(&sh.counts.protocol_errors, 1),
                }
                anyhow::bail!("handshake refused: {e}");
            }
        }
    };
    r.get_ref().set_read_timeout(Some(sh.idle))?;
    let stream = accepted.hello.stream.clone();
    log::info!(
        "{peer}: stream {stream} ({:?}) connected",
        accepted.hello.mode
    );
    let result = match accepted.hello.mode {
        Mode::Items => items(&mut r, &mut w, &accepted, sh),
        Mode::Files => files::receive(&mut r, &mut w, &accepted, sh),
    };
    match &result {
        Ok(()) => log::info!("{peer}: stream {stream} closed"),
        Err(e) => {
            if let Some(fe) = e.downcast_ref::<FrameError>() {
                if !matches!(fe, FrameError::Io(_) | FrameError::Closed) {
                    add(&sh.counts.protocol_errors, 1);
                    handshake::refuse(&mut w, code::PROTOCOL, &fe.to_string());
                }
            }
        }
    }
    result.map_err(|e| e.context(format!("stream {stream}")))
}

/// The items loop: each ITEMS frame is stored and synced, then acknowledged.
fn items(
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
    a: &Accepted,
    sh: &RecvShared,
) -> anyhow::Result<()> {
    let stream = &a.hello.stream;
    let last = lock(&sh.store)?.resume(stream);
    handshake::welcome(w, a, last)?;
    let mut payload = Vec::new();
    let mut body_crcs = Vec::new();
    // Batches stored and not yet synced: one sync, then one ack each (group commit while the
    // sender's window keeps more batches coming).
    let mut unsynced: Vec<Position> = Vec::new();
    let mut acks = Vec::new();
    loop {
        let head = match read_frame_unchecked(r, sh.max_frame, &mut payload) {
            Ok(h) => h,
            Err(FrameError::Closed) => {
                // Whatever it sent is kept (and will not be stored twice when resent).
                if !unsynced.is_empty() {
                    lock(&sh.store)?.sync(stream)?;
                }
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        // One pass over the bytes checks the frame and gives each record its body's CRC.
        let batch = BatchRef::decode_checked(&payload, head, &mut body_crcs)?;
        let applied = {
            let mut store = lock(&sh.store)?;
            match store.append_with_crcs(stream, &batch, &body_crcs) {
                Ok(a) => a,
                Err(e) => return Err(store_failed(w, sh, stream, e)),
            }
        };
        let c = &sh.counts;
        add(&c.batches, 1);
        add(&c.stored, applied.stored);
        add(&c.duplicates, applied.duplicates);
        add(&c.bytes, applied.bytes);
        unsynced.push(batch.upto);
        if unsynced.len() < MAX_GROUP && more_waiting(r)? {
            continue;
        }
        if let Err(e) = lock(&sh.store)?.sync(stream) {
            return Err(store_failed(w, sh, stream, e));
        }
        acks.clear();
        for upto in unsynced.drain(..) {
            let mut ack = Vec::with_capacity(12);
            put_position(&mut ack, upto);
            encode_frame(FrameType::Ack, &ack, &mut acks);
        }
        std::io::Write::write_all(w, &acks)?;
    }
}

/// Batches synced together at most.
const MAX_GROUP: usize = 16;

/// Whether the next frame has (begun to) arrive already.
fn more_waiting(r: &mut BufReader<TcpStream>) -> std::io::Result<bool> {
    if !r.buffer().is_empty() {
        return Ok(true);
    }
    let s = r.get_ref();
    s.set_nonblocking(true)?;
    let got = s.peek(&mut [0u8; 1]);
    s.set_nonblocking(false)?;
    match got {
        Ok(n) => Ok(n > 0),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
}

fn store_failed(w: &mut TcpStream, sh: &RecvShared, stream: &str, e: StoreError) -> anyhow::Error {
    add(&sh.counts.store_errors, 1);
    // The store logs its failures as an episode, not once per sender that retries.
    log::debug!("storing items of {stream}: {e}");
    handshake::refuse(w, code::STORE, "the receiver cannot store items now");
    anyhow::anyhow!("items refused (ERROR {}): the store failed", code::STORE)
}

fn lock<T>(m: &Mutex<T>) -> anyhow::Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| anyhow::anyhow!("a connection thread panicked holding the store"))
}

/// Reads from the buffered half, writes to the other: one socket for the handshake.
struct ReadWrite<'a> {
    r: &'a mut BufReader<TcpStream>,
    w: &'a mut TcpStream,
}

impl std::io::Read for ReadWrite<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.r.read(buf)
    }
}

impl std::io::Write for ReadWrite<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}
