//! The HTTP side of the status endpoint: an accepting thread, a thread per connection (at
//! most [`MAX_CONNECTIONS`]), every peer checked against `allowdb`, every POST against
//! `pwfile` (rationed per address, one argon2 check at a time, never on a thread a GET
//! waits for); and a thread that samples the charted figures every `status_sample` seconds.
//! Refusals are logged as episodes per peer, not a line each.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine;
use log::Level;

use super::guard::Ration;
use super::history::{History, HISTORY_SECONDS};
use super::http::{self, Request, Response};
use super::page::{Card, Chart, Table};
use super::render::{self, Snapshot};
use super::{html, Figure, StatusSource};
use crate::access::{AllowList, PasswordFile};
use crate::config::Key;
use crate::episode::{Episode, Episodes};
use crate::logging::RecentErrors;
use crate::signals::Signal;

/// Connections served at once; more are answered 503 at once.
pub const MAX_CONNECTIONS: usize = 64;

/// Who may connect and who may POST; replaced when the config is reloaded.
#[derive(Debug, Clone)]
pub struct Access {
    pub allow: AllowList,
    pub passwords: Option<PasswordFile>,
}

/// What the endpoint shows and where its POSTs go, shared with the runtime.
pub struct StatusShared {
    pub daemon: String,
    pub version: String,
    pub config_file: Mutex<String>,
    /// The running config's keys (see [`crate::Config::keys`]); replaced by a reload.
    pub config: Mutex<Vec<Key>>,
    pub started: Instant,
    pub started_at: String,
    /// The daemon's sources, in the order added.
    pub sources: Mutex<Vec<Arc<dyn StatusSource>>>,
    /// The runtime's own sources (log, database), shown after the daemon's.
    pub builtin: Vec<Arc<dyn StatusSource>>,
    /// The charted figures' last hour.
    pub history: Mutex<History>,
    pub recent: Arc<RecentErrors>,
    pub access: Mutex<Access>,
    pub signals: Mutex<Sender<Signal>>,
}

/// What the serving threads share besides [`StatusShared`].
struct Serving {
    shared: Arc<StatusShared>,
    ration: Mutex<Ration>,
    /// Held during a password check: one argon2 at a time (each takes 19 MiB).
    hashing: Mutex<()>,
    refused: Mutex<Episodes<IpAddr>>,
    busy: Mutex<Episode>,
    active: AtomicUsize,
}

/// What every source says at one moment.
#[derive(Default)]
struct Collected {
    figures: Vec<Figure>,
    cards: Vec<Card>,
    tables: Vec<Table>,
    charts: Vec<Chart>,
}

impl StatusShared {
    fn collect(&self, page: bool) -> Collected {
        let mut c = Collected::default();
        let daemon = self.sources.lock().map(|s| s.clone()).unwrap_or_default();
        for source in daemon.iter().chain(&self.builtin) {
            c.figures.extend(source.figures());
            c.charts.extend(source.charts());
            if page {
                c.cards.extend(source.cards());
                c.tables
                    .extend(source.tables().into_iter().map(Table::bounded));
            }
        }
        c
    }

    /// Records the charted figures as they are now.
    pub fn sample(&self) {
        let c = self.collect(false);
        let now_ms = chrono::Utc::now().timestamp_millis();
        if let Ok(mut h) = self.history.lock() {
            h.record(now_ms, &c.charts, &c.figures);
        }
    }

    /// Records the charted figures that have no sample yet (see [`History::record_new`]).
    pub fn sample_new(&self) {
        let c = self.collect(false);
        let now_ms = chrono::Utc::now().timestamp_millis();
        if let Ok(mut h) = self.history.lock() {
            h.record_new(now_ms, &c.charts, &c.figures);
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let Collected {
            figures,
            cards,
            tables,
            charts,
        } = self.collect(true);
        let (charts, sample_seconds) = self
            .history
            .lock()
            .map(|h| (h.charts(&charts), h.sample_seconds()))
            .unwrap_or_default();
        Snapshot {
            daemon: self.daemon.clone(),
            version: self.version.clone(),
            pid: std::process::id(),
            started_at: self.started_at.clone(),
            uptime_seconds: self.started.elapsed().as_secs(),
            config_file: self
                .config_file
                .lock()
                .map(|f| f.clone())
                .unwrap_or_default(),
            config: self.config.lock().map(|c| c.clone()).unwrap_or_default(),
            figures,
            cards,
            tables,
            charts,
            sample_seconds,
            history_seconds: HISTORY_SECONDS,
            recent_errors: self.recent.snapshot(),
        }
    }
}

/// The running endpoint.
pub struct StatusServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    sampler: Option<(Sender<()>, JoinHandle<()>)>,
    addr: SocketAddr,
}

