//! bench-feed: items cut out of a partner feed (quick-xml events, rules, canonical form,
//! MD5), next to the limits measured in the same run over the same file: a raw read of its
//! bytes, and quick-xml's plain event loop. See bench/README.md.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use focuser_feed::items::{extract, FieldRule, Limits, Outcome, Rules};

#[derive(Parser)]
struct Args {
    /// MiB of feed to generate and read
    #[arg(long, default_value_t = 100)]
    mib: u64,
    /// Where the feed goes (a temporary directory is made inside)
    #[arg(long, default_value = "/var/tmp")]
    work: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.work)?;
    let dir = tempfile::Builder::new()
        .prefix("bench-feed-")
        .tempdir_in(&args.work)?;
    let path = dir.path().join("feed.xml");
    let (items, bytes) = generate(&path, args.mib << 20)?;
    println!(
        "bench-feed: {} MiB feed, {items} items of ~{} bytes, in {}",
        args.mib,
        bytes / items,
        dir.path().display()
    );

    let raw_s = timed(|| raw_read(&path))?;
    let (events, xml_s) = timed_value(|| event_loop(&path))?;
    let ((got, digest), feed_s) = timed_value(|| extract_all(&path))?;
    if got != items {
        bail!("extracted {got} items of {items}");
    }

    let mbs = |s: f64| bytes as f64 / s / 1e6;
    let per_s = |s: f64| items as f64 / s;
    println!("{events} XML events; xor of the item MD5s: {digest:032x}");
    println!(
        "{:<40} {:>8} {:>10} {:>12} {:>8}",
        "stage", "seconds", "MB/s", "items/s", "ratio"
    );
    println!(
        "{:<40} {raw_s:>8.3} {:>10.0} {:>12.0}",
        "limit: raw read (64 KiB buffers)",
        mbs(raw_s),
        per_s(raw_s)
    );
    println!(
        "{:<40} {xml_s:>8.3} {:>10.0} {:>12.0} {:>8.2}",
        "limit: quick-xml event loop",
        mbs(xml_s),
        per_s(xml_s),
        raw_s / xml_s
    );
    println!(
        "{:<40} {feed_s:>8.3} {:>10.0} {:>12.0} {:>8.2}  (of the event loop)",
        "extract + canonical form + MD5",
        mbs(feed_s),
        per_s(feed_s),
        xml_s / feed_s
    );
    Ok(())
}

fn timed(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    Ok(timed_value(f)?.1)
}

fn timed_value<T>(f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<(T, f64)> {
    let t = Instant::now();
    let v = f()?;
    Ok((v, t.elapsed().as_secs_f64()))
}

/// A shop feed as partners send them: RSS items with a key, text with entities and CDATA,
/// a repeated field, attributes, and content no rule reads. Deterministic.
fn generate(path: &Path, bytes: u64) -> anyhow::Result<(u64, u64)> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss xmlns:g=\"http://base.google.com/ns/1.0\"><channel>\n<title>bench shop</title>\n";
    w.write_all(head.as_bytes())?;
    let mut written = head.len() as u64;
    let mut i = 0u64;
    while written < bytes {
        let item = format!(
            "<item>\n  <g:id>sku-{i:08}</g:id>\n  <title>商品 {i} &amp; accessories, size {}</title>\n  <link>https://shop.example/p/{i}?ref=feed&amp;c={}</link>\n  <g:price>{}.{:02} CNY</g:price>\n  <g:image_link>https://img.example/{i}.jpg</g:image_link>\n  <description><![CDATA[<p>Description of item {i}: {}</p>]]></description>\n  <tags><tag>t{}</tag><tag>t{}</tag><tag>类别{}</tag></tags>\n  <shipping country=\"CN\" price=\"{}\"/>\n</item>\n",
            i % 50,
            i % 13,
            i % 1000,
            i % 100,
            "long text that only the full-text index reads. ".repeat(3),
            i % 7,
            i % 11,
            i % 5,
            i % 20
        );
        w.write_all(item.as_bytes())?;
        written += item.len() as u64;
        i += 1;
    }
    let tail = "</channel></rss>\n";
    w.write_all(tail.as_bytes())?;
    w.flush()?;
    Ok((i, written + tail.len() as u64))
}

fn rules() -> anyhow::Result<Rules> {
    let r = |label: &str, xpath: &str, flags: &str| FieldRule {
        label_name: label.into(),
        parent_label: "channel/item".into(),
        xpath: xpath.into(),
        is_key: flags.contains('K'),
        is_required: flags.contains('R'),
        is_index: flags.contains('I'),
        is_fullhit: flags.contains('F'),
        is_mark: flags.contains('M'),
        index_type: u8::from(flags.contains('T')),
        group_type: 0,
    };
    Ok(Rules::compile(&[
        r("id", "g:id", "KI"),
        r("title", "", "RIF"),
        r("link", "", "R"),
        r("price", "g:price", "M"),
        r("image", "g:image_link", ""),
        r("description", "", "IT"),
        r("tag", "tags/tag", "I"),
        r("shipping", "shipping/@price", ""),
    ])?)
}

fn raw_read(path: &Path) -> anyhow::Result<()> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut sum = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        // Touch the bytes, as a parser must.
        sum = sum.wrapping_add(memchr::memchr_iter(b'<', &buf[..n]).count() as u64);
    }
    std::hint::black_box(sum);
    Ok(())
}

fn event_loop(path: &Path) -> anyhow::Result<u64> {
    let mut reader =
        quick_xml::Reader::from_reader(BufReader::with_capacity(64 << 10, File::open(path)?));
    let mut buf = Vec::new();
    let mut events = 0u64;
    loop {
        buf.clear();
        match reader.read_event_into(&mut buf).context("event loop")? {
            quick_xml::events::Event::Eof => break,
            _ => events += 1,
        }
    }
    Ok(events)
}

fn extract_all(path: &Path) -> anyhow::Result<(u64, u128)> {
    let rules = rules()?;
    let mut items = 0u64;
    let mut digest = 0u128;
    let summary = extract(File::open(path)?, None, &rules, &Limits::default(), |o| {
        if let Outcome::Item(i) = o {
            items += 1;
            digest ^= u128::from_str_radix(&i.md5(), 16).unwrap_or(0);
        }
        ControlFlow::Continue(())
    })?;
    if summary.failed > 0 {
        bail!("{} failed keys", summary.failed);
    }
    Ok((items, digest))
}
