//! `Url.StartFile`: one URL a line, `#` comments and blank lines ignored (docs/formats.md
//! "Start URL file"). Read by the loader when it starts, in batches of `Loader.Batch` URLs, each
//! added in one transaction. A bad line (not a URL the master would take, more than one word)
//! is said with the file and line, counted, and the rest goes on.

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::Context;
use focuser_daemon::Config;
use focuser_formats::urls::NormalUrl;

use super::{add, assigned_by, check, no_node, this_node, Adding, Outcome};
use crate::config::YacobotConfig;
use crate::exclude::By;
use crate::worker::Ctx;

/// A longer line is bad (a URL is at most 2048 bytes).
const MAX_LINE: usize = 8192;
/// Lines said one by one in the log at most; the others are counted.
const SAID: usize = 100;

/// What a start file came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: u64,
    pub known: u64,
    pub excluded: u64,
    /// Another node's domain.
    pub refused: u64,
    /// Lines that are not a URL the master would take.
    pub bad: u64,
}

/// A line's URL: `None` for a blank or comment line.
fn url_of(line: &[u8]) -> Result<Option<&str>, String> {
    if line.len() > MAX_LINE {
        return Err(format!("longer than {MAX_LINE} bytes"));
    }
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_string())?;
    let mut words = text.split_whitespace();
    let Some(url) = words.next().filter(|w| !w.starts_with('#')) else {
        return Ok(None);
    };
    match words.next() {
        Some(w) if !w.starts_with('#') => Err(format!("one URL a line, then {w:?}")),
        _ => Ok(Some(url)),
    }
}

/// Reads the start file and adds its URLs.
pub fn read(ctx: &Ctx, cfg: &Config<YacobotConfig>, path: &Path) -> anyhow::Result<Counts> {
    let shown = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("{shown}: cannot read"))?;
    let node = ctx
        .db
        .run("finding this node's id", |c| this_node(c, cfg))?
        .ok_or_else(|| no_node(cfg).context(format!("{shown}")))?;
    let by = assigned_by(cfg);
    let exclude = ctx.exclusion.rules();
    let batch_size = cfg.daemon.loader.batch;
    let mut counts = Counts::default();
    let mut said = 0;
    let mut say = |line: usize, what: &str, counts: &Counts| {
        said += 1;
        if said <= SAID {
            log::warn!("{shown}:{line}: {what}");
        } else if said == SAID + 1 {
            log::warn!("{shown}: more bad or refused lines than {SAID}: counted, not said ({counts:?} so far)");
        }
    };
    let mut reader = BufReader::new(file);
    let mut batch: Vec<(usize, NormalUrl)> = Vec::new();
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("{shown}: cannot read"))?;
        let end = n == 0;
        if !end {
            line += 1;
            let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            match url_of(text).and_then(|u| u.map(check).transpose()) {
                Ok(Some(n)) => batch.push((line, n)),
                Ok(None) => {}
                Err(why) => {
                    counts.bad += 1;
                    say(line, &why, &counts);
                }
            }
        }
        if batch.len() >= batch_size || (end && !batch.is_empty()) {
            let urls: Vec<NormalUrl> = batch.iter().map(|(_, n)| n.clone()).collect();
            let how = Adding {
                node,
                by: &by,
                exclude: &exclude,
                make_due: false,
                now: focuser_daemon::clock::db_now(),
            };
            let outcomes = ctx.db.run("adding start URLs", |c| {
                diesel::Connection::transaction(c, |c| add(c, &urls, &how))
            })?;
            for ((at, n), outcome) in batch.iter().zip(outcomes) {
                match outcome {
                    Outcome::Added => counts.added += 1,
                    Outcome::Known => counts.known += 1,
                    Outcome::Excluded(why) => {
                        counts.excluded += 1;
                        say(*at, &format!("{}: excluded by {why}", n.url), &counts);
                    }
                    Outcome::Refused(why) => {
                        counts.refused += 1;
                        say(*at, &format!("{}: {why}", n.url), &counts);
                    }
                }
            }
            batch.clear();
        }
        if end {
            break;
        }
        if ctx.stopping() {
            anyhow::bail!("{shown}: stopping at line {line}: the rest is read at the next start");
        }
    }
    ctx.exclusion.counted(By::Start, counts.excluded);
    log::info!(
        "{shown}: start URLs: {} added, {} known already, {} excluded, {} of other nodes, {} bad lines",
        counts.added,
        counts.known,
        counts.excluded,
        counts.refused,
        counts.bad
    );
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::url_of;

    #[test]
    fn a_line_holds_one_url_and_maybe_a_comment() {
        assert_eq!(url_of(b"http://a.example/"), Ok(Some("http://a.example/")));
        assert_eq!(url_of(b"  http://a/  # home"), Ok(Some("http://a/")));
        assert_eq!(url_of(b"# http://a/"), Ok(None));
        assert_eq!(url_of(b"   "), Ok(None));
        assert!(url_of(b"http://a/ http://b/")
            .unwrap_err()
            .contains("one URL a line"));
        assert_eq!(url_of(b"http://a/\xff"), Err("not UTF-8".into()));
        assert!(url_of(&[b'x'; 9000]).is_err());
    }
}
