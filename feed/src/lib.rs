//! Partner data feeds (docs/design.md#yacobot-resources): everything that needs neither a database
//! nor a network, so that yacobot's resources worker stays thin and this can be tested hard. In the
//! order a run uses them:
//!
//! - [`sitemap`]: a data source's sitemap → its feed URLs, and its MD5;
//! - [`encoding`]: any declared encoding → UTF-8, streaming;
//! - [`items`]: items cut out of a feed with a class's `open_xml_format` rules, streaming,
//!   each with its canonical form, its digest and key (the MD5 on demand), or as a failed key;
//! - [`location`]: the location list and an item's location resolved through it;
//! - [`doc_id`]: the stable doc id of an item;
//! - [`diff`]: the write plan of a run (inserts, updates, deletes) and its safety valve;
//! - [`detail`]: the `fetch_detail` report of a run;
//! - [`hex`]: MD5s as they are stored;
//! - [`corpus`]: the parsers' invariants, for the fuzz targets and the corpus tests.
//!
//! Formats and rules are specified in docs/formats.md ("Partner feeds").

pub mod corpus;
pub mod detail;
pub mod diff;
pub mod doc_id;
pub mod encoding;
pub mod hex;
pub mod items;
pub mod location;
pub mod sitemap;
mod xml_text;
