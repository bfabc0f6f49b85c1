//! The sample world the main job and the end-to-end test crawl: a web of a few hundred host
//! names (pages, robots.txt, pages that are gone), three partner feeds with their sitemaps,
//! and reflogs of clicks on those pages. Everything is a pure function of the [`Plan`], so
//! the standalone web server, the reflog writer and the checks agree without talking.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use focuser_formats::urls::{self, NormalUrl};

use super::pages::{self, Articles};
use super::plan::Plan;
use crate::web::{Behaviour, WebServer};

/// The robots.txt every fourth host serves: `/private/` is off limits.
const ROBOTS_PRIVATE: &str = "User-agent: *\nDisallow: /private/\n";
/// Host kinds, for readable names.
const KINDS: [&str; 5] = ["news", "shop", "blog", "forum", "wiki"];
/// Items in each feed file; each resource has two feed files.
pub const FEED_ITEMS: usize = 20;
pub const FEEDS_PER_RESOURCE: usize = 2;

/// What the crawler should find at a URL of the sample web.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Expect {
    /// A page: fetched and archived as an `UPDATE` item.
    Page,
    /// 404: booked as gone, archived as a `DELETE` item.
    Gone,
    /// Disallowed by the host's robots.txt: never requested, no item.
    Disallowed,
}

/// A host of the sample web (its index in the plan's host list).
pub fn host_name(i: usize) -> String {
    let kind = KINDS[i % KINDS.len()];
    // Every seventh host is written with `www.`: its domain drops it (docs/formats.md).
    if i % 7 == 3 {
        format!("www.{kind}-{i:03}.sample")
    } else {
        format!("{kind}-{i:03}.sample")
    }
}

/// The index of a sample host from its name (`www.news-017.sample` → 17).
pub fn host_index(name: &str) -> Option<usize> {
    let stem = name.strip_suffix(".sample")?;
    let (_, digits) = stem.rsplit_once('-')?;
    let i: usize = digits.parse().ok()?;
    (host_name(i) == name).then_some(i)
}

/// The path number of a sample path (`/gone/p13.html`, `/item.php?id=3&page=1`): the
/// number in it that makes this path.
pub fn path_index(path: &str) -> Option<usize> {
    path.split(|c: char| !c.is_ascii_digit())
        .filter_map(|d| d.parse::<usize>().ok())
        .find(|&j| self::path(j) == path)
}

pub fn domain_of_host(i: usize) -> String {
    urls::domain_of(&host_name(i))
}

fn robots_disallows_private(host: usize) -> bool {
    host.is_multiple_of(4)
}

/// Path number `j` of any host: the same shapes everywhere.
pub fn path(j: usize) -> String {
    match j % 20 {
        7 => format!("/private/p{j}.html"),
        13 => format!("/gone/p{j}.html"),
        3 | 11 => format!("/item.php?id={j}&page=1"),
        _ => format!("/section-{}/page-{j}.html", j % 5),
    }
}

pub fn expect(host: usize, j: usize) -> Expect {
    match j % 20 {
        7 if robots_disallows_private(host) => Expect::Disallowed,
        13 => Expect::Gone,
        _ => Expect::Page,
    }
}

/// `http://host:port/path` of host `i`, path `j`.
pub fn page_url(plan: &Plan, i: usize, j: usize) -> String {
    format!("http://{}:{}{}", host_name(i), plan.web_port, path(j))
}

/// A partner feed resource of the sample (one per node, at most three).
#[derive(Debug, Clone)]
pub struct FeedResource {
    pub number: usize,
    pub name: String,
    pub class_id: u32,
    pub host: String,
    pub sitemap_path: String,
    pub feed_paths: Vec<String>,
}

pub fn feed_resources(plan: &Plan) -> Vec<FeedResource> {
    (1..=plan.feeds)
        .map(|n| FeedResource {
            number: n,
            name: format!("sample-feed-{n}"),
            // Below 70000000: a multi-hit class would go to its own store (Resources.MultiHitDir).
            class_id: 10_000_000 + n as u32,
            host: format!("feeds-{n}.sample"),
            sitemap_path: "/sitemap.txt".into(),
            feed_paths: (0..FEEDS_PER_RESOURCE)
                .map(|k| format!("/feed/{}.xml", ["a", "b", "c", "d"][k % 4]))
                .collect(),
        })
        .collect()
}

impl FeedResource {
    pub fn url(&self, plan: &Plan, path: &str) -> String {
        format!("http://{}:{}{path}", self.host, plan.web_port)
    }

    /// The sitemap: a plain list of the feed URLs, one a line.
    pub fn sitemap(&self, plan: &Plan) -> String {
        self.feed_paths
            .iter()
            .map(|p| format!("{}\n", self.url(plan, p)))
            .collect()
    }

    /// A feed file in the `channel/item` shape the sample's `open_xml_format` rules describe.
    pub fn feed(&self, k: usize) -> String {
        let mut s = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss>\n<channel>\n<title>sample</title>\n",
        );
        for i in 0..FEED_ITEMS {
            let id = format!("r{}-f{k}-{i}", self.number);
            s.push_str(&format!(
                "<item><id>{id}</id><title>Offer {i} of feed {k} &amp; resource {}</title><price>{}.50</price></item>\n",
                self.number,
                10 + i
            ));
        }
        s + "</channel>\n</rss>\n"
    }
}

