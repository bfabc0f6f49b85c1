//! Server-side request forgery: URLs with user info, and hosts (IP addresses, or names by the
//! address they resolve to) that are not public are refused with kind `refused` — at the URL
//! and at every redirect hop, before any byte is sent — unless `Fetch.AllowPrivate` lists the
//! address. The test server is on 127.0.0.1, so these tests are the refusals themselves.

use focuser_fetch::{FailKind, FetchConfig, Fetcher, Outcome};
use focuser_tests::web::{Behaviour, WebServer};

use super::{config, failed, fetch_all};

fn refusing(server: &WebServer) -> FetchConfig {
    FetchConfig {
        allow_private: Vec::new(),
        ..config(server)
    }
}

#[test]
fn private_hosts_and_user_info_are_refused_before_any_request() {
    let server = WebServer::start().unwrap();
    let port = server.port();
    let urls = vec![
        // A name that resolves to 127.0.0.1 (here through Fetch.Resolve, as /etc/hosts would).
        server.url("a.test", "/page"),
        format!("http://127.0.0.1:{port}/page"),
        format!("http://[::1]:{port}/page"),
        format!("http://user:secret@b.test:{port}/page"),
    ];
    let mut f = Fetcher::new(refusing(&server)).unwrap();
    let done = fetch_all(&mut f, &urls);
    let reasons: Vec<&str> = done
        .iter()
        .map(|c| {
            let (kind, reason, status) = failed(c);
            assert_eq!((kind, status), (FailKind::Refused, None), "{reason}");
            reason
        })
        .collect();
    assert!(
        reasons[0].contains("its address 127.0.0.1 is not public (loopback)")
            && reasons[0].contains("Fetch.AllowPrivate"),
        "{}",
        reasons[0]
    );
    assert!(
        reasons[1].ends_with(
            "its host 127.0.0.1 is not public (loopback): not fetched, see Fetch.AllowPrivate"
        ),
        "{}",
        reasons[1]
    );
    assert!(
        reasons[2].contains("its host ::1 is not public (loopback)"),
        "{}",
        reasons[2]
    );
    assert!(
        reasons[3].ends_with("user info in the URL"),
        "{}",
        reasons[3]
    );
    assert_eq!(f.stats().failed(FailKind::Refused), 4);
    // Not a byte reached the server: not even robots.txt.
    assert!(server.log().is_empty(), "{:?}", server.log());
}

#[test]
fn allowed_addresses_are_fetched() {
    let server = WebServer::start().unwrap();
    let port = server.port();
    let urls = vec![
        server.url("a.test", "/page"),
        format!("http://127.0.0.1:{port}/page"),
        format!("http://user:secret@b.test:{port}/page"),
    ];
    for allowed in ["127.0.0.1", "127.0.0.0/8", "*"] {
        let cfg = FetchConfig {
            allow_private: vec![allowed.into()],
            ..config(&server)
        };
        let done = fetch_all(&mut Fetcher::new(cfg).unwrap(), &urls);
        assert!(
            matches!(done[0].outcome, Outcome::Fetched(_)),
            "{allowed}: {done:?}"
        );
        assert!(
            matches!(done[1].outcome, Outcome::Fetched(_)),
            "{allowed}: {done:?}"
        );
        // User info is never sent, whatever the addresses allowed.
        assert_eq!(failed(&done[2]).0, FailKind::Refused);
    }
    assert!(server.requests_to("b.test", "/page").is_empty());
}

#[test]
fn a_redirect_to_a_private_address_is_refused_at_its_hop() {
    let server = WebServer::start().unwrap();
    let port = server.port();
    let inner = format!("http://inner.test:{port}/admin");
    server.set("a.test", "/to-name", Behaviour::redirect(302, &inner));
    server.set(
        "a.test",
        "/to-ip",
        Behaviour::redirect(301, "http://192.168.1.1/admin"),
    );
    let with_user = format!("http://u:p@a.test:{port}/page");
    server.set("a.test", "/to-user", Behaviour::redirect(307, &with_user));
    // The test server is allowed; inner.test resolves to a private address that is not (and
    // where nothing listens: a connection would fail differently, after the connect timeout).
    let mut cfg = config(&server);
    cfg.resolve.insert(0, format!("inner.test:{port}:10.1.2.3"));
    let urls: Vec<String> = ["/to-name", "/to-ip", "/to-user"]
        .iter()
        .map(|p| server.url("a.test", p))
        .collect();
    let mut f = Fetcher::new(cfg).unwrap();
    let done = fetch_all(&mut f, &urls);
    for c in &done {
        assert_eq!(failed(c).0, FailKind::Refused, "{c:?}");
    }
    let (_, reason, _) = failed(&done[0]);
    assert!(
        reason.starts_with(&inner)
            && reason.contains("its address 10.1.2.3 is not public (private)"),
        "{reason}"
    );
    assert_eq!(done[0].final_url, inner);
    let (_, reason, _) = failed(&done[1]);
    assert!(
        reason.contains(
            "redirect to http://192.168.1.1/admin: its host 192.168.1.1 is not public (private)"
        ),
        "{reason}"
    );
    let (_, reason, status) = failed(&done[2]);
    assert!(reason.contains("user info in the URL"), "{reason}");
    assert_eq!(status, Some(307));
    assert_eq!(f.stats().failed(FailKind::Refused), 3);
    // The first hops were fetched; nothing else was asked for.
    assert!(
        server.log().iter().all(|l| l.host == "a.test"),
        "{:?}",
        server.log()
    );
    assert!(
        done[0].fetch_time < std::time::Duration::from_secs(2),
        "{:?}",
        done[0]
    );
}
