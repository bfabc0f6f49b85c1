//! What reaches the master that it cannot take as it is, through the real binary: names too
//! long to mirror, inputs it cannot read, a torn last line, a file still being written, URLs of
//! internal hosts, control characters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::{line, nodes, Site, T0};
use focuser_tests::{free_port, get, wait_for, TestDb};
use nix::unistd::{Group, User};

fn once(site: &Site) -> Output {
    site.master(&["--once", "--now", &common::stamp(T0 + 100)])
}

fn succeeds(site: &Site, out: &Output) {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        site.log()
    );
}

/// The URLs forwarded, sorted.
fn forwarded(site: &Site) -> Vec<String> {
    let mut urls: Vec<String> = site.forwarded().into_iter().map(|(_, r)| r.url).collect();
    urls.sort();
    urls
}

/// How long a daemon may take to get somewhere on a loaded machine.
const WAIT: Duration = Duration::from_secs(30);

#[test]
fn long_reflog_names_with_bad_lines_go_through_and_the_files_after_them_too() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let site = Site::new(db.url(), "Cycle.MaxFiles = 1\n");
    // 250 bytes (its `.rej.tmp` used to be 259), and the longest name there is.
    let long = format!("r{}.log", "x".repeat(245));
    let longest = format!("s{}.log", "y".repeat(250));
    assert_eq!((long.len(), longest.len()), (250, 255));
    site.reflog(&long, &[line(T0, "http://a.ru/1", 1, ""), "junk\n".into()]);
    site.reflog(
        &longest,
        &["junk\n".into(), line(T0, "http://a.ru/2", 1, "")],
    );
    site.reflog("zz.log", &[line(T0, "http://b.ru/3", 1, "")]);
    for _ in 0..3 {
        succeeds(&site, &once(&site));
    }
    assert!(
        site.names("incoming").is_empty(),
        "{:?}",
        site.names("incoming")
    );
    assert_eq!(
        site.names("done"),
        [long.clone(), longest.clone(), "zz.log".into()]
    );
    assert_eq!(
        forwarded(&site),
        ["http://a.ru/1", "http://a.ru/2", "http://b.ru/3"]
    );
    assert!(!site.root().join("state/cycle.journal").exists());
    // Each reject file's name leaves room for its temporary: the input's name cut, a hash of
    // the whole name added, so that two long names never share one.
    let rejects = site.names("rejects");
    assert_eq!(rejects.len(), 2, "{rejects:?}");
    for (name, starts, reject) in [
        (
            &rejects[0],
            "rxxx",
            "3\texpected 7 tab-separated fields, found 1\tjunk\n",
        ),
        (
            &rejects[1],
            "syyy",
            "2\texpected 7 tab-separated fields, found 1\tjunk\n",
        ),
    ] {
        assert!(
            name.len() <= 250 && name.starts_with(starts) && name.ends_with(".rej"),
            "{name}"
        );
        let text = std::fs::read_to_string(site.root().join("rejects").join(name)).unwrap();
        assert_eq!(text, reject);
    }
    assert!(!site.log().contains("File name too long"));
}

fn chown_all(path: &Path, user: &User) {
    nix::unistd::chown(path, Some(user.uid), Some(user.gid)).unwrap();
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap().flatten() {
            chown_all(&e.path(), user);
        }
    }
}

fn unreadable(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o000)).unwrap();
}

