//! `yacobot analyze FILE|URL…` and `yacobot analyze --site DIR`: what MultiDoc makes of pages,
//! and why (the blocks' weights, the weighted words, the category path with posteriors and the
//! words that weighed most for its deepest category). The same composition as the worker's,
//! `focuser_multidoc::understand`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use focuser_bind::Dictionary;
use focuser_daemon::Config;
use focuser_feed::encoding::charset_of_content_type;
use focuser_multidoc::classify::Model;
use focuser_multidoc::decode::DecodeError;
use focuser_multidoc::template::{DomainEvidence, DEFAULT_CAP};
use focuser_multidoc::tokenize::Tokenizer;
use focuser_multidoc::{analyze, understand, Evidence};

use super::bound;
use super::render::{self, Shown};
use super::{fetch, files_under, load_model, Done};
use crate::bindings::BindReader;
use crate::config::{FetchConfig, MultiDocConfig};
use crate::YacobotConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A report for people
    Text,
    /// One JSON object per page, one per line
    Json,
}

// `analyze`'s arguments (its help is the command's).
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Pages: files, or http(s) URLs (fetched with the config's Fetch.* settings)
    #[arg(
        value_name = "FILE|URL",
        required_unless_present = "site",
        conflicts_with = "site"
    )]
    pages: Vec<String>,
    /// Every file under DIR is a page of one site: all of them are the template evidence
    /// that weighs each
    #[arg(long, value_name = "DIR")]
    site: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The classifier's model [default: MultiDoc.Model of the -c config; none without -c]
    #[arg(long, value_name = "M")]
    model: Option<PathBuf>,
    /// The pages' charset, as an HTTP header would declare it (overrides a URL's header)
    #[arg(long, value_name = "C")]
    charset: Option<String>,
    /// The URL a page given as a FILE came from (its URL words count for the categories)
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Top weighted words shown (0: all)
    #[arg(long, value_name = "N", default_value_t = 20)]
    words: usize,
    /// Bind the pages with this ad dictionary file too (KIND: direct, market or media; the
    /// dictionary file format); repeat for each kind. The tragic flag is shown without any
    #[arg(long = "dict", value_name = "KIND=FILE")]
    dicts: Vec<String>,
}

/// What the config gives the tool (the defaults without `-c`).
struct Settings {
    fetch: FetchConfig,
    model: Option<PathBuf>,
    max_bytes: usize,
    cap: usize,
}

impl Settings {
    fn of(config: Option<&Path>) -> anyhow::Result<Settings> {
        let Some(file) = config else {
            return Ok(Settings {
                fetch: FetchConfig::default(),
                model: None,
                max_bytes: MultiDocConfig::default().max_bytes,
                cap: DEFAULT_CAP,
            });
        };
        let c = Config::<YacobotConfig>::load_for_tool(file)?;
        let m = &c.daemon.multidoc;
        // The daemon runs in its rootdir: a relative model path is relative to it.
        let model = (!m.model.as_os_str().is_empty()).then(|| c.common.rootdir.join(&m.model));
        Ok(Settings {
            fetch: c.daemon.fetch.clone(),
            model,
            max_bytes: m.max_bytes,
            cap: m.max_fingerprints as usize,
        })
    }
}

/// A page's bytes and where they came from.
struct Input {
    source: String,
    body: Vec<u8>,
    charset: Option<String>,
    url: Option<String>,
}

fn is_url(s: &str) -> bool {
    let s = s.to_ascii_lowercase();
    s.starts_with("http://") || s.starts_with("https://")
}

struct Analyzer<'a> {
    args: &'a AnalyzeArgs,
    settings: Settings,
    model: Option<(String, Model)>,
    tokenizer: Tokenizer,
    dicts: Vec<Dictionary>,
    binder: BindReader,
    out: std::io::StdoutLock<'static>,
    bad: usize,
}

/// Runs `yacobot [-c config] analyze …`.
pub fn run(config: Option<&Path>, args: &AnalyzeArgs) -> anyhow::Result<Done> {
    let settings = Settings::of(config)?;
    if args.url.is_some() && (args.pages.len() != 1 || is_url(&args.pages[0])) {
        bail!("--url goes with one FILE: the address that page came from");
    }
    let model = match args.model.clone().or_else(|| settings.model.clone()) {
        Some(file) => Some((file.display().to_string(), load_model(&file)?)),
        None => None,
    };
    let tokenizer = model.as_ref().map_or_else(
        || Tokenizer::new(Default::default()),
        |(_, m)| m.tokenizer(),
    );
    let dicts = bound::load_dicts(&args.dicts)?;
    let mut a = Analyzer {
        args,
        settings,
        model,
        tokenizer,
        dicts,
        binder: BindReader::new()?,
        out: std::io::stdout().lock(),
        bad: 0,
    };
    match &args.site {
        Some(dir) => a.site(dir)?,
        None => {
            for p in &args.pages {
                match a.input(p) {
                    Ok(input) => a.page(input, None)?,
                    Err(e) => a.fail(p, &e),
                }
            }
        }
    }
    a.out.flush()?;
    Ok(Done { bad: a.bad })
}

