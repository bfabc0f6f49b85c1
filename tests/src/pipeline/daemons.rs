//! The daemons of a run: where each one lives, its config file (made from `conf/`), and the
//! shipped init script `conf/init.d/focuser` that starts, signals and stops it, exactly as
//! an operator's `/etc/init.d/focuser-NAME` would (its settings come from the environment
//! instead of `/etc/default/focuser-NAME`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::configs::{render, Set};
use super::plan::Plan;

/// The master's name: its queue files are `master1-<cycle>.q`.
pub const MASTER_NAME: &str = "master1";

/// The ad-server receiver's name (`Plan::bindings`).
pub const ADSERVER: &str = "adserver1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Master,
    Yacobot,
    /// A node's reader of the crawl archive; it also ships the master's queue files.
    Sender,
    /// A node's reader of the resources' store (`Plan::feeds_on`).
    FeedSender,
    /// A node's reader of the bindings store (`Plan::bindings`), shipping to the ad server.
    BindingsSender,
    /// A node's reader of the path binder's stubs store (`Plan::bindings`), to the ad server.
    StubsSender,
    Receiver,
    /// The ad server's receiver of bindings (`Plan::bindings`): a `reader --recv`.
    AdServer,
}

/// One daemon of the run.
#[derive(Debug, Clone)]
pub struct Instance {
    /// `master`, `yacobot-yb1`, `reader-yb1`, `recv1`: the init script's NAME and the
    /// daemon's `progname`.
    pub name: String,
    pub kind: Kind,
    /// The node (1-based) of a yacobot or a sender, the receiver's number.
    pub number: usize,
    pub binary: PathBuf,
    pub config: PathBuf,
    /// `--recv` for a receiver.
    pub args: &'static str,
    pub rootdir: PathBuf,
    pub status_port: u16,
}

impl Instance {
    pub fn status_url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.status_port)
    }

    pub fn pidfile(&self) -> PathBuf {
        self.rootdir.join("logs").join(format!("{}.pid", self.name))
    }

    pub fn logfile(&self) -> PathBuf {
        self.rootdir.join("logs").join(format!("{}.log", self.name))
    }

    /// The pid in its pidfile, if the file is there.
    pub fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.pidfile())
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// `conf/init.d/focuser COMMAND` for this daemon.
    pub fn init(&self, plan: &Plan, command: &str) -> std::io::Result<Output> {
        Command::new("sh")
            .arg(plan.repo.join("conf/init.d/focuser"))
            .arg(command)
            .env("NAME", &self.name)
            .env("DAEMON", &self.binary)
            .env("CONFIG", &self.config)
            .env("DAEMON_ARGS", self.args)
            .env("STOP_WAIT", "60")
            .output()
    }

    /// Like [`Instance::init`], an error unless the script exits 0, with what it said.
    pub fn init_ok(&self, plan: &Plan, command: &str) -> Result<String, String> {
        let out = self
            .init(plan, command)
            .map_err(|e| format!("init.d/focuser {command} {}: {e}", self.name))?;
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            Ok(said.trim().to_string())
        } else {
            Err(format!(
                "init.d/focuser {command} {} failed ({}): {}\n--- last lines of {}:\n{}",
                self.name,
                out.status,
                said.trim(),
                self.logfile().display(),
                tail(&self.logfile(), 15)
            ))
        }
    }
}

