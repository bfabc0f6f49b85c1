//! The config file's lines (`key = value   # comment`) into a tree of dotted keys.
//!
//! `Filter.Window = 3600` becomes the leaf `Window` below the branch `Filter`, so that serde can
//! type it into a nested struct (or a map, for groups such as `Index.1.Addresses`). Every node
//! keeps the line it came from, so that errors can name it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::clip;

/// The largest config file read: real ones are a few KiB, and neither `/dev/zero` nor a
/// runaway generator may fill the daemon's memory.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A parsed value or group of values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Leaf {
        key: String,
        value: String,
        line: usize,
    },
    Branch {
        key: String,
        line: usize,
        children: Vec<(String, Node)>,
    },
}

impl Node {
    pub(crate) fn root() -> Node {
        Node::Branch {
            key: String::new(),
            line: 0,
            children: Vec::new(),
        }
    }

    /// The full dotted key of this node.
    pub(crate) fn key(&self) -> &str {
        match self {
            Node::Leaf { key, .. } | Node::Branch { key, .. } => key,
        }
    }

    /// The line that defined this node (for a branch, the first of its keys).
    pub(crate) fn line(&self) -> usize {
        match self {
            Node::Leaf { line, .. } | Node::Branch { line, .. } => *line,
        }
    }

    /// Inserts `value` under the dotted `key`. Errors name what the key collides with.
    fn insert(&mut self, key: &str, value: String, line: usize) -> Result<(), String> {
        let segments: Vec<&str> = key.split('.').collect();
        let mut node = self;
        for (i, segment) in segments.iter().enumerate() {
            let full = segments[..=i].join(".");
            let last = i + 1 == segments.len();
            let Node::Branch { children, .. } = node else {
                return Err(format!(
                    "{}: {} already has a value",
                    clip(key),
                    clip(node.key())
                ));
            };
            let pos = children.iter().position(|(name, _)| name == segment);
            match (pos, last) {
                (Some(p), true) => {
                    let prior = &children[p].1;
                    return Err(match prior {
                        Node::Leaf { line: l, .. } => {
                            format!("{} given twice (first at line {l})", clip(key))
                        }
                        Node::Branch { .. } => {
                            let key = clip(key);
                            format!("{key} is a group of keys ({key}.*) and cannot have a value")
                        }
                    });
                }
                (None, true) => {
                    children.push((
                        segment.to_string(),
                        Node::Leaf {
                            key: full,
                            value,
                            line,
                        },
                    ));
                    return Ok(());
                }
                (Some(p), false) => node = &mut children[p].1,
                (None, false) => {
                    children.push((
                        segment.to_string(),
                        Node::Branch {
                            key: full,
                            line,
                            children: Vec::new(),
                        },
                    ));
                    let last_index = children.len() - 1;
                    node = &mut children[last_index].1;
                }
            }
        }
        Ok(())
    }

    /// Every key below this node (groups too) with the line that defined it.
    pub(crate) fn lines(&self, out: &mut std::collections::HashMap<String, usize>) {
        if let Node::Branch { children, .. } = self {
            for (_, child) in children {
                out.insert(child.key().to_string(), child.line());
                child.lines(out);
            }
        }
    }

    /// Splits the root into the keys whose first segment is in `names` and the rest.
    pub(crate) fn split(self, names: &[&str]) -> (Node, Node) {
        let Node::Branch { children, .. } = self else {
            return (Node::root(), self);
        };
        let (mine, rest): (Vec<_>, Vec<_>) = children
            .into_iter()
            .partition(|(name, _)| names.contains(&name.as_str()));
        let branch = |children| Node::Branch {
            key: String::new(),
            line: 0,
            children,
        };
        (branch(mine), branch(rest))
    }
}

/// A syntax error: the line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub line: usize,
    pub message: String,
}

/// Parses the text of a config file.
pub(crate) fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut root = Node::root();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let err = |message: String| SyntaxError { line, message };
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, rest)) = trimmed.split_once('=') else {
            return Err(err(format!(
                "expected `key = value`, found {:?}",
                clip(trimmed)
            )));
        };
        let key = key.trim();
        if !valid_key(key) {
            return Err(err(format!(
                "bad key {:?}: keys are letters, digits, `_` and `-`, joined by dots",
                clip(key)
            )));
        }
        let value = parse_value(rest).map_err(|m| err(format!("{}: {m}", clip(key))))?;
        root.insert(key, value, line).map_err(err)?;
    }
    Ok(root)
}

