//! What a reload does with each key, declared on the key's field: a field whose change takes
//! effect only at the next start carries `#[serde(serialize_with = "restart_only")]`; every
//! other key takes effect on SIGUSR2, because the daemon reads it from the running config at
//! each unit of work. From that one declaration come the keys a reload names, the running
//! config after a reload (restart-only keys keep their running values) and the config the
//! status page shows. A daemon's reload test changes every key not declared restart-only
//! ([`Key::reload`]) and sees it take effect.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// How a restart-only field serializes: its value below this one key, which [`keys`] reads
/// as the declaration and [`keep_running`] strips again.
const RESTART_MARK: &str = "(restart only)";

/// serde's `serialize_with` for a field whose change takes effect only at the next start.
pub fn restart_only<T: Serialize + ?Sized, S: Serializer>(
    value: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(1))?;
    map.serialize_entry(RESTART_MARK, value)?;
    map.end()
}

/// What a reload does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reload {
    /// The new value takes effect on SIGUSR2.
    Live,
    /// The running value stays until the next start; a reload that finds it changed says so.
    Restart,
}

/// One key of a config as a file would set it (`Cycle.Interval`), with its value as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    pub name: String,
    pub value: String,
    pub reload: Reload,
}

/// Every key of `config`, in name order (a group's keys are listed by their full names).
pub(crate) fn keys<T: Serialize>(config: &T) -> Vec<Key> {
    let mut out = Vec::new();
    flatten(
        "",
        &serde_json::to_value(config).unwrap_or_default(),
        Reload::Live,
        &mut out,
    );
    out
}

fn marked(map: &Map<String, Value>) -> Option<&Value> {
    match map.len() {
        1 => map.get(RESTART_MARK),
        _ => None,
    }
}

fn flatten(prefix: &str, value: &Value, reload: Reload, out: &mut Vec<Key>) {
    let mut leaf = |value: String| {
        out.push(Key {
            name: prefix.to_string(),
            value,
            reload,
        })
    };
    match value {
        Value::Object(map) => {
            if let Some(inner) = marked(map) {
                return flatten(prefix, inner, Reload::Restart, out);
            }
            for (k, v) in map {
                let key = match prefix {
                    "" => k.clone(),
                    _ => format!("{prefix}.{k}"),
                };
                flatten(&key, v, reload, out);
            }
        }
        Value::Null => leaf(String::new()),
        Value::Bool(b) => leaf(if *b { "1" } else { "0" }.to_string()),
        Value::String(s) => leaf(s.clone()),
        Value::Array(items) => leaf(
            items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| i.to_string())
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Value::Number(n) => leaf(n.to_string()),
    }
}

/// The restart-only keys whose values differ between `running` and `new` (set in one and
/// not the other counts), in name order.
pub(crate) fn restart_only_changes<T: Serialize>(running: &T, new: &T) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut both: BTreeMap<String, (Option<Key>, Option<Key>)> = BTreeMap::new();
    for k in keys(running) {
        let entry = both.entry(k.name.clone()).or_default();
        entry.0 = Some(k);
    }
    for k in keys(new) {
        let entry = both.entry(k.name.clone()).or_default();
        entry.1 = Some(k);
    }
    both.into_iter()
        .filter(|(_, (a, b))| {
            let value = |k: &Option<Key>| k.as_ref().map(|k| k.value.clone());
            let restart = [a, b]
                .into_iter()
                .flatten()
                .any(|k| k.reload == Reload::Restart);
            restart && value(a) != value(b)
        })
        .map(|(name, _)| name)
        .collect()
}

/// `new` with the running values of its restart-only keys: what runs after a reload.
pub(crate) fn keep_running<T: Serialize + DeserializeOwned>(
    running: &T,
    new: &T,
) -> Result<T, String> {
    let old = serde_json::to_value(running).map_err(|e| e.to_string())?;
    let mut merged = serde_json::to_value(new).map_err(|e| e.to_string())?;
    restore(&mut merged, &old);
    strip(&mut merged);
    serde_json::from_value(merged).map_err(|e| format!("keeping the running values: {e}"))
}

/// Puts `old`'s value in place of every restart-only value of `new` that `old` has too.
fn restore(new: &mut Value, old: &Value) {
    let Value::Object(map) = new else { return };
    if marked(map).is_some() {
        if let Value::Object(o) = old {
            if marked(o).is_some() {
                *new = old.clone();
            }
        }
        return;
    }
    for (k, v) in map.iter_mut() {
        if let Some(o) = old.get(k) {
            restore(v, o);
        }
    }
}

/// The plain value again: every declaration replaced by what it holds.
fn strip(value: &mut Value) {
    let Value::Object(map) = value else { return };
    if let Some(inner) = marked(map) {
        *value = inner.clone();
        return strip(value);
    }
    for v in map.values_mut() {
        strip(v);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    struct Own {
        #[serde(rename = "Name", serialize_with = "restart_only")]
        name: String,
        #[serde(rename = "Interval")]
        interval: u64,
        #[serde(rename = "Group", serialize_with = "restart_only")]
        group: BTreeMap<u32, Part>,
        #[serde(rename = "Part")]
        part: Part,
    }

    #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
    struct Part {
        #[serde(rename = "Dir", serialize_with = "restart_only")]
        dir: Option<String>,
        #[serde(rename = "Ratio")]
        ratio: f64,
        #[serde(rename = "On")]
        on: bool,
    }

    fn own() -> Own {
        Own {
            name: "a".into(),
            interval: 5,
            group: BTreeMap::from([(
                1,
                Part {
                    dir: Some("g".into()),
                    ratio: 0.5,
                    on: true,
                },
            )]),
            part: Part {
                dir: None,
                ratio: 1.4,
                on: false,
            },
        }
    }

    #[test]
    fn every_key_is_listed_with_what_a_reload_does_with_it() {
        let listed: Vec<(String, String, Reload)> = keys(&own())
            .into_iter()
            .map(|k| (k.name, k.value, k.reload))
            .collect();
        let (live, restart) = (Reload::Live, Reload::Restart);
        let want = [
            ("Group.1.Dir", "g", restart),
            ("Group.1.On", "1", restart),
            ("Group.1.Ratio", "0.5", restart),
            ("Interval", "5", live),
            ("Name", "a", restart),
            ("Part.Dir", "", restart),
            ("Part.On", "0", live),
            ("Part.Ratio", "1.4", live),
        ]
        .map(|(n, v, r)| (n.to_string(), v.to_string(), r));
        assert_eq!(listed, want);
    }

    #[test]
    fn a_reload_names_changed_restart_only_keys_and_keeps_their_running_values() {
        let running = own();
        let mut new = own();
        new.name = "b".into();
        new.interval = 9;
        new.part.dir = Some("d".into());
        new.part.ratio = 2.5;
        new.group.insert(
            2,
            Part {
                dir: None,
                ratio: 1.0,
                on: false,
            },
        );
        assert_eq!(
            restart_only_changes(&running, &new),
            [
                "Group.2.Dir",
                "Group.2.On",
                "Group.2.Ratio",
                "Name",
                "Part.Dir"
            ]
        );
        let kept = keep_running(&running, &new).unwrap();
        assert_eq!((kept.name.as_str(), kept.interval), ("a", 9));
        assert_eq!((kept.part.dir, kept.part.ratio), (None, 2.5));
        assert_eq!(kept.group, running.group);
        assert!(restart_only_changes(&running, &running).is_empty());
        assert_eq!(keep_running(&running, &running).unwrap(), running);
    }
}
