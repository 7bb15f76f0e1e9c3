//! `harness compare`: per-row time ratios of two runs (before and after, or two devices), and
//! a chart; for two simulator runs, which time nothing, what the simulator counted in each.

use super::Outcome;
use crate::compare;
use crate::results::RunResults;
use crate::runs::LabDir;
use anyhow::bail;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The run compared against: a run folder or its results JSON.
    pub a: PathBuf,
    /// The run compared: a run folder or its results JSON.
    pub b: PathBuf,
    /// Where to write the chart; default: target/lab/compare/<a>-vs-<b>/ (with -2, -3, ...
    /// when that holds a comparison of other runs of the same names).
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
    // Two simulator runs: their counts, side by side (no times, so no chart).
    if compare::simulated(&ra) && compare::simulated(&rb) {
        if args.html || args.out.is_some() {
            bail!(
                "two simulator runs compare by their counts, in the terminal: --html and --out draw times"
            );
        }
        print!("{}", compare::counts_text(&ra, &rb, &ratios));
        return Ok(unbroken(&ratios));
    }
    if ratios.iter().all(|r| r.a_ms.is_none() || r.b_ms.is_none()) {
        // No time to compare where B broke every row A timed: that is the news.
        if ratios.iter().any(|r| r.broke) {
            println!(
                "{} and {} share no timed row: B fails where A passed",
                args.a.display(),
                args.b.display()
            );
            return Ok(unbroken(&ratios));
        }
        bail!(
            "{} and {} share no timed row (one kernel at one shape, timed in both; a simulator \
             run times nothing, and compares with another simulator run only, by its counts): \
             nothing to compare",
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
    let sources = format!("{}\n{}\n", absolute(&args.a), absolute(&args.b));
    let dir = args.out.clone().unwrap_or_else(|| {
        default_dir(
            &LabDir::locate().path().join("compare"),
            &format!("{}-vs-{}", name(&args.a), name(&args.b)),
            &sources,
        )
    });
    refuse_foreign(&dir)?;
    let named = match &args.out {
        Some(_) => "--out".to_string(),
        None => LabDir::locate().named(),
    };
    crate::output::ensure_writable(&dir, &named)?;
    std::fs::write(dir.join(SOURCES), &sources)?;
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
    Ok(unbroken(&ratios))
}

/// Whether B broke no row; else says which, last, so that a script sees why it exits with 1.
fn unbroken(ratios: &[compare::Ratio]) -> bool {
    let broken = compare::broken_text(ratios);
    eprint!("{broken}");
    broken.is_empty()
}

/// What a comparison's folder records of the two runs it compares: their paths, one a line.
const SOURCES: &str = "compared.txt";

/// A comparison may go into a new or empty folder, or replace another comparison; a run
/// folder, or one holding files of its own, would lose them without a word.
fn refuse_foreign(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "--out {} is a file, not a folder: give a new or empty folder",
            dir.display()
        );
    }
    if crate::runs::results_file(dir).is_file() {
        bail!(
            "--out {} is a run folder: the comparison would replace its pages; give another \
             folder",
            dir.display()
        );
    }
    let files = std::fs::read_dir(dir).map_or(0, |d| d.count());
    if files > 0 && !dir.join(SOURCES).is_file() {
        let what = match files {
            1 => "a file".to_string(),
            n => format!("{n} files"),
        };
        bail!(
            "--out {} holds {what} of its own, which the comparison would overwrite: give an \
             empty or new folder",
            dir.display()
        );
    }
    Ok(())
}

fn absolute(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// The folder under `root` for a comparison of the runs `sources` names: `stem`, unless that
/// holds the comparison of two other runs (two runs of other folders with the same names), and
/// then the first `stem-2`, `stem-3`, ... that does not. The same comparison again replaces
/// its own.
fn default_dir(root: &Path, stem: &str, sources: &str) -> PathBuf {
    (1..)
        .map(|n| match n {
            1 => root.join(stem),
            n => root.join(format!("{stem}-{n}")),
        })
        .find(|dir| {
            !dir.exists() || std::fs::read_to_string(dir.join(SOURCES)).is_ok_and(|s| s == sources)
        })
        .expect("an unused folder name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_of_other_runs_with_the_same_names_gets_a_folder_of_its_own() {
        let root = std::env::temp_dir().join(format!("lab-compare-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let first = "/x/nvidia-h200\n/y/nvidia-h200\n";
        let dir = default_dir(&root, "a-vs-b", first);
        assert_eq!(dir, root.join("a-vs-b"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(SOURCES), first).unwrap();
        // The same comparison again replaces its own; another gets the next name.
        assert_eq!(default_dir(&root, "a-vs-b", first), dir);
        let other = "/z/nvidia-h200\n/y/nvidia-h200\n";
        assert_eq!(default_dir(&root, "a-vs-b", other), root.join("a-vs-b-2"));
        // A folder holding something else than a comparison of ours is left alone too.
        std::fs::create_dir_all(root.join("a-vs-b-2")).unwrap();
        assert_eq!(default_dir(&root, "a-vs-b", other), root.join("a-vs-b-3"));
        // Given as --out, a comparison's folder is replaced; a folder of the user's files is
        // refused, and so is a run folder.
        assert!(refuse_foreign(&dir).is_ok() && refuse_foreign(&root.join("new")).is_ok());
        std::fs::write(root.join("a-file"), "mine").unwrap();
        let e = refuse_foreign(&root.join("a-file"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a-file is a file, not a folder"), "{e}");
        std::fs::write(root.join("a-vs-b-2/index.html"), "mine").unwrap();
        let e = refuse_foreign(&root.join("a-vs-b-2"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds a file of its own"), "{e}");
        std::fs::write(root.join("a-vs-b-2/results.json"), "{}").unwrap();
        let e = refuse_foreign(&root.join("a-vs-b-2"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a run folder"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
