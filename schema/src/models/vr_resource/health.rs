//! Resources as the status pages show them.

use diesel::prelude::*;

use super::VrResource;
use crate::models::FetchStatus;
use crate::schema::vr_resource;

impl VrResource {
    /// Resources whose last run failed (`fetch_status` error), the latest failure first, at
    /// most `limit`: the status page's "resources in error", with their `fetch_detail`.
    pub fn in_error(conn: &mut MysqlConnection, limit: i64) -> QueryResult<Vec<Self>> {
        vr_resource::table
            .filter(vr_resource::fetch_status.eq(FetchStatus::Error))
            .order((vr_resource::last_fetch_time.desc(), vr_resource::id))
            .limit(limit)
            .select(Self::as_select())
            .load(conn)
    }

    /// How many resources' last run failed.
    pub fn count_in_error(conn: &mut MysqlConnection) -> QueryResult<i64> {
        vr_resource::table
            .filter(vr_resource::fetch_status.eq(FetchStatus::Error))
            .count()
            .get_result(conn)
    }
}
