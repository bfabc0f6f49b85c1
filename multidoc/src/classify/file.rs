//! The model file: a 24-byte header (magic, format version, body length, CRC-32C of the body)
//! and a little-endian body; docs/classifier.md gives the layout byte by byte. Reading checks
//! everything before anything is used: magic, version, length, checksum, then every count,
//! index and number against what the body holds, so that a damaged file is an error, never a
//! panic or a model that answers nonsense.

use rustc_hash::FxHashMap;

use super::catalog::{Catalog, Node};
use super::model::{Feature, Model, Scored};
use super::{ClassifyError, Kind, Params};
use crate::tokenize;

/// The file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"FOCUSNB\0";
/// The layout this program writes and reads.
pub const FORMAT_VERSION: u32 = 1;

const HEADER: usize = 24;
const NONE: u32 = u32::MAX;

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
}

impl Model {
    /// The model file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Out(Vec::with_capacity(
            64 + self.postings.len() * 8 + self.features.len() * 32,
        ));
        let p = &self.params;
        b.u8(u8::from(self.options.bigrams));
        b.u8(match p.kind {
            Kind::Multinomial => 0,
            Kind::Complement => 1,
            Kind::OneVsAll => 2,
        });
        b.u8(u8::from(p.log_tf)
            | u8::from(p.idf) << 1
            | u8::from(p.normalize) << 2
            | u8::from(p.weight_normalize) << 3);
        b.u8(0);
        for v in [
            p.alpha,
            p.url_weight,
            p.hierarchy,
            p.prior,
            p.temperature,
            p.threshold,
        ] {
            b.f32(v);
        }
        b.u32(p.min_df);
        b.u64(self.documents);
        b.u32(self.catalog.len() as u32);
        for n in self.catalog.nodes() {
            b.str(&n.id);
            b.u32(n.parent.unwrap_or(NONE));
            b.str(&n.name);
        }
        b.u32(self.scored.len() as u32);
        for s in &self.scored {
            b.u32(s.node);
            b.u32(s.parent.unwrap_or(NONE));
            b.f32(s.base);
            b.f32(s.scale);
            b.u8(u8::from(s.prior.is_some()));
            b.f32(s.prior.unwrap_or(0.0));
        }
        b.u32(self.features.len() as u32);
        for (i, f) in self.features.iter().enumerate() {
            b.u64(f.hash);
            b.u8(u8::from(f.url));
            b.f32(f.idf);
            b.f32(f.background);
            b.str(&f.text);
            let (lo, hi) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
            b.u32((hi - lo) as u32);
            for &(s, d) in &self.postings[lo..hi] {
                b.u32(s);
                b.f32(d);
            }
        }
        let body = b.0;
        let mut out = Vec::with_capacity(HEADER + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc_fast::crc32_iscsi(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// A model from its file's bytes; a damaged, truncated or foreign file is an error that
    /// says which.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model, ClassifyError> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(ClassifyError::NotAModel);
        }
        let mut head = In {
            b: bytes,
            at: MAGIC.len(),
        };
        let truncated = |expected: u64| ClassifyError::Truncated {
            expected,
            found: bytes.len() as u64,
        };
        let version = head.u32().map_err(|_| truncated(HEADER as u64))?;
        if version != FORMAT_VERSION {
            return Err(ClassifyError::Version { found: version });
        }
        let len = head.u64().map_err(|_| truncated(HEADER as u64))?;
        let crc = head.u32().map_err(|_| truncated(HEADER as u64))?;
        let expected = (HEADER as u64).saturating_add(len);
        if (bytes.len() as u64) < expected {
            return Err(truncated(expected));
        }
        if (bytes.len() as u64) > expected {
            return Err(ClassifyError::Damaged(format!(
                "{} bytes after the model's end",
                bytes.len() as u64 - expected
            )));
        }
        let body = &bytes[HEADER..];
        let found = crc_fast::crc32_iscsi(body);
        if found != crc {
            return Err(ClassifyError::Checksum {
                expected: crc,
                found,
            });
        }
        let mut model = parse(&mut In { b: body, at: 0 }).map_err(ClassifyError::Damaged)?;
        model.checksum = crc;
        Ok(model)
    }
}

