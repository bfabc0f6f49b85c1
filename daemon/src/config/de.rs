//! A serde `Deserializer` over the config tree: values are text typed on demand (`3600` is a
//! number when the struct wants one), groups of dotted keys are maps and structs, and every
//! error is tied to the key and line it is about.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use super::clip;
use super::parse::Node;

/// What went wrong, and where once known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeError {
    pub key: Option<String>,
    pub line: Option<usize>,
    pub kind: DeErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DeErrorKind {
    /// A required key is absent; the error's `key` names it.
    Missing,
    /// A key no struct field takes.
    Unknown(String),
    Other(String),
}

impl DeError {
    fn other(message: impl Into<String>) -> Self {
        DeError {
            key: None,
            line: None,
            kind: DeErrorKind::Other(message.into()),
        }
    }

    /// Attaches the node's key and line unless a deeper node already did.
    fn at(mut self, node: &Node) -> Self {
        if self.key.is_none() {
            self.key = Some(node.key().to_string());
            self.line = Some(node.line());
        }
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DeErrorKind::Missing => write!(f, "missing required key"),
            DeErrorKind::Unknown(m) | DeErrorKind::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError::other(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        DeError {
            key: Some(field.to_string()),
            line: None,
            kind: DeErrorKind::Missing,
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        DeError {
            key: None,
            line: None,
            kind: DeErrorKind::Unknown(format!(
                "unknown key `{}`; known keys here: {}",
                clip(field),
                expected.join(", ")
            )),
        }
    }
}

/// Deserializes `T` from a branch of the tree.
pub(crate) fn from_node<T: de::DeserializeOwned>(node: &Node) -> Result<T, DeError> {
    T::deserialize(NodeDe(node))
}

struct NodeDe<'a>(&'a Node);

impl<'a> NodeDe<'a> {
    fn text(&self) -> Result<&'a str, DeError> {
        match self.0 {
            Node::Leaf { value, .. } => Ok(value),
            Node::Branch { key, .. } => Err(DeError::other(format!(
                "expected a value, found a group of keys ({}.*)",
                clip(key)
            ))
            .at(self.0)),
        }
    }

    fn parse<T: std::str::FromStr>(&self, what: &str) -> Result<T, DeError>
    where
        T::Err: fmt::Display,
    {
        let text = self.text()?;
        text.parse::<T>().map_err(|e| {
            DeError::other(format!("expected {what}, found {:?} ({e})", clip(text))).at(self.0)
        })
    }
}

