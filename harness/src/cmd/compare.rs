//! `harness compare`: per-row time ratios of two results files (before and after, or two
//! devices), and a chart.

use super::Outcome;
use super::report::parent_dir;
use crate::compare;
use crate::results::RunResults;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Where to write the chart; default: the folder of B.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: &Args) -> Outcome {
    let ra = RunResults::read(&args.a)?;
    let rb = RunResults::read(&args.b)?;
    let ratios = compare::ratios(&ra, &rb);
    print!("{}", compare::text(&ra, &rb, &ratios));
    let dir = args.out.clone().unwrap_or_else(|| parent_dir(&args.b));
    for f in compare::write_charts(&ra, &rb, &ratios, &dir)? {
        println!("wrote {}", f.display());
    }
    Ok(true)
}
