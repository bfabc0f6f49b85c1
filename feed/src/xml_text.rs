//! Small helpers over quick-xml's events shared by the sitemap parser and the item extractor.

use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::BytesRef;

/// 1-based line and column (in bytes) of a byte offset in a text held in memory.
pub fn line_col(text: &str, offset: u64) -> (u64, u64) {
    let before = &text.as_bytes()[..(offset as usize).min(text.len())];
    let line = memchr::memchr_iter(b'\n', before).count() as u64 + 1;
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    (line, (before.len() - line_start) as u64 + 1)
}

/// Appends what an entity or character reference stands for. The five predefined entities
/// and character references are decoded; any other entity (a feed's DTD, or HTML's
/// `&nbsp;`) is kept as written, `&name;`, since focuser reads no DTD. A character
/// reference to no character (`&#0;`, `&#xD800;`) is an error.
pub fn push_entity(out: &mut String, r: &BytesRef<'_>) -> Result<(), quick_xml::Error> {
    if let Some(c) = r.resolve_char_ref()? {
        out.push(c);
        return Ok(());
    }
    let name: &str = r;
    match resolve_predefined_entity(name) {
        Some(s) => out.push_str(s),
        None => {
            out.push('&');
            out.push_str(name);
            out.push(';');
        }
    }
    Ok(())
}

/// Appends an attribute value with its references resolved as [`push_entity`] does.
pub fn unescape_into(out: &mut String, raw: &str) -> Result<(), String> {
    let mut rest = raw;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let end = after
            .find(';')
            .ok_or_else(|| "an attribute value has a & without ;".to_string())?;
        push_entity(out, &BytesRef::new(&after[..end])).map_err(|e| e.to_string())?;
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let t = "ab\ncd\n\nef";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 4), (2, 2));
        assert_eq!(line_col(t, 7), (4, 1));
        assert_eq!(line_col(t, 99), (4, 3));
    }

    #[test]
    fn entities() {
        let mut s = String::new();
        for r in ["amp", "#x4e2d", "#65", "nbsp"] {
            push_entity(&mut s, &BytesRef::new(r)).unwrap();
        }
        assert_eq!(s, "&中A&nbsp;");
        assert!(push_entity(&mut s, &BytesRef::new("#0")).is_err());
        let mut a = String::new();
        unescape_into(&mut a, "x &lt;&#x41;&foo; y").unwrap();
        assert_eq!(a, "x <A&foo; y");
        assert!(unescape_into(&mut a, "a & b").is_err());
    }
}
