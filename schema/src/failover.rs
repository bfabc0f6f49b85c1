//! Several addresses of one database — the nodes of a Galera cluster — behind one pool.
//!
//! The pool uses one address at a time, so that every connection of a daemon talks to the
//! same node (`FOR UPDATE SKIP LOCKED` and other locks are local to a node; one writer per
//! daemon keeps them meaningful). It moves on when that address stops answering or its node
//! leaves the cluster's primary component (`wsrep_ready = OFF`): `connect` tries the address
//! in use first, then the others in list order, and a connection opened on another address
//! than the one in use fails its check at check-out. A plain server (`wsrep_on` off or
//! unknown, as on MySQL) is checked with a ping only.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use diesel::mysql::MysqlConnection;
use diesel::r2d2::R2D2Connection;
use diesel::sql_types::Text;
use diesel::{Connection, QueryableByName, RunQueryDsl};

/// The entries of a database list (`mysql://…,mysql://…`), trimmed; empty entries are kept
/// (as empty strings) so that a check can name them.
pub fn split_addresses(list: &str) -> Vec<&str> {
    list.split(',').map(str::trim).collect()
}

/// Why the pool left an address, and for which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    /// Index in the list of the address left, and of the one now in use.
    pub from: usize,
    pub to: usize,
    /// The failure of `from` (a server's message: never a password).
    pub why: String,
}

/// Told of every switch (the daemon logs it and counts it).
pub type OnSwitch = Box<dyn Fn(&Switch) + Send + Sync>;

/// Which address is in use, shared by the pool's manager and whoever reports on it.
#[derive(Debug, Default)]
pub struct AddressInUse {
    current: AtomicUsize,
    switches: AtomicU64,
}

