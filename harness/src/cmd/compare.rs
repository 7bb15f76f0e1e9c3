//! `harness compare`: per-row time ratios of two runs (before and after, or two devices), and
//! a chart.

use super::Outcome;
use crate::compare;
use crate::results::RunResults;
use crate::runs::LabDir;
use anyhow::bail;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The run compared against: a run folder or its results JSON.
    pub a: PathBuf,
    /// The run compared: a run folder or its results JSON.
    pub b: PathBuf,
    /// Where to write the chart; default: target/lab/compare/<a>-vs-<b>/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the two runs side by side as a web page, `index.html` in the same folder.
    #[arg(long)]
    pub html: bool,
}

pub fn run(args: &Args) -> Outcome {
    let ra = RunResults::load(&args.a)?;
    let rb = RunResults::load(&args.b)?;
    let ratios = compare::ratios(&ra, &rb);
    if ratios.iter().all(|r| r.a_ms.is_none() || r.b_ms.is_none()) {
        bail!(
            "{} and {} share no timed row (one kernel at one shape, timed in both; a simulator \
             run times nothing): nothing to compare",
            args.a.display(),
            args.b.display()
        );
    }
    print!("{}", compare::text(&ra, &rb, &ratios));
    let name = |p: &std::path::Path| {
        let p = if p.is_dir() {
            p
        } else {
            p.parent().unwrap_or(p)
        };
        p.file_name()
            .map_or("run".into(), |n| n.to_string_lossy().into_owned())
    };
    let dir = args.out.clone().unwrap_or_else(|| {
        LabDir::locate().path().join("compare").join(format!(
            "{}-vs-{}",
            name(&args.a),
            name(&args.b)
        ))
    });
    if crate::runs::results_file(&dir).is_file() {
        bail!(
            "--out {} is a run folder: the comparison would replace its pages; give another \
             folder",
            dir.display()
        );
    }
    crate::output::ensure_writable(&dir)?;
    println!();
    for f in compare::write_charts(&ra, &rb, &ratios, &dir)? {
        println!("wrote {}", f.display());
    }
    if args.html {
        let names = (name(&args.a), name(&args.b));
        let files =
            crate::report::html::compare::write(&ra, &rb, (&names.0, &names.1), &ratios, &dir)?;
        if let Some(index) = files.last() {
            println!("Open in a browser: {}", index.display());
        }
    }
    Ok(true)
}
