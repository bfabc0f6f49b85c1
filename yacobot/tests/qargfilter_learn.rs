//! qargfilter through the real binary (docs/design.md#yacobot-qargfilter): a site whose articles
//! ignore `utm_source` and `sid` but whose lists change with `page`, every page with a footer
//! clock that changes at every request. After a crawl with MultiDoc, qargfilter scores the first
//! two ≥ 0.95 and `page` low, the import marks them, the next queue file's URLs lose them, the
//! old variants are merged into their canonical URL (hits added, one row left) and withdrawn
//! with a `DELETE` item each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::multidoc::{page, pages_by_id, FOOTER};
use common::{number, record, url_row, Site};
use focuser_formats::segment::Status;
use focuser_formats::urls;
use focuser_schema::models::{PathArgName, QueryArg, WithdrawReason};
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;

const HOST: &str = "news.test";
/// Articles, each with `VARIANTS` values of each ignored argument: 10 pairs each, `MinPairs`.
const ARTICLES: usize = 5;
const VARIANTS: usize = 2;
const LISTS: usize = 12;
/// Other pages of the site, crawled first: MultiDoc's template evidence is a domain's, and an
/// article on a large share of the site's pages would look like its template.
const OTHERS: usize = 24;

/// Requests answered so far: each answer's clock is its own.
static CLOCK: AtomicUsize = AtomicUsize::new(0);

/// Page `i` with a footer clock that differs at every answer (three answers per URL).
fn with_clock(i: usize) -> Behaviour {
    let (_, html) = page(i);
    let answers = (0..3)
        .map(|_| {
            let n = CLOCK.fetch_add(1, Ordering::Relaxed);
            let clock = format!(
                "{FOOTER} Server time 12:{:02}:{:02}, answer {n}.",
                n / 60 % 60,
                n % 60
            );
            Behaviour::html(&html.replace(FOOTER, &clock))
        })
        .collect();
    Behaviour::sequence(answers)
}

struct Web {
    server: WebServer,
}

impl Web {
    fn url(&self, path: &str) -> String {
        urls::normalize(&self.server.url(HOST, path), urls::MAX_URL_LENGTH)
            .unwrap()
            .url
    }

    /// Serves `path` (with its query) as page `i`.
    fn serve(&self, path: &str, i: usize) -> String {
        self.server.set(HOST, path, with_clock(i));
        self.url(path)
    }
}

/// The articles, their variants, the lists and the other pages, served; (canonical, variants)
/// per article, the lists' URLs, the others'.
type Served = (Vec<(String, Vec<String>)>, Vec<String>, Vec<String>);

fn serve(web: &Web) -> Served {
    web.server.set("*", "/robots.txt", Behaviour::status(404));
    let articles = (1..=ARTICLES)
        .map(|k| {
            let canonical = web.serve(&format!("/story?id={k}"), k);
            let mut variants = Vec::new();
            for j in 0..VARIANTS {
                variants.push(web.serve(&format!("/story?id={k}&utm_source=s{j}"), k));
                variants.push(web.serve(&format!("/story?sid=x{k}{j}&id={k}"), k));
            }
            (canonical, variants)
        })
        .collect();
    let lists = (1..=LISTS)
        .map(|p| web.serve(&format!("/list?page={p}"), 100 + p))
        .collect();
    let others = (0..OTHERS)
        .map(|i| web.serve(&format!("/about/{i}.html"), 200 + i))
        .collect();
    (articles, lists, others)
}

/// Rewrites the site's config: its first text and `extra`.
fn configure(site: &Site, base: &str, extra: &str) {
    std::fs::write(&site.config, format!("{base}{extra}")).unwrap();
}

fn score(db: &TestDb, url: &str, name: &str) -> QueryArg {
    QueryArg::find(&mut db.conn(), urls::path_hash(url), name)
        .unwrap_or_else(|e| panic!("no score for {name}: {e}"))
}

