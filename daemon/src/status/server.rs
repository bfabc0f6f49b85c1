//! The HTTP side of the status endpoint: one thread, tiny_http, every peer checked against
//! `allowdb`, every POST against `pwfile`; and a second thread that samples the charted
//! figures every `status_sample` seconds.

use std::net::SocketAddr;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine;
use tiny_http::{Header, Method, Request, Response, Server};

use super::history::{History, HISTORY_SECONDS};
use super::page::{Card, Chart, Table};
use super::render::{self, Snapshot};
use super::{html, Figure, StatusSource};
use crate::access::{AllowList, PasswordFile};
use crate::logging::RecentErrors;
use crate::signals::Signal;

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
    server: Arc<Server>,
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
    pub fn bind(addr: SocketAddr) -> Result<Server, String> {
        Server::http(addr).map_err(|e| format!("status_listen {addr}: {e}"))
    }

    pub fn start(server: Server, shared: Arc<StatusShared>) -> std::io::Result<StatusServer> {
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| std::io::Error::other("status endpoint is not on an IP socket"))?;
        let server = Arc::new(server);
        let serving = Arc::clone(&server);
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
        let thread = std::thread::Builder::new()
            .name("status".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    handle(&shared, request);
                }
            })?;
        Ok(StatusServer {
            server,
            thread: Some(thread),
            sampler: Some((stop_tx, sampler)),
            addr,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop(mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some((stop, t)) = self.sampler.take() {
            drop(stop);
            let _ = t.join();
        }
    }
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn respond(request: Request, status: u16, content_type: &str, body: String, extra: Option<Header>) {
    let mut response = Response::from_string(body).with_status_code(status);
    if let Some(h) = header("Content-Type", content_type) {
        response.add_header(h);
    }
    if let Some(h) = extra {
        response.add_header(h);
    }
    if let Err(e) = request.respond(response) {
        log::debug!("status: could not answer: {e}");
    }
}

fn text(request: Request, status: u16, body: &str) {
    respond(
        request,
        status,
        "text/plain; charset=utf-8",
        format!("{body}\n"),
        None,
    );
}

fn handle(shared: &StatusShared, request: Request) {
    let Some(peer) = request.remote_addr().map(|a| a.ip()) else {
        return text(request, 403, "forbidden");
    };
    let access = match shared.access.lock() {
        Ok(a) => a.clone(),
        Err(_) => return text(request, 500, "internal error"),
    };
    if !access.allow.allows(peer) {
        log::warn!("status: refused {peer}: not allowed by allowdb");
        return text(request, 403, &format!("forbidden: {peer} is not allowed"));
    }
    let path = request.url().split('?').next().unwrap_or("").to_string();
    match (request.method(), path.as_str()) {
        (Method::Get | Method::Head, "/") => {
            let body = html::html(&shared.snapshot());
            respond(request, 200, "text/html; charset=utf-8", body, None)
        }
        (Method::Get | Method::Head, "/status.json") => {
            let body = render::json(&shared.snapshot());
            respond(request, 200, "application/json", body, None)
        }
        (Method::Get | Method::Head, "/metrics") => {
            let body = render::prometheus(&shared.snapshot());
            respond(
                request,
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                body,
                None,
            )
        }
        (Method::Post, "/reload" | "/rotate") => {
            let signal = if path == "/reload" {
                Signal::Reload
            } else {
                Signal::Rotate
            };
            post(shared, &access, peer, request, signal)
        }
        (_, "/reload" | "/rotate") => respond(
            request,
            405,
            "text/plain",
            "use POST\n".into(),
            header("Allow", "POST"),
        ),
        (_, "/" | "/status.json" | "/metrics") => respond(
            request,
            405,
            "text/plain",
            "use GET\n".into(),
            header("Allow", "GET, HEAD"),
        ),
        _ => text(request, 404, "not found"),
    }
}

fn post(
    shared: &StatusShared,
    access: &Access,
    peer: std::net::IpAddr,
    request: Request,
    signal: Signal,
) {
    let Some(passwords) = &access.passwords else {
        return text(request, 403, "POST needs a pwfile in the daemon's config");
    };
    let user = basic_auth(&request)
        .and_then(|(user, password)| passwords.verify(&user, &password).then_some(user));
    let Some(user) = user else {
        log::warn!(
            "status: {peer} failed to authenticate for POST {}",
            request.url()
        );
        return respond(
            request,
            401,
            "text/plain",
            "authentication required\n".into(),
            header("WWW-Authenticate", "Basic realm=\"focuser\""),
        );
    };
    let sent = shared
        .signals
        .lock()
        .map(|tx| tx.send(signal).is_ok())
        .unwrap_or(false);
    if !sent {
        return text(request, 503, "the daemon is stopping");
    }
    log::info!("status: {user}@{peer} asked for {signal:?}");
    text(
        request,
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
    let value = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))?
        .value
        .as_str()
        .to_string();
    let encoded = value.strip_prefix("Basic ")?.trim();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}
