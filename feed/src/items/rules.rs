//! The `open_xml_format` rules of one resource class, checked and compiled (docs/formats.md
//! "Item rules").

/// One `open_xml_format` row, as the worker reads it from the database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldRule {
    pub label_name: String,
    pub parent_label: String,
    pub xpath: String,
    pub is_key: bool,
    pub is_index: bool,
    pub is_fullhit: bool,
    pub is_mark: bool,
    pub is_required: bool,
    pub index_type: u8,
    pub group_type: u8,
}

/// A class whose rules cannot be used; `Display` is a sentence for `fetch_detail`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("the class has no open_xml_format rules")]
    NoRules,
    #[error("no rule of the class names the item element (parent_label)")]
    NoParentLabel,
    #[error("the rules name two item elements, \"{0}\" and \"{1}\" (parent_label must agree)")]
    ParentLabels(String, String),
    #[error("parent_label \"{0}\" is not a path of element names")]
    BadParentLabel(String),
    #[error("a rule has an empty label_name")]
    EmptyLabel,
    #[error("two rules are labelled \"{0}\"")]
    DuplicateLabel(String),
    #[error("no rule is the key (is_key)")]
    NoKey,
    #[error("two rules are the key: \"{0}\" and \"{1}\"")]
    TwoKeys(String, String),
    #[error("the xpath \"{xpath}\" of \"{label}\" is not supported: {why}")]
    BadXpath {
        label: String,
        xpath: String,
        why: &'static str,
    },
}

/// A compiled field: where its values are below the item element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub rule: FieldRule,
    /// Element names below the item element; empty: the item element itself.
    pub steps: Vec<String>,
    /// The attribute of the element at `steps`; `None`: the element's text.
    pub attr: Option<String>,
    /// Flags as written in the canonical form.
    pub flags: String,
}

/// The checked rules of one class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Element names ending in the item element.
    pub(crate) item_path: Vec<String>,
    /// `parent_label` began with `/`: the path starts at the root element.
    pub(crate) anchored: bool,
    pub(crate) fields: Vec<Field>,
    pub(crate) key: usize,
}

impl Rules {
    /// Checks a class's rules, in the order they are given (which is the order of the fields
    /// in every item's canonical form: give them by `open_xml_format.id`).
    pub fn compile(rules: &[FieldRule]) -> Result<Rules, RuleError> {
        if rules.is_empty() {
            return Err(RuleError::NoRules);
        }
        let mut parent: Option<&str> = None;
        for r in rules {
            let p = r.parent_label.trim();
            match parent {
                _ if p.is_empty() => {}
                None => parent = Some(p),
                Some(q) if q != p => {
                    return Err(RuleError::ParentLabels(q.to_string(), p.to_string()))
                }
                Some(_) => {}
            }
        }
        let parent = parent.ok_or(RuleError::NoParentLabel)?;
        let anchored = parent.starts_with('/');
        let item_path = parent
            .trim_start_matches('/')
            .split('/')
            .map(|s| valid_name(s).map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| RuleError::BadParentLabel(parent.to_string()))?;

        let mut fields: Vec<Field> = Vec::with_capacity(rules.len());
        let mut key = None;
        for (i, r) in rules.iter().enumerate() {
            let label = r.label_name.trim();
            if label.is_empty() {
                return Err(RuleError::EmptyLabel);
            }
            if fields.iter().any(|f| f.rule.label_name == label) {
                return Err(RuleError::DuplicateLabel(label.to_string()));
            }
            if r.is_key {
                if let Some(k) = key {
                    let first: &Field = &fields[k];
                    return Err(RuleError::TwoKeys(
                        first.rule.label_name.clone(),
                        label.to_string(),
                    ));
                }
                key = Some(i);
            }
            let (steps, attr) = parse_xpath(label, &r.xpath)?;
            let mut rule = r.clone();
            rule.label_name = label.to_string();
            fields.push(Field {
                flags: flags(&rule),
                rule,
                steps,
                attr,
            });
        }
        Ok(Rules {
            item_path,
            anchored,
            fields,
            key: key.ok_or(RuleError::NoKey)?,
        })
    }

    /// The label of the key field.
    pub fn key_label(&self) -> &str {
        &self.fields[self.key].rule.label_name
    }

    /// The index of the field labelled `label` (for [`super::Item::values`]).
    pub fn field(&self, label: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.rule.label_name == label)
    }

    /// The indices of the `is_fullhit` fields, in rule order.
    pub fn fullhit_fields(&self) -> Vec<usize> {
        (0..self.fields.len())
            .filter(|&i| self.fields[i].rule.is_fullhit)
            .collect()
    }

    /// The labels of the fields, in canonical order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|f| f.rule.label_name.as_str())
    }
}

