//! bench-segments: the segment writer, and the sender shipping to a receiver on loopback,
//! next to the limits measured in the same run (`dd conv=fsync` of the same size, a raw
//! loopback copy with 1 MiB buffers). See bench/README.md.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use focuser_daemon::access::AllowList;
use focuser_daemon::config::RunningConfig;
use focuser_daemon::stop::Stop;
use focuser_daemon::Config;
use focuser_formats::segment::{ItemRef, Origin, Partition, Status, Writer, WriterOptions};
use focuser_reader::config::{ReaderConfig, SendConfig};
use focuser_reader::recv::{self, RecvShared, RecvStore};
use focuser_reader::sender::{self, SendCtx, SenderSpec, SenderState};
use focuser_reader::wire::frame::read_frame_unchecked;
use focuser_reader::wire::handshake;
use focuser_reader::wire::messages::put_position;
use focuser_reader::wire::{write_frame, BatchRef, FrameType, Secret};

#[derive(Parser)]
struct Args {
    /// MiB of item content to write and ship
    #[arg(long, default_value_t = 2048)]
    mib: u64,
    /// Where the stores go (a temporary directory is made inside)
    #[arg(long, default_value = "/var/tmp")]
    work: PathBuf,
    /// Which shipping stages to run (the writer always runs: it makes the store), e.g. `c`
    /// to profile one of them
    #[arg(long, default_value = "bc")]
    ship: String,
    /// Ship ITEMS frames, each item read and checked by the sender (`Send.Records = 0`),
    /// instead of stored records by sendfile
    #[arg(long)]
    items: bool,
    /// `Send.Window`: batches in flight (the default config's when not given)
    #[arg(long)]
    window: Option<usize>,
}

const SECRET: &[u8] = b"bench-segments-shared-secret";

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.work)?;
    let dir = tempfile::Builder::new()
        .prefix("bench-segments-")
        .tempdir_in(&args.work)?;
    let bytes = args.mib << 20;
    println!(
        "bench-segments: {} MiB of 2-20 KiB items in {}",
        args.mib,
        dir.path().display()
    );

    let dd = dd_fsync(dir.path(), args.mib)?;
    let c = cpu_s();
    let (items, written, write_s) = write_store(&dir.path().join("store"), bytes)?;
    let write_cpu = cpu_s() - c;
    let c = cpu_s();
    let durable_s = match args.ship.contains('b') {
        true => ship(dir.path(), items, true, &args)?,
        false => f64::NAN,
    };
    let durable_cpu = cpu_s() - c;
    let c = cpu_s();
    let discard_s = match args.ship.contains('c') {
        true => ship(dir.path(), items, false, &args)?,
        false => f64::NAN,
    };
    let discard_cpu = cpu_s() - c;
    let c = cpu_s();
    let raw_s = raw_loopback(written)?;
    let raw_cpu = cpu_s() - c;

    let mbs = |b: u64, s: f64| b as f64 / s / 1e6;
    let dd_mbs = mbs(bytes, dd);
    println!("items: {items}, store bytes: {written}");
    println!(
        "{:<44} {:>8} {:>8} {:>10} {:>8}",
        "stage", "seconds", "cpu s", "MB/s", "ratio"
    );
    println!(
        "{:<44} {:>8.2} {:>8} {:>10.0}",
        "limit: dd conv=fsync", dd, "", dd_mbs
    );
    let row = |name: &str, (s, cpu): (f64, f64), b: u64, limit: f64, target: f64| {
        let r = mbs(b, s) / limit;
        println!(
            "{name:<44} {s:>8.2} {cpu:>8.2} {:>10.0} {r:>8.2}  (target >= {target:.2})",
            mbs(b, s)
        );
    };
    row(
        "(a) writer, default sync policy",
        (write_s, write_cpu),
        written,
        dd_mbs,
        0.70,
    );
    row(
        "(b) sender -> receiver, durable",
        (durable_s, durable_cpu),
        written,
        dd_mbs,
        0.70,
    );
    let raw_mbs = mbs(written, raw_s);
    println!(
        "{:<44} {:>8.2} {raw_cpu:>8.2} {:>10.0}",
        "limit: raw loopback copy, 1 MiB buffers", raw_s, raw_mbs
    );
    row(
        "(c) sender -> receiver that discards",
        (discard_s, discard_cpu),
        written,
        raw_mbs,
        0.50,
    );
    Ok(())
}

