//! The sets' own metrics, for the figures printed while the benchmark runs (the sets'
//! evaluate scripts, run at the end, give the official ones): WCXB's word-F1 and AEB's
//! shingle-F1, both over `\w+` tokens.

use std::collections::HashMap;

/// Python's `\w+` tokens (letters, digits, `_`).
pub fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
}

/// WCXB's word-F1 of one page: (precision, recall, F1) over lower-cased token multisets.
pub fn word_prf(pred: &str, gold: &str) -> (f64, f64, f64) {
    let count = |s: &str| {
        let mut m: HashMap<String, u32> = HashMap::new();
        let mut n = 0u32;
        for t in tokens(s) {
            *m.entry(t.to_lowercase()).or_default() += 1;
            n += 1;
        }
        (m, n)
    };
    let (p, np) = count(pred);
    let (g, ng) = count(gold);
    if ng == 0 {
        return if np == 0 {
            (1.0, 1.0, 1.0)
        } else {
            (0.0, 0.0, 0.0)
        };
    }
    if np == 0 {
        return (0.0, 0.0, 0.0);
    }
    let overlap: u32 = p
        .iter()
        .map(|(t, c)| (*c).min(g.get(t).copied().unwrap_or(0)))
        .sum();
    let (pr, rc) = (overlap as f64 / np as f64, overlap as f64 / ng as f64);
    let f1 = if pr + rc > 0.0 {
        2.0 * pr * rc / (pr + rc)
    } else {
        0.0
    };
    (pr, rc, f1)
}

/// AEB's (tp, fp, fn) of one page over 4-token shingles, normalised to sum to 1.
pub fn shingle_counts(pred: &str, gold: &str) -> (f64, f64, f64) {
    fn shingles(s: &str) -> HashMap<Vec<&str>, i64> {
        let t: Vec<&str> = tokens(s).collect();
        let mut m: HashMap<Vec<&str>, i64> = HashMap::new();
        for i in 0..t.len().saturating_sub(3).max(1) {
            let sh = t[i..(i + 4).min(t.len())].to_vec();
            if !sh.is_empty() {
                *m.entry(sh).or_default() += 1;
            }
        }
        m
    }
    let (p, g) = (shingles(pred), shingles(gold));
    let (mut tp, mut fp, mut fneg) = (0.0, 0.0, 0.0);
    for (k, &pc) in &p {
        let gc = g.get(k).copied().unwrap_or(0);
        tp += pc.min(gc) as f64;
        fp += (pc - gc).max(0) as f64;
    }
    for (k, &gc) in &g {
        fneg += (gc - p.get(k).copied().unwrap_or(0)).max(0) as f64;
    }
    let s = tp + fp + fneg;
    if s > 0.0 {
        (tp / s, fp / s, fneg / s)
    } else {
        (0.0, 0.0, 0.0)
    }
}

/// AEB's F1 over pages: precision and recall averaged over the pages where they are defined.
pub fn shingle_f1(counts: &[(f64, f64, f64)]) -> f64 {
    let prec = |&(tp, fp, _): &(f64, f64, f64)| (tp + fp > 0.0).then(|| tp / (tp + fp));
    let rec = |&(tp, _, fneg): &(f64, f64, f64)| (tp + fneg > 0.0).then(|| tp / (tp + fneg));
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let p = mean(counts.iter().filter_map(prec).collect());
    let r = mean(counts.iter().filter_map(rec).collect());
    if p + r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    }
}
