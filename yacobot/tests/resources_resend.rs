//! Rebuilding a receiver of the resources store (`reader resend` with `Store.SnapshotDir`,
//! docs/operations.md "Rebuilding a receiver") through the real binaries: yacobot writes the
//! live `vr_data` items again for the reader, whose store no longer holds them; a feed run
//! during the resend, kill -9 of yacobot and of the reader, bad asks and a bad snapshot.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::feeds::{ask, items, rules, serve_feed, site, It};
use common::reader::{pair, Reader};
use common::withdraw::fed;
use common::{archive_items, Site};
use diesel::connection::SimpleConnection;
use focuser_formats::segment::{list_segments, Cursor, Position, Status};
use focuser_schema::models::{DataStatus, VrData};
use focuser_tests::web::WebServer;
use focuser_tests::{wait_for, TestDb};

const SEND_KEYS: &str = "Store.CheckInterval = 1\nSend.ResendRate = 40\n";

struct Rig {
    db: TestDb,
    server: WebServer,
    site: Site,
    ids: Vec<u32>,
    recv: Reader,
    sender: Reader,
    address: String,
}

/// Three fed resources, one run again with changes and deletions, everything shipped to a
/// receiver, and the store's first segments deleted by retention once shipped.
fn rig() -> Rig {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    rules(&mut db.conn());
    let site = site(&db, &server, "Segment.MaxItems = 25\n");
    let ids: Vec<u32> = ["ra", "rb", "rc"]
        .iter()
        .map(|n| fed(&db, &server, &site, n, 50))
        .collect();
    serve_feed(&server, "rb.test", "/feed.xml", &changed("rb", 40, 10));
    ask(&mut db.conn(), ids[1]);
    site.once();
    let root = site.root();
    let keys = format!(
        "{SEND_KEYS}Store.SnapshotDir = {}/segments-vr/snapshots\n",
        root.display()
    );
    let (recv, sender) = pair(root, "receiver", "sender", "segments-vr", &keys);
    let cf = std::fs::read_to_string(root.join("sender.cf")).unwrap();
    let address = cf
        .lines()
        .find_map(|l| l.strip_prefix("Index.0.Addresses = "))
        .unwrap()
        .to_string();
    let rig = Rig {
        db,
        server,
        site,
        ids,
        recv,
        sender,
        address,
    };
    wait_for("everything shipped", Duration::from_secs(60), || {
        rig.received_live() == rig.live()
    });
    let store = rig.site.root().join("segments-vr");
    wait_for("shipped segments deleted", Duration::from_secs(30), || {
        list_segments(&store).unwrap().first() > Some(&1)
    });
    rig
}

/// `n` items of `prefix`, the first `changed` with a new title.
fn changed(prefix: &str, n: usize, changed: usize) -> Vec<It> {
    let mut v = items(prefix, n);
    for it in v.iter_mut().take(changed) {
        it.1 = format!("{} (new)", it.1);
    }
    v
}

/// Per live document, its content, as a store holds them (its last item an UPDATE).
fn live_of(dir: &Path) -> BTreeMap<String, String> {
    let mut last = BTreeMap::new();
    for it in archive_items(dir) {
        last.insert(it.doc_id, (it.status, it.content));
    }
    last.into_iter()
        .filter(|(_, (s, _))| *s == Status::Update)
        .map(|(d, (_, c))| (d, c))
        .collect()
}

impl Rig {
    fn root(&self) -> &Path {
        self.site.root()
    }

    fn received(&self) -> PathBuf {
        self.root().join("receiver/received")
    }

    fn received_live(&self) -> BTreeMap<String, String> {
        live_of(&self.received())
    }

    /// The live `vr_data` items: doc id and content.
    fn live(&self) -> BTreeMap<String, String> {
        let c = &mut self.db.conn();
        self.ids
            .iter()
            .flat_map(|&id| VrData::for_resource(c, id).unwrap())
            .filter(|d| d.data_status == DataStatus::Live)
            .map(|d| (d.doc_id, d.content.unwrap_or_default()))
            .collect()
    }

