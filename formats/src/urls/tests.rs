use super::*;

#[test]
fn ids_side_by_side_are_the_ids_one_at_a_time() {
    let urls: Vec<String> = (0..37)
        .map(|i| format!("http://d{i}.example/{}", "p/".repeat(i * 3)))
        .collect();
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let mut ids = vec![0; refs.len()];
    url_ids(&refs, &mut ids);
    for (u, id) in refs.iter().zip(&ids) {
        assert_eq!(*id, url_id(u), "{u}");
    }
}

#[test]
fn normalisation_id_and_domain() {
    let n = normalize("HTTP://WWW.Example.COM:80/a/b?x=1#frag", MAX_URL_LENGTH).unwrap();
    assert_eq!(n.url, "http://www.example.com/a/b?x=1");
    assert_eq!(n.domain, "example.com");
    assert_eq!(n.id, url_id("http://www.example.com/a/b?x=1"));
    // MD5("http://www.example.com/a/b?x=1") starts with these 8 bytes.
    let digest = Md5::digest(b"http://www.example.com/a/b?x=1");
    assert_eq!(n.id.to_be_bytes(), digest[..8]);

    let idn = normalize("https://www.Пример.рф:443/путь", MAX_URL_LENGTH).unwrap();
    assert_eq!(
        idn.url,
        "https://www.xn--e1afmkfd.xn--p1ai/%D0%BF%D1%83%D1%82%D1%8C"
    );
    assert_eq!(idn.domain, "xn--e1afmkfd.xn--p1ai");
    assert_eq!(
        normalize("http://www./", MAX_URL_LENGTH).unwrap().domain,
        "www."
    );
    assert_eq!(
        normalize("http://10.0.0.1:8080/", MAX_URL_LENGTH)
            .unwrap()
            .domain,
        "10.0.0.1"
    );
    assert_eq!(doc_id(0xab), "00000000000000ab");
}

/// Pieces of hosts, mostly of the shape the fast path takes, so that its path checks are
/// reached.
fn host_piece() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        8 => Just("a".to_string()),
        4 => Just("b0".to_string()),
        4 => Just(".".to_string()),
        1 => Just("-".to_string()),
        1 => Just("9".to_string()),
        1 => Just("xn--".to_string()),
        1 => Just("A".to_string()),
        1 => Just(":80".to_string()),
    ]
}

/// Pieces URLs are made of: the shapes the fast path takes, and every way to leave them.
fn piece() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        Just("a".to_string()),
        Just("Z".to_string()),
        Just("0".to_string()),
        Just("9".to_string()),
        Just(".".to_string()),
        Just("..".to_string()),
        Just("/".to_string()),
        Just("-".to_string()),
        Just("xn--".to_string()),
        Just("%2e".to_string()),
        Just("%2E".to_string()),
        Just("%41".to_string()),
        Just("%zz".to_string()),
        Just("%".to_string()),
        Just("?".to_string()),
        Just("#".to_string()),
        Just("@".to_string()),
        Just(":".to_string()),
        Just(":80".to_string()),
        Just("\\".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("é".to_string()),
        Just("www.".to_string()),
        Just("0x1".to_string()),
        Just("com".to_string()),
        proptest::char::range('!', '~').prop_map(|c| c.to_string()),
    ]
}

