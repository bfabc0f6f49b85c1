//! What an element's name and attributes say about its content: the words of `class` and `id`
//! that readability, trafilatura and jusText read (nav, footer, comment, share, related, …),
//! ARIA roles, `itemprop`, and whether it is hidden.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};

use super::lexer::attributes;
use super::tags::Tag;

/// One kind of evidence an element gives about the text inside it.
pub type Hints = u32;
pub const NAV: Hints = 1;
pub const FOOTER: Hints = 1 << 1;
pub const HEADER: Hints = 1 << 2;
pub const SIDEBAR: Hints = 1 << 3;
pub const COMMENT: Hints = 1 << 4;
pub const SOCIAL: Hints = 1 << 5;
pub const RELATED: Hints = 1 << 6;
pub const AD: Hints = 1 << 7;
pub const META: Hints = 1 << 8;
pub const POPUP: Hints = 1 << 9;
pub const CONTENT: Hints = 1 << 10;
pub const BODY: Hints = 1 << 11;
pub const CAPTION: Hints = 1 << 12;
pub const FORM: Hints = 1 << 13;
pub const ARTICLE: Hints = 1 << 14;
pub const MAIN: Hints = 1 << 15;
pub const HIDDEN: Hints = 1 << 16;
pub const TITLE: Hints = 1 << 17;
pub const LIST: Hints = 1 << 18;
/// Hints that speak against main content.
pub const BOILERPLATE: Hints =
    NAV | FOOTER | HEADER | SIDEBAR | COMMENT | SOCIAL | RELATED | AD | POPUP | FORM;

/// Words in class and id, each with what it says. Matched anywhere in the lower-cased value
/// (leftmost-longest, so that `navigation-content` says NAV and CONTENT and `header` is not
/// read as `head`).
const WORDS: &[(&str, Hints)] = &[
    ("nav", NAV),
    ("menu", NAV),
    ("breadcrumb", NAV),
    ("pagination", NAV),
    ("pager", NAV),
    ("toolbar", NAV),
    ("skip-link", NAV),
    ("masthead", HEADER),
    ("header", HEADER),
    ("topbar", HEADER),
    ("footer", FOOTER),
    ("copyright", FOOTER),
    ("colophon", FOOTER),
    ("sidebar", SIDEBAR),
    ("side-bar", SIDEBAR),
    ("widget", SIDEBAR),
    ("rail", SIDEBAR),
    ("aside", SIDEBAR),
    ("comment", COMMENT),
    ("disqus", COMMENT),
    ("replies", COMMENT),
    ("respond", COMMENT),
    ("discussion", COMMENT),
    ("share", SOCIAL),
    ("sharing", SOCIAL),
    ("social", SOCIAL),
    ("follow", SOCIAL),
    ("related", RELATED),
    ("recommend", RELATED),
    ("popular", RELATED),
    ("trending", RELATED),
    ("more-stories", RELATED),
    ("read-more", RELATED),
    ("outbrain", RELATED),
    ("taboola", RELATED),
    ("teaser", RELATED),
    ("advert", AD),
    ("sponsor", AD),
    ("promo", AD),
    ("banner", AD),
    ("dfp", AD),
    ("-ad-", AD),
    ("ad-slot", AD),
    ("adslot", AD),
    ("byline", META),
    ("author", META),
    ("dateline", META),
    ("timestamp", META),
    ("published", META),
    ("meta", META),
    ("tags", META),
    ("newsletter", POPUP),
    ("subscribe", POPUP),
    ("signup", POPUP),
    ("sign-up", POPUP),
    ("cookie", POPUP),
    ("consent", POPUP),
    ("gdpr", POPUP),
    ("modal", POPUP),
    ("popup", POPUP),
    ("overlay", POPUP),
    ("paywall", POPUP),
    ("login", POPUP),
    ("article", CONTENT),
    ("content", CONTENT),
    ("entry", CONTENT),
    ("post", CONTENT),
    ("story", CONTENT),
    ("blog", CONTENT),
    ("prose", CONTENT),
    ("main", CONTENT),
    ("text", CONTENT),
    ("articlebody", BODY),
    ("article-body", BODY),
    ("article_body", BODY),
    ("article__body", BODY),
    ("articletext", BODY),
    ("article-text", BODY),
    ("article-content", BODY),
    ("article__content", BODY),
    ("entry-content", BODY),
    ("post-content", BODY),
    ("post-body", BODY),
    ("postbody", BODY),
    ("post-entry", BODY),
    ("story-body", BODY),
    ("storybody", BODY),
    ("body-text", BODY),
    ("rich-text", BODY),
    ("richtext", BODY),
    ("caption", CAPTION),
    ("credit", CAPTION),
    ("hidden", HIDDEN),
    ("sr-only", HIDDEN),
    ("visually-hidden", HIDDEN),
    ("screen-reader", HIDDEN),
    ("title", TITLE),
    ("headline", TITLE),
];

