//! [`TestDb`]: each test its own fresh, migrated database on the project's private MariaDB
//! (`scripts/db.sh up`), dropped after.
//!
//! A template database is migrated once per migration set (under a MySQL named lock, so
//! parallel `cargo nextest` processes agree) and each test database is copied from it with
//! `CREATE TABLE … LIKE`, which is exact because the schema has no foreign keys.
//!
//! The server is found through `FOCUSER_TEST_DATABASE_URL` (an account that may create
//! `focuser_*` databases), or else by asking `scripts/db.sh url --admin`.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use diesel::mysql::MysqlConnection;
use diesel::sql_types::{Integer, Nullable, Text};
use diesel::{QueryableByName, RunQueryDsl};
use percent_encoding::percent_decode_str;
use tempfile::NamedTempFile;

use crate::{repo_root, Error};

/// Named lock held while a template is built or stale databases are dropped.
const TEMPLATE_LOCK: &str = "focuser_test_template";
/// Per-test databases are `focuser_t_<pid>_<n>`, so leftovers of dead processes can be found.
const TEST_DB_PREFIX: &str = "focuser_t_";
const TEMPLATE_PREFIX: &str = "focuser_tpl_";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The admin URL of the test server (`mysql://user:password@host:port/db`).
pub fn admin_url() -> Result<String, Error> {
    if let Ok(url) = std::env::var("FOCUSER_TEST_DATABASE_URL") {
        return Ok(url);
    }
    let script = repo_root().join("scripts/db.sh");
    let out = Command::new(&script).args(["url", "--admin"]).output()?;
    if !out.status.success() {
        return Err(format!(
            "{} url --admin failed ({}); start the test server with `scripts/db.sh up`",
            script.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

/// `url` with its database name replaced by `db`; of a list of addresses (a cluster's nodes,
/// comma-separated), every entry's.
pub fn url_with_db(url: &str, db: &str) -> Result<String, Error> {
    let entries = focuser_schema::failover::split_addresses(url)
        .into_iter()
        .map(|entry| {
            let mut parsed = url::Url::parse(entry)?;
            parsed.set_path(db);
            Ok(parsed.to_string())
        })
        .collect::<Result<Vec<String>, Error>>()?;
    Ok(entries.join(","))
}

/// A fresh database with every migration applied, dropped when the value is dropped.
pub struct TestDb {
    name: String,
    url: String,
    /// The admin URL of each server the database is on: one, or a cluster's nodes.
    admin_urls: Vec<String>,
    client_options: NamedTempFile,
}

impl TestDb {
    /// A new database for this test. Panics with the reason when the server is not there:
    /// a test without its database cannot do anything useful.
    #[allow(clippy::new_without_default)] // creating a database is no default value
    pub fn new() -> Self {
        Self::create().unwrap_or_else(|e| panic!("cannot create a test database: {e}"))
    }

    pub fn create() -> Result<Self, Error> {
        Self::create_on(&admin_url()?)
    }

    /// A new database on the server of `admin_url` (another server than the test server's,
    /// e.g. a node of the Galera cluster).
    pub fn create_on(admin_url: &str) -> Result<Self, Error> {
        Self::create_on_servers(vec![admin_url.to_string()])
    }

    /// A new database for this test on the Galera cluster (made through the first node that
    /// answers, and so on every node).
    pub fn on_cluster(cluster: &crate::Cluster) -> Self {
        Self::create_on_servers(cluster.admin_urls().to_vec())
            .unwrap_or_else(|e| panic!("cannot create a test database on the cluster: {e}"))
    }

    fn create_on_servers(admin_urls: Vec<String>) -> Result<Self, Error> {
        let (mut admin, i) = first_answering(&admin_urls)?;
        let admin_url = admin_urls[i].clone();
        let template = ensure_template(&mut admin, &admin_url)?;
        let name = format!(
            "{TEST_DB_PREFIX}{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        copy_database(&mut admin, &template, &name)?;
        let url = url_with_db(&admin_urls[0], &name)?;
        let client_options = client_options_file(&url)?;
        Ok(TestDb {
            name,
            url,
            admin_urls,
            client_options,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// URL of this database, with an account that owns it (on a cluster: on node 1).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL of this database on each server it is on (a cluster's nodes, node 1 first).
    pub fn urls(&self) -> Vec<String> {
        self.admin_urls
            .iter()
            .filter_map(|a| url_with_db(a, &self.name).ok())
            .collect()
    }

    /// A new connection to this database (UTC session, like the daemons').
    pub fn conn(&self) -> MysqlConnection {
        focuser_schema::db::connect(&self.url)
            .unwrap_or_else(|e| panic!("cannot connect to test database {}: {e}", self.name))
    }

    /// The real `mariadb` client, connected to this database as an operator would be.
    pub fn client(&self) -> Command {
        let mut cmd = Command::new("mariadb");
        cmd.arg(format!(
            "--defaults-extra-file={}",
            self.client_options.path().display()
        ))
        .arg(&self.name);
        cmd
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let result = first_answering(&self.admin_urls).and_then(|(mut c, _)| {
            diesel::sql_query(format!("DROP DATABASE IF EXISTS `{}`", self.name))
                .execute(&mut c)
                .map_err(Into::into)
        });
        if let Err(e) = result {
            eprintln!("test database {} was not dropped: {e}", self.name);
        }
    }
}

/// A connection to the first of `admin_urls` that answers, and its index.
fn first_answering(admin_urls: &[String]) -> Result<(MysqlConnection, usize), Error> {
    let refs: Vec<&str> = admin_urls.iter().map(String::as_str).collect();
    Ok(focuser_schema::failover::connect_first(&refs)?)
}

#[derive(QueryableByName)]
struct LockResult {
    #[diesel(sql_type = Nullable<Integer>)]
    got: Option<i32>,
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

/// The name of a template holding the current migrations, building it if needed.
fn ensure_template(admin: &mut MysqlConnection, admin_url: &str) -> Result<String, Error> {
    let template = format!("{TEMPLATE_PREFIX}{:016x}", migrations_fingerprint()?);
    let lock: LockResult = diesel::sql_query("SELECT GET_LOCK(?, 120) AS got")
        .bind::<Text, _>(TEMPLATE_LOCK)
        .get_result(admin)?;
    if lock.got != Some(1) {
        return Err(format!("could not take the named lock {TEMPLATE_LOCK} within 120 s").into());
    }
    let result = build_template_locked(admin, admin_url, &template);
    diesel::sql_query("SELECT RELEASE_LOCK(?) AS got")
        .bind::<Text, _>(TEMPLATE_LOCK)
        .execute(admin)?;
    result.map(|()| template)
}

fn build_template_locked(
    admin: &mut MysqlConnection,
    admin_url: &str,
    template: &str,
) -> Result<(), Error> {
    let databases: Vec<Name> = diesel::sql_query(
        "SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'focuser\\_%'",
    )
    .load(admin)?;
    // Another checkout with other migrations may be testing against the same server at the same
    // time: its template is only dropped once nobody has rebuilt it for a day.
    let recent_templates: Vec<Name> = diesel::sql_query(
        "SELECT TABLE_SCHEMA AS name FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA LIKE 'focuser\\_tpl\\_%' AND CREATE_TIME > NOW() - INTERVAL 1 DAY \
         GROUP BY TABLE_SCHEMA",
    )
    .load(admin)?;
    for db in &databases {
        let stale_template = db.name.starts_with(TEMPLATE_PREFIX)
            && db.name != template
            && !recent_templates.iter().any(|r| r.name == db.name);
        if stale_template || is_leftover_test_db(&db.name) {
            diesel::sql_query(format!("DROP DATABASE IF EXISTS `{}`", db.name)).execute(admin)?;
        }
    }
    if databases.iter().any(|db| db.name == template) && template_complete(admin, template)? {
        return Ok(());
    }
    diesel::sql_query(format!("DROP DATABASE IF EXISTS `{template}`")).execute(admin)?;
    diesel::sql_query(format!(
        "CREATE DATABASE `{template}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    ))
    .execute(admin)?;
    let mut conn = focuser_schema::db::connect(&url_with_db(admin_url, template)?)?;
    focuser_schema::migrate(&mut conn)?;
    Ok(())
}

fn template_complete(admin: &mut MysqlConnection, template: &str) -> Result<bool, Error> {
    let applied: Vec<Name> = diesel::sql_query(format!(
        "SELECT version AS name FROM `{template}`.__diesel_schema_migrations"
    ))
    .load(admin)
    .unwrap_or_default();
    let mut applied: Vec<String> = applied.into_iter().map(|n| n.name).collect();
    applied.sort();
    Ok(applied == focuser_schema::db::embedded_versions()?)
}

/// A test database whose process is gone (it was killed before its `Drop` ran).
fn is_leftover_test_db(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(TEST_DB_PREFIX) else {
        return false;
    };
    let Some(pid) = rest.split('_').next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// Copies tables (structure and rows) and views of `from` into a new database `to`.
fn copy_database(admin: &mut MysqlConnection, from: &str, to: &str) -> Result<(), Error> {
    let tables: Vec<Name> = diesel::sql_query(
        "SELECT TABLE_NAME AS name FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME",
    )
    .bind::<Text, _>(from)
    .load(admin)?;
    #[derive(QueryableByName)]
    struct View {
        #[diesel(sql_type = Text)]
        name: String,
        #[diesel(sql_type = Text)]
        definition: String,
    }
    let views: Vec<View> = diesel::sql_query(
        "SELECT TABLE_NAME AS name, VIEW_DEFINITION AS definition FROM information_schema.VIEWS \
         WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME",
    )
    .bind::<Text, _>(from)
    .load(admin)?;

    let mut ddl = format!("CREATE DATABASE `{to}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;\n");
    for t in &tables {
        ddl.push_str(&format!(
            "CREATE TABLE `{to}`.`{0}` LIKE `{from}`.`{0}`;\nINSERT INTO `{to}`.`{0}` SELECT * FROM `{from}`.`{0}`;\n",
            t.name
        ));
    }
    for v in &views {
        let definition = v
            .definition
            .replace(&format!("`{from}`."), &format!("`{to}`."));
        ddl.push_str(&format!(
            "CREATE VIEW `{to}`.`{}` AS {definition};\n",
            v.name
        ));
    }
    use diesel::connection::SimpleConnection;
    admin.batch_execute(&ddl)?;
    Ok(())
}

/// A hash of the migration files, so that editing a migration rebuilds the template.
fn migrations_fingerprint() -> Result<u64, Error> {
    let dir = repo_root().join("migrations");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let mut hasher = DefaultHasher::new();
    for migration in entries {
        for file in ["up.sql", "down.sql"] {
            let path = migration.join(file);
            if let Ok(text) = std::fs::read(&path) {
                path.file_name().hash(&mut hasher);
                migration.file_name().hash(&mut hasher);
                text.hash(&mut hasher);
            }
        }
    }
    Ok(hasher.finish())
}

/// An options file for the `mariadb` client, readable only by us (tempfile creates it 0600),
/// so the password never appears on a command line.
fn client_options_file(url: &str) -> Result<NamedTempFile, Error> {
    let parts = UrlParts::parse(url)?;
    let mut file = tempfile::Builder::new()
        .prefix("focuser-client-")
        .suffix(".cnf")
        .tempfile()?;
    writeln!(
        file,
        "[client]\nuser={}\npassword=\"{}\"\nhost={}\nport={}\nprotocol=tcp",
        parts.user, parts.password, parts.host, parts.port
    )?;
    file.flush()?;
    Ok(file)
}

/// The parts of a `mysql://user:password@host:port/db` URL, percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    pub user: String,
    pub password: String,
    pub host: String,
    pub port: u16,
    pub database: String,
}

impl UrlParts {
    pub fn parse(url: &str) -> Result<Self, Error> {
        let parsed = url::Url::parse(url)?;
        if parsed.scheme() != "mysql" {
            return Err(format!("database URL scheme is {}, not mysql", parsed.scheme()).into());
        }
        let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        Ok(UrlParts {
            user: decode(parsed.username()),
            password: decode(parsed.password().unwrap_or("")),
            host: parsed
                .host_str()
                .ok_or("database URL has no host")?
                .to_string(),
            port: parsed.port().unwrap_or(3306),
            database: decode(parsed.path().trim_start_matches('/')),
        })
    }
}
