//! Binding one page, inside the page analysis worker's batch, with the weighted blocks and
//! the categories the analysis just made: its words read once ([`PageText`]), the tragic
//! filter, then each dictionary in force through the binders and the collector
//! (`focuser_bind::binding::bind`, docs/bindings.md).

use focuser_bind::binder::Finder;
use focuser_bind::binding::{bind, collected, TypeParams};
use focuser_bind::collect::Collected;
use focuser_bind::page::PageText;
use focuser_bind::tragic::{self, Lexicon};
use focuser_bind::{Dictionary, PageBinding};
use focuser_formats::segment::Position;
use focuser_multidoc::classify::Model;
use focuser_multidoc::tokenize::Tokenizer;
use focuser_multidoc::Page;

use super::dicts::Dicts;

/// What a batch asks of the bindings, per URL, in archive order.
pub struct Outcome {
    pub id: u64,
    /// The crawl archive item it comes from.
    pub place: Position,
    /// The page's new binding; `None`: it has none (gone, or not analysable).
    pub binding: Option<PageBinding>,
}

/// Binds pages with the dictionaries in force; keeps its buffers and the dictionaries from
/// batch to batch.
pub struct PageBinder {
    pub dicts: Dicts,
    pub reader: BindReader,
    /// The batch's outcomes, taken by the worker once the batch is planned.
    pub outcomes: Vec<Outcome>,
}

impl PageBinder {
    pub fn new() -> anyhow::Result<PageBinder> {
        Ok(PageBinder {
            dicts: Dicts::default(),
            reader: BindReader::new()?,
            outcomes: Vec::new(),
        })
    }

    /// Binds an analysed page (weighed with its domain's evidence, classified if a model is
    /// in use) with every dictionary in force.
    pub fn page(
        &mut self,
        id: u64,
        url: &str,
        place: Position,
        page: &Page,
        model: Option<&Model>,
    ) {
        let dicts: Vec<&Dictionary> = self.dicts.all().iter().map(|l| &l.dict).collect();
        let binding = self.reader.bind(id, url, page, model, &dicts);
        self.outcomes.push(Outcome {
            id,
            place,
            binding: Some(binding),
        });
    }

    /// A duplicate's binding: its group's representative's `shared`, under the page's own doc
    /// id and URL (docs/bindings.md "Duplicates").
    pub fn shared(&mut self, id: u64, url: &str, place: Position, shared: &PageBinding) {
        let mut binding = shared.clone();
        binding.doc = id;
        binding.url = url.to_owned();
        self.outcomes.push(Outcome {
            id,
            place,
            binding: Some(binding),
        });
    }

    /// A URL with no binding any more: gone, or its page could not be analysed.
    pub fn none(&mut self, id: u64, place: Position) {
        self.outcomes.push(Outcome {
            id,
            place,
            binding: None,
        });
    }
}

/// What binding a page needs besides the dictionaries: the tokenizer, the tragic lexicon and
/// the buffers. The worker and `yacobot analyze --dict` bind with it alike.
pub struct BindReader {
    /// The binders' own tokenizer (the default options, as `yacobot dict load` stems
    /// phrases): a page and a phrase must be stemmed alike whatever the model's options.
    pub tokenizer: Tokenizer,
    lexicon: Lexicon,
    text: PageText,
    finder: Finder,
}

impl BindReader {
    pub fn new() -> anyhow::Result<BindReader> {
        let mut tokenizer = Tokenizer::default();
        let lexicon = Lexicon::builtin(&mut tokenizer)
            .map_err(|e| anyhow::anyhow!("the tragic lexicon: {e}"))?;
        Ok(BindReader {
            tokenizer,
            lexicon,
            text: PageText::new(),
            finder: Finder::new(),
        })
    }

    /// The page's binding with `dicts` (in [`focuser_bind::Kind`]'s order): its words read
    /// once, the tragic filter, then each dictionary through the binders and the collector.
    pub fn bind(
        &mut self,
        id: u64,
        url: &str,
        page: &Page,
        model: Option<&Model>,
        dicts: &[&Dictionary],
    ) -> PageBinding {
        let a = &page.analysis;
        self.text.read(
            &mut self.tokenizer,
            a.blocks
                .iter()
                .zip(&a.weights)
                .map(|(b, &w)| (b.text.as_str(), w)),
        );
        let categories = categories(page, model);
        let verdict = tragic::judge(
            &self.lexicon,
            &self.text,
            &mut self.finder,
            &tragic::Params::default(),
        );
        let bindings = dicts
            .iter()
            .map(|d| {
                let params = TypeParams::default_for(d.kind());
                bind(
                    d,
                    &self.text,
                    &categories,
                    &params,
                    verdict.tragic,
                    &mut self.finder,
                )
            })
            .collect();
        PageBinding::new(id, url, verdict.tragic, bindings)
    }
}

impl BindReader {
    /// After [`BindReader::bind`] of `page`: what the binder and the collector keep of
    /// `dict`'s phrases there, with the blocks they matched in (`yacobot bindings URL`).
    pub fn kept(
        &mut self,
        page: &Page,
        model: Option<&Model>,
        dict: &Dictionary,
    ) -> Vec<Collected> {
        let params = TypeParams::default_for(dict.kind());
        let categories = categories(page, model);
        collected(dict, &self.text, &categories, &params, &mut self.finder)
    }
}

/// The page's category path as catalog ids from the root, with posteriors.
fn categories(page: &Page, model: Option<&Model>) -> Vec<(String, f32)> {
    let (Some(c), Some(m)) = (&page.categories, model) else {
        return Vec::new();
    };
    c.path
        .iter()
        .filter_map(|&(n, p)| Some((m.catalog().node(n)?.id.clone(), p)))
        .collect()
}
