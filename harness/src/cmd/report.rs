//! `harness report`: rebuild every table and chart of a results JSON without rerunning
//! anything.

use super::Outcome;
use super::run::merge_peers;
use crate::calibrate::Calibration;
use crate::results::RunResults;
use crate::{output, report};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// A results file written by `harness run` (results/<device>/<workload>.json).
    pub results: PathBuf,
    /// Where to write; default: the folder of the results file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: &Args) -> Outcome {
    let file = &args.results;
    let mut run = RunResults::read(file)?;
    if run.calibration.is_none() {
        run.calibration = calibration_beside(file, &run);
    }
    merge_peers(&mut run, &parent_dir(file));
    let dir = args.out.clone().unwrap_or_else(|| parent_dir(file));
    output::ensure_writable(&dir)?;
    print!("{}", report::terminal(&run));
    let mut files = report::write_tables(&run, &dir, false)?;
    files.extend(report::charts::write_all(&run, &dir)?);
    println!();
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(true)
}

/// The calibration cached beside a results file, if it belongs to that file's device.
fn calibration_beside(file: &Path, run: &RunResults) -> Option<Calibration> {
    let dir = file.parent()?;
    Calibration::read(&dir.join("calibration.json"))
        .ok()
        .filter(|c| c.matches(&run.device))
}

/// The folder of `file`, `.` for a bare file name.
pub fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
