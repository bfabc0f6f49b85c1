//! bench-bind: the bindings library (focuser-bind) on the development sets of shared/data —
//! the tragic filter on CrisisLex T6 and 20 Newsgroups; the binders, collector and tragic
//! filter per page with 200 000 direct phrases, next to a plain Aho-Corasick scan; the whole
//! page path; and whether bound phrases come from the content. See bench/README.md.

#[path = "../bench-multidoc/data.rs"]
#[allow(dead_code)]
mod data;
mod speed;
mod tragic;

use std::path::PathBuf;

use clap::Parser;
use focuser_bind::tragic::Params as TragicParams;

#[derive(Parser)]
struct Args {
    /// The development data (shared/data, gzipped, or a copy unpacked by its unpack.sh)
    #[arg(long, default_value = "../shared/data")]
    data: PathBuf,
    /// A few pages and documents of each set, one timing round: for CI
    #[arg(long)]
    smoke: bool,
    /// Only these parts (tragic; speed, which includes content); all by default
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Per-crisis figures
    #[arg(long)]
    verbose: bool,
    /// The tragic filter's constants, to try others: min score, min density, length offset, cap
    #[arg(long, value_delimiter = ',', num_args = 4)]
    tragic_params: Option<Vec<f32>>,
    /// Print this many of the filter's misses and false alarms, from the tuning crises and
    /// the tuning half of 20NG only (the others are for checking)
    #[arg(long, default_value_t = 0)]
    errors: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if !args.data.join("tragic").is_dir() || !args.data.join("extraction/aeb").is_dir() {
        eprintln!(
            "bench-bind: no development data in {}: this benchmark reads shared/data (the \
             project's development sets, see its README.md: CrisisLex T6, 20 Newsgroups, \
             ScrapingHub AEB, WCXB dev), which a clone of the repository does not have; put it \
             at ../shared/data beside the repository or pass --data DIR",
            args.data.display()
        );
        std::process::exit(2);
    }
    let part = |p: &str| args.only.is_empty() || args.only.iter().any(|o| o == p);
    let mut tragic_params = TragicParams::default();
    if let Some(v) = &args.tragic_params {
        tragic_params.min_score = v[0];
        tragic_params.min_density = v[1];
        tragic_params.length_offset = v[2];
        tragic_params.cap = v[3];
    }
    if part("tragic") {
        tragic::run(
            &args.data,
            args.smoke,
            &tragic_params,
            args.verbose,
            args.errors,
        )?;
    }
    if part("speed") {
        speed::run(&args.data, args.smoke)?;
    }
    Ok(())
}
