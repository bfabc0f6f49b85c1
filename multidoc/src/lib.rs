//! MultiDoc: what a fetched page means, with no database and no network, so that yacobot's
//! page worker stays thin and this can be tested hard. In the order a page goes through it:
//!
//! - [`decode`]: bytes and the HTTP header → text (charset from header, BOM, `<meta>`, detector);
//! - [`segment`]: HTML → content blocks, each with a page-only weight;
//! - [`template`]: block fingerprints and the weight a domain's evidence gives them;
//! - [`simhash`]: the main text's near-duplicate fingerprint;
//! - [`tokenize`]: blocks → weighted words (Russian and English stems), URL words apart;
//! - [`classify`]: naive Bayes over a hierarchical catalog, its model file.
//!
//! [`analyze()`] runs a page through decode, segment and template; [`page::understand`]
//! through every stage, with its language and (given a model) its categories.

pub mod analyze;
pub mod classify;
pub mod corpus;
pub mod decode;
pub mod page;
pub mod segment;
pub mod simhash;
pub mod template;
pub mod tokenize;

pub use analyze::{analyze, Analysis, Evidence};
pub use page::{understand, Lang, Page};