/// The last `n` lines of a file (for error messages).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Every daemon of the plan, in the order they start: receivers, crawlers, senders, master
/// (each finds the one it hands work to already listening, and each reader the store it
/// ships). They stop in reverse.
pub fn instances(plan: &Plan) -> Vec<Instance> {
    let bin = |b: &str| plan.bin_dir.join(b);
    let conf = |n: &str| plan.dir.join("conf").join(format!("{n}.cf"));
    let mut all = Vec::new();
    for k in 1..=plan.receivers {
        let name = format!("recv{k}");
        all.push(Instance {
            config: conf(&name),
            rootdir: plan.dir.join(&name),
            name,
            kind: Kind::Receiver,
            number: k,
            binary: bin("reader"),
            args: "--recv",
            status_port: plan.ports.receivers_status[k - 1],
        });
    }
    if plan.bindings {
        all.push(Instance {
            name: ADSERVER.into(),
            kind: Kind::AdServer,
            number: 1,
            binary: bin("reader"),
            config: conf(ADSERVER),
            args: "--recv",
            rootdir: plan.dir.join(ADSERVER),
            status_port: plan.ports.adserver_status,
        });
    }
    // The crawlers before the readers of their stores: the crawl archive's reader finds the
    // retention floor yacobot publishes at start (`Store.FloorFile`).
    for n in 1..=plan.nodes {
        let name = format!("yacobot-{}", plan.node_name(n));
        all.push(Instance {
            config: conf(&name),
            rootdir: plan.dir.join(&name),
            name,
            kind: Kind::Yacobot,
            number: n,
            binary: bin("yacobot"),
            args: "",
            status_port: plan.ports.yacobots[n - 1],
        });
    }
    for n in 1..=plan.nodes {
        let name = format!("reader-{}", plan.node_name(n));
        all.push(Instance {
            config: conf(&name),
            rootdir: plan.dir.join(&name),
            name,
            kind: Kind::Sender,
            number: n,
            binary: bin("reader"),
            args: "",
            status_port: plan.ports.senders[n - 1],
        });
    }
    // A plan written before a reader kind existed has no ports for it (and did not start it):
    // `run.sh` stops such a run from its plan.json.
    for (n, &status_port) in (1..=plan.nodes)
        .zip(&plan.ports.feed_senders)
        .filter(|_| plan.feeds_on)
    {
        let name = format!("reader-vr-{}", plan.node_name(n));
        all.push(Instance {
            config: conf(&name),
            rootdir: plan.dir.join(&name),
            name,
            kind: Kind::FeedSender,
            number: n,
            binary: bin("reader"),
            args: "",
            status_port,
        });
    }
    for (n, &status_port) in (1..=plan.nodes)
        .zip(&plan.ports.bindings_senders)
        .filter(|_| plan.bindings)
    {
        let name = format!("reader-bind-{}", plan.node_name(n));
        all.push(Instance {
            config: conf(&name),
            rootdir: plan.dir.join(&name),
            name,
            kind: Kind::BindingsSender,
            number: n,
            binary: bin("reader"),
            args: "",
            status_port,
        });
    }
    for (n, &status_port) in (1..=plan.nodes)
        .zip(&plan.ports.stubs_senders)
        .filter(|_| plan.bindings)
    {
        let name = format!("reader-stubs-{}", plan.node_name(n));
        all.push(Instance {
            config: conf(&name),
            rootdir: plan.dir.join(&name),
            name,
            kind: Kind::StubsSender,
            number: n,
            binary: bin("reader"),
            args: "",
            status_port,
        });
    }
    all.push(Instance {
        name: "master".into(),
        kind: Kind::Master,
        number: 0,
        binary: bin("master"),
        config: conf("master"),
        args: "",
        rootdir: plan.dir.join("master"),
        status_port: plan.ports.master,
    });
    all
}

/// Where a node's queue files arrive: the first receiver's inbox `master1-<node>`.
pub fn inbox(plan: &Plan, node: usize) -> PathBuf {
    plan.dir
        .join("recv1/inbox")
        .join(format!("{MASTER_NAME}-{}", plan.node_name(node)))
}

/// The master's queue directory for a node.
pub fn queue_dir(plan: &Plan, node: usize) -> PathBuf {
    plan.dir.join("master/queue").join(node.to_string())
}

pub fn incoming_dir(plan: &Plan) -> PathBuf {
    plan.dir.join("master/incoming")
}

