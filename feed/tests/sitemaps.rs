//! Sitemaps: both forms, every format error, and the messages a person reads in fetch_detail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use focuser_feed::sitemap::{parse, sitemap_md5, LineProblem, SitemapError, SitemapKind};

#[test]
fn a_plain_list_with_crlf_blanks_and_duplicates() {
    let body = b"http://a.example/1.xml\r\n  https://b.example/2.xml\t\r\n\r\n\nhttp://a.example/1.xml\nHTTP://c.example/3";
    let s = parse(body, None).unwrap();
    assert_eq!(s.kind, SitemapKind::UrlList);
    assert_eq!(
        s.urls,
        [
            "http://a.example/1.xml",
            "https://b.example/2.xml",
            "HTTP://c.example/3"
        ]
    );
    assert_eq!(s.md5, sitemap_md5(body));
    assert_eq!(sitemap_md5(b""), "d41d8cd98f00b204e9800998ecf8427e");
}

#[test]
fn xml_urlset_and_sitemapindex_with_entities_and_cdata() {
    let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> http://a.example/feed?x=1&amp;y=2 </loc><lastmod>2026-01-01</lastmod></url>
  <url><loc><![CDATA[http://a.example/b&c]]></loc></url>
  <url><lastmod>no loc here</lastmod></url>
</urlset>"#;
    let s = parse(body, None).unwrap();
    assert_eq!(s.kind, SitemapKind::UrlSet);
    assert_eq!(
        s.urls,
        ["http://a.example/feed?x=1&y=2", "http://a.example/b&c"]
    );

    let body = b"\n <sm:sitemapindex xmlns:sm='x'><sm:sitemap><sm:loc>https://a.example/s1.txt</sm:loc></sm:sitemap></sm:sitemapindex>";
    let s = parse(body, None).unwrap();
    assert_eq!(s.kind, SitemapKind::SitemapIndex);
    assert_eq!(s.urls, ["https://a.example/s1.txt"]);
}

#[test]
fn a_line_not_starting_with_http_is_a_format_error_with_its_line() {
    let e = parse(b"http://ok.example/\nftp://x.example/feed\n", None).unwrap_err();
    match &e {
        SitemapError::Format { bad, count } => {
            assert_eq!(*count, 1);
            assert_eq!(bad[0].line, 2);
            assert_eq!(bad[0].problem, LineProblem::NotHttp);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "the sitemap has a format error: line 2 does not start with http: \"ftp://x.example/feed\""
    );
}

#[test]
fn a_line_of_255_bytes_is_a_format_error_and_254_is_not() {
    let url = |len: usize| format!("http://a.example/{}", "x".repeat(len - 17));
    assert_eq!(url(254).len(), 254);
    assert_eq!(parse(url(254).as_bytes(), None).unwrap().urls, [url(254)]);
    let body = format!("{}\r\n{}\n", url(254), url(255));
    let e = parse(body.as_bytes(), None).unwrap_err();
    match &e {
        SitemapError::Format { bad, .. } => {
            assert_eq!(bad[0].line, 2);
            assert_eq!(bad[0].problem, LineProblem::TooLong(255));
        }
        other => panic!("{other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.starts_with("the sitemap has a format error: line 2 is 255 bytes long (URLs must be shorter than 255)"),
        "{msg}"
    );
    assert!(msg.len() < 200, "{msg}");
    // The same rules hold for <loc>, with the <loc>'s line.
    let xml = format!(
        "<urlset>\n<url>\n<loc>{}</loc></url>\n<url><loc>mailto:x</loc></url></urlset>",
        url(300)
    );
    match parse(xml.as_bytes(), None).unwrap_err() {
        SitemapError::Format { bad, count } => {
            assert_eq!(count, 2);
            assert_eq!(
                (bad[0].line, &bad[0].problem),
                (3, &LineProblem::TooLong(300))
            );
            assert_eq!((bad[1].line, &bad[1].problem), (4, &LineProblem::NotHttp));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn many_bad_lines_are_counted_and_a_few_quoted() {
    let body: String = (0..50).map(|i| format!("bad line {i}\n")).collect();
    let e = parse(body.as_bytes(), None).unwrap_err();
    let msg = e.to_string();
    assert!(msg.ends_with("(50 bad lines in all)"), "{msg}");
    assert_eq!(msg.matches("does not start with http").count(), 3, "{msg}");
}

#[test]
fn empty_sitemaps() {
    for body in [&b""[..], b"\r\n  \n\t\n", b"\xef\xbb\xbf\n"] {
        assert_eq!(parse(body, None), Err(SitemapError::Empty), "{body:?}");
    }
    assert_eq!(parse(b"<urlset/>", None), Err(SitemapError::NoUrls));
    assert_eq!(
        parse(b"<urlset><url><loc> </loc></url></urlset>", None),
        Err(SitemapError::NoUrls)
    );
    assert_eq!(SitemapError::Empty.to_string(), "the sitemap is empty");
}

#[test]
fn broken_xml_says_where() {
    let e = parse(
        b"<urlset>\n<url><loc>http://a/</loc></url>\n<url><loc>http://b/</url>\n</urlset>",
        None,
    )
    .unwrap_err();
    match &e {
        SitemapError::Xml { line, .. } => assert_eq!(*line, 3),
        other => panic!("{other:?}"),
    }
    let truncated =
        parse(b"<urlset>\n<url><loc>http://a/</loc></url>\n<url><lo", None).unwrap_err();
    assert!(
        matches!(truncated, SitemapError::Xml { line: 3, .. }),
        "{truncated:?}"
    );
    let cut_between = parse(b"<urlset>\n<url><loc>http://a/</loc></url>\n", None).unwrap_err();
    assert!(
        cut_between
            .to_string()
            .contains("ends inside <urlset> (truncated?)"),
        "{cut_between}"
    );
    assert_eq!(
        parse(b"<rss><channel/></rss>", None).unwrap_err().to_string(),
        "the XML document is not a sitemap: its root element is <rss>, not <urlset> or <sitemapindex>"
    );
    // Every prefix of a good XML sitemap: an error or URLs, never a panic.
    let good = b"<?xml version='1.0'?><urlset><url><loc>http://a.example/x?a=1&amp;b=2</loc></url><url><loc><![CDATA[http://b.example/]]></loc></url></urlset>";
    for cut in 0..good.len() {
        let _ = parse(&good[..cut], None);
    }
}

#[test]
fn encodings_of_sitemaps() {
    let text = "http://例子.example/饲料.xml\n";
    let (gbk, _, _) = encoding_rs::GBK.encode(text);
    assert_eq!(
        parse(&gbk, Some("gbk")).unwrap().urls,
        ["http://例子.example/饲料.xml"]
    );
    let e = parse(b"http://a.example/\xff\n", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the sitemap cannot be decoded: the bytes at offset 17 are not valid UTF-8"
    );
}
