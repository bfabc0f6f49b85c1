//! The browser harness against the real Chromium, and against stand-ins that hang or fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use focuser_tests::browser::{inspect_png, BrowserError, Chromium};
use focuser_tests::{alive, free_port, poll};

/// A page with colour, text, and text that only exists once its script has run.
const PAGE: &str = r#"<!DOCTYPE html><html><head><title>not shown</title>
<style>body{background:#fff;margin:0} .box{background:#c00;color:#fff;width:200px;height:100px}</style></head>
<body><div class="box">red &amp; white</div><p id="late"></p>
<script>document.getElementById('late').textContent = 'written by ' + 'the script';</script>
</body></html>"#;

fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// An executable shell script standing in for Chromium.
fn fake_chromium(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("chromium");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn chromium_renders_a_page_to_text_and_to_a_screenshot() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    std::fs::write(&page, PAGE).unwrap();
    let chromium = Chromium::find().unwrap().window(400, 300);

    let text = chromium.rendered_text(&file_url(&page)).unwrap();
    assert_eq!(text, "red & white written by the script");

    let png = dir.path().join("shot.png");
    let shot = chromium.screenshot(&file_url(&page), &png).unwrap();
    assert_eq!((shot.width, shot.height), (400, 300), "{shot:?}");
    assert!(
        shot.bytes > 0 && shot.colours > 2,
        "red, white and text: {shot:?}"
    );
    assert_eq!(inspect_png(&png).unwrap(), shot);
}

#[test]
fn a_page_that_does_not_load_is_an_error_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let chromium = Chromium::find().unwrap();
    let e = chromium.dom(&url).unwrap_err().to_string();
    assert!(
        e.contains(&url)
            && e.contains("it printed no document")
            && e.contains("ERR_CONNECTION_REFUSED"),
        "{e}"
    );
    let e = chromium
        .screenshot(&url, &dir.path().join("s.png"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("it wrote no screenshot") && e.contains("ERR_CONNECTION_REFUSED"),
        "{e}"
    );

    let e = inspect_png(&dir.path().join("missing.png")).unwrap_err();
    assert!(matches!(e, BrowserError::BadPng(..)), "{e}");
    std::fs::write(dir.path().join("bad.png"), b"\x89PNG\r\n\x1a\nnot really").unwrap();
    let e = inspect_png(&dir.path().join("bad.png")).unwrap_err();
    assert!(e.to_string().contains("bad.png: not a readable PNG"), "{e}");
}

#[test]
fn a_missing_chromium_is_named_with_how_to_install_it() {
    let e = Chromium::at(Path::new("/nonexistent/chromium")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("/nonexistent/chromium") && msg.contains("apt-get install"),
        "{msg}"
    );
}

#[test]
fn a_browser_that_fails_is_reported_with_its_last_words() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_chromium(dir.path(), "echo 'cannot open display' >&2; exit 3");
    let e = Chromium::at(&fake)
        .unwrap()
        .dom("http://127.0.0.1:1/")
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("chromium failed on http://127.0.0.1:1/")
            && msg.contains("exit status: 3")
            && msg.contains("cannot open display"),
        "{msg}"
    );

    // Exit 0 but no screenshot written.
    let fake = fake_chromium(dir.path(), "exit 0");
    let e = Chromium::at(&fake)
        .unwrap()
        .screenshot("http://127.0.0.1:1/", &dir.path().join("s.png"))
        .unwrap_err();
    assert!(e.to_string().contains("it wrote no screenshot"), "{e}");
}

#[test]
fn a_browser_that_hangs_is_killed_with_its_children_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let child_pid = dir.path().join("child.pid");
    let fake = fake_chromium(
        dir.path(),
        &format!(
            "echo starting >&2; sleep 300 & echo $! > {}; wait",
            child_pid.display()
        ),
    );
    let started = Instant::now();
    // The timeout must leave the fake time to print "starting" and write child.pid even on a
    // loaded CI machine (500 ms did not always); the fake itself would run for 300 s.
    let e = Chromium::at(&fake)
        .unwrap()
        .timeout(Duration::from_secs(5))
        .rendered_text("http://127.0.0.1:1/")
        .unwrap_err();
    // Killed at the timeout, not after the fake's 300 s; the slack is for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let msg = e.to_string();
    assert!(
        matches!(e, BrowserError::Timeout { .. })
            && msg.contains("within 5s")
            && msg.contains("starting"),
        "{msg}"
    );
    let pid = std::fs::read_to_string(&child_pid).unwrap();
    let pid = pid.trim();
    // Killed with its group; its parent (the fake) is gone, so init reaps it soon.
    let gone = poll(Duration::from_secs(5), || !alive(pid.parse().unwrap()));
    assert!(gone, "the fake's child {pid} still runs");
}