/// A node's segment store (yacobot writes it, its reader ships it).
pub fn segments(plan: &Plan, node: usize) -> PathBuf {
    plan.dir
        .join(format!("yacobot-{}", plan.node_name(node)))
        .join("segments")
}

/// A node's resources store (`Resources.Dir`, the default `segments-vr`).
pub fn feed_segments(plan: &Plan, node: usize) -> PathBuf {
    plan.dir
        .join(format!("yacobot-{}", plan.node_name(node)))
        .join("segments-vr")
}

/// A node's bindings store (`Bindings.Dir`, the default `bindings`).
pub fn bindings_store(plan: &Plan, node: usize) -> PathBuf {
    plan.dir
        .join(format!("yacobot-{}", plan.node_name(node)))
        .join("bindings")
}

/// A node's stubs store (`PathBinder.Dir`, the default `stubs`).
pub fn stubs_store(plan: &Plan, node: usize) -> PathBuf {
    plan.dir
        .join(format!("yacobot-{}", plan.node_name(node)))
        .join("stubs")
}

/// The ad-server receiver's store.
pub fn adserver_received(plan: &Plan) -> PathBuf {
    plan.dir.join(ADSERVER).join("received")
}

/// A receiver's store.
pub fn received(plan: &Plan, k: usize) -> PathBuf {
    plan.dir.join(format!("recv{k}")).join("received")
}

pub fn secret_file(plan: &Plan) -> PathBuf {
    plan.dir.join("conf/reader.secret")
}

fn s(v: impl ToString) -> Set {
    Set::To(v.to_string())
}

fn p(path: &Path) -> Set {
    Set::To(path.display().to_string())
}

/// The keys every daemon of the run sets the same way.
fn common_keys(i: &Instance) -> Vec<(&'static str, Set)> {
    vec![
        ("rootdir", p(&i.rootdir)),
        ("progname", s(&i.name)),
        ("logfile", s(format!("logs/{}.log", i.name))),
        ("pidfile", s(format!("logs/{}.pid", i.name))),
        ("debuglevel", s(30)),
        ("user", Set::Off("this run keeps the caller's user")),
        ("group", Set::Off("this run keeps the caller's user")),
        ("allowdb", Set::Off("loopback only")),
        ("pwfile", Set::Off("no POST /reload or /rotate in this run")),
        ("status_listen", s(format!("127.0.0.1:{}", i.status_port))),
        ("status_sample", s(5)),
    ]
}

/// The config file of `i`, from its template in `conf/`.
pub fn config_text(plan: &Plan, i: &Instance) -> std::io::Result<String> {
    let template = match i.kind {
        Kind::Master => "master.cf",
        Kind::Yacobot => "yacobot.cf",
        Kind::Sender | Kind::FeedSender | Kind::BindingsSender | Kind::StubsSender => "reader.cf",
        Kind::Receiver | Kind::AdServer => "reader-recv.cf",
    };
    let text = std::fs::read_to_string(plan.repo.join("conf").join(template))?;
    let mut keys = common_keys(i);
    keys.extend(match i.kind {
        Kind::Master => master_keys(plan),
        Kind::Yacobot => yacobot_keys(plan, i.number),
        Kind::Sender => sender_keys(plan, i.number),
        Kind::FeedSender => feed_sender_keys(plan, i.number),
        Kind::BindingsSender => bindings_sender_keys(plan, i.number, "bind", bindings_store),
        Kind::StubsSender => bindings_sender_keys(plan, i.number, "stubs", stubs_store),
        Kind::Receiver => receiver_keys(plan, i.number),
        Kind::AdServer => vec![
            ("name", s(ADSERVER)),
            ("secret_file", p(&secret_file(plan))),
            ("Recv.Listen", s(adserver_address(plan))),
        ],
    });
    let mut out = render(&text, &keys);
    if i.kind == Kind::Yacobot && !plan.feeds_on {
        out.push_str(RESOURCES_OFF);
    }
    Ok(out)
}

