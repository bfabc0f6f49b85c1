//! Fetching through a real forward proxy (`focuser_tests::proxy`): pages and robots.txt go
//! through it with the credentials; a proxy that refuses is a `proxy` failure (tried again
//! only where another try could help) that says nothing of the host; a target whose name or
//! address is not public is refused before the proxy hears of it; `NoProxy` hosts are fetched
//! directly.

use std::io::Write;
use std::time::Duration;

use focuser_fetch::{FailKind, FetchConfig, Fetcher, Outcome, ProxyAuth, RobotsSeed};
use focuser_tests::free_port;
use focuser_tests::proxy::TestProxy;
use focuser_tests::web::{Behaviour, WebServer};

use crate::{config, failed, fetch_all};

fn through(server: &WebServer, proxy: &str, auth: Option<ProxyAuth>) -> FetchConfig {
    FetchConfig {
        proxy: proxy.into(),
        proxy_auth: auth,
        ..config(server)
    }
}

/// robots.txt known (404) for `url`'s host, so that the page itself meets the proxy.
fn seed(f: &mut Fetcher, url: &str) {
    let seed = RobotsSeed {
        status: 404,
        body: b"",
        remaining: Duration::from_secs(60),
    };
    assert!(f.seed_robots(url, seed));
}

#[test]
fn pages_and_robots_txt_go_through_the_proxy_with_its_credentials() {
    let server = WebServer::start().unwrap();
    server.set_robots("a.test", "User-agent: *\nDisallow: /private\n");
    let proxy = TestProxy::with_credentials("crawler", "s3cret:pw").unwrap();
    let auth = ProxyAuth::new("crawler", "s3cret:pw");
    let mut f = Fetcher::new(through(&server, &proxy.url(), Some(auth))).unwrap();
    let urls = [
        server.url("a.test", "/p1"),
        server.url("a.test", "/private"),
        server.url("b.test", "/p2"),
    ];
    let done = fetch_all(&mut f, &urls);
    assert!(matches!(done[0].outcome, Outcome::Fetched(_)), "{done:?}");
    assert_eq!(done[1].outcome, Outcome::Disallowed);
    assert!(matches!(done[2].outcome, Outcome::Fetched(_)), "{done:?}");
    // Two robots.txt and two pages, each through the proxy, each with the credentials.
    let asked = proxy.requests();
    let mut targets: Vec<&str> = asked.iter().map(|r| r.target.as_str()).collect();
    targets.sort();
    let port = server.port();
    let expected = [
        format!("http://a.test:{port}/p1"),
        format!("http://a.test:{port}/robots.txt"),
        format!("http://b.test:{port}/p2"),
        format!("http://b.test:{port}/robots.txt"),
    ];
    assert_eq!(targets, expected, "{asked:?}");
    for r in &asked {
        assert_eq!((r.method.as_str(), r.passed), ("GET", true), "{r:?}");
        assert_eq!(r.credentials.as_deref(), Some("crawler:s3cret:pw"));
    }
    assert_eq!(server.log().len(), 4);
    // The credentials never show.
    assert_eq!(
        format!("{:?}", f.config().proxy_auth),
        "Some(ProxyAuth(<hidden>))"
    );
}

#[test]
fn https_goes_through_a_connect_tunnel() {
    // Behind the tunnel, a server that answers in plain text: the tunnel is made, the TLS
    // handshake then fails (`tls`), and the CONNECT's own "200 Connection established" is not
    // taken for the page's answer.
    let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = plain.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in plain.incoming().flatten() {
            let _ = (&conn).write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let server = WebServer::start().unwrap();
    let proxy = TestProxy::with_credentials("crawler", "pw").unwrap();
    let auth = ProxyAuth::new("crawler", "pw");
    let mut cfg = through(&server, &proxy.url(), Some(auth));
    cfg.resolve.push(format!("a.test:{port}:127.0.0.1"));
    let mut f = Fetcher::new(cfg).unwrap();
    let url = format!("https://a.test:{port}/page");
    seed(&mut f, &url);
    let done = fetch_all(&mut f, std::slice::from_ref(&url));
    assert_eq!(failed(&done[0]).0, FailKind::Tls, "{done:?}");
    let asked = proxy.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].method, "CONNECT");
    assert_eq!(asked[0].target, format!("a.test:{port}"));
    assert_eq!(asked[0].credentials.as_deref(), Some("crawler:pw"));
}

