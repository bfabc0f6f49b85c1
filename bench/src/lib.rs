//! What several benchmarks share: the generated web site served by a private nginx
//! ([`site`]) and the reference clients fetching it ([`clients`]: a plain libcurl multi loop,
//! `xargs -P 32 curl`), used by bench-fetch and bench-yacobot's stages (b) and (c).

pub mod clients;
pub mod site;
