//! The server's threads: accept, read requests (keep-alive), answer per the behaviour table.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::behaviour::{page_body, Behaviour};
use super::{lock, Logged, Shared};

/// A request head larger than this is refused (431).
const MAX_HEAD: usize = 64 << 10;
/// An idle keep-alive connection is closed after this.
const IDLE: Duration = Duration::from_secs(30);

pub(super) fn accept(listener: TcpListener, shared: Arc<Shared>) {
    let mut next = 0u64;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        next += 1;
        let id = next;
        if let Ok(copy) = stream.try_clone() {
            lock(&shared.conns).insert(id, copy);
        }
        let mine = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name(format!("web-conn-{id}"))
            .spawn(move || {
                let _ = serve(&stream, id, &mine);
                lock(&mine.conns).remove(&id);
            });
        if spawned.is_err() {
            lock(&shared.conns).remove(&id);
        }
    }
}

/// One request's entry in the log. It is entered when the head is read; its end is stamped, and
/// the host's count of requests in progress lowered, just before the answer's last write, so that
/// the interval logged always lies within the client's own transfer (counts made from the log
/// never exceed the client's real concurrency).
struct Progress<'a> {
    shared: &'a Shared,
    host: String,
    start: Instant,
    conn: u64,
    ended: bool,
}

impl<'a> Progress<'a> {
    fn begin(shared: &'a Shared, head: &Head, host: &str, conn: u64) -> Self {
        let start = Instant::now();
        let concurrent = {
            let mut active = lock(&shared.active);
            let n = active.entry(host.to_string()).or_insert(0);
            *n += 1;
            *n
        };
        lock(&shared.log).push(Logged {
            host: host.to_string(),
            path: head.path.clone(),
            user_agent: head.user_agent.clone(),
            start,
            end: None,
            concurrent,
            connection: conn,
            sent: 0,
            aborted: false,
            finished: false,
        });
        Progress {
            shared,
            host: host.to_string(),
            start,
            conn,
            ended: false,
        }
    }

    fn update(&self, f: impl FnOnce(&mut Logged)) {
        let mut log = lock(&self.shared.log);
        // Found again by connection and start: the test may have cleared the log meanwhile.
        if let Some(entry) = log
            .iter_mut()
            .rev()
            .find(|l| l.connection == self.conn && l.start == self.start)
        {
            f(entry);
        }
    }

    /// The answer's last write is about to begin.
    fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        if let Some(n) = lock(&self.shared.active).get_mut(&self.host) {
            *n = n.saturating_sub(1);
        }
        let now = Instant::now();
        self.update(|l| l.end = Some(now));
    }

    fn close(mut self, sent: u64, aborted: bool) {
        self.end();
        self.update(|l| {
            l.sent = sent;
            l.aborted = aborted;
            l.finished = true;
        });
    }
}

/// A parsed request head.
struct Head {
    method: String,
    path: String,
    host: Option<String>,
    user_agent: String,
    keep_alive: bool,
    content_length: u64,
}

fn serve(stream: &TcpStream, conn: u64, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream.try_clone()?;
    loop {
        let head = match read_head(&mut reader)? {
            None => return Ok(()),
            Some(Ok(head)) => head,
            Some(Err((status, why))) => {
                answer_plain(&mut out, status, why, false)?;
                return Ok(());
            }
        };
        // A request body is read and ignored.
        io::copy(
            &mut (&mut reader).take(head.content_length),
            &mut io::sink(),
        )?;
        let Some(host) = head.host.clone() else {
            answer_plain(&mut out, 400, "no Host header", false)?;
            return Ok(());
        };
        let mut progress = Progress::begin(shared, &head, &host, conn);
        let behaviour = lock(&shared.table).answer(&host, &head.path);
        let result = respond(&mut out, &head, &host, behaviour, &mut progress);
        let keep = match result {
            Ok((sent, keep)) => {
                progress.close(sent, false);
                keep
            }
            Err(broken) => {
                progress.close(broken.sent, true);
                false
            }
        };
        if !keep || !head.keep_alive {
            let _ = out.flush();
            let _ = stream.shutdown(std::net::Shutdown::Write);
            return Ok(());
        }
    }
}

/// Reads one request head: `None` at a clean end of the connection, an error status for a bad one.
#[allow(clippy::type_complexity)]
fn read_head<R: BufRead>(r: &mut R) -> io::Result<Option<Result<Head, (u16, &'static str)>>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let n = r
            .by_ref()
            .take(MAX_HEAD as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(if lines.is_empty() {
                None
            } else {
                Some(Err((400, "truncated request")))
            });
        }
        total += n;
        if total > MAX_HEAD {
            return Ok(Some(Err((431, "request head too large"))));
        }
        let text = String::from_utf8_lossy(&line)
            .trim_end_matches(['\r', '\n'])
            .to_string();
        if text.is_empty() {
            if lines.is_empty() {
                continue; // stray CRLF between requests
            }
            break;
        }
        lines.push(text);
    }
    let mut parts = lines[0].split_whitespace();
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Ok(Some(Err((400, "bad request line"))));
    };
    if !version.starts_with("HTTP/1.") || !path.starts_with('/') {
        return Ok(Some(Err((400, "bad request line"))));
    }
    let mut head = Head {
        method: method.to_string(),
        path: path.to_string(),
        host: None,
        user_agent: String::new(),
        keep_alive: version == "HTTP/1.1",
        content_length: 0,
    };
    for line in &lines[1..] {
        let Some((name, value)) = line.split_once(':') else {
            return Ok(Some(Err((400, "bad header line"))));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "host" => {
                let host = match value.rsplit_once(':') {
                    Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
                    _ => value,
                };
                head.host = Some(host.to_ascii_lowercase());
            }
            "user-agent" => head.user_agent = value.to_string(),
            "connection" => {
                let v = value.to_ascii_lowercase();
                if v.contains("close") {
                    head.keep_alive = false;
                } else if v.contains("keep-alive") {
                    head.keep_alive = true;
                }
            }
            "content-length" => match value.parse() {
                Ok(n) => head.content_length = n,
                Err(_) => return Ok(Some(Err((400, "bad Content-Length")))),
            },
            _ => {}
        }
    }
    Ok(Some(Ok(head)))
}