/// Why `Resources.Enable = 0` in a run without `feeds_on`.
const RESOURCES_OFF: &str = "\n# resources: Resources.Enable is 0 above (focuser-run up --no-feeds); the sample feeds are\n# loaded (one resource per node) and served, not fetched.\n";

fn master_keys(plan: &Plan) -> Vec<(&'static str, Set)> {
    vec![
        ("database", s(&plan.master_db)),
        ("name", s(MASTER_NAME)),
        ("Cycle.Interval", s(2)),
        ("stop_timeout", s(120)),
    ]
}

fn yacobot_keys(plan: &Plan, n: usize) -> Vec<(&'static str, Set)> {
    let node = plan.node_name(n);
    vec![
        ("database", s(&plan.node_dbs[n - 1])),
        ("db_pool_size", s(4)),
        ("node", s(&node)),
        ("node_id", s(n)),
        ("Loader.Inbox.master1", p(&inbox(plan, n))),
        ("Loader.Interval", s(1)),
        ("Loader.KeepApplied", s(1)),
        ("Crawl.Idle", s(1)),
        ("Crawl.ClaimTtl", s(plan.claim_ttl)),
        ("Fetch.Connections", s(32)),
        ("Fetch.HostDelay", s(plan.host_delay)),
        ("Fetch.RetryDelay", s(1)),
        ("Fetch.UserAgent", s(format!("yacobot/1.0 ({node})"))),
        ("Fetch.Resolve", s(format!("*:{}:127.0.0.1", plan.web_port))),
        // The sample web is served on 127.0.0.1.
        ("Fetch.AllowPrivate", s("127.0.0.1")),
        ("Segment.MaxAge", s(30)),
        (
            "Url.DictFile",
            Set::Off("no ad dictionary in this run: it counts as stale"),
        ),
        ("Resources.Enable", s(u8::from(plan.feeds_on))),
        ("Resources.ScanInterval", s(2)),
        ("MultiDoc.Enable", s(u8::from(plan.multidoc))),
        ("Bindings.Enable", s(u8::from(plan.bindings))),
        // A pass every 2 s in a run of about 40; a sample section (`/section-N/`, 5 to 10
        // pages of a host) with 3 bound pages gets a stub.
        ("PathBinder.Enable", s(u8::from(plan.bindings))),
        ("PathBinder.Interval", s(2)),
        ("PathBinder.MinUrls", s(3)),
        (
            "MultiDoc.Model",
            match plan.multidoc {
                true => p(&super::multidoc::model(plan)),
                false => Set::Off("no page analysis in this run"),
            },
        ),
    ]
}

fn receiver_address(plan: &Plan, k: usize) -> String {
    format!("127.0.0.1:{}", plan.ports.receivers_listen[k - 1])
}

fn sender_keys(plan: &Plan, n: usize) -> Vec<(&'static str, Set)> {
    let addresses: Vec<String> = (1..=plan.receivers)
        .map(|k| receiver_address(plan, k))
        .collect();
    vec![
        ("name", s(format!("node{n}"))),
        ("store_dir", p(&segments(plan, n))),
        ("secret_file", p(&secret_file(plan))),
        ("Send.RetryMax", s(5)),
        ("Store.CheckInterval", s(plan.retention_check)),
        // yacobot re-indexes from its archive: only below its floor are segments deleted.
        (
            "Store.FloorFile",
            p(&segments(plan, n).join("retention.floor")),
        ),
        ("Index.0.Addresses", s(addresses.join(", "))),
        ("Index.0.Statuses", s("UPDATE, DELETE")),
        (
            "Summary.0.Addresses",
            Set::Off("one receiver group in this run"),
        ),
        (
            "Summary.0.Statuses",
            Set::Off("one receiver group in this run"),
        ),
        ("SendFile.0.Address", s(receiver_address(plan, 1))),
        ("SendFile.0.Dir", p(&queue_dir(plan, n))),
        ("SendFile.0.Kind", s("spool")),
        ("SendFile.0.Pattern", s("*.q")),
        (
            "SendFile.0.Inbox",
            s(format!("{MASTER_NAME}-{}", plan.node_name(n))),
        ),
        ("SendFile.0.Remove", s(1)),
    ]
}

