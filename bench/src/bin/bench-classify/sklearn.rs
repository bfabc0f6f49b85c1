//! scikit-learn's side: a venv made once under the work directory, the split written as JSONL,
//! bench/classify/sklearn_baseline.py run on it.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use crate::sets::{Item, Metric, Set};

const SCRIPT: &str = include_str!("../../../classify/sklearn_baseline.py");

/// The venv's python, with scikit-learn installed (made when missing).
pub fn venv(work: &Path) -> anyhow::Result<PathBuf> {
    let dir = work.join("venv");
    let python = dir.join("bin/python");
    let has = |p: &Path| {
        Command::new(p)
            .args(["-c", "import sklearn"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has(&python) {
        println!("making a venv with scikit-learn in {}", dir.display());
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .context("python3 -m venv")?
            .success()
            && Command::new(dir.join("bin/pip"))
                .args(["install", "-q", "scikit-learn"])
                .status()
                .context("pip install scikit-learn")?
                .success();
        if !ok || !has(&python) {
            bail!(
                "could not make a venv with scikit-learn in {}",
                dir.display()
            );
        }
    }
    Ok(python)
}

fn write(path: &Path, items: &[Item]) -> anyhow::Result<()> {
    let mut w = BufWriter::new(std::fs::File::create(path)?);
    for i in items {
        let labels: Vec<String> = i.labels.iter().map(|p| p.join("/")).collect();
        serde_json::to_writer(
            &mut w,
            &serde_json::json!({"labels": labels, "text": i.text}),
        )?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    Ok(())
}

/// (model, score, seconds) for each scikit-learn model.
pub fn run(python: &Path, work: &Path, set: &Set) -> anyhow::Result<Vec<(String, f64, f64)>> {
    let train = work.join(format!("{}.train.jsonl", set.name));
    let test = work.join(format!("{}.test.jsonl", set.name));
    let script = work.join("sklearn_baseline.py");
    std::fs::write(&script, SCRIPT)?;
    write(&train, &set.train)?;
    write(&test, &set.test)?;
    let metric = match set.metric {
        Metric::Accuracy => "accuracy",
        Metric::MicroF1 => "micro-f1",
    };
    let out = Command::new(python)
        .arg(&script)
        .arg(&train)
        .arg(&test)
        .arg(metric)
        .output()
        .context("running sklearn_baseline.py")?;
    if !out.status.success() {
        bail!(
            "sklearn_baseline.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        rows.push((
            v["model"].as_str().unwrap_or("?").to_owned(),
            v["score"].as_f64().unwrap_or(f64::NAN),
            v["seconds"].as_f64().unwrap_or(f64::NAN),
        ));
    }
    Ok(rows)
}