/// A failed answer, with the body bytes written before it failed.
#[derive(Debug)]
struct Broken {
    sent: u64,
}

impl From<io::Error> for Broken {
    fn from(_: io::Error) -> Self {
        Broken { sent: 0 }
    }
}

/// Answers one request; `Ok((body bytes, keep the connection))`.
fn respond(
    out: &mut TcpStream,
    head: &Head,
    host: &str,
    b: Behaviour,
    progress: &mut Progress,
) -> Result<(u64, bool), Broken> {
    let head_only = head.method.eq_ignore_ascii_case("HEAD");
    match b {
        Behaviour::Page { size } => {
            let body = page_body(host, &head.path, size);
            let ct = "text/html; charset=utf-8";
            fixed(out, 200, ct, &body, &[], head_only, progress)
        }
        Behaviour::Fixed {
            status,
            content_type,
            body,
            headers,
        } => fixed(
            out,
            status,
            &content_type,
            &body,
            &headers,
            head_only,
            progress,
        ),
        Behaviour::Delay(wait, then) => {
            std::thread::sleep(wait);
            respond(out, head, host, *then, progress)
        }
        Behaviour::SlowBody {
            size,
            chunks,
            interval,
        } => {
            let body = page_body(host, &head.path, size);
            write_head(out, 200, "text/html", Some(body.len() as u64), &[])?;
            let piece = body.len().div_ceil(chunks.max(1)).max(1);
            let mut sent = 0u64;
            let last = body.len().div_ceil(piece).saturating_sub(1);
            for (i, chunk) in body.chunks(piece).enumerate() {
                if i == last {
                    progress.end();
                }
                out.write_all(chunk).map_err(|_| Broken { sent })?;
                out.flush().map_err(|_| Broken { sent })?;
                sent += chunk.len() as u64;
                std::thread::sleep(interval);
            }
            Ok((sent, true))
        }
        Behaviour::Huge {
            size,
            content_length,
        } => {
            write_head(out, 200, "text/html", content_length.then_some(size), &[])?;
            let block = vec![b'x'; 64 << 10];
            let mut sent = 0u64;
            while sent < size && !head_only {
                let n = block.len().min((size - sent) as usize);
                if sent + n as u64 >= size {
                    progress.end();
                }
                out.write_all(&block[..n]).map_err(|_| Broken { sent })?;
                sent += n as u64;
            }
            Ok((sent, content_length))
        }
        Behaviour::Raw(bytes) => {
            progress.end();
            out.write_all(&bytes)?;
            Ok((bytes.len() as u64, false))
        }
        Behaviour::Close => {
            progress.end();
            Ok((0, false))
        }
        // The table resolves sequences; an empty one is a 500.
        Behaviour::Sequence(_) => {
            let body = b"empty sequence";
            fixed(out, 500, "text/plain", body, &[], head_only, progress)
        }
    }
}

/// A whole answer in one write.
fn fixed(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    headers: &[(String, String)],
    head_only: bool,
    progress: &mut Progress,
) -> Result<(u64, bool), Broken> {
    let mut all = vec![("Content-Type".to_string(), content_type.to_string())];
    all.extend_from_slice(headers);
    let mut answer = head_text(status, "", Some(body.len() as u64), &all).into_bytes();
    if !head_only {
        answer.extend_from_slice(body);
    }
    progress.end();
    out.write_all(&answer).map_err(|_| Broken { sent: 0 })?;
    Ok((body.len() as u64, true))
}

fn write_head(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    length: Option<u64>,
    headers: &[(String, String)],
) -> io::Result<()> {
    out.write_all(head_text(status, content_type, length, headers).as_bytes())
}

fn head_text(
    status: u16,
    content_type: &str,
    length: Option<u64>,
    headers: &[(String, String)],
) -> String {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    if !content_type.is_empty() {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match length {
        Some(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
        None => head.push_str("Connection: close\r\n"),
    }
    head.push_str("\r\n");
    head
}

fn answer_plain(out: &mut TcpStream, status: u16, why: &str, keep: bool) -> io::Result<()> {
    let connection = if keep {
        vec![]
    } else {
        vec![("Connection".to_string(), "close".to_string())]
    };
    write_head(
        out,
        status,
        "text/plain",
        Some(why.len() as u64),
        &connection,
    )?;
    out.write_all(why.as_bytes())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        410 => "Gone",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