/// The fast path as first written, with `str` methods: what the byte loops are checked
/// against.
fn reference(raw: &str) -> Option<&str> {
    let b = raw.as_bytes();
    let rest = raw
        .strip_prefix("http://")
        .or_else(|| raw.strip_prefix("https://"))?;
    let host_end = rest.find('/')?;
    let host = &rest[..host_end];
    let mut labels = 0;
    let mut last = "";
    for label in host.split('.') {
        let lb = label.as_bytes();
        if lb.is_empty()
            || label.starts_with("xn--")
            || !lb
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        {
            return None;
        }
        labels += 1;
        last = label;
    }
    if labels == 0 || !last.as_bytes()[0].is_ascii_lowercase() {
        return None;
    }
    let path_start = b.len() - rest.len() + host_end;
    let (path, query) = split_query(&raw[path_start..]);
    let mut i = 0;
    let pb = path.as_bytes();
    while i < pb.len() {
        let c = pb[i];
        match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => {}
            b'-' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b','
            | b';' | b'=' | b':' | b'@' | b'/' | b'.' => {}
            // Kept as it is, unless it spells a dot.
            b'%' => {
                let hex = pb.get(i + 1..i + 3)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) || hex.eq_ignore_ascii_case(b"2e") {
                    return None;
                }
            }
            _ => return None,
        }
        i += 1;
    }
    if path
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return None;
    }
    if let Some(q) = query {
        let ok = q.bytes().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'-' | b'_'
                        | b'~'
                        | b'!'
                        | b'$'
                        | b'&'
                        | b'('
                        | b')'
                        | b'*'
                        | b'+'
                        | b','
                        | b';'
                        | b'='
                        | b':'
                        | b'@'
                        | b'/'
                        | b'.'
                        | b'?'
                        | b'%'
                )
        });
        if !ok {
            return None;
        }
    }
    Some(host)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]
    /// The byte loops answer what the first version answered.
    #[test]
    fn the_fast_path_agrees_with_its_first_version(
        scheme in proptest::prop_oneof![proptest::strategy::Just("http://"), proptest::strategy::Just("https://"), proptest::strategy::Just("HTTP://")],
        host in proptest::collection::vec(host_piece(), 0..6),
        path in proptest::collection::vec(piece(), 0..10),
    ) {
        let raw = format!("{scheme}{}{}", host.concat(), path.concat());
        proptest::prop_assert_eq!(already_normal(&raw), reference(&raw), "{}", raw);
        let raw = format!("{scheme}{}/{}", host.concat(), path.concat());
        proptest::prop_assert_eq!(already_normal(&raw), reference(&raw), "{}", raw);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]
    /// The fast path answers exactly what the parser answers, whenever it answers.
    #[test]
    fn the_fast_path_agrees_with_the_parser(
        scheme in proptest::prop_oneof![proptest::strategy::Just("http://"), proptest::strategy::Just("https://"), proptest::strategy::Just("HTTP://")],
        host in proptest::collection::vec(piece(), 1..6),
        path in proptest::collection::vec(piece(), 0..10),
    ) {
        let raw = format!("{scheme}{}/{}", host.concat(), path.concat());
        if let Some(host) = already_normal(&raw) {
            let parsed = url::Url::parse(&raw).map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{raw}: {e}")))?;
            proptest::prop_assert_eq!(parsed.as_str(), raw.as_str());
            proptest::prop_assert_eq!(Some(host), parsed.host_str());
        }
        // Either way, the domain is found in the URL where it says.
        if let Ok(n) = normal_form(&raw, MAX_URL_LENGTH) {
            let at = n.domain_at.ok_or_else(|| proptest::test_runner::TestCaseError::fail(raw.clone()))?;
            proptest::prop_assert_eq!(n.url.get(at..at + n.domain.len()), Some(&*n.domain));
        }
    }
}

#[test]
fn the_fast_path_takes_common_urls_and_leaves_the_rest() {
    for url in [
        "http://www.d79161.example/p/1736821/index.html?id=1736821",
        "https://a.ru/",
        "http://a-b.c1.ru/%D0%BF?x=%20&y=1&z",
        "http://a.ru/p?x=1?y=2",
    ] {
        assert!(already_normal(url).is_some(), "{url}");
        assert_eq!(normalize(url, MAX_URL_LENGTH).unwrap().url, url);
    }
    // A domain longer than a DNS name (and the database's columns) is refused, on either
    // path; one just short enough, with `www.` before it, is not.
    let long = "a.".repeat(126) + "ru";
    assert_eq!(long.len(), 254);
    for raw in [
        format!("http://{long}/"),
        format!("http://{}/", long.to_uppercase()),
    ] {
        assert_eq!(
            normal_form(&raw, MAX_URL_LENGTH),
            Err(UrlError::DomainTooLong)
        );
    }
    let fits = format!("http://www.b{}/", &long[2..]);
    assert_eq!(
        normal_form(&fits, MAX_URL_LENGTH).unwrap().domain.len(),
        253
    );
    // The domain's place in the URL, on either path.
    for (raw, url, at) in [
        ("http://www.d7.example/p", "http://www.d7.example/p", 11),
        ("https://a.ru/", "https://a.ru/", 8),
        (
            "HTTP://u:p@WWW.Пример.РФ:81/#x",
            "http://u:p@www.xn--e1afmkfd.xn--p1ai:81/",
            15,
        ),
        ("http://[::1]/", "http://[::1]/", 7),
        ("http://www./", "http://www./", 7),
    ] {
        let n = normal_form(raw, MAX_URL_LENGTH).unwrap();
        assert_eq!((&*n.url, n.domain_at), (url, Some(at)), "{raw}");
        assert_eq!(&n.url[at..at + n.domain.len()], n.domain, "{raw}");
    }
    for url in [
        "http://A.ru/",
        "http://a.ru",
        "http://a.ru:8080/",
        "http://u@a.ru/",
        "http://10.0.0.1/",
        "http://a.123/",
        "http://xn--e1afmkfd.xn--p1ai/",
        "http://a.ru/./b",
        "http://a.ru/../b",
        "http://a.ru/a/..",
        "http://a.ru/a/..?x",
        "http://a.ru/.",
        "http://a.ru/%2e%2E/b",
        "http://a.ru/b#f",
        "http://a.ru/b c",
        "http://a.ru/p?q='",
        "http://a..ru/",
        "http://a.ru./",
        " http://a.ru/",
    ] {
        assert!(already_normal(url).is_none(), "{url}");
    }
    let long = format!("http://example.com/{}", "a".repeat(2048));
    assert_eq!(normalize(&long, 2048), Err(UrlError::TooLong(2048)));
}

