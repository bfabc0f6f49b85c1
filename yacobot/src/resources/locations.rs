//! Locations and full-hit fields of a run's items (docs/formats.md "Locations", "Multi-hit
//! classes"): the location list in force (`Resources.LocationFile`, read at start and again
//! when it changed), what of an item goes to `vr_data.location`, `loc_id` and `hit_field`, and
//! the UPDATE2/UPDATE3 of the items a run found unchanged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::anyhow;
use focuser_feed::items::{Item, Rules};
use focuser_feed::location::Locations;

use super::store::is_multi_hit;

/// The location list a file holds, or its first error with the file and line.
pub fn read_locations(path: &Path) -> anyhow::Result<Locations> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("{}: cannot read: {e}", path.display()))?;
    Locations::parse(&text).map_err(|e| anyhow!("{}:{}: {}", path.display(), e.line, e.reason))
}

/// The location list in force, and the file it came from.
#[derive(Default)]
pub struct LocationList {
    file: Option<(PathBuf, Option<SystemTime>)>,
    list: Option<Arc<Locations>>,
}

impl LocationList {
    /// Reads `file` (none: no list) when it is another file or was modified since it was
    /// read. A file that cannot be read or has a bad line is an error, and the list in force
    /// stays.
    pub fn refresh(&mut self, file: Option<PathBuf>) -> anyhow::Result<()> {
        let Some(path) = file else {
            self.file = None;
            self.list = None;
            return Ok(());
        };
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        if self.file.as_ref() == Some(&(path.clone(), modified)) {
            return Ok(());
        }
        // Remembered before the read: a bad file is refused once, not at every scan.
        self.file = Some((path.clone(), modified));
        let list = read_locations(&path)?;
        log::info!(
            "resources: {} locations from {}",
            list.len(),
            path.display()
        );
        self.list = Some(Arc::new(list));
        Ok(())
    }

    pub fn current(&self) -> Option<Arc<Locations>> {
        self.list.clone()
    }
}

/// Where a run finds its items' location and full-hit values.
#[derive(Debug, Clone, Default)]
pub struct ItemPaths {
    /// The field labelled `Resources.LocationLabel`, if the class has one.
    pub location_field: Option<usize>,
    pub locations: Option<Arc<Locations>>,
    /// A multi-hit class's `is_fullhit` fields; `None` for other classes.
    pub hit_fields: Option<Vec<usize>>,
}

/// What an item adds to its row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemPlace {
    pub location: String,
    pub loc_id: Option<u32>,
    /// The location the list does not know.
    pub unknown: bool,
    pub hit_field: Option<String>,
}

/// `vr_data.location` is `VARCHAR(255)`.
const MAX_LOCATION_CHARS: usize = 255;

impl ItemPaths {
    pub fn of(
        rules: &Rules,
        class_id: u32,
        label: &str,
        locations: Option<Arc<Locations>>,
    ) -> ItemPaths {
        ItemPaths {
            location_field: rules.field(label.trim()),
            locations,
            hit_fields: is_multi_hit(class_id).then(|| rules.fullhit_fields()),
        }
    }

    pub fn place(&self, item: &Item) -> ItemPlace {
        let mut p = ItemPlace::default();
        if let Some(value) = self.location_field.and_then(|f| item.values(f).next()) {
            p.location = value.chars().take(MAX_LOCATION_CHARS).collect();
            if let Some(list) = &self.locations {
                match list.resolve(value) {
                    Ok(id) => p.loc_id = Some(id),
                    Err(_) => p.unknown = true,
                }
            }
        }
        if let Some(fields) = &self.hit_fields {
            // Values hold no tab: white space inside them is collapsed to single spaces.
            let values: Vec<&str> = fields.iter().flat_map(|&f| item.values(f)).collect();
            p.hit_field = Some(values.join("\t"));
        }
        p
    }
}

/// The keys of a run's unchanged items by the `loc_id` they should have: what UPDATE2 (`None`)
/// and UPDATE3 (`Some`) bring their rows to where those differ.
pub fn relocations<'a>(
    unchanged: impl Iterator<Item = (&'a str, Option<u32>)>,
) -> BTreeMap<Option<u32>, Vec<&'a str>> {
    let mut by_loc: BTreeMap<Option<u32>, Vec<&'a str>> = BTreeMap::new();
    for (key, loc) in unchanged {
        by_loc.entry(loc).or_default().push(key);
    }
    by_loc
}
