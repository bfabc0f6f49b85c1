//! `yacobot multidoc …`: where the page analysis is, and moving it back to analyse the archive
//! again (a new model, a new version of the analysis) without downloading anything. They only
//! change the database: a running worker sees a rewind at its next step.

use std::fmt::Write as _;

use anyhow::{anyhow, Context};
use clap::Subcommand;
use diesel::mysql::MysqlConnection;
use focuser_daemon::{clock, Config};
use focuser_formats::segment::Position;
use focuser_schema::models::MultidocPosition;

use super::{lag, store_name};
use crate::YacobotConfig;

#[derive(Debug, Subcommand)]
pub enum MultidocCmd {
    /// Where the page analysis of this node is in its archive, and how far behind
    Show,
    /// Analyse the archive again from an earlier place (by default from its oldest segment):
    /// the pages' rows are written again, nothing is counted twice into the template evidence
    Rewind {
        /// FILE:ITEM, a segment file id and an item index (`yacobot multidoc show` gives the
        /// position); default: the oldest segment
        #[arg(long, value_name = "FILE:ITEM")]
        to: Option<String>,
    },
}

/// Runs `cmd` for the node and archive of `config`; returns what to print.
pub fn command(
    config: &Config<YacobotConfig>,
    conn: &mut MysqlConnection,
    cmd: &MultidocCmd,
) -> anyhow::Result<String> {
    let node = &config.daemon.node;
    let dir = config.common.path(&config.daemon.archive.dir);
    let store = store_name(&dir);
    match cmd {
        MultidocCmd::Show => {
            let row = MultidocPosition::find(conn, node, &store)?;
            let Some(row) = row else {
                return Ok(format!(
                    "node {node}, archive {store}: not analysed yet (no position)\n"
                ));
            };
            let at = position(row.place());
            let (items, seconds) = lag::lag(&dir, at).unwrap_or((0, 0));
            let mut out = String::new();
            let _ = writeln!(
                out,
                "node {node}, archive {store}: at {at}, counted up to {}, moved {}; {items} items behind ({seconds} s)",
                position(row.counted()),
                row.updated_at.format("%Y-%m-%d %H:%M:%S")
            );
            Ok(out)
        }
        MultidocCmd::Rewind { to } => {
            let to = match to {
                Some(t) => parse_place(t)?,
                None => Position::START,
            };
            let place = (to.file_id, to.item_idx);
            let now = clock::db_now();
            let Some((was, is)) = MultidocPosition::rewind(conn, node, &store, place, now)? else {
                return Err(anyhow!(
                    "node {node}, archive {store}: no position yet: the worker has not run"
                ));
            };
            if was == is {
                return Ok(format!(
                    "node {node}, archive {store}: at {}, not after {to}: nothing to do\n",
                    position(was.place())
                ));
            }
            Ok(format!(
                "node {node}, archive {store}: position {} -> {}; the items before {} are analysed again and not counted again\n",
                position(was.place()),
                position(is.place()),
                position(is.counted())
            ))
        }
    }
}

fn position(p: (u64, u32)) -> Position {
    super::position(p)
}

/// `FILE:ITEM`.
fn parse_place(s: &str) -> anyhow::Result<Position> {
    let (f, i) = s
        .split_once(':')
        .ok_or_else(|| anyhow!("--to {s}: expected FILE:ITEM, e.g. 3:1"))?;
    let file_id = f
        .trim()
        .parse()
        .with_context(|| format!("--to {s}: file id"))?;
    let item_idx: u32 = i
        .trim()
        .parse()
        .with_context(|| format!("--to {s}: item index"))?;
    Ok(Position {
        file_id,
        item_idx: item_idx.max(1),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn places_are_file_and_item() {
        let p = parse_place("3:17").unwrap();
        assert_eq!((p.file_id, p.item_idx), (3, 17));
        assert_eq!(parse_place("0:0").unwrap().item_idx, 1);
        assert!(parse_place("3").is_err());
        assert!(parse_place("a:1").is_err());
    }
}
