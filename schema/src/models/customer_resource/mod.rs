//! `customer_resource`: a customer's own table of its resources (`vr_resource.data_from = 4`)
//! in a second, GBK database (`Resources.CustomerDatabase`; docs/formats.md "Customer
//! resources"). It is not one of ours: no migration makes it. Its text columns travel as
//! bytes both ways, so that their GBK is decoded and encoded by the caller, strictly, whatever
//! the columns' declared character set (`gbk`, `latin1` holding GBK, or binary).

use chrono::NaiveDateTime;
use diesel::mysql::MysqlConnection;
use diesel::prelude::*;
use diesel::sql_types::{Binary, Datetime, Integer, Nullable, TinyInt, Unsigned};

use super::FetchStatus;

/// A customer's row of a resource, its text as stored.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct CustomerResource {
    #[diesel(sql_type = Unsigned<Integer>)]
    pub id: u32,
    /// The customer's name of the resource, GBK bytes.
    #[diesel(sql_type = Binary)]
    pub res_name: Vec<u8>,
}

impl CustomerResource {
    /// A connection to the customer's database with GBK as its character set (`SET NAMES
    /// gbk`), UTC like ours.
    pub fn connect(url: &str) -> Result<MysqlConnection, crate::db::DbError> {
        let mut conn = crate::db::connect(url)?;
        diesel::sql_query("SET NAMES gbk").execute(&mut conn)?;
        Ok(conn)
    }

    /// The customer's rows of resource `res_id`, by id.
    pub fn for_resource(conn: &mut MysqlConnection, res_id: u32) -> QueryResult<Vec<Self>> {
        diesel::sql_query(include_str!("rows.sql"))
            .bind::<Unsigned<Integer>, _>(res_id)
            .load(conn)
    }

    /// Writes a run's outcome into row `id`; `detail` is GBK bytes; `items` `None` keeps
    /// `item_num`.
    pub fn report(
        conn: &mut MysqlConnection,
        id: u32,
        fetch_time: NaiveDateTime,
        status: FetchStatus,
        items: Option<u32>,
        detail: &[u8],
    ) -> QueryResult<usize> {
        diesel::sql_query(include_str!("report.sql"))
            .bind::<Datetime, _>(fetch_time)
            .bind::<Unsigned<TinyInt>, _>(status)
            .bind::<Nullable<Unsigned<Integer>>, _>(items)
            .bind::<Binary, _>(detail)
            .bind::<Unsigned<Integer>, _>(id)
            .execute(conn)
    }
}
