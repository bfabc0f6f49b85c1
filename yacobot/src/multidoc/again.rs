//! A page analysed again from its archived copy as the worker would analyse it now, for the
//! operator (`yacobot bindings URL`): the item read from the crawl archive, weighed with its
//! domain's evidence as loaded from SQL, classified with `MultiDoc.Model`. Nothing is written
//! or counted.

use anyhow::{anyhow, Context};
use diesel::mysql::MysqlConnection;
use focuser_daemon::Config;
use focuser_formats::segment::{Position, SegmentIndex, Status};
use focuser_formats::urls;
use focuser_multidoc::classify::Model;
use focuser_multidoc::Page;

use super::model::ModelSlot;
use super::model_path;
use super::take::{taken, Batch};
use super::weigh::{self, Env};
use crate::YacobotConfig;

/// A page analysed again.
pub struct Again {
    pub page: Page,
    /// Per block, whether its domain's evidence calls it template.
    pub template: Vec<bool>,
    slot: ModelSlot,
}

impl Again {
    /// The model it was classified with, if any.
    pub fn model(&self) -> Option<&Model> {
        self.slot.model()
    }
}

/// What became of a URL's archived copy.
pub enum Copy {
    /// Analysed again.
    Page(Box<Again>),
    /// Not in the archive any more (retention deleted its segment), or not that URL's page.
    Gone,
    /// There, but it cannot be analysed (empty, binary, too large).
    Refused,
}

/// The copy of URL `id` at `place` of the node's crawl archive, analysed again.
pub fn again(
    config: &Config<YacobotConfig>,
    conn: &mut MysqlConnection,
    id: u64,
    place: Position,
) -> anyhow::Result<Copy> {
    let md = &config.daemon.multidoc;
    let dir = config.common.path(&config.daemon.archive.dir);
    let what = || format!("archive {} item {place}", dir.display());
    let Some(seg) = SegmentIndex::open(&dir, place.file_id).with_context(what)? else {
        return Ok(Copy::Gone);
    };
    if place.item_idx >= seg.len() {
        return Ok(Copy::Gone);
    }
    let stored = seg.read(place.item_idx).with_context(what)?;
    if stored.item.status != Status::Update || stored.item.doc_id != urls::doc_id(id).as_bytes() {
        return Ok(Copy::Gone);
    }
    let Some(item) = taken(stored, md.max_bytes) else {
        return Ok(Copy::Gone);
    };
    let batch = Batch {
        items: vec![item],
        to: place,
    };
    let loaded = weigh::load(conn, &batch).context("reading the template evidence")?;
    let mut slot = ModelSlot::open(&model_path(config)).map_err(|e| anyhow!(e))?;
    let env = Env::now(md, place);
    Ok(match weigh::reweigh(batch, loaded, &env, &mut slot) {
        Some((_, page, template)) => Copy::Page(Box::new(Again {
            page,
            template,
            slot,
        })),
        None => Copy::Refused,
    })
}