/// Reads a config file: a regular file (a FIFO or device is refused without blocking on it)
/// of at most [`MAX_CONFIG_BYTES`].
fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot read: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("cannot read: not a regular file".to_string());
    }
    let too_big = || format!("cannot read: larger than {MAX_CONFIG_BYTES} bytes (1 MiB)");
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(too_big());
    }
    // The size may change under us: never read more than the cap anyway.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    File::take(file, MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Reads and parses a config file; the error is `(line, message)`, line 0 for I/O.
pub(crate) fn parse_file(path: &Path) -> Result<Node, SyntaxError> {
    let bytes = read_file(path).map_err(|message| SyntaxError { line: 0, message })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        SyntaxError {
            line,
            message: "not valid UTF-8".to_string(),
        }
    })?;
    parse(&text)
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|segment| {
            !segment.is_empty()
                && segment
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// The value after `=`: a double-quoted string (with `\"` and `\\` escapes) or the bare text up
/// to a `#` that follows white space, trimmed. A `#` inside a word (`http://h/#top`) is kept.
fn parse_value(rest: &str) -> Result<String, String> {
    let rest = rest.trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, e @ ('"' | '\\'))) => value.push(e),
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, 't')) => value.push('\t'),
                    Some((_, other)) => {
                        return Err(format!("unknown escape \\{other} in quoted value"))
                    }
                    None => return Err("quoted value is not closed".to_string()),
                },
                '"' => {
                    let after = quoted[i + 1..].trim_start();
                    if !(after.is_empty() || after.starts_with('#')) {
                        return Err(format!(
                            "unexpected text after the quoted value: {:?}",
                            clip(after)
                        ));
                    }
                    return Ok(value);
                }
                c => value.push(c),
            }
        }
        return Err("quoted value is not closed".to_string());
    }
    let mut end = rest.len();
    let mut previous_is_space = true;
    for (i, c) in rest.char_indices() {
        if c == '#' && previous_is_space {
            end = i;
            break;
        }
        previous_is_space = c.is_whitespace();
    }
    Ok(rest[..end].trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(root: &Node, path: &[&str]) -> (String, usize) {
        let mut node = root;
        for p in path {
            let Node::Branch { children, .. } = node else {
                panic!("not a branch")
            };
            node = &children.iter().find(|(n, _)| n == p).unwrap().1;
        }
        match node {
            Node::Leaf { value, line, .. } => (value.clone(), *line),
            Node::Branch { .. } => panic!("not a leaf"),
        }
    }

    #[test]
    fn values_comments_and_dotted_keys() {
        let root = parse(
            "# a comment\n\nrootdir = /srv/focuser   # work home\nFilter.Window = 3600\n\
             Filter.Retention=36000\nurl = http://h/#top\nempty =\nq = \"a # b \\\" c\"  # note\n",
        )
        .unwrap();
        assert_eq!(leaf(&root, &["rootdir"]), ("/srv/focuser".into(), 3));
        assert_eq!(leaf(&root, &["Filter", "Window"]), ("3600".into(), 4));
        assert_eq!(leaf(&root, &["Filter", "Retention"]), ("36000".into(), 5));
        assert_eq!(leaf(&root, &["url"]).0, "http://h/#top");
        assert_eq!(leaf(&root, &["empty"]).0, "");
        assert_eq!(leaf(&root, &["q"]).0, "a # b \" c");
    }

    #[test]
    fn bad_lines_name_their_line() {
        let cases = [
            ("a = 1\nno equals sign\n", 2, "expected `key = value`"),
            ("a = 1\na = 2\n", 2, "a given twice (first at line 1)"),
            ("a.b = 1\na = 2\n", 2, "a is a group of keys"),
            ("a = 1\na.b = 2\n", 2, "a already has a value"),
            ("bad key = 1\n", 1, "bad key"),
            ("a..b = 1\n", 1, "bad key"),
            ("= 1\n", 1, "bad key"),
            ("q = \"open\n", 1, "not closed"),
            ("q = \"x\" y\n", 1, "unexpected text"),
        ];
        for (text, line, message) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.message.contains(message), "{text:?}: {}", e.message);
        }
    }

    #[test]
    fn split_separates_common_keys() {
        let root = parse("rootdir = /x\nFilter.Window = 1\nlogfile = l\n").unwrap();
        let (common, rest) = root.split(&["rootdir", "logfile"]);
        let names = |n: &Node| match n {
            Node::Branch { children, .. } => {
                children.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>()
            }
            Node::Leaf { .. } => vec![],
        };
        assert_eq!(names(&common), ["rootdir", "logfile"]);
        assert_eq!(names(&rest), ["Filter"]);
    }
}
