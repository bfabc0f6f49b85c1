//! A page through every stage: [`analyze`](crate::analyze()) (decode, blocks, the domain's
//! evidence, weights), its language, the weighted words, and — with a model — its categories.
//! The one composition the yacobot worker and the operator tools (`yacobot analyze`) share.

use crate::analyze::{analyze, Analysis, Evidence};
use crate::classify::{Categories, Model};
use crate::decode::DecodeError;
use crate::tokenize::{Features, Tokenizer};

/// The language a page's main text is written in, as far as its letters tell: Russian and
/// English are what the tokenizer stems; other scripts are named by script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    Ru,
    En,
    /// Han, kana or Hangul.
    Cjk,
    /// Letters of another script, or Latin letters with too few English words to tell.
    Other,
    /// No letters at all.
    Unknown,
}

impl Lang {
    /// As stored and shown: `ru`, `en`, `cjk`, `other`, `unknown`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::Ru => "ru",
            Lang::En => "en",
            Lang::Cjk => "cjk",
            Lang::Other => "other",
            Lang::Unknown => "unknown",
        }
    }

    pub fn from_code(code: &str) -> Option<Lang> {
        [Lang::Ru, Lang::En, Lang::Cjk, Lang::Other, Lang::Unknown]
            .into_iter()
            .find(|l| l.code() == code)
    }

    /// The language of `text` by the script most of its letters are in; Latin text is English
    /// when common English words are a fair share of its words (French or German pages are
    /// Latin too, and the English stemmer would make little of them).
    pub fn of(text: &str) -> Lang {
        let (mut cyrillic, mut latin, mut cjk, mut other) = (0usize, 0usize, 0usize, 0usize);
        for c in text.chars().filter(|c| c.is_alphabetic()).take(20_000) {
            match c {
                'a'..='z' | 'A'..='Z' | '\u{c0}'..='\u{24f}' => latin += 1,
                '\u{400}'..='\u{52f}' => cyrillic += 1,
                '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{9fff}' | '\u{ac00}'..='\u{d7af}' => {
                    cjk += 1
                }
                _ => other += 1,
            }
        }
        let most = cyrillic.max(latin).max(cjk).max(other);
        if most == 0 {
            Lang::Unknown
        } else if most == cyrillic {
            Lang::Ru
        } else if most == cjk {
            Lang::Cjk
        } else if most == latin && english_share(text) >= 0.05 {
            Lang::En
        } else {
            Lang::Other
        }
    }
}

/// The share of `text`'s first words that are among the commonest English ones.
fn english_share(text: &str) -> f32 {
    const COMMON: [&str; 20] = [
        "the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "was", "on",
        "are", "be", "this", "by", "you", "or", "from",
    ];
    let (mut words, mut common) = (0usize, 0usize);
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(2_000)
    {
        words += 1;
        if COMMON.iter().any(|c| c.eq_ignore_ascii_case(w)) {
            common += 1;
        }
    }
    common as f32 / words.max(1) as f32
}

/// What every stage made of a page.
#[derive(Debug)]
pub struct Page {
    pub analysis: Analysis,
    pub lang: Lang,
    /// The page's weighted words and its URL's words.
    pub features: Features,
    /// The category path with posteriors, when a model was given.
    pub categories: Option<Categories>,
}

/// Runs a page through every stage. `tokenizer` is reused from page to page (it caches stems);
/// with a model it must be the model's ([`Model::tokenizer`]), so that features match.
pub fn understand(
    body: &[u8],
    http_charset: Option<&str>,
    url: Option<&str>,
    max_bytes: usize,
    evidence: Option<Evidence<'_>>,
    tokenizer: &mut Tokenizer,
    model: Option<&Model>,
) -> Result<Page, DecodeError> {
    let analysis = analyze(body, http_charset, max_bytes, evidence)?;
    Ok(Page::from_analysis(analysis, url, tokenizer, model))
}

impl Page {
    /// The stages after [`analyze`]: the language, the words and (with a model) the
    /// categories of a page already analysed (and weighed: [`Analysis::weigh`]).
    pub fn from_analysis(
        analysis: Analysis,
        url: Option<&str>,
        tokenizer: &mut Tokenizer,
        model: Option<&Model>,
    ) -> Page {
        let lang = Lang::of(&analysis.main_text);
        let mut features = Features::default();
        tokenizer.page(
            url,
            analysis
                .blocks
                .iter()
                .zip(&analysis.weights)
                .map(|(b, &w)| (b.text.as_str(), w)),
            &mut features,
        );
        let categories = model.map(|m| m.classify(&features));
        Page {
            analysis,
            lang,
            features,
            categories,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_is_told_by_script_and_common_words() {
        assert_eq!(Lang::of("Сегодня в Москве прошёл дождь"), Lang::Ru);
        assert_eq!(
            Lang::of("The weather in the city was fine and the sun was out"),
            Lang::En
        );
        assert_eq!(
            Lang::of("Le temps était beau dans la ville aujourd'hui"),
            Lang::Other
        );
        assert_eq!(Lang::of("今天天气很好"), Lang::Cjk);
        assert_eq!(Lang::of("123 456 !!!"), Lang::Unknown);
        for l in [Lang::Ru, Lang::En, Lang::Cjk, Lang::Other, Lang::Unknown] {
            assert_eq!(Lang::from_code(l.code()), Some(l));
        }
    }

    #[test]
    fn a_page_gets_its_words_and_without_a_model_no_categories() {
        let html = b"<html><head><title>T</title></head><body><nav><a href=/>Home</a></nav>\
            <article><p>The cat sat on the mat and the dog barked at the cat all day long, \
            which the neighbours did not like at all.</p></article></body></html>";
        let mut t = Tokenizer::new(Default::default());
        let p = understand(
            html,
            None,
            Some("http://example.com/pets/cats"),
            1 << 20,
            None,
            &mut t,
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.lang, Lang::En);
        assert!(p.categories.is_none());
        let top: Vec<&str> = p
            .features
            .words
            .top(50)
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        assert!(top.contains(&"cat"), "{top:?}");
        let url: Vec<&str> = p.features.url.top(10).into_iter().map(|(w, _)| w).collect();
        assert!(url.contains(&"pet"), "{url:?}");
    }
}