#[test]
fn bad_urls_say_why() {
    assert_eq!(normalize("ftp://example.com/", 2048), Err(UrlError::Scheme));
    assert_eq!(
        normalize("mailto:x@example.com", 2048),
        Err(UrlError::Scheme)
    );
    assert_eq!(normalize("not a url", 2048), Err(UrlError::Unparsable));
    assert_eq!(normalize("http://", 2048), Err(UrlError::Unparsable));
    let long = format!("http://example.com/{}", "a".repeat(2048));
    assert_eq!(normalize(&long, 2048), Err(UrlError::TooLong(2048)));
    let exactly = format!("http://example.com/{}", "a".repeat(2048 - 19));
    assert_eq!(normalize(&exactly, 2048).unwrap().url.len(), 2048);
    assert_eq!(
        normalize(&"x".repeat(10 << 20), 2048),
        Err(UrlError::TooLong(2048))
    );
}

#[test]
fn query_arguments_and_path_hash() {
    assert_eq!(
        split_query("http://a.ru/p?x=1&y"),
        ("http://a.ru/p", Some("x=1&y"))
    );
    assert_eq!(split_query("http://a.ru/p"), ("http://a.ru/p", None));
    let args: Vec<&str> = query_args("x=1&&y&=3&z=a=b").collect();
    assert_eq!(args, ["x=1", "y", "=3", "z=a=b"]);
    let names: Vec<&str> = args.iter().map(|a| arg_name(a)).collect();
    assert_eq!(names, ["x", "y", "", "z"]);
    let h = path_hash("https://u:p@www.a.ru:8080/p/q?x=1");
    assert_eq!(h, url_id("www.a.ru:8080/p/q"));
    assert_eq!(h, path_hash("http://www.a.ru:8080/p/q"));
    assert_ne!(h, path_hash("http://www.a.ru/p/q"));
    assert_ne!(path_hash("http://a.ru/p"), path_hash("http://a.ru/p/"));
}

#[test]
fn arguments_dropped_as_the_loader_stores_the_url() {
    let drop_sid = |a: &str| arg_name(a) == "sid";
    assert_eq!(
        without_args("http://a.ru/p?id=1&sid=x&b", drop_sid),
        "http://a.ru/p?id=1&b"
    );
    assert_eq!(
        without_args("http://a.ru/p?sid=x&sid=y", drop_sid),
        "http://a.ru/p"
    );
    // Nothing dropped: as it is, empty arguments and all.
    let same = without_args("http://a.ru/p?id=1&&b", drop_sid);
    assert!(matches!(same, Cow::Borrowed("http://a.ru/p?id=1&&b")));
    assert_eq!(
        without_args("http://a.ru/p?id=1&&sid=2", drop_sid),
        "http://a.ru/p?id=1"
    );
    assert_eq!(without_args("http://a.ru/p?", drop_sid), "http://a.ru/p?");
    assert_eq!(without_args("http://a.ru/p", drop_sid), "http://a.ru/p");
}
