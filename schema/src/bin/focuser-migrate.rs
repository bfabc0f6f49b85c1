//! `focuser-migrate`: applies, reverts or lists the schema migrations compiled into focuser.
//!
//! The same migrations run with `diesel migration run`; this tool needs no diesel_cli and is
//! what the README's run command and operators use.

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(version, about = "Apply, revert or list focuser's schema migrations")]
struct Args {
    /// mysql://user:password@host:port/db of an account that may change the schema.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: String,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand, Clone, Copy)]
enum Cmd {
    /// Apply every pending migration (the default).
    Run,
    /// Revert every applied migration, newest first (drops all focuser tables).
    RevertAll,
    /// List the migrations and whether each is applied.
    Status,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut conn = focuser_schema::db::connect(&args.database_url)
        .context("connecting to the database given by --database-url / DATABASE_URL")?;
    match args.command.unwrap_or(Cmd::Run) {
        Cmd::Run => {
            let applied = focuser_schema::migrate(&mut conn).context("applying migrations")?;
            if applied.is_empty() {
                println!("schema up to date");
            }
            for v in applied {
                println!("applied {v}");
            }
        }
        Cmd::RevertAll => {
            for v in focuser_schema::db::revert_all(&mut conn).context("reverting migrations")? {
                println!("reverted {v}");
            }
        }
        Cmd::Status => {
            let applied = focuser_schema::db::applied_versions(&mut conn)?;
            for v in focuser_schema::db::embedded_versions()? {
                let state = if applied.contains(&v) {
                    "applied"
                } else {
                    "pending"
                };
                println!("{v} {state}");
            }
        }
    }
    Ok(())
}