#[test]
fn a_proxy_that_refuses_is_a_proxy_failure_that_says_nothing_of_the_host() {
    let server = WebServer::start().unwrap();
    let port = server.port();
    let proxy = TestProxy::with_credentials("crawler", "right").unwrap();
    let wrong = Some(ProxyAuth::new("crawler", "wrong"));
    let mut f = Fetcher::new(through(&server, &proxy.url(), wrong)).unwrap();
    f.report_hosts();
    let page = server.url("a.test", "/page");
    let tunnelled = format!("https://a.test:{port}/page");
    seed(&mut f, &page);
    seed(&mut f, &tunnelled);
    // b.test's robots.txt meets the proxy first: its page fails with it.
    let done = fetch_all(&mut f, &[page, tunnelled, server.url("b.test", "/page")]);
    let (kind, reason, status) = failed(&done[0]);
    assert_eq!(kind, FailKind::Proxy);
    assert!(
        reason.contains("answered 407") && reason.contains("Fetch.ProxyAuthFile"),
        "{reason}"
    );
    assert!(
        !reason.contains("wrong") && !reason.contains("right"),
        "{reason}"
    );
    // A 407 is not tried again.
    assert_eq!((status, done[0].tries), (Some(407), 1));
    let (kind, reason, _) = failed(&done[1]);
    assert_eq!(kind, FailKind::Proxy);
    assert!(reason.contains("answered CONNECT with 407"), "{reason}");
    let (kind, reason, _) = failed(&done[2]);
    assert_eq!(kind, FailKind::Proxy);
    assert!(
        reason.contains("robots.txt not fetched") && reason.contains("407"),
        "{reason}"
    );
    assert_eq!(f.stats().failed(FailKind::Proxy), 3);
    assert!(server.log().is_empty(), "{:?}", server.log());
    // The hosts' record has nothing against them.
    assert!(f
        .take_host_reports()
        .iter()
        .all(|r| r.errors == 0 && r.robots.is_none()));

    // A CONNECT denied: not tried again either.
    proxy.refuse(403);
    let right = Some(ProxyAuth::new("crawler", "right"));
    let mut f = Fetcher::new(through(&server, &proxy.url(), right)).unwrap();
    let url = format!("https://c.test:{port}/page");
    seed(&mut f, &url);
    let done = fetch_all(&mut f, &[url]);
    let (kind, reason, _) = failed(&done[0]);
    assert_eq!((kind, done[0].tries), (FailKind::Proxy, 1), "{reason}");
    assert!(reason.contains("answered CONNECT with 403"), "{reason}");
}

#[test]
fn a_proxy_that_cannot_be_reached_is_tried_again_then_a_proxy_failure() {
    let server = WebServer::start().unwrap();
    let closed = format!("http://127.0.0.1:{}", free_port());
    let mut f = Fetcher::new(through(&server, &closed, None)).unwrap();
    let url = server.url("a.test", "/page");
    seed(&mut f, &url);
    let done = fetch_all(&mut f, &[url]);
    let (kind, reason, _) = failed(&done[0]);
    assert_eq!(kind, FailKind::Proxy);
    assert!(
        reason.contains(&format!("the proxy {closed} cannot be reached")),
        "{reason}"
    );
    assert_eq!(done[0].tries, 3, "Fetch.Retries");
    assert!(server.log().is_empty());
}

