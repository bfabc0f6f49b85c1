//! Where a page's bound phrases matched, for `yacobot bindings URL`: its archived copy
//! analysed again as the worker would ([`crate::multidoc::again`]) and bound with the
//! dictionaries in force; for each phrase kept, the blocks it matched in with their weight,
//! whether the domain's evidence calls them template, their tag path and the text around the
//! match. Only when the binding made now is the stored one (the same dictionaries, the same
//! phrases): otherwise the places would be another binding's.

use std::collections::HashMap;

use anyhow::Context;
use diesel::mysql::MysqlConnection;
use diesel::OptionalExtension;
use focuser_bind::place::{locate, snippet};
use focuser_bind::{Dictionary, Kind, PageBinding};
use focuser_daemon::db::Database;
use focuser_daemon::stop::Stop;
use focuser_daemon::Config;
use focuser_formats::segment::Position;
use focuser_schema::models::Url;

use super::dicts::Dicts;
use super::page::BindReader;
use crate::multidoc::again::{again, Again, Copy};
use crate::YacobotConfig;

/// Characters of a block's text shown either side of a match.
const AROUND: usize = 40;

/// One block a phrase matched in.
pub struct Place {
    pub block: u32,
    pub weight: f32,
    pub template: bool,
    pub path: String,
    /// The text around the match, the phrase in `[ ]` (empty if it cannot be pointed at).
    pub snippet: String,
}

/// What `yacobot bindings URL` can say of where the phrases matched.
pub enum Places {
    /// Per binding type and phrase (as its dictionary writes it), its blocks; `note` says
    /// what differs from the stored binding, if anything (its relevances).
    Found {
        places: HashMap<(Kind, String), Vec<Place>>,
        note: Option<String>,
    },
    /// Why not: the stored binding is shown alone.
    Unknown(String),
}

/// Where the phrases of `stored`, the binding of URL `id`, matched.
pub fn places(
    config: &Config<YacobotConfig>,
    conn: &mut MysqlConnection,
    stored: &PageBinding,
) -> anyhow::Result<Places> {
    let url = Url::find(conn, stored.doc)
        .optional()
        .context("reading the URL's row")?;
    let Some((Some(file_id), Some(item_idx))) = url.map(|u| (u.archive_file, u.archive_item))
    else {
        return Ok(unknown("the URL has no archived copy"));
    };
    let place = Position { file_id, item_idx };
    let a = match again(config, conn, stored.doc, place) {
        Ok(Copy::Page(a)) => a,
        Ok(Copy::Gone) => {
            return Ok(unknown(&format!(
                "its archived copy ({place}) is gone (the archive's retention deleted it)"
            )))
        }
        Ok(Copy::Refused) => return Ok(unknown("its archived copy cannot be analysed")),
        Err(e) => return Ok(unknown(&format!("its archived copy is unreadable: {e:#}"))),
    };
    let db = Database::of(&config.common, 1, &Stop::new())?;
    let mut reader = BindReader::new()?;
    let mut dicts = Dicts::default();
    dicts.refresh(&db, &mut reader.tokenizer)?;
    let dicts: Vec<&Dictionary> = dicts.all().iter().map(|l| &l.dict).collect();
    let now = reader.bind(stored.doc, &stored.url, &a.page, a.model(), &dicts);
    if !same_phrases(stored, &now) {
        return Ok(unknown(
            "the binding made now from its archived copy differs from the stored one (a dictionary or the model changed since it was bound)",
        ));
    }
    let note = (now != *stored).then(|| {
        "relevances made now differ from the stored ones (the domain's template evidence changed since): the stored ones are shown".to_string()
    });
    let mut places = HashMap::new();
    for dict in dicts {
        for c in reader.kept(&a.page, a.model(), dict) {
            let Some(p) = dict.phrase(c.found.phrase) else {
                continue;
            };
            let stems: Vec<&str> = dict.stems(c.found.phrase).collect();
            let blocks = c
                .found
                .blocks
                .iter()
                .filter_map(|&b| place_of(&a, &mut reader, b, &stems))
                .collect();
            places.insert((dict.kind(), p.text.to_owned()), blocks);
        }
    }
    Ok(Places::Found { places, note })
}

fn unknown(why: &str) -> Places {
    Places::Unknown(format!("{why}: the stored binding alone"))
}

/// The same dictionaries, tragic flag and phrases per type (relevances aside).
fn same_phrases(a: &PageBinding, b: &PageBinding) -> bool {
    let phrases = |p: &PageBinding| -> Vec<(Kind, u64, Vec<String>)> {
        p.bindings
            .iter()
            .map(|t| {
                let texts = t.phrases.iter().map(|x| x.text.clone()).collect();
                (t.kind, t.dict_version, texts)
            })
            .collect()
    };
    a.tragic == b.tragic && phrases(a) == phrases(b)
}

/// Block `b` of the page, where the phrase of `stems` is in it.
fn place_of(a: &Again, reader: &mut BindReader, b: u32, stems: &[&str]) -> Option<Place> {
    let i = b as usize;
    let block = a.page.analysis.blocks.get(i)?;
    let at = locate(&mut reader.tokenizer, &block.text, stems);
    Some(Place {
        block: b,
        weight: a.page.analysis.weights.get(i).copied().unwrap_or(0.0),
        template: a.template.get(i).copied().unwrap_or(false),
        path: block.path.clone(),
        snippet: at.map_or_else(String::new, |at| snippet(&block.text, at, AROUND)),
    })
}
