//! The config files shipped in conf/ parse, and both daemons start from them and ship items
//! with every shipped setting kept; only the site's lines (paths, addresses, user) change.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use focuser_tests::{check_config, free_port, get, repo_root, wait_for};

fn shipped(name: &str) -> String {
    std::fs::read_to_string(repo_root().join("conf").join(name)).unwrap()
}

/// `text` with the value of each key in `set` replaced, and the keys in `drop` left out.
fn site(text: &str, set: &[(&str, String)], drop: &[&str]) -> String {
    let mut out = String::new();
    let mut seen = Vec::new();
    for line in text.lines() {
        let key = line.split('=').next().unwrap_or("").trim();
        if line.contains('=') && !line.trim_start().starts_with('#') {
            if drop.contains(&key) {
                continue;
            }
            if let Some((k, v)) = set.iter().find(|(k, _)| *k == key) {
                out.push_str(&format!("{k} = {v}\n"));
                seen.push(key.to_string());
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    for (k, _) in set {
        assert!(
            seen.iter().any(|s| s == k),
            "{k} is not in the shipped file"
        );
    }
    out
}

#[test]
fn the_shipped_configs_check_out() {
    for (file, args) in [("reader.cf", &[][..]), ("reader-recv.cf", &["--recv"][..])] {
        let conf = repo_root().join("conf").join(file);
        let out = check_config(env!("CARGO_BIN_EXE_reader"), &conf, args);
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        // The file parses and validates (its effective config is printed); the start-up
        // checks then find that this machine is not the site (its rootdir is not here).
        assert!(text.contains("MaxFrame = 33554432"), "{file}: {text}");
        assert_eq!(out.status.code(), Some(1), "{file}: {err}");
        assert!(
            err.contains("rootdir /var/lib/focuser") && !err.contains(file),
            "{file}: {err}"
        );
    }
}

fn install(root: &Path, name: &str, text: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(root.join("conf")).unwrap();
    std::fs::create_dir_all(root.join("logs")).unwrap();
    std::fs::copy(
        repo_root().join("conf/hosts.allow"),
        root.join("conf/hosts.allow"),
    )
    .unwrap();
    let secret = root.join("conf/reader.secret");
    std::fs::write(&secret, SECRET).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cf = root.join("conf").join(name);
    std::fs::write(&cf, text).unwrap();
    if text.contains("pwfile") {
        // As an operator would: `reader passwd USER` creates the pwfile.
        let mut p = Command::new(env!("CARGO_BIN_EXE_reader"))
            .args(["-c", cf.to_str().unwrap(), "passwd", "ops"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        p.stdin
            .take()
            .unwrap()
            .write_all(b"a-long-password\n")
            .unwrap();
        assert!(p.wait().unwrap().success());
    }
    cf
}

#[test]
fn both_daemons_start_from_the_shipped_configs_and_ship() {
    let rig = Rig::new();
    rig.write(700, &["--max-items", "200"]);
    let (listen, s_status, r_status) = (free_port(), free_port(), free_port());
    let user: &[&str] = &["user", "group"];
    let recv_root = rig.root().join("recv");
    let r_cf = install(
        &recv_root,
        "reader-recv.cf",
        &site(
            &shipped("reader-recv.cf"),
            &[
                ("rootdir", recv_root.display().to_string()),
                ("Recv.Listen", format!("127.0.0.1:{listen}")),
                ("status_listen", format!("127.0.0.1:{r_status}")),
            ],
            user,
        ),
    );
    let send_root = rig.root().join("send");
    let s_cf = install(
        &send_root,
        "reader.cf",
        &site(
            &shipped("reader.cf"),
            &[
                ("rootdir", send_root.display().to_string()),
                ("store_dir", rig.store().display().to_string()),
                ("status_listen", format!("127.0.0.1:{s_status}")),
                ("Index.0.Addresses", format!("127.0.0.1:{listen}")),
                ("Summary.0.Addresses", format!("127.0.0.1:{listen}")),
            ],
            user,
        ),
    );
    // On a site (its paths, secret, pwfile there) the start-up checks pass.
    for cf in [&r_cf, &s_cf] {
        let out = check_config(env!("CARGO_BIN_EXE_reader"), cf, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut recv = Proc::start(&["-c", r_cf.to_str().unwrap(), "--recv"]);
    let mut sender = Proc::start(&["-c", s_cf.to_str().unwrap()]);
    // Both groups' streams land in the one receiver: every item twice, once per stream.
    let got = recv_root.join("received");
    wait_for("both streams", Duration::from_secs(60), || {
        per_stream(&got).values().copied().collect::<Vec<_>>() == vec![700, 700]
    });
    let m = get(s_status, "/metrics");
    assert!(m.contains("focuser_reader_sender_acked_items_total"), "{m}");
    assert!(sender.stop());
    assert!(recv.stop());
    let log = std::fs::read_to_string(recv_root.join("logs/reader-recv.log")).unwrap();
    assert!(log.contains("reader --recv listening on"), "{log}");
}
