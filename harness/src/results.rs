//! The results JSON: the source of truth every table and chart is generated from. It records
//! where the numbers came from (device, driver, CUDA, commit, date, config) and every row's
//! raw timings, error and resources.

use crate::resources::LaunchResources;
use crate::timing::Timing;
use crate::validate::Check;
use anyhow::{Context, Result, bail};
use kernel::{DeviceInfo, Precision, Role, Shape, Stage, Workload};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResults {
    pub schema_version: u32,
    pub tool: String,
    pub device: DeviceInfo,
    pub commit: String,
    /// UTC, ISO 8601.
    pub date: String,
    /// The effective configuration (after the user file and flags).
    pub config: serde_json::Value,
    pub workloads: Vec<WorkloadResults>,
    /// The device's measured ceilings when the run had them (an optional addition: files
    /// without it still read as this version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<crate::calibrate::Calibration>,
    /// The networks' time by step and their batch sweep (an optional addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<NetworkResults>,
    /// Set in the results a run keeps while it runs: what it had not done yet when it wrote
    /// them. A run stopped before its end (a time limit, a lost GPU) leaves them behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<String>,
    /// The user's kernels the run ran (`--kernel`, `[[kernel]]`), for the pages of its report
    /// (an optional addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_kernels: Vec<crate::user_kernel::record::KernelRecord>,
}

/// Where a network's time goes at one shape, for each of its rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetworkResults {
    pub workload: Workload,
    pub shape: Shape,
    pub label: String,
    /// How the steps were timed, in words.
    pub method: String,
    pub rows: Vec<NetworkRowTimes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_sweep: Option<BatchSweep>,
    /// What could not be measured, each with the device's reason: the rest of the run stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// One row of a network: its end-to-end time and each step's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetworkRowTimes {
    pub id: String,
    /// The rung this row swaps in over its parent row, and the category it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swapped: Option<(String, kernel::network::Category)>,
    /// The row it changes (its lineage's parent); absent in runs made before rows had other
    /// parents than the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Median of the forward passes timed with the steps.
    pub total_ms: f64,
    pub steps: Vec<StepTime>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepTime {
    pub label: String,
    pub category: kernel::network::Category,
    pub ms: f64,
}

/// Time per item of a network's forward pass against the batch size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchSweep {
    /// The row swept.
    pub id: String,
    /// What was timed, in words (CPU ports, or CUDA with and without a graph).
    pub method: String,
    pub points: Vec<BatchPoint>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchPoint {
    pub batch: usize,
    /// Per item, the steps enqueued one by one (the CPU: the forward pass).
    pub ms_per_item: f64,
    /// Per item, the forward pass replayed as one CUDA graph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_ms_per_item: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkloadResults {
    pub workload: Workload,
    pub shapes: Vec<ShapeResults>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShapeResults {
    pub shape: Shape,
    pub label: String,
    pub flops: f64,
    /// What the rows were checked against.
    pub reference: String,
    pub rows: Vec<Row>,
    /// The shape's first reference row timed once more, before any rung: beside its own
    /// timing, after the rungs, it says how far the machine drifted while the rows were timed
    /// one after another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_before: Option<ReferenceBefore>,
}

/// A reference row's timing taken before the shape's rungs ([`ShapeResults::reference_before`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReferenceBefore {
    pub id: String,
    pub timing: Timing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran, and matched the reference within its precision's bound.
    Passed,
    /// Ran, and did not match (or wrote NaN): never shown as a speedup.
    Failed,
    /// Declined the shape or the device, with the reason.
    Unsupported,
    /// Could not run (compile error, driver error, out of memory).
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub id: String,
    pub stage: Stage,
    pub precision: Precision,
    pub role: Role,
    pub rung: u32,
    pub summary: String,
    /// The rung this one changes (its lineage's parent), for "vs parent".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub status: Status,
    pub reason: Option<String>,
    /// Fewest bytes this row must move (input/output element sizes of its precision).
    pub min_bytes: f64,
    /// Device memory the row allocates besides inputs and output (intermediates), in bytes.
    #[serde(default)]
    pub scratch_bytes: u64,
    pub timing: Option<Timing>,
    pub check: Option<Check>,
    /// One entry per kernel launch of the plan (GPU rows).
    pub resources: Vec<LaunchResources>,
    /// The memory traffic the row really issued, where something counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<Traffic>,
    /// Its shared-memory requests and their bank conflicts, as the simulator's bank model
    /// counts them (a sample of the blocks counts those blocks').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banks: Option<kernel::SharedBanks>,
    /// Its plain global loads and stores and the sectors and cache lines they touch, as the
    /// simulator counts them (a sample of the blocks counts those blocks').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalescing: Option<kernel::Coalescing>,
    /// `banks` and `coalescing` kernel by kernel, where the plan runs several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_accesses: Vec<kernel::KernelAccesses>,
    /// On the CPU: the first row of its shape that runs the same CPU port (the same Rust
    /// function) as this one, when that is another row. A rung whose idea has no CPU analogue
    /// shares its parent's port, and the two rows then time the same code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_cpu_port_as: Option<String>,
    /// This rung and its parent timed once more in alternating rounds, for `vs parent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<crate::timing::PairedTiming>,
}

