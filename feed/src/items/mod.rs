//! Items cut out of an XML feed with a class's `open_xml_format` rules, streaming, in memory
//! bounded by [`Limits`] whatever the feed's size (docs/formats.md "Item rules", "Item
//! canonical form").

mod canonical;
mod extract;
mod rules;
mod stream;

use std::fmt;

pub use canonical::{digest, md5_hex};
pub use extract::extract;
pub use rules::{FieldRule, RuleError, Rules};

use crate::encoding::EncodingError;

/// What one feed may cost. Memory is bounded by about `2 × 64 KiB` (decoder) +
/// `max_event_bytes` (quick-xml's event buffer) + `max_item_bytes` + fields × `max_field_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// An item whose values take more bytes is a failed key.
    pub max_item_bytes: usize,
    /// A value longer than this (after white space is collapsed) fails its item.
    pub max_field_bytes: usize,
    /// A single tag, text run or CDATA section longer than this ends the feed with an error.
    pub max_event_bytes: usize,
    /// Elements nested deeper end the feed with an error.
    pub max_depth: usize,
    /// A longer key fails its item (`vr_data.keyword` is `VARCHAR(255)`).
    pub max_key_chars: usize,
    /// Stop after this many items, good and failed (`vr_resource.max_items`); 0: no cap.
    pub max_items: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_item_bytes: 1 << 20,
            max_field_bytes: 256 << 10,
            max_event_bytes: 4 << 20,
            max_depth: 256,
            max_key_chars: 255,
            max_items: 0,
        }
    }
}

/// A good item. The extractor reuses one `Item` for every item of a feed: copy out what
/// you keep.
#[derive(Debug, Default)]
pub struct Item {
    pub(crate) number: u64,
    pub(crate) line: u64,
    /// Every value of the item, one after another; ranges index into it.
    pub(crate) arena: String,
    pub(crate) values: Vec<Vec<(u32, u32)>>,
    pub(crate) key: (u32, u32),
    pub(crate) canonical: String,
    pub(crate) digest: u128,
}

impl Item {
    /// 1-based number of the item in the feed (failed ones counted too).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Line of the feed the item starts on.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The key: the first value of the key field (`vr_data.keyword`).
    pub fn key(&self) -> &str {
        &self.arena[self.key.0 as usize..self.key.1 as usize]
    }

    /// The canonical form (`vr_data.content`, the segment item's content).
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// Lower-case hex MD5 of the canonical form (`vr_data.md5_sum`), computed on each call:
    /// a run needs it only for the items it writes (see [`Item::digest`]).
    pub fn md5(&self) -> String {
        md5_hex(&self.canonical)
    }

    /// XXH3-128 of the canonical form: what a run compares with the previous run's digest
    /// of the same key, at a tenth of the MD5's cost (docs/formats.md "Item digest file").
    pub fn digest(&self) -> u128 {
        self.digest
    }

    /// The values of the `field`-th rule, in document order.
    pub fn values(&self, field: usize) -> impl Iterator<Item = &str> {
        self.values
            .get(field)
            .into_iter()
            .flatten()
            .map(|&(a, b)| &self.arena[a as usize..b as usize])
    }
}

/// Why an item failed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailReason {
    NoKey { label: String },
    MissingRequired { label: String },
    KeyTooLong { chars: usize, limit: usize },
    FieldTooLong { label: String, limit: usize },
    ItemTooLarge { limit: usize },
}

impl fmt::Display for FailReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailReason::NoKey { label } => write!(f, "no key \"{label}\""),
            FailReason::MissingRequired { label } => write!(f, "no \"{label}\" (required)"),
            FailReason::KeyTooLong { chars, limit } => {
                write!(f, "key of {chars} characters (limit {limit})")
            }
            FailReason::FieldTooLong { label, limit } => {
                write!(f, "\"{label}\" longer than {limit} bytes")
            }
            FailReason::ItemTooLarge { limit } => write!(f, "item larger than {limit} bytes"),
        }
    }
}

/// An item without its key or a required field, or over a size limit: a "failed key".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedKey {
    pub number: u64,
    pub line: u64,
    /// The key, when the item has one.
    pub key: Option<String>,
    pub reason: FailReason,
}

impl fmt::Display for FailedKey {
    /// `abc: no "price" (required)`, or `item 17 (line 240): no key "id"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{k}: {}", self.reason),
            None => write!(
                f,
                "item {} (line {}): {}",
                self.number, self.line, self.reason
            ),
        }
    }
}

/// What the extractor hands to its sink, item by item.
#[derive(Debug)]
pub enum Outcome<'a> {
    Item(&'a Item),
    Failed(&'a FailedKey),
}

/// A feed read to its end (or to a cap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub items: u64,
    pub failed: u64,
    /// `Limits::max_items` was reached; the rest of the feed was not read.
    pub capped: bool,
    /// The sink asked to stop.
    pub stopped: bool,
    /// The encoding the feed was decoded from.
    pub encoding: &'static str,
}

/// A feed that could not be read to its end. The items handed to the sink before it are
/// counted here; the caller decides what they are worth (the resources worker treats the
/// feed as failed: none of its previous items is deleted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at line {line}, column {column} ({items} items and {failed} failed keys read before it)")]
pub struct ExtractError {
    pub kind: ErrorKind,
    pub line: u64,
    pub column: u64,
    pub items: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error("{0}")]
    Encoding(#[from] EncodingError),
    #[error("the feed could not be read: {0}")]
    Io(String),
    #[error("the feed is not well-formed XML: {0}")]
    Xml(String),
    #[error("the feed ends inside <{open}> (truncated?)")]
    Truncated { open: String },
    #[error("the feed has a tag or text longer than {limit} bytes")]
    EventTooLong { limit: usize },
    #[error("the feed nests elements deeper than {limit}")]
    TooDeep { limit: usize },
    #[error("the feed contains no XML element")]
    NoElement,
}