static MATCHER: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(WORDS.iter().map(|(w, _)| w))
        .ok()
});

/// The hints an element's tag gives by itself.
pub fn of_tag(tag: Tag) -> Hints {
    match tag {
        Tag::Nav | Tag::Menu => NAV,
        Tag::Footer => FOOTER,
        Tag::Header => HEADER,
        Tag::Aside => SIDEBAR,
        Tag::Form => FORM,
        Tag::Article => ARTICLE,
        Tag::Main => MAIN,
        Tag::Figcaption => CAPTION,
        Tag::Ul | Tag::Ol | Tag::Dl => LIST,
        _ => 0,
    }
}

/// The hints of an element's attributes, and whether it is hidden from readers.
pub fn of_attributes(raw: &str, lower: &mut String) -> (Hints, bool) {
    let mut hints = 0;
    let mut hidden = false;
    for (name, value) in attributes(raw) {
        let name = name.as_bytes();
        if name.eq_ignore_ascii_case(b"class") || name.eq_ignore_ascii_case(b"id") {
            hints |= of_words(value, lower);
        } else if name.eq_ignore_ascii_case(b"role") {
            hints |= of_role(value);
        } else if name.eq_ignore_ascii_case(b"itemprop") {
            if value.eq_ignore_ascii_case("articleBody") || value.eq_ignore_ascii_case("text") {
                hints |= BODY;
            }
        } else if name.eq_ignore_ascii_case(b"hidden") {
            hidden = true;
        } else if name.eq_ignore_ascii_case(b"aria-hidden") {
            hidden |= value.eq_ignore_ascii_case("true");
        } else if name.eq_ignore_ascii_case(b"style") {
            hidden |= hides(value);
        }
    }
    (hints, hidden)
}

fn of_words(value: &str, lower: &mut String) -> Hints {
    let Some(matcher) = MATCHER.as_ref() else {
        return 0;
    };
    lower.clear();
    lower.push_str(value);
    lower.make_ascii_lowercase();
    matcher
        .find_iter(lower.as_str())
        .fold(0, |h, m| h | WORDS[m.pattern().as_usize()].1)
}

fn of_role(value: &str) -> Hints {
    match value.to_ascii_lowercase().as_str() {
        "navigation" | "menu" | "menubar" => NAV,
        "contentinfo" => FOOTER,
        "banner" => HEADER,
        "complementary" => SIDEBAR,
        "main" => MAIN,
        "article" => ARTICLE,
        "dialog" | "alertdialog" => POPUP,
        _ => 0,
    }
}

/// Whether an inline style hides the element.
fn hides(style: &str) -> bool {
    let s: String = style
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    s.contains("display:none") || s.contains("visibility:hidden")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn words_roles_and_hiding() {
        let mut lower = String::new();
        let h = |raw: &str, lower: &mut String| of_attributes(raw, lower);
        assert_eq!(h(r#"class="site-Footer""#, &mut lower), (FOOTER, false));
        assert_eq!(
            h(r#"id=main-navigation class='x'"#, &mut lower),
            (CONTENT | NAV, false)
        );
        assert_eq!(h(r#"class="entry-content""#, &mut lower), (BODY, false));
        assert_eq!(h(r#"role=navigation"#, &mut lower), (NAV, false));
        assert_eq!(h(r#"itemprop="articleBody""#, &mut lower), (BODY, false));
        assert_eq!(h(r#"style="display: none""#, &mut lower), (0, true));
        assert_eq!(h(r#"hidden class=comments"#, &mut lower), (COMMENT, true));
        assert_eq!(h(r#"aria-hidden=false"#, &mut lower), (0, false));
    }
}
