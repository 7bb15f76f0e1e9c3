//! Where the lab keeps what it generates, and run folders that never overwrite each other.
//!
//! Like every cargo tool's output, the lab's lives under the workspace's `target/`:
//! `target/lab/runs/<date>-<device>-<workloads>/` per run (with `runs/latest` pointing at the
//! newest), `target/lab/calibration/<device>.json` and `target/lab/tune/<device>/`. A run is
//! written into a hidden folder beside its final place and renamed into place at the end, so a
//! failed or interrupted run leaves nothing half-written. `results/` in the repository holds
//! only runs someone chose to publish (`harness publish`).

use crate::results::RunResults;
use anyhow::{Context, Result, bail};
use kernel::Workload;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The name of a run's results file inside its folder.
pub const RESULTS_FILE: &str = "results.json";

/// The lab's folder for generated files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabDir(PathBuf);

impl LabDir {
    /// `$LAB_DIR`; else `lab/` in cargo's target folder (`$CARGO_TARGET_DIR`, or the
    /// `target/` folder the running binary was built in); else `./target/lab`.
    pub fn locate() -> Self {
        if let Some(dir) = std::env::var_os("LAB_DIR").filter(|d| !d.is_empty()) {
            return Self(absolute(Path::new(&dir)));
        }
        if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
            return Self(absolute(Path::new(&dir)).join("lab"));
        }
        let exe = std::env::current_exe().ok();
        let target = exe.as_deref().and_then(|exe| {
            let mut up = exe.ancestors().skip(1);
            // Cargo marks its target folder with CACHEDIR.TAG; a binary copied to another
            // machine keeps only the `target/release/` path.
            up.clone()
                .find(|d| d.join("CACHEDIR.TAG").is_file())
                .or_else(|| up.find(|d| d.file_name().is_some_and(|n| n == "target")))
                .map(Path::to_path_buf)
        });
        Self(
            target
                .unwrap_or_else(|| absolute(Path::new("target")))
                .join("lab"),
        )
    }

    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self(dir.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// How an error names a folder of the lab: by `LAB_DIR` where the user set it.
    pub fn named(&self) -> String {
        match std::env::var_os("LAB_DIR").filter(|d| !d.is_empty()) {
            Some(_) => "the lab's folder (LAB_DIR)".into(),
            None => "the lab's folder".into(),
        }
    }

    /// Where run folders go.
    pub fn runs(&self) -> PathBuf {
        self.0.join("runs")
    }

    /// The cached calibration of a device.
    pub fn calibration(&self, slug: &str) -> PathBuf {
        self.0.join("calibration").join(format!("{slug}.json"))
    }

    /// The folder of a device's tune file.
    pub fn tune(&self, slug: &str) -> PathBuf {
        self.0.join("tune").join(slug)
    }

    /// Peer rows (PyTorch) measured on a device, merged into its runs.
    pub fn peers(&self, slug: &str) -> PathBuf {
        self.0.join("peers").join(format!("{slug}.json"))
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `2026-11-24T22:31:05Z` as `20261124-223105`, for folder names that sort by date.
fn compact_date(iso: &str) -> String {
    let digits: String = iso.chars().filter(char::is_ascii_digit).collect();
    match digits.len() {
        14.. => format!("{}-{}", &digits[..8], &digits[8..14]),
        _ => digits,
    }
}

/// The folder a run gets under `runs` when `--out` does not name one: date, device and
/// workloads, with a counter when two runs start in the same second.
pub fn default_folder(runs: &Path, date: &str, slug: &str, workloads: &[Workload]) -> PathBuf {
    let what = match workloads {
        [] => "none".to_string(),
        ws => ws.iter().map(|w| w.name()).collect::<Vec<_>>().join("+"),
    };
    let base = format!("{}-{slug}-{what}", compact_date(date));
    let mut path = runs.join(&base);
    let mut n = 2;
    while path.exists() {
        path = runs.join(format!("{base}-{n}"));
        n += 1;
    }
    path
}

/// A run folder being written: files go into a hidden sibling, which [`RunFolder::commit`]
/// renames into place. Dropped without a commit, the partial folder is removed.
#[derive(Debug)]
pub struct RunFolder {
    target: PathBuf,
    partial: PathBuf,
    done: bool,
}

impl RunFolder {
    /// Starts a run folder that will end up at `target`, which must not exist yet (or be an
    /// empty folder): a run never overwrites another.
    pub fn begin(target: &Path) -> Result<Self> {
        let target = absolute(target);
        if target.exists() {
            let empty = target.is_dir()
                && std::fs::read_dir(&target)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(false);
            if !empty {
                bail!(
                    "{} already exists: a run never overwrites another; name a new folder",
                    target.display()
                );
            }
        }
        let parent = target
            .parent()
            .context("a run folder needs a parent folder")?;
        crate::output::ensure_writable(parent, "--out")?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Unique to the call: another thread may be writing a run of the same name.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let call = NEXT.fetch_add(1, Ordering::Relaxed);
        let partial = parent.join(format!(".{name}.partial-{}-{call}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        Ok(Self {
            target,
            partial,
            done: false,
        })
    }

    /// Where to write the run's files until the commit.
    pub fn dir(&self) -> &Path {
        &self.partial
    }

    /// Where the run will be.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Moves the finished run into place, and points `latest` beside it at it when the run
    /// went into a folder of runs.
    pub fn commit(self) -> Result<PathBuf> {
        self.commit_or_rename(|| None)
    }

    /// [`RunFolder::commit`] for a folder the lab named: when another run took the name
    /// meanwhile (two runs of the same workloads ending in the same second), the run goes
    /// into the name `next` gives instead of failing.
    pub fn commit_or_rename(mut self, next: impl Fn() -> Option<PathBuf>) -> Result<PathBuf> {
        loop {
            // An empty folder (all `begin` lets through) is replaced by the rename.
            match std::fs::rename(&self.partial, &self.target) {
                Ok(()) => break,
                Err(e) => match next().filter(|n| *n != self.target && self.target.exists()) {
                    Some(n) => self.target = absolute(&n),
                    None => {
                        return Err(e).with_context(|| {
                            format!("cannot move the run into {}", self.target.display())
                        });
                    }
                },
            }
        }
        self.done = true;
        if let Some(parent) = self.target.parent()
            && parent.file_name().is_some_and(|n| n == "runs")
        {
            let _ = link_latest(parent, &self.target);
        }
        Ok(self.target.clone())
    }
}

impl Drop for RunFolder {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.partial);
        }
    }
}