/// Bytes a row moved to and from global memory, as counted by whoever could count them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Traffic {
    pub load_bytes: f64,
    pub store_bytes: f64,
    pub source: TrafficSource,
}

impl Traffic {
    pub fn bytes(&self) -> f64 {
        self.load_bytes + self.store_bytes
    }
}

/// Where a row's traffic figure comes from; charts and tables name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrafficSource {
    /// Every global load and store the kernel executed, counted by the CUDA simulator: what
    /// the SMs ask of the memory system before any cache filters it.
    Simulator,
    /// DRAM bytes read and written, measured by Nsight Compute on the GPU.
    Profiler,
}

impl TrafficSource {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Simulator => "global-memory bytes the kernel issues, counted by the simulator",
            Self::Profiler => "DRAM bytes measured by Nsight Compute",
        }
    }
}

impl Row {
    pub fn median_ms(&self) -> Option<f64> {
        self.timing.as_ref().map(|t| t.median_ms)
    }

    pub fn passed(&self) -> bool {
        self.status == Status::Passed
    }

    /// Ran and did not match, or could not run: neither passed nor declined.
    pub fn failed(&self) -> bool {
        matches!(self.status, Status::Failed | Status::Error)
    }

    /// The row whose code this row runs: the first of its shape with the same CPU port, or
    /// itself. Two rows with the same one time the same code.
    pub fn port_id(&self) -> &str {
        self.same_cpu_port_as.as_deref().unwrap_or(&self.id)
    }
}

