//! The near-duplicate fingerprint of a page's main text: a 64-bit SimHash (Charikar) of its
//! word 3-shingles, as Manku, Jain and Das Sarma used for web pages (WWW 2007). Two texts whose
//! fingerprints differ in at most [`NEAR_BITS`] bits are near-duplicates ([`near`]); equal
//! texts have equal fingerprints, so an exact copy is distance 0 (the MD5 of the main text
//! stays the exact test). docs/multidoc.md "simhash" has the threshold and its measurements.
//!
//! Words are Unicode words (UAX #29: a Chinese or Japanese character is a word of its own),
//! lower-cased; each occurrence of three consecutive words adds its XXH3-64 to the sum, bit by
//! bit (+1 where its bit is 1, −1 where 0), and a bit of the fingerprint is 1 where its sum is
//! positive. Shingles rather than single words: a bag of words calls two different articles of
//! one language near (their stop words dominate), three words in a row do not.
//!
//! A text of fewer than [`MIN_WORDS`] words has no near copy: its fingerprint is the XXH3-64 of
//! its words, so it is distance 0 from a text with the same words (case, spacing and
//! punctuation aside) and some 32 bits from any other. Over a few dozen shingles SimHash is too
//! noisy to tell a near copy from a small real change (one word in 50 changed: within 3 bits
//! 8 % of the time), and two short pages that differ (a product's name, a date) must not share
//! a binding.

use unicode_segmentation::UnicodeSegmentation;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

/// Fingerprints at most this many bits apart are near-duplicates. 3, so that the four 16-bit
/// bands of a fingerprint ([`bands`]) find every near pair: two fingerprints 3 bits apart
/// agree on at least one band (pigeonhole).
pub const NEAR_BITS: u32 = 3;

/// Words in a shingle.
const SHINGLE: usize = 3;

/// A text needs this many words to have near copies; a shorter one is near only a text with
/// the same words.
pub const MIN_WORDS: usize = 100;