/// CPU seconds (user + system) of this process so far, all threads.
fn cpu_s() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| {
            let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

fn dd_fsync(dir: &Path, mib: u64) -> anyhow::Result<f64> {
    let out = dir.join("dd.bin");
    let t = Instant::now();
    let st = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", out.display()))
        .args([
            "bs=1M",
            &format!("count={mib}"),
            "conv=fsync",
            "status=none",
        ])
        .status()
        .context("running dd")?;
    let s = t.elapsed().as_secs_f64();
    if !st.success() {
        bail!("dd failed: {st}");
    }
    std::fs::remove_file(out)?;
    Ok(s)
}

/// Deterministic items of 2–20 KiB whose contents are cut from a pool of pseudo-random
/// bytes, borrowed rather than copied: 2 GB of items never sit in memory at once.
struct Items {
    pool: Vec<u8>,
    x: u64,
    n: u64,
    doc_id: Vec<u8>,
    url: Vec<u8>,
}

impl Items {
    fn new() -> Items {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut pool = Vec::with_capacity(32 << 20);
        while pool.len() < 32 << 20 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            pool.extend_from_slice(&x.to_le_bytes());
        }
        Items {
            pool,
            x,
            n: 0,
            doc_id: Vec::new(),
            url: Vec::new(),
        }
    }

    fn next(&mut self) -> ItemRef<'_> {
        use std::io::Write as _;
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.n += 1;
        let size = 2048 + (self.x % (18 * 1024 + 1)) as usize;
        let off = (self.x >> 20) as usize % (self.pool.len() - size);
        self.doc_id.clear();
        let _ = write!(
            self.doc_id,
            "{:016x}",
            self.n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        );
        self.url.clear();
        let _ = write!(
            self.url,
            "http://site{}.example/doc/{}",
            self.n % 1000,
            self.n
        );
        ItemRef {
            status: if self.n.is_multiple_of(10) {
                Status::Delete
            } else {
                Status::Update
            },
            doc_id: &self.doc_id,
            url: &self.url,
            content: &self.pool[off..off + size],
            time_ms: focuser_formats::segment::now_ms(),
            origin: Origin::default(),
        }
    }
}

/// (a): returns (items, bytes on disk, seconds). The clock includes making the items (a
/// few hundred nanoseconds each, against microseconds of writing).
fn write_store(store: &Path, bytes: u64) -> anyhow::Result<(u64, u64, f64)> {
    let mut gen = Items::new();
    let mut content = 0u64;
    let mut items = 0u64;
    let t = Instant::now();
    let (mut w, _) = Writer::open(store, WriterOptions::default())?;
    while content < bytes {
        let it = gen.next();
        content += it.content.len() as u64;
        w.append_ref(&it)?;
        items += 1;
    }
    w.rotate()?;
    w.close()?;
    let s = t.elapsed().as_secs_f64();
    Ok((items, focuser_formats::segment::store_bytes(store)?, s))
}

