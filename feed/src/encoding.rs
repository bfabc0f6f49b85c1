//! Bytes of a sitemap or feed → UTF-8, with encoding_rs. Which encoding (first that applies):
//! a byte-order mark, the HTTP charset the caller passes, the XML declaration's `encoding="…"`,
//! UTF-8. Malformed bytes are an error with their byte offset, in every encoding: a feed is
//! never silently altered (docs/formats.md "Feed encodings").

use std::io::{self, BufRead, Read};

use encoding_rs::{Decoder, DecoderResult, Encoding, UTF_8};

/// How much of the start of a document is searched for the XML declaration.
const SNIFF_LEN: usize = 1024;
const BUF_LEN: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    #[error("the XML declaration names an unknown encoding \"{label}\"")]
    UnknownLabel { label: String },
    #[error("the bytes at offset {offset} are not valid {encoding}")]
    Malformed {
        encoding: &'static str,
        /// Offset of the first malformed byte in the document as received.
        offset: u64,
    },
}

impl EncodingError {
    /// The encoding error an `io::Error` of [`Utf8Reader`] carries, if it is one.
    pub fn from_io(e: &io::Error) -> Option<&EncodingError> {
        e.get_ref().and_then(|inner| inner.downcast_ref())
    }
}

/// Where the encoding of a document was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Bom,
    HttpCharset,
    XmlDeclaration,
    Default,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    pub encoding: &'static Encoding,
    pub source: Source,
    /// Length of the byte-order mark to skip.
    pub bom_len: usize,
}

/// The charset parameter of a `Content-Type` header value, without quotes.
pub fn charset_of_content_type(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').trim())
            .filter(|v| !v.is_empty())
    })
}

/// Decides the encoding from the start of a document (`prefix`, at least its first 1 KiB when
/// the document is that long) and the HTTP charset. An HTTP charset encoding_rs does not know
/// is ignored (servers send all sorts); an unknown label in the XML declaration is an error.
pub fn detect(prefix: &[u8], http_charset: Option<&str>) -> Result<Detected, EncodingError> {
    if let Some((encoding, bom_len)) = Encoding::for_bom(prefix) {
        return Ok(Detected {
            encoding,
            source: Source::Bom,
            bom_len,
        });
    }
    if let Some(encoding) = http_charset.and_then(|l| Encoding::for_label(l.trim().as_bytes())) {
        return Ok(Detected {
            encoding,
            source: Source::HttpCharset,
            bom_len: 0,
        });
    }
    let detected = |encoding, source| Detected {
        encoding,
        source,
        bom_len: 0,
    };
    match declared_label(&prefix[..prefix.len().min(SNIFF_LEN)]) {
        Some(label) => match Encoding::for_label(label) {
            // A declaration readable as ASCII cannot be in UTF-16: the WHATWG rule is UTF-8.
            Some(e) if e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE => {
                Ok(detected(UTF_8, Source::XmlDeclaration))
            }
            Some(e) => Ok(detected(e, Source::XmlDeclaration)),
            None => Err(EncodingError::UnknownLabel {
                label: String::from_utf8_lossy(label).into_owned(),
            }),
        },
        None => Ok(detected(UTF_8, Source::Default)),
    }
}

/// The `encoding` pseudo-attribute of a leading `<?xml …?>` declaration.
fn declared_label(prefix: &[u8]) -> Option<&[u8]> {
    let decl = prefix.strip_prefix(b"<?xml")?;
    let end = memchr::memmem::find(decl, b"?>")?;
    let decl = &decl[..end];
    let at = memchr::memmem::find(decl, b"encoding")?;
    let rest = decl[at + b"encoding".len()..].trim_ascii_start();
    let rest = rest.strip_prefix(b"=")?.trim_ascii_start();
    let (&quote, rest) = rest.split_first()?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    let len = memchr::memchr(quote, rest)?;
    Some(rest[..len].trim_ascii())
}

/// Decodes a whole document held in memory (a sitemap) into UTF-8.
pub fn decode_bytes(bytes: &[u8], http_charset: Option<&str>) -> Result<String, EncodingError> {
    let mut reader = Utf8Reader::new(bytes, http_charset).map_err(into_encoding_error)?;
    let mut text = String::with_capacity(bytes.len());
    reader
        .read_to_string(&mut text)
        .map_err(into_encoding_error)?;
    Ok(text)
}

