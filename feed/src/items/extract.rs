//! The streaming extractor: one pass of quick-xml events, one item's buffers at a time.

use std::io::Read;
use std::ops::ControlFlow;

use quick_xml::events::{BytesStart, Event};

use super::canonical::{self, push_collapsed};
use super::rules::Rules;
use super::stream::{EventTooLong, Tracked};
use super::{ErrorKind, ExtractError, FailReason, FailedKey, Item, Limits, Outcome, Summary};
use crate::encoding::{EncodingError, Utf8Reader};
use crate::xml_text::{push_entity, unescape_into};

/// Reads a feed (`input`, in any encoding; `http_charset` from the response) and hands every
/// item, good or failed, to `sink` in document order. `sink` may return `Break` to stop.
pub fn extract<R: Read>(
    input: R,
    http_charset: Option<&str>,
    rules: &Rules,
    limits: &Limits,
    mut sink: impl FnMut(Outcome<'_>) -> ControlFlow<()>,
) -> Result<Summary, ExtractError> {
    let mut state = State::new(rules, limits);
    let decoded = Utf8Reader::new(input, http_charset).map_err(|e| ExtractError {
        kind: io_error_kind(&e),
        line: 1,
        column: 1,
        items: 0,
        failed: 0,
    })?;
    let encoding = decoded.detected().encoding.name();
    let mut reader = quick_xml::Reader::from_reader(Tracked::new(decoded, limits.max_event_bytes));
    let mut buf = Vec::new();
    let mut seen_element = false;
    loop {
        buf.clear();
        reader.get_mut().next_event();
        let event = match reader.read_event_into(&mut buf) {
            Ok(ev) => ev,
            Err(e) => {
                let (kind, at) = match &e {
                    quick_xml::Error::Io(io) => (io_error_kind(io), reader.buffer_position()),
                    other => (ErrorKind::Xml(other.to_string()), reader.error_position()),
                };
                return Err(state.error(kind, reader.get_ref().line_col(at)));
            }
        };
        let flow = match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                seen_element = true;
                let line = reader.get_ref().line_col(reader.get_ref().event_start()).0;
                state.open(e, line).map_err(|k| {
                    state.error(k, reader.get_ref().line_col(reader.buffer_position()))
                })?;
                if matches!(event, Event::Empty(_)) {
                    state.close(&mut sink)
                } else {
                    ControlFlow::Continue(())
                }
            }
            Event::End(_) => state.close(&mut sink),
            Event::Text(t) => {
                state.text(&t);
                ControlFlow::Continue(())
            }
            Event::CData(t) => {
                state.text(&t);
                ControlFlow::Continue(())
            }
            Event::GeneralRef(r) => {
                let mut s = String::new();
                push_entity(&mut s, &r).map_err(|e| {
                    state.error(
                        ErrorKind::Xml(e.to_string()),
                        reader.get_ref().line_col(reader.buffer_position()),
                    )
                })?;
                state.text(&s);
                ControlFlow::Continue(())
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {
                ControlFlow::Continue(())
            }
        };
        if flow.is_break() {
            state.summary.stopped = !state.summary.capped;
            break;
        }
    }
    let at = reader.get_ref().line_col(reader.buffer_position());
    if !state.summary.stopped && !state.summary.capped {
        if !state.starts.is_empty() {
            let open = state.path();
            return Err(state.error(ErrorKind::Truncated { open }, at));
        }
        if !seen_element {
            return Err(state.error(ErrorKind::NoElement, at));
        }
    }
    state.summary.encoding = encoding;
    Ok(state.summary)
}

fn io_error_kind(e: &std::io::Error) -> ErrorKind {
    if let Some(enc) = EncodingError::from_io(e) {
        return ErrorKind::Encoding(enc.clone());
    }
    match e.get_ref().and_then(|i| i.downcast_ref::<EventTooLong>()) {
        Some(EventTooLong(limit)) => ErrorKind::EventTooLong { limit: *limit },
        None => ErrorKind::Io(e.to_string()),
    }
}

/// A field's value being read: the text of an element, until it closes.
#[derive(Default)]
struct Capture {
    field: usize,
    depth: usize,
    text: String,
    pending_space: bool,
}

