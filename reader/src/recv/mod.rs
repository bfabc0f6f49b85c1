//! `reader --recv`: accepts senders that are in `allowdb` and prove the shared secret, stores
//! their items durably before acknowledging them, and takes whole files into its inbox.

pub mod admit;
pub mod files;
mod greet;
mod status;
pub mod store;
pub(crate) mod streams;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use focuser_daemon::access::AllowedPeers;
use focuser_daemon::config::RunningConfig;
use focuser_daemon::episode::Episodes;
use focuser_formats::segment::Position;

use crate::config::ReaderConfig;
use crate::wire::frame::{encode_frame, read_frame_unchecked};
use crate::wire::handshake::{self, Accepted};
use crate::wire::messages::{code, put_position};
use crate::wire::{BatchRef, FrameError, FrameType, Mode, Secret};
use admit::{frame_class, Problem, Refusal, Refused, RefusedError, Slots};
pub use store::{Applied, RecvStore, StoreError};

/// Addresses (and kinds of problem) whose episodes are tracked at once; more share one line.
const PROBLEM_KEYS: usize = 256;

/// What every connection of one receiver shares.
pub struct RecvShared {
    pub store: Mutex<RecvStore>,
    pub secret: Secret,
    /// `allowdb` and `MaxFrame` as the running config has them: a reload applies them to
    /// the next connection and the next frame.
    allow: AllowedPeers,
    config: RunningConfig<ReaderConfig>,
    pub inbox_dir: PathBuf,
    pub idle: Duration,
    pub max_connections: usize,
    /// `Recv.MaxPerAddress`: connections from one address at once.
    pub max_per_address: usize,
    /// `Recv.HandshakeTimeout`: the whole handshake, however slowly its bytes come.
    pub handshake_timeout: Duration,
    pub stop: Arc<AtomicBool>,
    pub counts: RecvCounts,
    conns: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
    slots: Mutex<Slots>,
    problems: Mutex<Episodes<Problem>>,
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
    pub refused: Refused,
}

fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl RecvShared {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: RecvStore,
        secret: Secret,
        allow: AllowedPeers,
        config: RunningConfig<ReaderConfig>,
        inbox_dir: PathBuf,
        idle: Duration,
        max_connections: usize,
        stop: Arc<AtomicBool>,
    ) -> RecvShared {
        RecvShared {
            store: Mutex::new(store),
            secret,
            allow,
            config,
            inbox_dir,
            idle,
            max_connections,
            max_per_address: max_connections,
            handshake_timeout: Duration::from_secs(10),
            stop,
            counts: RecvCounts::default(),
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(1),
            slots: Mutex::new(Slots::default()),
            problems: Mutex::new(Episodes::new("peer", PROBLEM_KEYS)),
        }
    }

    pub fn max_frame(&self) -> usize {
        self.config.get().daemon.max_frame
    }

    /// `MaxFrame` for the next frame of `r`, taken once that frame has begun to arrive: a
    /// reload while a connection waits applies to the frame it waits for.
    fn next_frame_max(&self, r: &mut BufReader<TcpStream>) -> Result<usize, FrameError> {
        r.fill_buf()?;
        Ok(self.max_frame())
    }

    /// With `Recv.MaxPerAddress` and `Recv.HandshakeTimeout` (by default: no cap of its own,
    /// 10 s).
    pub fn with_limits(mut self, max_per_address: usize, handshake_timeout: Duration) -> Self {
        self.max_per_address = max_per_address;
        self.handshake_timeout = handshake_timeout;
        self
    }

    /// Closes every open connection (at stop: their threads then end).
    pub fn close_all(&self) {
        if let Ok(conns) = self.conns.lock() {
            for s in conns.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }

    /// Counts a refusal and logs it, once per episode of its address and problem.
    fn refused(&self, ip: IpAddr, e: &RefusedError, detail: &dyn std::fmt::Display) {
        self.counts.refused.add(e.reason);
        if e.reason == Refusal::Store {
            // The store logs its failures as one episode of its own, whoever was refused.
            log::debug!("{}: {detail}", e.problem(ip));
            return;
        }
        self.problem(e.problem(ip), detail);
    }

    /// Logs a problem with a peer, once per episode of its address and kind.
    fn problem(&self, p: Problem, detail: &dyn std::fmt::Display) {
        if let Ok(mut e) = self.problems.lock() {
            e.occurred(p, p.level(), detail);
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

/// Refuses a peer at accept (answered with ERROR, then closed), or gives it a slot and a
/// thread.
fn start_connection(
    s: TcpStream,
    peer: SocketAddr,
    sh: &Arc<RecvShared>,
) -> Option<JoinHandle<()>> {
    let ip = peer.ip();
    let refusal = if !sh.allow.allows(ip) {
        Err((Refusal::NotAllowed, "this address is not allowed"))
    } else {
        let taken = match sh.slots.lock() {
            Ok(mut slots) => slots.take(ip, sh.max_connections, sh.max_per_address),
            Err(_) => Err(Refusal::Busy),
        };
        match taken {
            Ok(n) => {
                sh.counts.connections.store(n, Ordering::SeqCst);
                Ok(())
            }
            Err(r @ Refusal::AddressBusy) => Err((r, "too many connections from this address")),
            Err(r) => Err((r, "too many connections")),
        }
    };
    if let Err((r, message)) = refusal {
        let (code, why) = match r {
            Refusal::NotAllowed => (code::NOT_ALLOWED, "not in allowdb".to_string()),
            Refusal::AddressBusy => (
                code::BUSY,
                format!("Recv.MaxPerAddress ({}) reached", sh.max_per_address),
            ),
            _ => (
                code::BUSY,
                format!("Recv.MaxConnections ({}) reached", sh.max_connections),
            ),
        };
        sh.refused(
            ip,
            &RefusedError::new(r, message),
            &format_args!("refused {peer}: {why}"),
        );
        // Best effort and bounded: a peer that does not read must not hold the acceptor.
        let mut s = s;
        let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
        handshake::refuse(&mut s, code, message);
        return None;
    }
    let id = sh.next_conn.fetch_add(1, Ordering::Relaxed);
    if let (Ok(clone), Ok(mut conns)) = (s.try_clone(), sh.conns.lock()) {
        conns.insert(id, clone);
    }
    let shared = Arc::clone(sh);
    let spawned = std::thread::Builder::new()
        .name(format!("recv-{peer}"))
        .spawn(move || {
            connection(s, peer, &shared);
            if let Ok(mut conns) = shared.conns.lock() {
                conns.remove(&id);
            }
            give_back(&shared, ip);
        });
    match spawned {
        Ok(h) => Some(h),
        Err(e) => {
            log::error!("cannot start a thread for {peer}: {e}");
            give_back(sh, ip);
            None
        }
    }
}

fn give_back(sh: &RecvShared, ip: IpAddr) {
    if let Ok(mut slots) = sh.slots.lock() {
        let n = slots.give_back(ip);
        sh.counts.connections.store(n, Ordering::SeqCst);
    }
}

/// One connection: the handshake within its deadline, then items or files until the peer
/// closes; whatever ends it is counted and logged here.
fn connection(s: TcpStream, peer: SocketAddr, sh: &RecvShared) {
    let ip = peer.ip();
    let opened = (|| -> std::io::Result<(BufReader<TcpStream>, TcpStream)> {
        s.set_nonblocking(false)?;
        s.set_nodelay(true)?;
        let w = s.try_clone()?;
        Ok((BufReader::with_capacity(1 << 20, s), w))
    })();
    let (mut r, mut w) = match opened {
        Ok(rw) => rw,
        Err(e) => return sh.problem(Problem::connection(ip, "i/o error"), &e),
    };
    let accepted = match greet::greet(&mut r, &mut w, sh) {
        Ok(a) => a,
        Err(e) => return sh.refused(ip, &e, &format_args!("{peer}: {e}")),
    };
    let stream = accepted.hello.stream.clone();
    log::info!(
        "{peer}: stream {stream} ({:?}) connected",
        accepted.hello.mode
    );
    let result = match accepted.hello.mode {
        Mode::Items => items(&mut r, &mut w, &accepted, sh),
        Mode::Files => files::receive(&mut r, &mut w, &accepted, sh),
    };
    let e = match result {
        Ok(()) => return log::info!("{peer}: stream {stream} closed"),
        Err(e) => e,
    };
    let detail = format_args!("{peer}: stream {stream}: {e:#}");
    if let Some(r) = e.downcast_ref::<RefusedError>() {
        return sh.refused(ip, r, &detail);
    }
    let Some(fe) = e.downcast_ref::<FrameError>() else {
        return sh.problem(Problem::connection(ip, "i/o error"), &detail);
    };
    if matches!(fe, FrameError::Io(io) if greet::timed_out(io)) {
        // Recv.IdleTimeout: an idle sender is closed, as it should be; it comes back.
        return log::info!(
            "{peer}: stream {stream} silent for {} s (Recv.IdleTimeout): closed",
            sh.idle.as_secs()
        );
    }
    if matches!(fe, FrameError::Io(_) | FrameError::Closed) {
        return sh.problem(Problem::connection(ip, frame_class(fe)), &detail);
    }
    handshake::refuse(&mut w, code::PROTOCOL, &fe.to_string());
    let refused = RefusedError::new(Refusal::Protocol, "").class(frame_class(fe));
    sh.refused(ip, &refused, &detail);
}

/// The items loop: each ITEMS frame is stored and synced, then acknowledged.
fn items(
    r: &mut BufReader<TcpStream>,
    w: &mut TcpStream,
    a: &Accepted,
    sh: &RecvShared,
) -> anyhow::Result<()> {
    let stream = &a.hello.stream;
    let mut payload = Vec::new();
    let mut body_crcs = Vec::new();
    // Batches stored and not yet synced: one sync, then one ack each (group commit while the
    // sender's window keeps more batches coming).
    let mut unsynced: Vec<Position> = Vec::new();
    let mut acks = Vec::new();
    loop {
        let next = sh.next_frame_max(r);
        let head = match next.and_then(|max| read_frame_unchecked(r, max, &mut payload)) {
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
                Err(e) => return Err(store_failed(w, stream, e)),
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
            return Err(store_failed(w, stream, e));
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

/// Refuses the batch, unacknowledged: counted and logged (as an error episode) by the caller.
fn store_failed(w: &mut TcpStream, stream: &str, e: StoreError) -> anyhow::Error {
    handshake::refuse(w, code::STORE, "the receiver cannot store items now");
    RefusedError::new(Refusal::Store, format!("storing items of {stream}: {e}")).into()
}

fn lock<T>(m: &Mutex<T>) -> anyhow::Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| anyhow::anyhow!("a connection thread panicked holding the store"))
}
