//! The page-only weight of each block: how likely it is main content. Three views of the page
//! are combined, each from a known extractor:
//!
//! - the block itself (jusText, boilerpipe): length, link density, stop words, punctuation,
//!   its tag, boilerplate phrases;
//! - its ancestors' names (readability, trafilatura): nav, footer, comment, share, related, …
//!   and article, content, `itemprop=articleBody`;
//! - the page's main container (readability): every paragraph-like block gives a score to its
//!   element and, less, to the ones above; the best-scoring element, less its link density, is
//!   the article, and its siblings that score well join it.
//!
//! A logistic model turns these features into a first weight; a second one adds the first
//! weights of the neighbouring blocks (text near main content is main content; a lone good
//! block among menus is not). The coefficients are in [`super::model`].

use std::collections::HashMap;

use super::hints::{self, Hints};
use super::model::{self, Model};
use super::tags::Tag;
use super::text::{self, TextStats};
use super::tree::{Tree, NONE};
use super::Block;

/// An element holding more than this share of the page's text is a wrapper, not a box.
const WRAPPER_SHARE: f32 = 0.8;
/// Hints that say an element's text is not main content.
const NEGATIVE: Hints = hints::BOILERPLATE | hints::META | hints::HIDDEN | hints::CAPTION;

/// How many ancestors a block's readability score reaches, and the share each gets
/// (readability: the element, half to its parent, a third of a level's worth beyond).
const SCORE_LEVELS: usize = 4;
const LEVEL_SHARE: [f32; SCORE_LEVELS] = [1.0, 0.5, 1.0 / 6.0, 1.0 / 9.0];

/// The features of one block (see [`FEATURE_NAMES`]).
pub type Features = [f32; model::FEATURES];

/// Names of the features, in order (printed by the training dump).
pub const FEATURE_NAMES: [&str; model::FEATURES] = [
    "bias",
    "ln_words",
    "link_density",
    "stop_density",
    "punct_per_word",
    "ends_sentence",
    "starts_upper",
    "upper",
    "boilerplate_phrase",
    "heading",
    "tag_p",
    "tag_li",
    "tag_cell",
    "tag_pre_quote",
    "tag_other",
    "nav",
    "footer",
    "header",
    "sidebar",
    "comment",
    "social",
    "related",
    "ad",
    "meta",
    "popup",
    "content",
    "body",
    "caption",
    "form",
    "article",
    "main",
    "list",
    "title",
    "in_best",
    "in_best_parent",
    "best_share",
    "node_link_density",
    "node_ln_chars",
    "rel_position",
    "before_best",
    "after_best",
    "short",
    "ln_chars_share",
    "is_title_like",
    "grandparent_link_density",
    "page_link_density",
    "page_ln_blocks",
    "in_list_item",
    "share_of_parent",
    "digits",
    "stop_density_vs_page",
    "same_path_blocks",
];

/// Per element: the text and link characters under it and its readability score.
struct Subtree {
    chars: Vec<u32>,
    link_chars: Vec<u32>,
    score: Vec<f32>,
}

fn subtrees(tree: &Tree) -> Subtree {
    let n = tree.nodes.len();
    let mut t = Subtree {
        chars: vec![0; n],
        link_chars: vec![0; n],
        score: vec![0.0; n],
    };
    for b in &tree.blocks {
        let mut node = b.node;
        while node != NONE {
            let i = node as usize;
            t.chars[i] += b.chars;
            t.link_chars[i] += b.link_chars;
            node = tree.nodes[i].parent;
        }
    }
    t
}

/// readability's scores: each paragraph-like block gives to its element and the ones above.
fn readability(tree: &Tree, stats: &[TextStats], hints: &[Hints], t: &mut Subtree) {
    for ((b, s), &h) in tree.blocks.iter().zip(stats).zip(hints) {
        if b.chars < 25 || b.heading > 0 || h & hints::BOILERPLATE != 0 {
            continue;
        }
        let gain = 1.0 + s.commas as f32 + (b.chars as f32 / 100.0).min(3.0);
        let mut node = b.node;
        for share in LEVEL_SHARE {
            if node == NONE {
                break;
            }
            t.score[node as usize] += gain * share;
            node = tree.nodes[node as usize].parent;
        }
    }
    for (i, node) in tree.nodes.iter().enumerate() {
        let ld = t.link_chars[i] as f32 / t.chars[i].max(1) as f32;
        t.score[i] = (t.score[i] + class_weight(node.hints, node.tag)) * (1.0 - ld);
    }
}

/// readability's class weight, from the element's own and inherited hints.
fn class_weight(h: Hints, tag: Tag) -> f32 {
    let mut w = 0.0;
    if h & (hints::CONTENT | hints::ARTICLE | hints::MAIN) != 0 {
        w += 10.0;
    }
    if h & hints::BODY != 0 {
        w += 25.0;
    }
    if h & hints::BOILERPLATE != 0 {
        w -= 25.0;
    }
    if matches!(tag, Tag::Body | Tag::Html) {
        w -= 25.0;
    }
    w
}

