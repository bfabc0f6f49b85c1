//! Duplicate groups in the page analysis worker (issue 27, the source's `md5.db`;
//! docs/multidoc.md "Duplicate groups"). After a page is weighed its main text's MD5 and SimHash
//! are known; [`Groups::decide`] puts it in the group of its domain whose text is near (at most
//! `NEAR_BITS` from the group's fingerprint; an equal MD5 is distance 0), or founds a group:
//!
//! - the page that founds a group, and the group's representative when it comes again, are
//!   analysed: classified and bound ([`Decision::Own`]);
//! - a page joining a group is a duplicate: it is weighed (its text is what tells), but not
//!   counted into the evidence, not classified and not bound: it shares the representative's
//!   categories and binding ([`Decision::Duplicate`], the [`Source`]);
//! - a page with no word in its main text is in no group ([`Decision::Alone`]).
//!
//! Groups are per routing domain. The groups near a page are read by their fingerprint's bands
//! (`MultidocGroup::near`, handed to [`Groups::read`]); those the batch founds are kept here,
//! so that its later pages join its earlier ones. What the batch's transaction writes: the groups founded (or taking a page as
//! representative), the pages' `dup_group`, and the groups it touched to settle (a group left
//! without a page goes; one whose representative left takes its smallest page).

mod load;
pub mod stats;

pub use load::current;
pub use stats::{DupStats, DupTally};

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use chrono::NaiveDateTime;
use focuser_bind::PageBinding;
use focuser_multidoc::simhash::distance;
use focuser_schema::models::{NearGroup, NewMultidocGroup, NewMultidocPage};
use md5::{Digest, Md5};

/// What a duplicate shares: its group's representative's analysis and binding.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The representative's main-text MD5 (an equal one: an exact duplicate).
    pub md5: Option<String>,
    pub categories: Option<String>,
    pub category_names: Option<String>,
    pub model_checksum: Option<u32>,
    /// Its binding; `None`: it has none (bound while `Bindings.Enable` was off).
    pub binding: Option<PageBinding>,
}

/// What becomes of a weighed page.
pub enum Decision {
    /// No word in its main text: in no group, analysed.
    Alone,
    /// Analysed (classified, bound): the first page of `group` or its representative.
    Own { group: u64 },
    /// A duplicate in `group`: not classified, not bound, shares `source`.
    Duplicate { group: u64, source: Rc<Source> },
}

/// A group as the batch knows it.
struct Group {
    domain_key: u64,
    simhash: u64,
    rep: u64,
    source: Option<Rc<Source>>,
}

/// A group's id: the first 8 bytes of the MD5 of its domain key and fingerprint (8 bytes each,
/// big-endian), as a URL id is made: one group per text and domain, known before it is
/// written.
pub fn group_id(domain_key: u64, simhash: u64) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&domain_key.to_be_bytes());
    bytes[8..].copy_from_slice(&simhash.to_be_bytes());
    let d = Md5::digest(bytes);
    let mut id = [0u8; 8];
    id.copy_from_slice(&d[..8]);
    u64::from_be_bytes(id)
}

/// The batch's groups: those read near its pages and those it founds, and what it changes.
pub struct Groups {
    /// The groups read near the batch's pages so far, and those it founded.
    groups: HashMap<u64, Group>,
    /// The (domain key, fingerprint) pairs whose near groups were read.
    near: HashSet<(u64, u64)>,
    /// Each URL's group, as stored and then as the batch decides.
    current: HashMap<u64, u64>,
    /// Whether a duplicate needs its representative's binding (`Bindings.Enable`).
    bindings: bool,
    pub touched: BTreeSet<u64>,
    pub writes: BTreeMap<u64, NewMultidocGroup>,
    pub tally: DupTally,
}

impl Groups {
    /// `current`: the group of each of the batch's URLs that has one, as stored.
    pub fn new(current: HashMap<u64, u64>, bindings: bool) -> Groups {
        Groups {
            groups: HashMap::new(),
            near: HashSet::new(),
            current,
            bindings,
            touched: BTreeSet::new(),
            writes: BTreeMap::new(),
            tally: DupTally::default(),
        }
    }

    /// Whether the groups near `simhash` in domain `domain_key` were read already.
    pub fn has_read(&self, domain_key: u64, simhash: u64) -> bool {
        self.near.contains(&(domain_key, simhash))
    }

    /// The groups of domain `domain_key` near `simhash`, as read.
    pub fn read(&mut self, domain_key: u64, simhash: u64, near: Vec<NearGroup>) {
        self.near.insert((domain_key, simhash));
        for n in near {
            self.groups
                .entry(n.group_id)
                .or_insert_with(|| read(domain_key, &n));
        }
    }

    /// A URL leaves its group (gone, or not analysable).
    pub fn leave(&mut self, id: u64) {
        if let Some(g) = self.current.remove(&id) {
            self.touched.insert(g);
        }
    }

