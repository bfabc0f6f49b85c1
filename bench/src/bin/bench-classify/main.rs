//! bench-classify (bench/README.md): focuser's naive Bayes next to scikit-learn's MultinomialNB
//! and LinearSVC on exactly the same split of the same data (20 Newsgroups, Lenta headlines,
//! Reuters-21578), and the classifier's speed on a ~700-node catalog (IAB Content Taxonomy 3.1).
//!
//!     cargo build --release -p focuser-bench
//!     target/release/bench-classify                  # every set, sklearn in a venv it makes
//!     target/release/bench-classify --tune           # the variants, on the train part only
//!
//! Reads `../shared/data` (or `--data DIR`); the venv is made under `--work`.

mod ours;
mod sets;
mod sklearn;
mod speed;

use std::path::PathBuf;

use clap::Parser;
use focuser_multidoc::classify::{Kind, Params};
use focuser_multidoc::tokenize;

use sets::Set;

#[derive(Parser)]
pub struct Args {
    /// The development data (default: ../shared/data beside the repository)
    #[arg(long)]
    data: Option<PathBuf>,
    /// Where the scikit-learn venv and the splits' files go
    #[arg(long, default_value = "/var/tmp/bench-classify")]
    work: PathBuf,
    /// Sets to run, any of: 20newsgroups, lenta, reuters, speed
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "20newsgroups,lenta,reuters,speed"
    )]
    sets: Vec<String>,
    /// A few hundred documents per set and no scikit-learn (for CI)
    #[arg(long)]
    smoke: bool,
    /// Leave scikit-learn out
    #[arg(long)]
    no_sklearn: bool,
    /// Run the variants of the classifier on each set's train part (cut again), not the test
    #[arg(long)]
    tune: bool,
    /// Naive Bayes kind: complement or multinomial
    #[arg(long, default_value = "complement")]
    kind: String,
    #[arg(long)]
    alpha: Option<f32>,
    #[arg(long)]
    hierarchy: Option<f32>,
    #[arg(long)]
    prior: Option<f32>,
    #[arg(long)]
    min_df: Option<u32>,
    #[arg(long)]
    no_bigrams: bool,
    #[arg(long)]
    no_log_tf: bool,
    #[arg(long)]
    no_idf: bool,
    #[arg(long)]
    no_normalize: bool,
    #[arg(long)]
    weight_normalize: bool,
    /// Multi-label sets: train a class per label (each document counted in each of its
    /// labels) rather than a class per set of labels
    #[arg(long)]
    label_each: bool,
}

impl Args {
    fn params(&self) -> Params {
        let d = Params::default();
        Params {
            kind: match self.kind.chars().next() {
                Some('m') => Kind::Multinomial,
                Some('o') => Kind::OneVsAll,
                _ => Kind::Complement,
            },
            alpha: self.alpha.unwrap_or(d.alpha),
            hierarchy: self.hierarchy.unwrap_or(d.hierarchy),
            prior: self.prior.unwrap_or(d.prior),
            min_df: self.min_df.unwrap_or(d.min_df),
            log_tf: !self.no_log_tf,
            idf: !self.no_idf,
            normalize: !self.no_normalize,
            weight_normalize: self.weight_normalize,
            ..d
        }
    }

    fn options(&self) -> tokenize::Options {
        tokenize::Options {
            bigrams: !self.no_bigrams,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let data = match sets::data_dir(args.data.clone()) {
        Ok(d) => d,
        Err(e) => {
            // No data is no failure of the code: say where to get it, exit 2.
            eprintln!("bench-classify: {e:#}");
            std::process::exit(2);
        }
    };
    std::fs::create_dir_all(&args.work)?;
    let venv = if args.smoke || args.no_sklearn {
        None
    } else {
        Some(sklearn::venv(&args.work)?)
    };
    println!(
        "bench-classify: data {}, params {:?}, {:?}",
        data.display(),
        args.params(),
        args.options()
    );
    for name in &args.sets {
        let set = match name.as_str() {
            "20newsgroups" => sets::newsgroups(&data)?,
            "lenta" => sets::lenta(&data)?,
            "reuters" => sets::reuters(&data)?,
            "speed" => {
                speed::run(&data, &args)?;
                continue;
            }
            other => anyhow::bail!("unknown set {other}"),
        };
        let set = if args.smoke {
            set.smaller(400, 100)
        } else {
            set
        };
        run_set(&set, &args, venv.as_deref())?;
    }
    Ok(())
}

fn run_set(set: &Set, args: &Args, venv: Option<&std::path::Path>) -> anyhow::Result<()> {
    let inner;
    let set = if args.tune {
        inner = set.inner();
        &inner
    } else {
        set
    };
    println!(
        "{}: {} train, {} {} documents",
        set.name,
        set.train.len(),
        set.test.len(),
        if args.tune { "validation" } else { "test" }
    );
    let alphas: &[f32] = if args.alpha.is_some() {
        &[]
    } else {
        &focuser_multidoc::classify::ALPHAS
    };
    let r = ours::run(
        set,
        &args.params(),
        args.options(),
        !args.label_each,
        alphas,
    )?;
    println!(
        "{:<14} {:<26} {:>8.4}  (train {:.2} s, test {:.2} s, {} features)",
        set.name, "focuser NB", r.score, r.train_s, r.test_s, r.features
    );
    if let Some(v) = venv {
        for (model, score, secs) in sklearn::run(v, &args.work, set)? {
            println!("{:<14} {:<26} {score:>8.4}  ({secs:.2} s)", set.name, model);
        }
    }
    Ok(())
}