/// Sets every answer of the sample web on `server`: robots.txt, pages (articles under their
/// host's template, [`pages`]), gone pages, feeds.
pub fn serve(plan: &Plan, server: &WebServer) -> Result<(), String> {
    let articles = Articles::load(plan)?;
    server.set_default_page(3000);
    for i in 0..plan.hosts {
        let host = host_name(i);
        if robots_disallows_private(i) {
            server.set_robots(&host, ROBOTS_PRIVATE);
        }
        for j in 0..plan.paths_per_host * plan.phases {
            match expect(i, j) {
                Expect::Gone => server.set(&host, &path(j), Behaviour::status(404)),
                Expect::Page => server.set(
                    &host,
                    &path(j),
                    Behaviour::html(&pages::page(i, j, articles.of(i, j))),
                ),
                Expect::Disallowed => {}
            }
        }
    }
    for r in feed_resources(plan) {
        server.set(&r.host, &r.sitemap_path, Behaviour::text(&r.sitemap(plan)));
        for (k, p) in r.feed_paths.iter().enumerate() {
            server.set(
                &r.host,
                p,
                Behaviour::fixed(200, "application/xml; charset=utf-8", r.feed(k)),
            );
        }
    }
    Ok(())
}

/// A small deterministic generator (xorshift64*), so that a plan always makes the same data.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A URL a reflog names, with what the crawler should find there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflogUrl {
    pub url: NormalUrl,
    pub host: usize,
    /// Its path number ([`path`]).
    pub path: usize,
    pub expect: Expect,
}

/// What a generated reflog holds.
#[derive(Debug, Clone, Default)]
pub struct Reflog {
    /// Lines after the header, malformed ones included.
    pub lines: u64,
    pub malformed: u64,
    /// Every distinct URL of its well-formed lines, by id.
    pub urls: BTreeMap<u64, ReflogUrl>,
}

/// Writes the reflog of phase `phase` (0-based) to `path`: `plan.reflog_lines` clicks on the
/// phase's own pages (no URL of another phase), one line in 500 malformed. Half the clicks
/// go to a tenth of the pages (popular pages get many hits). Timestamps fall within the hour
/// before `now` (seconds since the epoch, UTC).
pub fn write_reflog(plan: &Plan, phase: usize, now: i64, path: &Path) -> std::io::Result<Reflog> {
    let mut rng = Rng::new(plan.seed ^ (phase as u64 + 1).wrapping_mul(0x1234_5678_9ABC));
    let per_phase = plan.hosts * plan.paths_per_host;
    let first_path = phase * plan.paths_per_host;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        out,
        "batch_id\tpriority\ttimestamp\tpage_id\turl\thits\tupdatetag"
    )?;
    let mut reflog = Reflog::default();
    for line in 0..plan.reflog_lines {
        let pick = if rng.below(2) == 0 {
            rng.below(per_phase.div_ceil(10))
        } else {
            rng.below(per_phase)
        };
        let (host, j) = (pick % plan.hosts, first_path + pick / plan.hosts);
        let url = page_url(plan, host, j);
        let ts = now - rng.below(3600) as i64;
        let stamp = chrono::DateTime::from_timestamp(ts, 0)
            .map(|t| t.format("%Y%m%d%H%M%S").to_string())
            .unwrap_or_default();
        let hits = 1 + rng.below(3);
        let tag = if rng.below(100) == 0 { "v2" } else { "" };
        reflog.lines += 1;
        if line % 500 == 499 {
            reflog.malformed += 1;
            // The kinds of damage ad servers really send.
            match (line / 500) % 3 {
                0 => writeln!(
                    out,
                    "{line}\t1\t{stamp}\t{pick}\tftp://{}/x\t1\t",
                    host_name(host)
                )?,
                1 => writeln!(out, "{line}\t1\t2026-99-99\t{pick}\t{url}\t1\t")?,
                _ => writeln!(out, "{line}\t1\t{stamp}\t{pick}\t{url}")?,
            }
            continue;
        }
        writeln!(out, "{line}\t1\t{stamp}\t{pick}\t{url}\t{hits}\t{tag}")?;
        if let Ok(n) = urls::normalize(&url, urls::MAX_URL_LENGTH) {
            reflog.urls.entry(n.id).or_insert(ReflogUrl {
                url: n,
                host,
                path: j,
                expect: expect(host, j),
            });
        }
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(reflog)
}

/// The domains of the sample that are partner domains before the first cycle (one in five,
/// spread over the nodes in turn); the master assigns the others.
pub fn preassigned_domains(plan: &Plan) -> Vec<(String, u32)> {
    (0..plan.hosts)
        .filter(|i| i % 5 == 0)
        .enumerate()
        .map(|(k, i)| (domain_of_host(i), (k % plan.nodes) as u32 + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_paths_are_found_again_from_their_names() {
        for i in [0, 3, 17, 299] {
            assert_eq!(host_index(&host_name(i)), Some(i), "{}", host_name(i));
        }
        for j in [0, 3, 7, 11, 13, 19, 40, 123] {
            assert_eq!(path_index(&path(j)), Some(j), "{}", path(j));
        }
        assert_eq!(host_index("news-017.example"), None);
        assert_eq!(host_index("www.news-001.sample"), None); // host 1 has no www.
        assert_eq!(path_index("/section-1/page-2.html"), None);
        assert_eq!(path_index("/"), None);
    }
}