/// GBK text read from a customer's database column (docs/formats.md "Customer resources") →
/// UTF-8. Malformed bytes are an error with the offset of the first, never replaced.
pub fn decode_gbk(bytes: &[u8]) -> Result<String, EncodingError> {
    let mut decoder = encoding_rs::GBK.new_decoder_without_bom_handling();
    let cap = decoder
        .max_utf8_buffer_length_without_replacement(bytes.len())
        .unwrap_or(bytes.len() * 3 + 16);
    let mut text = String::with_capacity(cap);
    let (result, read) = decoder.decode_to_string_without_replacement(bytes, &mut text, true);
    match result {
        DecoderResult::InputEmpty => Ok(text),
        DecoderResult::Malformed(bad, after) => Err(EncodingError::Malformed {
            encoding: "GBK",
            offset: read.saturating_sub(usize::from(bad) + usize::from(after)) as u64,
        }),
        // The buffer was sized for the whole input.
        DecoderResult::OutputFull => Err(EncodingError::Malformed {
            encoding: "GBK",
            offset: read as u64,
        }),
    }
}

/// UTF-8 → GBK bytes for a customer's database column. A character GBK has not is written
/// as an HTML numeric character reference (`&#128512;`), as encoding_rs does; so is `€`,
/// which WHATWG's GBK writes as the single byte 0x80 that MySQL's gbk refuses.
pub fn encode_gbk(text: &str) -> Vec<u8> {
    let text = text.replace('€', "&#8364;");
    encoding_rs::GBK.encode(&text).0.into_owned()
}

/// Reading a slice fails only with an encoding error.
fn into_encoding_error(e: io::Error) -> EncodingError {
    EncodingError::from_io(&e)
        .cloned()
        .unwrap_or(EncodingError::Malformed {
            encoding: "the declared encoding",
            offset: 0,
        })
}

/// A streaming decoder: reads a document in any encoding and yields it as UTF-8 in buffers
/// of 64 KiB, so a feed of any size is decoded in constant memory. A malformed byte ends the
/// stream with an `io::Error` of kind `InvalidData` carrying an [`EncodingError`], after the
/// valid text before it has been delivered.
pub struct Utf8Reader<R> {
    inner: R,
    detected: Detected,
    decoder: Decoder,
    input: Box<[u8]>,
    in_start: usize,
    in_end: usize,
    /// Bytes of the document handed to the decoder so far (including the BOM).
    consumed: u64,
    input_done: bool,
    finished: bool,
    output: Box<[u8]>,
    out_start: usize,
    out_end: usize,
    failed: Option<EncodingError>,
}

