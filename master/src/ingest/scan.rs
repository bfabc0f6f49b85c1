//! The lines of a block of reflog text and the tabs of each, found 64 bytes at a time.
//!
//! For every 64-byte chunk three bit masks are computed at once (AVX2 where the processor has
//! it): its tabs, its newlines and its bytes of 128 or more. Lines and fields are then read
//! off the set bits, and a line with no byte of 128 or more is ASCII, so valid UTF-8 without
//! another look. Searching each line for its newline and then each field for its tab costs a
//! call and a partial vector per field; this looks at every byte once.

/// How many tabs of a line are kept: a good line has six (seven fields) or five.
pub const TABS: usize = 6;

/// One line of a block: `[start, end)` without its `\n`, the places of its first tabs
/// (relative to `start`; those past `n_tabs` mean nothing), how many tabs it has, and whether
/// it is ASCII.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    pub start: usize,
    pub end: usize,
    pub tabs: [u32; TABS],
    pub n_tabs: usize,
    ascii: bool,
}

/// A line as [`lines`] hands it over: its place and tabs, and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Scanned<'a> {
    pub at: Line,
    pub bytes: &'a [u8],
}

impl<'a> Scanned<'a> {
    pub fn ascii(&self) -> bool {
        self.at.ascii
    }

    /// Bytes `range` of the line as text, if they are UTF-8; those of an ASCII line are,
    /// and are not looked at again.
    pub fn str(&self, range: std::ops::Range<usize>) -> Option<&'a str> {
        let bytes = self.bytes.get(range)?;
        if self.at.ascii {
            debug_assert!(bytes.is_ascii());
            // SAFETY: `ascii` is set by `lines` alone, for a line none of whose bytes has its
            // high bit set (property-tested against `is_ascii`); ASCII is UTF-8.
            #[allow(unsafe_code)]
            return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        std::str::from_utf8(bytes).ok()
    }
}

/// Masks of one 64-byte chunk: bit `i` stands for byte `i`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Masks {
    tabs: u64,
    newlines: u64,
    high: u64,
}

/// Chunks whose masks are computed per call (32 KiB of text): their masks stay in the cache
/// until the lines are read off them.
const CHUNKS_PER_STEP: usize = 512;

/// Calls `f` with each line of `text`, in order: every line ended by a `\n`, and what follows
/// the last one as a line of its own if it is not empty. Stops at `f`'s first error.
pub fn lines<'a, E>(
    text: &'a [u8],
    mut f: impl FnMut(Scanned<'a>) -> Result<(), E>,
) -> Result<(), E> {
    let mut masks = [Masks::default(); CHUNKS_PER_STEP];
    let mut line = Line {
        start: 0,
        end: 0,
        tabs: [0; TABS],
        n_tabs: 0,
        ascii: true,
    };
    let mut base = 0;
    while base < text.len() {
        let step = &text[base..text.len().min(base + 64 * CHUNKS_PER_STEP)];
        let n = compute(step, &mut masks);
        for (c, m) in masks[..n].iter().enumerate() {
            let at = base + 64 * c;
            // High bytes of the current line in this chunk: from its start on.
            let from = line.start.saturating_sub(at).min(64);
            let mut high = if from == 64 {
                0
            } else {
                m.high >> from << from
            };
            let mut bits = m.tabs | m.newlines;
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let pos = at + b as usize;
                if m.newlines >> b & 1 == 1 {
                    let before = high & ((1u64 << b) - 1);
                    line.end = pos;
                    line.ascii &= before == 0;
                    f(Scanned {
                        at: line,
                        bytes: &text[line.start..line.end],
                    })?;
                    line.start = pos + 1;
                    line.n_tabs = 0;
                    line.ascii = true;
                    high = if b == 63 {
                        0
                    } else {
                        high >> (b + 1) << (b + 1)
                    };
                } else {
                    if let Some(t) = line.tabs.get_mut(line.n_tabs) {
                        *t = (pos - line.start) as u32;
                    }
                    line.n_tabs += 1;
                }
            }
            line.ascii &= high == 0;
        }
        base += step.len();
    }
    if line.start < text.len() {
        line.end = text.len();
        f(Scanned {
            at: line,
            bytes: &text[line.start..],
        })?;
    }
    Ok(())
}

/// The masks of every chunk of `text` (at most [`CHUNKS_PER_STEP`] of them; the last one
/// padded with zeros); returns how many.
fn compute(text: &[u8], out: &mut [Masks; CHUNKS_PER_STEP]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, checked just above (std caches the answer).
        #[allow(unsafe_code)]
        return unsafe { avx2::compute(text, out) };
    }
    portable::compute(text, out)
}

/// Chunk `c` of `text`, padded with zeros past its end.
fn chunk(text: &[u8], c: usize) -> [u8; 64] {
    let mut padded = [0u8; 64];
    let part = &text[64 * c..text.len().min(64 * c + 64)];
    padded[..part.len()].copy_from_slice(part);
    padded
}

mod portable {
    use super::{chunk, Masks, CHUNKS_PER_STEP};

