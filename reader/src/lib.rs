//! `reader`: ships item/index segments to index receivers, one sender per receiver address, each
//! with its own position (docs/design.md#reader); `reader --recv` receives them into its own store,
//! exactly once; sendfile ships whole files (master queue files, sealed segments) to a receiver's
//! inbox. The wire protocol is in [`wire`] and docs/formats.md.

pub mod config;
pub mod corpus;
pub mod daemon;
pub mod recv;
pub mod sender;
pub mod sendfile;
pub mod status;
pub mod tools;
pub mod wire;

pub use config::ReaderConfig;
