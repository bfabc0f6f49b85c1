//! `yacobot`: the crawler node daemon, and the operator's `resource` and `multidoc` commands.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use focuser_daemon::{CommonArgs, CommonCommand};
use focuser_yacobot::admin::ResourceCmd;
use focuser_yacobot::{daemon, YacobotConfig};

#[derive(Parser)]
#[command(
    name = "yacobot",
    version,
    about = "focuser yacobot: queue files in, pages fetched and archived into item/index segments"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Partner data feeds: add, list, show, fetch-now, disable, enable
    #[command(subcommand)]
    Resource(ResourceCmd),
    #[command(flatten)]
    Common(CommonCommand),
    /// Page analysis: show where it is in the archive, rewind it to analyse the archive again
    #[command(subcommand)]
    Multidoc(focuser_yacobot::multidoc::admin::MultidocCmd),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => focuser_daemon::run("yacobot", cli.common, daemon::main_loop),
        Some(Cmd::Common(cmd)) => {
            focuser_daemon::run_common_command::<YacobotConfig>("yacobot", &cli.common, cmd)
        }
        Some(Cmd::Resource(cmd)) => print(focuser_yacobot::resource_command(
            &cli.common.config_file("yacobot"),
            &cmd,
        )),
        Some(Cmd::Multidoc(cmd)) => print(focuser_yacobot::multidoc_command(
            &cli.common.config_file("yacobot"),
            &cmd,
        )),
    }
}

/// An operator command's output, or its error.
fn print(out: anyhow::Result<String>) -> ExitCode {
    match out {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("yacobot: {e:#}");
            ExitCode::FAILURE
        }
    }
}
