//! The tragic filter on CrisisLex T6 (tweets about six crises, on-topic or not) and on
//! 20 Newsgroups' comp.*, rec.* and sci.* messages (no tragic content): F1, the share flagged,
//! next to the CrisisLex lexicon alone ("any of its terms → on-topic", the published baseline).
//! The protocol: the constants were chosen on the tuning crises and the even half of 20NG, and
//! are checked on the other crises and the odd half (docs/bindings.md).

use std::path::Path;

use anyhow::Context;
use focuser_bind::tragic::{Lexicon, Params, Shape, TextJudge, BUILTIN_SOURCES};
use focuser_multidoc::tokenize::Tokenizer;

use crate::data::read;

/// The crises the constants were chosen on; the others check them.
pub const TUNING: [&str; 3] = [
    "2012_Sandy_Hurricane",
    "2013_Alberta_Floods",
    "2013_Oklahoma_Tornado",
];
pub const CRISES: [&str; 6] = [
    "2012_Sandy_Hurricane",
    "2013_Alberta_Floods",
    "2013_Oklahoma_Tornado",
    "2013_Boston_Bombings",
    "2013_Queensland_Floods",
    "2013_West_Texas_Explosion",
];

pub struct Tweet {
    pub crisis: &'static str,
    pub text: String,
    pub on_topic: bool,
}

/// One CSV record of a T6 file (`'id',"text",label`; quotes doubled inside, newlines allowed).
fn records(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let (mut rec, mut field) = (Vec::new(), String::new());
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => rec.push(std::mem::take(&mut field)),
            (false, '\n') => {
                rec.push(std::mem::take(&mut field));
                out.push(std::mem::take(&mut rec));
            }
            (false, '\r') => {}
            (false, c) => field.push(c),
        }
    }
    if !field.is_empty() || !rec.is_empty() {
        rec.push(field);
        out.push(rec);
    }
    out
}

pub fn t6(root: &Path) -> anyhow::Result<Vec<Tweet>> {
    let mut tweets = Vec::new();
    for crisis in CRISES {
        let rel = format!("tragic/crisislex/CrisisLexT6/{crisis}/{crisis}-ontopic_offtopic.csv");
        let text = String::from_utf8(read(root, &rel)?).context(rel)?;
        for r in records(&text).into_iter().skip(1) {
            let [_, text, label] = &r[..] else { continue };
            tweets.push(Tweet {
                crisis,
                text: text.clone(),
                on_topic: label.trim() == "on-topic",
            });
        }
    }
    Ok(tweets)
}

/// A labelled JSONL document: its label and text.
pub fn jsonl(root: &Path, rel: &str) -> anyhow::Result<Vec<(String, String, String)>> {
    let text = String::from_utf8(read(root, rel)?).context(rel.to_owned())?;
    let mut out = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).context(rel.to_owned())?;
        let label = match &v["label"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push((
            v["id"].as_str().unwrap_or_default().to_owned(),
            label,
            v["text"].as_str().unwrap_or_default().to_owned(),
        ));
    }
    Ok(out)
}

/// Precision, recall, F1 of flags against labels.
#[derive(Default, Clone, Copy)]
pub struct Prf {
    tp: usize,
    fp: usize,
    fn_: usize,
}

impl Prf {
    fn add(&mut self, flag: bool, truth: bool) {
        match (flag, truth) {
            (true, true) => self.tp += 1,
            (true, false) => self.fp += 1,
            (false, true) => self.fn_ += 1,
            _ => {}
        }
    }
    pub fn p(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fp).max(1) as f64
    }
    pub fn r(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fn_).max(1) as f64
    }
    pub fn f1(&self) -> f64 {
        2.0 * self.p() * self.r() / (self.p() + self.r()).max(1e-12)
    }
    fn merge(&mut self, o: &Prf) {
        self.tp += o.tp;
        self.fp += o.fp;
        self.fn_ += o.fn_;
    }
}

/// The CrisisLex lexicon alone: any term found as words flags (the published baseline: no
/// looking inside hashtags).
fn crisislex_alone(t: &mut Tokenizer) -> anyhow::Result<Lexicon> {
    let (name, text, _) = BUILTIN_SOURCES[0];
    let mut b = Lexicon::builder();
    b.add(t, name, text, Shape::Terms(1.0))?;
    Ok(b.build().words_only())
}

/// A 0/1 judge of texts.
type Judge<'a> = dyn FnMut(&str) -> bool + 'a;

