//! SIGUSR2 as an operator sends it: every key a reload applies is in the running config the
//! workers take at each step (the status page shows it; the loader's keys are seen at work),
//! and a restart-only key is named in the log and keeps its running value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{record, Site};
use focuser_daemon::config::{Key, Reload};
use focuser_daemon::Config;
use focuser_formats::queue::{QueueHeader, QueueWriter};
use focuser_tests::TestDb;
use focuser_tests::{free_port, get};
use focuser_yacobot::YacobotConfig;
use nix::sys::signal::Signal;

/// Every reloadable key of the site's config with a new value (`Site::with`'s base keys are
/// replaced, the others added).
const REPLACED: &[(&str, &str)] = &[
    ("node = yb1", "node = yb2"),
    ("Loader.Inbox.m1 = inbox/m1", "Loader.Inbox.m1 = inbox/m1b"),
    ("Loader.Interval = 1", "Loader.Interval = 2"),
    ("Qargfilter.Interval = 1", "Qargfilter.Interval = 2"),
    ("Crawl.Idle = 1", "Crawl.Idle = 2"),
];
const ADDED: &str = "node_id = 2\nLoader.Batch = 500\nLoader.SortBuffer = 1000\n\
    Loader.KeepApplied = 1\nQargfilter.Overlap = 1800\nQargfilter.PassInterval = 1800\n\
    Qargfilter.Batch = 5000\nQargfilter.MinPairs = 20\nQargfilter.ProbeShare = 0.01\n\
    Qargfilter.ProbesPerArg = 5\nCrawl.ClaimBatch = 100\n\
    Crawl.ClaimTtl = 300\nCrawl.RetryLater = 60\nCrawl.BookBatch = 64\nCrawl.BookMs = 100\n\
    Crawl.PerDomain = 4\nFetch.Connections = 8\nFetch.PerHost = 2\nFetch.HostDelay = 0.5\n\
    Fetch.MaxRedirects = 3\nFetch.ConnectTimeout = 5\nFetch.Timeout = 30\n\
    Fetch.MaxBytes = 1048576\nFetch.AllowedTypes = text/html\nFetch.UserAgent = yacobot-test/2\n\
    Fetch.RobotsTtl = 3600\nFetch.RobotsRetry = 60\nFetch.RobotsCache = 1000\nFetch.Retries = 2\n\
    Fetch.RetryDelay = 1\nFetch.MaxRetryAfter = 60\nFetch.KeepAlive = 16\nFetch.Pending = 256\n\
    Fetch.Resolve = example.org:80:127.0.0.1\nFetch.AllowPrivate = 127.0.0.1\n\
    Fetch.Proxy = http://127.0.0.1:3128\nFetch.NoProxy = example.org\n\
    Url.DictFile = dict/current\nUrl.DictPeriod = 3\nUrl.DictAge = 6\nUrl.ReindexPeriod = 3\n\
    Url.SteadyMin = 2\nUrl.SteadyMax = 30\nUrl.SteadyGrow = 1.5\nUrl.SteadyShrink = 0.5\n\
    Url.ExpireDays = 45\n\
    Resources.ScanInterval = 30\nResources.Parallel = 2\nResources.ClaimTtl = 1800\n\
    Resources.MinKeptPercent = 10\nResources.MaxFailedPercent = 50\nResources.WithdrawBatch = 50\n\
    Resources.HostDelay = feeds.example:0.1\nResources.PerHost = feeds.example:2\n\
    Resources.LocationFile = locations.txt\nResources.LocationLabel = place\nResources.LargeItems = 10\n\
    Resources.CustomerDatabase = mysql://cust:secret@127.0.0.1:1/cust\n\
    MultiDoc.Model = model/other.nb\nMultiDoc.Batch = 50\nMultiDoc.MaxBytes = 8388608\n\
    MultiDoc.MaxFingerprints = 5000\nMultiDoc.ExpireDays = 10\nPathBinder.Interval = 60\n\
    PathBinder.MinUrls = 5\nPathBinder.Depth = 3\nHosts.Enable = 0\nHosts.RobotsBytes = 1000\n\
    Hosts.Pending = 500\nUrl.ExcludeFile = exclude.conf\nLoader.Primary = m1\n\
    Loader.FailoverAfter = 300\n";

/// A queue file of master m1 for node `node`, published in `dir`.
fn queue_for(dir: &std::path::Path, name: &str, node: u32) {
    let header = QueueHeader {
        master: "m1".into(),
        cycle: 1,
        node,
        time: common::T0,
    };
    let mut w = QueueWriter::new(Vec::new(), &header).unwrap();
    w.write(&record("http://w.ru/0", 1, "")).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, w.finish().unwrap().0).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn names(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_reloadable_key_takes_effect_and_a_restart_only_one_waits() {
    let db = TestDb::new();
    let port = free_port();
    let site = Site::new(db.url(), &format!("status_listen = {port}\n"));
    let old = Config::<YacobotConfig>::load(&site.config, None).unwrap();
    let daemon = site.spawn();
    focuser_tests::wait_for("the start", Duration::from_secs(30), || {
        site.log().contains("yacobot yb1: workers")
    });

    let mut text = std::fs::read_to_string(&site.config).unwrap();
    for (from, to) in REPLACED {
        assert!(text.contains(from), "{from:?} not in {text}");
        text = text.replace(from, to);
    }
    std::fs::write(&site.config, format!("{text}{ADDED}")).unwrap();
    std::fs::write(site.root().join("exclude.conf"), "domain elsewhere.test\n").unwrap();
    std::fs::write(site.root().join("locations.txt"), "1 北京\n").unwrap();
    let new = Config::<YacobotConfig>::load(&site.config, None).unwrap();
    let new_keys = new.keys();
    let unchanged: Vec<String> = old
        .keys()
        .into_iter()
        .filter(|k| k.reload == Reload::Live && !Config::<YacobotConfig>::is_common(&k.name))
        .filter(|k| new_keys.contains(k))
        .map(|k| k.name)
        .collect();
    assert!(
        unchanged.is_empty(),
        "this test leaves {unchanged:?} as they were"
    );

    daemon.signal(Signal::SIGUSR2);
    focuser_tests::wait_for("the reload", Duration::from_secs(10), || {
        site.log()
            .contains("changed keys that take effect only at restart (running values kept): node\n")
    });
    let body = get(port, "/status.json");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let running: Vec<Key> = serde_json::from_value(json["config"].clone()).unwrap();
    for k in &new_keys {
        let on_page = running.iter().find(|r| r.name == k.name).unwrap();
        match k.reload {
            Reload::Live => assert_eq!(on_page.value, k.value, "{}", k.name),
            Reload::Restart => assert_eq!(on_page.reload, Reload::Restart, "{}", k.name),
        }
    }
    let node = running.iter().find(|k| k.name == "node").unwrap();
    assert_eq!(node.value, "yb1", "the running node stays");

    // The loader at work with them: the new inbox is read, a file for node 1 is now for
    // another node (node_id = 2), one for node 2 is applied and kept (Loader.KeepApplied).
    let inbox = site.root().join("inbox/m1b");
    queue_for(&inbox, "m1-0000000001.q", 1);
    focuser_tests::wait_for(
        "the file for another node set aside",
        Duration::from_secs(30),
        || names(&inbox.join("bad")).contains(&"m1-0000000001.q".to_string()),
    );
    queue_for(&inbox, "m1-0000000002.q", 2);
    focuser_tests::wait_for(
        "the file for this node applied and kept",
        Duration::from_secs(30),
        || names(&inbox.join("done")) == ["m1-0000000002.q"],
    );
    daemon.stop();
}
