//! Phrases as sequences of stem ids, and where they occur in a page's words: the matcher every
//! dictionary and the tragic lexicon compile into.
//!
//! Stems get ids in their sorted order, and phrases are kept sorted by their id sequences, so
//! that the phrases starting with one stem are one range (`first`), and within it those going
//! on with a given second stem are a sub-range found by binary search, and so on: a trie laid
//! out flat (an n-gram index), with no pointers. A page's words are looked up once (stem → id,
//! [`NONE`] for a stem no phrase has), then every position walks the ranges as deep as the
//! page's words agree. bench-bind measures it against Aho-Corasick over the phrases' surface
//! text (bench/README.md): a third of the memory for 200 000 phrases.

use rustc_hash::FxHashMap;

/// The id of a page word no phrase has, and of a break (a sentence's end, a link): no phrase
/// matches across it.
pub const NONE: u32 = u32::MAX;

/// Phrases (stem sequences) made searchable.
#[derive(Debug, Default)]
pub struct PhraseIndex {
    vocab: FxHashMap<Box<str>, u32>,
    /// The stems by id (sorted).
    stems: Vec<Box<str>>,
    /// Phrases whose first stem is `s`: `first[s]..first[s + 1]`.
    first: Vec<u32>,
    /// Phrase `p`'s stem ids: `seq[start[p]..start[p + 1]]`.
    seq: Vec<u32>,
    start: Vec<u32>,
}

/// Collects phrases, then sorts them into a [`PhraseIndex`].
#[derive(Debug, Default)]
pub struct Builder {
    vocab: FxHashMap<Box<str>, u32>,
    seq: Vec<u32>,
    start: Vec<u32>,
}

/// A built index, with what building it found out.
#[derive(Debug)]
pub struct Built {
    pub index: PhraseIndex,
    /// `order[p]` is the phrase added `order[p]`-th, for phrase `p` of the index.
    pub order: Vec<u32>,
    /// For each stem id, how many phrases have it (once per phrase).
    pub df: Vec<u32>,
}

impl Builder {
    pub fn new() -> Self {
        Self {
            start: vec![0],
            ..Self::default()
        }
    }

    /// Adds a phrase (its stems, in order); returns its number in the order of adding.
    pub fn add<'a>(&mut self, stems: impl IntoIterator<Item = &'a str>) -> u32 {
        for s in stems {
            let next = self.vocab.len() as u32;
            let id = *self.vocab.entry(s.into()).or_insert(next);
            self.seq.push(id);
        }
        self.start.push(self.seq.len() as u32);
        (self.start.len() - 2) as u32
    }

    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn build(self) -> Built {
        let Builder {
            vocab,
            mut seq,
            start,
        } = self;
        // Ids in the stems' sorted order: the same phrases give the same index whatever
        // order they came in.
        let mut stems: Vec<(Box<str>, u32)> = vocab.into_iter().collect();
        stems.sort_unstable();
        let mut renumber = vec![0u32; stems.len()];
        for (new, (_, old)) in stems.iter().enumerate() {
            renumber[*old as usize] = new as u32;
        }
        for id in &mut seq {
            *id = renumber[*id as usize];
        }
        let n = start.len() - 1;
        let range = |p: usize| start[p] as usize..start[p + 1] as usize;
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by(|&a, &b| seq[range(a as usize)].cmp(&seq[range(b as usize)]));
        let mut sorted_seq = Vec::with_capacity(seq.len());
        let mut sorted_start = Vec::with_capacity(n + 1);
        sorted_start.push(0u32);
        let mut df = vec![0u32; stems.len()];
        let mut first = vec![0u32; stems.len() + 1];
        let mut seen: Vec<u32> = Vec::new();
        for &p in &order {
            let ids = &seq[range(p as usize)];
            sorted_seq.extend_from_slice(ids);
            sorted_start.push(sorted_seq.len() as u32);
            if let Some(&f) = ids.first() {
                first[f as usize + 1] += 1;
            }
            seen.clear();
            seen.extend_from_slice(ids);
            seen.sort_unstable();
            seen.dedup();
            for &s in &seen {
                df[s as usize] += 1;
            }
        }
        for s in 0..stems.len() {
            first[s + 1] += first[s];
        }
        let stems: Vec<Box<str>> = stems.into_iter().map(|(s, _)| s).collect();
        let vocab = stems
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        sorted_seq.shrink_to_fit();
        Built {
            index: PhraseIndex {
                vocab,
                stems,
                first,
                seq: sorted_seq,
                start: sorted_start,
            },
            order,
            df,
        }
    }
}

impl PhraseIndex {
    /// The id of a stem, [`NONE`] when no phrase has it.
    pub fn id(&self, stem: &str) -> u32 {
        self.vocab.get(stem).copied().unwrap_or(NONE)
    }

    pub fn stem(&self, id: u32) -> &str {
        self.stems.get(id as usize).map_or("", |s| s)
    }

    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn stem_count(&self) -> usize {
        self.stems.len()
    }

    /// Phrase `p`'s stem ids.
    pub fn phrase(&self, p: u32) -> &[u32] {
        let (Some(&a), Some(&b)) = (self.start.get(p as usize), self.start.get(p as usize + 1))
        else {
            return &[];
        };
        self.seq.get(a as usize..b as usize).unwrap_or(&[])
    }

    /// Every occurrence of every phrase in `ids` (a page's words as stem ids, [`NONE`] where
    /// no phrase can go on): `f(phrase, position of its first word)`, by position, shorter
    /// phrases first.
    pub fn find(&self, ids: &[u32], mut f: impl FnMut(u32, usize)) {
        for at in 0..ids.len() {
            let s = ids[at];
            let (Some(&lo), Some(&hi)) =
                (self.first.get(s as usize), self.first.get(s as usize + 1))
            else {
                continue;
            };
            self.walk(ids, at, lo as usize..hi as usize, &mut f);
        }
    }