fn t6_scores(tweets: &[Tweet], judge: &mut Judge) -> Vec<(&'static str, Prf)> {
    let mut per: Vec<(&'static str, Prf)> = CRISES.iter().map(|&c| (c, Prf::default())).collect();
    for t in tweets {
        let flag = judge(&t.text);
        if let Some((_, p)) = per.iter_mut().find(|(c, _)| *c == t.crisis) {
            p.add(flag, t.on_topic);
        }
    }
    per
}

fn total(per: &[(&'static str, Prf)], filter: impl Fn(&str) -> bool) -> Prf {
    let mut all = Prf::default();
    for (c, p) in per.iter().filter(|(c, _)| filter(c)) {
        let _ = c;
        all.merge(p);
    }
    all
}

/// The share of `docs` flagged.
fn flag_rate(docs: &[&(String, String, String)], judge: &mut Judge) -> f64 {
    let flagged = docs.iter().filter(|d| judge(&d.2)).count();
    flagged as f64 / docs.len().max(1) as f64
}

fn half(id: &str) -> usize {
    let h = id.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    (h >> 11) as usize % 2
}

pub fn run(
    root: &Path,
    smoke: bool,
    params: &Params,
    verbose: bool,
    errors: usize,
) -> anyhow::Result<()> {
    let mut tweets = t6(root)?;
    let mut ng = jsonl(root, "classify/20newsgroups/train.jsonl")?;
    if smoke {
        tweets = tweets.into_iter().step_by(50).collect();
        ng = ng.into_iter().step_by(20).collect();
    }
    let mut tokenizer = Tokenizer::default();
    let ours = Lexicon::builtin(&mut tokenizer)?;
    let alone = crisislex_alone(&mut tokenizer)?;
    let any = Params {
        min_score: 0.5,
        min_density: 0.0,
        ..Params::default()
    };
    let mut tj = TextJudge::default();
    if errors > 0 {
        print_errors(&tweets, &ng, &ours, params, errors, &mut tj);
    }
    let mut runs: Vec<(&str, Box<Judge>)> = Vec::new();
    let mut tj2 = TextJudge::default();
    runs.push((
        "CrisisLex lexicon alone",
        Box::new(move |t: &str| tj2.judge(&alone, t, &any).tragic),
    ));
    let words_only = Lexicon::builtin(&mut tokenizer)?.words_only();
    let mut tj3 = TextJudge::default();
    runs.push((
        "focuser, words only",
        Box::new(move |t: &str| tj3.judge(&words_only, t, params).tragic),
    ));
    runs.push((
        "focuser tragic filter",
        Box::new(|t: &str| tj.judge(&ours, t, params).tragic),
    ));
    println!(
        "tragic: lexicon {} terms; {} T6 tweets, tuning crises {}; params {params:?}",
        ours.len(),
        tweets.len(),
        TUNING.join(", ")
    );
    let calm: Vec<&(String, String, String)> = ng
        .iter()
        .filter(|d| ["comp.", "rec.", "sci."].iter().any(|p| d.1.starts_with(p)))
        .collect();
    let talk: Vec<&(String, String, String)> =
        ng.iter().filter(|d| d.1.starts_with("talk.")).collect();
    for (name, judge) in &mut runs {
        let per = t6_scores(&tweets, judge.as_mut());
        let all = total(&per, |_| true);
        let tune = total(&per, |c| TUNING.contains(&c));
        let check = total(&per, |c| !TUNING.contains(&c));
        println!(
            "tragic: {name:<26} T6 P {:.3} R {:.3} F1 {:.3}   tuning crises F1 {:.3}, other crises F1 {:.3}",
            all.p(),
            all.r(),
            all.f1(),
            tune.f1(),
            check.f1()
        );
        if verbose {
            for (c, p) in &per {
                println!(
                    "tragic:   {c:<28} P {:.3} R {:.3} F1 {:.3}",
                    p.p(),
                    p.r(),
                    p.f1()
                );
            }
        }
        let even: Vec<_> = calm.iter().copied().filter(|d| half(&d.0) == 0).collect();
        let odd: Vec<_> = calm.iter().copied().filter(|d| half(&d.0) == 1).collect();
        let (r_all, r_even, r_odd) = (
            flag_rate(&calm, judge.as_mut()),
            flag_rate(&even, judge.as_mut()),
            flag_rate(&odd, judge.as_mut()),
        );
        println!(
            "tragic: {name:<26} 20NG comp/rec/sci ({} docs) flagged {:.2} % (even half {:.2} %, odd half {:.2} %); talk.* {:.1} %",
            calm.len(),
            100.0 * r_all,
            100.0 * r_even,
            100.0 * r_odd,
            100.0 * flag_rate(&talk, judge.as_mut())
        );
    }
    Ok(())
}

/// The filter's misses and false alarms on the tuning crises and the tuning half of 20NG,
/// with the terms it found: where to look for what the method lacks.
fn print_errors(
    tweets: &[Tweet],
    ng: &[(String, String, String)],
    lexicon: &Lexicon,
    params: &Params,
    n: usize,
    tj: &mut TextJudge,
) {
    let terms = |tj: &mut TextJudge, text: &str| {
        let v = tj.judge(lexicon, text, params);
        let t: Vec<String> = v
            .terms
            .iter()
            .map(|&(t, s)| format!("{}={s:.2}", lexicon.term(t)))
            .collect();
        (
            v.tragic,
            format!(
                "score {:.2} density {:.3} [{}]",
                v.score,
                v.density,
                t.join(" ")
            ),
        )
    };
    let (mut missed, mut alarms) = (0, 0);
    for t in tweets.iter().filter(|t| TUNING.contains(&t.crisis)) {
        let (flag, why) = terms(tj, &t.text);
        if flag != t.on_topic && (if flag { alarms < n } else { missed < n }) {
            let what = if flag { "false alarm" } else { "missed" };
            println!(
                "tragic: {what} {} {why}: {}",
                t.crisis,
                t.text.replace('\n', " ")
            );
            *(if flag { &mut alarms } else { &mut missed }) += 1;
        }
    }
    let calm = ng.iter().filter(|d| {
        half(&d.0) == 0 && ["comp.", "rec.", "sci."].iter().any(|p| d.1.starts_with(p))
    });
    for d in calm {
        let (flag, why) = terms(tj, &d.2);
        if flag && alarms < 2 * n {
            println!("tragic: 20NG flagged {} {} {why}", d.0, d.1);
            alarms += 1;
        }
    }
}