#[test]
fn arguments_that_do_not_change_the_main_text_are_learned_and_their_variants_merged() {
    let db = TestDb::new();
    let web = Web {
        server: WebServer::start().unwrap(),
    };
    let site = Site::with(
        db.url(),
        &format!(
            "Fetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\nFetch.HostDelay = 0\n\
             Fetch.ConnectTimeout = 2\nMultiDoc.Batch = 8\nQargfilter.ProbeShare = 0\n",
            web.server.resolve().join(" ")
        ),
    );
    let base = std::fs::read_to_string(&site.config).unwrap();
    let (articles, lists, others) = serve(&web);
    let mut all: Vec<&String> = Vec::new();
    for (c, v) in &articles {
        all.push(c);
        all.extend(v);
    }

    // 1. The crawl, and MultiDoc's analysis of every page: the site's other pages first.
    configure(&site, &base, "MultiDoc.Enable = 1\n");
    let first: Vec<_> = others
        .iter()
        .chain(&lists)
        .map(|u| record(u, 1, ""))
        .collect();
    site.queue("m1-0000000000.q", &first);
    site.once();
    let first: Vec<_> = all.iter().map(|u| record(u, 1, "")).collect();
    site.queue("m1-0000000001.q", &first);
    site.once();
    let analysed = pages_by_id(&db);
    all.extend(lists.iter().chain(&others));
    assert_eq!(analysed.len(), all.len(), "{}", site.log());
    // The clock: every body differs, the main text of an article's variants does not.
    for (canonical, variants) in &articles {
        let main = |u: &str| analysed[&urls::url_id(u)].main_md5.clone().unwrap();
        let body = |u: &str| url_row(&db, u).unwrap().content_md5.unwrap();
        let mains: BTreeSet<String> = variants.iter().map(|v| main(v)).collect();
        assert_eq!(mains, BTreeSet::from([main(canonical)]), "{canonical}");
        let bodies: BTreeSet<String> = variants.iter().map(|v| body(v)).collect();
        assert_eq!(bodies.len(), variants.len(), "the clock changes every body");
    }

    // 2. The ad servers see the variants again.
    configure(&site, &base, "Qargfilter.Enable = 0\nCrawl.Enable = 0\n");
    let again: Vec<_> = articles
        .iter()
        .flat_map(|(_, v)| v.iter().map(|u| record(u, 2, "")))
        .collect();
    site.queue("m1-0000000002.q", &again);
    site.once();

    // 3. qargfilter's pass (no crawl), then a queue file with the learned arguments.
    configure(&site, &base, "Crawl.Enable = 0\n");
    let story9 = web.serve("/story?id=9", 9);
    site.queue(
        "m1-0000000003.q",
        &[
            record(&web.url("/story?id=1&utm_source=new&sid=new"), 5, ""),
            record(&web.url("/story?utm_source=z&id=9"), 1, ""),
        ],
    );
    site.once();
    let story = &articles[0].0;
    for name in ["utm_source", "sid"] {
        let q = score(&db, story, name);
        assert!(q.score >= 0.95, "{q:?}");
        assert_eq!((q.pairs, q.equal_pairs), (10, 10), "{q:?}");
    }
    let p = score(&db, &lists[0], "page");
    assert!(p.score < 0.1, "{p:?}");
    assert_eq!((p.pairs, p.equal_pairs), (LISTS as u32 - 1, 0));
    // id changes the article: its pairs are the articles side by side, alone or with the same
    // utm_source.
    let id = score(&db, story, "id");
    assert!(id.score < 0.1, "{id:?}");
    assert_eq!(id.equal_pairs, 0);
    let rules: BTreeMap<String, bool> =
        PathArgName::for_path(&mut db.conn(), urls::path_hash(story))
            .unwrap()
            .into_iter()
            .map(|r| (r.name, r.significant))
            .collect();
    assert_eq!(
        rules,
        BTreeMap::from([
            ("id".to_string(), true),
            ("sid".to_string(), false),
            ("utm_source".to_string(), false)
        ])
    );
    assert!(
        PathArgName::find(&mut db.conn(), urls::path_hash(&lists[0]), "page")
            .unwrap()
            .significant
    );
    // The queue file's URLs lost them; the variants were merged, their hits added.
    let hits = |u: &str| url_row(&db, u).unwrap().hits;
    assert_eq!(hits(&articles[0].0), (VARIANTS * 2 * 2 + 5) as u32);
    assert_eq!(hits(&articles[1].0), (VARIANTS * 2 * 2) as u32);
    assert_eq!(hits(&story9), 1);
    for (_, variants) in &articles {
        for v in variants {
            let row = url_row(&db, v).unwrap();
            assert_eq!(row.hits, 0, "{v}");
        }
    }
    let marked = number(
        &db,
        &format!(
            "SELECT COUNT(*) AS n FROM url WHERE withdraw = {}",
            WithdrawReason::Merged.code()
        ),
    );
    assert_eq!(marked, (ARTICLES * VARIANTS * 2) as i64);
    // The operator's questions (docs/operations.md) answer the same.
    let answers = common::docs_sql(&db, "What it learned, in SQL:");
    assert!(
        answers[0].contains("\tsid\t") && answers[0].contains("\tutm_source\t"),
        "{}",
        answers[0]
    );
    assert!(
        answers[1].contains("\tpage\t") && answers[1].contains("\tid\t"),
        "{}",
        answers[1]
    );
    assert_eq!(answers[3].lines().nth(1), Some(marked.to_string().as_str()));
    assert_eq!(number(&db, "SELECT COUNT(*) AS n FROM url WHERE url LIKE '%utm_source=new%' OR url LIKE '%utm_source=z%'"), 0);

    // 4. The crawl withdraws the variants downstream, MultiDoc drops their analyses.
    configure(&site, &base, "MultiDoc.Enable = 1\n");
    site.once();
    let variants: BTreeSet<String> = articles
        .iter()
        .flat_map(|(_, v)| v.iter().map(|u| urls::doc_id(urls::url_id(u))))
        .collect();
    let mut deletes: BTreeMap<String, usize> = BTreeMap::new();
    for i in site.archive() {
        if i.status == Status::Delete {
            *deletes.entry(i.doc_id).or_default() += 1;
        }
    }
    assert_eq!(deletes.keys().cloned().collect::<BTreeSet<_>>(), variants);
    assert!(deletes.values().all(|n| *n == 1), "{deletes:?}");
    let left: BTreeSet<String> = common::multidoc::pages(&db)
        .into_iter()
        .map(|p| urls::doc_id(p.id))
        .collect();
    assert!(
        left.is_disjoint(&variants),
        "analyses of merged variants left"
    );
    let story_rows = number(
        &db,
        &format!(
            "SELECT COUNT(*) AS n FROM url WHERE path_hash = {}",
            urls::path_hash(story)
        ),
    );
    assert_eq!(story_rows, ARTICLES as i64 + 1, "one row per article");
    for (canonical, _) in &articles {
        assert!(url_row(&db, canonical).unwrap().last_downloaded.is_some());
    }
}
