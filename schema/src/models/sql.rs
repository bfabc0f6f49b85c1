//! Multi-row statements from hand-written `.sql` files.
//!
//! A statement that takes a variable number of rows marks the parenthesised group to repeat
//! with `/*repeat*/` right after it: `VALUES (?, ?) /*repeat*/` becomes
//! `VALUES (?, ?), (?, ?), (?, ?)` for three rows. Values are still bound, never spliced in.

const MARKER: &str = "/*repeat*/";

/// A `.sql` file's statement: its comment lines (which hold no placeholder) left out.
pub(crate) fn statement(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `sql` with its marked group written `rows` times (at least once).
pub(crate) fn repeat(sql: &str, rows: usize) -> String {
    let Some(at) = sql.find(MARKER) else {
        return sql.to_string();
    };
    let head = sql[..at].trim_end();
    let mut depth = 0usize;
    let mut open = None;
    for (i, c) in head.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    open = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(open) = open else {
        return sql.replacen(MARKER, "", 1);
    };
    let group = &head[open..];
    let mut out = String::with_capacity(sql.len() + group.len() * rows * 2);
    out.push_str(&head[..open]);
    for i in 0..rows.max(1) {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(group);
    }
    out.push_str(&sql[at + MARKER.len()..]);
    out
}

#[cfg(test)]
mod tests {
    use super::repeat;

    #[test]
    fn the_marked_group_is_repeated() {
        assert_eq!(
            repeat("INSERT INTO t VALUES (?, (?)) /*repeat*/ ON X", 3),
            "INSERT INTO t VALUES (?, (?)), (?, (?)), (?, (?)) ON X"
        );
        assert_eq!(
            repeat("SELECT 1 WHERE a IN ((?) /*repeat*/)", 2),
            "SELECT 1 WHERE a IN ((?), (?))"
        );
        assert_eq!(repeat("SELECT (?) /*repeat*/", 0), "SELECT (?)");
        assert_eq!(repeat("SELECT 1", 5), "SELECT 1");
    }
}
