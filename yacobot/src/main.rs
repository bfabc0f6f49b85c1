//! `yacobot`: the crawler node daemon.

use std::process::ExitCode;

use clap::Parser;
use focuser_daemon::{CommonArgs, CommonCommand};
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
    command: Option<CommonCommand>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => focuser_daemon::run("yacobot", cli.common, daemon::main_loop),
        Some(cmd) => {
            focuser_daemon::run_common_command::<YacobotConfig>("yacobot", &cli.common, cmd)
        }
    }
}
