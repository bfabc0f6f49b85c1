//! The migrations on a fresh database: up, down, up again, and what "up" must leave behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use diesel::sql_types::Text;
use diesel::{QueryableByName, RunQueryDsl};
use focuser_tests::TestDb;

#[derive(QueryableByName, Debug)]
struct Row {
    #[diesel(sql_type = Text)]
    name: String,
}

const TABLES: [&str; 27] = [
    "binding_dict",
    "binding_dict_phrase",
    "binding_page",
    "binding_position",
    "host",
    "loader_watermark",
    "multidoc_domain",
    "multidoc_fingerprint",
    "multidoc_group",
    "multidoc_page",
    "multidoc_position",
    "open_xml_format",
    "partner_domain",
    "path_arg_name",
    "path_stub",
    "process_timestamp",
    "query_args",
    "query_arg_probe",
    "queue_applied",
    "resource_status",
    "url",
    "vr_data",
    "vr_open_datasource",
    "vr_resource",
    "vr_update_info",
    "withdraw_position",
    "yacobot_node",
];

fn objects(conn: &mut diesel::MysqlConnection, kind: &str) -> Vec<String> {
    diesel::sql_query(
        "SELECT TABLE_NAME AS name FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = ? AND TABLE_NAME <> '__diesel_schema_migrations' \
         ORDER BY TABLE_NAME",
    )
    .bind::<Text, _>(kind)
    .load::<Row>(conn)
    .unwrap()
    .into_iter()
    .map(|r| r.name)
    .collect()
}

#[test]
fn all_up_all_down_all_up_again() {
    let db = TestDb::new();
    let mut conn = db.conn();
    assert_eq!(objects(&mut conn, "BASE TABLE"), TABLES);
    assert_eq!(
        objects(&mut conn, "VIEW"),
        ["v_node_load", "v_resource_health"]
    );

    let reverted = focuser_schema::db::revert_all(&mut conn).unwrap();
    assert_eq!(
        reverted.len(),
        focuser_schema::db::embedded_versions().unwrap().len()
    );
    assert!(objects(&mut conn, "BASE TABLE").is_empty());
    assert!(objects(&mut conn, "VIEW").is_empty());

    let applied = focuser_schema::migrate(&mut conn).unwrap();
    assert_eq!(applied, focuser_schema::db::embedded_versions().unwrap());
    assert_eq!(objects(&mut conn, "BASE TABLE"), TABLES);
    assert_eq!(
        objects(&mut conn, "VIEW"),
        ["v_node_load", "v_resource_health"]
    );
    assert!(
        focuser_schema::migrate(&mut conn).unwrap().is_empty(),
        "second run applies nothing"
    );
}

#[test]
fn every_table_is_innodb_utf8mb4_and_every_column_is_commented() {
    let db = TestDb::new();
    let mut conn = db.conn();
    let wrong_engine: Vec<Row> = diesel::sql_query(
        "SELECT TABLE_NAME AS name FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' \
         AND TABLE_NAME <> '__diesel_schema_migrations' \
         AND (ENGINE <> 'InnoDB' OR TABLE_COLLATION NOT LIKE 'utf8mb4%' OR TABLE_COMMENT = '')",
    )
    .load(&mut conn)
    .unwrap();
    assert!(
        wrong_engine.is_empty(),
        "not InnoDB/utf8mb4/commented: {wrong_engine:?}"
    );

    let uncommented: Vec<Row> = diesel::sql_query(
        "SELECT CONCAT(c.TABLE_NAME, '.', c.COLUMN_NAME) AS name FROM information_schema.COLUMNS c \
         JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME \
         WHERE c.TABLE_SCHEMA = DATABASE() AND t.TABLE_TYPE = 'BASE TABLE' \
         AND c.TABLE_NAME <> '__diesel_schema_migrations' AND c.COLUMN_COMMENT = ''",
    )
    .load(&mut conn)
    .unwrap();
    assert!(
        uncommented.is_empty(),
        "columns without a comment: {uncommented:?}"
    );
}

#[test]
fn the_scheduler_query_uses_the_due_index() {
    let db = TestDb::new();
    let mut conn = db.conn();
    #[derive(QueryableByName, Debug)]
    struct Plan {
        #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
        key: Option<String>,
    }
    let plan: Vec<Plan> = diesel::sql_query(
        "EXPLAIN SELECT id FROM url FORCE INDEX (ix_url_due) \
         WHERE hits > 0 AND next_indexed <= UTC_TIMESTAMP() ORDER BY download_prio DESC LIMIT 100",
    )
    .load(&mut conn)
    .unwrap();
    assert_eq!(plan[0].key.as_deref(), Some("ix_url_due"));
}
