//! Config files for a run, made from the shipped ones in `conf/` the way an operator edits
//! them: a key the run sets replaces the template's line (a commented-out example line is
//! switched on), a key the run turns off is commented out, and keys the template lacks are
//! added at the end. The comments of the template stay, so a generated file reads like it.

use std::collections::BTreeMap;

/// What to do with one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Set {
    /// `key = value`.
    To(String),
    /// Commented out (`# key = ...`), with a reason.
    Off(&'static str),
}

/// `key = value` for each key of `keys` (in this order for the ones the template lacks).
pub fn render(template: &str, keys: &[(&str, Set)]) -> String {
    let wanted: BTreeMap<&str, &Set> = keys.iter().map(|(k, s)| (*k, s)).collect();
    let mut done: Vec<&str> = Vec::new();
    let mut out = String::new();
    for line in template.lines() {
        match key_of(line).and_then(|k| wanted.get_key_value(k)) {
            Some((key, set)) if !done.contains(key) => {
                done.push(key);
                out.push_str(&aligned_like(
                    line,
                    &line_for(key, set, None),
                    set,
                    comment_of(line),
                ));
            }
            // A second example of a key already written: dropped.
            Some(_) => continue,
            None => out.push_str(line),
        }
        out.push('\n');
    }
    let missing: Vec<&(&str, Set)> = keys.iter().filter(|(k, _)| !done.contains(k)).collect();
    if !missing.is_empty() {
        out.push_str("\n# Added for this run.\n");
        for (key, set) in missing {
            out.push_str(&line_for(key, set, None));
            out.push('\n');
        }
    }
    out
}

fn line_for(key: &str, set: &Set, comment: Option<&str>) -> String {
    let tail = comment.map(|c| format!("   # {c}")).unwrap_or_default();
    match set {
        Set::To(v) => format!("{key:<13} = {}{tail}", quote(v)),
        Set::Off(why) => format!("# {key} =   # {why}"),
    }
}

/// `new` laid out like the template's `old` line: the key padded as there, and the
/// template's comment kept in its column (or after the value, if that is longer).
fn aligned_like(old: &str, new: &str, set: &Set, comment: Option<&str>) -> String {
    let Set::To(_) = set else {
        return new.to_string();
    };
    let old = old.trim_start();
    let old = old.strip_prefix('#').map(str::trim_start).unwrap_or(old);
    let (Some(old_eq), Some(new_eq)) = (old.find('='), new.find('=')) else {
        return new.to_string();
    };
    let mut line = format!(
        "{:<w$}{}",
        new[..new_eq].trim_end(),
        &new[new_eq..],
        w = old_eq
    );
    if let Some(c) = comment {
        let column = old.find(" #").map(|at| at + 1).unwrap_or(0);
        let pad = column.saturating_sub(line.len()).max(3);
        line.push_str(&format!("{:pad$}# {c}", ""));
    }
    line
}

/// A value holding ` #` would be cut at it: quoted.
fn quote(v: &str) -> String {
    if v.contains(" #") {
        format!("\"{v}\"")
    } else {
        v.to_string()
    }
}

/// The key a config line sets, or a commented-out example line would set.
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t.strip_prefix('#').map(str::trim_start).unwrap_or(t);
    let (key, _) = t.split_once('=')?;
    let key = key.trim_end();
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    plain.then_some(key)
}

/// The comment after a value (`value   # comment`), for the generated line.
fn comment_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with('#') {
        return None;
    }
    let (_, value) = t.split_once('=')?;
    value.find(" #").map(|at| value[at + 2..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_replaced_switched_on_turned_off_and_added() {
        let template = "# intro\nrootdir = /var/lib/x   # home\nuser = focuser\n# SendFile.0.Dir = /q\n# SendFile.0.Dir = /other\nkeep = 1\n";
        let got = render(
            template,
            &[
                ("rootdir", Set::To("/tmp/r".into())),
                ("user", Set::Off("runs as the caller")),
                ("SendFile.0.Dir", Set::To("/tmp/q".into())),
                ("new.Key", Set::To("a #b".into())),
            ],
        );
        assert_eq!(
            got,
            "# intro\nrootdir = /tmp/r       # home\n# user =   # runs as the caller\nSendFile.0.Dir = /tmp/q\nkeep = 1\n\n# Added for this run.\nnew.Key       = \"a #b\"\n"
        );
    }
}
