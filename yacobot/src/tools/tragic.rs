//! `yacobot tragic`: `id \t text` lines on stdin, `id \t 0|1` lines on stdout, in the same
//! order (`focuser_bind::tragic::tragic_line`): 1 when the tragic filter flags the text
//! (docs/bindings.md). The text is one block of weight 1; `\n` may be written `\n`. A line
//! that is not UTF-8 is said on stderr with its number, counted, and passed over.

use std::io::{BufRead, Write};

use anyhow::Context;
use focuser_bind::tragic::{tragic_line, Lexicon, Params, TextJudge};
use focuser_multidoc::tokenize::Tokenizer;

use super::Done;

/// Runs the command on stdin and stdout.
pub fn run() -> anyhow::Result<Done> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let done = lines(stdin, &mut out, &mut std::io::stderr())?;
    out.flush().context("writing the output")?;
    Ok(done)
}

/// Judges every line of `input`; blank lines are passed over silently.
pub fn lines(
    mut input: impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<Done> {
    let lexicon = Lexicon::builtin(&mut Tokenizer::default())
        .map_err(|e| anyhow::anyhow!("the tragic lexicon: {e}"))?;
    let mut judge = TextJudge::default();
    let params = Params::default();
    let mut buf = Vec::new();
    let mut done = Done::default();
    for number in 1.. {
        buf.clear();
        if input.read_until(b'\n', &mut buf).context("reading stdin")? == 0 {
            break;
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match std::str::from_utf8(&buf) {
            Ok(line) => writeln!(out, "{}", tragic_line(&mut judge, &lexicon, &params, line))
                .context("writing the output")?,
            Err(e) => {
                done.bad += 1;
                writeln!(
                    err,
                    "yacobot tragic: stdin line {number}: not UTF-8 (at byte {})",
                    e.valid_up_to()
                )?;
            }
        }
    }
    Ok(done)
}
