//! The page analysis tables (migration `2026-11-25-000100_multidoc`, docs/formats.md "Page
//! analysis tables"): the templater's evidence per domain ([`MultidocDomain`],
//! [`MultidocFingerprint`]), what the analysis made of each URL ([`MultidocPage`]), the
//! groups of pages whose main text is the same or near ([`MultidocGroup`], migration
//! `2026-11-26-000610_duplicates_and_expiry`) and where the worker is in its archive
//! ([`MultidocPosition`]).
//!
//! Evidence only grows by whole pages, through [`MultidocDomain::count_pages`] and
//! [`MultidocFingerprint::count_pages`] (increments, so that two processes of a node never
//! lose each other's counts), in the transaction that moves the position. A domain or a
//! fingerprint last seen before the expiry day reads as absent and restarts from the pages
//! counted now; [`MultidocFingerprint::expire`], [`MultidocDomain::expire`] and
//! [`MultidocFingerprint::cap`] delete rows in bounded batches.

mod evidence;
mod group;
mod page;
mod position;

use chrono::{NaiveDate, NaiveDateTime};
use diesel::mysql::Mysql;
use diesel::prelude::*;

use crate::models::PageOutcome;
use crate::schema::{
    multidoc_domain, multidoc_fingerprint, multidoc_group, multidoc_page, multidoc_position,
};

pub use evidence::{FingerprintCount, NewMultidocDomain};
pub use group::NearGroup;

/// A domain's evidence: the pages counted into it.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = multidoc_domain, check_for_backend(Mysql))]
pub struct MultidocDomain {
    pub domain_key: u64,
    pub domain: String,
    pub pages: u32,
    pub fingerprints: u32,
    pub since: NaiveDateTime,
    pub seen_on: NaiveDate,
}

/// On how many of its domain's pages a block was seen.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = multidoc_fingerprint, check_for_backend(Mysql))]
pub struct MultidocFingerprint {
    pub domain_key: u64,
    pub fingerprint: u64,
    pub pages: u32,
    pub last_page: u32,
    pub seen_on: NaiveDate,
}

/// What the analysis made of a URL.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = multidoc_page, check_for_backend(Mysql))]
pub struct MultidocPage {
    pub id: u64,
    pub outcome: PageOutcome,
    pub lang: Option<String>,
    pub categories: Option<String>,
    pub category_names: Option<String>,
    pub main_md5: Option<String>,
    /// The main text's near-duplicate fingerprint (`focuser_multidoc::simhash`).
    pub main_simhash: Option<u64>,
    /// The page's duplicate group (`multidoc_group.id`).
    pub dup_group: Option<u64>,
    pub template_share: Option<f32>,
    pub model_checksum: Option<u32>,
    pub analysed_at: NaiveDateTime,
    pub counted_at: Option<NaiveDateTime>,
    pub archive_file: u64,
    pub archive_item: u32,
}

/// A URL's analysis to write ([`MultidocPage::write`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NewMultidocPage {
    pub id: u64,
    pub outcome: PageOutcome,
    pub lang: Option<&'static str>,
    pub categories: Option<String>,
    pub category_names: Option<String>,
    pub main_md5: Option<String>,
    /// The main text's near-duplicate fingerprint (`focuser_multidoc::simhash`).
    pub main_simhash: Option<u64>,
    /// The page's duplicate group; `None`: no word in its main text, or not analysed.
    pub dup_group: Option<u64>,
    pub template_share: Option<f32>,
    pub model_checksum: Option<u32>,
    pub analysed_at: NaiveDateTime,
    /// Set when this analysis counted the page into its domain's evidence; `None` leaves the
    /// stored value (a page analysed again is not counted again).
    pub counted_at: Option<NaiveDateTime>,
    pub archive_file: u64,
    pub archive_item: u32,
}

/// Pages of a domain whose main text is the same or near: its text's fingerprint, and the
/// page whose categories and binding its pages share.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = multidoc_group, check_for_backend(Mysql))]
pub struct MultidocGroup {
    pub id: u64,
    pub domain_key: u64,
    pub simhash: u64,
    pub band0: u16,
    pub band1: u16,
    pub band2: u16,
    pub band3: u16,
    pub rep: u64,
    pub created_at: NaiveDateTime,
}

/// A group to write ([`MultidocGroup::write`]): founded by a batch's page, or taking one as
/// its representative (the bands are the simhash's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMultidocGroup {
    pub id: u64,
    pub domain_key: u64,
    pub simhash: u64,
    pub rep: u64,
    pub created_at: NaiveDateTime,
}

/// Where a node's analysis is in one archive: the next item to analyse, and the end of what
/// was counted into the evidence (never moved back: items before it are analysed again
/// after a rewind, not counted again).
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable)]
#[diesel(table_name = multidoc_position, check_for_backend(Mysql))]
pub struct MultidocPosition {
    pub node: String,
    pub store: String,
    pub file_id: u64,
    pub item_idx: u32,
    pub counted_file: u64,
    pub counted_item: u32,
    pub updated_at: NaiveDateTime,
}

impl MultidocDomain {
    pub fn find(conn: &mut MysqlConnection, domain_key: u64) -> QueryResult<Option<Self>> {
        multidoc_domain::table
            .find(domain_key)
            .select(Self::as_select())
            .first(conn)
            .optional()
    }

    /// The rows of `keys` (those that exist).
    pub fn load(conn: &mut MysqlConnection, keys: &[u64]) -> QueryResult<Vec<Self>> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(evidence::MAX_KEYS) {
            out.extend(
                multidoc_domain::table
                    .filter(multidoc_domain::domain_key.eq_any(chunk))
                    .select(Self::as_select())
                    .load(conn)?,
            );
        }
        Ok(out)
    }
}

impl MultidocFingerprint {
    /// A domain's rows, most seen first (for tests and the operator).
    pub fn of_domain(conn: &mut MysqlConnection, domain_key: u64) -> QueryResult<Vec<Self>> {
        multidoc_fingerprint::table
            .filter(multidoc_fingerprint::domain_key.eq(domain_key))
            .order((
                multidoc_fingerprint::pages.desc(),
                multidoc_fingerprint::fingerprint,
            ))
            .select(Self::as_select())
            .load(conn)
    }
}