impl RunResults {
    /// Writes the results JSON (atomically).
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::output::write_atomic(path, serde_json::to_string_pretty(self)? + "\n")
    }

    /// Reads a run folder's results, or a results file.
    pub fn load(path: &Path) -> Result<Self> {
        let file = crate::runs::results_file(path);
        if path.is_dir() && !file.is_file() {
            bail!(
                "{} has no {}: not a run folder (runs are under {})",
                path.display(),
                crate::runs::RESULTS_FILE,
                crate::runs::LabDir::locate().runs().display()
            );
        }
        Self::read(&file)
    }

    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read results file {}", path.display()))?;
        let probe: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        match crate::output::schema_version(&probe, path)? {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => bail!(
                "{} has results schema version {v}; this harness reads version {SCHEMA_VERSION}. \
                 Rerun the benchmark, or use the harness of the commit that wrote it ({}).",
                path.display(),
                probe
                    .get("commit")
                    .and_then(|c| c.as_str())
                    .unwrap_or("unknown")
            ),
            None => bail!(
                "{} has no schema_version: not a harness results file",
                path.display()
            ),
        }
        // From the text again, not the parsed value: its errors then say the line and column.
        let run: Self = serde_json::from_str(&text).with_context(|| {
            format!("{} does not match schema {SCHEMA_VERSION}", path.display())
        })?;
        run.check_figures()
            .and_then(|()| run.check_names())
            .map_err(|why| anyhow::anyhow!("{}: {why}", path.display()))?;
        Ok(run)
    }

    /// Names that become file and folder names (the device's slug, the shapes' and networks'
    /// labels) and are no plain names: an edited file, which would write its charts or its
    /// published copy outside the folder asked for.
    fn check_names(&self) -> Result<(), String> {
        let plain = |n: &str| {
            !n.is_empty()
                && !n.starts_with('.')
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        };
        let slug = &self.device.slug;
        if !plain(slug) || kernel::device::slugify(slug) != *slug {
            return Err(format!(
                "the device's slug {slug:?} is no folder name (the harness writes lower-case \
                 letters, digits and dashes); is the file edited or damaged?"
            ));
        }
        let labels = self
            .workloads
            .iter()
            .flat_map(|w| w.shapes.iter().map(|s| &s.label))
            .chain(self.networks.iter().map(|n| &n.label));
        for label in labels {
            if !plain(label) {
                return Err(format!(
                    "the shape label {label:?} is no file name (charts are named after it); is \
                     the file edited or damaged?"
                ));
            }
        }
        Ok(())
    }

    /// Times and work that no run measures (a median of 0 or below, a time or FLOP count
    /// that is not finite): an edited or damaged file, whose tables would show infinities.
    fn check_figures(&self) -> Result<(), String> {
        for w in &self.workloads {
            for s in &w.shapes {
                if !(s.flops.is_finite() && s.flops >= 0.0) {
                    return Err(format!("{}: its FLOP count is {}", s.label, s.flops));
                }
                for r in &s.rows {
                    let Some(t) = &r.timing else { continue };
                    let times = [t.median_ms, t.min_ms, t.max_ms, t.p10_ms, t.p90_ms];
                    if times.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
                        return Err(format!(
                            "{} {}: a time of {} ms (median), {} ms (min), {} ms (max): no run \
                             measures that; is the file edited or damaged?",
                            s.label, r.id, t.median_ms, t.min_ms, t.max_ms
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// What made a run: `harness 0.1.0`, with ` (debug build)` when its code was not optimized
/// (its CPU ports then time nothing worth comparing).
pub fn tool_name() -> String {
    format!(
        "harness {}{}",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) {
            DEBUG_BUILD
        } else {
            ""
        }
    )
}

/// How [`tool_name`] marks a debug build.
pub const DEBUG_BUILD: &str = " (debug build)";

impl RunResults {
    /// Whether a debug build of the harness made this run.
    pub fn debug_build(&self) -> bool {
        self.tool.ends_with(DEBUG_BUILD)
    }
}

/// The commit of the code that ran: the repository's HEAD when run inside it, else the commit
/// the binary was built from. `-dirty` marks uncommitted changes to the code (not to `results/`).
pub fn current_commit() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let built = env!("LAB_BUILD_COMMIT");
    match git(&["rev-parse", "--short=12", "HEAD"]) {
        // The checkout the binary was built from: its state now, uncommitted edits included.
        Some(head) if built.starts_with(&head) || built.starts_with("unknown") => {
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":/",
                ":(top,exclude)results",
            ])
            .is_some_and(|s| !s.is_empty());
            format!("{head}{}", if dirty { "-dirty" } else { "" })
        }
        // A binary carried elsewhere runs its own code, whatever checkout surrounds it.
        _ => format!("{built} (build)"),
    }
}

/// Now, UTC, as `2026-11-22T15:04:05Z`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

fn format_utc(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_795_359_845), "2026-11-22T15:04:05Z");
    }

    #[test]
    fn other_schema_versions_are_refused_clearly() {
        let dir = std::env::temp_dir().join(format!("lab-schema-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("old.json");
        std::fs::write(&p, r#"{"schema_version": 999, "commit": "abc"}"#).unwrap();
        let e = RunResults::read(&p).unwrap_err().to_string();
        assert!(e.contains("schema version 999") && e.contains("abc"), "{e}");
        std::fs::write(&p, r#"{"rows": []}"#).unwrap();
        assert!(
            RunResults::read(&p)
                .unwrap_err()
                .to_string()
                .contains("no schema_version")
        );
        std::fs::write(&p, r#"{"schema_version": "1"}"#).unwrap();
        let e = RunResults::read(&p).unwrap_err().to_string();
        assert!(
            e.contains("schema_version is \"1\", not a whole number"),
            "{e}"
        );
        // A field of the wrong type is found by its line, as an editor would show it.
        let v = SCHEMA_VERSION;
        std::fs::write(&p, format!("{{\n\"schema_version\": {v},\n\"date\": 5\n}}")).unwrap();
        let e = format!("{:#}", RunResults::read(&p).unwrap_err());
        assert!(e.contains("at line 3"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The published CPU run's results, as JSON to edit.
    fn published_run() -> serde_json::Value {
        let published = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../results/cpu-intel-r-xeon-r-processor-2-threads/results.json"
        );
        serde_json::from_str(&std::fs::read_to_string(published).unwrap()).unwrap()
    }

    #[test]
    fn names_that_would_leave_the_folder_are_refused() {
        let good = published_run();
        let dir = std::env::temp_dir().join(format!("lab-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("results.json");
        let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut v = good.clone();
            edit(&mut v);
            std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
            format!("{:#}", RunResults::read(&p).unwrap_err())
        };
        for slug in ["../../elsewhere", "/tmp/abs", ""] {
            let e = refused(&|v| v["device"]["slug"] = slug.into());
            assert!(e.contains("is no folder name"), "{e}");
        }
        let e = refused(&|v| v["workloads"][0]["shapes"][0]["label"] = "x/../../../out".into());
        assert!(
            e.contains("the shape label \"x/../../../out\" is no file name"),
            "{e}"
        );
        std::fs::write(&p, serde_json::to_string(&good).unwrap()).unwrap();
        assert!(RunResults::read(&p).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn times_no_run_measures_are_refused() {
        let good = published_run();
        let dir = std::env::temp_dir().join(format!("lab-figures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("results.json");
        for (field, value, want) in [
            (
                "median_ms",
                serde_json::json!(-1.0),
                "a time of -1 ms (median)",
            ),
            ("min_ms", serde_json::json!(0.0), "0 ms (min)"),
        ] {
            let mut bad = good.clone();
            let row = bad["workloads"][0]["shapes"][0]["rows"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|r| !r["timing"].is_null())
                .unwrap();
            row["timing"][field] = value;
            std::fs::write(&p, bad.to_string()).unwrap();
            let e = RunResults::read(&p).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("edited or damaged"), "{e}");
        }
        std::fs::write(&p, good.to_string()).unwrap();
        assert!(RunResults::read(&p).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
