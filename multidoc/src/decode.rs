//! Bytes of a fetched page → text. The charset comes from, in this order: a byte-order mark, the
//! HTTP header's charset (the caller passes it, see `focuser_feed::encoding::charset_of_content_type`),
//! a `<meta>` declaration anywhere in the first [`META_SCAN`] bytes (a page may put a long script
//! before it, which a browser's 1 KiB prescan would miss), else chardetng fed a short sample.
//! Malformed bytes become U+FFFD: a page is analysed as well as it can be, never refused for one
//! bad byte. Empty bodies, binary data and pages over the size limit are errors.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8, WINDOWS_1252, X_USER_DEFINED};

/// How far into a page a `<meta>` charset is looked for.
pub const META_SCAN: usize = 64 * 1024;
/// How many bytes with their high bit set the detector is fed at most (it needs no more).
const SAMPLE_NON_ASCII: usize = 4096;
/// The start of a page that is looked at for binary data.
const BINARY_SNIFF: usize = 1024;
/// The default size limit of a page (bytes), see [`decode`].
pub const DEFAULT_MAX_BYTES: usize = 16 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the body is empty")]
    Empty,
    #[error("the body is {bytes} bytes, over the limit of {limit}")]
    TooLarge { bytes: usize, limit: usize },
    #[error("the body is binary data ({what}), not text")]
    Binary { what: &'static str },
}

/// Where the charset of a page was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharsetFrom {
    Bom,
    Header,
    Meta,
    Detector,
}

/// A page's text and how its charset was decided.
#[derive(Debug)]
pub struct Decoded<'a> {
    /// Borrowed when the page was valid UTF-8.
    pub text: Cow<'a, str>,
    pub encoding: &'static Encoding,
    pub from: CharsetFrom,
    /// Whether some bytes were malformed in that encoding (they became U+FFFD).
    pub had_errors: bool,
}

/// Decodes a page of at most `max_bytes` bytes.
pub fn decode<'a>(
    body: &'a [u8],
    http_charset: Option<&str>,
    max_bytes: usize,
) -> Result<Decoded<'a>, DecodeError> {
    if body.is_empty() {
        return Err(DecodeError::Empty);
    }
    if body.len() > max_bytes {
        return Err(DecodeError::TooLarge {
            bytes: body.len(),
            limit: max_bytes,
        });
    }
    let (encoding, from) = charset(body, http_charset)?;
    // A BOM is removed whatever the source, as browsers do (and its encoding wins).
    let (encoding, body) = match Encoding::for_bom(body) {
        Some((e, len)) => (e, &body[len..]),
        None => (encoding, body),
    };
    // Valid UTF-8, or ASCII in an ASCII-compatible encoding, is the page's own bytes.
    let borrowed = if encoding == UTF_8 || (encoding.is_ascii_compatible() && body.is_ascii()) {
        std::str::from_utf8(body).ok()
    } else {
        None
    };
    let (text, had_errors) = match borrowed {
        Some(text) => (Cow::Borrowed(text), false),
        None => {
            let (text, had_errors) = decode_owned(encoding, body);
            (Cow::Owned(text), had_errors)
        }
    };
    Ok(Decoded {
        text,
        encoding,
        from,
        had_errors,
    })
}

/// Decodes in chunks, so that the text is not allocated for the worst case of the whole page
/// at once (encoding_rs reserves up to three bytes of UTF-8 for each byte of windows-1252).
fn decode_owned(encoding: &'static Encoding, body: &[u8]) -> (String, bool) {
    const CHUNK: usize = 16 * 1024;
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut text = String::with_capacity(body.len() + body.len() / 4);
    let mut had_errors = false;
    let mut chunks = body.chunks(CHUNK).peekable();
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let mut src = chunk;
        loop {
            let need = decoder
                .max_utf8_buffer_length(src.len())
                .unwrap_or(src.len() * 3 + 16);
            text.reserve(need.min(CHUNK * 3 + 16));
            let (result, read, errors) = decoder.decode_to_string(src, &mut text, last);
            had_errors |= errors;
            src = &src[read..];
            if result == encoding_rs::CoderResult::InputEmpty {
                break;
            }
        }
    }
    (text, had_errors)
}

/// The encoding of a page and where it was found.
pub fn charset(
    body: &[u8],
    http_charset: Option<&str>,
) -> Result<(&'static Encoding, CharsetFrom), DecodeError> {
    if let Some((encoding, _)) = Encoding::for_bom(body) {
        return Ok((encoding, CharsetFrom::Bom));
    }
    if let Some(what) = binary_kind(body) {
        return Err(DecodeError::Binary { what });
    }
    if let Some(e) = http_charset.and_then(|l| Encoding::for_label(l.trim().as_bytes())) {
        return Ok((ascii_compatible(e), CharsetFrom::Header));
    }
    if let Some(e) = meta_charset(&body[..body.len().min(META_SCAN)]) {
        return Ok((ascii_compatible(e), CharsetFrom::Meta));
    }
    Ok((detect(body), CharsetFrom::Detector))
}