/// (b) and (c): a sender over the whole store to one receiver; seconds until all are acked.
fn ship(dir: &Path, items: u64, durable: bool, args: &Args) -> anyhow::Result<f64> {
    let defaults = SendConfig::default();
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let secret = Secret::from_bytes(SECRET);
    let max_frame = 32 << 20;
    // The sender and the receiver take their settings from a config, as in the daemon.
    let cf = dir.join(format!("bench-{durable}.cf"));
    std::fs::write(
        &cf,
        format!(
            "rootdir = {}\nname = bench\nsecret_file = unused\nMaxFrame = {max_frame}\n\
             Send.Records = {}\nSend.Window = {}\n",
            dir.display(),
            u8::from(!args.items),
            args.window.unwrap_or(defaults.window)
        ),
    )?;
    let config = RunningConfig::new(Config::<ReaderConfig>::load(&cf, None)?);
    let receiver = if durable {
        let (store, _) = RecvStore::open(&dir.join("received"), WriterOptions::default())?;
        let shared = Arc::new(RecvShared::new(
            store,
            secret.clone(),
            AllowList::loopback().into(),
            config.clone(),
            dir.join("inbox"),
            Duration::from_secs(60),
            4,
            Arc::clone(&stop),
        ));
        recv::serve(listener, shared)?
    } else {
        let secret = secret.clone();
        std::thread::spawn(move || {
            if let Err(e) = discard(listener, &secret, max_frame) {
                eprintln!("discarding receiver: {e:#}");
            }
        })
    };
    let name = if durable { "durable" } else { "discard" };
    let spec = SenderSpec {
        group: "Index.0".into(),
        address: addr.to_string(),
        partition: Partition { count: 1, index: 0 },
        statuses: vec![Status::Update, Status::Delete],
        stream: format!("bench.{name}"),
        position_file: dir.join(format!("pos_{name}.dat")),
        lost_file: dir.join(format!("lost_{name}.txt")),
    };
    let st = Arc::new(SenderState::new(spec));
    let ctx = Arc::new(SendCtx {
        store: dir.join("store"),
        secret,
        config,
        stop: Stop::from_flag(Arc::clone(&stop)),
    });
    let t = Instant::now();
    let worker = {
        let (st, ctx) = (Arc::clone(&st), Arc::clone(&ctx));
        std::thread::spawn(move || sender::run(st, ctx))
    };
    while st.acked_items.load(Ordering::Relaxed) < items {
        if t.elapsed() > Duration::from_secs(600) {
            bail!(
                "shipping {name} did not finish: {:?}",
                st.last_error.lock().ok()
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let s = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    let _ = worker.join();
    let _ = receiver.join();
    Ok(s)
}

/// A receiver that checks and acknowledges every batch and stores nothing.
fn discard(listener: TcpListener, secret: &Secret, max: usize) -> anyhow::Result<()> {
    let (s, _) = listener.accept()?;
    let mut w = s.try_clone()?;
    let mut r = BufReader::with_capacity(1 << 20, s);
    let accepted = handshake::server(
        &mut Both {
            r: &mut r,
            w: &mut w,
        },
        secret,
    )?;
    handshake::welcome(&mut w, &accepted, Default::default())?;
    let (mut payload, mut body_crcs) = (Vec::new(), Vec::new());
    loop {
        // As the real receiver checks a frame: one pass over it, each record's CRC as well.
        let head = match read_frame_unchecked(&mut r, max, &mut payload) {
            Ok(h) => h,
            Err(_) => return Ok(()),
        };
        let batch = BatchRef::decode_checked(&payload, head, &mut body_crcs)?;
        let mut ack = Vec::with_capacity(12);
        put_position(&mut ack, batch.upto);
        write_frame(&mut w, FrameType::Ack, &ack)?;
    }
}

struct Both<'a> {
    r: &'a mut BufReader<TcpStream>,
    w: &'a mut TcpStream,
}

impl Read for Both<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.r.read(buf)
    }
}

impl Write for Both<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// The limit for (c): `bytes` through a loopback socket in 1 MiB writes and reads.
fn raw_loopback(bytes: u64) -> anyhow::Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let got = Arc::new(Mutex::new(0u64));
    let reader = {
        let got = Arc::clone(&got);
        std::thread::spawn(move || -> std::io::Result<()> {
            let (mut s, _) = listener.accept()?;
            let mut buf = vec![0u8; 1 << 20];
            let mut n = 0u64;
            loop {
                let k = s.read(&mut buf)?;
                if k == 0 {
                    break;
                }
                n += k as u64;
            }
            if let Ok(mut g) = got.lock() {
                *g = n;
            }
            Ok(())
        })
    };
    let buf = vec![7u8; 1 << 20];
    let t = Instant::now();
    let mut s = TcpStream::connect(addr)?;
    let mut sent = 0u64;
    while sent < bytes {
        let k = (bytes - sent).min(buf.len() as u64) as usize;
        s.write_all(&buf[..k])?;
        sent += k as u64;
    }
    drop(s);
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("reader thread panicked"))??;
    let s = t.elapsed().as_secs_f64();
    let n = got.lock().map(|g| *g).unwrap_or(0);
    if n != bytes {
        bail!("raw copy moved {n} of {bytes} bytes");
    }
    Ok(s)
}