/// Samples every `every`, on a fixed beat, until `stop` is dropped.
fn sample_loop(shared: &StatusShared, every: Duration, stop: std::sync::mpsc::Receiver<()>) {
    let mut next = Instant::now();
    loop {
        shared.sample();
        next += every;
        let now = Instant::now();
        if next < now {
            // Fell behind (a suspended process): skip the missed beats.
            next = now + every;
        }
        match stop.recv_timeout(next - now) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

impl StatusServer {
    /// Binds the listening socket (done before privileges are dropped).
    pub fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
        TcpListener::bind(addr).map_err(|e| format!("status_listen {addr}: {e}"))
    }

    pub fn start(
        listener: TcpListener,
        shared: Arc<StatusShared>,
    ) -> std::io::Result<StatusServer> {
        let addr = listener.local_addr()?;
        let every = Duration::from_secs(
            shared
                .history
                .lock()
                .map(|h| h.sample_seconds())
                .unwrap_or(10),
        );
        let (stop_tx, stop_rx) = channel();
        let sampling = Arc::clone(&shared);
        let sampler = std::thread::Builder::new()
            .name("status-sample".into())
            .spawn(move || sample_loop(&sampling, every, stop_rx))?;
        let serving = Arc::new(Serving {
            shared,
            ration: Mutex::new(Ration::default()),
            hashing: Mutex::new(()),
            refused: Mutex::new(Episodes::new("status: refused", 64)),
            busy: Mutex::new(Episode::new("status: too many connections")),
            active: AtomicUsize::new(0),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("status".into())
            .spawn(move || accept_loop(&listener, &serving, &stopping))?;
        Ok(StatusServer {
            stop,
            thread: Some(thread),
            sampler: Some((stop_tx, sampler)),
            addr,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some((stop, t)) = self.sampler.take() {
            drop(stop);
            let _ = t.join();
        }
    }
}

/// Counts a connection while it is served.
struct Slot(Arc<Serving>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

fn accept_loop(listener: &TcpListener, serving: &Arc<Serving>, stop: &AtomicBool) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let mut stream = match stream {
            Ok(s) => s,
            Err(e) => {
                // Out of file descriptors, say: do not spin.
                log::debug!("status: accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if serving.active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            serving.active.fetch_sub(1, Ordering::SeqCst);
            if let Ok(mut busy) = serving.busy.lock() {
                busy.occurred(
                    Level::Warn,
                    &format_args!("{MAX_CONNECTIONS} served at once"),
                );
            }
            // Not blocking the accepting thread: the short answer fits in the socket's
            // buffer, and the drain after it ends at once.
            let _ = stream.set_nonblocking(true);
            http::respond(&mut stream, &Response::text(503, "busy, try again"), false);
            continue;
        }
        if let Ok(mut busy) = serving.busy.lock() {
            busy.resolved(&"connections taken again");
        }
        let slot = Slot(Arc::clone(serving));
        let spawned = std::thread::Builder::new()
            .name("status-conn".into())
            .spawn(move || serve(&slot.0, stream));
        if let Err(e) = spawned {
            log::debug!("status: cannot start a connection thread: {e}");
        }
    }
}

fn serve(serving: &Serving, mut stream: TcpStream) {
    let Ok(peer) = stream.peer_addr().map(|a| a.ip()) else {
        return;
    };
    let request = match http::read_request(&mut stream, peer) {
        Ok(r) => r,
        Err(refusal) => {
            if let Some(response) = refusal.response() {
                serving.refuse(peer, &refusal.describe());
                http::respond(&mut stream, &response, false);
            }
            return;
        }
    };
    let response = handle(serving, &request);
    http::respond(&mut stream, &response, request.method == "HEAD");
}

impl Serving {
    fn refuse(&self, peer: IpAddr, why: &dyn std::fmt::Display) {
        if let Ok(mut refused) = self.refused.lock() {
            refused.occurred(peer, Level::Warn, why);
        }
    }
}

fn handle(serving: &Serving, request: &Request) -> Response {
    let shared = &serving.shared;
    let peer = request.peer;
    let access = match shared.access.lock() {
        Ok(a) => a.clone(),
        Err(_) => return Response::text(500, "internal error"),
    };
    if !access.allow.allows(peer) {
        serving.refuse(peer, &"not allowed by allowdb");
        return Response::text(403, &format!("forbidden: {peer} is not allowed"));
    }
    let path = request.path();
    let get = matches!(request.method.as_str(), "GET" | "HEAD");
    match (get, request.method.as_str(), path) {
        (true, _, "/") => Response::new(
            200,
            "text/html; charset=utf-8",
            html::html(&shared.snapshot()),
        ),
        (true, _, "/status.json") => {
            Response::new(200, "application/json", render::json(&shared.snapshot()))
        }
        (true, _, "/metrics") => Response::new(
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            render::prometheus(&shared.snapshot()),
        ),
        (_, "POST", "/reload") => post(serving, &access, request, Signal::Reload),
        (_, "POST", "/rotate") => post(serving, &access, request, Signal::Rotate),
        (_, _, "/reload" | "/rotate") => {
            Response::text(405, "use POST").with("Allow", "POST".into())
        }
        (_, _, "/" | "/status.json" | "/metrics") => {
            Response::text(405, "use GET").with("Allow", "GET, HEAD".into())
        }
        _ => Response::text(404, "not found"),
    }
}

/// Whether the request's credentials are a user's of `passwords`, rationed per address.
fn authenticate(
    serving: &Serving,
    passwords: &PasswordFile,
    request: &Request,
) -> Result<String, Response> {
    let peer = request.peer;
    let unauthorized = || {
        Response::text(401, "authentication required")
            .with("WWW-Authenticate", "Basic realm=\"focuser\"".into())
    };
    let Some((user, password)) = basic_auth(request) else {
        return Err(unauthorized());
    };
    let began = serving
        .ration
        .lock()
        .map_err(|_| Response::text(500, "internal error"))?
        .begin(peer, Instant::now());
    if let Err(wait) = began {
        serving.refuse(peer, &"password checks paused after repeated failures");
        return Err(
            Response::text(429, "too many failed attempts; try again later")
                .with("Retry-After", wait.as_secs().max(1).to_string()),
        );
    }
    let right = {
        let _one_at_a_time = serving.hashing.lock();
        passwords.verify(&user, &password)
    };
    let paused = serving
        .ration
        .lock()
        .map(|mut r| r.end(peer, Instant::now(), right))
        .unwrap_or(false);
    if right {
        return Ok(user);
    }
    serving.refuse(
        peer,
        &format_args!(
            "wrong user or password for POST {}{}",
            request.path(),
            if paused {
                "; its password checks pause for 60 s"
            } else {
                ""
            }
        ),
    );
    Err(unauthorized())
}

fn post(serving: &Serving, access: &Access, request: &Request, signal: Signal) -> Response {
    let Some(passwords) = &access.passwords else {
        return Response::text(403, "POST needs a pwfile in the daemon's config");
    };
    let user = match authenticate(serving, passwords, request) {
        Ok(user) => user,
        Err(response) => return response,
    };
    let sent = serving
        .shared
        .signals
        .lock()
        .map(|tx| tx.send(signal).is_ok())
        .unwrap_or(false);
    if !sent {
        return Response::text(503, "the daemon is stopping");
    }
    log::info!("status: {user}@{} asked for {signal:?}", request.peer);
    Response::text(
        200,
        &format!(
            "{} requested",
            if signal == Signal::Reload {
                "reload"
            } else {
                "rotate"
            }
        ),
    )
}

/// `(user, password)` from an `Authorization: Basic …` header.
fn basic_auth(request: &Request) -> Option<(String, String)> {
    let encoded = request
        .header("Authorization")?
        .strip_prefix("Basic ")?
        .trim();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}
