//! The subcommands every daemon has besides running ([`CommonCommand`]).

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::anyhow;

use crate::access;
use crate::cli::{CommonArgs, CommonCommand};
use crate::config::{Config, DaemonConfig};

/// Runs one of the [`CommonCommand`]s.
pub fn run_common_command<T: DaemonConfig>(
    name: &'static str,
    args: &CommonArgs,
    command: CommonCommand,
) -> ExitCode {
    let result = match command {
        CommonCommand::Passwd { user, pwfile } => passwd::<T>(name, args, &user, pwfile),
    };
    match result {
        Ok(message) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn passwd<T: DaemonConfig>(
    name: &str,
    args: &CommonArgs,
    user: &str,
    pwfile: Option<PathBuf>,
) -> anyhow::Result<String> {
    let path = match pwfile {
        Some(p) => p,
        None => {
            let config = Config::<T>::load(&args.config_file(name), None)?;
            let pw = config
                .common
                .pwfile
                .as_ref()
                .ok_or_else(|| anyhow!("{}: no pwfile configured", config.file.display()))?;
            config.common.path(pw)
        }
    };
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("password for {user}: "))?;
        let second = rpassword::prompt_password("again: ")?;
        if first != second {
            return Err(anyhow!("the two passwords differ"));
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_string()
    };
    if password.is_empty() {
        return Err(anyhow!("empty password"));
    }
    access::set_password(&path, user, &password)?;
    Ok(format!("password set for {user} in {}", path.display()))
}
