//! Withdrawing a resource (the source's DeleteTask; docs/formats.md "Withdrawing a resource"):
//! the operator's request (`res_status` 2 or 3), and the rows the resources worker changes
//! under the resource's claim.

use diesel::prelude::*;

use super::VrResource;
use crate::models::ResStatus;
use crate::schema::{
    process_timestamp, resource_status, vr_data, vr_open_datasource, vr_resource, vr_update_info,
};

impl VrResource {
    /// The `res_status` of resource `id` when `owner` holds its claim, the row locked until
    /// the end of the caller's transaction (see [`VrResource::lock_claim`]); `None` when the
    /// claim is another's or none.
    pub fn lock_claim_status(
        conn: &mut MysqlConnection,
        id: u32,
        owner: &str,
    ) -> QueryResult<Option<ResStatus>> {
        let (holder, status): (Option<String>, ResStatus) = vr_resource::table
            .find(id)
            .select((vr_resource::claimed_by, vr_resource::res_status))
            .for_update()
            .first(conn)?;
        Ok((holder.as_deref() == Some(owner)).then_some(status))
    }

    /// Sets `res_status` of resource `id` to `to` where it is still `from`, and with
    /// `ask_run` asks for a run (`manual_update = 1`); `false` when it was not `from` (another
    /// command or the worker changed it meanwhile): nothing is changed then.
    pub fn switch_status(
        conn: &mut MysqlConnection,
        id: u32,
        from: ResStatus,
        to: ResStatus,
        ask_run: bool,
    ) -> QueryResult<bool> {
        let target = vr_resource::table
            .filter(vr_resource::id.eq(id))
            .filter(vr_resource::res_status.eq(from));
        let n = if ask_run {
            diesel::update(target)
                .set((
                    vr_resource::res_status.eq(to),
                    vr_resource::manual_update.eq(true),
                ))
                .execute(conn)?
        } else {
            diesel::update(target)
                .set(vr_resource::res_status.eq(to))
                .execute(conn)?
        };
        Ok(n == 1)
    }

    /// Deletes up to `limit` of the `vr_data` rows of resource `id` (a removal, in pieces that
    /// keep each transaction small); returns how many.
    pub fn delete_items(conn: &mut MysqlConnection, id: u32, limit: i64) -> QueryResult<usize> {
        let ids: Vec<u64> = vr_data::table
            .filter(vr_data::res_id.eq(id))
            .order(vr_data::id)
            .limit(limit)
            .select(vr_data::id)
            .load(conn)?;
        if ids.is_empty() {
            return Ok(0);
        }
        diesel::delete(vr_data::table.filter(vr_data::id.eq_any(&ids))).execute(conn)
    }

    /// Deletes resource `id` and its rows in every other table but `vr_data` (whose rows
    /// [`VrResource::delete_items`] deleted first). Call inside one transaction.
    pub fn delete_with_rows(conn: &mut MysqlConnection, id: u32) -> QueryResult<()> {
        diesel::delete(resource_status::table.filter(resource_status::res_id.eq(id)))
            .execute(conn)?;
        diesel::delete(vr_open_datasource::table.filter(vr_open_datasource::res_id.eq(id)))
            .execute(conn)?;
        diesel::delete(vr_update_info::table.filter(vr_update_info::res_id.eq(id)))
            .execute(conn)?;
        diesel::delete(process_timestamp::table.filter(process_timestamp::res_id.eq(id)))
            .execute(conn)?;
        diesel::delete(vr_resource::table.find(id)).execute(conn)?;
        Ok(())
    }
}
