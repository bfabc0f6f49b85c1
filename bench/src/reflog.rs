//! The master's input, generated deterministically: a reflog (half Zipf-popular, half uniform
//! URLs, one line in a thousand with a bad time), the previous cycle's `current_log` and the
//! domain map (`yacobot_node`, `partner_domain`). Used by bench-master and bench-cluster.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, Context};

use diesel::connection::SimpleConnection;
use focuser_formats::stamp;
use focuser_formats::urls;
use focuser_master::current_log;
use focuser_master::filter::Entry;

// How much to generate: the benchmarks' `--lines --urls --domains --nodes` (a plain comment:
// clap would take a doc comment for the about text of every binary that flattens it).
#[derive(clap::Args, Debug, Clone)]
pub struct ReflogSize {
    /// Reflog lines
    #[arg(long, default_value_t = 10_000_000)]
    pub lines: u64,
    /// Distinct URLs to draw from (about as many appear)
    #[arg(long, default_value_t = 2_000_000)]
    pub urls: u64,
    /// Domains (90 % in the domain map)
    #[arg(long, default_value_t = 100_000)]
    pub domains: u64,
    /// Crawler nodes
    #[arg(long, default_value_t = 8)]
    pub nodes: u32,
}

pub const T0: i64 = 1_700_000_000;

/// Writes every dirty page out before a stage is timed: a stage must not pay for the writeback
/// of what the generator or an earlier stage wrote (a gigabyte of it, for the master).
pub fn settle() -> anyhow::Result<()> {
    let status = Command::new("sync").status().context("running sync")?;
    if !status.success() {
        return Err(anyhow!("sync failed"));
    }
    Ok(())
}

/// xorshift64*: the same data on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub fn domain_of(u: u64, domains: u64) -> u64 {
    u.wrapping_mul(0x9e37_79b9_7f4a_7c15) % domains
}

pub fn url(u: u64, domains: u64) -> String {
    format!(
        "http://www.d{}.example/p/{u}/index.html?id={u}",
        domain_of(u, domains)
    )
}

/// Zipf(1) over `n` ranks, sampled by inverting its cumulative weights.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: u64) -> Zipf {
        let mut acc = 0.0;
        Zipf(
            (1..=n)
                .map(|r| {
                    acc += 1.0 / r as f64;
                    acc
                })
                .collect(),
        )
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        let total = self.0.last().copied().unwrap_or(1.0);
        let x = rng.unit() * total;
        self.0.partition_point(|&c| c < x) as u64
    }
}

pub struct Data {
    pub reflog: PathBuf,
    pub bytes: u64,
    /// The cycle's time: the end of the reflog's hour.
    pub now: i64,
}

/// The reflog, `work`/reflog.log.
pub fn generate(a: &ReflogSize, work: &Path) -> anyhow::Result<Data> {
    let reflog = work.join("reflog.log");
    let mut rng = Rng(0x5eed_f0c0_5e12_0001);
    let zipf = Zipf::new(a.urls);
    let mut w = BufWriter::with_capacity(4 << 20, File::create(&reflog)?);
    writeln!(w, "batch\tpriority\ttimestamp\tpage\turl\thits\tupdatetag")?;
    for i in 0..a.lines {
        // Half Zipf-popular, half uniform: a head of hot URLs and about `urls` distinct ones.
        let u = if rng.next().is_multiple_of(2) {
            zipf.sample(&mut rng)
        } else {
            rng.next() % a.urls
        };
        let ts = T0 + (i * 3600 / a.lines.max(1)) as i64;
        let r = rng.next();
        let tag = if r.is_multiple_of(100) {
            format!("v{}", (r >> 8) % 3)
        } else {
            String::new()
        };
        let hits = 1 + (r >> 16) % 3;
        if r % 1000 == 7 {
            writeln!(
                w,
                "{}\t5\tnot-a-time\t{}\t{}\t{hits}\t{tag}",
                2011072806593795u64,
                r % 9999,
                url(u, a.domains)
            )?;
        } else {
            writeln!(
                w,
                "{}\t5\t{}\t{}\t{}\t{hits}\t{tag}",
                2011072806593795u64,
                stamp::format(ts),
                r % 9999,
                url(u, a.domains)
            )?;
        }
    }
    w.flush()?;
    let bytes = std::fs::metadata(&reflog)?.len();
    Ok(Data {
        reflog,
        bytes,
        now: T0 + 3600,
    })
}

/// The previous current_log (40 % of the URLs, forwarded up to two hours ago), for both
/// pipelines; and the domain map (90 % of domains), in the database and as a file.
pub fn previous_state(
    a: &ReflogSize,
    work: &Path,
    db: &focuser_tests::TestDb,
) -> anyhow::Result<()> {
    let mut rng = Rng(0x0dd5_eed5_0000_0002);
    let mut entries: Vec<(u64, String, Entry<'static>)> = (0..a.urls)
        .filter(|u| u % 5 < 2)
        .map(|u| {
            let url = url(u, a.domains);
            let fwd_ts = T0 - (rng.next() % 7200) as i64;
            let last_seen = fwd_ts + (rng.next() % 1800) as i64;
            let tag = if rng.next().is_multiple_of(4) {
                "v0"
            } else {
                ""
            };
            let e = Entry {
                id: urls::url_id(&url),
                fwd_ts,
                tag,
                pending: rng.next() % 3,
                last_seen,
            };
            (u, url, e)
        })
        .collect();
    entries.sort_by_key(|(_, _, e)| e.id);
    std::fs::create_dir_all(work.join("master/state"))?;
    let mut w = current_log::Writer::new(
        BufWriter::new(File::create(work.join("master/state/current_log"))?),
        1,
    )?;
    for (u, url, e) in &entries {
        w.write(e, &format!("d{}.example", domain_of(*u, a.domains)), url)?;
    }
    w.finish()?.0.flush()?;
    entries.sort_by(|a, b| a.1.as_bytes().cmp(b.1.as_bytes()));
    let mut c = BufWriter::new(File::create(work.join("classic_current_log"))?);
    for (_, url, e) in &entries {
        writeln!(
            c,
            "{url}\t{}\t{}\t{}\t{}",
            e.fwd_ts, e.tag, e.pending, e.last_seen
        )?;
    }
    c.flush()?;

    let mut conn = db.conn();
    let nodes: Vec<String> = (1..=a.nodes)
        .map(|n| format!("({n}, 'yb{n}', '127.0.0.1:{}', 1)", 7300 + n))
        .collect();
    conn.batch_execute(&format!(
        "INSERT INTO yacobot_node (id, name, host, enabled) VALUES {}",
        nodes.join(",")
    ))?;
    let mut mapped: Vec<(String, u32)> = (0..a.domains)
        .filter(|d| d % 10 != 0)
        .map(|d| (format!("d{d}.example"), (d % u64::from(a.nodes)) as u32 + 1))
        .collect();
    for chunk in mapped.chunks(5000) {
        let rows: Vec<String> = chunk
            .iter()
            .map(|(d, n)| format!("('{d}', {n}, 'bench')"))
            .collect();
        conn.batch_execute(&format!(
            "INSERT INTO partner_domain (domain, yacobot_id, assigned_by) VALUES {}",
            rows.join(",")
        ))?;
    }
    mapped.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut m = BufWriter::new(File::create(work.join("domain_map"))?);
    for (d, n) in &mapped {
        writeln!(m, "{d}\t{n}")?;
    }
    m.flush()?;
    Ok(())
}
