//! A small HTML tokenizer: tags, their raw attribute text, text, with the raw-text elements
//! (script, style, textarea, …) read to their end tag as one text, and comments, doctypes and
//! processing instructions skipped. It does not decode entities (the tree builder does, for the
//! text it keeps) and never fails: anything that is not a tag is text. Measured against tl,
//! lol_html and html5gum, see docs/multidoc.md.

/// One token of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    /// `name` as written (any case); `attrs` is the raw text between the name and `>`.
    Start {
        name: &'a str,
        attrs: &'a str,
        self_closing: bool,
    },
    End {
        name: &'a str,
    },
    Text(&'a str),
}

/// Elements whose content is text up to their end tag, whatever it looks like.
const RAW_TEXT: [&str; 9] = [
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];

pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    /// After a raw-text element's start tag: its name, whose end tag ends the text.
    raw_until: Option<&'a str>,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            raw_until: None,
        }
    }

    /// Where the next token starts.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    fn raw_text(&mut self, name: &'a str) -> Option<Token<'a>> {
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let mut at = start;
        let end = loop {
            let Some(i) = memchr::memmem::find(&bytes[at..], b"</") else {
                break bytes.len();
            };
            let tag = at + i + 2;
            let matches = bytes
                .get(tag..tag + name.len())
                .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()));
            let ends = bytes
                .get(tag + name.len())
                .is_none_or(|&b| b == b'>' || b == b'/' || b.is_ascii_whitespace());
            if matches && ends {
                break at + i;
            }
            at = tag;
        };
        self.pos = end;
        (end > start).then(|| Token::Text(&self.src[start..end]))
    }

    /// The token starting at `<` (self.pos), or None when it is not markup (then `<` is text).
    fn markup(&mut self) -> Option<Option<Token<'a>>> {
        let bytes = self.src.as_bytes();
        let p = self.pos;
        match bytes.get(p + 1) {
            Some(b'!') => {
                let end = if bytes[p..].starts_with(b"<!--") {
                    memchr::memmem::find(&bytes[p + 4..], b"-->")
                        .map_or(bytes.len(), |i| p + 4 + i + 3)
                } else {
                    memchr::memchr(b'>', &bytes[p..]).map_or(bytes.len(), |i| p + i + 1)
                };
                self.pos = end;
                Some(None)
            }
            Some(b'?') => {
                self.pos = memchr::memchr(b'>', &bytes[p..]).map_or(bytes.len(), |i| p + i + 1);
                Some(None)
            }
            Some(b'/') => match bytes.get(p + 2) {
                Some(b) if b.is_ascii_alphabetic() => {
                    let (name, _, _, end) = self.tag(p + 2);
                    self.pos = end;
                    Some(Some(Token::End { name }))
                }
                Some(b'>') => {
                    self.pos = p + 3;
                    Some(None)
                }
                Some(_) => {
                    self.pos = memchr::memchr(b'>', &bytes[p..]).map_or(bytes.len(), |i| p + i + 1);
                    Some(None)
                }
                None => None,
            },
            Some(b) if b.is_ascii_alphabetic() => {
                let (name, attrs, self_closing, end) = self.tag(p + 1);
                self.pos = end;
                if RAW_TEXT.iter().any(|r| r.eq_ignore_ascii_case(name)) && !self_closing {
                    self.raw_until = Some(name);
                }
                Some(Some(Token::Start {
                    name,
                    attrs,
                    self_closing,
                }))
            }
            _ => None,
        }
    }

    /// A tag whose name starts at `from`: its name, attribute text, whether it ends in `/>`,
    /// and where it ends (after `>`, which quoted attribute values may contain).
    fn tag(&self, from: usize) -> (&'a str, &'a str, bool, usize) {
        let bytes = self.src.as_bytes();
        let name_end = bytes[from..]
            .iter()
            .position(|&b| b == b'>' || b == b'/' || b.is_ascii_whitespace())
            .map_or(bytes.len(), |i| from + i);
        let mut i = name_end;
        let mut after_eq = false;
        let end = loop {
            let Some(&b) = bytes.get(i) else {
                break bytes.len();
            };
            match b {
                b'>' => break i,
                b'"' | b'\'' if after_eq => {
                    i = memchr::memchr(b, &bytes[i + 1..]).map_or(bytes.len(), |j| i + 1 + j);
                    after_eq = false;
                }
                b'=' => after_eq = true,
                b if b.is_ascii_whitespace() => {}
                _ => after_eq = false,
            }
            i += 1;
        };
        let attrs = &self.src[name_end..end];
        let self_closing = attrs.ends_with('/');
        (
            &self.src[from..name_end],
            attrs,
            self_closing,
            (end + 1).min(bytes.len()),
        )
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let bytes = self.src.as_bytes();
        if let Some(name) = self.raw_until.take() {
            if let Some(t) = self.raw_text(name) {
                return Some(t);
            }
        }
        while self.pos < bytes.len() {
            if bytes[self.pos] == b'<' {
                match self.markup() {
                    Some(Some(t)) => return Some(t),
                    Some(None) => continue,
                    None => {}
                }
            }
            // Text up to the next `<` that starts markup.
            let start = self.pos;
            let mut at = start + 1;
            loop {
                match memchr::memchr(b'<', &bytes[at..]) {
                    None => at = bytes.len(),
                    Some(i) => {
                        at += i;
                        let next = bytes.get(at + 1).copied().unwrap_or(b' ');
                        if !(next.is_ascii_alphabetic() || matches!(next, b'/' | b'!' | b'?')) {
                            at += 1;
                            continue;
                        }
                    }
                }
                break;
            }
            self.pos = at;
            return Some(Token::Text(&self.src[start..at]));
        }
        None
    }
}

