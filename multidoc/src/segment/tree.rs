//! Tokens → blocks of text, each in its innermost block-level element, with the stack of open
//! elements kept the way a browser would for the cases pages rely on: an open `<p>` closed by a
//! block, `<li>`, `<dd>`, `<td>`, `<tr>` closing their open sibling, stray end tags ignored,
//! an inline end tag never closing a block. Only block-level elements that hold text are kept
//! as nodes (an element closed without text is dropped), so memory follows the text, not the
//! markup; the stack is at most [`MAX_DEPTH`] deep.

use super::entity::push_decoded;
use super::hints::{self, Hints};
use super::lexer::{Lexer, Token};
use super::tags::Tag;
use super::Block;

/// Deeper elements are read as if they were not there (their text stays).
pub const MAX_DEPTH: usize = 512;
/// A page's blocks beyond this many are merged into the last one.
pub const MAX_BLOCKS: usize = 20_000;
/// Tag names kept in a block's path, innermost last.
const PATH_LEN: usize = 6;
pub const NONE: u32 = u32::MAX;

/// A block-level element that holds text.
#[derive(Debug, Clone)]
pub struct Node {
    pub tag: Tag,
    pub parent: u32,
    /// The hints of its own tag and attributes.
    pub hints: Hints,
    pub depth: u16,
    first_block: u32,
}

struct Open<'a> {
    tag: Tag,
    name: &'a str,
    /// The innermost block-level node at or above this element.
    node: u32,
    /// Hints of the inline elements from the innermost block-level one to this one.
    hints: Hints,
    hidden: bool,
    link: bool,
}

pub struct Tree {
    pub nodes: Vec<Node>,
    pub blocks: Vec<Block>,
    pub title: Option<String>,
}

struct Builder<'a> {
    stack: Vec<Open<'a>>,
    overflow: usize,
    tree: Tree,
    text: String,
    chars: u32,
    link_chars: u32,
    hints: Hints,
    offset: u32,
    last_space: bool,
    brs: u32,
    scratch: String,
    lower: String,
    in_title: bool,
}

/// Builds the blocks of a page.
pub fn build(html: &str) -> Tree {
    let root = Node {
        tag: Tag::Html,
        parent: NONE,
        hints: 0,
        depth: 0,
        first_block: 0,
    };
    let mut b = Builder {
        stack: vec![Open {
            tag: Tag::Html,
            name: "",
            node: 0,
            hints: 0,
            hidden: false,
            link: false,
        }],
        overflow: 0,
        tree: Tree {
            nodes: vec![root],
            blocks: Vec::new(),
            title: None,
        },
        text: String::new(),
        chars: 0,
        link_chars: 0,
        hints: 0,
        offset: 0,
        last_space: true,
        brs: 0,
        scratch: String::new(),
        lower: String::new(),
        in_title: false,
    };
    let mut lexer = Lexer::new(html);
    while let Some(token) = lexer.next() {
        match token {
            Token::Start {
                name,
                attrs,
                self_closing,
            } => b.start(name, attrs, self_closing),
            Token::End { name } => b.end(name),
            Token::Text(t) => b.text(t, lexer.pos() - t.len()),
        }
    }
    b.flush();
    b.tree
}

