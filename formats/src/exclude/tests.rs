#![allow(clippy::unwrap_used)]

use super::*;

const FILE: &str = "\
# The example of docs/formats.md, \"Exclusion file\".
domain   spam.example          # and every name under it
host     www.mirror.example:8080
host     [::1]
prefix   HTTP://Shop.Example/Cart/
path     /cgi-bin/
pattern  *?*sessionid=*        # a pattern with # inside: http://a/#x is no comment
\r
   # indented comment
";

fn ex() -> Exclusions {
    Exclusions::parse(FILE.as_bytes()).unwrap()
}

fn rule_of(ex: &Exclusions, url: &str) -> Option<(usize, Kind)> {
    let url = urls::normalize(url, urls::MAX_URL_LENGTH).unwrap().url;
    ex.matching(&url).map(|r| (r.line, r.kind))
}

#[test]
fn each_kind_of_rule_excludes_what_it_says() {
    let ex = ex();
    assert_eq!(ex.len(), 6);
    assert_eq!(
        ex.counts(),
        Counts {
            domains: 1,
            hosts: 2,
            prefixes: 1,
            paths: 1,
            patterns: 1
        }
    );
    let cases: &[(&str, Option<(usize, Kind)>)] = &[
        ("http://spam.example/", Some((2, Kind::Domain))),
        ("https://a.b.spam.example/x", Some((2, Kind::Domain))),
        ("http://www.spam.example:81/x", Some((2, Kind::Domain))),
        ("http://notspam.example/", None),
        ("http://spam.example.org/", None),
        ("http://www.mirror.example:8080/a", Some((3, Kind::Host))),
        ("http://www.mirror.example/a", None),
        ("http://mirror.example:8080/a", None),
        ("http://[::1]:9/", Some((4, Kind::Host))),
        ("http://shop.example/Cart/1", Some((5, Kind::Prefix))),
        ("http://shop.example/cart/1", None),
        ("https://shop.example/Cart/1", None),
        ("http://any.example/cgi-bin/x?y", Some((6, Kind::Path))),
        ("http://any.example/x/cgi-bin/", None),
        (
            "http://any.example/p?a=1&sessionid=2",
            Some((7, Kind::Pattern)),
        ),
        ("http://any.example/p?a=1", None),
        // Two rules: the first line wins.
        ("http://spam.example/cgi-bin/", Some((2, Kind::Domain))),
    ];
    for (url, want) in cases {
        assert_eq!(rule_of(&ex, url), *want, "{url}");
    }
    let r = ex.matching("http://www.mirror.example:8080/").unwrap();
    assert_eq!(r.to_string(), "line 3: host www.mirror.example:8080");
}

#[test]
fn host_rules_take_the_default_port_of_the_scheme() {
    let ex = Exclusions::parse(b"host a.example:80\nhost B.Example:443\n").unwrap();
    assert!(ex.excludes("http://a.example/"));
    assert!(!ex.excludes("https://a.example/"));
    assert!(ex.excludes("https://b.example/x"));
    assert!(ex.excludes("http://b.example:443/x"));
    assert!(!ex.excludes("http://b.example/x"));
}

#[test]
fn values_are_normalised_like_urls() {
    let ex = Exclusions::parse("domain BÜCHER.example\npath /a%7eb/../c\n".as_bytes()).unwrap();
    assert!(ex.excludes("http://xn--bcher-kva.example/"));
    assert!(ex.excludes("http://x.example/c?d"));
    let rules: Vec<String> = ex.rules.iter().map(|r| r.value.clone()).collect();
    assert_eq!(rules, ["xn--bcher-kva.example", "/c"]);
}

#[test]
fn duplicates_count_once_and_an_empty_file_excludes_nothing() {
    let ex = Exclusions::parse(b"domain a.example\ndomain A.example\n").unwrap();
    assert_eq!(ex.len(), 1);
    let empty = Exclusions::parse(b"\n# nothing\n").unwrap();
    assert!(empty.is_empty() && !empty.excludes("http://a.example/"));
}

#[test]
fn a_bad_line_refuses_the_file_and_names_the_line() {
    let cases: &[(&[u8], usize, &str)] = &[
        (
            b"domain a.example\nhots b.example\n",
            2,
            "unknown rule \"hots\"",
        ),
        (b"domain\n", 1, "domain without a value"),
        (b"domain a.example b.example\n", 1, "one value a line"),
        (b"domain http://a.example/\n", 1, "a domain name only"),
        (b"domain a.example:80\n", 1, "a domain name only"),
        (b"domain 10.0.0.1\n", 1, "an address is not a domain"),
        (b"host a.example:http\n", 1, "bad port"),
        (b"host a.example/x\n", 1, "a host name"),
        (b"host a:1:2\n", 1, "one port at most"),
        (b"prefix a.example/x\n", 1, "prefix \"a.example/x\""),
        (b"prefix ftp://a.example/\n", 1, "an http or https URL"),
        (b"prefix http://u:p@a.example/\n", 1, "no user info"),
        (b"path cgi-bin\n", 1, "a path starting with /"),
        (b"pattern ***\n", 1, "stars only"),
        (b"\n\ndomain a\xffb\n", 3, "not UTF-8 (byte 9 of the line)"),
    ];
    for (text, line, message) in cases {
        match Exclusions::parse(text) {
            Err(ExcludeError::Line {
                line: l,
                message: m,
            }) => {
                assert_eq!(l, *line, "{m}");
                assert!(m.contains(message), "{m:?} lacks {message:?}");
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(text)),
        }
    }
    let long = format!("pattern {}\n", "x".repeat(MAX_LINE_BYTES));
    assert!(matches!(
        Exclusions::parse(long.as_bytes()),
        Err(ExcludeError::Line { line: 1, .. })
    ));
}

#[test]
fn load_refuses_what_is_not_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Exclusions::load(&dir.path().join("none")).unwrap_err();
    assert!(
        missing.to_string().starts_with("cannot read: "),
        "{missing}"
    );
    let not_file = Exclusions::load(dir.path()).unwrap_err();
    assert_eq!(not_file.to_string(), "not a regular file");
    let file = dir.path().join("exclude.conf");
    std::fs::write(&file, FILE).unwrap();
    assert_eq!(Exclusions::load(&file).unwrap().len(), 6);
}