/// A label read from ASCII text cannot mean UTF-16 (the WHATWG rule: UTF-8), and
/// x-user-defined means windows-1252 for HTML.
fn ascii_compatible(e: &'static Encoding) -> &'static Encoding {
    if e == UTF_16LE || e == UTF_16BE {
        UTF_8
    } else if e == X_USER_DEFINED {
        WINDOWS_1252
    } else {
        e
    }
}

/// Signatures of the binary formats a crawler meets in place of a page, and NUL bytes (which
/// no ASCII-compatible text has; UTF-16 text without a BOM is not supported).
fn binary_kind(body: &[u8]) -> Option<&'static str> {
    const MAGIC: [(&[u8], &str); 9] = [
        (b"\x89PNG", "PNG"),
        (b"GIF8", "GIF"),
        (b"\xFF\xD8\xFF", "JPEG"),
        (b"%PDF-", "PDF"),
        (b"PK\x03\x04", "ZIP"),
        (b"\x1F\x8B", "gzip"),
        (b"RIFF", "RIFF"),
        (b"\x7FELF", "ELF"),
        (b"wOF", "web font"),
    ];
    if let Some((_, what)) = MAGIC.iter().find(|(m, _)| body.starts_with(m)) {
        return Some(what);
    }
    let head = &body[..body.len().min(BINARY_SNIFF)];
    let nuls = head.iter().filter(|&&b| b == 0).count();
    (nuls > 0).then_some("NUL bytes")
}

/// The charset of the first `<meta charset=…>` or `<meta http-equiv content="…; charset=…">`.
fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let finder = memchr::memmem::Finder::new(b"<meta");
    let mut at = 0;
    while let Some(i) = find_ci(&finder, &head[at..]) {
        let tag_start = at + i + 5;
        let len = memchr::memchr(b'>', &head[tag_start..])?;
        let tag = &head[tag_start..tag_start + len];
        if let Some(e) = charset_in_tag(tag) {
            return Some(e);
        }
        at = tag_start + len;
    }
    None
}

/// `<meta` in any case: the finder looks for the lower-case form, then the upper/mixed case
/// forms are checked byte by byte around each `<`.
fn find_ci(finder: &memchr::memmem::Finder, hay: &[u8]) -> Option<usize> {
    let lower = finder.find(hay);
    let mixed = memchr::memchr_iter(b'<', hay)
        .take_while(|&i| lower.is_none_or(|l| i < l))
        .find(|&i| {
            hay.get(i + 1..i + 5)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"meta"))
        });
    mixed.or(lower)
}

fn charset_in_tag(tag: &[u8]) -> Option<&'static Encoding> {
    let lower: Vec<u8> = tag.to_ascii_lowercase();
    let at = memchr::memmem::find(&lower, b"charset")?;
    let rest = tag[at + 7..].trim_ascii_start();
    let rest = rest.strip_prefix(b"=")?.trim_ascii_start();
    let rest = rest
        .strip_prefix(b"\"")
        .or_else(|| rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') || b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    Encoding::for_label(&rest[..end])
}

/// chardetng on a sample: the page's bytes up to the [`SAMPLE_NON_ASCII`]-th non-ASCII byte
/// (ASCII tells the detector nothing, and a whole page would cost time for no gain).
fn detect(body: &[u8]) -> &'static Encoding {
    let mut seen = 0;
    let end = body
        .iter()
        .position(|&b| {
            seen += usize::from(b >= 0x80);
            seen > SAMPLE_NON_ASCII
        })
        .unwrap_or(body.len());
    // Do not cut a UTF-8 sequence in two: back up to the start of a character.
    let mut cut = end;
    while cut > 0 && cut < body.len() && (body[cut] & 0xC0) == 0x80 && end - cut < 4 {
        cut -= 1;
    }
    let mut detector = chardetng::EncodingDetector::new();
    detector.feed(&body[..cut], cut == body.len());
    detector.guess(None, true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn meta_is_found_in_any_case_and_form() {
        let e = |s: &str| meta_charset(s.as_bytes()).map(|e| e.name());
        assert_eq!(e("<META CHARSET=\"koi8-r\">"), Some("KOI8-R"));
        assert_eq!(
            e("<meta http-equiv=Content-Type content='text/html; charset=windows-1251'>"),
            Some("windows-1251")
        );
        assert_eq!(e("<Meta charset=gb2312/>"), Some("GBK"));
        assert_eq!(e("<meta name=x><meta charset=utf-8>"), Some("UTF-8"));
        assert_eq!(e("<meta charset=nonsense>"), None);
        assert_eq!(e("<meta charset"), None);
    }

    #[test]
    fn header_and_bom_come_first_and_utf16_labels_mean_utf8() {
        let page = b"<meta charset=koi8-r>abc";
        assert_eq!(
            charset(page, Some("windows-1251")).unwrap(),
            (encoding_rs::WINDOWS_1251, CharsetFrom::Header)
        );
        assert_eq!(
            charset(page, Some("utf-16")).unwrap(),
            (UTF_8, CharsetFrom::Header)
        );
        let bom = b"\xEF\xBB\xBF<meta charset=koi8-r>";
        assert_eq!(
            charset(bom, Some("koi8-r")).unwrap(),
            (UTF_8, CharsetFrom::Bom)
        );
        assert_eq!(
            decode(bom, None, 100).unwrap().text,
            "<meta charset=koi8-r>"
        );
    }

    #[test]
    fn empty_binary_and_too_large_are_errors() {
        assert_eq!(decode(b"", None, 10).unwrap_err(), DecodeError::Empty);
        assert!(matches!(
            decode(b"\x89PNG\r\n\x1a\n", None, 100),
            Err(DecodeError::Binary { what: "PNG" })
        ));
        assert!(matches!(
            decode(b"<p>a\0b", None, 100),
            Err(DecodeError::Binary { .. })
        ));
        assert_eq!(
            decode(b"0123456789a", None, 10).unwrap_err(),
            DecodeError::TooLarge {
                bytes: 11,
                limit: 10
            }
        );
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let d = decode(b"<p>ok \xFF\xFE\xC3 end", Some("utf-8"), 100).unwrap();
        assert!(d.had_errors);
        assert_eq!(d.text, "<p>ok \u{FFFD}\u{FFFD}\u{FFFD} end");
    }
}
