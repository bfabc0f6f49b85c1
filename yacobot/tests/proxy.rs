//! `Fetch.Proxy` through the real binary, with a real forward proxy (`focuser_tests::proxy`):
//! the crawl and the partner feeds fetch through it with `Fetch.ProxyAuthFile`'s credentials,
//! which never show (log, status page); a proxy that refuses is a counted `proxy` error the
//! host's record does not hold against the host; a target that is not public is still refused;
//! the environment's `http_proxy` is never used; a bad proxy config stops the start naming its
//! file and line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use common::feeds::{items, resource, resource_row, rules, serve_feed, serve_sitemap};
use common::{number, record, sql, url_row, Site};
use focuser_schema::models::{FetchState, FetchStatus};
use focuser_tests::proxy::TestProxy;
use focuser_tests::web::{Behaviour, WebServer};
use focuser_tests::TestDb;
use focuser_tests::{check_config, free_port, get, metric_with, wait_for};
use nix::sys::signal::Signal;

const SECRET: &str = "s3cret-Pr0xy-pw";

/// A node crawling (and with `feeds`, running partner feeds) from `server` through `proxy`,
/// its credentials in `proxy.auth` (mode 0600) when given.
fn site(db: &TestDb, server: &WebServer, proxy: &str, auth: Option<&str>, extra: &str) -> Site {
    server.set("*", "/robots.txt", Behaviour::status(404));
    let auth_key = match auth {
        Some(_) => "Fetch.ProxyAuthFile = proxy.auth\n",
        None => "",
    };
    let site = Site::with(
        db.url(),
        &format!(
            "Qargfilter.Enable = 0\nFetch.Resolve = {}\nFetch.AllowPrivate = 127.0.0.1\n\
             Fetch.HostDelay = 0\nFetch.ConnectTimeout = 2\nFetch.Timeout = 5\nFetch.RetryDelay = 0.1\n\
             Crawl.RetryLater = 600\nFetch.Proxy = {proxy}\n{auth_key}{extra}",
            server.resolve().join(" ")
        ),
    );
    if let Some(text) = auth {
        write_private(&site.root().join("proxy.auth"), text, 0o600);
    }
    site
}

fn write_private(path: &std::path::Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn error_of(db: &TestDb, url: &str) -> (FetchState, String) {
    let row = url_row(db, url).unwrap();
    (row.fetch_state, row.fetch_error.unwrap_or_default())
}

#[test]
fn the_crawl_and_the_feeds_fetch_through_the_proxy_with_its_credentials() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let proxy = TestProxy::with_credentials("crawler", SECRET).unwrap();
    let status = free_port();
    let id = {
        let c = &mut db.conn();
        rules(c);
        let sitemap = serve_sitemap(&server, "p.test", &["/f1.xml", "/f2.xml"]);
        serve_feed(&server, "p.test", "/f1.xml", &items("a", 3));
        serve_feed(&server, "p.test", "/f2.xml", &items("b", 3));
        resource(c, "shop", &[("a", sitemap)])
    };
    let site = site(
        &db,
        &server,
        &proxy.url(),
        Some(&format!("# the spider proxy\ncrawler:{SECRET}\n")),
        &format!("status_listen = {status}\nResources.Enable = 1\nResources.ScanInterval = 1\n"),
    );
    let pages = [server.url("a.test", "/p1"), server.url("b.test", "/p2")];
    site.queue(
        "m1-0000000001.q",
        &pages.iter().map(|u| record(u, 1, "")).collect::<Vec<_>>(),
    );
    let daemon = site.spawn();
    wait_for("the pages crawled", Duration::from_secs(60), || {
        pages
            .iter()
            .all(|u| url_row(&db, u).is_some_and(|r| r.fetch_state == FetchState::Fetched))
    });
    wait_for("the feeds run", Duration::from_secs(60), || {
        resource_row(&mut db.conn(), id).fetch_status == FetchStatus::Ok
    });
    // The status page shows where the credentials are, never them.
    let json = get(status, "/status.json");
    let page = get(status, "/");
    assert!(json.contains("Fetch.ProxyAuthFile") && json.contains("proxy.auth"));
    assert!(json.contains(&proxy.url()), "Fetch.Proxy shown");
    assert!(!json.contains(SECRET) && !page.contains(SECRET));
    daemon.stop();

    // Everything went through the proxy, with the credentials: robots.txt and the pages of
    // the crawl, robots.txt, the sitemap and the feeds of the resource.
    let asked = proxy.requests();
    let targets: Vec<&str> = asked.iter().map(|r| r.target.as_str()).collect();
    for path in [
        "a.test:{p}/p1",
        "b.test:{p}/p2",
        "p.test:{p}/sitemap.txt",
        "p.test:{p}/f2.xml",
    ] {
        let url = format!("http://{}", path.replace("{p}", &server.port().to_string()));
        assert!(targets.contains(&url.as_str()), "{url} not in {targets:?}");
    }
    assert_eq!(server.log().len(), asked.len(), "{targets:?}");
    let expected = format!("crawler:{SECRET}");
    assert!(asked
        .iter()
        .all(|r| r.passed && r.credentials.as_deref() == Some(expected.as_str())));
    assert!(!site.log().contains(SECRET));
}