struct State<'r> {
    rules: &'r Rules,
    limits: &'r Limits,
    /// The open elements' names, one after another, and where each starts.
    names: String,
    starts: Vec<usize>,
    /// Depth of the item element while inside an item; 0 outside.
    item_depth: usize,
    item: Item,
    fail: Option<FailReason>,
    /// Captures `..active` are open (a stack: they close innermost first); the rest are
    /// spare buffers.
    captures: Vec<Capture>,
    active: usize,
    scratch: String,
    seen: u64,
    summary: Summary,
}

impl<'r> State<'r> {
    fn new(rules: &'r Rules, limits: &'r Limits) -> Self {
        State {
            rules,
            limits,
            names: String::new(),
            starts: Vec::new(),
            item_depth: 0,
            item: Item {
                values: vec![Vec::new(); rules.fields.len()],
                ..Item::default()
            },
            fail: None,
            captures: Vec::new(),
            active: 0,
            scratch: String::new(),
            seen: 0,
            summary: Summary {
                items: 0,
                failed: 0,
                capped: false,
                stopped: false,
                encoding: "",
            },
        }
    }

    fn error(&self, kind: ErrorKind, (line, column): (u64, u64)) -> ExtractError {
        ExtractError {
            kind,
            line,
            column,
            items: self.summary.items,
            failed: self.summary.failed,
        }
    }

