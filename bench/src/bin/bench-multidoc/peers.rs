//! The peers run in the same benchmark: trafilatura (pip `trafilatura==2.3.1` with
//! `lxml_html_clean`, in a venv made under the work directory and kept for the next run),
//! dom_smoothie (a Rust port of readability.js, in process), and the sets' own evaluate
//! scripts, run on copies of their inputs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};

use focuser_multidoc::decode::{decode, DEFAULT_MAX_BYTES};

use crate::data::{self, Page};

const TRAFILATURA: &str = "trafilatura==2.3.1";

/// Extracts each page listed in argv[1] (one path a line) with trafilatura's defaults, one
/// process, one page at a time; writes the texts as a JSON list to argv[2] and prints the
/// seconds spent in `extract` alone.
const SCRIPT: &str = r#"
import json, sys, time
import trafilatura
paths = open(sys.argv[1]).read().split("\n")
texts, spent = [], 0.0
for p in paths:
    if not p:
        continue
    data = open(p, "rb").read()
    t = time.perf_counter()
    try:
        text = trafilatura.extract(data) or ""
    except Exception:
        text = ""
    spent += time.perf_counter() - t
    texts.append(text)
json.dump(texts, open(sys.argv[2], "w"))
print(spent)
"#;

fn run(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.output().with_context(|| format!("{cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The venv's python, made (or checked) under `work`.
pub fn venv(work: &Path) -> anyhow::Result<PathBuf> {
    let dir = work.join("bench-multidoc-venv");
    let python = dir.join("bin/python");
    let ok = python.exists()
        && Command::new(&python)
            .args([
                "-c",
                "import trafilatura, lxml_html_clean; assert trafilatura.__version__ == '2.3.1'",
            ])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("making a venv with {TRAFILATURA} in {}", dir.display());
        run(Command::new("python3").arg("-m").arg("venv").arg(&dir))?;
        run(Command::new(dir.join("bin/pip")).args([
            "install",
            "-q",
            TRAFILATURA,
            "lxml_html_clean",
        ]))?;
    }
    Ok(python)
}

/// trafilatura's texts of `pages`, and the seconds its `extract` took.
pub fn trafilatura(
    python: &Path,
    pages: &[&Page],
    tmp: &Path,
) -> anyhow::Result<(Vec<String>, f64)> {
    let dir = tmp.join("pages");
    std::fs::create_dir_all(&dir)?;
    let mut list = String::new();
    for (i, p) in pages.iter().enumerate() {
        let path = dir.join(format!("{i}.html"));
        std::fs::write(&path, &p.html)?;
        list.push_str(&format!("{}\n", path.display()));
    }
    let (script, manifest, out) = (
        tmp.join("extract.py"),
        tmp.join("pages.txt"),
        tmp.join("texts.json"),
    );
    std::fs::write(&script, SCRIPT)?;
    std::fs::write(&manifest, list)?;
    let spent = run(Command::new(python).arg(&script).arg(&manifest).arg(&out))?;
    let texts: Vec<String> = serde_json::from_slice(&std::fs::read(&out)?)?;
    std::fs::remove_dir_all(&dir)?;
    Ok((texts, spent.trim().parse().context("trafilatura's time")?))
}

/// Runs AEB's evaluate.py on the published outputs and on `ours` (name → texts, in the order
/// of `pages`); its table as it printed it.
pub fn aeb_evaluate(
    python: &Path,
    root: &Path,
    pages: &[&Page],
    ours: &[(&str, &[String])],
    tmp: &Path,
) -> anyhow::Result<String> {
    let dir = tmp.join("aeb");
    std::fs::create_dir_all(dir.join("output"))?;
    std::fs::copy(
        root.join("extraction/aeb/evaluate.py"),
        dir.join("evaluate.py"),
    )?;
    // Only the pages measured (all but in --smoke): the script wants the same keys everywhere.
    let subset = |rel: &str| -> anyhow::Result<Vec<u8>> {
        let mut v: serde_json::Value = serde_json::from_slice(&data::read(root, rel)?)?;
        let version = v.get("version").cloned();
        let map = match v.get_mut("output") {
            Some(inner) if version.is_some() => inner.take(),
            _ => v,
        };
        let keep: serde_json::Map<String, serde_json::Value> = pages
            .iter()
            .map(|p| {
                (
                    p.id.clone(),
                    map.get(&p.id).cloned().unwrap_or(serde_json::json!({})),
                )
            })
            .collect();
        let out = match version {
            Some(version) => serde_json::json!({ "version": version, "output": keep }),
            None => serde_json::Value::Object(keep),
        };
        Ok(serde_json::to_vec(&out)?)
    };
    std::fs::write(
        dir.join("ground-truth.json"),
        subset("extraction/aeb/ground-truth.json")?,
    )?;
    for tool in [
        "boilerpipe",
        "dom_smoothie",
        "html-text",
        "justext",
        "readability_js",
        "rs_trafilatura",
        "trafilatura",
    ] {
        let rel = format!("extraction/aeb/output/{tool}.json");
        std::fs::write(
            dir.join(format!("output/{tool}_published.json")),
            subset(&rel)?,
        )?;
    }
    for (name, texts) in ours {
        let map: serde_json::Map<String, serde_json::Value> = pages
            .iter()
            .zip(texts.iter())
            .map(|(p, t)| (p.id.clone(), serde_json::json!({ "articleBody": t })))
            .collect();
        std::fs::write(
            dir.join(format!("output/{name}.json")),
            serde_json::to_vec(&map)?,
        )?;
    }
    run(Command::new(python)
        .args(["evaluate.py", "--n-bootstrap", "200"])
        .current_dir(&dir))
}

/// Runs WCXB's evaluate.py on `texts` (in the order of `pages`); its overall F1 and output.
pub fn wcxb_evaluate(
    python: &Path,
    root: &Path,
    pages: &[&Page],
    name: &str,
    texts: &[String],
    tmp: &Path,
) -> anyhow::Result<(f64, String)> {
    let dir = tmp.join("wcxb");
    let gt = dir.join("dev/ground-truth");
    if !gt.exists() {
        std::fs::create_dir_all(&gt)?;
        std::fs::copy(
            root.join("extraction/wcxb_dev/evaluate.py"),
            dir.join("evaluate.py"),
        )?;
        for p in pages {
            let rel = format!("extraction/wcxb_dev/dev/ground-truth/{}.json", p.id);
            std::fs::write(gt.join(format!("{}.json", p.id)), data::read(root, &rel)?)?;
        }
    }
    let map: serde_json::Map<String, serde_json::Value> = pages
        .iter()
        .zip(texts)
        .map(|(p, t)| (p.id.clone(), serde_json::Value::String(t.clone())))
        .collect();
    let results = dir.join(format!("{name}.json"));
    std::fs::write(&results, serde_json::to_vec(&map)?)?;
    let out = run(Command::new(python)
        .args(["evaluate.py", "--split", "dev", "--per-type", "--results"])
        .arg(&results)
        .current_dir(&dir))?;
    let f1 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("F1:"))
        .and_then(|v| v.trim().parse().ok())
        .context("no F1 in WCXB's evaluate.py output")?;
    Ok((f1, out))
}

/// dom_smoothie's texts of `pages` (default settings, the page decoded by our decode), and the
/// seconds it took; a page it refuses gives no text.
pub fn dom_smoothie(pages: &[&Page]) -> (Vec<String>, f64) {
    let t = Instant::now();
    let texts = pages
        .iter()
        .map(|p| {
            let Ok(d) = decode(&p.html, None, DEFAULT_MAX_BYTES) else {
                return String::new();
            };
            dom_smoothie::Readability::new(d.text.as_ref(), None, None)
                .and_then(|mut r| r.parse())
                .map(|a| a.text_content.to_string())
                .unwrap_or_default()
        })
        .collect();
    (texts, t.elapsed().as_secs_f64())
}
