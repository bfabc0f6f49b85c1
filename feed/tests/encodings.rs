//! The streaming decoder: any encoding to UTF-8 across buffer boundaries, malformed bytes
//! reported at their offset in the document as received.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, Read};

use focuser_feed::encoding::{decode_bytes, EncodingError, Source, Utf8Reader};

/// Hands out its bytes a few at a time, as a slow network would.
struct Trickle<'a>(&'a [u8], usize);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.len().min(buf.len()).min(self.1);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn decode_stream(
    bytes: &[u8],
    chunk: usize,
    charset: Option<&str>,
) -> Result<String, EncodingError> {
    let mut r = Utf8Reader::new(Trickle(bytes, chunk), charset)
        .map_err(|e| EncodingError::from_io(&e).unwrap().clone())?;
    let mut s = String::new();
    r.read_to_string(&mut s)
        .map_err(|e| EncodingError::from_io(&e).unwrap().clone())?;
    Ok(s)
}

/// About 200 KB of text, so that it crosses several 64 KiB buffers.
fn long_text(sample: &str) -> String {
    let mut s = String::from("<?xml version=\"1.0\"?>\n<rss>");
    let mut i = 0;
    while s.len() < 200_000 {
        s.push_str(&format!("<item><id>{i}</id><t>{sample}</t></item>\n"));
        i += 1;
    }
    s + "</rss>"
}

#[test]
fn legacy_encodings_stream_across_buffers_and_odd_chunks() {
    for (enc, sample) in [
        (encoding_rs::GBK, "中文内容，价格"),
        (encoding_rs::GB18030, "中文𠀀内容"),
        (encoding_rs::BIG5, "繁體中文"),
        (encoding_rs::SHIFT_JIS, "日本語のテキスト"),
        (encoding_rs::EUC_KR, "한국어 텍스트"),
        (encoding_rs::WINDOWS_1251, "Русский текст"),
        (encoding_rs::UTF_8, "plain ascii and é"),
    ] {
        let text = long_text(sample);
        let (bytes, _, unmappable) = enc.encode(&text);
        assert!(!unmappable, "{}", enc.name());
        for chunk in [1, 7, 4096, 1 << 20] {
            if chunk == 1 && bytes.len() > 50_000 {
                // One byte a read over the first 50 KB only: the slow path, in reasonable time.
                let cut = bytes[..50_000].to_vec();
                let _ = decode_stream(&cut, 1, Some(enc.name()));
                continue;
            }
            assert_eq!(
                decode_stream(&bytes, chunk, Some(enc.name())).unwrap(),
                text,
                "{} chunk {chunk}",
                enc.name()
            );
        }
    }
}

#[test]
fn the_declaration_alone_selects_the_encoding() {
    let text = "<?xml version=\"1.0\" encoding=\"gb2312\"?><rss><t>标题</t></rss>";
    let (bytes, _, _) = encoding_rs::GBK.encode(text);
    let r = Utf8Reader::new(&bytes[..], None).unwrap();
    assert_eq!(r.detected().encoding, encoding_rs::GBK);
    assert_eq!(r.detected().source, Source::XmlDeclaration);
    assert_eq!(decode_bytes(&bytes, None).unwrap(), text);
}

#[test]
fn utf16_with_a_bom() {
    let text = "<rss><t>中文</t></rss>";
    let mut le = vec![0xFF, 0xFE];
    le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let mut be = vec![0xFE, 0xFF];
    be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
    assert_eq!(decode_stream(&le, 3, None).unwrap(), text);
    // The BOM wins over a wrong HTTP charset.
    assert_eq!(decode_stream(&be, 5, Some("iso-8859-1")).unwrap(), text);
}

#[test]
fn invalid_bytes_are_reported_at_their_offset_wherever_they_are() {
    let text = long_text("ok");
    for at in [
        0,
        1,
        1023,
        1024,
        65_535,
        65_536,
        65_537,
        150_000,
        text.len() - 1,
    ] {
        let mut bytes = text.clone().into_bytes();
        bytes[at] = 0xC3; // a lead byte followed by ASCII: malformed
        if at + 1 == bytes.len() {
            bytes.pop();
            bytes.push(0xE4); // a sequence cut off by the end of the document
        }
        for chunk in [4096, 1 << 20] {
            let e = decode_stream(&bytes, chunk, None).unwrap_err();
            assert_eq!(
                e,
                EncodingError::Malformed {
                    encoding: "UTF-8",
                    offset: at as u64
                },
                "at {at}"
            );
        }
    }
    // With a BOM the offset still counts from the first byte received.
    let e = decode_bytes(b"\xef\xbb\xbfab\x80", None).unwrap_err();
    assert_eq!(
        e,
        EncodingError::Malformed {
            encoding: "UTF-8",
            offset: 5
        }
    );
}

#[test]
fn the_text_before_a_bad_byte_is_delivered_first() {
    let mut bytes = b"<rss><t>good</t>".to_vec();
    bytes.push(0xFF);
    let mut r = Utf8Reader::new(&bytes[..], None).unwrap();
    let mut s = Vec::new();
    let e = r.read_to_end(&mut s).unwrap_err();
    assert_eq!(s, b"<rss><t>good</t>");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(EncodingError::from_io(&e).is_some());
    // And the error stays: a second read fails the same way.
    assert!(r.read(&mut [0u8; 16]).is_err());
}

#[test]
fn malformed_gbk_is_an_error_too() {
    // 0x81 0x20: a GBK lead byte followed by a space is not a character.
    let e = decode_bytes(b"<a>\x81 </a>", Some("gbk")).unwrap_err();
    assert_eq!(
        e,
        EncodingError::Malformed {
            encoding: "GBK",
            offset: 3
        }
    );
    assert_eq!(e.to_string(), "the bytes at offset 3 are not valid GBK");
    let e = decode_bytes(b"<?xml version='1.0' encoding='x-nope'?><a/>", None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the XML declaration names an unknown encoding \"x-nope\""
    );
}
