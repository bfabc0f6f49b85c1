//! On-disk formats shared between daemons, each specified in docs/formats.md.

pub mod num;
pub mod queue;
pub mod reflog;
pub mod stamp;