#[test]
fn a_proxy_that_refuses_is_a_counted_proxy_error_and_not_the_hosts() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let proxy = TestProxy::with_credentials("crawler", SECRET).unwrap();
    let status = free_port();
    let site = site(
        &db,
        &server,
        &proxy.url(),
        Some("crawler:not-the-password\n"),
        &format!("status_listen = {status}\n"),
    );
    let pages = [server.url("a.test", "/p1"), server.url("a.test", "/p2")];
    site.queue(
        "m1-0000000001.q",
        &pages.iter().map(|u| record(u, 1, "")).collect::<Vec<_>>(),
    );
    let daemon = site.spawn();
    let failed = || {
        pages
            .iter()
            .all(|u| url_row(&db, u).is_some_and(|r| r.fetch_state == FetchState::Failed))
    };
    wait_for("the pages failed", Duration::from_secs(60), failed);
    for u in &pages {
        let (_, why) = error_of(&db, u);
        assert!(
            why.starts_with(&format!("proxy: {u}: robots.txt not fetched: ")),
            "{why}"
        );
        assert!(
            why.contains("answered 407") && why.contains("Fetch.ProxyAuthFile"),
            "{why}"
        );
    }
    let count = || {
        metric_with(
            status,
            "focuser_yacobot_fetch_errors_total",
            "kind=\"proxy\"",
        )
    };
    wait_for("the count", Duration::from_secs(30), || {
        count() == Some(2.0)
    });
    assert!(server.log().is_empty(), "{:?}", server.log());
    assert_eq!(
        proxy.requests()[0].credentials.as_deref(),
        Some("crawler:not-the-password")
    );

    // The proxy gone (a reload points at a closed port): tried again, then the same kind.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let text = std::fs::read_to_string(&site.config).unwrap();
    let text = text.replace(
        &format!("Fetch.Proxy = {}", proxy.url()),
        &format!("Fetch.Proxy = {closed}"),
    );
    std::fs::write(&site.config, text).unwrap();
    daemon.signal(Signal::SIGUSR2);
    wait_for("the reload", Duration::from_secs(30), || {
        site.log().contains("new Fetch.* settings in use")
    });
    sql(
        &db,
        "UPDATE url SET next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND",
    );
    wait_for("the pages failed again", Duration::from_secs(60), || {
        pages
            .iter()
            .all(|u| error_of(&db, u).1.contains("cannot be reached"))
    });
    wait_for("the count", Duration::from_secs(30), || {
        count() == Some(4.0)
    });
    daemon.stop();
    for u in &pages {
        let why = error_of(&db, u).1;
        assert!(
            why.contains(&format!("the proxy {closed} cannot be reached")),
            "{why}"
        );
    }
    // The host's record holds nothing against the host.
    let held = number(
        &db,
        "SELECT COUNT(*) AS n FROM host WHERE errors > 0 OR robots_fetched_at IS NOT NULL",
    );
    assert_eq!(held, 0);
    let log = site.log();
    assert!(!log.contains("not-the-password") && !log.contains(SECRET));
}