    pub(super) fn compute(text: &[u8], out: &mut [Masks; CHUNKS_PER_STEP]) -> usize {
        let n = text.len().div_ceil(64);
        for (c, m) in out[..n].iter_mut().enumerate() {
            *m = masks(&chunk(text, c));
        }
        n
    }

    pub(super) fn masks(bytes: &[u8; 64]) -> Masks {
        let mut m = Masks::default();
        for (i, &b) in bytes.iter().enumerate() {
            m.tabs |= u64::from(b == b'\t') << i;
            m.newlines |= u64::from(b == b'\n') << i;
            m.high |= u64::from(b >= 0x80) << i;
        }
        m
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8,
    };

    use super::{chunk, Masks, CHUNKS_PER_STEP};

    /// [`super::portable::compute`] with two 32-byte compares per mask.
    #[target_feature(enable = "avx2")]
    pub(super) fn compute(text: &[u8], out: &mut [Masks; CHUNKS_PER_STEP]) -> usize {
        let whole = text.len() / 64;
        for (m, bytes) in out.iter_mut().zip(text.chunks_exact(64)) {
            if let Ok(bytes) = <&[u8; 64]>::try_from(bytes) {
                *m = masks(bytes);
            }
        }
        if text.len().is_multiple_of(64) {
            return whole;
        }
        out[whole] = masks(&chunk(text, whole));
        whole + 1
    }

    #[target_feature(enable = "avx2")]
    fn masks(bytes: &[u8; 64]) -> Masks {
        // SAFETY: both loads read 32 bytes within the 64-byte array; they may be unaligned.
        #[allow(unsafe_code)]
        let (lo, hi): (__m256i, __m256i) = unsafe {
            (
                _mm256_loadu_si256(bytes.as_ptr().cast()),
                _mm256_loadu_si256(bytes.as_ptr().add(32).cast()),
            )
        };
        let tab = _mm256_set1_epi8(b'\t' as i8);
        let newline = _mm256_set1_epi8(b'\n' as i8);
        let bits = |lo: i32, hi: i32| u64::from(lo as u32) | u64::from(hi as u32) << 32;
        Masks {
            tabs: bits(
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, tab)),
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, tab)),
            ),
            newlines: bits(
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, newline)),
                _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, newline)),
            ),
            high: bits(_mm256_movemask_epi8(lo), _mm256_movemask_epi8(hi)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `lines` finds, the plain way.
    fn naive(text: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut pieces: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        if pieces.last().is_some_and(|p| p.is_empty()) {
            pieces.pop();
        }
        for piece in pieces {
            let mut tabs = [0u32; TABS];
            let places: Vec<usize> = piece
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\t')
                .map(|(i, _)| i)
                .collect();
            for (t, &p) in tabs.iter_mut().zip(&places) {
                *t = p as u32;
            }
            out.push(Line {
                start,
                end: start + piece.len(),
                tabs,
                n_tabs: places.len(),
                ascii: piece.is_ascii(),
            });
            start += piece.len() + 1;
        }
        out
    }

    fn found(text: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        lines::<()>(text, |s| {
            // Places past the line's tabs are left over from earlier lines.
            let mut l = s.at;
            l.tabs[l.n_tabs.min(TABS)..].fill(0);
            assert_eq!(s.bytes, &text[l.start..l.end]);
            assert_eq!(s.ascii(), s.bytes.is_ascii());
            assert_eq!(
                s.str(0..s.bytes.len()).is_some(),
                std::str::from_utf8(s.bytes).is_ok()
            );
            out.push(l);
            Ok(())
        })
        .unwrap();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// The same lines, tabs and ASCII verdicts as a plain split, for text of tabs,
        /// newlines, high bytes and others, of any length (chunk and step edges included).
        #[test]
        fn finds_what_a_plain_split_finds(
            text in prop::collection::vec(
                prop_oneof![Just(b'\t'), Just(b'\n'), Just(0x80u8), Just(0xffu8), Just(b'a'), any::<u8>()],
                0..3000,
            ),
            long in 0usize..3,
        ) {
            // Now and then a line longer than a step of chunks.
            let mut text = text;
            if long > 0 {
                text.extend(std::iter::repeat_n(b'x', 64 * CHUNKS_PER_STEP * long + 7));
                text.extend_from_slice(b"\t\xc3\xa9\n");
            }
            prop_assert_eq!(found(&text), naive(&text));
        }
    }

    #[test]
    fn a_line_per_newline_and_the_rest() {
        let text = b"a\tb\n\n\t\t\t\t\t\t\t\tz\ntail";
        let l = found(text);
        assert_eq!(l.len(), 4);
        assert_eq!((l[0].start, l[0].end, l[0].n_tabs), (0, 3, 1));
        assert_eq!((l[1].start, l[1].end, l[1].n_tabs), (4, 4, 0));
        assert_eq!(l[2].n_tabs, 8);
        assert_eq!(l[2].tabs, [0, 1, 2, 3, 4, 5]);
        assert_eq!(&text[l[3].start..l[3].end], b"tail");
        assert!(found(b"").is_empty());
        let mut bytes = [0u8; 64];
        bytes[3] = b'\t';
        bytes[63] = 0xc3;
        let m = portable::masks(&bytes);
        assert_eq!((m.tabs, m.high), (1 << 3, 1 << 63));
    }
}
