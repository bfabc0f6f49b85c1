//! `yacobot`: the crawler node daemon, the operator's `resource`, `multidoc`, `dict`,
//! `bindings` and `url add` commands, and the page analysis tools `analyze`, `train`,
//! `classify` and `tragic` (docs/operations.md, "Page analysis tools", "yacobot: bindings",
//! "yacobot: exclusions and start URLs").

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use focuser_daemon::{CommonArgs, CommonCommand};
use focuser_yacobot::admin::ResourceCmd;
use focuser_yacobot::tools::{
    self, analyze::AnalyzeArgs, classify::ClassifyArgs, train::TrainArgs,
};
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
    /// Partner data feeds: add, list, show, fetch-now, disable, enable, remove
    #[command(subcommand)]
    Resource(ResourceCmd),
    /// What page analysis makes of pages (files, URLs, or a site's folder): blocks and their
    /// weights, weighted words, categories and why
    Analyze(AnalyzeArgs),
    /// Build a classifier model from a labelled corpus; prints its accuracy on a held-back part
    Train(TrainArgs),
    /// `id \t text` lines on stdin → `id \t category path` lines on stdout
    Classify(ClassifyArgs),
    #[command(flatten)]
    Common(CommonCommand),
    /// Page analysis: show where it is in the archive, rewind it to analyse the archive again
    #[command(subcommand)]
    Multidoc(focuser_yacobot::multidoc::admin::MultidocCmd),
    /// Ad dictionaries: load a file into SQL (in force at once), list them
    #[command(subcommand)]
    Dict(focuser_yacobot::bindings::admin::DictCmd),
    /// A page's stored binding: phrases with relevance, categories, tragic flag
    Bindings {
        /// The page's URL
        url: String,
    },
    /// `id \t text` lines on stdin → `id \t 0|1` lines on stdout (1: the tragic filter flags it)
    Tragic,
    /// The frontier: URLs that do not come from the reflog
    #[command(subcommand)]
    Url(UrlCmd),
}

#[derive(Subcommand)]
enum UrlCmd {
    /// Put URLs into the frontier, due now: normalised as the master does, only of this node's
    /// domains (a domain no node owns becomes this node's), not excluded by Url.ExcludeFile.
    /// Exit 1 if one was refused (each said on stderr).
    Add {
        #[arg(required = true, value_name = "URL")]
        urls: Vec<String>,
    },
}

/// A tool's exit status: 0 when every input was good, 1 when some were bad (each said on
/// stderr) or the tool could not run.
fn tool(name: &str, result: anyhow::Result<tools::Done>) -> ExitCode {
    match result {
        Ok(done) if done.all_good() => ExitCode::SUCCESS,
        Ok(done) => {
            eprintln!("yacobot {name}: {} bad inputs (above)", done.bad);
            ExitCode::FAILURE
        }
        // The reader of the output has had enough (`| head`): nothing to say.
        Err(e) if e.chain().any(broken_pipe) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("yacobot {name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
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
        Some(Cmd::Dict(cmd)) => print(focuser_yacobot::dict_command(
            &cli.common.config_file("yacobot"),
            &cmd,
        )),
        Some(Cmd::Bindings { url }) => print(focuser_yacobot::bindings_command(
            &cli.common.config_file("yacobot"),
            &url,
        )),
        Some(Cmd::Tragic) => tool("tragic", tools::tragic::run()),
        Some(Cmd::Url(UrlCmd::Add { urls })) => tool(
            "url add",
            focuser_yacobot::url_command(&cli.common.config_file("yacobot"), &urls),
        ),
        Some(Cmd::Analyze(a)) => tool(
            "analyze",
            tools::analyze::run(cli.common.config.as_deref(), &a),
        ),
        Some(Cmd::Train(a)) => tool("train", tools::train::run(&a)),
        Some(Cmd::Classify(a)) => tool("classify", tools::classify::run(&a)),
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
