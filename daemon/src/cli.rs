//! The command line every daemon shares (docs/design.md#runtime-command-line); each daemon flattens
//! [`CommonArgs`] into its own clap parser and may add subcommands, including [`CommonCommand`].

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// Config file [default: conf/NAME.cf]
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Detach from the terminal (double fork, setsid, stdio to /dev/null)
    #[arg(short = 'd', long = "daemon")]
    pub daemon: bool,
    /// Parse and validate the config, print it as in effect, exit 0 (good) or 1 (bad)
    #[arg(long = "check-config")]
    pub check_config: bool,
    /// Do one unit of work and exit
    #[arg(long = "once")]
    pub once: bool,
}

impl CommonArgs {
    /// The config file: `-c FILE`, or `conf/NAME.cf`.
    pub fn config_file(&self, name: &str) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("conf/{name}.cf")))
    }
}

/// Subcommands every daemon has.
#[derive(Debug, Clone, Subcommand)]
pub enum CommonCommand {
    /// Set a user's password in the pwfile (read from standard input, or asked twice on a terminal)
    Passwd {
        /// User name
        user: String,
        /// The pwfile to change [default: the config's pwfile]
        #[arg(long)]
        pwfile: Option<PathBuf>,
    },
}
