//! The second pass over a batch, once its pages are weighed and the groups near their texts
//! read: each page put in its duplicate group ([`super::dups`]), classified and bound unless it
//! is a duplicate (then it shares its group's categories and binding), and the rows the
//! batch's transaction writes ([`Plan`]).

use std::collections::BTreeMap;

use focuser_multidoc::Page;
use focuser_schema::models::NewMultidocPage;

use super::dups::{Decision, Groups, Known};
use super::model::ModelSlot;
use super::rows::{analysed, duplicate, refused};
use super::weigh::{domain_key, Env, Plan, Weighed, Weighing};
use crate::bindings::PageBinder;

/// Groups, classifies and binds the pages of `w` in archive order (bindings into `binder`'s
/// outcomes, if there is one); the rows to write.
pub fn plan(
    w: Weighing,
    known: Known,
    env: &Env,
    slot: &mut ModelSlot,
    mut binder: Option<&mut PageBinder>,
) -> Plan {
    let mut groups = Groups::new(known, binder.is_some());
    let mut plan = w.plan;
    let mut rows: BTreeMap<u64, Option<NewMultidocPage>> = BTreeMap::new();
    for item in w.items {
        let (p, a, counted, text) = match item {
            Weighed::Gone { id, place } => {
                if let Some(b) = binder.as_deref_mut() {
                    b.none(id, place);
                }
                groups.leave(id);
                rows.insert(id, None);
                continue;
            }
            Weighed::Refused(p, e) => {
                if let Some(b) = binder.as_deref_mut() {
                    b.none(p.id, p.place);
                }
                groups.leave(p.id);
                rows.insert(p.id, Some(refused(&p, &e, env, &mut plan.tally)));
                continue;
            }
            Weighed::Page {
                p,
                a,
                counted,
                text,
            } => (p, a, counted, text),
        };
        let key = domain_key(&p.domain);
        let decision = groups.decide(p.id, key, &text.md5, text.simhash, env.now);
        let group = match decision {
            Decision::Duplicate { group, source, .. } => {
                if let (Some(b), Some(shared)) = (binder.as_deref_mut(), &source.binding) {
                    b.shared(p.id, &p.url, p.place, shared);
                }
                let row = duplicate(
                    &p,
                    &a,
                    (counted, text, group),
                    &source,
                    env,
                    &mut plan.tally,
                );
                rows.insert(p.id, Some(row));
                continue;
            }
            Decision::Own { group } => Some(group),
            Decision::Alone => None,
        };
        let (model, tokenizer) = slot.parts();
        let page = Page::from_analysis(a, Some(&p.url), tokenizer, model);
        let bound = binder.as_deref_mut().map(|b| {
            b.page(p.id, &p.url, p.place, &page, model);
            b.outcomes.last().and_then(|o| o.binding.clone())
        });
        let row = analysed(
            &p,
            &page,
            model,
            (counted, text, group),
            env,
            &mut plan.tally,
        );
        if let Some(g) = group {
            groups.own(g, p.id, &row, bound.flatten().as_ref());
        }
        rows.insert(p.id, Some(row));
    }
    for (id, row) in rows {
        match row {
            Some(r) => plan.pages.push(r),
            None => plan.gone.push(id),
        }
    }
    plan.groups = groups.writes.into_values().collect();
    plan.touched = groups.touched.into_iter().collect();
    plan.tally.dups = groups.tally;
    plan
}
