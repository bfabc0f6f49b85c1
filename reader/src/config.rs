//! reader's own keys (the common ones are focuser-daemon's). Documented in conf/reader.cf.

use std::collections::BTreeMap;
use std::path::PathBuf;

use focuser_daemon::config::restart_only;
use focuser_daemon::{CommonConfig, DaemonConfig};
use focuser_formats::segment::{Status, SyncPolicy, WriterOptions};
use serde::{Deserialize, Serialize};

/// A reload applies `MaxFrame`, `Send.*` and `Store.*` (senders, sendfile shippers and
/// receivers take them from the running config at each connection, batch or frame); the
/// `restart_only` keys make the streams, stores and listeners a reader opens at start.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReaderConfig {
    /// This reader's name: with a group's name it makes the stream name receivers know it by.
    #[serde(serialize_with = "restart_only")]
    pub name: String,
    /// From 1 on, `.epoch<N>` ends every stream name: the receivers see new streams and
    /// take this store's items from the start (after a stream identity mismatch).
    #[serde(default, serialize_with = "restart_only")]
    pub stream_epoch: u32,
    /// The segment store this reader ships (yacobot's archive).
    #[serde(default = "default_store_dir", serialize_with = "restart_only")]
    pub store_dir: PathBuf,
    /// Position files, one per sender, and sendfile's last-shipped files.
    #[serde(default = "default_state_dir", serialize_with = "restart_only")]
    pub state_dir: PathBuf,
    /// The secret shared with the receivers (mode 0600; never sent). Read at start: the two
    /// ends change it together, with a restart of each.
    #[serde(serialize_with = "restart_only")]
    pub secret_file: PathBuf,
    /// Frames longer than this are refused (bytes).
    #[serde(rename = "MaxFrame", default = "default_max_frame")]
    pub max_frame: usize,
    #[serde(rename = "Send", default)]
    pub send: SendConfig,
    #[serde(rename = "Store", default)]
    pub store: StoreConfig,
    /// Index receiver groups: `Index.N.Addresses = host:port, ...`.
    #[serde(rename = "Index", default, serialize_with = "restart_only")]
    pub index: BTreeMap<u32, GroupConfig>,
    /// Summary receiver groups: `Summary.N.Addresses = host:port, ...`.
    #[serde(rename = "Summary", default, serialize_with = "restart_only")]
    pub summary: BTreeMap<u32, GroupConfig>,
    /// Whole files shipped to a receiver's inbox: `SendFile.N.*`.
    #[serde(rename = "SendFile", default, serialize_with = "restart_only")]
    pub sendfile: BTreeMap<u32, SendFileConfig>,
    /// `reader --recv`.
    #[serde(rename = "Recv", default, serialize_with = "restart_only")]
    pub recv: RecvConfig,
    /// The receiver's own store's writer.
    #[serde(rename = "Segment", default, serialize_with = "restart_only")]
    pub segment: SegmentConfig,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    #[serde(rename = "Addresses")]
    pub addresses: Vec<String>,
    /// The statuses this group wants (UPDATE, DELETE).
    #[serde(rename = "Statuses", default = "default_statuses")]
    pub statuses: Vec<String>,
}