/// The main container (readability's top candidate) and the elements that join it.
fn best(tree: &Tree, sub: &Subtree) -> (u32, Vec<bool>) {
    let mut top = 0u32;
    for i in 1..tree.nodes.len() {
        if sub.score[i] > sub.score[top as usize] {
            top = i as u32;
        }
    }
    let mut joined = vec![false; tree.nodes.len()];
    joined[top as usize] = true;
    let parent = tree.nodes[top as usize].parent;
    let threshold = (sub.score[top as usize] * 0.2).max(10.0);
    if parent != NONE {
        for (i, node) in tree.nodes.iter().enumerate() {
            if node.parent == parent && sub.score[i] >= threshold {
                joined[i] = true;
            }
        }
    }
    (top, joined)
}

/// The hints that apply to a block: its inline elements', and those of its block-level
/// ancestors, except what `body` says and the boilerplate words of an element that holds most
/// of the page (class lists of whole-page wrappers name every feature the site has), or that
/// holds the main container (`joined`, once known: a site calling its article's wrapper
/// `_reachbanner_` does not make the article an ad).
fn block_hints(tree: &Tree, sub: &Subtree, b: &Block, joined: Option<&[bool]>) -> Hints {
    let total = sub.chars[0] as f32;
    let mut h = b.hints;
    let mut node = b.node;
    let mut above_main = false;
    while node != NONE {
        let n = &tree.nodes[node as usize];
        above_main |= joined.is_some_and(|j| j[node as usize]);
        if !matches!(n.tag, Tag::Body | Tag::Html) {
            let big = above_main || sub.chars[node as usize] as f32 > WRAPPER_SHARE * total;
            h |= if big { n.hints & !NEGATIVE } else { n.hints };
        }
        node = n.parent;
    }
    h
}

/// What the features of a page's blocks are computed from, kept small (a few numbers per
/// block and element): each block's feature vector is made when it is needed.
struct View<'t> {
    tree: &'t Tree,
    stats: Vec<TextStats>,
    hints: Vec<Hints>,
    sub: Subtree,
    joined: Vec<bool>,
    top_parent: u32,
    total_chars: f32,
    best_share: f32,
    page_link_density: f32,
    first_in: Option<usize>,
    last_in: Option<usize>,
    /// Stop words per word in the page's blocks of 10 words or more (prose has more of them
    /// than furniture in every language, but how many more depends on the language).
    page_stop_density: f32,
    /// How many of the page's blocks have each tag path (lists, grids, menus repeat theirs).
    paths: HashMap<&'t str, u32>,
}

impl<'t> View<'t> {
    fn new(tree: &'t Tree) -> Self {
        let mut lower = String::new();
        let stats: Vec<TextStats> = tree
            .blocks
            .iter()
            .map(|b| text::stats(&b.text, &mut lower))
            .collect();
        let mut sub = subtrees(tree);
        let hints: Vec<Hints> = tree
            .blocks
            .iter()
            .map(|b| block_hints(tree, &sub, b, None))
            .collect();
        readability(tree, &stats, &hints, &mut sub);
        let (top, joined) = best(tree, &sub);
        let hints: Vec<Hints> = tree
            .blocks
            .iter()
            .map(|b| block_hints(tree, &sub, b, Some(&joined)))
            .collect();
        let total_chars = sub.chars[0].max(1) as f32;
        View {
            tree,
            top_parent: tree.nodes[top as usize].parent,
            best_share: sub.chars[top as usize] as f32 / total_chars,
            page_link_density: sub.link_chars[0] as f32 / total_chars,
            first_in: tree
                .blocks
                .iter()
                .position(|b| inside(tree, b.node, &joined)),
            last_in: tree
                .blocks
                .iter()
                .rposition(|b| inside(tree, b.node, &joined)),
            total_chars,
            page_stop_density: {
                let long = stats.iter().filter(|s| s.words >= 10);
                let (stop, words) = long.fold((0, 0), |(a, b), s| (a + s.stop_words, b + s.words));
                stop as f32 / words.max(1) as f32
            },
            paths: tree.blocks.iter().fold(HashMap::new(), |mut m, b| {
                *m.entry(b.path.as_str()).or_default() += 1;
                m
            }),
            stats,
            hints,
            sub,
            joined,
        }
    }

