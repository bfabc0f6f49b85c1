//! What a block's text itself says: words, stop words (jusText's main signal: running prose is
//! full of them, menus and link lists are not), punctuation, boilerplate phrases.

/// Frequent English and Russian function words, sorted for a binary search.
#[rustfmt::skip]
const STOP: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "more",
    "most", "my", "no", "not", "of", "on", "one", "only", "or", "other", "our", "out", "over",
    "she", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "through", "to", "under", "up", "us", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "will", "with", "would", "you", "your", "а", "без",
    "бы", "был", "была", "были", "было", "быть", "в", "вам", "вас", "во", "вот", "все", "всё",
    "вы", "где", "да", "для", "до", "его", "ее", "если", "есть", "еще", "ещё", "её", "же", "за",
    "и", "из", "или", "им", "их", "к", "как", "когда", "которые", "который", "ли", "меня", "мы",
    "на", "над", "не", "него", "нет", "ни", "но", "о", "об", "он", "она", "они", "оно", "от", "по",
    "под", "после", "при", "с", "со", "так", "также", "такой", "там", "то", "того", "тоже",
    "только", "у", "уже", "чем", "что", "чтобы", "это", "этого", "этот", "я",
];

/// Phrases of page furniture, lower case (a block is often just one of them).
const BOILERPLATE: &[&str] = &[
    "all rights reserved",
    "copyright",
    "©",
    "privacy policy",
    "terms of use",
    "terms of service",
    "cookie",
    "subscribe",
    "newsletter",
    "sign up",
    "log in",
    "follow us",
    "share this",
    "read more",
    "related articles",
    "advertisement",
    "click here",
    "more from",
    "most popular",
    "most read",
    "you may also like",
    "recommended",
    "sponsored",
    "see also",
    "latest news",
    "все права защищены",
    "подпис",
    "реклама",
    "читайте также",
    "комментар",
    "поделит",
    "по теме",
    "все материалы",
    "лента новостей",
    "оцените",
    "ваше мнение",
    "самое читаемое",
    "популярное",
    "новости партн",
];

/// Counts over a block's text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TextStats {
    pub words: u32,
    pub stop_words: u32,
    /// `.`, `,`, `;`, `:`, `!`, `?` and their CJK forms.
    pub punctuation: u32,
    pub commas: u32,
    pub digits: u32,
    pub ends_sentence: bool,
    pub boilerplate: bool,
    pub starts_upper: bool,
    /// Share of the letters that are upper case.
    pub upper: f32,
}

pub fn stats(text: &str, lower: &mut String) -> TextStats {
    let mut s = TextStats::default();
    let (mut letters, mut uppers) = (0u32, 0u32);
    for c in text.chars() {
        match c {
            '.' | ';' | ':' | '!' | '?' | '。' | '！' | '？' | '；' => s.punctuation += 1,
            ',' | '，' | '、' => {
                s.punctuation += 1;
                s.commas += 1;
            }
            c if c.is_numeric() => s.digits += 1,
            c if c.is_alphabetic() => {
                letters += 1;
                uppers += u32::from(c.is_uppercase());
            }
            _ => {}
        }
    }
    s.upper = if letters > 0 {
        uppers as f32 / letters as f32
    } else {
        0.0
    };
    s.starts_upper = text
        .chars()
        .find(|c| c.is_alphanumeric())
        .is_some_and(char::is_uppercase);
    s.ends_sentence = text
        .trim_end()
        .ends_with(['.', '!', '?', '"', '”', '»', '。', '！', '？', ')', ':']);
    // Word by word, lower-cased in a small buffer: a block is not copied whole.
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        s.words += 1;
        if w.len() <= 14 {
            lower.clear();
            lower.extend(w.chars().flat_map(char::to_lowercase));
            s.stop_words += u32::from(STOP.binary_search(&lower.as_str()).is_ok());
        }
    }
    // Long blocks are judged by their prose, not by a phrase somewhere inside.
    if s.words < 30 {
        lower.clear();
        lower.extend(text.chars().flat_map(char::to_lowercase));
        s.boilerplate = BOILERPLATE.iter().any(|p| lower.contains(p));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_list_is_sorted() {
        assert!(
            STOP.windows(2).all(|w| w[0] < w[1]),
            "{:?}",
            STOP.windows(2).find(|w| w[0] >= w[1])
        );
    }

    #[test]
    fn prose_and_furniture() {
        let mut lower = String::new();
        let p = stats("The cat sat on the mat, and it was happy.", &mut lower);
        assert_eq!(
            (p.words, p.stop_words, p.commas, p.ends_sentence),
            (10, 6, 1, true)
        );
        let f = stats("© 2024 Example Inc. All rights reserved", &mut lower);
        assert!(f.boilerplate && !f.ends_sentence);
        let r = stats("Кот сидел на ковре, и он был рад.", &mut lower);
        assert_eq!((r.words, r.stop_words), (8, 4));
    }
}