/// The fingerprint of `text`; `None` when it has no word (an empty main text is nobody's
/// duplicate).
pub fn simhash(text: &str) -> Option<u64> {
    let words: Vec<u64> = text
        .unicode_words()
        .map(|w| xxh3_64(w.to_lowercase().as_bytes()))
        .collect();
    if words.is_empty() {
        return None;
    }
    if words.len() < MIN_WORDS {
        let mut h = Xxh3::new();
        for w in &words {
            h.update(&w.to_le_bytes());
        }
        return Some(h.digest());
    }
    let mut sums = [0i64; 64];
    for shingle in words.windows(SHINGLE) {
        let mut bytes = [0u8; 8 * SHINGLE];
        for (i, w) in shingle.iter().enumerate() {
            bytes[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        let h = xxh3_64(&bytes);
        for (bit, sum) in sums.iter_mut().enumerate() {
            *sum += if h >> bit & 1 == 1 { 1 } else { -1 };
        }
    }
    Some(
        sums.iter()
            .enumerate()
            .filter(|(_, &s)| s > 0)
            .fold(0u64, |acc, (bit, _)| acc | 1 << bit),
    )
}

/// The bits in which two fingerprints differ (Hamming distance, 0–64).
pub fn distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// Whether two fingerprints are near-duplicates: at most [`NEAR_BITS`] apart.
pub fn near(a: u64, b: u64) -> bool {
    distance(a, b) <= NEAR_BITS
}

/// The fingerprint's four 16-bit bands, the high bits first: a near pair agrees on one at
/// least, so an index of the bands finds the candidates of a fingerprint without comparing it
/// with every other.
pub fn bands(h: u64) -> [u16; 4] {
    [
        (h >> 48) as u16,
        (h >> 32) as u16,
        (h >> 16) as u16,
        h as u16,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long text (1 300 words) that hardly repeats itself: sentences whose parts cycle with
    /// different periods (16, 13, 11, 7 words), so that shingles recur no more than in prose.
    fn long_text() -> String {
        let nouns = [
            "harbour", "engine", "market", "river", "teacher", "garden", "council", "bridge",
            "printer", "station", "orchard", "museum", "ferry", "library", "kitchen", "tower",
        ];
        let adjectives = [
            "old", "narrow", "quiet", "busy", "northern", "wooden", "famous", "empty", "small",
            "public", "hidden", "broken", "bright",
        ];
        let verbs = [
            "opened", "repaired", "visited", "painted", "measured", "closed", "moved", "sold",
            "cleaned", "counted", "built",
        ];
        let whom = [
            "volunteers",
            "engineers",
            "pupils",
            "tourists",
            "sailors",
            "bakers",
            "monks",
        ];
        (0..100)
            .map(|i| {
                format!(
                    "The {} {} near the {} was {} in {} by {} {}.",
                    adjectives[i % 13],
                    nouns[i % 16],
                    nouns[(i * 7 + 3) % 16],
                    verbs[i % 11],
                    1900 + i,
                    i % 9 + 2,
                    whom[i % 7]
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn replace_word(text: &str, index: usize, with: &str) -> String {
        let mut words: Vec<&str> = text.split(' ').collect();
        words[index] = with;
        words.join(" ")
    }

    #[test]
    fn an_exact_copy_is_distance_zero() {
        let t = long_text();
        let (a, b) = (simhash(&t), simhash(&t.clone()));
        assert!(a.is_some());
        assert_eq!(a, b);
        // Case and spacing are not the text.
        assert_eq!(simhash(&t.to_uppercase()), a);
        assert_eq!(simhash(&t.replace(' ', "\n  ")), a);
    }

    #[test]
    fn a_few_words_changed_in_a_long_text_is_near() {
        let t = long_text();
        let mut changed = t.clone();
        for (i, w) in [(40, "kettle"), (300, "lantern"), (500, "meadow")] {
            changed = replace_word(&changed, i, w);
        }
        assert_ne!(changed, t);
        let (a, b) = (simhash(&t).unwrap(), simhash(&changed).unwrap());
        assert!(
            near(a, b),
            "3 of {} words changed: {} bits apart",
            t.split(' ').count(),
            distance(a, b)
        );
    }

    #[test]
    fn a_small_real_change_in_a_short_text_is_not_near() {
        let a = "Opening hours: the museum is open on Tuesdays from ten to six, and the \
                 cafe closes an hour earlier on public holidays.";
        let b = a.replace("Tuesdays", "Sundays");
        let c = a.replace("ten to six", "nine to five");
        for other in [b, c] {
            let d = distance(simhash(a).unwrap(), simhash(&other).unwrap());
            assert!(d > 3 * NEAR_BITS, "{other:?}: {d} bits");
        }
        // The same words are the same short text.
        let same = a.to_uppercase().replace(", ", " — ");
        assert_eq!(simhash(&same), simhash(a));
        // Just under the length a near copy needs: one word in 99 is a real change.
        let long = long_text();
        let short = long
            .split(' ')
            .take(MIN_WORDS - 1)
            .collect::<Vec<_>>()
            .join(" ");
        let changed = replace_word(&short, 50, "kettle");
        let d = distance(simhash(&short).unwrap(), simhash(&changed).unwrap());
        assert!(d > 3 * NEAR_BITS, "{d} bits");
    }

    #[test]
    fn different_texts_are_far_apart() {
        let t = long_text();
        let other = "Ferries leave the northern pier every forty minutes in summer; in winter \
                     the timetable thins to four crossings a day and the last boat waits for \
                     the train from the capital when it runs late.";
        let d = distance(simhash(&t).unwrap(), simhash(other).unwrap());
        assert!(d > 3 * NEAR_BITS, "{d} bits");
        let half: String = t.split(' ').take(300).collect::<Vec<_>>().join(" ");
        let d = distance(simhash(&t).unwrap(), simhash(&half).unwrap());
        assert!(d > NEAR_BITS, "half of the text: {d} bits");
    }

    #[test]
    fn no_word_no_fingerprint_and_short_texts_work() {
        assert_eq!(simhash(""), None);
        assert_eq!(simhash(" \n\t — … !!"), None);
        assert!(simhash("word").is_some());
        assert!(simhash("two words").is_some());
        assert_ne!(simhash("one"), simhash("two"));
        // Chinese: each character a word.
        let zh = simhash("北京是中国的首都，也是政治和文化中心。").unwrap();
        let zh2 = simhash("上海是中国最大的城市，也是经济和金融中心。").unwrap();
        assert!(!near(zh, zh2));
    }

    #[test]
    fn bands_cover_every_near_pair() {
        let a = simhash(&long_text()).unwrap();
        for (x, y, z) in [(0, 1, 2), (15, 31, 47), (63, 62, 61), (5, 21, 60)] {
            let b = a ^ (1 << x) ^ (1 << y) ^ (1 << z);
            assert!(near(a, b));
            let shared = bands(a).into_iter().zip(bands(b)).filter(|(p, q)| p == q);
            assert!(shared.count() >= 1);
        }
        assert_eq!(
            bands(0x0123_4567_89ab_cdef),
            [0x0123, 0x4567, 0x89ab, 0xcdef]
        );
        assert_eq!(distance(0, u64::MAX), 64);
    }
}
