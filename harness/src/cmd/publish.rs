//! `harness publish`: copy a run folder into the repository's `results/<device>/`, the runs
//! the lab shows to its readers. Only a run someone chose goes there; `run` and `cargo bench`
//! never write into `results/`.

use super::Outcome;
use crate::output;
use crate::results::RunResults;
use anyhow::{Context, Result, bail};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The run folder to publish (see the last lines of `harness run`, or
    /// target/lab/runs/latest).
    pub run: PathBuf,
    /// The folder of published runs; the run goes into its device's subfolder, replacing
    /// the run published there before (its subfolders and other files are kept).
    #[arg(long, default_value = "results")]
    pub to: PathBuf,
}

pub fn run(args: &Args) -> Outcome {
    if !args.run.is_dir() {
        bail!("{}: not a run folder", args.run.display());
    }
    let run = RunResults::load(&args.run)?;
    if run.workloads.is_empty() {
        bail!(
            "{}: the run has no workloads: nothing to publish",
            args.run.display()
        );
    }
    if run.commit.ends_with("-dirty") {
        eprintln!(
            "note: this run was made from uncommitted code ({}); its figures may not match any \
             commit",
            run.commit
        );
    }
    let dest = args.to.join(&run.device.slug);
    // `runs/latest` is a link: the README names the folder it points at.
    let src = args.run.canonicalize().unwrap_or_else(|_| args.run.clone());
    if dest.canonicalize().is_ok_and(|d| d == src) {
        bail!(
            "{} is already the published run of {}: `harness report {}` rebuilds its tables",
            args.run.display(),
            run.device.name,
            args.run.display()
        );
    }
    let kept = publish(&src, &run, &dest)?;
    println!("published {} as {}", args.run.display(), dest.display());
    if !kept.is_empty() {
        println!("kept from the folder published before: {}", kept.join(", "));
    }
    Ok(true)
}

/// Whether a file at the top of a published folder is a run's own (its results, tables,
/// charts and README), which the next run published there replaces. Anything else there
/// (subfolders such as `logs/` or an earlier run, notes) is someone's and is kept.
fn is_run_file(name: &str) -> bool {
    matches!(name, "results.json" | "calibration.json" | "README.md")
        || kernel::Workload::ALL.iter().any(|w| {
            name.strip_prefix(w.name())
                .is_some_and(|rest| rest.starts_with(['.', '-']))
        })
}

/// Puts a copy of the run folder `src` and a README saying where it came from in `dest`,
/// in place of the run published there before; what else `dest` held is kept, and named in
/// the list returned.
fn publish(src: &Path, run: &RunResults, dest: &Path) -> Result<Vec<String>> {
    let parent = dest.parent().context("no parent folder")?;
    output::ensure_writable(parent, "--to")?;
    let name = dest.file_name().unwrap_or_default().to_string_lossy();
    let tmp = parent.join(format!(".{name}.publishing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let result = (|| -> Result<()> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(src)? {
            let path = entry?.path();
            // The web pages stay behind: their `html/` folder would weigh on the repository,
            // and `harness report` writes them again from the published results.
            let page = path
                .file_name()
                .is_some_and(|n| n == crate::report::html::INDEX || n == "index-screenshot.png");
            if path.is_file() && !page {
                let file = path.file_name().unwrap_or_default();
                std::fs::copy(&path, tmp.join(file))
                    .with_context(|| format!("copying {}", path.display()))?;
                files.push(file.to_string_lossy().into_owned());
            }
        }
        files.sort();
        std::fs::write(tmp.join("README.md"), readme(src, run, &files))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    if dest.exists() {
        std::fs::rename(dest, &old)?;
    }
    std::fs::rename(&tmp, dest)?;
    // What the earlier folder held besides its run moves into the new one.
    let mut kept = Vec::new();
    let mut left = false;
    for entry in std::fs::read_dir(&old).into_iter().flatten().flatten() {
        let path = entry.path();
        let file = entry.file_name().to_string_lossy().into_owned();
        if (path.is_file() && is_run_file(&file)) || dest.join(&file).exists() {
            continue;
        }
        let shown = if path.is_dir() {
            format!("{file}/")
        } else {
            file.clone()
        };
        match std::fs::rename(&path, dest.join(&file)) {
            Ok(()) => kept.push(shown),
            Err(e) => {
                eprintln!("warning: could not keep {}: {e}", path.display());
                left = true;
            }
        }
    }
    if left {
        eprintln!(
            "warning: the earlier folder is left in {}, with what could not be kept",
            old.display()
        );
    } else {
        let _ = std::fs::remove_dir_all(&old);
    }
    kept.sort();
    if !kept.is_empty() {
        let path = dest.join("README.md");
        let also = format!(
            "\nAlso here, kept from what was published for this device before (not written by \
             this run): {}.\n",
            kept.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        // The run is published by now: a README that cannot say so is a warning.
        let written =
            std::fs::read_to_string(&path).and_then(|readme| std::fs::write(&path, readme + &also));
        if let Err(e) = written {
            eprintln!(
                "warning: could not name the kept files in {}: {e}",
                path.display()
            );
        }
    }
    Ok(kept)
}

fn readme(src: &Path, run: &RunResults, files: &[String]) -> String {
    let d = &run.device;
    let mut s = format!("# Published run: {}\n\n", d.name);
    let _ = writeln!(
        s,
        "Device `{}` ({}), driver {}{}; commit `{}`; measured {}. Run folder `{}`.\n",
        d.name,
        d.kind,
        d.driver,
        d.cuda
            .as_ref()
            .map(|c| format!(", {c}"))
            .unwrap_or_default(),
        run.commit,
        run.date,
        src.file_name().unwrap_or_default().to_string_lossy()
    );
    if let Some(why) = &run.unfinished {
        let _ = writeln!(s, "**An unfinished run**: {why}.\n");
    }
    s.push_str("The times here were measured by the harness in that run; `results.json` holds the raw samples, and `harness report` rebuilds the tables and charts from it.");
    if let Some(c) = &run.calibration {
        let _ = write!(
            s,
            " The ceilings behind `% roof` and the rooflines are the device's calibration \
             (`calibration.json`): {}, taken on {}.",
            if c.quick {
                "a quick one, as a run takes when it finds none (`harness calibrate` takes a full one)"
            } else {
                "a full one, by `harness calibrate`"
            },
            c.date
        );
    }
    s.push_str("\n\n");
    for w in &run.workloads {
        let n = w.workload.name();
        if files.iter().any(|f| f == &format!("{n}.md")) {
            let _ = writeln!(s, "- [{n}]({n}.md)");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README says which figures the run measured and where the ceilings come from: a
    /// calibration taken apart from the run's times, on its own date.
    #[test]
    fn the_readme_dates_the_calibration_apart_from_the_run() {
        let mut run = crate::report::charts::tests::sim();
        let text = readme(Path::new("/x/run-folder"), &run, &["gemm.md".into()]);
        assert!(
            text.contains("The times here were measured by the harness in that run")
                && !text.contains("calibration.json")
                && text.contains("- [gemm](gemm.md)"),
            "{text}"
        );
        run.calibration = Some(crate::calibrate::tests_support::sample(&run.device));
        let text = readme(Path::new("/x/run-folder"), &run, &["gemm.md".into()]);
        assert!(
            text.contains(
                "The ceilings behind `% roof` and the rooflines are the device's calibration \
                 (`calibration.json`): a full one, by `harness calibrate`, taken on \
                 2026-11-22T15:00:00Z."
            ),
            "{text}"
        );
    }
}
