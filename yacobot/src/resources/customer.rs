//! Customer resources (`vr_resource.data_from = 4`; docs/formats.md "Customer resources"):
//! after the source's MysqlHandlerTask, a run of one reads the resource's rows in the
//! customer's own GBK database (`Resources.CustomerDatabase`) and writes its outcome into them.
//! The customer's database is not ours: a run whose customer database is unreachable, or
//! one of whose rows is not GBK, is an error in its report and counted, and its items are
//! written all the same (the next run writes the rows again).

use focuser_daemon::clock;
use focuser_feed::detail::{FetchDetail, MAX_DETAIL_BYTES};
use focuser_feed::encoding::{decode_gbk, encode_gbk};
use focuser_schema::models::{CustomerResource, FetchStatus};

use super::changes::Writer;
use super::run::RunShared;
use crate::status::add;

/// Reads and writes the run's customer rows; what went wrong goes into `detail` (a failure:
/// the run ends in error) and the log, and is counted.
pub fn report(w: &Writer<'_>, run: &RunShared, detail: &mut FetchDetail, items: Option<u32>) {
    let res_id = run.res_id();
    let failed = |detail: &mut FetchDetail, what: String| {
        add(&w.stats.customer_errors, 1);
        log::error!("resource {res_id}: customer database: {what}");
        detail.failure(format!("customer database: {what}"));
    };
    let Some(url) = w.ctx.config().daemon.resources.customer_database.clone() else {
        failed(
            detail,
            "a customer resource (data_from 4), and Resources.CustomerDatabase is not set".into(),
        );
        return;
    };
    // What the customer sees: the report as it stands before the customer's own lines.
    let status = if detail.is_error() {
        FetchStatus::Error
    } else {
        FetchStatus::Ok
    };
    let text = encode_gbk(&detail.render(MAX_DETAIL_BYTES));
    let started = run.claimed.run.fetch_start.unwrap_or_else(clock::db_now);
    // One connection per run, no retry: an unreachable customer database must not hold
    // the write stage (the next run writes the rows again).
    let mut conn = match CustomerResource::connect(&url) {
        Ok(c) => c,
        Err(e) => return failed(detail, format!("cannot connect: {e}")),
    };
    let rows = match CustomerResource::for_resource(&mut conn, res_id) {
        Ok(rows) => rows,
        Err(e) => return failed(detail, format!("reading customer_resource: {e}")),
    };
    if rows.is_empty() {
        return failed(
            detail,
            "customer_resource has no row of the resource".into(),
        );
    }
    let mut names = Vec::new();
    for row in &rows {
        match decode_gbk(&row.res_name) {
            Ok(name) => names.push(format!("\"{name}\" (row {})", row.id)),
            Err(e) => failed(
                detail,
                format!("customer_resource row {}: res_name: {e}", row.id),
            ),
        }
        match CustomerResource::report(&mut conn, row.id, started, status, items, &text) {
            Ok(_) => add(&w.stats.customer_rows, 1),
            Err(e) => failed(
                detail,
                format!("customer_resource row {}: not written: {e}", row.id),
            ),
        }
    }
    if !names.is_empty() {
        detail.note(format!("customer {}", names.join(", ")));
    }
}
