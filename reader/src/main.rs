//! `reader`: the sender daemon, `reader --recv`, and the dump/stat tools.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use focuser_daemon::{CommonArgs, CommonCommand, Config};
use focuser_reader::{daemon, tools, ReaderConfig};

#[derive(Parser)]
#[command(
    name = "reader",
    version,
    about = "focuser reader: ships segments to index receivers; with --recv, receives them"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Run as a receiver (`Recv.*` keys) instead of a sender
    #[arg(long)]
    recv: bool,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print a segment's items (or an index file's entries) as JSON lines
    Dump { file: PathBuf },
    /// Every sender's position and lag, and the store's size
    Stat,
    /// Send one receiver the store's live set again (the running sender does it, throttled)
    Resend {
        /// The receiver's group: `Index.N` or `Summary.N`
        #[arg(long)]
        group: String,
        /// The receiver's address, as the config gives it
        #[arg(long)]
        address: String,
    },
    #[command(flatten)]
    Common(CommonCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            let recv = cli.recv;
            focuser_daemon::run("reader", cli.common, move |rt| daemon::main_loop(rt, recv))
        }
        Some(Cmd::Common(cmd)) => {
            focuser_daemon::run_common_command::<ReaderConfig>("reader", &cli.common, cmd)
        }
        Some(Cmd::Dump { file }) => {
            let stdout = std::io::stdout();
            match tools::dump(&file, &mut stdout.lock()) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("reader dump: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Cmd::Resend { group, address }) => {
            let run = || -> anyhow::Result<std::path::PathBuf> {
                let cfg = Config::<ReaderConfig>::load_for_tool(&cli.common.config_file("reader"))?;
                let state_dir = cfg.common.path(&cfg.daemon.state_dir);
                tools::request_resend(&cfg.daemon, &state_dir, &group, &address)
            };
            match run() {
                Ok(p) => {
                    println!(
                        "resend to {group} {address} requested: {} (the running sender takes it up within a second)",
                        p.display()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("reader resend: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Cmd::Stat) => {
            let run = || -> anyhow::Result<String> {
                let cfg = Config::<ReaderConfig>::load_for_tool(&cli.common.config_file("reader"))?;
                tools::stat(
                    &cfg.daemon,
                    &cfg.common.path(&cfg.daemon.store_dir),
                    &cfg.common.path(&cfg.daemon.state_dir),
                )
            };
            match run() {
                Ok(t) => {
                    print!("{t}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("reader stat: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
