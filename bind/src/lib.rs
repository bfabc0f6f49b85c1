//! Ad bindings, with no database and no network, so that yacobot's binder worker stays thin and
//! this can be tested hard. In the order a page goes through it (docs/bindings.md):
//!
//! - [`dict`]: dictionary files (direct, market, media) parsed, normalised to the tokenizer's
//!   stems, versioned and compiled into an [`index::PhraseIndex`];
//! - [`page`]: a page's blocks, with their weights, as stem sequences;
//! - [`binder`]: each dictionary's phrases found in the page, with their relevance and where;
//! - [`collect`]: the collector's rules (threshold, nesting, advertisers, at most N);
//! - [`tragic`]: the tragic filter's 0/1 flag;
//! - [`binding`]: a page's binding, its canonical form and MD5;
//! - [`adserver`]: the ad-server item format (bindings, section stubs, query arguments);
//! - [`path`]: the path binder's section stubs.

pub mod adserver;
pub mod binder;
pub mod binding;
pub mod collect;
pub mod dict;
pub mod index;
pub mod page;
pub mod path;
pub mod place;
pub mod tragic;

pub use adserver::Item;
pub use binding::{Binding, PageBinding};
pub use dict::{DictError, Dictionary, Kind};
