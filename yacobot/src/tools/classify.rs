//! `yacobot classify --model M`: `id \t text` lines on stdin, `id \t category path` lines on
//! stdout, in the same order. The path is the model's, names joined by ` > `, each with its
//! posterior: `Sports (0.97) > Soccer (0.81)`; nothing after the tab when no category passed
//! the threshold. A bad line is said on stderr with its number, counted, and passed over.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use focuser_multidoc::classify::Model;
use focuser_multidoc::tokenize::Features;

use super::{load_model, Done};

// `classify`'s arguments (its help is the command's).
#[derive(Debug, Args)]
pub struct ClassifyArgs {
    /// The model file (`yacobot train` writes one)
    #[arg(long, value_name = "M")]
    model: PathBuf,
    /// Categories printed at most, from the top [default: the whole path]
    #[arg(long, value_name = "N")]
    depth: Option<usize>,
}

/// Runs the command on stdin and stdout.
pub fn run(args: &ClassifyArgs) -> anyhow::Result<Done> {
    let model = load_model(&args.model)?;
    let depth = args.depth.unwrap_or(usize::MAX);
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let done = lines(&model, depth, stdin, &mut out, &mut std::io::stderr())?;
    out.flush().context("writing the output")?;
    Ok(done)
}

/// One line's id and text, or why it is not one.
fn parse(line: &[u8]) -> Result<(&str, &str), String> {
    let line = std::str::from_utf8(line)
        .map_err(|e| format!("not UTF-8 (at byte {})", e.valid_up_to()))?;
    let (id, text) = line
        .split_once('\t')
        .ok_or("expected an id, a tab and the text")?;
    if id.trim().is_empty() {
        return Err("empty id".into());
    }
    Ok((id, text))
}

/// Classifies every line of `input`; blank lines are passed over silently.
pub fn lines(
    model: &Model,
    depth: usize,
    mut input: impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<Done> {
    let mut tokenizer = model.tokenizer();
    let mut features = Features::default();
    let mut buf = Vec::new();
    let mut done = Done::default();
    for number in 1.. {
        buf.clear();
        if input.read_until(b'\n', &mut buf).context("reading stdin")? == 0 {
            break;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse(line) {
            Ok((id, text)) => {
                tokenizer.page(None, [(text, 1.0)], &mut features);
                let c = model.classify(&features);
                writeln!(out, "{id}\t{}", c.describe(model.catalog(), depth))
                    .context("writing the output")?;
            }
            Err(why) => {
                done.bad += 1;
                writeln!(err, "yacobot classify: stdin line {number}: {why}")?;
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bad_lines_are_named_and_counted() {
        assert_eq!(parse(b"a\tb\tc").unwrap(), ("a", "b\tc"));
        assert!(parse(b"no tab").unwrap_err().contains("a tab"));
        assert!(parse(b" \ttext").unwrap_err().contains("empty id"));
        assert!(parse(b"id\t\xff").unwrap_err().contains("byte 3"));
    }
}
