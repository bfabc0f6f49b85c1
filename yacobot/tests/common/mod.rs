//! A yacobot in a temporary rootdir, against a fresh database.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use diesel::RunQueryDsl;
use focuser_formats::queue::{QueueHeader, QueueRecord, QueueWriter};
use focuser_formats::urls;
use focuser_schema::models::Url;
use focuser_tests::wait_for;

pub const T0: i64 = 1_700_000_000;

pub struct Site {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Site {
    /// A rootdir with a yacobot.cf (`extra` appended) for node `yb1` with one inbox, of
    /// master `m1`, against `db`, fetching from the mirror tree `mirror/` ([`Site::page`]).
    pub fn new(db: &str, extra: &str) -> Site {
        Site::with(db, &format!("Fetch.Backend = mirror\n{extra}"))
    }

    /// The same with the default fetcher (libcurl): `extra` says where to.
    pub fn with(db: &str, extra: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("yacobot.cf");
        std::fs::write(
            &config,
            format!(
                "rootdir = {}\ndatabase = {db}\nnode = yb1\nlogfile = yacobot.log\npidfile = yacobot.pid\n\
                 Loader.Inbox.m1 = inbox/m1\nLoader.Interval = 1\nQargfilter.Interval = 1\n\
                 Crawl.Idle = 1\n{extra}",
                dir.path().display()
            ),
        )
        .unwrap();
        Site { dir, config }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn inbox(&self) -> PathBuf {
        self.root().join("inbox/m1")
    }

    /// Publishes a queue file of master m1 in the inbox (written aside, then renamed).
    pub fn queue(&self, name: &str, records: &[QueueRecord]) -> PathBuf {
        let bytes = queue_bytes("m1", records);
        self.drop_file(name, &bytes)
    }

    /// Puts `bytes` in the inbox as `name`, atomically.
    pub fn drop_file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        std::fs::create_dir_all(self.inbox()).unwrap();
        let tmp = self.inbox().join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        let path = self.inbox().join(name);
        std::fs::rename(&tmp, &path).unwrap();
        path
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_yacobot"));
        cmd.arg("-c").arg(&self.config).env_remove("DATABASE_URL");
        cmd
    }