/// The attributes of a tag's raw attribute text, as (name, value) with the value's quotes
/// removed (entities are not decoded: the names and classes read here do not need it).
pub(crate) fn attributes(raw: &str) -> impl Iterator<Item = (&str, &str)> {
    let bytes = raw.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        let name_start = i;
        while i < bytes.len() && !matches!(bytes[i], b'=' | b'/') && !bytes[i].is_ascii_whitespace()
        {
            i += 1;
        }
        let name = &raw[name_start..i];
        if name.is_empty() {
            i += 1;
            continue;
        }
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes.get(i) != Some(&b'=') {
            return Some((name, ""));
        }
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let value = match bytes.get(i) {
            Some(&q @ (b'"' | b'\'')) => {
                let start = i + 1;
                let end = memchr::memchr(q, &bytes[start..]).map_or(bytes.len(), |j| start + j);
                i = (end + 1).min(bytes.len());
                &raw[start..end]
            }
            _ => {
                let start = i;
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
                &raw[start..i]
            }
        };
        return Some((name, value));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> Vec<Token<'_>> {
        Lexer::new(s).collect()
    }

    #[test]
    fn tags_text_and_raw_text() {
        use Token::*;
        assert_eq!(
            tokens("<P class='a>b'>x < y<!-- <b> --></p><script>if (a</b) '<p>'</SCRIPT >z"),
            vec![
                Start {
                    name: "P",
                    attrs: " class='a>b'",
                    self_closing: false
                },
                Text("x < y"),
                End { name: "p" },
                Start {
                    name: "script",
                    attrs: "",
                    self_closing: false
                },
                Text("if (a</b) '<p>'"),
                End { name: "SCRIPT" },
                Text("z"),
            ]
        );
        assert_eq!(
            tokens("<br/><a"),
            vec![
                Start {
                    name: "br",
                    attrs: "/",
                    self_closing: true
                },
                Start {
                    name: "a",
                    attrs: "",
                    self_closing: false
                },
            ]
        );
        assert_eq!(
            tokens("a</>b<!x>c<?php ?>d</ 3>e"),
            vec![Text("a"), Text("b"), Text("c"), Text("d"), Text("e")]
        );
        assert_eq!(
            tokens("<style>unclosed"),
            vec![
                Start {
                    name: "style",
                    attrs: "",
                    self_closing: false
                },
                Text("unclosed"),
            ]
        );
    }

    #[test]
    fn attributes_quoted_unquoted_and_bare() {
        let a: Vec<_> =
            attributes(r#" id=main class="a b" hidden data-x='1' =odd href=/x/ "#).collect();
        assert_eq!(
            a,
            vec![
                ("id", "main"),
                ("class", "a b"),
                ("hidden", ""),
                ("data-x", "1"),
                ("odd", ""),
                ("href", "/x/")
            ]
        );
    }
}
