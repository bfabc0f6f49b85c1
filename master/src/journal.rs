//! The cycle journal (`state_dir/cycle.journal`): what a cycle under way has decided, so that
//! after a crash the next start redoes it identically or finishes it (docs/formats.md).
//!
//! ```text
//! #focuser-master-journal 1
//! seq <cycle number>
//! now <the cycle's clock, seconds since the epoch>
//! keep_inputs <0|1>
//! input <path>                                 one per reflog file, in processing order
//! assign <domain> \t <node> \t <previous|->     the routing plan, once decided
//! planned                                      the plan is complete
//! prepared                                     every output is written: roll forward
//! ```

use std::path::{Path, PathBuf};

use focuser_formats::fsutil;

use crate::route::Assignment;

const MAGIC: &str = "#focuser-master-journal 1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal {
    pub seq: u64,
    pub now: i64,
    /// `master replay`: the given files stay where they are.
    pub keep_inputs: bool,
    pub inputs: Vec<PathBuf>,
    pub plan: Option<Vec<Assignment>>,
    pub prepared: bool,
}

pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join("cycle.journal")
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}:{line}: {message}")]
    Bad {
        path: String,
        line: usize,
        message: String,
    },
}

impl Journal {
    pub fn load(state_dir: &Path) -> Result<Option<Journal>, JournalError> {
        let p = path(state_dir);
        let name = p.display().to_string();
        let text = match std::fs::read_to_string(&p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(JournalError::Io { path: name, error }),
        };
        let mut j = Journal {
            seq: 0,
            now: 0,
            keep_inputs: false,
            inputs: Vec::new(),
            plan: None,
            prepared: false,
        };
        let mut plan = Vec::new();
        let mut planned = false;
        for (i, line) in text.lines().enumerate() {
            let bad = |message: &str| JournalError::Bad {
                path: name.clone(),
                line: i + 1,
                message: message.into(),
            };
            if i == 0 {
                if line != MAGIC {
                    return Err(bad("not a master journal"));
                }
                continue;
            }
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "seq" => j.seq = value.parse().map_err(|_| bad("bad seq"))?,
                "now" => j.now = value.parse().map_err(|_| bad("bad now"))?,
                "keep_inputs" => j.keep_inputs = value == "1",
                "input" => j.inputs.push(PathBuf::from(value)),
                "assign" => {
                    let f: Vec<&str> = value.split('\t').collect();
                    let [domain, node, previous] = f[..] else {
                        return Err(bad("bad assign"));
                    };
                    plan.push(Assignment {
                        domain: domain.to_string(),
                        node: node.parse().map_err(|_| bad("bad node"))?,
                        previous: match previous {
                            "-" => None,
                            p => Some(p.parse().map_err(|_| bad("bad previous node"))?),
                        },
                    });
                }
                "planned" => planned = true,
                "prepared" => j.prepared = true,
                _ => return Err(bad("unknown line")),
            }
        }
        if j.seq == 0 {
            return Err(JournalError::Bad {
                path: name,
                line: 0,
                message: "no seq".into(),
            });
        }
        j.plan = planned.then_some(plan);
        Ok(Some(j))
    }

    /// Writes the journal atomically (it is the record the cycle's recovery trusts).
    pub fn save(&self, state_dir: &Path) -> Result<(), JournalError> {
        let p = path(state_dir);
        let io = |error| JournalError::Io {
            path: p.display().to_string(),
            error,
        };
        fsutil::write_atomically(&p, |w| {
            use std::io::Write;
            writeln!(
                w,
                "{MAGIC}\nseq {}\nnow {}\nkeep_inputs {}",
                self.seq,
                self.now,
                u8::from(self.keep_inputs)
            )?;
            for input in &self.inputs {
                writeln!(w, "input {}", input.display())?;
            }
            if let Some(plan) = &self.plan {
                for a in plan {
                    let previous = a
                        .previous
                        .map(|p| p.to_string())
                        .unwrap_or_else(|| "-".into());
                    writeln!(w, "assign {}\t{}\t{previous}", a.domain, a.node)?;
                }
                writeln!(w, "planned")?;
            }
            if self.prepared {
                writeln!(w, "prepared")?;
            }
            Ok(())
        })
        .map_err(io)
    }

    pub fn remove(state_dir: &Path) -> std::io::Result<()> {
        match std::fs::remove_file(path(state_dir)) {
            Ok(()) => fsutil::sync_dir(state_dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Journal::load(dir.path()).unwrap(), None);
        let mut j = Journal {
            seq: 42,
            now: 1_700_000_000,
            keep_inputs: true,
            inputs: vec![PathBuf::from("/in/a b.log"), PathBuf::from("/in/c.log")],
            plan: None,
            prepared: false,
        };
        j.save(dir.path()).unwrap();
        assert_eq!(Journal::load(dir.path()).unwrap().as_ref(), Some(&j));
        j.plan = Some(vec![
            Assignment {
                domain: "a.ru".into(),
                node: 2,
                previous: None,
            },
            Assignment {
                domain: "b.ru".into(),
                node: 1,
                previous: Some(9),
            },
        ]);
        j.prepared = true;
        j.save(dir.path()).unwrap();
        assert_eq!(Journal::load(dir.path()).unwrap(), Some(j));
        std::fs::write(path(dir.path()), "#focuser-master-journal 1\nseq x\n").unwrap();
        assert!(Journal::load(dir.path())
            .unwrap_err()
            .to_string()
            .contains(":2: bad seq"));
        Journal::remove(dir.path()).unwrap();
        assert_eq!(Journal::load(dir.path()).unwrap(), None);
    }
}
