//! `harness report`: rebuild the tables and charts of a run folder from its results, without
//! rerunning anything.

use super::Outcome;
use crate::console::print_run_folder;
use crate::report;
use crate::results::RunResults;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A run folder (target/lab/runs/<run>, or a published one under results/), or its
    /// results JSON.
    pub run: PathBuf,
    /// Write the tables and charts into this folder instead of the run's own.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also compute each rung page's registers, occupancy and SASS mix (`harness explain`:
    /// NVRTC and nvdisasm, cached under the lab folder) where not cached yet.
    #[arg(long)]
    pub html: bool,
}

pub fn run(args: &Args) -> Outcome {
    let run = RunResults::load(&args.run)?;
    let dir = match &args.out {
        Some(d) => d.clone(),
        None if args.run.is_dir() => args.run.clone(),
        None => parent_dir(&args.run),
    };
    crate::output::ensure_writable(&dir)?;
    print!("{}", report::terminal(&run));
    let explain = match args.html {
        true => report::html::Explain::Compute,
        false => report::html::Explain::Cached,
    };
    report::write_report_with(&run, &dir, explain)?;
    print_run_folder(&dir, Default::default());
    Ok(true)
}

/// The folder of `file`, `.` for a bare file name.
pub fn parent_dir(file: &std::path::Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