    /// The phrases in `range` (all starting with `ids[at]`) that the words from `at` spell.
    fn walk(
        &self,
        ids: &[u32],
        at: usize,
        mut range: std::ops::Range<usize>,
        f: &mut impl FnMut(u32, usize),
    ) {
        let mut depth = 1;
        while !range.is_empty() {
            // The phrases of exactly `depth` stems sort first in the range: all matched.
            while range.start < range.end && self.phrase_len(range.start) == depth {
                f(range.start as u32, at);
                range.start += 1;
            }
            let next = match ids.get(at + depth) {
                Some(&s) if s != NONE => s,
                _ => return,
            };
            // The rest have more than `depth` stems, sorted by their stem at `depth`.
            let slice = range.start..range.end;
            let lo = range.start + self.partition(slice.clone(), depth, |x| x < next);
            let hi = range.start + self.partition(slice, depth, |x| x <= next);
            range = lo..hi;
            depth += 1;
        }
    }

    fn phrase_len(&self, p: usize) -> usize {
        (self.start[p + 1] - self.start[p]) as usize
    }

    /// The number of phrases in `range` whose stem at `depth` satisfies `pred` (a prefix of the
    /// range, which is sorted by that stem).
    fn partition(
        &self,
        range: std::ops::Range<usize>,
        depth: usize,
        pred: impl Fn(u32) -> bool,
    ) -> usize {
        let (mut lo, mut hi) = (0usize, range.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let p = range.start + mid;
            let s = self.seq[self.start[p] as usize + depth];
            if pred(s) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes of memory held (capacities, and an estimate of the hash table's).
    pub fn heap_bytes(&self) -> usize {
        let stems: usize = self.stems.iter().map(|s| s.len()).sum();
        // Each stem's text twice (the table and the list), a table slot of a pointer, a length
        // and an id with hashbrown's control byte, and the list's pointers.
        stems * 2
            + self.vocab.capacity() * (16 + 4 + 4 + 1)
            + self.stems.capacity() * 16
            + (self.first.capacity() + self.seq.capacity() + self.start.capacity()) * 4
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn index(phrases: &[&str]) -> Built {
        let mut b = Builder::new();
        for p in phrases {
            b.add(p.split(' '));
        }
        b.build()
    }

    fn found(built: &Built, phrases: &[&str], page: &str) -> Vec<(String, usize)> {
        let ids: Vec<u32> = page
            .split(' ')
            .map(|w| if w == "|" { NONE } else { built.index.id(w) })
            .collect();
        let mut out = Vec::new();
        built.index.find(&ids, |p, at| {
            out.push((phrases[built.order[p as usize] as usize].to_owned(), at))
        });
        out
    }

    #[test]
    fn every_occurrence_of_every_phrase_is_found_nested_and_overlapping_ones_too() {
        let phrases = [
            "iphon",
            "купить iphon",
            "купить iphon 15",
            "iphon 15 pro",
            "pro",
            "red wine",
            "wine",
        ];
        let b = index(&phrases);
        assert_eq!(
            found(&b, &phrases, "где купить iphon 15 pro red | wine"),
            [
                ("купить iphon".to_owned(), 1),
                ("купить iphon 15".to_owned(), 1),
                ("iphon".to_owned(), 2),
                ("iphon 15 pro".to_owned(), 2),
                ("pro".to_owned(), 4),
                ("wine".to_owned(), 7),
            ]
        );
        // The break stops "red wine"; without it, it is found.
        assert!(found(&b, &phrases, "red wine").contains(&("red wine".to_owned(), 0)));
        assert!(found(&b, &phrases, "").is_empty());
    }

    #[test]
    fn the_index_is_the_same_whatever_order_phrases_come_in() {
        let a = index(&["b c", "a", "a b"]);
        let b = index(&["a b", "b c", "a"]);
        let seqs = |x: &Built| -> Vec<Vec<u32>> {
            (0..x.index.len() as u32)
                .map(|p| x.index.phrase(p).to_vec())
                .collect()
        };
        assert_eq!(seqs(&a), seqs(&b));
        assert_eq!(a.df, [2, 2, 1]);
        assert_eq!(a.index.stem(a.index.id("b")), "b");
        assert_eq!(a.index.id("zzz"), NONE);
    }

    #[test]
    fn a_long_random_page_finds_what_a_naive_scan_finds() {
        // Phrases and pages over a small alphabet, so that prefixes are shared a lot.
        let mut x = 12345u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let words = ["a", "b", "c", "d", "e"];
        let mut phrases: Vec<String> = Vec::new();
        for _ in 0..300 {
            let len = 1 + rnd(4) as usize;
            let p: Vec<&str> = (0..len).map(|_| words[rnd(5) as usize]).collect();
            let p = p.join(" ");
            if !phrases.contains(&p) {
                phrases.push(p);
            }
        }
        let refs: Vec<&str> = phrases.iter().map(String::as_str).collect();
        let b = index(&refs);
        let page: Vec<&str> = (0..500).map(|_| words[rnd(5) as usize]).collect();
        let mut got = found(&b, &refs, &page.join(" "));
        let mut want = Vec::new();
        for at in 0..page.len() {
            for p in &phrases {
                let w: Vec<&str> = p.split(' ').collect();
                if page.get(at..at + w.len()) == Some(&w[..]) {
                    want.push((p.clone(), at));
                }
            }
        }
        got.sort();
        want.sort();
        assert_eq!(got, want);
    }
}