/// `K` key, `R` required, `I` index, `F` full hit, `M` mark: the letters that apply, in
/// that order.
fn flags(r: &FieldRule) -> String {
    [
        (r.is_key, 'K'),
        (r.is_required, 'R'),
        (r.is_index, 'I'),
        (r.is_fullhit, 'F'),
        (r.is_mark, 'M'),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, c)| c)
    .collect()
}

/// An element or attribute name as written in the feed (a prefix included): no white
/// space, none of `/ @ [ ] * ( ) = ' " < > &`.
fn valid_name(s: &str) -> Option<&str> {
    let bad = |c: char| c.is_whitespace() || "/@[]*()='\"<>&".contains(c);
    (!s.is_empty() && !s.contains(bad) && s != "." && s != "..").then_some(s)
}

type Path = (Vec<String>, Option<String>);

/// `a/b/c`, `a/@x`, `@x`, `.`; a leading `./` is allowed; empty means the label itself.
fn parse_xpath(label: &str, xpath: &str) -> Result<Path, RuleError> {
    let bad = |why| RuleError::BadXpath {
        label: label.to_string(),
        xpath: xpath.to_string(),
        why,
    };
    let x = xpath.trim();
    let x = if x.is_empty() { label } else { x };
    if x == "." {
        return Ok((Vec::new(), None));
    }
    if x.starts_with('/') || x.contains("//") {
        return Err(bad(
            "paths are relative to the item element, one step at a time",
        ));
    }
    let x = x.strip_prefix("./").unwrap_or(x);
    let mut steps: Vec<String> = x.split('/').map(str::to_string).collect();
    let attr = match steps.last().and_then(|s| s.strip_prefix('@')) {
        Some(a) => {
            let a = valid_name(a)
                .ok_or_else(|| bad("an attribute is @ and a name"))?
                .to_string();
            steps.pop();
            Some(a)
        }
        None => None,
    };
    if steps.iter().any(|s| valid_name(s).is_none()) {
        return Err(bad(
            "steps are element names (no predicates, wildcards or axes)",
        ));
    }
    Ok((steps, attr))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn rule(label: &str, xpath: &str) -> FieldRule {
        FieldRule {
            label_name: label.into(),
            parent_label: "channel/item".into(),
            xpath: xpath.into(),
            ..FieldRule::default()
        }
    }

    #[test]
    fn xpaths() {
        let p = |x| parse_xpath("lab", x);
        assert_eq!(p("").unwrap(), (vec!["lab".to_string()], None));
        assert_eq!(p(".").unwrap(), (vec![], None));
        assert_eq!(p("@id").unwrap(), (vec![], Some("id".to_string())));
        assert_eq!(
            p("./img/@src").unwrap(),
            (vec!["img".to_string()], Some("src".to_string()))
        );
        assert_eq!(p("g:price").unwrap(), (vec!["g:price".to_string()], None));
        for bad in [
            "/rss/x", "a//b", "a[1]", "*", "a/@", "@a/b", "a/../b", "a b",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn class_checks() {
        let mut key = rule("id", "");
        key.is_key = true;
        let ok = Rules::compile(&[key.clone(), rule("title", "t")]).unwrap();
        assert_eq!(ok.key_label(), "id");
        assert_eq!(ok.item_path, ["channel", "item"]);
        assert_eq!(ok.fields[0].flags, "K");
        assert_eq!(Rules::compile(&[]), Err(RuleError::NoRules));
        assert_eq!(Rules::compile(&[rule("t", "")]), Err(RuleError::NoKey));
        assert_eq!(
            Rules::compile(&[key.clone(), key.clone()]),
            Err(RuleError::DuplicateLabel("id".into()))
        );
        let mut other = rule("x", "");
        other.parent_label = "entry".into();
        assert_eq!(
            Rules::compile(&[key.clone(), other]).unwrap_err().to_string(),
            "the rules name two item elements, \"channel/item\" and \"entry\" (parent_label must agree)"
        );
        let mut k2 = rule("id2", "");
        k2.is_key = true;
        assert!(matches!(
            Rules::compile(&[key.clone(), k2]),
            Err(RuleError::TwoKeys(..))
        ));
        let mut nop = key.clone();
        nop.parent_label = " ".into();
        assert_eq!(Rules::compile(&[nop]), Err(RuleError::NoParentLabel));
        let mut badp = key;
        badp.parent_label = "a//b".into();
        assert!(matches!(
            Rules::compile(&[badp]),
            Err(RuleError::BadParentLabel(_))
        ));
    }
}
