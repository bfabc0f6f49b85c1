//! What several benchmarks share: the generated web site served by a private nginx
//! ([`site`]) and the reference clients fetching it ([`clients`]: a plain libcurl multi loop,
//! `xargs -P 32 curl`), used by bench-fetch and bench-yacobot's stages (b) and (c); the
//! master's input ([`reflog`], bench-master and bench-cluster) and the loader's ([`queue`],
//! bench-yacobot and bench-cluster).

pub mod clients;
pub mod queue;
pub mod reflog;
pub mod site;