impl GroupConfig {
    pub fn wanted(&self) -> Result<Vec<Status>, String> {
        self.statuses
            .iter()
            .map(|s| Status::parse(s).ok_or_else(|| format!("unknown status {s:?}")))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SendConfig {
    /// A sender writes its position at least every this many items (and at stop).
    #[serde(rename = "SaveEvery", default = "default_save_every")]
    pub save_every: u64,
    /// A batch holds at most this many items ...
    #[serde(rename = "BatchItems", default = "default_batch_items")]
    pub batch_items: usize,
    /// ... and this many bytes.
    #[serde(rename = "BatchBytes", default = "default_batch_bytes")]
    pub batch_bytes: usize,
    /// Batches sent before their acks come back.
    #[serde(rename = "Window", default = "default_window")]
    pub window: usize,
    /// Reconnection backoff: first and longest wait, seconds.
    #[serde(rename = "RetryMin", default = "default_retry_min")]
    pub retry_min: f64,
    #[serde(rename = "RetryMax", default = "default_retry_max")]
    pub retry_max: f64,
    /// Seconds to connect, and to wait for an ack, before the connection counts as failed.
    #[serde(rename = "Timeout", default = "default_timeout")]
    pub timeout: u64,
    /// 1: ship stored records as they lie on disk (`sendfile`, RECORDS frames; the receiver
    /// checks each record's CRC); 0: read and check each item first (ITEMS frames).
    #[serde(rename = "Records", default = "yes")]
    pub records: bool,
    /// `reader resend`: at most this many items a second to the receiver being rebuilt (at
    /// least 1), beside its normal stream.
    #[serde(rename = "ResendRate", default = "default_resend_rate")]
    pub resend_rate: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// 0: no limit. Past it the oldest segments go even if a sender still needs them.
    #[serde(rename = "MaxBytes", default)]
    pub max_bytes: u64,
    /// Seconds between retention checks.
    #[serde(rename = "CheckInterval", default = "default_check_interval")]
    pub check_interval: u64,
    /// The store's owner keeps a retention of its own: segments below the floor this file
    /// names (yacobot's `<Archive.Dir>/retention.floor`) are the only ones deleted, even past
    /// `MaxBytes`; unreadable, missing or a symlink: nothing is deleted. Empty: no floor.
    #[serde(rename = "FloorFile", default)]
    pub floor_file: Option<PathBuf>,
    /// The store's owner writes the live set for a resend into this folder (yacobot's
    /// resources stores: `<Resources.Dir>/snapshots`, `<Resources.MultiHitDir>/snapshots`):
    /// `reader resend` asks it there instead of reading the store, whose shipped segments are
    /// gone. Empty: a resend reads the store.
    #[serde(rename = "SnapshotDir", default)]
    pub snapshot_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SendFileConfig {
    #[serde(rename = "Address")]
    pub address: String,
    /// The spool directory whose files are shipped, in name order.
    #[serde(rename = "Dir")]
    pub dir: PathBuf,
    /// `spool` (every plain file, by name) or `segments` (sealed item/index pairs).
    #[serde(rename = "Kind", default = "default_kind")]
    pub kind: String,
    /// Only names matching this glob (spool).
    #[serde(rename = "Pattern", default = "default_pattern")]
    pub pattern: String,
    /// The inbox the receiver puts them in (its `Recv.InboxDir/<Inbox>`).
    #[serde(rename = "Inbox")]
    pub inbox: String,
    /// Delete a file once the receiver has it.
    #[serde(rename = "Remove", default)]
    pub remove: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RecvConfig {
    /// host:port `reader --recv` listens on.
    #[serde(rename = "Listen", default = "default_listen")]
    pub listen: String,
    /// Where received items are written.
    #[serde(rename = "StoreDir", default = "default_recv_store")]
    pub store_dir: PathBuf,
    /// Received files go to `InboxDir/<inbox>/`.
    #[serde(rename = "InboxDir", default = "default_inbox")]
    pub inbox_dir: PathBuf,
    #[serde(rename = "MaxConnections", default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections from one address at once (within MaxConnections).
    #[serde(rename = "MaxPerAddress", default = "default_max_per_address")]
    pub max_per_address: usize,
    /// Seconds a peer has for its whole handshake, however it trickles its bytes.
    #[serde(rename = "HandshakeTimeout", default = "default_handshake_timeout")]
    pub handshake_timeout: u64,
    /// Seconds a connection may stay silent.
    #[serde(rename = "IdleTimeout", default = "default_idle")]
    pub idle_timeout: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentConfig {
    #[serde(rename = "MaxAge", default = "default_max_age")]
    pub max_age: u64,
    #[serde(rename = "MaxItems", default = "default_max_items")]
    pub max_items: u32,
    #[serde(rename = "MaxBytes", default = "default_segment_bytes")]
    pub max_bytes: u64,
    /// Sync after this many items ...
    #[serde(rename = "SyncEvery", default = "default_sync_every")]
    pub sync_every: u32,
    /// ... or this many milliseconds.
    #[serde(rename = "SyncMs", default = "default_sync_ms")]
    pub sync_ms: u64,
}

impl SegmentConfig {
    pub fn writer_options(&self) -> WriterOptions {
        WriterOptions {
            max_age_s: self.max_age,
            max_items: self.max_items,
            max_bytes: self.max_bytes,
            sync: SyncPolicy {
                every_items: self.sync_every,
                every_ms: self.sync_ms,
            },
        }
    }
}

fn default_store_dir() -> PathBuf {
    PathBuf::from("segments")
}
fn default_state_dir() -> PathBuf {
    PathBuf::from("state")
}
fn default_max_frame() -> usize {
    32 << 20
}
fn default_statuses() -> Vec<String> {
    vec!["UPDATE".into(), "DELETE".into()]
}
fn default_save_every() -> u64 {
    1000
}
fn default_batch_items() -> usize {
    512
}
fn default_batch_bytes() -> usize {
    4 << 20
}
fn yes() -> bool {
    true
}
fn default_window() -> usize {
    4
}
fn default_retry_min() -> f64 {
    0.5
}
fn default_retry_max() -> f64 {
    30.0
}
fn default_timeout() -> u64 {
    30
}
fn default_resend_rate() -> u64 {
    1000
}
fn default_check_interval() -> u64 {
    5
}
fn default_kind() -> String {
    "spool".into()
}
fn default_pattern() -> String {
    "*".into()
}
fn default_listen() -> String {
    "127.0.0.1:7301".into()
}
fn default_recv_store() -> PathBuf {
    PathBuf::from("received")
}
fn default_inbox() -> PathBuf {
    PathBuf::from("inbox")
}
fn default_max_connections() -> usize {
    64
}
fn default_max_per_address() -> usize {
    16
}
fn default_handshake_timeout() -> u64 {
    10
}
fn default_idle() -> u64 {
    300
}
fn default_max_age() -> u64 {
    300
}
fn default_max_items() -> u32 {
    100_000
}
fn default_segment_bytes() -> u64 {
    256 << 20
}
fn default_sync_every() -> u32 {
    1000
}
fn default_sync_ms() -> u64 {
    200
}

macro_rules! defaults {
    ($t:ident { $($f:ident: $v:expr),* $(,)? }) => {
        impl Default for $t {
            fn default() -> Self {
                $t { $($f: $v),* }
            }
        }
    };
}

defaults!(SendConfig {
    save_every: default_save_every(),
    batch_items: default_batch_items(),
    batch_bytes: default_batch_bytes(),
    window: default_window(),
    records: true,
    resend_rate: default_resend_rate(),
    retry_min: default_retry_min(),
    retry_max: default_retry_max(),
    timeout: default_timeout(),
});
defaults!(StoreConfig {
    max_bytes: 0,
    check_interval: default_check_interval(),
    floor_file: None,
    snapshot_dir: None,
});
defaults!(RecvConfig {
    listen: default_listen(),
    store_dir: default_recv_store(),
    inbox_dir: default_inbox(),
    max_connections: default_max_connections(),
    max_per_address: default_max_per_address(),
    handshake_timeout: default_handshake_timeout(),
    idle_timeout: default_idle(),
});
defaults!(SegmentConfig {
    max_age: default_max_age(),
    max_items: default_max_items(),
    max_bytes: default_segment_bytes(),
    sync_every: default_sync_every(),
    sync_ms: default_sync_ms(),
});

impl DaemonConfig for ReaderConfig {
    fn validate(&self, _common: &CommonConfig) -> Result<(), String> {
        crate::wire::check_stream_name(&self.name)
            .map_err(|e| format!("name: {e} (it names this reader's streams)"))?;
        for (kind, groups) in [("Index", &self.index), ("Summary", &self.summary)] {
            for (n, g) in groups {
                let stream = match self.stream_epoch {
                    0 => format!("{}.{kind}.{n}", self.name),
                    e => format!("{}.{kind}.{n}.epoch{e}", self.name),
                };
                crate::wire::check_stream_name(&stream)
                    .map_err(|e| format!("name, stream_epoch: stream name {stream:?}: {e}"))?;
                if g.addresses.is_empty() {
                    return Err(format!("{kind}.{n}.Addresses: empty"));
                }
                for a in &g.addresses {
                    if !a.contains(':') {
                        return Err(format!("{kind}.{n}.Addresses: {a:?} is not host:port"));
                    }
                }
                g.wanted()
                    .map_err(|e| format!("{kind}.{n}.Statuses: {e}"))?;
            }
        }
        for (n, f) in &self.sendfile {
            if !matches!(f.kind.as_str(), "spool" | "segments") {
                return Err(format!("SendFile.{n}.Kind: spool or segments"));
            }
            crate::wire::check_stream_name(&f.inbox)
                .map_err(|e| format!("SendFile.{n}.Inbox: {e}"))?;
            glob::Pattern::new(&f.pattern).map_err(|e| format!("SendFile.{n}.Pattern: {e}"))?;
        }
        if self.max_frame < 4096 || self.max_frame > 1 << 30 {
            return Err("MaxFrame: between 4096 and 1073741824".into());
        }
        if self.send.batch_bytes + 4096 > self.max_frame {
            return Err("Send.BatchBytes: must leave room within MaxFrame".into());
        }
        if self.send.batch_items == 0 || self.send.window == 0 || self.send.save_every == 0 {
            return Err("Send.BatchItems, Send.Window and Send.SaveEvery: at least 1".into());
        }
        if !(self.send.retry_min > 0.0 && self.send.retry_max >= self.send.retry_min) {
            return Err("Send.RetryMin > 0 and Send.RetryMax >= Send.RetryMin".into());
        }
        if self.recv.max_connections == 0
            || self.recv.max_per_address == 0
            || self.recv.handshake_timeout == 0
        {
            return Err(
                "Recv.MaxConnections, Recv.MaxPerAddress and Recv.HandshakeTimeout: at least 1"
                    .into(),
            );
        }
        if self.segment.max_items == 0 || self.segment.max_bytes < 4096 {
            return Err("Segment.MaxItems at least 1, Segment.MaxBytes at least 4096".into());
        }
        Ok(())
    }

    /// The secret is read as a start would read it: there, private, long enough.
    fn check_files(&self, common: &CommonConfig) -> Result<(), String> {
        crate::wire::Secret::load(&common.path(&self.secret_file))
            .map(|_| ())
            .map_err(|e| format!("secret_file: {e}"))
    }

    /// Senders and receivers read the secret once, at start.
    fn start_files(&self, common: &CommonConfig) -> Vec<(&'static str, PathBuf)> {
        vec![("secret_file", common.path(&self.secret_file))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the shipped config keeps its value through a reload of the same file
    /// (the running values of restart-only keys are put back through serde).
    #[test]
    fn the_shipped_reader_reloads_onto_itself() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/reader.cf");
        let c =
            focuser_daemon::Config::<ReaderConfig>::load(std::path::Path::new(file), None).unwrap();
        assert!(c.restart_only_changes(&c).is_empty());
        assert_eq!(c.reloaded(c.clone()).unwrap(), c);
    }

    /// Every key of the shipped config keeps its value through a reload of the same file
    /// (the running values of restart-only keys are put back through serde).
    #[test]
    fn the_shipped_reader_recv_reloads_onto_itself() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/reader-recv.cf");
        let c =
            focuser_daemon::Config::<ReaderConfig>::load(std::path::Path::new(file), None).unwrap();
        assert!(c.restart_only_changes(&c).is_empty());
        assert_eq!(c.reloaded(c.clone()).unwrap(), c);
    }
}