struct In<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let Some(end) = end else {
            return Err(format!("ends inside a field at byte {}", self.at));
        };
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn f32(&mut self) -> Result<f32, String> {
        let v = f32::from_le_bytes(self.array()?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(format!(
                "a number that is not finite at byte {}",
                self.at - 4
            ))
        }
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.u32()? as usize;
        let at = self.at;
        let s = self.take(n)?;
        String::from_utf8(s.to_vec()).map_err(|_| format!("text that is not UTF-8 at byte {at}"))
    }
    /// A count of items of at least `size` bytes each, checked against what is left.
    fn count(&mut self, size: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(size) > self.b.len() - self.at {
            return Err(format!(
                "a count of {n} that the file cannot hold at byte {}",
                self.at - 4
            ));
        }
        Ok(n)
    }
}

fn parse(r: &mut In<'_>) -> Result<Model, String> {
    let options = tokenize::Options {
        bigrams: r.u8()? & 1 != 0,
    };
    let kind = match r.u8()? {
        0 => Kind::Multinomial,
        1 => Kind::Complement,
        2 => Kind::OneVsAll,
        k => return Err(format!("unknown kind of naive Bayes {k}")),
    };
    let flags = r.u8()?;
    r.u8()?;
    let mut params = Params {
        kind,
        log_tf: flags & 1 != 0,
        idf: flags & 2 != 0,
        normalize: flags & 4 != 0,
        weight_normalize: flags & 8 != 0,
        ..Params::default()
    };
    for v in [
        &mut params.alpha,
        &mut params.url_weight,
        &mut params.hierarchy,
        &mut params.prior,
        &mut params.temperature,
        &mut params.threshold,
    ] {
        *v = r.f32()?;
    }
    params.min_df = r.u32()?;
    let documents = r.u64()?;
    let n = r.count(12)?;
    let mut nodes = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.str()?;
        let parent = r.u32()?;
        let name = r.str()?;
        let parent = (parent != NONE).then_some(parent);
        nodes.push(Node { id, parent, name });
    }
    let catalog = Catalog::from_nodes(nodes)?;
    let s = r.count(21)?;
    let mut scored = Vec::with_capacity(s);
    for i in 0..s {
        let node = r.u32()?;
        let parent = r.u32()?;
        let base = r.f32()?;
        let scale = r.f32()?;
        let class = r.u8()? != 0;
        let prior = r.f32()?;
        if node as usize >= catalog.len() || (parent != NONE && parent as usize >= i) {
            return Err(format!("scored node {i} points outside the catalog"));
        }
        scored.push(Scored {
            node,
            parent: (parent != NONE).then_some(parent),
            base,
            scale,
            prior: class.then_some(prior),
        });
    }
    let f = r.count(25)?;
    let mut features = Vec::with_capacity(f);
    let mut offsets = Vec::with_capacity(f + 1);
    let mut postings = Vec::new();
    let mut rows = FxHashMap::default();
    for i in 0..f {
        let hash = r.u64()?;
        let url = r.u8()? != 0;
        let idf = r.f32()?;
        let background = r.f32()?;
        let text = r.str()?;
        if rows.insert(hash, i as u32).is_some() {
            return Err(format!("feature {i} appears twice"));
        }
        offsets.push(postings.len() as u32);
        for _ in 0..r.count(8)? {
            let at = r.u32()?;
            let d = r.f32()?;
            if at as usize >= scored.len() {
                return Err(format!(
                    "a posting of feature {i} points outside the scored nodes"
                ));
            }
            postings.push((at, d));
        }
        features.push(Feature {
            hash,
            text,
            url,
            idf,
            background,
        });
    }
    offsets.push(postings.len() as u32);
    if r.at != r.b.len() {
        return Err(format!(
            "{} bytes left after the last feature",
            r.b.len() - r.at
        ));
    }
    let mut model = Model {
        catalog,
        options,
        params,
        scored,
        features,
        offsets,
        postings,
        lookup: FxHashMap::default(),
        dense: Vec::new(),
        documents,
        checksum: 0,
    };
    model.index();
    Ok(model)
}