/// Points `runs/latest` at `run` (a relative link, replaced atomically).
fn link_latest(runs: &Path, run: &Path) -> std::io::Result<()> {
    let name = run.file_name().unwrap_or_default();
    let tmp = runs.join(format!(".latest-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(name, &tmp)?;
    std::fs::rename(&tmp, runs.join("latest"))
}

/// The results a run keeps on disk while it runs, in a folder beside the one it will be saved
/// in: a run stopped before its end (a time limit, a lost GPU) leaves the shapes it finished
/// there, marked unfinished, for `harness report` and `harness publish`. Removed once the run
/// is saved; an earlier run's unfinished folder of the same name is left as it is, and this
/// run's takes the next free name.
#[derive(Debug)]
pub struct Checkpoint {
    dir: PathBuf,
    /// Every shape the run will measure, as `workload label`.
    planned: Vec<String>,
    calibration: Option<crate::calibrate::Calibration>,
    peers: Option<crate::peers::PeerFile>,
}

impl Checkpoint {
    /// A checkpoint for a run saved in `out` (or a new folder of the lab's runs) that measures
    /// `planned`.
    pub fn new(
        out: Option<&Path>,
        lab: &LabDir,
        slug: &str,
        planned: &[(Workload, Vec<String>)],
        calibration: Option<crate::calibrate::Calibration>,
    ) -> Self {
        let target = match out {
            Some(out) => absolute(out),
            None => {
                let workloads: Vec<Workload> = planned.iter().map(|(w, _)| *w).collect();
                let date = crate::results::utc_now();
                default_folder(&lab.runs(), &date, slug, &workloads)
            }
        };
        let base = target.file_name().unwrap_or_default().to_string_lossy();
        let dir = (1..)
            .map(|i| match i {
                1 => target.with_file_name(format!("{base}-unfinished")),
                i => target.with_file_name(format!("{base}-unfinished-{i}")),
            })
            .find(|d| !d.exists() && d.symlink_metadata().is_err())
            .expect("some name is free");
        let planned = planned
            .iter()
            .flat_map(|(w, labels)| labels.iter().map(move |l| format!("{w} {l}")))
            .collect();
        Self {
            dir,
            planned,
            calibration,
            peers: None,
        }
    }

    /// What `new` takes of the shapes a run will measure: each workload's shape labels.
    pub fn planned(shapes: &[(Workload, Vec<kernel::Shape>)]) -> Vec<(Workload, Vec<String>)> {
        shapes
            .iter()
            .map(|(w, list)| (*w, list.iter().map(kernel::Shape::label).collect()))
            .collect()
    }

    /// Says where the results so far are, unless the run is quiet.
    pub fn announce(&self, verbosity: crate::console::Verbosity) {
        if verbosity != crate::console::Verbosity::Quiet {
            println!(
                "Until the run is saved, its results so far are in {}",
                self.dir.display()
            );
        }
    }

    /// Merges `peers`' rows into what it keeps, as the run does at its end.
    pub fn with_peers(mut self, peers: Option<crate::peers::PeerFile>) -> Self {
        self.peers = peers;
        self
    }

    /// Where the results so far are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes the results so far, with the shapes not run yet named in `unfinished`.
    pub fn write(&self, so_far: &RunResults) -> Result<()> {
        let done: Vec<String> = so_far
            .workloads
            .iter()
            .flat_map(|w| {
                w.shapes
                    .iter()
                    .map(move |s| format!("{} {}", w.workload, s.label))
            })
            .collect();
        let left: Vec<&str> = self
            .planned
            .iter()
            .filter(|p| !done.contains(p))
            .map(String::as_str)
            .collect();
        let mut run = so_far.clone();
        run.calibration = self.calibration.clone();
        if let Some(peers) = &self.peers {
            crate::peers::merge(&mut run, peers);
        }
        run.unfinished = Some(format!(
            "it stopped after {} of {} shapes; not measured: {}",
            done.len(),
            done.len() + left.len(),
            if left.is_empty() {
                "the networks' time by step".to_string()
            } else {
                left.join(", ")
            }
        ));
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        run.write(&self.dir.join(RESULTS_FILE))
    }

    /// Runs `ablation`, writing the results so far as each shape ends; `each` sees every
    /// event. A failure to write is said once, after the run, which goes on regardless.
    pub fn run(
        &self,
        ablation: &crate::run::Ablation,
        mut each: impl FnMut(crate::run::Event<'_>),
    ) -> Result<RunResults> {
        let mut unsaved = None;
        let results = ablation.run(|e| {
            if let crate::run::Event::ShapeDone { so_far } = e
                && let Err(why) = self.write(so_far)
            {
                unsaved.get_or_insert(why);
            }
            each(e)
        })?;
        if let Some(why) = unsaved {
            eprintln!("note: the results so far could not be kept while the run ran: {why:#}");
        }
        Ok(results)
    }

    /// The run is saved: its unfinished copy goes.
    pub fn finish(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Fails before a run computes anything if its results could not be saved: `out` (an exact run
/// folder) must not hold files already, and its parent (or the lab's runs folder) must be
/// writable.
pub fn check_target(out: Option<&Path>, lab: &LabDir) -> Result<()> {
    match out {
        Some(out) => {
            let probe = RunFolder::begin(out)?;
            drop(probe);
            Ok(())
        }
        None => crate::output::ensure_writable(&lab.runs(), &lab.named()),
    }
}

/// Writes a finished run into its folder (`out`, or a new one under the lab's runs): the
/// results JSON, the calibration it used, the tables and the charts. Returns the folder.
pub fn save(run: &RunResults, out: Option<&Path>, lab: &LabDir) -> Result<PathBuf> {
    let workloads: Vec<Workload> = run.workloads.iter().map(|w| w.workload).collect();
    let named = || default_folder(&lab.runs(), &run.date, &run.device.slug, &workloads);
    let folder = RunFolder::begin(&out.map_or_else(named, Path::to_path_buf))?;
    run.write(&folder.dir().join(RESULTS_FILE))?;
    if let Some(c) = &run.calibration {
        c.write(&folder.dir().join("calibration.json"))?;
    }
    crate::report::write_report(run, folder.dir())?;
    match out {
        Some(_) => folder.commit(),
        None => folder.commit_or_rename(|| Some(named())),
    }
}

/// The results file of a run folder, or the file itself.
pub fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(RESULTS_FILE)
    } else {
        path.to_path_buf()
    }
}

/// The files of a finished run folder, sorted, for the console's last lines.
pub fn list_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lab-runs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn folder_names_sort_by_date_and_never_collide() {
        let runs = temp("names");
        let date = "2026-11-24T22:31:05Z";
        let a = default_folder(&runs, date, "cpu-x", &[Workload::Gemm, Workload::Conv]);
        assert_eq!(
            a.file_name().unwrap().to_str().unwrap(),
            "20261124-223105-cpu-x-gemm+conv"
        );
        std::fs::create_dir_all(&a).unwrap();
        let b = default_folder(&runs, date, "cpu-x", &[Workload::Gemm, Workload::Conv]);
        assert!(b.to_str().unwrap().ends_with("gemm+conv-2"), "{b:?}");
        std::fs::remove_dir_all(&runs).unwrap();
    }

    #[test]
    fn a_run_appears_whole_or_not_at_all() {
        let runs = temp("atomic").join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        let target = runs.join("r1");
        {
            let f = RunFolder::begin(&target).unwrap();
            std::fs::write(f.dir().join("gemm.md"), "half").unwrap();
            assert!(!target.exists());
            // Dropped: the run failed.
        }
        assert!(!target.exists());
        assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 0);
        let f = RunFolder::begin(&target).unwrap();
        std::fs::write(f.dir().join("gemm.md"), "whole").unwrap();
        let done = f.commit().unwrap();
        assert_eq!(
            std::fs::read_to_string(done.join("gemm.md")).unwrap(),
            "whole"
        );
        let latest = std::fs::read_link(runs.join("latest")).unwrap();
        assert_eq!(latest, PathBuf::from("r1"));
        // A second run cannot take the same folder.
        let e = RunFolder::begin(&target).unwrap_err().to_string();
        assert!(e.contains("never overwrites"), "{e}");
        std::fs::remove_dir_all(runs.parent().unwrap()).unwrap();
    }

    #[test]
    fn two_runs_ending_together_under_one_name_both_keep_their_results() {
        let runs = temp("together").join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        let date = "2026-11-24T22:31:05Z";
        let name = || default_folder(&runs, date, "cpu-x", &[Workload::Gemm]);
        // Both runs were named before either was saved.
        let (a, b) = (
            RunFolder::begin(&name()).unwrap(),
            RunFolder::begin(&name()).unwrap(),
        );
        std::fs::write(a.dir().join("gemm.md"), "a").unwrap();
        std::fs::write(b.dir().join("gemm.md"), "b").unwrap();
        let a = a.commit_or_rename(|| Some(name())).unwrap();
        let b = b.commit_or_rename(|| Some(name())).unwrap();
        assert!(b.to_str().unwrap().ends_with("gemm-2"), "{b:?}");
        assert_eq!(std::fs::read_to_string(a.join("gemm.md")).unwrap(), "a");
        assert_eq!(std::fs::read_to_string(b.join("gemm.md")).unwrap(), "b");
        // A folder someone named is never exchanged for another.
        let c = RunFolder::begin(&runs.join("mine")).unwrap();
        std::fs::create_dir_all(runs.join("mine/taken")).unwrap();
        let e = c.commit().unwrap_err().to_string();
        assert!(e.contains("cannot move the run into"), "{e}");
        std::fs::remove_dir_all(runs.parent().unwrap()).unwrap();
    }
}