impl<R: Read> Utf8Reader<R> {
    /// Reads the start of the document to decide its encoding. Errors are I/O errors of
    /// `inner` or an [`EncodingError`] (see [`EncodingError::from_io`]).
    pub fn new(mut inner: R, http_charset: Option<&str>) -> io::Result<Self> {
        let mut input = vec![0u8; BUF_LEN].into_boxed_slice();
        let mut filled = 0;
        let mut input_done = false;
        while filled < SNIFF_LEN {
            match inner.read(&mut input[filled..]) {
                Ok(0) => {
                    input_done = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let detected = detect(&input[..filled], http_charset).map_err(invalid_data)?;
        Ok(Utf8Reader {
            inner,
            detected,
            decoder: detected.encoding.new_decoder_without_bom_handling(),
            input,
            in_start: detected.bom_len,
            in_end: filled,
            consumed: detected.bom_len as u64,
            input_done,
            finished: false,
            output: vec![0u8; BUF_LEN].into_boxed_slice(),
            out_start: 0,
            out_end: 0,
            failed: None,
        })
    }

    pub fn detected(&self) -> Detected {
        self.detected
    }
}

fn invalid_data(e: EncodingError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl<R: Read> BufRead for Utf8Reader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.out_start == self.out_end {
            if let Some(e) = &self.failed {
                return Err(invalid_data(e.clone()));
            }
            if self.finished {
                return Ok(&[]);
            }
            if self.in_start == self.in_end && !self.input_done {
                match self.inner.read(&mut self.input) {
                    Ok(0) => self.input_done = true,
                    Ok(n) => (self.in_start, self.in_end) = (0, n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            let last = self.input_done;
            let (result, read, written) = self.decoder.decode_to_utf8_without_replacement(
                &self.input[self.in_start..self.in_end],
                &mut self.output,
                last,
            );
            self.in_start += read;
            self.consumed += read as u64;
            (self.out_start, self.out_end) = (0, written);
            match result {
                DecoderResult::InputEmpty => self.finished = last,
                DecoderResult::OutputFull => {}
                DecoderResult::Malformed(bad, extra) => {
                    self.failed = Some(EncodingError::Malformed {
                        encoding: self.detected.encoding.name(),
                        offset: self.consumed - u64::from(bad) - u64::from(extra),
                    });
                }
            }
        }
        Ok(&self.output[self.out_start..self.out_end])
    }

    fn consume(&mut self, amt: usize) {
        self.out_start = (self.out_start + amt).min(self.out_end);
    }
}

impl<R: Read> Read for Utf8Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, buf)
    }
}

/// `Read::read` of a reader whose `BufRead` side does the work.
pub(crate) fn read_buffered(r: &mut impl BufRead, buf: &mut [u8]) -> io::Result<usize> {
    let available = r.fill_buf()?;
    let n = available.len().min(buf.len());
    buf[..n].copy_from_slice(&available[..n]);
    r.consume(n);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gbk_both_ways() {
        let b = encode_gbk("北京 A€😀");
        assert_eq!(&b[..4], &[0xB1, 0xB1, 0xBE, 0xA9]);
        assert_eq!(decode_gbk(&b).unwrap(), "北京 A&#8364;&#128512;");
        assert_eq!(
            decode_gbk(b"ab\xB1\xB1\xFF").unwrap_err(),
            EncodingError::Malformed {
                encoding: "GBK",
                offset: 4
            }
        );
        assert!(decode_gbk(b"\xB1").is_err());
    }

    #[test]
    fn the_encoding_comes_from_bom_then_http_then_declaration() {
        let gbk_decl = br#"<?xml version="1.0" encoding="GBK"?><a/>"#;
        assert_eq!(detect(gbk_decl, None).unwrap().encoding, encoding_rs::GBK);
        assert_eq!(
            detect(gbk_decl, Some("big5")).unwrap().source,
            Source::HttpCharset
        );
        assert_eq!(
            detect(gbk_decl, Some("no-such-charset")).unwrap().source,
            Source::XmlDeclaration
        );
        let bom = [&[0xEF, 0xBB, 0xBF][..], gbk_decl].concat();
        let d = detect(&bom, Some("big5")).unwrap();
        assert_eq!((d.encoding, d.source, d.bom_len), (UTF_8, Source::Bom, 3));
        assert_eq!(detect(b"<a/>", None).unwrap().source, Source::Default);
        assert_eq!(
            detect(b"<?xml version='1.0' encoding = 'utf-16'?>", None)
                .unwrap()
                .encoding,
            UTF_8
        );
        assert_eq!(
            detect(b"<?xml version='1.0' encoding='klingon'?>", None),
            Err(EncodingError::UnknownLabel {
                label: "klingon".into()
            })
        );
    }

    #[test]
    fn content_type_charset() {
        assert_eq!(
            charset_of_content_type("text/xml; Charset=\"GB2312\""),
            Some("GB2312")
        );
        assert_eq!(charset_of_content_type("text/xml"), None);
        assert_eq!(charset_of_content_type("text/xml; charset="), None);
    }

    #[test]
    fn malformed_bytes_are_an_error_with_their_offset() {
        let e = decode_bytes(b"abc\xffdef", None).unwrap_err();
        assert_eq!(
            e,
            EncodingError::Malformed {
                encoding: "UTF-8",
                offset: 3
            }
        );
        assert_eq!(e.to_string(), "the bytes at offset 3 are not valid UTF-8");
        // A sequence cut off by the end of the document.
        let e = decode_bytes(b"ab\xe4\xb8", None).unwrap_err();
        assert!(
            matches!(e, EncodingError::Malformed { offset: 2, .. }),
            "{e}"
        );
    }

    #[test]
    fn legacy_encodings_decode() {
        for (enc, text) in [
            (encoding_rs::GBK, "中文内容"),
            (encoding_rs::GB18030, "中文内容𠀀"),
            (encoding_rs::BIG5, "繁體中文"),
            (encoding_rs::SHIFT_JIS, "日本語のテキスト"),
            (encoding_rs::WINDOWS_1251, "Русский текст"),
        ] {
            let (bytes, _, unmappable) = enc.encode(text);
            assert!(!unmappable);
            assert_eq!(decode_bytes(&bytes, Some(enc.name())).unwrap(), text);
        }
    }
}
