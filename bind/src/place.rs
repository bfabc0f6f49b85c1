//! Where a bound phrase is in a block's text, for the operator (`yacobot bindings URL`): the
//! bytes of its first occurrence, found as the binders find it (its stems word after word,
//! within one sentence, not across a link), and a short snippet of the text around them.

use std::ops::Range;

use focuser_multidoc::tokenize::Tokenizer;

/// The bytes of the first occurrence of the phrase of `stems` in `text`; `None` if it is not
/// there (or `stems` is empty).
pub fn locate(tokenizer: &mut Tokenizer, text: &str, stems: &[&str]) -> Option<Range<usize>> {
    // Each kept word: its stem, its bytes, and whether a phrase may run on into it.
    let mut words: Vec<(String, Range<usize>, bool)> = Vec::new();
    let mut first = true;
    tokenizer.stems(text, |w| {
        let joined = !first && !w.sentence_start && !w.link;
        first = false;
        if !w.link {
            words.push((w.text.to_owned(), w.start..w.end, joined));
        }
    });
    let n = stems.len();
    if n == 0 || n > words.len() {
        return None;
    }
    words.windows(n).find_map(|run| {
        let fits = run
            .iter()
            .zip(stems)
            .enumerate()
            .all(|(k, ((stem, _, joined), want))| stem == want && (k == 0 || *joined));
        let (first, last) = (run.first()?, run.last()?);
        fits.then_some(first.1.start..last.1.end)
    })
}

/// `text` around `at` on one line: at most `around` characters either side, `…` where it is
/// cut, the phrase itself in `[ ]`, white space (tabs, new lines) as single spaces.
pub fn snippet(text: &str, at: Range<usize>, around: usize) -> String {
    let (Some(before), Some(found), Some(after)) = (
        text.get(..at.start),
        text.get(at.clone()),
        text.get(at.end..),
    ) else {
        return String::new();
    };
    let cut_before = before.chars().count() > around;
    let before: String = {
        let mut b: Vec<char> = before.chars().rev().take(around).collect();
        b.reverse();
        b.into_iter().collect()
    };
    let cut_after = after.chars().count() > around;
    let after: String = after.chars().take(around).collect();
    let line = format!(
        "{}{}[{}]{}{}",
        if cut_before { "…" } else { "" },
        before,
        found,
        after,
        if cut_after { "…" } else { "" }
    );
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(t: &mut Tokenizer, phrase: &str) -> Vec<String> {
        let mut out = Vec::new();
        t.stems(phrase, |w| out.push(w.text.to_owned()));
        out
    }

    fn find(text: &str, phrase: &str) -> Option<String> {
        let mut t = Tokenizer::default();
        let s = stems(&mut t, phrase);
        let s: Vec<&str> = s.iter().map(String::as_str).collect();
        locate(&mut t, text, &s).map(|r| text[r].to_owned())
    }

    #[test]
    fn a_phrase_is_found_on_its_stems_at_its_first_occurrence() {
        let text = "We sell Phone Cases here. Every phone case is cheap.";
        assert_eq!(find(text, "phone case").as_deref(), Some("Phone Cases"));
        assert_eq!(
            find("Страхование от теракта дорого.", "страхование от теракта").as_deref(),
            Some("Страхование от теракта")
        );
    }

    #[test]
    fn a_phrase_does_not_run_across_a_sentence_or_miss_a_word() {
        assert_eq!(find("Buy a phone. Case closed.", "phone case"), None);
        assert_eq!(find("a phone with a red case", "phone case"), None);
        // Stop words are no words of a phrase, for the binders neither.
        assert_eq!(
            find("a phone and a case", "phone case").as_deref(),
            Some("phone and a case")
        );
        assert_eq!(find("phone", "phone case"), None);
        assert_eq!(find("phone case", ""), None);
    }

    #[test]
    fn a_snippet_is_cut_on_characters_with_the_phrase_marked() {
        let text = "Здравствуйте,\tмир телефонов и чехлов";
        let at = text.find("мир").unwrap_or(0);
        assert_eq!(
            snippet(text, at..at + "мир".len(), 6),
            "…уйте, [мир] телеф…"
        );
        assert_eq!(snippet("a phone case", 2..7, 40), "a [phone] case");
        assert_eq!(snippet("abc", 2..9, 4), "");
    }
}