    fn snapshots(&self) -> PathBuf {
        self.root().join("segments-vr/snapshots")
    }

    fn request(&self) -> PathBuf {
        let safe = self.address.replace(':', "_");
        self.root()
            .join(format!("sender/state/resend_Index.0_0_{safe}.req"))
    }

    /// The receiver's store wiped while it is down.
    fn wipe(&mut self) {
        let _ = self.recv.child.kill();
        let _ = self.recv.child.wait();
        std::fs::remove_dir_all(self.received()).unwrap();
        self.recv = Reader::start(&self.root().join("receiver.cf"), &["--recv"]);
    }

    fn resend(&self) -> Output {
        let bin = focuser_tests::pipeline::built_binaries()
            .unwrap()
            .join("reader");
        let out = std::process::Command::new(bin)
            .arg("-c")
            .arg(self.root().join("sender.cf"))
            .args(["resend", "--group", "Index.0", "--address", &self.address])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The snapshot folders yacobot published.
    fn published(&self) -> Vec<String> {
        std::fs::read_dir(self.snapshots())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".tmp") && !n.ends_with(".bad"))
            .collect()
    }

    fn log(&self, who: &str) -> String {
        std::fs::read_to_string(self.root().join(who)).unwrap_or_default()
    }

    /// Every item the receiver holds came once, and one stream (the resend's) brought
    /// exactly `n` items.
    fn assert_once(&self, n: usize) {
        let mut seen = HashSet::new();
        let mut cursor = Cursor::new(&self.received(), Position::START, None);
        let mut per_stream: BTreeMap<u32, usize> = BTreeMap::new();
        while let Some(s) = cursor.next().unwrap() {
            let o = s.item.origin;
            assert!(
                seen.insert((o.stream, o.file_id, o.item_idx)),
                "item {}:{} of stream {} stored twice",
                o.file_id,
                o.item_idx,
                o.stream
            );
            *per_stream.entry(o.stream).or_default() += 1;
        }
        assert!(per_stream.values().any(|&v| v == n), "{per_stream:?}, {n}");
    }
}

#[test]
fn resources_resend_gives_a_wiped_receiver_exactly_the_live_items_while_a_run_changes_some() {
    let mut r = rig();
    let _yacobot = r.site.spawn();
    r.wipe();
    let before = r.live();
    r.resend();
    wait_for("the snapshot written", Duration::from_secs(30), || {
        !r.published().is_empty()
    });
    // A run during the resend: some items change, some leave the feed, shipped meanwhile.
    serve_feed(&r.server, "ra.test", "/feed.xml", &changed("ra", 45, 20));
    ask(&mut r.db.conn(), r.ids[0]);
    wait_for("the run of ra done", Duration::from_secs(60), || {
        r.live().len() == before.len() - 5
    });
    wait_for("the resend done", Duration::from_secs(60), || {
        !r.request().exists()
    });
    let want = r.live();
    assert_ne!(want, before);
    wait_for(
        "the receiver holds the live set",
        Duration::from_secs(30),
        || r.received_live() == want,
    );
    // The items the run changed came by the normal stream, the others by the resend.
    let unchanged = before
        .iter()
        .filter(|(d, c)| want.get(*d) == Some(*c))
        .count();
    let sent = r.log("sender/logs/reader.log");
    assert!(sent.contains("done: "), "{sent}");
    let n: usize = sent
        .lines()
        .find_map(|l| l.split(" done: ").nth(1))
        .and_then(|t| t.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(n >= unchanged && n <= before.len(), "{n} {unchanged}");
    r.assert_once(n);
    assert!(
        r.published().is_empty() && std::fs::read_dir(r.snapshots()).unwrap().count() == 0,
        "the snapshot stays"
    );
    assert!(
        r.site.log().contains("written: 140 live items"),
        "{}",
        r.site.log()
    );
}

#[test]
fn resources_resend_survives_kill_9_of_yacobot_and_of_the_reader_nothing_twice() {
    let mut r = rig();
    r.wipe();
    // yacobot killed while its snapshot waits for the rows: the folder is begun, not done.
    let mut lock = r.db.conn();
    lock.batch_execute("LOCK TABLES vr_data WRITE").unwrap();
    let yacobot = r.site.spawn();
    r.resend();
    let tmp = |r: &Rig| {
        std::fs::read_dir(r.snapshots())
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"))
    };
    wait_for("the snapshot begun", Duration::from_secs(30), || tmp(&r));
    drop(yacobot);
    lock.batch_execute("UNLOCK TABLES").unwrap();
    assert!(r.published().is_empty());
    let _yacobot = r.site.spawn();
    wait_for("the snapshot written", Duration::from_secs(30), || {
        !r.published().is_empty()
    });
    assert!(!tmp(&r));
    // The reader killed once some batches are acknowledged and saved.
    let state = r.root().join("sender/state");
    wait_for("a resend position saved", Duration::from_secs(30), || {
        std::fs::read_dir(&state).unwrap().any(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.starts_with("resend_") && n.ends_with(".dat")
        })
    });
    let want = r.live();
    assert!(r.received_live().len() < want.len(), "over before the kill");
    r.sender.kill9_and_restart(&[]);
    wait_for("the resend done", Duration::from_secs(60), || {
        !r.request().exists()
    });
    wait_for(
        "the receiver holds the live set",
        Duration::from_secs(30),
        || r.received_live() == want,
    );
    r.assert_once(want.len());
}