    fn name(&self, i: usize) -> &str {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.names.len());
        &self.names[self.starts[i]..end]
    }

    /// The open elements, `rss/channel/item`, at most 200 bytes of it.
    fn path(&self) -> String {
        let mut p = (0..self.starts.len())
            .map(|i| self.name(i))
            .collect::<Vec<_>>()
            .join("/");
        if p.len() > 200 {
            let mut cut = p.len() - 200;
            while !p.is_char_boundary(cut) {
                cut += 1;
            }
            p = format!("…{}", &p[cut..]);
        }
        p
    }

    fn path_ends_with(&self, steps: &[String], from: usize) -> bool {
        let depth = self.starts.len();
        depth >= from + steps.len()
            && steps
                .iter()
                .rev()
                .enumerate()
                .all(|(k, s)| self.name(depth - 1 - k) == s)
    }

    /// A start (or empty) tag: maybe an item begins, maybe fields begin.
    fn open(&mut self, e: &BytesStart<'_>, line: u64) -> Result<(), ErrorKind> {
        if self.starts.len() >= self.limits.max_depth {
            return Err(ErrorKind::TooDeep {
                limit: self.limits.max_depth,
            });
        }
        self.starts.push(self.names.len());
        self.names.push_str(e.name().0);
        let depth = self.starts.len();
        if self.item_depth == 0 {
            let path = &self.rules.item_path;
            let anchored_ok = !self.rules.anchored || depth == path.len();
            if !(anchored_ok && self.path_ends_with(path, 0)) {
                return Ok(());
            }
            self.begin_item(depth, line);
        }
        if self.fail.is_some() {
            return Ok(());
        }
        let rel = depth - self.item_depth;
        for i in 0..self.rules.fields.len() {
            let f = &self.rules.fields[i];
            if f.steps.len() != rel || !self.path_ends_with(&f.steps, self.item_depth) {
                continue;
            }
            match &f.attr {
                Some(attr) => self.attribute(i, e, attr)?,
                None => self.begin_capture(i, depth),
            }
        }
        Ok(())
    }

    fn begin_item(&mut self, depth: usize, line: u64) {
        self.item_depth = depth;
        self.seen += 1;
        self.item.number = self.seen;
        self.item.line = line;
        self.item.arena.clear();
        self.item.values.iter_mut().for_each(Vec::clear);
        self.fail = None;
        self.active = 0;
    }

    fn attribute(&mut self, field: usize, e: &BytesStart<'_>, attr: &str) -> Result<(), ErrorKind> {
        for a in e.attributes() {
            let a = a.map_err(|e| ErrorKind::Xml(e.to_string()))?;
            if a.key.0 == attr {
                let mut raw = std::mem::take(&mut self.scratch);
                raw.clear();
                unescape_into(&mut raw, &a.value).map_err(ErrorKind::Xml)?;
                let mut value = String::with_capacity(raw.len());
                push_collapsed(&mut value, &raw, &mut false);
                self.scratch = raw;
                self.add_value(field, &value);
            }
        }
        Ok(())
    }

    fn begin_capture(&mut self, field: usize, depth: usize) {
        if self.active == self.captures.len() {
            self.captures.push(Capture::default());
        }
        let c = &mut self.captures[self.active];
        c.field = field;
        c.depth = depth;
        c.text.clear();
        c.pending_space = false;
        self.active += 1;
    }

    fn text(&mut self, text: &str) {
        if self.active == 0 {
            return;
        }
        let limit = self.limits.max_field_bytes;
        for c in &mut self.captures[..self.active] {
            push_collapsed(&mut c.text, text, &mut c.pending_space);
            if c.text.len() > limit {
                let label = self.rules.fields[c.field].rule.label_name.clone();
                self.fail = Some(FailReason::FieldTooLong { label, limit });
                self.active = 0;
                return;
            }
        }
    }

    fn add_value(&mut self, field: usize, value: &str) {
        if value.is_empty() || self.fail.is_some() {
            return;
        }
        let limit = self.limits.max_item_bytes;
        if self.item.arena.len() + value.len() > limit {
            self.fail = Some(FailReason::ItemTooLarge { limit });
            self.active = 0;
            return;
        }
        let start = self.item.arena.len() as u32;
        self.item.arena.push_str(value);
        self.item.values[field].push((start, self.item.arena.len() as u32));
    }

    /// An end (or empty) tag: fields and maybe the item end.
    fn close(&mut self, sink: &mut impl FnMut(Outcome<'_>) -> ControlFlow<()>) -> ControlFlow<()> {
        let depth = self.starts.len();
        while self.active > 0 && self.captures[self.active - 1].depth == depth {
            self.active -= 1;
            let mut c = std::mem::take(&mut self.captures[self.active]);
            self.add_value(c.field, &c.text);
            c.text.clear();
            self.captures[self.active] = c;
        }
        if let Some(start) = self.starts.pop() {
            self.names.truncate(start);
        }
        if depth != self.item_depth || depth == 0 {
            return ControlFlow::Continue(());
        }
        self.item_depth = 0;
        self.active = 0;
        let flow = self.finish_item(sink);
        let max = self.limits.max_items;
        if max > 0 && self.summary.items + self.summary.failed >= max {
            self.summary.capped = true;
            return ControlFlow::Break(());
        }
        flow
    }

    fn finish_item(
        &mut self,
        sink: &mut impl FnMut(Outcome<'_>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let rules = self.rules;
        let key_field = &rules.fields[rules.key];
        let key = self.item.values[rules.key].first().copied();
        let reason = self.fail.take().or_else(|| {
            let (a, b) = key?;
            let chars = self.item.arena[a as usize..b as usize].chars().count();
            if chars > self.limits.max_key_chars {
                return Some(FailReason::KeyTooLong {
                    chars,
                    limit: self.limits.max_key_chars,
                });
            }
            rules
                .fields
                .iter()
                .zip(&self.item.values)
                .find(|(f, v)| f.rule.is_required && v.is_empty())
                .map(|(f, _)| FailReason::MissingRequired {
                    label: f.rule.label_name.clone(),
                })
        });
        let reason = match (key, reason) {
            (None, None) => Some(FailReason::NoKey {
                label: key_field.rule.label_name.clone(),
            }),
            (_, r) => r,
        };
        if let Some(reason) = reason {
            self.summary.failed += 1;
            let failed = FailedKey {
                number: self.item.number,
                line: self.item.line,
                key: key
                    .filter(|_| !matches!(reason, FailReason::KeyTooLong { .. }))
                    .map(|(a, b)| self.item.arena[a as usize..b as usize].to_string()),
                reason,
            };
            return sink(Outcome::Failed(&failed));
        }
        let item = &mut self.item;
        item.key = key.unwrap_or_default();
        let values = &item.values;
        let key_str = &item.arena[item.key.0 as usize..item.key.1 as usize];
        canonical::write(
            &mut item.canonical,
            key_str,
            &rules.fields,
            |i| &values[i],
            &item.arena,
        );
        item.digest = canonical::digest(&item.canonical);
        self.summary.items += 1;
        sink(Outcome::Item(&self.item))
    }
}
