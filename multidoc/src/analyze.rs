//! One page through the stages that need no model: decode → blocks → (a domain's evidence) →
//! weights → main text. The tokenizer and classifier take it from here.

use crate::decode::{decode, CharsetFrom, DecodeError};
use crate::segment::{main_text, segment, Block, MAIN_THRESHOLD};
use crate::template::{fingerprint, DomainEvidence};

/// A domain's evidence for one page, and whether that page is already counted in it (the
/// `--site` tool adds every page first; the worker weighs a page before adding it).
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub domain: &'a DomainEvidence,
    pub includes_page: bool,
}

impl Evidence<'_> {
    /// Whether the evidence calls the block of `fingerprint` template (what the template
    /// share counts).
    pub fn is_template(&self, fingerprint: u64) -> bool {
        let d = self.domain;
        d.trust(self.includes_page) * d.template(fingerprint, self.includes_page) >= 0.5
    }
}

/// What the analysis made of a page.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The encoding the page was decoded from, and where it was found.
    pub encoding: &'static str,
    pub charset_from: CharsetFrom,
    pub title: Option<String>,
    /// Blocks with their page-only weight.
    pub blocks: Vec<Block>,
    /// Each block's fingerprint, for the domain's evidence.
    pub fingerprints: Vec<u64>,
    /// Each block's weight: the page-only weight, with the domain's evidence if any.
    pub weights: Vec<f32>,
    /// The blocks judged main content, one per line.
    pub main_text: String,
    /// The share of the blocks' text the domain's evidence calls template (0 without it).
    pub template_share: f32,
}

/// Analyses a page of at most `max_bytes` (see [`crate::decode::decode`] for the errors); a
/// page with no text gives an analysis with no blocks.
pub fn analyze(
    body: &[u8],
    http_charset: Option<&str>,
    max_bytes: usize,
    evidence: Option<Evidence<'_>>,
) -> Result<Analysis, DecodeError> {
    let decoded = decode(body, http_charset, max_bytes)?;
    let (encoding, charset_from) = (decoded.encoding.name(), decoded.from);
    let segmented = segment(&decoded.text);
    drop(decoded);
    let fingerprints: Vec<u64> = segmented
        .blocks
        .iter()
        .map(|b| fingerprint(&b.text, &b.path))
        .collect();
    let mut a = Analysis {
        encoding,
        charset_from,
        title: segmented.title,
        blocks: segmented.blocks,
        fingerprints,
        weights: Vec::new(),
        main_text: String::new(),
        template_share: 0.0,
    };
    a.weigh(evidence);
    Ok(a)
}

impl Analysis {
    /// Weighs the blocks again with `evidence` (none: the page-only weights), and makes the
    /// main text and the template share from the new weights. The worker analyses a batch's
    /// pages first, then loads the evidence of the fingerprints they hold, then weighs each.
    pub fn weigh(&mut self, evidence: Option<Evidence<'_>>) {
        let mut template_bytes = 0usize;
        let mut bytes = 0usize;
        self.weights = self
            .blocks
            .iter()
            .zip(&self.fingerprints)
            .map(|(b, &fp)| {
                bytes += b.text.len();
                let Some(e) = evidence else { return b.weight };
                if e.is_template(fp) {
                    template_bytes += b.text.len();
                }
                e.domain.weight(b.weight, fp, e.includes_page)
            })
            .collect();
        self.main_text = main_text(
            self.blocks.iter().zip(self.weights.iter().copied()),
            MAIN_THRESHOLD,
        );
        self.template_share = template_bytes as f32 / bytes.max(1) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(unique: &str) -> String {
        format!(
            "<html><body><nav><ul><li><a href=/>Home</a></li><li><a href=/news>News</a></li></ul></nav>\
             <article><p>{unique} is what this page alone says, at some length, so that it is read \
             as the page's own text and not as furniture.</p></article>\
             <footer><p>Copyright Example Ltd, all rights reserved.</p></footer></body></html>"
        )
    }

    #[test]
    fn weighing_later_gives_what_analysing_with_the_evidence_gives() {
        let mut domain = DomainEvidence::default();
        for i in 0..8 {
            let a = analyze(page(&format!("Story {i}")).as_bytes(), None, 1 << 20, None)
                .unwrap_or_else(|e| panic!("{e}"));
            domain.add_page(a.fingerprints.iter().copied());
        }
        let e = Evidence {
            domain: &domain,
            includes_page: false,
        };
        let body = page("Another story");
        let at_once =
            analyze(body.as_bytes(), None, 1 << 20, Some(e)).unwrap_or_else(|e| panic!("{e}"));
        let mut later =
            analyze(body.as_bytes(), None, 1 << 20, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(later.template_share, 0.0);
        later.weigh(Some(e));
        assert_eq!(later.weights, at_once.weights);
        assert_eq!(later.main_text, at_once.main_text);
        assert_eq!(later.template_share, at_once.template_share);
        assert!(later.template_share > 0.2, "{}", later.template_share);
        assert!(later.main_text.contains("Another story"));
        assert!(
            !later.main_text.contains("Copyright"),
            "{}",
            later.main_text
        );
    }
}
