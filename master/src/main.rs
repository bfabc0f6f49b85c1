//! `master`: the daemon, and the operator's replay/domains/assign tools.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};
use focuser_daemon::{CommonArgs, CommonCommand, Config};
use focuser_formats::stamp;
use focuser_master::{admin, daemon, MasterConfig};

#[derive(Parser)]
#[command(
    name = "master",
    version,
    about = "focuser master: reflog files in, domain-routed queue files out"
)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    /// Fix the cycle clock (YYYYMMDDhhmmss in the config's TimeZone), for replays and tests
    #[arg(long, value_name = "YYYYMMDDhhmmss", global = true)]
    now: Option<String>,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run cycles over the given reflog files without the daemon (the files stay in place)
    Replay {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// List the nodes with their domain counts, then every domain and its node
    Domains,
    /// Move DOMAIN to NODE (id or name); an admin action, logged
    Assign { domain: String, node: String },
    #[command(flatten)]
    Common(CommonCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            let now = match parse_now(&cli) {
                Ok(n) => n,
                Err(e) => {
                    eprintln!("master: {e:#}");
                    return ExitCode::FAILURE;
                }
            };
            focuser_daemon::run("master", cli.common, move |rt| daemon::main_loop(rt, now))
        }
        Some(Cmd::Common(cmd)) => {
            focuser_daemon::run_common_command::<MasterConfig>("master", &cli.common, cmd)
        }
        Some(ref cmd) => match tool(&cli, cmd) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("master: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}

/// `--now` as seconds since the epoch, read in the config's time zone.
fn parse_now(cli: &Cli) -> anyhow::Result<Option<i64>> {
    let Some(text) = &cli.now else {
        return Ok(None);
    };
    let config = Config::<MasterConfig>::load_for_tool(&cli.common.config_file("master"))?;
    let offset = config.daemon.utc_offset().map_err(|e| anyhow!(e))?;
    stamp::parse(text.as_bytes(), offset)
        .map(Some)
        .ok_or_else(|| anyhow!("--now {text}: not YYYYMMDDhhmmss"))
}

fn tool(cli: &Cli, cmd: &Cmd) -> anyhow::Result<()> {
    let config = Config::<MasterConfig>::load_for_tool(&cli.common.config_file("master"))?;
    // The tools log to standard error, as much as the config's debuglevel says.
    let _logging = focuser_daemon::logging::Logging::init(focuser_daemon::logging::LogSettings {
        progname: "master".into(),
        logfile: None,
        logconfig: None,
        debuglevel: config.common.debuglevel,
    })?;
    let mut conn = focuser_daemon::db::connect(&config.common)?;
    let files = match cmd {
        Cmd::Replay { files } => files
            .iter()
            .map(std::path::absolute)
            .collect::<Result<Vec<_>, _>>()?,
        _ => Vec::new(),
    };
    std::env::set_current_dir(&config.common.rootdir)
        .with_context(|| format!("rootdir {}", config.common.rootdir.display()))?;
    match cmd {
        Cmd::Replay { .. } => {
            let cycles = admin::replay(&config.daemon, conn, &files, parse_now(cli)?)?;
            print!("{}", admin::table(&cycles));
        }
        Cmd::Domains => print!("{}", admin::domains(&mut conn)?),
        Cmd::Assign { domain, node } => {
            let who = std::env::var("SUDO_USER")
                .or_else(|_| std::env::var("USER"))
                .unwrap_or_else(|_| "unknown".into());
            let hosts = config.daemon.host_policy();
            println!("{}", admin::assign(&mut conn, (domain, hosts), node, &who)?);
        }
        Cmd::Common(_) => {}
    }
    Ok(())
}
