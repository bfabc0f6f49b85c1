//! The sample web's pages: real articles (the committed corpus `multidoc/corpus/tgcontest/`,
//! Russian and English news, Apache-2.0) placed under each host's own template — a header, a
//! menu, a box of links and a footer that every page of the host repeats — so that the
//! templater has something to learn and the classifier real text to read. Which article a
//! page shows is a pure function of its host and path, so the checks know each page's label.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::plan::Plan;
use super::sample;

/// The corpus: `label path \t text` lines.
pub fn corpus_file(repo: &Path) -> PathBuf {
    repo.join("multidoc/corpus/tgcontest/corpus.tsv")
}

/// One article of the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Article {
    /// Its category path (`Science > Weather`).
    pub label: String,
    pub text: String,
}

/// The corpus's articles, in file order.
#[derive(Debug, Clone)]
pub struct Articles(Vec<Article>);

impl Articles {
    pub fn load(plan: &Plan) -> Result<Articles, String> {
        let file = corpus_file(&plan.repo);
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("{}: {e} (the sample web's articles)", file.display()))?;
        let mut all = Vec::new();
        for (n, line) in text.lines().enumerate() {
            match line.split_once('\t') {
                Some((label, text)) if !label.is_empty() && !text.trim().is_empty() => {
                    all.push(Article {
                        label: label.to_string(),
                        text: text.trim().to_string(),
                    })
                }
                _ => {
                    return Err(format!(
                        "{}:{}: not `label \\t text`",
                        file.display(),
                        n + 1
                    ))
                }
            }
        }
        if all.is_empty() {
            return Err(format!("{}: no article", file.display()));
        }
        Ok(Articles(all))
    }

    /// The article page `j` of host `host` shows (spread over the corpus, the same every run).
    pub fn of(&self, host: usize, j: usize) -> &Article {
        let h = (host as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(j as u64)
            .wrapping_mul(0xBF58_476D_1CE4_E5B9);
        &self.0[((h >> 17) % self.0.len() as u64) as usize]
    }

    /// Pages per label over `pages` (host, path number) pairs.
    pub fn labels(&self, pages: impl Iterator<Item = (usize, usize)>) -> BTreeMap<&str, usize> {
        let mut by = BTreeMap::new();
        for (host, j) in pages {
            *by.entry(self.of(host, j).label.as_str()).or_insert(0) += 1;
        }
        by
    }
}

/// The sections of every host's menu (the paths' `section-N`).
const SECTIONS: [&str; 5] = ["Home", "World", "Economy", "Sport", "Science"];

/// The page at path `j` of host `host`: the article under the host's template.
pub fn page(host: usize, j: usize, article: &Article) -> String {
    let name = sample::host_name(host);
    let (title, body) = split_title(&article.text);
    let mut menu = String::new();
    for (k, s) in SECTIONS.iter().enumerate() {
        menu.push_str(&format!("<li><a href=\"/section-{k}/\">{s}</a></li>"));
    }
    let mut links = String::new();
    for k in 1..=4 {
        let other = (j + k * 5) % 97;
        links.push_str(&format!(
            "<li><a href=\"{}\">Read also: page {other} of {name}</a></li>",
            sample::path(other)
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t} | {name}</title></head>\n\
         <body><header><a href=\"/\">{name}</a> <span>News, opinions and more since 2009</span>\
         <nav><ul>{menu}</ul></nav></header>\n\
         <main><article><h1>{t}</h1><p>{b}</p></article></main>\n\
         <aside><h3>Popular on {name}</h3><ul>{links}</ul></aside>\n\
         <footer><p>© 2026 {name}. All rights reserved. <a href=\"/about\">About</a> \
         <a href=\"/contacts\">Contacts</a> <a href=\"/privacy\">Privacy policy</a></p></footer>\
         </body></html>\n",
        t = escape(title),
        b = escape(body),
    )
}

/// The first sentence as the title, the rest as the body (all of it when there is one).
fn split_title(text: &str) -> (&str, &str) {
    match text.find(". ") {
        Some(i) if i < 200 && i + 2 < text.len() => (&text[..i], &text[i + 2..]),
        _ => (text, text),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::super::test_plan;
    use super::*;

    #[test]
    fn pages_are_articles_under_their_hosts_template() {
        let dir = tempfile::tempdir().unwrap();
        let plan = test_plan(dir.path());
        let articles = Articles::load(&plan).unwrap();
        assert_eq!(articles.0.len(), 325);
        let a = articles.of(3, 10);
        assert_eq!(a, articles.of(3, 10), "the same every time");
        let html = page(3, 10, a);
        assert!(html.contains(&escape(split_title(&a.text).1)));
        assert!(html.contains(&format!("© 2026 {}", sample::host_name(3))));
        // Pages of a host share the template, and the pages spread over the corpus.
        let labels = articles.labels((0..200).map(|j| (1, j)));
        assert!(labels.len() >= 5, "{labels:?}");
        assert_eq!(labels.values().sum::<usize>(), 200);
        assert_eq!(split_title("One. Two three."), ("One", "Two three."));
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn a_damaged_corpus_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = test_plan(dir.path());
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(corpus_file(&repo).parent().unwrap()).unwrap();
        std::fs::write(corpus_file(&repo), "Sports\tA match.\nno tab here\n").unwrap();
        plan.repo = repo;
        let err = Articles::load(&plan).unwrap_err();
        assert!(err.ends_with("corpus.tsv:2: not `label \\t text`"), "{err}");
    }
}
