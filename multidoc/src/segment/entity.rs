//! Character references in text: numeric ones, and the named ones pages use (the full HTML
//! table has 2 231 names, almost all mathematical; an unknown name is kept as written).

/// Named references, sorted by name for a binary search.
const NAMED: [(&str, char); 62] = [
    ("AElig", 'Æ'),
    ("Aacute", 'Á'),
    ("Eacute", 'É'),
    ("Ouml", 'Ö'),
    ("Uuml", 'Ü'),
    ("aacute", 'á'),
    ("acirc", 'â'),
    ("acute", '´'),
    ("aelig", 'æ'),
    ("agrave", 'à'),
    ("amp", '&'),
    ("apos", '\''),
    ("auml", 'ä'),
    ("bdquo", '„'),
    ("bull", '•'),
    ("ccedil", 'ç'),
    ("cent", '¢'),
    ("copy", '©'),
    ("deg", '°'),
    ("eacute", 'é'),
    ("ecirc", 'ê'),
    ("egrave", 'è'),
    ("emsp", '\u{2003}'),
    ("ensp", '\u{2002}'),
    ("euml", 'ë'),
    ("euro", '€'),
    ("frac12", '½'),
    ("gt", '>'),
    ("hellip", '…'),
    ("iacute", 'í'),
    ("iexcl", '¡'),
    ("iquest", '¿'),
    ("laquo", '«'),
    ("ldquo", '“'),
    ("lrm", '\u{200E}'),
    ("lsaquo", '‹'),
    ("lsquo", '‘'),
    ("lt", '<'),
    ("mdash", '—'),
    ("middot", '·'),
    ("nbsp", '\u{A0}'),
    ("ndash", '–'),
    ("ntilde", 'ñ'),
    ("oacute", 'ó'),
    ("ouml", 'ö'),
    ("para", '¶'),
    ("pound", '£'),
    ("quot", '"'),
    ("raquo", '»'),
    ("rdquo", '”'),
    ("reg", '®'),
    ("rlm", '\u{200F}'),
    ("rsaquo", '›'),
    ("rsquo", '’'),
    ("sbquo", '‚'),
    ("sect", '§'),
    ("shy", '\u{AD}'),
    ("szlig", 'ß'),
    ("thinsp", '\u{2009}'),
    ("times", '×'),
    ("trade", '™'),
    ("uuml", 'ü'),
];

/// Appends `raw` to `out` with its character references decoded.
pub(crate) fn push_decoded(out: &mut String, raw: &str) {
    let mut rest = raw;
    while let Some(i) = memchr::memchr(b'&', rest.as_bytes()) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match reference(rest) {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
}

/// The character a reference at the start of `s` (`&…`) stands for, and its length.
fn reference(s: &str) -> Option<(char, usize)> {
    let body = &s.as_bytes()[1..];
    if let Some(num) = body.strip_prefix(b"#") {
        let (hex, digits) = match num.first() {
            Some(b'x' | b'X') => (true, &num[1..]),
            _ => (false, num),
        };
        let len = digits
            .iter()
            .take(8)
            .take_while(|b| {
                if hex {
                    b.is_ascii_hexdigit()
                } else {
                    b.is_ascii_digit()
                }
            })
            .count();
        if len == 0 {
            return None;
        }
        let text = std::str::from_utf8(&digits[..len]).ok()?;
        let code = u32::from_str_radix(text, if hex { 16 } else { 10 }).ok()?;
        let c = match code {
            0 => '\u{FFFD}',
            // The C1 range means windows-1252 in pages (WHATWG); the common ones:
            0x91 => '‘',
            0x92 => '’',
            0x93 => '“',
            0x94 => '”',
            0x96 => '–',
            0x97 => '—',
            _ => char::from_u32(code).unwrap_or('\u{FFFD}'),
        };
        let used = 2 + usize::from(hex) + len;
        let semi = usize::from(s.as_bytes().get(used) == Some(&b';'));
        return Some((c, used + semi));
    }
    let len = body
        .iter()
        .take(10)
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let name = std::str::from_utf8(&body[..len]).ok()?;
    let i = NAMED.binary_search_by(|(n, _)| n.cmp(&name)).ok()?;
    let semi = usize::from(body.get(len) == Some(&b';'));
    Some((NAMED[i].1, 1 + len + semi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted() {
        assert!(NAMED.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn references_decode_and_others_stay() {
        let mut out = String::new();
        push_decoded(
            &mut out,
            "a &amp; b&nbsp;c &#8212; &#x41;&#X42 &bogus; & &#; &#1114112; &copy",
        );
        assert_eq!(out, "a & b\u{A0}c — AB &bogus; & &#; \u{FFFD} ©");
    }
}