#[test]
fn an_input_the_master_cannot_read_is_set_aside_with_its_reason_and_the_others_go_on() {
    if !nix::unistd::geteuid().is_root() {
        // Root reads every file: only a master that dropped its privileges meets one it cannot.
        eprintln!("not root: skipped (CI runs it as root)");
        return;
    }
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let nobody = User::from_name("nobody").unwrap().unwrap();
    let group = Group::from_gid(nobody.gid).unwrap().unwrap();
    let site = Site::new(
        db.url(),
        &format!("user = nobody\ngroup = {}\n", group.name),
    );
    site.reflog("a.log", &[line(T0, "http://a.ru/1", 1, "")]);
    site.reflog("b.log", &[line(T0, "http://b.ru/1", 1, "")]);
    unreadable(&site.root().join("incoming/a.log"));
    chown_all(site.root(), &nobody);

    succeeds(&site, &once(&site));
    assert_eq!(site.names("bad"), ["a.log", "a.log.why"]);
    let why = std::fs::read_to_string(site.root().join("bad/a.log.why")).unwrap();
    assert!(
        why.contains("incoming/a.log") && why.contains("Permission denied"),
        "{why}"
    );
    assert_eq!(site.names("done"), ["b.log"]);
    assert_eq!(forwarded(&site), ["http://b.ru/1"]);
    let set_aside = |log: &str| log.matches("set aside").count();
    assert_eq!(set_aside(&site.log()), 1, "{}", site.log());
    succeeds(&site, &once(&site));
    assert_eq!(set_aside(&site.log()), 1, "logged once: {}", site.log());

    // A crash left the journal of cycle 2, whose inputs are now one unreadable file, one
    // removed by hand and a good one: the redo sets the first aside, drops the second and
    // finishes the cycle with the third, instead of failing over them forever.
    site.reflog("c.log", &[line(T0, "http://c.ru/1", 1, "")]);
    site.reflog("d.log", &[line(T0, "http://d.ru/1", 1, "")]);
    unreadable(&site.root().join("incoming/c.log"));
    let journal = site.root().join("state/cycle.journal");
    std::fs::write(
        &journal,
        format!(
            "#focuser-master-journal 1\nseq 2\nnow {}\nkeep_inputs 0\ninput incoming/c.log\n\
             input incoming/gone.log\ninput incoming/d.log\n",
            T0 + 100
        ),
    )
    .unwrap();
    chown_all(site.root(), &nobody);
    succeeds(&site, &once(&site));
    assert!(!journal.exists());
    assert_eq!(
        site.names("bad"),
        ["a.log", "a.log.why", "c.log", "c.log.why"]
    );
    assert_eq!(site.names("done"), ["b.log", "d.log"]);
    assert_eq!(forwarded(&site), ["http://b.ru/1", "http://d.ru/1"]);
    assert!(site.names("incoming").is_empty());
    let log = site.log();
    assert!(
        log.contains("incoming/gone.log") && log.contains("no longer there"),
        "{log}"
    );
    assert!(site
        .current_log()
        .starts_with("#focuser-current-log 1 cycle=2"));
}

#[test]
fn names_that_cannot_be_journaled_are_set_aside() {
    use std::os::unix::ffi::OsStrExt;
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let site = Site::new(db.url(), "");
    let text = format!("header\n{}", line(T0, "http://a.ru/1", 1, ""));
    let incoming = site.root().join("incoming");
    std::fs::write(
        incoming.join(std::ffi::OsStr::from_bytes(b"bad\xff.log")),
        &text,
    )
    .unwrap();
    std::fs::write(incoming.join("two\nlines.log"), &text).unwrap();
    site.reflog("good.log", &[line(T0, "http://b.ru/1", 1, "")]);
    succeeds(&site, &once(&site));
    assert_eq!(forwarded(&site), ["http://b.ru/1"]);
    assert!(
        site.names("incoming").is_empty(),
        "{:?}",
        site.names("incoming")
    );
    // Set aside under names made printable (escaped), each with its reason.
    let bad = site.names("bad");
    assert_eq!(
        bad,
        [
            "bad\\xff.log",
            "bad\\xff.log.why",
            "two\\x0alines.log",
            "two\\x0alines.log.why"
        ]
    );
    let why = std::fs::read_to_string(site.root().join("bad/two\\x0alines.log.why")).unwrap();
    assert!(why.contains("incoming/two\\x0alines.log"), "{why}");
    assert_eq!(
        std::fs::read_to_string(site.root().join("bad/bad\\xff.log")).unwrap(),
        text
    );
}

#[test]
fn a_torn_last_line_is_rejected_and_reject_files_are_safe_to_print() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let site = Site::new(db.url(), "");
    // A bad line full of terminal escapes, then a last line cut inside its hits (123 → 12):
    // it still has six good fields.
    let nasty = b"b\t5\t2023\x1b[2J\x1b]0;owned\x07\\\xc2\x9b\xff\t1\thttp://e.ru/\t1\t\n";
    let torn = format!(
        "2011072806593795\t5\t{}\t2310\thttp://a.ru/torn\t12",
        common::stamp(T0)
    );
    let mut text = format!("header\n{}", line(T0, "http://a.ru/1", 1, "")).into_bytes();
    text.extend_from_slice(nasty);
    text.extend_from_slice(torn.as_bytes());
    std::fs::write(site.root().join("incoming/r1.log"), &text).unwrap();
    succeeds(&site, &once(&site));
    assert_eq!(forwarded(&site), ["http://a.ru/1"]);
    let rej = std::fs::read(site.root().join("rejects/r1.log.rej")).unwrap();
    // Printable ASCII, tabs and newlines only: nothing a terminal would act on.
    assert!(
        rej.iter()
            .all(|&b| b == b'\t' || b == b'\n' || (0x20..0x7f).contains(&b)),
        "{}",
        String::from_utf8_lossy(&rej)
    );
    let rej = String::from_utf8(rej).unwrap();
    assert_eq!(
        rej,
        format!(
            "3\ttimestamp is not YYYYMMDDhhmmss\tb\t5\t2023\\x1b[2J\\x1b]0;owned\\x07\\\\\\xc2\\x9b\\xff\
             \t1\thttp://e.ru/\t1\t\n4\ttorn line (no newline at the end of the file)\t{torn}\n"
        )
    );
    assert!(
        site.log().contains("(2 rejected: 1 timestamp, 1 torn)"),
        "{}",
        site.log()
    );
}