impl AddressInUse {
    /// Index in the list of the address in use.
    pub fn index(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    /// Times the pool moved to another address.
    pub fn switches(&self) -> u64 {
        self.switches.load(Ordering::Relaxed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FailoverError {
    #[error("{0}")]
    Address(String),
    #[error("connected to address {got} while address {current} is in use")]
    Moved { got: usize, current: usize },
    #[error("no address answers: {0}")]
    NoneAnswers(String),
}

/// A connection and the address it was opened on (derefs to the connection).
pub struct NodeConnection {
    conn: MysqlConnection,
    address: usize,
    galera: bool,
}

impl NodeConnection {
    /// Index in the list of the address this connection talks to.
    pub fn address(&self) -> usize {
        self.address
    }
}

impl Deref for NodeConnection {
    type Target = MysqlConnection;
    fn deref(&self) -> &MysqlConnection {
        &self.conn
    }
}

impl DerefMut for NodeConnection {
    fn deref_mut(&mut self) -> &mut MysqlConnection {
        &mut self.conn
    }
}

/// The r2d2 manager of a database with several addresses.
pub struct Failover {
    addresses: Vec<String>,
    in_use: Arc<AddressInUse>,
    on_switch: Option<OnSwitch>,
}

impl Failover {
    pub fn new(addresses: Vec<String>, on_switch: Option<OnSwitch>) -> Failover {
        Failover {
            addresses,
            in_use: Arc::new(AddressInUse::default()),
            on_switch,
        }
    }

    pub fn in_use(&self) -> Arc<AddressInUse> {
        Arc::clone(&self.in_use)
    }

    fn moved(&self, from: usize, to: usize, why: String) {
        let moved = self
            .in_use
            .current
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        // Of several threads that found the address gone at once, the first one reports.
        if moved {
            self.in_use.switches.fetch_add(1, Ordering::Relaxed);
            if let Some(tell) = &self.on_switch {
                tell(&Switch { from, to, why });
            }
        }
    }
}

impl r2d2::ManageConnection for Failover {
    type Connection = NodeConnection;
    type Error = FailoverError;

    fn connect(&self) -> Result<NodeConnection, FailoverError> {
        let n = self.addresses.len();
        let start = self.in_use.index();
        let mut failures: Vec<(usize, String)> = Vec::new();
        for k in 0..n {
            let i = (start + k) % n;
            match open(&self.addresses[i], i) {
                Ok(conn) => {
                    if let Some((_, why)) = failures.into_iter().next() {
                        self.moved(start, i, why);
                    }
                    return Ok(conn);
                }
                Err(e) if n == 1 => return Err(FailoverError::Address(e)),
                Err(e) => failures.push((i, e)),
            }
        }
        Err(none_answers(failures))
    }

    fn is_valid(&self, conn: &mut NodeConnection) -> Result<(), FailoverError> {
        let current = self.in_use.index();
        if conn.address != current {
            return Err(FailoverError::Moved {
                got: conn.address,
                current,
            });
        }
        check(conn).map_err(FailoverError::Address)
    }

    fn has_broken(&self, conn: &mut NodeConnection) -> bool {
        std::thread::panicking() || conn.conn.is_broken()
    }
}

#[derive(QueryableByName)]
struct Setting {
    #[diesel(sql_type = Text, column_name = "Value")]
    value: String,
}

/// The value of a `SHOW VARIABLES`/`SHOW STATUS` line, if the server has it.
fn setting(conn: &mut MysqlConnection, show: &str) -> diesel::QueryResult<Option<String>> {
    let rows: Vec<Setting> = diesel::sql_query(show).load(conn)?;
    Ok(rows.into_iter().next().map(|s| s.value))
}

/// Opens address `index`, refusing a cluster node outside the primary component.
fn open(url: &str, index: usize) -> Result<NodeConnection, String> {
    let mut conn = MysqlConnection::establish(url).map_err(|e| e.to_string())?;
    let galera = setting(&mut conn, include_str!("failover/wsrep_on.sql"))
        .map_err(|e| e.to_string())?
        .is_some_and(|v| v.eq_ignore_ascii_case("ON"));
    let mut conn = NodeConnection {
        conn,
        address: index,
        galera,
    };
    check(&mut conn)?;
    crate::db::setup_session(&mut conn.conn).map_err(|e| e.to_string())?;
    if galera {
        // Reads wait until this node has applied what the cluster committed before them, so
        // a daemon that moved to another node reads its own writes.
        diesel::sql_query(include_str!("failover/causal_reads.sql"))
            .execute(&mut conn.conn)
            .map_err(|e| e.to_string())?;
    }
    Ok(conn)
}

/// A plain server answers a ping; a cluster node must also be in the primary component.
fn check(conn: &mut NodeConnection) -> Result<(), String> {
    if !conn.galera {
        return conn.conn.ping().map_err(|e| e.to_string());
    }
    let ready = setting(&mut conn.conn, include_str!("failover/wsrep_ready.sql"))
        .map_err(|e| e.to_string())?;
    match ready.as_deref() {
        Some(v) if v.eq_ignore_ascii_case("ON") => Ok(()),
        _ => Err(NOT_PRIMARY.to_string()),
    }
}

/// What a node outside the primary component is told, and says of itself.
pub const NOT_PRIMARY: &str =
    "the node is not in the cluster's primary component (wsrep_ready = OFF)";

/// One plain connection for a tool: the first address of the list that answers (and, on a
/// cluster, is in the primary component), with its index.
pub fn connect_first(list: &[&str]) -> Result<(MysqlConnection, usize), FailoverError> {
    let mut failures = Vec::new();
    for (i, url) in list.iter().enumerate() {
        match open(url, i) {
            Ok(c) => return Ok((c.conn, i)),
            Err(e) if list.len() == 1 => return Err(FailoverError::Address(e)),
            Err(e) => failures.push((i, e)),
        }
    }
    Err(none_answers(failures))
}

/// Every address's failure, by number from 1.
fn none_answers(failures: Vec<(usize, String)>) -> FailoverError {
    let each: Vec<String> = failures
        .into_iter()
        .map(|(i, e)| format!("address {}: {e}", i + 1))
        .collect();
    FailoverError::NoneAnswers(each.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_splits_at_commas_and_keeps_empty_entries() {
        assert_eq!(split_addresses("mysql://a/x"), ["mysql://a/x"]);
        assert_eq!(
            split_addresses(" mysql://a/x , mysql://b/x"),
            ["mysql://a/x", "mysql://b/x"]
        );
        assert_eq!(split_addresses("mysql://a/x,,"), ["mysql://a/x", "", ""]);
    }

    #[test]
    fn only_the_first_thread_to_see_an_address_go_reports_the_switch() {
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let t = Arc::clone(&told);
        let f = Failover::new(
            vec!["a".into(), "b".into(), "c".into()],
            Some(Box::new(move |s: &Switch| {
                t.lock().unwrap().push(s.clone())
            })),
        );
        f.moved(0, 1, "gone".into());
        f.moved(0, 2, "gone too".into());
        assert_eq!(f.in_use().index(), 1);
        assert_eq!(f.in_use().switches(), 1);
        assert_eq!(
            *told.lock().unwrap(),
            [Switch {
                from: 0,
                to: 1,
                why: "gone".into()
            }]
        );
    }
}
