//! The development sets of `../shared/data` (see its README): every file is read as `X.gz`
//! with flate2, or as `X` in an unpacked copy (`unpack.sh DEST`, faster while developing).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// One page with its reference text.
pub struct Page {
    /// `aeb`, `wcxb`, `daniel`, `big9` or `chaos`.
    pub set: &'static str,
    /// The key the set's evaluate script uses (AEB: sha256, WCXB: file id), else the path.
    pub id: String,
    pub html: Vec<u8>,
    pub gold: String,
    /// The site, for the templater (sites/ only).
    pub site: String,
}

/// Reads `rel` under `root`, plain or gzipped.
pub fn read(root: &Path, rel: &str) -> anyhow::Result<Vec<u8>> {
    let plain = root.join(rel);
    if plain.exists() {
        return std::fs::read(&plain).with_context(|| plain.display().to_string());
    }
    let gz = PathBuf::from(format!("{}.gz", plain.display()));
    let file = std::fs::File::open(&gz).with_context(|| gz.display().to_string())?;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut out)
        .with_context(|| gz.display().to_string())?;
    Ok(out)
}

fn read_json(root: &Path, rel: &str) -> anyhow::Result<serde_json::Value> {
    serde_json::from_slice(&read(root, rel)?).with_context(|| format!("{rel}: JSON"))
}

/// File names in a folder, `.gz` removed, sorted.
fn names(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(|e| e.ok())
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".gz")
                .to_owned()
        })
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// Whether `root` looks like the data tree; a hint where to get it otherwise.
pub fn check(root: &Path) -> anyhow::Result<()> {
    if !root.join("extraction/aeb").is_dir() || !root.join("sites").is_dir() {
        bail!(
            "no development data in {}: this benchmark reads shared/data (the project's \
             development sets, see its README.md: ScrapingHub AEB, WCXB dev, sites/), which a \
             clone of the repository does not have; put it at ../shared/data beside the \
             repository or pass --data DIR",
            root.display()
        );
    }
    Ok(())
}

pub fn aeb(root: &Path, limit: usize) -> anyhow::Result<Vec<Page>> {
    let gt = read_json(root, "extraction/aeb/ground-truth.json")?;
    let gt = gt.as_object().context("AEB ground truth: not an object")?;
    let mut pages = Vec::new();
    for (key, v) in gt.iter().take(limit) {
        pages.push(Page {
            set: "aeb",
            id: key.clone(),
            html: read(root, &format!("extraction/aeb/html/{key}.html"))?,
            gold: v["articleBody"].as_str().unwrap_or_default().to_owned(),
            site: String::new(),
        });
    }
    Ok(pages)
}

pub fn wcxb(root: &Path, limit: usize) -> anyhow::Result<Vec<Page>> {
    let dir = root.join("extraction/wcxb_dev/dev/ground-truth");
    let mut pages = Vec::new();
    for name in names(&dir)?.iter().take(limit) {
        let id = name.trim_end_matches(".json").to_owned();
        let gt = read_json(
            root,
            &format!("extraction/wcxb_dev/dev/ground-truth/{id}.json"),
        )?;
        pages.push(Page {
            set: "wcxb",
            html: read(root, &format!("extraction/wcxb_dev/dev/html/{id}.html"))?,
            gold: gt["ground_truth"]["main_content"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            site: String::new(),
            id,
        });
    }
    Ok(pages)
}

/// The pages of sites/ (`set` = big9, chaos or daniel; `lang` keeps only that language).
pub fn sites(
    root: &Path,
    set: &'static str,
    lang: Option<&str>,
    limit: usize,
) -> anyhow::Result<Vec<Page>> {
    let tsv = String::from_utf8(read(root, "sites/sites.tsv")?).context("sites.tsv")?;
    let mut pages = Vec::new();
    for line in tsv.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 6 || f[0] != set || lang.is_some_and(|l| l != f[5]) {
            continue;
        }
        if pages.len() >= limit {
            break;
        }
        let gold = String::from_utf8_lossy(&read(root, &format!("sites/{}", f[3]))?).into_owned();
        let gold = if set == "daniel" {
            strip_tags(&gold)
        } else {
            gold
        };
        pages.push(Page {
            set,
            id: f[2].to_owned(),
            html: read(root, &format!("sites/{}", f[2]))?,
            gold,
            site: f[4].to_owned(),
        });
    }
    Ok(pages)
}

/// The text of DAnIEL's `<p>` references: tags out, paragraphs on lines.
fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push('\n');
            }
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}