#[test]
fn a_reflog_written_in_place_is_taken_once_it_has_settled_and_whole() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let port = free_port();
    let site = Site::new(
        db.url(),
        &format!(
            "debuglevel = 40\nstatus_listen = {port}\nCycle.Interval = 3600\nCycle.SettleSeconds = 3\n"
        ),
    );
    // A file the first cycle sets aside, to be counted.
    std::fs::write(
        site.root().join("incoming/bad\x1b.log"),
        format!("header\n{}", line(T0, "http://b.ru/", 1, "")),
    )
    .unwrap();
    let mut child = site.spawn(&["--now", &common::stamp(T0 + 60)]);
    wait_for("the first cycle", WAIT, || {
        site.log().contains("no reflog files ready")
    });
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let usr1 = || nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGUSR1).unwrap();

    // Written in place, a line every 50 ms for 3 s (no pause as long as SettleSeconds), the master asked for a cycle meanwhile.
    let path = site.root().join("incoming/live.log");
    let mut out = std::fs::File::create(&path).unwrap();
    out.write_all(b"header\n").unwrap();
    let mut lines = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        out.write_all(line(T0, &format!("http://a.ru/{lines}"), 1, "").as_bytes())
            .unwrap();
        lines += 1;
        if lines % 10 == 0 {
            usr1();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(site.queue_files().is_empty(), "taken while being written");
    }
    drop(out);
    wait_for("the settled file's cycle", WAIT, || {
        !site.queue_files().is_empty()
    });
    assert_eq!(forwarded(&site).len(), lines, "every line taken");
    // The reflog leaves incoming after its queue files are published: a moment later.
    wait_for("the reflog to leave incoming", WAIT, || {
        site.names("incoming").is_empty()
    });
    let log = site.log();
    assert_eq!(
        log.matches("still being written").count(),
        1,
        "said once: {log}"
    );
    assert_eq!(site.names("bad"), ["bad\\x1b.log", "bad\\x1b.log.why"]);
    let metrics = get(port, "/metrics");
    assert!(
        metrics.contains("focuser_master_inputs_set_aside_total{daemon=\"master\"} 1"),
        "{metrics}"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn urls_of_internal_hosts_ip_addresses_and_user_info_are_rejected_unless_allowed() {
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let urls = [
        ("http://good.ru/", None),
        (
            "http://127.0.0.1:8080/admin",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://2130706433/",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://0x7f.1/",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://[::1]/",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://[::ffff:10.0.0.1]/",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://169.254.169.254/latest/meta-data/",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://192.168.1.1/",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://localhost/",
            Some("URL host is a loopback or private address"),
        ),
        (
            "http://api.localhost./",
            Some("URL host is a loopback or private address"),
        ),
        ("http://8.8.8.8/", Some("URL host is an IP address")),
        (
            "http://[2606:4700::1111]/",
            Some("URL host is an IP address"),
        ),
        ("http://user:pw@good.ru/", Some("URL has user info")),
    ];
    let lines: Vec<String> = urls.iter().map(|(u, _)| line(T0, u, 1, "")).collect();
    let strict = Site::new(db.url(), "");
    strict.reflog("r1.log", &lines);
    succeeds(&strict, &once(&strict));
    assert_eq!(forwarded(&strict), ["http://good.ru/"]);
    let rejects = strict.rejects("r1.log");
    let reasons: Vec<&str> = rejects
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap())
        .collect();
    let expected: Vec<&str> = urls.iter().filter_map(|(_, why)| *why).collect();
    assert_eq!(reasons, expected);

    // The escapes, for test setups: internal hosts, and public IP addresses.
    let db = TestDb::new();
    nodes(&db, &[("yb1", true)]);
    let open = Site::new(db.url(), "Url.AllowPrivate = 1\nUrl.AllowIpLiterals = 1\n");
    open.reflog("r1.log", &lines);
    succeeds(&open, &once(&open));
    // All but the one with user info; `2130706433` and `0x7f.1` are one URL, `127.0.0.1`.
    assert_eq!(forwarded(&open).len(), urls.len() - 2);
    assert_eq!(
        open.rejects("r1.log")
            .lines()
            .map(|l| l.split('\t').nth(1).unwrap())
            .collect::<Vec<_>>(),
        ["URL has user info"]
    );
}
