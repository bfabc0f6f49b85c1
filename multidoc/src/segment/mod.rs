//! The segmenter: HTML → content blocks, each with its text, tag path, link density, heading
//! level, position and page-only weight (how likely it is main content). A block is the text
//! between two block-level tags (`p`, `div`, `li`, `td`, `h1`…, see [`tags::Tag::is_block`]),
//! whitespace collapsed, `<br>` kept as a line break (two in a row end the block); text in
//! scripts, styles, forms' controls and hidden elements is not read. See docs/multidoc.md.

mod entity;
mod hints;
mod lexer;
pub mod model;
pub mod score;
mod tags;
mod text;
mod tree;

pub use model::Model;
pub use score::{Features, FEATURE_NAMES};

/// A block's weight from which it counts as main content.
pub const MAIN_THRESHOLD: f32 = 0.5;
/// When no block reaches the threshold: the share of the best weight that does.
pub const FALLBACK_SHARE: f32 = 0.5;

/// One block of a page's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub text: String,
    /// Tag names of its innermost block-level elements, outermost first (`div>article>p`).
    pub path: String,
    /// 1–6 inside `h1`–`h6`, else 0.
    pub heading: u8,
    /// Its place among the page's blocks, from 0.
    pub position: u32,
    /// Byte offset of its first text in the page.
    pub offset: u32,
    /// Characters, not counting white space.
    pub chars: u32,
    /// Of those, characters inside links.
    pub link_chars: u32,
    /// How likely it is main content, from the page alone (0–1).
    pub weight: f32,
    /// Its innermost block-level element in the tree.
    pub(crate) node: u32,
    pub(crate) tag: tags::Tag,
    /// Hints of the inline elements its text was in (those of its block-level ancestors are
    /// in the tree's nodes).
    pub(crate) hints: hints::Hints,
}

impl Block {
    pub fn link_density(&self) -> f32 {
        self.link_chars as f32 / self.chars.max(1) as f32
    }
}

/// A page cut into blocks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Segmented {
    /// The `<title>`, white space collapsed.
    pub title: Option<String>,
    pub blocks: Vec<Block>,
}

/// Cuts a page into blocks and weighs them.
pub fn segment(html: &str) -> Segmented {
    segment_with(html, &Model::DEFAULT)
}

/// [`segment`] with another model (the benchmark's training).
pub fn segment_with(html: &str, model: &Model) -> Segmented {
    let mut tree = tree::build(html);
    let weights = score::weights(&tree, model);
    for (b, w) in tree.blocks.iter_mut().zip(weights) {
        b.weight = w;
    }
    Segmented {
        title: tree.title,
        blocks: tree.blocks,
    }
}

/// [`segment_with`], and the features each weight came from (for training).
pub fn segment_with_features(html: &str, model: &Model) -> (Segmented, Vec<Features>) {
    let tree = tree::build(html);
    let features = score::all_features(&tree);
    let segmented = segment_with(html, model);
    (segmented, features)
}

/// The parse alone (tokens and the tree of blocks, no weights): the benchmark's limit.
pub fn parse_only(html: &str) -> usize {
    tree::build(html).blocks.len()
}

/// The text of the blocks judged main content, one per line: those whose weight is at least
/// `threshold`, or, when none is, those within [`FALLBACK_SHARE`] of the best weight (a page
/// always has some main content; an empty extraction is the worst answer).
pub fn main_text<'a>(
    blocks: impl IntoIterator<Item = (&'a Block, f32)> + Clone,
    threshold: f32,
) -> String {
    let best = blocks
        .clone()
        .into_iter()
        .map(|(_, w)| w)
        .fold(0.0f32, f32::max);
    let threshold = if best >= threshold {
        threshold
    } else {
        best * FALLBACK_SHARE
    };
    let chosen = |w: f32| w >= threshold && w > 0.0;
    // Sized first: a page's main text can be most of its text, and doubling would cost twice.
    let len: usize = blocks
        .clone()
        .into_iter()
        .filter(|&(_, w)| chosen(w))
        .map(|(b, _)| b.text.len() + 1)
        .sum();
    let mut out = String::with_capacity(len);
    for (b, w) in blocks {
        if chosen(w) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&b.text);
        }
    }
    out
}