macro_rules! parse_number {
    ($($method:ident $visit:ident $ty:ty, $what:literal;)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            visitor.$visit(self.parse::<$ty>($what)?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for NodeDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Node::Leaf { value, .. } => visitor.visit_str(value),
            Node::Branch { .. } => self.deserialize_map(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let text = self.text()?;
        let value = match text.to_ascii_lowercase().as_str() {
            "1" | "yes" | "true" | "on" => true,
            "0" | "no" | "false" | "off" => false,
            _ => {
                return Err(DeError::other(format!(
                    "expected 0 or 1 (or yes/no, true/false, on/off), found {:?}",
                    clip(text)
                ))
                .at(self.0))
            }
        };
        visitor.visit_bool(value)
    }

    parse_number! {
        deserialize_i8 visit_i8 i8, "an integer";
        deserialize_i16 visit_i16 i16, "an integer";
        deserialize_i32 visit_i32 i32, "an integer";
        deserialize_i64 visit_i64 i64, "an integer";
        deserialize_u8 visit_u8 u8, "a non-negative integer (0-255)";
        deserialize_u16 visit_u16 u16, "a non-negative integer (0-65535)";
        deserialize_u32 visit_u32 u32, "a non-negative integer";
        deserialize_u64 visit_u64 u64, "a non-negative integer";
        deserialize_f32 visit_f32 f32, "a number";
        deserialize_f64 visit_f64 f64, "a number";
        deserialize_char visit_char char, "a single character";
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_str(self.text()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_bytes(self.text()?.as_bytes())
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_bytes(visitor)
    }

    /// An empty value (`status_listen =`) is "not set".
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Node::Leaf { value, .. } if value.is_empty() => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    /// A list is one value, its items separated by commas or white space.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let node = self.0;
        let items: Vec<Node> = self
            .text()?
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .map(|s| Node::Leaf {
                key: node.key().to_string(),
                value: s.to_string(),
                line: node.line(),
            })
            .collect();
        visitor
            .visit_seq(Items {
                items: items.iter(),
            })
            .map_err(|e| e.at(node))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Node::Branch { children, .. } => visitor.visit_map(Keys {
                children: children.iter(),
                current: None,
            }),
            Node::Leaf { key, .. } => Err(DeError::other(format!(
                "expected a group of keys ({}.*), found a single value",
                clip(key)
            ))
            .at(self.0)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let node = self.0;
        self.deserialize_map(visitor).map_err(|mut e| {
            // A missing field is named by its full dotted key.
            if e.kind == DeErrorKind::Missing && e.line.is_none() {
                if let Some(field) = &e.key {
                    if !node.key().is_empty() && !field.starts_with(&format!("{}.", node.key())) {
                        e.key = Some(format!("{}.{field}", node.key()));
                    }
                }
                e.line = Some(0);
            }
            e
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let node = self.0;
        visitor
            .visit_enum(self.text()?.into_deserializer())
            .map_err(|e: DeError| e.at(node))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

struct Items<'a> {
    items: std::slice::Iter<'a, Node>,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.items.next() {
            Some(node) => seed.deserialize(NodeDe(node)).map(Some),
            None => Ok(None),
        }
    }
}

struct Keys<'a> {
    children: std::slice::Iter<'a, (String, Node)>,
    current: Option<&'a Node>,
}

impl<'de> MapAccess<'de> for Keys<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((name, node)) = self.children.next() else {
            return Ok(None);
        };
        self.current = Some(node);
        // Keys are typed like values, so that `Index.1.…` can fill a map keyed by number.
        let key = Node::Leaf {
            key: node.key().to_string(),
            value: name.clone(),
            line: node.line(),
        };
        seed.deserialize(NodeDe(&key))
            .map(Some)
            .map_err(|e| e.at(node))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let node = self
            .current
            .take()
            .ok_or_else(|| DeError::other("value asked for before its key"))?;
        seed.deserialize(NodeDe(node)).map_err(|e| e.at(node))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;
    use crate::config::parse::parse;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Filter {
        #[serde(rename = "Window")]
        window: u64,
        #[serde(rename = "Retention", default)]
        retention: u64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Group {
        #[serde(rename = "Addresses")]
        addresses: Vec<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Conf {
        name: String,
        enabled: bool,
        ratio: f64,
        listen: Option<String>,
        #[serde(rename = "Filter")]
        filter: Filter,
        #[serde(rename = "Index", default)]
        index: BTreeMap<u32, Group>,
    }

    fn load(text: &str) -> Result<Conf, DeError> {
        let root = parse(text).unwrap();
        from_node::<Conf>(&root)
    }

    #[test]
    fn types_nested_groups_lists_and_options() {
        let c = load(
            "name = m1\nenabled = yes\nratio = 0.95\nlisten =\nFilter.Window = 3600\n\
             Index.1.Addresses = a:1, b:2 c:3\nIndex.2.Addresses = d:4\n",
        )
        .unwrap();
        assert_eq!(c.name, "m1");
        assert!(c.enabled);
        assert_eq!(c.listen, None);
        assert_eq!(
            c.filter,
            Filter {
                window: 3600,
                retention: 0
            }
        );
        assert_eq!(c.index[&1].addresses, ["a:1", "b:2", "c:3"]);
        assert_eq!(c.index[&2].addresses, ["d:4"]);
    }

    #[test]
    fn errors_name_key_and_line() {
        let base = "name = m\nenabled = 1\nratio = 1\nFilter.Window = 1\n";
        let e = load(&format!("{base}Filter.Windw = 3\n")).unwrap_err();
        assert_eq!((e.key.as_deref(), e.line), (Some("Filter.Windw"), Some(5)));
        assert!(e.to_string().contains("unknown key `Windw`"), "{e}");

        let e = load("name = m\nenabled = maybe\nratio = 1\nFilter.Window = 1\n").unwrap_err();
        assert_eq!((e.key.as_deref(), e.line), (Some("enabled"), Some(2)));

        let e = load("name = m\nenabled = 1\nratio = 1\nFilter.Window = -5\n").unwrap_err();
        assert_eq!((e.key.as_deref(), e.line), (Some("Filter.Window"), Some(4)));
        assert!(e.to_string().contains("non-negative integer"), "{e}");

        let e = load("name = m\nenabled = 1\nratio = 1\nFilter.Retention = 5\n").unwrap_err();
        assert_eq!(
            (e.key.as_deref(), e.kind.clone()),
            (Some("Filter.Window"), DeErrorKind::Missing)
        );

        let e = load("enabled = 1\nratio = 1\nFilter.Window = 1\n").unwrap_err();
        assert_eq!(
            (e.key.as_deref(), e.kind.clone()),
            (Some("name"), DeErrorKind::Missing)
        );

        let e = load("name = m\nenabled = 1\nratio = 1\nFilter = 3\n").unwrap_err();
        assert_eq!((e.key.as_deref(), e.line), (Some("Filter"), Some(4)));
        assert!(e.to_string().contains("group of keys"), "{e}");

        let e = load(&format!("{base}Index.x.Addresses = a\n")).unwrap_err();
        assert_eq!((e.key.as_deref(), e.line), (Some("Index.x"), Some(5)));
    }
}
