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
    let mut template_bytes = 0usize;
    let mut bytes = 0usize;
    let weights: Vec<f32> = segmented
        .blocks
        .iter()
        .zip(&fingerprints)
        .map(|(b, &fp)| {
            bytes += b.text.len();
            let Some(e) = evidence else { return b.weight };
            let t = e.domain.trust(e.includes_page) * e.domain.template(fp, e.includes_page);
            if t >= 0.5 {
                template_bytes += b.text.len();
            }
            e.domain.weight(b.weight, fp, e.includes_page)
        })
        .collect();
    let main_text = main_text(
        segmented.blocks.iter().zip(weights.iter().copied()),
        MAIN_THRESHOLD,
    );
    Ok(Analysis {
        encoding,
        charset_from,
        title: segmented.title,
        blocks: segmented.blocks,
        fingerprints,
        weights,
        main_text,
        template_share: template_bytes as f32 / bytes.max(1) as f32,
    })
}
