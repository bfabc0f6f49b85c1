//! `focuser-formats`: the files focuser's daemons hand each other, with no database.
//!
//! * [`reflog`]: the ad servers' click-log lines and the master's reject files;
//!   [`queue`]: the master's queue files; [`stamp`], [`num`]: their timestamps and numbers.
//! * [`segment`]: item/index segments (the writer, its recovery, readers and cursors) and
//!   the senders' position files.
//! * [`urls`]: URL normalisation, the 64-bit URL id, the routing domain, what a host is
//!   ([`md5_lanes`]: the ids of many URLs at once).
//! * [`exclude`]: the exclusion file's rules (URLs a node neither stores nor fetches).
//! * [`fsutil`]: publishing files atomically.
//! * [`snapshot`]: a store's live set written again by its owner for a reader's resend.
//!
//! Every format is specified byte by byte in docs/formats.md. The database half of what the
//! daemons agree on (tables, models, migrations) is `focuser-schema`.

pub mod exclude;
pub mod fsutil;
pub mod md5_lanes;
pub mod num;
pub mod queue;
pub mod reflog;
pub mod segment;
pub mod snapshot;
pub mod stamp;
pub mod urls;