#[test]
fn a_target_that_is_not_public_is_refused_and_the_environments_proxy_never_used() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let proxy = TestProxy::start().unwrap();
    let site = site(&db, &server, &proxy.url(), None, "");
    // The test web's address not allowed: a.test resolves to loopback.
    let text = std::fs::read_to_string(&site.config).unwrap();
    std::fs::write(
        &site.config,
        text.replace("Fetch.AllowPrivate = 127.0.0.1\n", ""),
    )
    .unwrap();
    let page = server.url("a.test", "/page");
    site.queue("m1-0000000001.q", &[record(&page, 1, "")]);
    site.once();
    let (state, why) = error_of(&db, &page);
    assert_eq!(state, FetchState::Failed);
    assert!(
        why.starts_with(&format!("refused: {page}"))
            && why.contains("127.0.0.1 is not public (loopback)"),
        "{why}"
    );
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());
    assert!(server.log().is_empty());

    // No Fetch.Proxy: fetched directly, whatever the environment says.
    let text = std::fs::read_to_string(&site.config).unwrap();
    let text = text.replace(
        &format!("Fetch.Proxy = {}\n", proxy.url()),
        "Fetch.AllowPrivate = 127.0.0.1\n",
    );
    std::fs::write(&site.config, text).unwrap();
    sql(
        &db,
        "UPDATE url SET next_indexed = UTC_TIMESTAMP() - INTERVAL 1 SECOND",
    );
    let out = site
        .command()
        .arg("--once")
        .env("http_proxy", proxy.url())
        .env("all_proxy", proxy.url())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", site.log());
    assert_eq!(
        error_of(&db, &page).0,
        FetchState::Fetched,
        "{}",
        site.log()
    );
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());
    assert_eq!(server.requests_to("a.test", "/page").len(), 1);
}

#[test]
fn a_bad_proxy_config_stops_the_start_naming_its_file_and_line() {
    let db = TestDb::new();
    let server = WebServer::start().unwrap();
    let yacobot = env!("CARGO_BIN_EXE_yacobot");
    let refused = |site: &Site, why: &str| {
        let out = check_config(yacobot, &site.config, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(why),
            "{why}: {stderr}"
        );
        assert!(!stderr.contains(SECRET), "{stderr}");
    };
    let line_of = |site: &Site, key: &str| {
        let text = std::fs::read_to_string(&site.config).unwrap();
        text.lines().position(|l| l.starts_with(key)).unwrap() + 1
    };
    let cf = |site: &Site| site.config.display().to_string();

    let site = self::site(&db, &server, "ftp://p.test:21", None, "");
    let at = format!(
        "{}:{}: Fetch.Proxy: scheme \"ftp\"",
        cf(&site),
        line_of(&site, "Fetch.Proxy")
    );
    refused(&site, &at);
    let with_user = format!("http://crawler:{SECRET}@p.test:3128");
    let site = self::site(&db, &server, &with_user, None, "");
    refused(
        &site,
        "Fetch.Proxy: user info in the URL: put the credentials in Fetch.ProxyAuthFile",
    );
    let site = self::site(&db, &server, "http://p.test", None, "");
    refused(&site, "Fetch.Proxy: no port");

    let good = format!("crawler:{SECRET}\n");
    let site = self::site(&db, &server, "http://p.test:3128", Some(&good), "");
    let out = check_config(yacobot, &site.config, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = site.root().join("proxy.auth");
    write_private(&file, &good, 0o644);
    let why = format!(
        "Fetch.ProxyAuthFile: {}: readable by group or others (mode 644)",
        file.display()
    );
    refused(&site, &why);
    // The start says so too, before it detaches.
    let out = site.command().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(&why), "{stderr}");
    write_private(&file, &format!("# proxy\n{SECRET}\n"), 0o600);
    refused(
        &site,
        &format!(
            "Fetch.ProxyAuthFile: {}:2: expected user:password",
            file.display()
        ),
    );
    write_private(&file, &format!("crawler:{SECRET}\nother:{SECRET}\n"), 0o600);
    refused(
        &site,
        &format!("{}:2: a second user:password line", file.display()),
    );

    let site = self::site(
        &db,
        &server,
        "http://p.test:3128",
        None,
        "Resources.PerHost = feeds.test:0\n",
    );
    let at = format!(
        "{}:{}: Resources.PerHost: \"feeds.test:0\": a number, at least 1",
        cf(&site),
        line_of(&site, "Resources.PerHost")
    );
    refused(&site, &at);
}