    /// Which group page `id` of domain `domain_key` is in, and whether it is analysed or
    /// shares its group's analysis.
    pub fn decide(
        &mut self,
        id: u64,
        domain_key: u64,
        md5: &str,
        simhash: Option<u64>,
        now: NaiveDateTime,
    ) -> Decision {
        let Some(simhash) = simhash else {
            self.leave(id);
            self.tally.no_text += 1;
            return Decision::Alone;
        };
        let old = self.current.get(&id).copied();
        let group = match self.nearest(domain_key, simhash, old) {
            Some(g) => g,
            None => return self.found(id, domain_key, simhash, old, now),
        };
        self.touched.extend(old);
        self.touched.insert(group);
        self.current.insert(id, group);
        let bindings = self.bindings;
        let Some(g) = self.groups.get_mut(&group) else {
            return Decision::Own { group };
        };
        if g.rep == id {
            return Decision::Own { group };
        }
        match &g.source {
            Some(s) if s.binding.is_some() || !bindings => {
                if s.md5.as_deref() == Some(md5) {
                    self.tally.exact += 1;
                } else {
                    self.tally.near += 1;
                }
                Decision::Duplicate {
                    group,
                    source: Rc::clone(s),
                }
            }
            _ => {
                // The representative's analysis or binding cannot be shared: this page is
                // analysed and becomes the representative.
                g.rep = id;
                g.source = None;
                self.writes.insert(group, row(group, g, now));
                self.tally.unshared += 1;
                Decision::Own { group }
            }
        }
    }

    /// After page `id` of `group` was analysed: what later pages of the batch share.
    pub fn own(
        &mut self,
        group: u64,
        id: u64,
        row: &NewMultidocPage,
        binding: Option<&PageBinding>,
    ) {
        if let Some(g) = self.groups.get_mut(&group).filter(|g| g.rep == id) {
            g.source = Some(Rc::new(Source {
                md5: row.main_md5.clone(),
                categories: row.categories.clone(),
                category_names: row.category_names.clone(),
                model_checksum: row.model_checksum,
                binding: binding.cloned(),
            }));
        }
    }

    /// The group nearest `simhash` (the page's own group `old` if it is near, else the
    /// nearest, then the smallest id), among those read and those the batch founded.
    fn nearest(&self, domain_key: u64, simhash: u64, old: Option<u64>) -> Option<u64> {
        let mut best: Option<(u32, u64)> = None;
        for (&id, g) in &self.groups {
            if g.domain_key != domain_key {
                continue;
            }
            let d = distance(g.simhash, simhash);
            if d > focuser_multidoc::simhash::NEAR_BITS {
                continue;
            }
            if Some(id) == old {
                return Some(id);
            }
            if best.is_none_or(|b| (d, id) < b) {
                best = Some((d, id));
            }
        }
        best.map(|(_, id)| id)
    }

    fn found(
        &mut self,
        id: u64,
        domain_key: u64,
        simhash: u64,
        old: Option<u64>,
        now: NaiveDateTime,
    ) -> Decision {
        let group = group_id(domain_key, simhash);
        let g = Group {
            domain_key,
            simhash,
            rep: id,
            source: None,
        };
        self.writes.insert(group, row(group, &g, now));
        self.groups.insert(group, g);
        self.touched.extend(old);
        self.touched.insert(group);
        self.current.insert(id, group);
        self.tally.founded += 1;
        Decision::Own { group }
    }
}

fn row(id: u64, g: &Group, now: NaiveDateTime) -> NewMultidocGroup {
    NewMultidocGroup {
        id,
        domain_key: g.domain_key,
        simhash: g.simhash,
        rep: g.rep,
        created_at: now,
    }
}

/// A group as read, with what its representative's rows give to share (none when its row
/// is not in the group any more, or its stored binding cannot be read).
fn read(domain_key: u64, n: &NearGroup) -> Group {
    let source = (n.rep_group == Some(n.group_id) && n.rep_md5.is_some()).then(|| {
        let binding = n.rep_item.as_deref().and_then(|item| {
            match focuser_bind::adserver::Item::parse(item.as_bytes()) {
                Ok(focuser_bind::adserver::Item::Binding(b)) => Some(b),
                Ok(_) | Err(_) => {
                    log::debug!("multidoc: group {:016x}: the representative's stored binding cannot be read", n.group_id);
                    None
                }
            }
        });
        Rc::new(Source {
            md5: n.rep_md5.clone(),
            categories: n.rep_categories.clone(),
            category_names: n.rep_category_names.clone(),
            model_checksum: n.rep_model_checksum,
            binding,
        })
    });
    Group {
        domain_key,
        simhash: n.simhash,
        rep: n.rep,
        source,
    }
}