    /// `yacobot --check-config`, which must refuse the config (`what` names it if not): what
    /// it said.
    pub fn config_refused(&self, what: &str) -> String {
        let out = self.command().arg("--check-config").output().unwrap();
        assert!(!out.status.success(), "{what}: accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// `yacobot --once`, which must succeed.
    pub fn once(&self) -> Output {
        let out = self.command().arg("--once").output().unwrap();
        assert!(
            out.status.success(),
            "yacobot --once failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        out
    }

    /// The daemon in the foreground.
    pub fn spawn(&self) -> Daemon {
        let child = self
            .command()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Daemon { child }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root().join("yacobot.log")).unwrap_or_default()
    }

    /// Names of the files in `inbox/m1/<sub>` (sub "" for the inbox itself).
    pub fn files(&self, sub: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.inbox().join(sub))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// A running yacobot, killed if the test ends without stopping it.
pub struct Daemon {
    pub child: Child,
}

impl Daemon {
    pub fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(self.child.id() as i32)
    }

    pub fn signal(&self, s: nix::sys::signal::Signal) {
        nix::sys::signal::kill(self.pid(), s).unwrap();
    }

    /// SIGTERM, and the exit status must be 0.
    pub fn stop(mut self) {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A queue record for `url` (normalised here) with `hits`.
pub fn record(url: &str, hits: u64, tag: &str) -> QueueRecord {
    let n = urls::normalize(url, urls::MAX_URL_LENGTH).unwrap();
    QueueRecord {
        id: n.id,
        url: n.url,
        domain: n.domain,
        timestamp: T0,
        hits,
        updatetag: tag.into(),
        new: true,
    }
}

/// The bytes of a queue file of `master` holding `records` (sorted by id, as the master
/// writes them).
pub fn queue_bytes(master: &str, records: &[QueueRecord]) -> Vec<u8> {
    let mut sorted = records.to_vec();
    sorted.sort_by_key(|r| r.id);
    let header = QueueHeader {
        master: master.into(),
        cycle: 1,
        node: 1,
        time: T0,
    };
    let mut w = QueueWriter::new(Vec::new(), &header).unwrap();
    for r in &sorted {
        w.write(r).unwrap();
    }
    w.finish().unwrap().0
}

/// The stored row of `url` (normalised, as is).
pub fn url_row(db: &focuser_tests::TestDb, url: &str) -> Option<Url> {
    Url::find(&mut db.conn(), urls::url_id(url)).ok()
}

/// Runs SQL as the operator would.
pub fn sql(db: &focuser_tests::TestDb, query: &str) {
    diesel::sql_query(query).execute(&mut db.conn()).unwrap();
}

/// Starts one `--once` crawler per site so that they claim at the same moment: the test holds
/// `url` locked until every crawler's claim query waits on it. Without this, on a loaded
/// machine one crawler may finish every URL before the other has started.
pub fn crawl_together(db: &focuser_tests::TestDb, sites: &[&Site]) -> Vec<std::process::Child> {
    let mut lock = db.conn();
    diesel::sql_query("LOCK TABLES url WRITE")
        .execute(&mut lock)
        .unwrap();
    let children: Vec<_> = sites
        .iter()
        .map(|s| s.command().arg("--once").spawn().unwrap())
        .collect();
    let waiting = format!(
        "SELECT COUNT(*) AS n FROM information_schema.processlist \
         WHERE db = '{}' AND state LIKE 'Waiting for table%' AND info LIKE '%SKIP LOCKED%'",
        db.name()
    );
    wait_for(
        "every crawler waiting to claim",
        Duration::from_secs(60),
        || number(db, &waiting) == sites.len() as i64,
    );
    diesel::sql_query("UNLOCK TABLES")
        .execute(&mut lock)
        .unwrap();
    children
}

/// One number from SQL.
pub fn number(db: &focuser_tests::TestDb, query: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(query)
        .get_result::<N>(&mut db.conn())
        .unwrap()
        .n
}

/// An item of an archive, as a test looks at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedItem {
    pub status: focuser_formats::segment::Status,
    pub doc_id: String,
    pub url: String,
    pub content: String,
}

/// Every durable item of the archive in `dir`, in order.
pub fn archive_items(dir: &Path) -> Vec<ArchivedItem> {
    use focuser_formats::segment::{Cursor, Position};
    let mut cursor = Cursor::new(dir, Position::START, None);
    let mut out = Vec::new();
    while let Some(s) = cursor.next().unwrap() {
        out.push(ArchivedItem {
            status: s.item.status,
            doc_id: String::from_utf8(s.item.doc_id).unwrap(),
            url: String::from_utf8(s.item.url).unwrap(),
            content: String::from_utf8_lossy(&s.item.content).into_owned(),
        });
    }
    out
}

impl Site {
    /// Puts a page in the mirror the `mirror` backend reads (`mirror/<host>/<path>`).
    pub fn page(&self, rel: &str, content: &str) {
        let p = self.root().join("mirror").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn archive(&self) -> Vec<ArchivedItem> {
        archive_items(&self.root().join("segments"))
    }
}

/// A URL in `url`, due now with `hits` (as the loader leaves a new one).
pub fn due_url(db: &focuser_tests::TestDb, url: &str, hits: u32, prio: u64) -> u64 {
    let n = urls::normalize(url, urls::MAX_URL_LENGTH).unwrap();
    let now = chrono::Utc::now().naive_utc() - chrono::TimeDelta::seconds(5);
    focuser_schema::models::NewUrl {
        id: n.id,
        url: &n.url,
        domain: &n.domain,
        path_hash: urls::path_hash(&n.url),
        hits,
        download_prio: prio,
        updatetag: "",
        first_seen: now,
        last_hit: now,
        next_indexed: now,
    }
    .insert(&mut db.conn())
    .unwrap();
    n.id
}
pub mod bindings;
pub mod customer;
pub mod feeds;
pub mod multidoc;
pub mod paths;
pub mod reader;
pub mod tools;
pub mod withdraw;

/// Runs each statement of the first ```sql block after `heading` in docs/operations.md with the
/// mariadb client; their outputs (a header line, then tab-separated rows).
pub fn docs_sql(db: &focuser_tests::TestDb, heading: &str) -> Vec<String> {
    let doc =
        std::fs::read_to_string(focuser_tests::repo_root().join("docs/operations.md")).unwrap();
    let from = doc.find(heading).unwrap();
    let block = &doc[from..];
    let block = &block[block.find("```sql\n").unwrap() + 7..];
    let block = &block[..block.find("```").unwrap()];
    let sql: String = block
        .lines()
        .filter(|l| !l.starts_with("--"))
        .map(|l| format!("{l}\n"))
        .collect();
    sql.split(';')
        .filter(|q| !q.trim().is_empty())
        .map(|q| {
            let out = db
                .client()
                .args(["--batch", "--raw", "-e", q])
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{q}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        })
        .collect()
}