#[test]
fn a_target_that_is_not_public_is_refused_before_the_proxy_hears_of_it() {
    let server = WebServer::start().unwrap();
    let port = server.port();
    let proxy = TestProxy::start().unwrap();
    let inner = format!("http://inner.test:{port}/admin");
    server.set_robots("a.test", "");
    server.set("a.test", "/to-inner", Behaviour::redirect(302, &inner));
    // The proxy is on 127.0.0.1, which is not allowed: its connection is let be all the same.
    let mut cfg = FetchConfig {
        allow_private: Vec::new(),
        ..through(&server, &proxy.url(), None)
    };
    cfg.resolve.insert(0, format!("inner.test:{port}:10.1.2.3"));
    let urls = [
        server.url("a.test", "/page"),
        format!("http://127.0.0.1:{port}/page"),
        // Looked up (no resolve entry for this port): loopback.
        format!("http://localhost:{}/page", free_port()),
    ];
    let mut f = Fetcher::new(cfg.clone()).unwrap();
    let done = fetch_all(&mut f, &urls);
    for (c, why) in done.iter().zip([
        "its address 127.0.0.1 is not public (loopback)",
        "its host 127.0.0.1 is not public (loopback)",
        "is not public (loopback)",
    ]) {
        let (kind, reason, _) = failed(c);
        assert_eq!(kind, FailKind::Refused, "{reason}");
        assert!(reason.contains(why), "{reason}");
    }
    assert!(proxy.requests().is_empty(), "{:?}", proxy.requests());

    // The test web allowed: fetched through the proxy, but a redirect to a private address
    // is refused at its hop.
    cfg.allow_private = vec!["127.0.0.1".into()];
    let mut f = Fetcher::new(cfg).unwrap();
    let done = fetch_all(
        &mut f,
        &[
            server.url("a.test", "/page"),
            server.url("a.test", "/to-inner"),
        ],
    );
    assert!(matches!(done[0].outcome, Outcome::Fetched(_)), "{done:?}");
    let (kind, reason, _) = failed(&done[1]);
    assert_eq!(kind, FailKind::Refused);
    assert!(reason.starts_with(&inner) && reason.contains("10.1.2.3 is not public (private)"));
    assert_eq!(proxy.requests().len(), 3, "robots.txt, /page, /to-inner");
    assert!(proxy
        .requests()
        .iter()
        .all(|r| !r.target.contains("inner.test")));

    // A public target: fetched through the proxy on 127.0.0.1, which needs no
    // Fetch.AllowPrivate (the proxy sends it to the test web whatever its address).
    let cfg = FetchConfig {
        allow_private: Vec::new(),
        resolve: vec![format!("public.test:{port}:93.184.216.34")],
        ..through(&server, &proxy.url(), None)
    };
    let done = fetch_all(
        &mut Fetcher::new(cfg).unwrap(),
        &[server.url("public.test", "/page")],
    );
    assert!(matches!(done[0].outcome, Outcome::Fetched(_)), "{done:?}");
    assert_eq!(server.requests_to("public.test", "/page").len(), 1);
}

#[test]
fn no_proxy_hosts_are_fetched_directly_and_still_guarded() {
    let server = WebServer::start().unwrap();
    let proxy = TestProxy::start().unwrap();
    let mut cfg = through(&server, &proxy.url(), None);
    cfg.no_proxy = vec!["direct.test".into()];
    let urls = [
        server.url("a.direct.test", "/page"),
        server.url("a.test", "/page"),
    ];
    let done = fetch_all(&mut Fetcher::new(cfg.clone()).unwrap(), &urls);
    assert!(
        done.iter()
            .all(|c| matches!(c.outcome, Outcome::Fetched(_))),
        "{done:?}"
    );
    let asked: Vec<String> = proxy.requests().into_iter().map(|r| r.target).collect();
    assert!(asked.iter().all(|t| t.contains("//a.test:")), "{asked:?}");
    assert_eq!(asked.len(), 2);
    assert_eq!(server.requests_to("a.direct.test", "/page").len(), 1);
    // Direct, the address guard decides as ever.
    cfg.allow_private = Vec::new();
    let done = fetch_all(&mut Fetcher::new(cfg).unwrap(), &urls[..1]);
    assert_eq!(failed(&done[0]).0, FailKind::Refused);
}
