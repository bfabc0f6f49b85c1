//! A test HTTP/1.1 server for fetcher tests: many host names (by the Host header) on one loopback
//! port, an answer programmable per host and path ([`Behaviour`]: slow answers, 5xx, 429, 404,
//! redirects and loops, huge bodies, wrong MIME types, robots.txt, fixed content, malformed
//! answers), and a log of every request ([`Logged`]) to check politeness against.
//!
//! Thread per connection, keep-alive; a bad request gets a 400 and never a panic. Clients map the
//! names to the server with curl's resolve option: [`WebServer::resolve`].

mod behaviour;
mod log;
mod server;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

pub use behaviour::{page_body, Behaviour};
pub use log::{by_host, max_concurrent, HostFigures, Logged};

/// State shared by the server's threads.
#[derive(Default)]
struct Shared {
    table: Mutex<behaviour::Table>,
    log: Mutex<Vec<Logged>>,
    /// Requests in progress per host.
    active: Mutex<std::collections::HashMap<String, usize>>,
    /// Open connections, shut down when the server is dropped.
    conns: Mutex<std::collections::HashMap<u64, TcpStream>>,
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test thread must not take the server down with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct WebServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl WebServer {
    /// Starts on an ephemeral loopback port; unset paths answer pages of 2 000 bytes.
    pub fn start() -> std::io::Result<WebServer> {
        Self::start_on("127.0.0.1:0")
    }

    /// Starts on a given address (`focuser-run web`, which serves the sample web alone).
    pub fn start_on(addr: &str) -> std::io::Result<WebServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        lock(&shared.table).default_page = 2000;
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("web-accept".into())
                .spawn(move || server::accept(listener, shared))?
        };
        Ok(WebServer {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://host:port/path` on this server.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port())
    }

    /// A curl resolve entry for every host name: `*:port:127.0.0.1` (the fetcher's wildcard).
    pub fn resolve(&self) -> Vec<String> {
        vec![format!("*:{}:127.0.0.1", self.port())]
    }

    /// Plain curl resolve entries, one per host.
    pub fn resolve_hosts<'a>(&self, hosts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        hosts
            .into_iter()
            .map(|h| format!("{h}:{}:127.0.0.1", self.port()))
            .collect()
    }

    /// Sets the answer for a host (`*`: any) and path (`*`: any; the path includes the query).
    pub fn set(&self, host: &str, path: &str, b: Behaviour) {
        lock(&self.shared.table).set(host, path, b);
    }

    pub fn set_robots(&self, host: &str, robots_txt: &str) {
        self.set(host, "/robots.txt", Behaviour::text(robots_txt));
    }

    /// The size of the generated page of paths without a setting.
    pub fn set_default_page(&self, size: usize) {
        lock(&self.shared.table).default_page = size;
    }

    /// Every request so far, in the order they started.
    pub fn log(&self) -> Vec<Logged> {
        lock(&self.shared.log).clone()
    }

    pub fn requests_to(&self, host: &str, path: &str) -> Vec<Logged> {
        let log = lock(&self.shared.log);
        log.iter()
            .filter(|r| r.host == host && r.path == path)
            .cloned()
            .collect()
    }

    pub fn clear_log(&self) {
        lock(&self.shared.log).clear();
    }

    /// Per-host politeness figures of the log so far.
    pub fn figures(&self) -> std::collections::BTreeMap<String, HostFigures> {
        by_host(&self.log())
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor, then end every connection (their threads exit on the error).
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
        for (_, c) in lock(&self.shared.conns).drain() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests;
