//! The location list (`Resources.LocationFile`, the source's `locationlist`) and an item's
//! location resolved through it to its `loc_id` (docs/formats.md "Locations").

use std::collections::{HashMap, HashSet};
use std::fmt;

/// The locations an operator listed: names (and aliases) to ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Locations {
    by_name: HashMap<String, u32>,
    ids: HashSet<u32>,
}

/// A location file refused at its first bad line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct LocationFileError {
    pub line: usize,
    pub reason: String,
}

/// An item's location that is neither a name nor an id of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLocation(pub String);

impl fmt::Display for UnknownLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown location \"{}\"", self.0)
    }
}

/// Runs of white space as one space, none at either end: how item values are compared.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Locations {
    /// `<loc_id> <name>` a line (the id a decimal from 1 to 4294967295, the name the rest of
    /// the line); blank lines and `#` comments are skipped. Several names may share an id
    /// (aliases); a name given twice is an error.
    pub fn parse(text: &str) -> Result<Locations, LocationFileError> {
        let mut out = Locations::default();
        for (n, raw) in text.lines().enumerate() {
            let err = |reason: String| LocationFileError {
                line: n + 1,
                reason,
            };
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (id, name) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| err("expected `<loc_id> <name>`".into()))?;
            let id = id
                .parse::<u32>()
                .ok()
                .filter(|&i| i > 0 && id.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| err(format!("\"{id}\" is not a location id (1 to 4294967295)")))?;
            let name = collapse(name);
            if name.chars().count() > 255 {
                return Err(err("the name is longer than 255 characters".into()));
            }
            if let Some(first) = out.by_name.insert(name.clone(), id) {
                return Err(err(format!(
                    "\"{name}\" is listed twice (ids {first} and {id})"
                )));
            }
            out.ids.insert(id);
        }
        Ok(out)
    }

    /// Names (aliases included) listed.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The id of an item's location: a name of the list (white space collapsed, case and
    /// all as written), or one of its ids written in decimal.
    pub fn resolve(&self, value: &str) -> Result<u32, UnknownLocation> {
        let v = collapse(value);
        if let Some(&id) = self.by_name.get(&v) {
            return Ok(id);
        }
        v.parse::<u32>()
            .ok()
            .filter(|id| v.bytes().all(|b| b.is_ascii_digit()) && self.ids.contains(id))
            .ok_or(UnknownLocation(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_resolve() {
        let l = Locations::parse("# cities\n1 北京\n1  Bei  jing \n\n2 上海\n").unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l.resolve("北京"), Ok(1));
        assert_eq!(l.resolve(" Bei jing"), Ok(1));
        assert_eq!(l.resolve("2"), Ok(2));
        assert_eq!(l.resolve("3"), Err(UnknownLocation("3".into())));
        assert_eq!(l.resolve("+2"), Err(UnknownLocation("+2".into())));
        assert_eq!(
            l.resolve("Atlantis").unwrap_err().to_string(),
            "unknown location \"Atlantis\""
        );
    }

    #[test]
    fn bad_lines_name_their_line() {
        let e = |t: &str| Locations::parse(t).unwrap_err();
        assert_eq!(e("1 a\nx b\n").line, 2);
        assert_eq!(e("0 a\n").line, 1);
        assert_eq!(e("+1 a\n").line, 1);
        assert_eq!(e("4294967296 a\n").line, 1);
        assert_eq!(e("1\n").reason, "expected `<loc_id> <name>`");
        assert_eq!(
            e("1 a\n2 a\n").reason,
            "\"a\" is listed twice (ids 1 and 2)"
        );
    }
}