#[test]
fn resources_bad_asks_and_a_bad_snapshot_are_refused_counted_and_nothing_is_lost() {
    let mut r = rig();
    r.wipe();
    // yacobot down: the reader asks, and a snapshot that is not whole is found there.
    r.resend();
    let ask = || {
        std::fs::read_dir(r.snapshots())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|n| n.ends_with(".ask"))
    };
    wait_for("the ask", Duration::from_secs(30), || ask().is_some());
    let name = ask().unwrap().trim_end_matches(".ask").to_string();
    let fake = r.snapshots().join(&name);
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("snapshot.txt"), "items = 5\nposition = 1:1\n").unwrap();
    let bad_request = r.request().with_extension("req.bad");
    wait_for("the snapshot refused", Duration::from_secs(30), || {
        bad_request.exists() && !r.request().exists()
    });
    assert!(r.snapshots().join(format!("{name}.bad")).is_dir());
    let sent = r.log("sender/logs/reader.log");
    assert!(
        sent.contains("the owner's snapshot is not whole")
            && sent.contains("0 items, its manifest says 5"),
        "{sent}"
    );
    // Bad asks, as yacobot finds them.
    std::fs::write(r.snapshots().join("a b.ask"), "stream = x\nreceiver = y\n").unwrap();
    std::fs::write(
        r.snapshots().join("garbage.ask"),
        "stream = x\nhost = /etc\n",
    )
    .unwrap();
    std::fs::write(r.snapshots().join("long.ask"), "#".repeat(5000)).unwrap();
    let _yacobot = r.site.spawn();
    wait_for("the bad asks refused", Duration::from_secs(30), || {
        ["a b", "garbage", "long"]
            .iter()
            .all(|n| r.snapshots().join(format!("{n}.ask.bad")).exists())
    });
    let log = r.site.log();
    assert!(log.contains("not a snapshot name"), "{log}");
    assert!(log.contains("line 2: unknown key \"host\""), "{log}");
    assert!(log.contains("longer than 1024 bytes"), "{log}");
    // Nothing lost: the normal stream went on, and a new request rebuilds the receiver.
    std::fs::remove_file(&bad_request).unwrap();
    r.resend();
    wait_for("the resend done", Duration::from_secs(60), || {
        !r.request().exists()
    });
    let want = r.live();
    wait_for(
        "the receiver holds the live set",
        Duration::from_secs(30),
        || r.received_live() == want,
    );
}