    /// The features of block `i`.
    fn features(&self, i: usize) -> Features {
        let (tree, sub) = (self.tree, &self.sub);
        let (b, s, bh) = (&tree.blocks[i], &self.stats[i], self.hints[i]);
        let n = tree.blocks.len().max(1) as f32;
        let words = s.words.max(1) as f32;
        let node = b.node as usize;
        let in_best = inside(tree, b.node, &self.joined);
        let in_parent = self.top_parent != NONE && ancestor_of(tree, b.node, self.top_parent);
        let h = |bit: Hints| f32::from(u8::from(bh & bit != 0));
        let tag = |t: &[Tag]| f32::from(u8::from(t.contains(&b.tag)));
        let flag = |v: bool| f32::from(u8::from(v));
        let density = |node: usize| sub.link_chars[node] as f32 / sub.chars[node].max(1) as f32;
        let title_like = b.heading > 0
            && tree
                .title
                .as_deref()
                .is_some_and(|t| t.contains(b.text.as_str()));
        [
            1.0,
            (1.0 + s.words as f32).ln(),
            b.link_chars as f32 / b.chars.max(1) as f32,
            s.stop_words as f32 / words,
            (s.punctuation as f32 / words).min(1.0),
            flag(s.ends_sentence),
            flag(s.starts_upper),
            s.upper,
            flag(s.boilerplate),
            flag(b.heading > 0),
            tag(&[Tag::P]),
            tag(&[Tag::Li, Tag::Dd, Tag::Dt]),
            tag(&[Tag::Td, Tag::Th]),
            tag(&[Tag::Pre, Tag::Blockquote]),
            tag(&[Tag::Div, Tag::Section, Tag::Other, Tag::Body, Tag::Html]),
            h(hints::NAV),
            h(hints::FOOTER),
            h(hints::HEADER),
            h(hints::SIDEBAR),
            h(hints::COMMENT),
            h(hints::SOCIAL),
            h(hints::RELATED),
            h(hints::AD),
            h(hints::META),
            h(hints::POPUP),
            h(hints::CONTENT),
            h(hints::BODY),
            h(hints::CAPTION),
            h(hints::FORM),
            h(hints::ARTICLE),
            h(hints::MAIN),
            h(hints::LIST),
            h(hints::TITLE),
            flag(in_best),
            flag(in_parent),
            self.best_share,
            density(node),
            (1.0 + sub.chars[node] as f32).ln(),
            i as f32 / n,
            flag(self.first_in.is_some_and(|f| i < f)),
            flag(self.last_in.is_some_and(|l| i > l)),
            flag(s.words < 5),
            (b.chars as f32 / self.total_chars * 100.0 + 1.0).ln(),
            flag(title_like),
            density(ancestor(tree, b.node, 2) as usize),
            self.page_link_density,
            n.ln(),
            flag(in_list_item(tree, b.node)),
            b.chars as f32 / sub.chars[ancestor(tree, b.node, 1) as usize].max(1) as f32,
            s.digits as f32 / b.chars.max(1) as f32,
            (s.stop_words as f32 / words / self.page_stop_density.max(0.05)).min(2.0),
            (self.paths.get(b.path.as_str()).copied().unwrap_or(1) as f32).ln(),
        ]
    }
}

/// Each block's features (for training: the segmenter makes them one at a time).
pub fn all_features(tree: &Tree) -> Vec<Features> {
    let view = View::new(tree);
    (0..tree.blocks.len()).map(|i| view.features(i)).collect()
}

/// The ancestor `levels` above `node` (the root if there are fewer).
fn ancestor(tree: &Tree, mut node: u32, levels: usize) -> u32 {
    for _ in 0..levels {
        match tree.nodes[node as usize].parent {
            NONE => break,
            p => node = p,
        }
    }
    node
}

/// Whether the block is in a list item, within three levels.
fn in_list_item(tree: &Tree, mut node: u32) -> bool {
    for _ in 0..3 {
        if node == NONE {
            break;
        }
        let n = &tree.nodes[node as usize];
        if matches!(n.tag, Tag::Li | Tag::Dd | Tag::Dt) {
            return true;
        }
        node = n.parent;
    }
    false
}

fn inside(tree: &Tree, mut node: u32, joined: &[bool]) -> bool {
    while node != NONE {
        if joined[node as usize] {
            return true;
        }
        node = tree.nodes[node as usize].parent;
    }
    false
}

fn ancestor_of(tree: &Tree, mut node: u32, ancestor: u32) -> bool {
    while node != NONE {
        if node == ancestor {
            return true;
        }
        node = tree.nodes[node as usize].parent;
    }
    false
}

/// The page-only weight of each block, from its features and its neighbours'.
pub fn weights(tree: &Tree, model: &Model) -> Vec<f32> {
    let view = View::new(tree);
    let n = tree.blocks.len();
    let first: Vec<f32> = (0..n).map(|i| model.first(&view.features(i))).collect();
    (0..n)
        .map(|i| model.second(&view.features(i), &context(&first, i)))
        .collect()
}

/// The first weights around block `i`: previous, next, and the mean of two on each side.
pub fn context(first: &[f32], i: usize) -> [f32; model::CONTEXT] {
    let at = |j: isize| -> f32 {
        if j < 0 || j as usize >= first.len() {
            0.0
        } else {
            first[j as usize]
        }
    };
    let i = i as isize;
    let near = (at(i - 2) + at(i - 1) + at(i + 1) + at(i + 2)) / 4.0;
    [at(i), at(i - 1), at(i + 1), near]
}
