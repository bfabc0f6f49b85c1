//! The catalog: a tree (a forest: several roots are allowed) of categories of any depth, each
//! with an id, a parent and a name. Read from an `id \t parent \t name` file, from the IAB
//! Content Taxonomy's TSV (the same three first columns under two header rows), or made from a
//! corpus's label paths.

use rustc_hash::FxHashMap;

use super::ClassifyError;

/// A category.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    /// Index of the parent in [`Catalog::nodes`]; `None` for a root.
    pub parent: Option<u32>,
    pub name: String,
}

/// Categories, parents before their children.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalog {
    nodes: Vec<Node>,
    by_id: FxHashMap<String, u32>,
}

/// Separates the names of a label path: `Sports > Soccer` (names may hold `/`, as IAB's do).
pub const PATH_SEPARATOR: &str = " > ";

impl Catalog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads `id \t parent \t name` lines (an empty parent makes a root; more columns are
    /// ignored; empty lines and lines starting with `#` are skipped). An IAB Content Taxonomy
    /// TSV is read the same way once its header row (`Unique ID \t Parent \t Name ...`) is
    /// passed. Parents may come after their children.
    pub fn parse(text: &str) -> Result<Self, ClassifyError> {
        let bad = |line: usize, reason: String| ClassifyError::Catalog { line, reason };
        let lines: Vec<&str> = text.lines().collect();
        // An IAB file: everything up to its header row is title.
        let first = lines
            .iter()
            .position(|l| l.starts_with("Unique ID\tParent\tName"))
            .map_or(0, |i| i + 1);
        let mut rows = Vec::new();
        for (i, line) in lines.iter().enumerate().skip(first) {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let mut cols = line.split('\t').map(str::trim);
            let (Some(id), Some(parent), Some(name)) = (cols.next(), cols.next(), cols.next())
            else {
                return Err(bad(
                    i + 1,
                    "expected id, parent and name separated by tabs".into(),
                ));
            };
            if id.is_empty() || name.is_empty() {
                return Err(bad(i + 1, "empty id or name".into()));
            }
            rows.push((i + 1, id, parent, name));
        }
        let mut by_id = FxHashMap::default();
        for (k, &(line, id, _, _)) in rows.iter().enumerate() {
            if by_id.insert(id, k).is_some() {
                return Err(bad(line, format!("id {id:?} appears twice")));
            }
        }
        // Parents before children: a node is placed once its parent is.
        let mut placed: Vec<Option<u32>> = vec![None; rows.len()];
        let mut cat = Catalog::new();
        for k in 0..rows.len() {
            let mut chain = vec![k];
            while let Some(&top) = chain.last() {
                if placed.get(top).copied().flatten().is_some() {
                    chain.pop();
                    continue;
                }
                let (line, id, parent, name) = rows[top];
                let parent_index = if parent.is_empty() {
                    None
                } else {
                    let Some(&p) = by_id.get(parent) else {
                        return Err(bad(
                            line,
                            format!("parent {parent:?} of {id:?} is not in the catalog"),
                        ));
                    };
                    match placed[p] {
                        Some(at) => Some(at),
                        None if chain.contains(&p) => {
                            return Err(bad(line, format!("{id:?} is its own ancestor")));
                        }
                        None => {
                            chain.push(p);
                            continue;
                        }
                    }
                };
                placed[top] = Some(cat.push(id, parent_index, name));
                chain.pop();
            }
        }
        Ok(cat)
    }

    fn push(&mut self, id: &str, parent: Option<u32>, name: &str) -> u32 {
        let i = self.nodes.len() as u32;
        self.nodes.push(Node {
            id: id.to_owned(),
            parent,
            name: name.to_owned(),
        });
        self.by_id.insert(id.to_owned(), i);
        i
    }

    /// Builds a catalog from nodes already in parent-first order (a model file's).
    pub(crate) fn from_nodes(nodes: Vec<Node>) -> Result<Self, String> {
        let mut cat = Catalog::new();
        for (i, n) in nodes.into_iter().enumerate() {
            if n.parent.is_some_and(|p| p as usize >= i) {
                return Err(format!("node {i}'s parent does not come before it"));
            }
            if cat.by_id.contains_key(&n.id) {
                return Err(format!("id {:?} appears twice", n.id));
            }
            cat.push(&n.id, n.parent, &n.name);
        }
        Ok(cat)
    }

    /// The node at the end of a path of names from a root, made with its missing ancestors if
    /// need be (a catalog made from a corpus's labels). A node made this way has the path up to
    /// it as its id.
    pub fn add_path<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) -> Option<u32> {
        let mut at: Option<u32> = None;
        let mut id = String::new();
        for name in names {
            let name = name.trim();
            if name.is_empty() {
                return None;
            }
            if !id.is_empty() {
                id.push_str(PATH_SEPARATOR);
            }
            id.push_str(name);
            at = Some(match self.by_id.get(&id) {
                Some(&i) => i,
                None => self.push(&id, at, name),
            });
        }
        at
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, i: u32) -> Option<&Node> {
        self.nodes.get(i as usize)
    }

    pub fn by_id(&self, id: &str) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    /// The node a label names: its id, or the path of its names from a root joined by
    /// [`PATH_SEPARATOR`] (names compared without regard to case).
    pub fn resolve(&self, label: &str) -> Option<u32> {
        let label = label.trim();
        if let Some(i) = self.by_id(label) {
            return Some(i);
        }
        let mut at: Option<u32> = None;
        for name in label.split(PATH_SEPARATOR).map(str::trim) {
            let next = self
                .nodes
                .iter()
                .enumerate()
                .position(|(_, n)| n.parent == at && n.name.eq_ignore_ascii_case(name))?;
            at = Some(next as u32);
        }
        at
    }

    /// The nodes from a root down to `i`.
    pub fn path(&self, i: u32) -> Vec<u32> {
        let mut p = Vec::new();
        let mut at = Some(i);
        while let Some(n) = at {
            p.push(n);
            at = self.node(n).and_then(|x| x.parent);
        }
        p.reverse();
        p
    }

    /// `i`'s depth: 1 for a root.
    pub fn depth(&self, i: u32) -> usize {
        self.path(i).len()
    }

    /// The path's names joined by [`PATH_SEPARATOR`].
    pub fn path_names(&self, i: u32) -> String {
        let names: Vec<&str> = self
            .path(i)
            .into_iter()
            .filter_map(|n| self.node(n).map(|x| x.name.as_str()))
            .collect();
        names.join(PATH_SEPARATOR)
    }
}
