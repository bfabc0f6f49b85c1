//! `yacobot resource disable|enable|remove`: a resource's withdrawal asked for and undone
//! (docs/operations.md "yacobot: partner feeds"). The commands only set `res_status` (and, for
//! enable, `manual_update`); the resources worker withdraws at its next scan. A command that
//! would change nothing, or whose resource changed under it, is an error and changes nothing.

use anyhow::bail;
use diesel::mysql::MysqlConnection;
use focuser_schema::models::{ResStatus, VrData, VrResource};

use super::find;

/// The `enabled` column of `resource list`.
pub fn state(s: ResStatus) -> &'static str {
    match s {
        ResStatus::Enabled => "yes",
        ResStatus::Disabled => "no",
        ResStatus::Withdrawing => "withdrawing",
        ResStatus::Removing => "removing",
        ResStatus::Unknown(_) => "?",
    }
}

/// The state as `resource show` says it.
pub fn described(s: ResStatus) -> String {
    match s {
        ResStatus::Enabled => "enabled".into(),
        ResStatus::Disabled => "disabled".into(),
        ResStatus::Withdrawing => {
            "being withdrawn (DELETE items at the next scan), then disabled".into()
        }
        ResStatus::Removing => {
            "being removed (DELETE items at the next scan, then its rows deleted)".into()
        }
        ResStatus::Unknown(n) => format!("res_status {n} (unknown to this yacobot)"),
    }
}

/// Moves `r` from the state it was read in to `to`; an error when another command or the
/// worker changed it meanwhile.
fn switch(
    conn: &mut MysqlConnection,
    r: &VrResource,
    to: ResStatus,
    ask_run: bool,
) -> anyhow::Result<()> {
    if !VrResource::switch_status(conn, r.id, r.res_status, to, ask_run)? {
        bail!(
            "resource {} \"{}\" changed while this command ran: nothing changed; look at it again (resource show)",
            r.id,
            r.res_name
        );
    }
    Ok(())
}

/// `resource disable`.
pub fn disable(conn: &mut MysqlConnection, resource: &str) -> anyhow::Result<String> {
    let r = find(conn, resource)?;
    let live = VrData::count_live(conn, r.id)?;
    let (id, name) = (r.id, &r.res_name);
    match r.res_status {
        ResStatus::Withdrawing => bail!(
            "resource {id} \"{name}\" is already being withdrawn ({live} live items left): nothing changed"
        ),
        ResStatus::Removing => {
            bail!("resource {id} \"{name}\" is being removed: nothing changed")
        }
        // Disabled before withdrawals existed, its items are still live: they are withdrawn.
        ResStatus::Disabled if live == 0 => {
            bail!("resource {id} \"{name}\" is already disabled: nothing changed")
        }
        _ => {}
    }
    switch(conn, &r, ResStatus::Withdrawing, false)?;
    Ok(format!(
        "resource {id} \"{name}\": withdrawal asked for: at its next scan the resources worker emits a DELETE item for each of its {live} live items, then the resource is disabled\n"
    ))
}

/// `resource enable`: a run is asked for, so that a withdrawn resource's items come back at
/// the next scan rather than after its `frequency`.
pub fn enable(conn: &mut MysqlConnection, resource: &str) -> anyhow::Result<String> {
    let r = find(conn, resource)?;
    let (id, name) = (r.id, &r.res_name);
    match r.res_status {
        ResStatus::Enabled => bail!("resource {id} \"{name}\" is already enabled: nothing changed"),
        ResStatus::Removing => {
            bail!("resource {id} \"{name}\" is being removed: nothing changed")
        }
        _ => {}
    }
    switch(conn, &r, ResStatus::Enabled, true)?;
    let stopped = if r.res_status == ResStatus::Withdrawing {
        " (its withdrawal stops where it is)"
    } else {
        ""
    };
    Ok(format!(
        "resource {id} \"{name}\" enabled{stopped}; a run is asked for: its items come back as UPDATE items at the next scan\n"
    ))
}

/// `resource remove`.
pub fn remove(conn: &mut MysqlConnection, resource: &str) -> anyhow::Result<String> {
    let r = find(conn, resource)?;
    let (id, name) = (r.id, &r.res_name);
    if r.res_status == ResStatus::Removing {
        bail!("resource {id} \"{name}\" is already being removed: nothing changed");
    }
    let live = VrData::count_live(conn, id)?;
    switch(conn, &r, ResStatus::Removing, false)?;
    Ok(format!(
        "resource {id} \"{name}\": removal asked for: at its next scan the resources worker emits a DELETE item for each of its {live} live items, then deletes the resource and all its rows\n"
    ))
}
