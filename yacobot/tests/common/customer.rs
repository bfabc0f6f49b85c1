//! A customer's GBK database for the customer resource tests (docs/formats.md "Customer
//! resources"): a database of character set gbk on the test server, beside the test's own,
//! with the `customer_resource` table as the docs give it; dropped after.

use diesel::connection::SimpleConnection;
use diesel::mysql::MysqlConnection;
use diesel::sql_types::{Binary, Nullable, Unsigned};
use diesel::{QueryableByName, RunQueryDsl};
use focuser_tests::{admin_url, url_with_db, TestDb};

pub struct CustomerDb {
    name: String,
    pub url: String,
}

/// The first ```sql block of docs/formats.md's "Customer resources".
fn documented_table() -> String {
    let doc = std::fs::read_to_string(focuser_tests::repo_root().join("docs/formats.md")).unwrap();
    let from = doc.find("### Customer resources").unwrap();
    let block = &doc[from..];
    let block = &block[block.find("```sql\n").unwrap() + 7..];
    block[..block.find("```").unwrap()].to_string()
}

impl CustomerDb {
    /// `focuser_t_<pid>_<n>_cust` (found and dropped with the test's databases if the test
    /// dies), of character set gbk, with the documented table.
    pub fn new(db: &TestDb) -> CustomerDb {
        let admin = admin_url().unwrap();
        let name = format!("{}_cust", db.name());
        let mut c = focuser_schema::db::connect(&admin).unwrap();
        c.batch_execute(&format!(
            "DROP DATABASE IF EXISTS `{name}`; CREATE DATABASE `{name}` CHARACTER SET gbk"
        ))
        .unwrap();
        let url = url_with_db(&admin, &name).unwrap();
        let me = CustomerDb { name, url };
        me.conn().batch_execute(&documented_table()).unwrap();
        me
    }

    pub fn conn(&self) -> MysqlConnection {
        focuser_schema::db::connect(&self.url).unwrap()
    }

    /// A customer's row of `res_id` whose name is these bytes, as a legacy program that does
    /// not check them writes it (non-strict); its id.
    pub fn row(&self, res_id: u32, name: &[u8]) -> u32 {
        let c = &mut self.conn();
        c.batch_execute("SET NAMES binary; SET SESSION sql_mode = ''")
            .unwrap();
        diesel::sql_query("INSERT INTO customer_resource (res_id, res_name) VALUES (?, ?)")
            .bind::<Unsigned<diesel::sql_types::Integer>, _>(res_id)
            .bind::<Binary, _>(name)
            .execute(c)
            .unwrap();
        #[derive(QueryableByName)]
        struct Id {
            #[diesel(sql_type = Unsigned<diesel::sql_types::BigInt>)]
            id: u64,
        }
        diesel::sql_query("SELECT LAST_INSERT_ID() AS id")
            .get_result::<Id>(c)
            .unwrap()
            .id as u32
    }

    /// A row as stored: (fetch_status, item_num, fetch_detail's bytes, fetch_time set).
    pub fn read(&self, id: u32) -> (u8, u32, Vec<u8>, bool) {
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = Unsigned<diesel::sql_types::TinyInt>)]
            fetch_status: u8,
            #[diesel(sql_type = Unsigned<diesel::sql_types::Integer>)]
            item_num: u32,
            #[diesel(sql_type = Binary)]
            detail: Vec<u8>,
            #[diesel(sql_type = Nullable<diesel::sql_types::Datetime>)]
            fetch_time: Option<chrono::NaiveDateTime>,
        }
        let r: Row = diesel::sql_query(
            "SELECT fetch_status, item_num, CAST(fetch_detail AS BINARY) AS detail, fetch_time \
             FROM customer_resource WHERE id = ?",
        )
        .bind::<Unsigned<diesel::sql_types::Integer>, _>(id)
        .get_result(&mut self.conn())
        .unwrap();
        (r.fetch_status, r.item_num, r.detail, r.fetch_time.is_some())
    }

    pub fn exec(&self, sql: &str) {
        self.conn().batch_execute(sql).unwrap();
    }
}

impl Drop for CustomerDb {
    fn drop(&mut self) {
        if let Ok(mut c) = focuser_schema::db::connect(&admin_url().unwrap_or_default()) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS `{}`", self.name));
        }
    }
}