/// A second reader per node, for the resources' store: no queue files, its own streams.
fn feed_sender_keys(plan: &Plan, n: usize) -> Vec<(&'static str, Set)> {
    let mut keys = sender_keys(plan, n);
    keys.retain(|(k, _)| {
        !k.starts_with("SendFile.") && !matches!(*k, "name" | "store_dir" | "Store.FloorFile")
    });
    keys.extend([
        ("name", s(format!("node{n}-vr"))),
        ("store_dir", p(&feed_segments(plan, n))),
        (
            "Store.FloorFile",
            Set::Off("no owner's retention: segments go once shipped"),
        ),
        // `reader resend` asks yacobot for the live vr_data items there.
        (
            "Store.SnapshotDir",
            p(&feed_segments(plan, n).join("snapshots")),
        ),
        (
            "SendFile.0.Address",
            Set::Off("the crawl archive's reader ships the queue files"),
        ),
    ]);
    keys
}

fn adserver_address(plan: &Plan) -> String {
    format!("127.0.0.1:{}", plan.ports.adserver_listen)
}

/// A third and fourth reader per node, for the bindings store (`what` = `bind`) and the
/// stubs store (`stubs`): to the ad-server receiver only.
fn bindings_sender_keys(
    plan: &Plan,
    n: usize,
    what: &str,
    store: fn(&Plan, usize) -> PathBuf,
) -> Vec<(&'static str, Set)> {
    let mut keys = feed_sender_keys(plan, n);
    keys.retain(|(k, _)| {
        !matches!(
            *k,
            "name" | "store_dir" | "Index.0.Addresses" | "Store.SnapshotDir"
        )
    });
    keys.extend([
        (
            "Store.SnapshotDir",
            Set::Off("no owner answers snapshot asks for this store"),
        ),
        ("name", s(format!("node{n}-{what}"))),
        ("store_dir", p(&store(plan, n))),
        ("Index.0.Addresses", s(adserver_address(plan))),
    ]);
    keys
}

fn receiver_keys(plan: &Plan, k: usize) -> Vec<(&'static str, Set)> {
    vec![
        ("name", s(format!("recv{k}"))),
        ("secret_file", p(&secret_file(plan))),
        ("Recv.Listen", s(receiver_address(plan, k))),
    ]
}

/// Makes every directory of the run and writes every config file and the shared secret.
pub fn write_all(plan: &Plan) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let conf = plan.dir.join("conf");
    std::fs::create_dir_all(&conf)?;
    let secret: String = {
        let mut bytes = [0u8; 24];
        getrandom(&mut bytes)?;
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    };
    write_private(&secret_file(plan), &format!("{secret}\n"))?;
    for i in instances(plan) {
        std::fs::create_dir_all(i.rootdir.join("logs"))?;
        // The config holds a database password: readable by its owner only.
        write_private(&i.config, &config_text(plan, &i)?)?;
    }
    for d in ["incoming", "done", "rejects", "state", "tmp"] {
        std::fs::create_dir_all(plan.dir.join("master").join(d))?;
    }
    for n in 1..=plan.nodes {
        // The sender's spool and the loader's inbox exist before either looks at them.
        std::fs::create_dir_all(queue_dir(plan, n))?;
        std::fs::create_dir_all(inbox(plan, n))?;
        std::fs::create_dir_all(segments(plan, n))?;
        std::fs::create_dir_all(feed_segments(plan, n))?;
        std::fs::create_dir_all(bindings_store(plan, n))?;
        std::fs::create_dir_all(stubs_store(plan, n))?;
    }
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o700))
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

fn getrandom(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

#[cfg(test)]
mod tests;
