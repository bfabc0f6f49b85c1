//! The binding tables (migration `2026-11-26-000100_bindings`, docs/formats.md "Binding
//! tables"): the ad dictionaries loaded ([`BindingDict`] and their phrases,
//! [`BindingDictPhrase`]), each URL's current binding ([`BindingPage`]) and how far the
//! bindings store is reflected in it ([`BindingPosition`]); the path binder's stubs
//! ([`PathStub`]).
//!
//! A dictionary is loaded in one transaction ([`BindingDict::load`]): a reader sees the old
//! version or the new, never a half. Bindings and the position are written in the multidoc
//! worker's batch transaction.

mod dict;
mod page;
mod position;
mod stub;

use chrono::NaiveDateTime;
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::schema::{binding_dict, binding_dict_phrase, binding_page, binding_position, path_stub};

/// A dictionary loaded: one row per load, the newest of a kind in force.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = binding_dict, check_for_backend(Mysql))]
pub struct BindingDict {
    pub id: u32,
    /// The binding type's code: 1 direct, 2 market, 3 media.
    pub kind: u8,
    /// 16 hex digits (`focuser_bind::Dictionary::version_hex`).
    pub version: String,
    pub loaded_at: NaiveDateTime,
    pub file_name: String,
    pub phrases: u32,
    /// Hex MD5 of the file's bytes.
    pub checksum: String,
}

/// A dictionary to load.
#[derive(Debug, Clone, PartialEq, Eq, Insertable)]
#[diesel(table_name = binding_dict)]
pub struct NewBindingDict<'a> {
    pub kind: u8,
    pub version: &'a str,
    pub loaded_at: NaiveDateTime,
    pub file_name: &'a str,
    pub phrases: u32,
    pub checksum: &'a str,
}

/// One phrase of a dictionary.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable)]
#[diesel(table_name = binding_dict_phrase, check_for_backend(Mysql))]
pub struct BindingDictPhrase {
    pub dict_id: u32,
    pub line: u32,
    pub phrase: String,
    /// Its stems separated by spaces.
    pub stems: String,
    pub advertisers: u32,
    pub category: Option<String>,
}

/// A URL's current binding.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = binding_page, check_for_backend(Mysql))]
pub struct BindingPage {
    pub id: u64,
    pub md5: String,
    /// Its ad-server item (the canonical form).
    pub item: String,
    pub tragic: u8,
    pub phrases: u32,
    /// `kind:version` of each dictionary, comma-separated.
    pub dict_versions: String,
    pub bound_at: NaiveDateTime,
}

/// A binding to write ([`BindingPage::write`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBindingPage {
    pub id: u64,
    pub md5: String,
    pub item: String,
    pub tragic: bool,
    pub phrases: u32,
    pub dict_versions: String,
    pub bound_at: NaiveDateTime,
}

/// How far a node's bindings store is reflected in `binding_page`.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = binding_position, check_for_backend(Mysql))]
pub struct BindingPosition {
    pub node: String,
    pub store: String,
    pub file_id: u64,
    pub item_idx: u32,
    pub updated_at: NaiveDateTime,
}

/// What the path binder last shipped for one key (docs/formats.md "Path stub table").
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = path_stub, check_for_backend(Mysql))]
pub struct PathStub {
    /// The item's key: a section's id or a host's id.
    pub id: u64,
    /// [`PathStub::STUB`] or [`PathStub::QUERY_ARGS`].
    pub kind: u8,
    pub domain: String,
    pub host: String,
    /// The section's path prefix (`/news/`); empty for query arguments.
    pub prefix: String,
    /// The section's bound pages (query arguments: how many).
    pub urls: u32,
    pub md5: String,
    pub item: String,
    pub built_at: NaiveDateTime,
}

impl PathStub {
    /// `kind` of a section's stub.
    pub const STUB: u8 = 1;
    /// `kind` of a host's insignificant query arguments.
    pub const QUERY_ARGS: u8 = 2;
}