impl Analyzer<'_> {
    fn fail(&mut self, source: &str, e: &dyn std::fmt::Display) {
        self.bad += 1;
        eprintln!("yacobot analyze: {source}: {e:#}");
    }

    /// A file's bytes (refused before reading when over the size limit) or a URL's.
    fn input(&self, page: &str) -> anyhow::Result<Input> {
        if is_url(page) {
            let got = fetch::fetch(page, &self.settings.fetch)?;
            let charset = self
                .args
                .charset
                .clone()
                .or_else(|| charset_of_content_type(&got.content_type).map(str::to_owned));
            return Ok(Input {
                source: page.to_owned(),
                body: got.body,
                charset,
                url: Some(got.url),
            });
        }
        let bytes = std::fs::metadata(page)?.len();
        let limit = self.settings.max_bytes;
        if bytes > limit as u64 {
            let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
            return Err(DecodeError::TooLarge { bytes, limit }.into());
        }
        Ok(Input {
            source: page.to_owned(),
            body: std::fs::read(page)?,
            charset: self.args.charset.clone(),
            url: self.args.url.clone(),
        })
    }

    /// Analyses and prints one page; a page the analysis refuses is said and counted, only a
    /// failure to write the output ends the tool.
    fn page(&mut self, input: Input, evidence: Option<Evidence<'_>>) -> anyhow::Result<()> {
        let page = understand(
            &input.body,
            input.charset.as_deref(),
            input.url.as_deref(),
            self.settings.max_bytes,
            evidence,
            &mut self.tokenizer,
            self.model.as_ref().map(|(_, m)| m),
        );
        let page = match page {
            Ok(p) => p,
            Err(e) => {
                self.fail(&input.source, &e);
                return Ok(());
            }
        };
        let url = input.url.as_deref().unwrap_or(&input.source);
        let dicts: Vec<&Dictionary> = self.dicts.iter().collect();
        let model = self.model.as_ref().map(|(_, m)| m);
        let binding = self.binder.bind(0, url, &page, model, &dicts);
        let shown = Shown {
            source: &input.source,
            url: input.url.as_deref(),
            page: &page,
            model: self.model.as_ref().map(|(f, m)| (f.as_str(), m)),
            words: self.args.words,
            binding: &binding,
        };
        match self.args.format {
            Format::Text => render::text(&mut self.out, &shown),
            Format::Json => render::json(&mut self.out, &shown),
        }
        .context("writing the output")
    }

    /// Every file under `dir` as a page of one domain: all are added to the evidence first,
    /// then each is weighed with it. Files that are not pages (images, empty files) are passed
    /// over with a note.
    fn site(&mut self, dir: &Path) -> anyhow::Result<()> {
        let mut domain = DomainEvidence::new(self.settings.cap);
        let mut pages = Vec::new();
        let mut skipped = 0;
        for f in files_under(dir)? {
            let source = f.display().to_string();
            let analysed = self.input(&source).and_then(|i| {
                Ok(analyze(
                    &i.body,
                    i.charset.as_deref(),
                    self.settings.max_bytes,
                    None,
                )?)
            });
            match analysed {
                Ok(a) => {
                    domain.add_page(a.fingerprints);
                    pages.push(source);
                }
                Err(e) => match e.downcast_ref::<DecodeError>() {
                    Some(DecodeError::Binary { .. } | DecodeError::Empty) => {
                        skipped += 1;
                        eprintln!("yacobot analyze: {source}: not a page, passed over: {e}");
                    }
                    _ => self.fail(&source, &e),
                },
            }
        }
        if self.args.format == Format::Text {
            writeln!(
                self.out,
                "site {}: {} pages ({skipped} other files passed over); each weighed with the evidence of all\n",
                dir.display(),
                pages.len()
            )?;
        }
        let evidence = Evidence {
            domain: &domain,
            includes_page: true,
        };
        for source in pages {
            match self.input(&source) {
                Ok(input) => self.page(input, Some(evidence))?,
                Err(e) => self.fail(&source, &e),
            }
        }
        Ok(())
    }
}
