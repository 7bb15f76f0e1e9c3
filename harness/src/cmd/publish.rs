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
    /// the one published before.
    #[arg(long, default_value = "results")]
    pub to: PathBuf,
}

pub fn run(args: &Args) -> Outcome {
    if !args.run.is_dir() {
        bail!("{}: not a run folder", args.run.display());
    }
    let run = RunResults::load(&args.run)?;
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
    publish(&src, &run, &dest)?;
    println!("published {} as {}", args.run.display(), dest.display());
    Ok(true)
}

/// Replaces `dest` with a copy of the run folder `src` and a README saying where it came from.
fn publish(src: &Path, run: &RunResults, dest: &Path) -> Result<()> {
    let parent = dest.parent().context("no parent folder")?;
    output::ensure_writable(parent)?;
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
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        if dest.exists() {
            std::fs::rename(dest, &old)?;
        }
        std::fs::rename(&tmp, dest)?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
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
    s.push_str("Every figure here was measured by the harness in that run; `results.json` holds the raw samples, and `harness report` rebuilds the tables and charts from it.\n\n");
    for w in &run.workloads {
        let n = w.workload.name();
        if files.iter().any(|f| f == &format!("{n}.md")) {
            let _ = writeln!(s, "- [{n}]({n}.md)");
        }
    }
    s
}
