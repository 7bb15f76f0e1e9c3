//! `harness report`: rebuild the tables and charts of a run folder from its results, without
//! rerunning anything.

use super::Outcome;
use crate::console::print_run_folder;
use crate::report;
use crate::results::RunResults;
use anyhow::bail;
use std::path::{Path, PathBuf};

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
    refuse_foreign(&dir, &run, &args.run)?;
    let named = if args.out.is_some() {
        "--out"
    } else {
        "the run's folder"
    };
    crate::output::ensure_writable(&dir, named)?;
    print!("{}", report::terminal(&run));
    let explain = match args.html {
        true => report::html::Explain::Compute,
        false => report::html::Explain::Cached,
    };
    let started = std::time::Instant::now();
    if args.html {
        // Minutes on a small machine the first time, with nothing else to show for them.
        eprintln!(
            "Compiling each rung with NVRTC and nvdisasm for its page's resources and SASS \
             (in parallel; cached under the lab folder, so a second report takes seconds)..."
        );
    }
    report::write_report_with(&run, &dir, explain)?;
    if args.html {
        eprintln!(
            "Tables, charts and pages written in {:.0} s.",
            started.elapsed().as_secs_f64()
        );
    }
    // A report elsewhere carries its results: `report` can rebuild it, and knows it for this
    // run's the next time it is given the folder.
    let results = crate::runs::results_file(&dir);
    let read = crate::runs::results_file(&args.run);
    let same = |a: &Path, b: &Path| {
        a.canonicalize()
            .ok()
            .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    if !same(&results, &read) {
        run.write(&results)?;
    }
    print_run_folder(&dir, Default::default());
    Ok(true)
}

/// The tables, charts and pages of `run` may go into `dir` when it is new or empty, holds
/// only the results file read, or holds this same run: else they would overwrite another
/// run's report, or files that are no report's, without a word.
fn refuse_foreign(dir: &Path, run: &RunResults, input: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let input = input.canonicalize().ok();
    let others: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.canonicalize().ok() != input)
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    let theirs = RunResults::load(dir);
    if theirs.as_ref().is_ok_and(|t| {
        (&t.device.name, &t.date, &t.commit) == (&run.device.name, &run.date, &run.commit)
    }) {
        return Ok(());
    }
    let what = match theirs {
        Ok(t) => format!("the report of another run ({}, {})", t.device.name, t.date),
        Err(_) => format!("{} files of its own", others.len()),
    };
    bail!(
        "{} holds {what}, which this report would overwrite: give --out an empty or new folder",
        dir.display()
    )
}

/// The folder of `file`, `.` for a bare file name.
pub fn parent_dir(file: &std::path::Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
