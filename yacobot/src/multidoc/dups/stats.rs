//! The duplicate groups' figures, part of the page analysis worker's: duplicates found (exact
//! and near), groups founded and settled, pages with no text to group.

use std::sync::atomic::AtomicU64;

use focuser_daemon::status::{Card, Figure, StatusSource};

use crate::status::{add, get};

/// What one committed batch adds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DupTally {
    /// Duplicates whose main text has the representative's MD5, and those only near it.
    pub exact: u64,
    pub near: u64,
    pub founded: u64,
    /// Pages whose main text has no word: in no group.
    pub no_text: u64,
    /// Pages near a group whose representative's analysis or binding could not be shared:
    /// analysed, and the group's representative from then on.
    pub unshared: u64,
    /// Groups deleted with no page left, and groups that took a new representative.
    pub emptied: u64,
    pub new_reps: u64,
}

#[derive(Default)]
pub struct DupStats {
    exact: AtomicU64,
    near: AtomicU64,
    founded: AtomicU64,
    no_text: AtomicU64,
    unshared: AtomicU64,
    emptied: AtomicU64,
    new_reps: AtomicU64,
}

impl DupStats {
    pub fn batch(&self, t: &DupTally) {
        add(&self.exact, t.exact);
        add(&self.near, t.near);
        add(&self.founded, t.founded);
        add(&self.no_text, t.no_text);
        add(&self.unshared, t.unshared);
        add(&self.emptied, t.emptied);
        add(&self.new_reps, t.new_reps);
    }
}

impl StatusSource for DupStats {
    fn figures(&self) -> Vec<Figure> {
        let c = |name: &str, help: &str, v: &AtomicU64| Figure::counter(name, help, get(v));
        let dup = "pages found duplicates of their group (not classified, not bound: they share its representative's categories and binding), by kind (exact: the same main-text MD5; near: SimHash at most 3 bits away)";
        vec![
            c("yacobot_multidoc_duplicates_total", dup, &self.exact).with_label("kind", "exact"),
            c("yacobot_multidoc_duplicates_total", dup, &self.near).with_label("kind", "near"),
            c(
                "yacobot_multidoc_groups_founded_total",
                "duplicate groups founded (a page whose main text was near no group of its domain)",
                &self.founded,
            ),
            c(
                "yacobot_multidoc_groups_emptied_total",
                "duplicate groups deleted, their last page gone or moved",
                &self.emptied,
            ),
            c(
                "yacobot_multidoc_group_reps_replaced_total",
                "duplicate groups whose representative left (gone, changed, moved): their smallest page took its place",
                &self.new_reps,
            ),
            c(
                "yacobot_multidoc_no_text_total",
                "pages analysed whose main text has no word: in no duplicate group",
                &self.no_text,
            ),
            c(
                "yacobot_multidoc_dup_unshared_total",
                "pages near a group whose representative's analysis or binding could not be shared: analysed, and its representative from then on",
                &self.unshared,
            ),
        ]
    }

    fn cards(&self) -> Vec<Card> {
        let (exact, near) = (get(&self.exact), get(&self.near));
        vec![
            Card::number("duplicates", exact + near)
                .unit("pages")
                .help(&format!(
                    "not classified nor bound, sharing their group's binding: {exact} exact, {near} near"
                )),
            Card::number("pages with no text", get(&self.no_text))
                .unit("pages")
                .help("main text without a word: in no duplicate group"),
        ]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn batches_add_up_in_figures_and_cards() {
        let s = DupStats::default();
        for _ in 0..2 {
            s.batch(&DupTally {
                exact: 3,
                near: 1,
                founded: 5,
                no_text: 1,
                unshared: 0,
                emptied: 2,
                new_reps: 1,
            });
        }
        let f = s.figures();
        let value = |name: &str, kind: Option<&str>| {
            f.iter()
                .find(|x| {
                    x.name == name && kind.is_none_or(|k| x.labels.iter().any(|(_, v)| v == k))
                })
                .map(|x| x.value)
        };
        assert_eq!(
            value("yacobot_multidoc_duplicates_total", Some("exact")),
            Some(6.0)
        );
        assert_eq!(
            value("yacobot_multidoc_duplicates_total", Some("near")),
            Some(2.0)
        );
        assert_eq!(
            value("yacobot_multidoc_groups_founded_total", None),
            Some(10.0)
        );
        assert_eq!(
            value("yacobot_multidoc_groups_emptied_total", None),
            Some(4.0)
        );
        assert_eq!(
            value("yacobot_multidoc_group_reps_replaced_total", None),
            Some(2.0)
        );
        assert_eq!(value("yacobot_multidoc_no_text_total", None), Some(2.0));
        let card = s
            .cards()
            .into_iter()
            .find(|c| c.label == "duplicates")
            .unwrap();
        assert_eq!(card.value, focuser_daemon::status::Value::Number(8.0));
    }
}
