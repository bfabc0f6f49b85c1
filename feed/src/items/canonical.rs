//! The canonical form of an item and its MD5 (docs/formats.md "Item canonical form"): what
//! is stored in `vr_data.content`, emitted to the segments, and compared between runs.

use md5::{Digest, Md5};

use super::rules::Field;

/// Appends `text` with XML white space (space, tab, CR, LF) collapsed: runs inside become one
/// space, none is kept at either end. `pending_space` carries a run that ended a previous
/// piece of the same value, so a value may be appended in pieces.
pub(crate) fn push_collapsed(out: &mut String, text: &str, pending_space: &mut bool) {
    let is_ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut rest = text;
    while !rest.is_empty() {
        let bytes = rest.as_bytes();
        let ws = bytes.iter().take_while(|&&b| is_ws(b)).count();
        if ws > 0 {
            *pending_space = true;
            rest = &rest[ws..];
            continue;
        }
        let word = rest.bytes().take_while(|&b| !is_ws(b)).count();
        if *pending_space && !out.is_empty() {
            out.push(' ');
        }
        *pending_space = false;
        out.push_str(&rest[..word]);
        rest = &rest[word..];
    }
}

/// Appends `s` as a JSON string, escaped exactly as serde_json does: `"` and `\`, the
/// control characters U+0000–U+001F (`\b \t \n \f \r` by name, the rest as `\u00XX`),
/// everything else as is.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\x08' => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            b'\x0c' => "\\f",
            b'\r' => "\\r",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Writes the canonical form of an item into `out` (cleared first): one JSON object without
/// white space,
/// `{"key":K,"fields":[{"name":N,"flags":F,"index_type":T,"group_type":G,"values":[V,…]},…]}`
/// with the fields in rule order and the values in document order.
pub(crate) fn write<'v>(
    out: &mut String,
    key: &str,
    fields: &[Field],
    mut values_of: impl FnMut(usize) -> &'v [(u32, u32)],
    arena: &str,
) {
    out.clear();
    out.push_str("{\"key\":");
    push_json_str(out, key);
    out.push_str(",\"fields\":[");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        push_json_str(out, &f.rule.label_name);
        out.push_str(",\"flags\":\"");
        out.push_str(&f.flags);
        out.push_str("\",\"index_type\":");
        out.push_str(&f.rule.index_type.to_string());
        out.push_str(",\"group_type\":");
        out.push_str(&f.rule.group_type.to_string());
        out.push_str(",\"values\":[");
        for (j, &(a, b)) in values_of(i).iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            push_json_str(out, &arena[a as usize..b as usize]);
        }
        out.push_str("]}");
    }
    out.push_str("]}");
}

/// Lower-case hex MD5 of a canonical form (`vr_data.md5_sum`).
pub fn md5_hex(canonical: &str) -> String {
    crate::hex::encode(&Md5::digest(canonical.as_bytes()))
}

/// XXH3-128 of a canonical form: equal canonical forms, equal digests; the item digest file
/// keeps it per key so that an unchanged item is known without its MD5.
pub fn digest(canonical: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(canonical.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collapsed(pieces: &[&str]) -> String {
        let mut out = String::new();
        let mut pending = false;
        for p in pieces {
            push_collapsed(&mut out, p, &mut pending);
        }
        out
    }

    #[test]
    fn white_space_collapses_across_pieces() {
        assert_eq!(collapsed(&["  a \r\n\t b  "]), "a b");
        assert_eq!(collapsed(&["a", "b"]), "ab");
        assert_eq!(collapsed(&["a ", " b", " "]), "a b");
        assert_eq!(collapsed(&["", "  ", "x"]), "x");
        assert_eq!(collapsed(&["中\u{a0}文"]), "中\u{a0}文");
    }

    proptest::proptest! {
        #[test]
        fn json_escaping_is_serde_jsons(s in "\\PC*|[\\x00-\\x1f\"\\\\a-z]*") {
            let mut out = String::new();
            push_json_str(&mut out, &s);
            proptest::prop_assert_eq!(out, serde_json::to_string(&s).unwrap());
        }
    }

    #[test]
    fn md5_and_digest_of_a_canonical_form() {
        assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
        // XXH3-128's published value for the empty input.
        assert_eq!(digest(""), 0x99aa06d3014798d86001c324468d497f);
        assert_eq!(digest(r#"{"key":"a"}"#), digest(r#"{"key":"a"}"#));
        assert_ne!(digest(r#"{"key":"a"}"#), digest(r#"{"key":"b"}"#));
    }

    #[test]
    fn json_escaping() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\n\u{1}\u{7f}中");
        assert_eq!(s, r#""a\"b\\c\n\u0001"#.to_string() + "\u{7f}中\"");
    }
}
