//! `pattern` rules: a glob over the whole URL where `*` stands for any run of characters (none
//! included) and every other character for itself. Matched without backtracking: the pieces
//! between the stars are found left to right, each at its first place after the last, which
//! is enough when `*` is the only wildcard.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    /// The pattern cut at its stars (empty pieces where stars follow each other or end it).
    pieces: Vec<String>,
}

impl Glob {
    pub fn new(pattern: &str) -> Result<Glob, String> {
        if pattern.is_empty() || pattern.chars().all(|c| c == '*') {
            return Err("a pattern of stars only would exclude every URL: use no rule".into());
        }
        Ok(Glob {
            pieces: pattern.split('*').map(str::to_string).collect(),
        })
    }

    pub fn matches(&self, text: &str) -> bool {
        let Some((first, rest)) = self.pieces.split_first() else {
            return false;
        };
        let Some(mut text) = text.strip_prefix(first.as_str()) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            // No star: the whole text is the first piece.
            return text.is_empty();
        };
        for piece in middle {
            match text.find(piece.as_str()) {
                Some(at) => text = &text[at + piece.len()..],
                None => return false,
            }
        }
        text.len() >= last.len() && text.ends_with(last.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::Glob;

    fn m(pattern: &str, text: &str) -> bool {
        Glob::new(pattern).unwrap().matches(text)
    }

    #[test]
    fn stars_match_any_run_and_the_rest_is_literal() {
        assert!(m("http://a.ru/x", "http://a.ru/x"));
        assert!(!m("http://a.ru/x", "http://a.ru/xy"));
        assert!(m("*sid=*", "http://a.ru/p?sid=1"));
        assert!(m("*sid=*", "sid="));
        assert!(!m("*sid=*", "http://a.ru/p?id=1"));
        assert!(m("http://*.ru/*.pdf", "http://a.b.ru/x/y.pdf"));
        assert!(!m("http://*.ru/*.pdf", "http://a.b.ru/x/y.pdfx"));
        assert!(m("*a*a", "aa"));
        assert!(!m("*a*a", "a"));
        // `?` is not a wildcard: it matches itself.
        assert!(!m("http://a.ru/?", "http://a.ru/x"));
        assert!(m("*/?*", "http://a.ru/?q"));
        assert!(m("**x", "x"));
        assert!(Glob::new("**").is_err() && Glob::new("").is_err());
    }

    /// The greedy search agrees with a plain backtracking matcher.
    #[test]
    fn agrees_with_backtracking() {
        fn slow(p: &[u8], t: &[u8]) -> bool {
            match p.split_first() {
                None => t.is_empty(),
                Some((b'*', rest)) => (0..=t.len()).any(|i| slow(rest, &t[i..])),
                Some((c, rest)) => t.first() == Some(c) && slow(rest, &t[1..]),
            }
        }
        let alphabet = ["a", "b", "*"];
        let texts = ["", "a", "b", "ab", "ba", "aab", "abab", "bbaa", "aba"];
        let mut patterns = vec![String::new()];
        for _ in 0..4 {
            let next: Vec<String> = patterns
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            patterns.extend(next);
        }
        for p in &patterns {
            let Ok(g) = Glob::new(p) else { continue };
            for t in texts {
                assert_eq!(g.matches(t), slow(p.as_bytes(), t.as_bytes()), "{p} {t}");
            }
        }
    }
}
