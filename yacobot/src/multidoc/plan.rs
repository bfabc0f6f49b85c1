//! A batch's pages in archive order: each weighed with its domain's evidence ([`Weigher`]),
//! put in its duplicate group by its main text ([`super::dups`]), then counted into the
//! evidence, classified and bound, unless it is a duplicate (it shares its group's categories
//! and binding, and is not counted: copies of one page under several URLs would make its own
//! text look like the domain's template); the rows the batch's transaction writes ([`Plan`]).

use std::collections::{BTreeMap, HashMap};

use focuser_multidoc::analyze::Analysis;
use focuser_multidoc::Page;
use focuser_schema::models::{NearGroup, NewMultidocPage};

use super::dups::{Decision, Groups};
use super::model::ModelSlot;
use super::rows::{analysed, duplicate, refused, Text};
use super::take::{Batch, PageIn, Taken};
use super::weigh::{domain_key, Env, Loaded, Plan, Weigher};
use crate::bindings::PageBinder;

/// Reads the groups of a domain near a fingerprint (`MultidocGroup::near`).
pub type Near<'a> = dyn FnMut(u64, u64) -> anyhow::Result<Vec<NearGroup>> + 'a;

/// What the batch goes through its pages with.
pub struct Tools<'a, 'b> {
    pub slot: &'a mut ModelSlot,
    pub binder: Option<&'a mut PageBinder>,
    pub near: &'a mut Near<'b>,
}

/// Weighs, groups, counts, classifies and binds the pages of `batch` (bindings into the
/// binder's outcomes); the rows to write. `groups`: the group of each of the batch's URLs
/// that has one. An error: a read of near groups failed (nothing is written).
pub fn plan(
    batch: Batch,
    loaded: Loaded,
    groups: HashMap<u64, u64>,
    env: &Env,
    t: Tools<'_, '_>,
) -> anyhow::Result<Plan> {
    let mut weigher = Weigher::new(&batch, loaded, env);
    let mut groups = Groups::new(groups, t.binder.is_some());
    let mut b = Batcher {
        plan: Plan::default(),
        rows: BTreeMap::new(),
        env,
        slot: t.slot,
        binder: t.binder,
    };
    for item in batch.items {
        let (p, analysis) = match item {
            Taken::Gone { id, place } => {
                weigher.gone(id);
                groups.leave(id);
                b.gone(id, place);
                continue;
            }
            Taken::Page(p, a) => (p, a),
        };
        let a = match *analysis {
            Err(e) => {
                groups.leave(p.id);
                b.refused(&p, &e);
                continue;
            }
            Ok(a) => a,
        };
        let (a, may_count) = weigher.weigh(&p, a, env);
        let text = Text::of(&a.main_text);
        let key = domain_key(&p.domain);
        if let Some(s) = text.simhash {
            if !groups.has_read(key, s) {
                groups.read(key, s, (t.near)(key, s)?);
            }
        }
        match groups.decide(p.id, key, &text.md5, text.simhash, env.now) {
            Decision::Duplicate { group, source } => {
                if let (Some(binder), Some(shared)) = (b.binder.as_deref_mut(), &source.binding) {
                    binder.shared(p.id, &p.url, p.place, shared);
                }
                let row = duplicate(&p, &a, (text, group), &source, env, &mut b.plan.tally);
                b.rows.insert(p.id, Some(row));
            }
            decision => {
                let group = match decision {
                    Decision::Own { group } => Some(group),
                    _ => None,
                };
                if may_count {
                    weigher.count(&p, &a, env);
                    b.plan.tally.counted += 1;
                } else {
                    b.plan.tally.reanalysed += 1;
                }
                let (row, binding) = b.analysed(&p, a, (may_count, text, group));
                if let Some(g) = group {
                    groups.own(g, p.id, &row, binding.as_ref());
                }
                b.rows.insert(p.id, Some(row));
            }
        }
    }
    let mut plan = b.finish();
    weigher.finish(env, &mut plan);
    plan.groups = groups.writes.into_values().collect();
    plan.touched = groups.touched.into_iter().collect();
    plan.tally.dups = groups.tally;
    Ok(plan)
}

/// The rows and bindings of a batch as its pages are decided.
struct Batcher<'a> {
    plan: Plan,
    rows: BTreeMap<u64, Option<NewMultidocPage>>,
    env: &'a Env,
    slot: &'a mut ModelSlot,
    binder: Option<&'a mut PageBinder>,
}

impl Batcher<'_> {
    fn gone(&mut self, id: u64, place: focuser_formats::segment::Position) {
        if let Some(b) = self.binder.as_deref_mut() {
            b.none(id, place);
        }
        self.plan.tally.gone += 1;
        self.rows.insert(id, None);
    }

    fn refused(&mut self, p: &PageIn, e: &focuser_multidoc::decode::DecodeError) {
        if let Some(b) = self.binder.as_deref_mut() {
            b.none(p.id, p.place);
        }
        let row = refused(p, e, self.env, &mut self.plan.tally);
        self.rows.insert(p.id, Some(row));
    }

    /// Classifies and binds a page; its row and its binding.
    fn analysed(
        &mut self,
        p: &PageIn,
        a: Analysis,
        what: (bool, Text, Option<u64>),
    ) -> (NewMultidocPage, Option<focuser_bind::PageBinding>) {
        let (model, tokenizer) = self.slot.parts();
        let page = Page::from_analysis(a, Some(&p.url), tokenizer, model);
        let binding = self.binder.as_deref_mut().and_then(|b| {
            b.page(p.id, &p.url, p.place, &page, model);
            b.outcomes.last().and_then(|o| o.binding.clone())
        });
        let row = analysed(p, &page, model, what, self.env, &mut self.plan.tally);
        (row, binding)
    }

    fn finish(mut self) -> Plan {
        for (id, row) in self.rows {
            match row {
                Some(r) => self.plan.pages.push(r),
                None => self.plan.gone.push(id),
            }
        }
        self.plan
    }
}