impl<'a> Builder<'a> {
    fn top(&self) -> &Open<'a> {
        // The root entry is never popped.
        &self.stack[self.stack.len() - 1]
    }

    fn start(&mut self, name: &'a str, attrs: &'a str, self_closing: bool) {
        let tag = Tag::of(name);
        self.in_title = false;
        if tag == Tag::Br {
            return self.line_break();
        }
        self.brs = 0;
        self.implied_closes(tag);
        if tag.is_block() {
            self.flush();
        }
        // `<html>` is the root, always there; void and self-closing foreign elements hold nothing.
        if tag == Tag::Html
            || tag.is_void()
            || (self_closing && matches!(tag, Tag::Other | Tag::Skipped))
        {
            return;
        }
        if self.stack.len() >= MAX_DEPTH {
            self.overflow += 1;
            return;
        }
        let top = self.top();
        let (p_hints, p_hidden, p_node, p_link) = (top.hints, top.hidden, top.node, top.link);
        let (own, hidden) = if attrs.is_empty() {
            (0, false)
        } else {
            hints::of_attributes(attrs, &mut self.lower)
        };
        let own = own | hints::of_tag(tag);
        let mut hints = p_hints | own;
        let hidden = p_hidden || hidden || tag == Tag::Skipped;
        let mut node = p_node;
        if tag.is_block() {
            hints = 0;
            let p = &self.tree.nodes[node as usize];
            let depth = p.depth.saturating_add(1);
            self.tree.nodes.push(Node {
                tag,
                parent: node,
                hints: own,
                depth,
                first_block: self.tree.blocks.len() as u32,
            });
            node = (self.tree.nodes.len() - 1) as u32;
        }
        let link = p_link || tag == Tag::A;
        if name.eq_ignore_ascii_case("title") && self.tree.title.is_none() {
            self.in_title = true;
        }
        self.stack.push(Open {
            tag,
            name,
            node,
            hints,
            hidden,
            link,
        });
    }

    /// The closes HTML implies when `tag` starts.
    fn implied_closes(&mut self, tag: Tag) {
        let (targets, stops): (&[Tag], &[Tag]) = match tag {
            Tag::Li => (
                &[Tag::Li],
                &[Tag::Ul, Tag::Ol, Tag::Menu, Tag::Table, Tag::Body],
            ),
            Tag::Dd | Tag::Dt => (&[Tag::Dd, Tag::Dt], &[Tag::Dl, Tag::Table, Tag::Body]),
            Tag::Td | Tag::Th => (&[Tag::Td, Tag::Th], &[Tag::Tr, Tag::Table]),
            Tag::Tr => (
                &[Tag::Tr],
                &[Tag::Table, Tag::Tbody, Tag::Thead, Tag::Tfoot],
            ),
            Tag::A => (&[Tag::A], &[Tag::Td, Tag::Th, Tag::Table, Tag::Body]),
            t if t.closes_p() => (&[Tag::P], &[Tag::Td, Tag::Th, Tag::Table, Tag::Body]),
            _ => return,
        };
        if let Some(i) = self.find(targets, stops) {
            self.pop_to(i);
        }
        // A heading directly inside a heading closes it.
        if let (Tag::H(_), Tag::H(_)) = (tag, self.top().tag) {
            self.pop_to(self.stack.len() - 1);
        }
    }

    /// The stack index of the innermost element among `targets`, not looking past `stops`.
    fn find(&self, targets: &[Tag], stops: &[Tag]) -> Option<usize> {
        for (i, open) in self.stack.iter().enumerate().skip(1).rev() {
            if targets.contains(&open.tag) {
                return Some(i);
            }
            if stops.contains(&open.tag) {
                return None;
            }
        }
        None
    }

    fn end(&mut self, name: &str) {
        let tag = Tag::of(name);
        self.in_title = false;
        if tag == Tag::Br {
            return self.line_break();
        }
        if self.overflow > 0 {
            self.overflow -= 1;
            return;
        }
        // Text after `</body>` or `</html>` is still the body's, as browsers read it.
        if matches!(tag, Tag::Html | Tag::Body) {
            return;
        }
        let named = matches!(tag, Tag::Other | Tag::Skipped | Tag::Void);
        for i in (1..self.stack.len()).rev() {
            let open = &self.stack[i];
            if open.tag == tag && (!named || open.name.eq_ignore_ascii_case(name)) {
                return self.pop_to(i);
            }
            if !tag.is_block() && open.tag.is_block() {
                break;
            }
        }
        // A stray `</p>` makes an empty paragraph: it still ends the text before it.
        if tag == Tag::P {
            self.flush();
        }
    }

    /// Closes the elements from the top of the stack down to index `i`.
    fn pop_to(&mut self, i: usize) {
        while self.stack.len() > i {
            // The text so far is the element's: flushed while it is still open.
            if self.top().tag.is_block() {
                self.flush();
            }
            let Some(open) = self.stack.pop() else { break };
            if open.tag.is_block() {
                let node = open.node as usize;
                // Nodes after it are its descendants: none holds text either.
                if self.tree.nodes[node].first_block as usize == self.tree.blocks.len() {
                    self.tree.nodes.truncate(node);
                }
            }
        }
    }

    fn line_break(&mut self) {
        self.brs += 1;
        if self.brs >= 2 {
            self.flush();
        } else if !self.text.is_empty() {
            self.text.push('\n');
            self.last_space = true;
        }
    }

    fn text(&mut self, raw: &str, offset: usize) {
        let top = self.top();
        if self.in_title {
            let mut title = String::new();
            push_decoded(&mut title, raw);
            self.tree.title = Some(title.split_whitespace().collect::<Vec<_>>().join(" "));
            return;
        }
        if top.hidden {
            return;
        }
        let (link, hints) = (top.link, top.hints);
        let decoded: &str = if raw.contains('&') {
            self.scratch.clear();
            push_decoded(&mut self.scratch, raw);
            &self.scratch
        } else {
            raw
        };
        let mut chars = 0u32;
        for c in decoded.chars() {
            if c.is_whitespace() {
                if !self.last_space {
                    self.text.push(' ');
                    self.last_space = true;
                }
            } else {
                self.text.push(c);
                self.last_space = false;
                chars += 1;
            }
        }
        if chars > 0 {
            if self.chars == 0 {
                self.offset = offset as u32;
            }
            self.brs = 0;
            self.chars += chars;
            self.hints |= hints;
            if link {
                self.link_chars += chars;
            }
        }
    }

    /// Ends the current block: kept when it has a letter or digit.
    fn flush(&mut self) {
        self.brs = 0;
        self.last_space = true;
        let keep = self.text.chars().any(char::is_alphanumeric);
        if !keep {
            self.text.clear();
            self.chars = 0;
            self.link_chars = 0;
            self.hints = 0;
            return;
        }
        let text = self.text.trim_end().to_owned();
        self.text.clear();
        if self.tree.blocks.len() >= MAX_BLOCKS {
            if let Some(last) = self.tree.blocks.last_mut() {
                last.text.push('\n');
                last.text.push_str(&text);
                last.chars += self.chars;
                last.link_chars += self.link_chars;
            }
        } else {
            let block = self.block(text);
            self.tree.blocks.push(block);
        }
        self.chars = 0;
        self.link_chars = 0;
        self.hints = 0;
    }

    fn block(&self, text: String) -> Block {
        let top = self.top();
        let node = top.node;
        let mut heading = 0;
        let mut path: Vec<&str> = Vec::with_capacity(PATH_LEN);
        let mut n = node;
        while n != NONE && path.len() < PATH_LEN {
            let nd = &self.tree.nodes[n as usize];
            if let (Tag::H(level), 0) = (nd.tag, heading) {
                heading = level;
            }
            path.push(nd.tag.name());
            n = nd.parent;
        }
        path.reverse();
        Block {
            text,
            path: path.join(">"),
            heading,
            position: self.tree.blocks.len() as u32,
            offset: self.offset,
            chars: self.chars,
            link_chars: self.link_chars,
            weight: 0.0,
            node,
            tag: self.tree.nodes[node as usize].tag,
            hints: self.hints | top.hints,
        }
    }
}
