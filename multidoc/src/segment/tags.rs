//! The elements the segmenter tells apart, and how each one shapes blocks.

/// An element, by name; `Other` is any element not listed (custom elements included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tag {
    A,
    Address,
    Article,
    Aside,
    Blockquote,
    Body,
    Br,
    Caption,
    Center,
    Dd,
    Details,
    Div,
    Dl,
    Dt,
    Fieldset,
    Figcaption,
    Figure,
    Footer,
    Form,
    H(u8),
    Header,
    Hr,
    Html,
    Li,
    Main,
    Menu,
    Nav,
    Ol,
    P,
    Pre,
    Section,
    Summary,
    Table,
    Tbody,
    Td,
    Th,
    Thead,
    Tfoot,
    Tr,
    Ul,
    /// Content never shown as text: script, style, svg, select, button, …
    Skipped,
    /// Void elements other than br, hr: img, input, meta, …
    Void,
    Other,
}

impl Tag {
    /// The tag of an element name, in any case.
    pub fn of(name: &str) -> Tag {
        let mut buf = [0u8; 10];
        if name.len() > buf.len() {
            return Tag::Other;
        }
        let lower = &mut buf[..name.len()];
        lower.copy_from_slice(name.as_bytes());
        lower.make_ascii_lowercase();
        match &*lower {
            b"a" => Tag::A,
            b"address" => Tag::Address,
            b"article" => Tag::Article,
            b"aside" => Tag::Aside,
            b"blockquote" => Tag::Blockquote,
            b"body" => Tag::Body,
            b"br" => Tag::Br,
            b"caption" => Tag::Caption,
            b"center" => Tag::Center,
            b"dd" => Tag::Dd,
            b"details" => Tag::Details,
            b"div" => Tag::Div,
            b"dl" => Tag::Dl,
            b"dt" => Tag::Dt,
            b"fieldset" => Tag::Fieldset,
            b"figcaption" => Tag::Figcaption,
            b"figure" => Tag::Figure,
            b"footer" => Tag::Footer,
            b"form" => Tag::Form,
            [b'h', d @ b'1'..=b'6'] => Tag::H(d - b'0'),
            b"header" => Tag::Header,
            b"hr" => Tag::Hr,
            b"html" => Tag::Html,
            b"li" => Tag::Li,
            b"main" => Tag::Main,
            b"menu" => Tag::Menu,
            b"nav" => Tag::Nav,
            b"ol" => Tag::Ol,
            b"p" => Tag::P,
            b"pre" | b"listing" => Tag::Pre,
            b"section" => Tag::Section,
            b"summary" => Tag::Summary,
            b"table" => Tag::Table,
            b"tbody" => Tag::Tbody,
            b"td" => Tag::Td,
            b"th" => Tag::Th,
            b"thead" => Tag::Thead,
            b"tfoot" => Tag::Tfoot,
            b"tr" => Tag::Tr,
            b"ul" => Tag::Ul,
            b"script" | b"style" | b"template" | b"svg" | b"math" | b"iframe" | b"object"
            | b"canvas" | b"select" | b"textarea" | b"button" | b"title" | b"video" | b"audio"
            | b"map" | b"datalist" | b"noembed" | b"noframes" | b"xmp" | b"plaintext"
            | b"dialog" => Tag::Skipped,
            b"area" | b"base" | b"col" | b"embed" | b"img" | b"input" | b"link" | b"meta"
            | b"param" | b"source" | b"track" | b"wbr" | b"keygen" | b"frame" => Tag::Void,
            _ => Tag::Other,
        }
    }

    /// Whether the element starts and ends a block of text.
    pub fn is_block(self) -> bool {
        !matches!(
            self,
            Tag::A | Tag::Br | Tag::Void | Tag::Other | Tag::Skipped
        )
    }

    /// Whether the element has no content and no end tag.
    pub fn is_void(self) -> bool {
        matches!(self, Tag::Br | Tag::Hr | Tag::Void)
    }

    /// Whether a start tag of this element closes an open `<p>` (HTML's tree-construction rule).
    pub fn closes_p(self) -> bool {
        self.is_block()
            && !matches!(
                self,
                Tag::Li | Tag::Dd | Tag::Dt | Tag::Td | Tag::Th | Tag::Tr | Tag::Body | Tag::Html
            )
    }

    /// The name written in a block's tag path.
    pub fn name(self) -> &'static str {
        match self {
            Tag::A => "a",
            Tag::Address => "address",
            Tag::Article => "article",
            Tag::Aside => "aside",
            Tag::Blockquote => "blockquote",
            Tag::Body => "body",
            Tag::Br => "br",
            Tag::Caption => "caption",
            Tag::Center => "center",
            Tag::Dd => "dd",
            Tag::Details => "details",
            Tag::Div => "div",
            Tag::Dl => "dl",
            Tag::Dt => "dt",
            Tag::Fieldset => "fieldset",
            Tag::Figcaption => "figcaption",
            Tag::Figure => "figure",
            Tag::Footer => "footer",
            Tag::Form => "form",
            Tag::H(1) => "h1",
            Tag::H(2) => "h2",
            Tag::H(3) => "h3",
            Tag::H(4) => "h4",
            Tag::H(5) => "h5",
            Tag::H(_) => "h6",
            Tag::Header => "header",
            Tag::Hr => "hr",
            Tag::Html => "html",
            Tag::Li => "li",
            Tag::Main => "main",
            Tag::Menu => "menu",
            Tag::Nav => "nav",
            Tag::Ol => "ol",
            Tag::P => "p",
            Tag::Pre => "pre",
            Tag::Section => "section",
            Tag::Summary => "summary",
            Tag::Table => "table",
            Tag::Tbody => "tbody",
            Tag::Td => "td",
            Tag::Th => "th",
            Tag::Thead => "thead",
            Tag::Tfoot => "tfoot",
            Tag::Tr => "tr",
            Tag::Ul => "ul",
            Tag::Skipped => "skipped",
            Tag::Void => "void",
            Tag::Other => "other",
        }
    }
}
