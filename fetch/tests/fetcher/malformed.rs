use focuser_fetch::FailKind;
use focuser_tests::web::{Behaviour, WebServer};

use crate::{config, failed, fetch_one};

/// Each malformed answer fails with a kind and a reason that names the URL and the fault.
#[test]
fn malformed_answers_fail_with_a_clear_reason() {
    let server = WebServer::start().unwrap();
    server.set("m.test", "/garbage", Behaviour::garbage());
    server.set("m.test", "/truncated", Behaviour::truncated());
    server.set("m.test", "/chunked", Behaviour::bad_chunked());
    server.set("m.test", "/empty", Behaviour::Close);
    let cases = [
        ("/garbage", FailKind::Protocol, "HTTP/0.9"),
        ("/truncated", FailKind::Network, "bytes remaining"),
        ("/chunked", FailKind::Protocol, "chunk"),
        ("/empty", FailKind::Network, "Empty reply"),
    ];
    let mut cfg = config(&server);
    cfg.retries = 2;
    for (path, want_kind, want_reason) in cases {
        let c = fetch_one(cfg.clone(), server.url("m.test", path));
        let (kind, reason, _) = failed(&c);
        println!("{path}: {kind} {reason}");
        assert_eq!(kind, want_kind, "{path}: {reason}");
        assert!(reason.contains(path), "{reason}");
        assert!(
            reason.to_lowercase().contains(&want_reason.to_lowercase()),
            "{path}: {reason}"
        );
        assert_eq!(c.tries, 2, "{path}: network errors are tried again");
    }
}
