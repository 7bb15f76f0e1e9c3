//! Peer rows: other frameworks measured on the same machine by their own script
//! (`tools/torch_peers.py` for PyTorch), merged into the tables beside the lab's rows and
//! marked `peer`. Their error is judged with the bound of their precision, like every row.

use crate::results::{Row, RunResults, Status};
use crate::timing::Timing;
use crate::validate::Check;
use anyhow::Result;
use kernel::{Precision, Role, Stage};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version of the peers file this harness reads.
pub const PEERS_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerFile {
    pub schema_version: u32,
    /// `torch 2.9.0, CUDA 13.0, cuDNN 91300`.
    pub tool: String,
    /// The GPU's name as the framework reports it.
    pub device: String,
    pub date: String,
    pub rows: Vec<PeerRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerRow {
    pub workload: String,
    /// The shape's label, as the harness writes it (`4096x4096x4096`).
    pub shape: String,
    pub id: String,
    pub precision: String,
    pub summary: String,
    #[serde(default)]
    pub samples_ms: Vec<f64>,
    #[serde(default)]
    pub rel_error: Option<f64>,
    /// Why the call could not run, when it could not.
    #[serde(default)]
    pub error: Option<String>,
}

impl PeerFile {
    /// Reads a peers file; a row whose workload, precision or times no run of the harness
    /// could take is refused, naming the row, before anything is merged.
    pub fn read(path: &Path) -> Result<Self> {
        let file: Self = crate::output::read_versioned(
            path,
            "peers",
            PEERS_VERSION,
            "run tools/torch_peers.py of this commit again",
        )?;
        for (i, r) in file.rows.iter().enumerate() {
            r.check().map_err(|why| {
                anyhow::anyhow!(
                    "{}: row {} ({} {} {}): {why}; is the file edited or damaged?",
                    path.display(),
                    i + 1,
                    r.id,
                    r.workload,
                    r.shape
                )
            })?;
        }
        Ok(file)
    }
}

impl PeerRow {
    /// Why a run could not take this row, if it could not.
    fn check(&self) -> Result<(), String> {
        if kernel::Workload::parse(&self.workload).is_none() {
            return Err(format!("no workload is called {:?}", self.workload));
        }
        if Precision::parse(&self.precision).is_none() {
            return Err(format!(
                "no precision is called {:?} (fp32, tf32, fp16, bf16 or fp8)",
                self.precision
            ));
        }
        if let Some(t) = self
            .samples_ms
            .iter()
            .find(|t| !(t.is_finite() && **t > 0.0))
        {
            return Err(format!("a time of {t} ms: no run measures that"));
        }
        Ok(())
    }
}

/// Merges the peers file at `path` into `run` and says what happened in one line.
pub fn merge_file(run: &mut RunResults, path: &Path) -> String {
    match PeerFile::read(path) {
        Ok(p) => format!("{}: {}", path.display(), merge(run, &p)),
        Err(e) => format!("{}: not merged: {e:#}", path.display()),
    }
}

/// Whether the framework's device name and the harness's name the same GPU (PyTorch and the
/// driver API both report the marketing name, `NVIDIA H100 80GB HBM3`).
fn same_device(peer: &str, run: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(' ', "");
    norm(peer) == norm(run)
}

/// Adds the rows of `peers` to the shapes of `run` they belong to (rows already there by id are
/// kept as they are). Returns what was merged, in one line, or why nothing was.
pub fn merge(run: &mut RunResults, peers: &PeerFile) -> String {
    if !same_device(&peers.device, &run.device.name) {
        return format!(
            "peer rows not merged: measured on {}, the run is on {}",
            peers.device, run.device.name
        );
    }
    let (mut merged, mut taken) = (0, Vec::new());
    for w in &mut run.workloads {
        for shape in &mut w.shapes {
            let mine = peers
                .rows
                .iter()
                .filter(|p| p.workload == w.workload.name() && p.shape == shape.label);
            for p in mine {
                if shape.rows.iter().any(|r| r.id == p.id) {
                    taken.push(format!("{} {}", p.id, shape.label));
                    continue;
                }
                if let Some(row) = to_row(p, &peers.tool, &shape.shape) {
                    shape.rows.push(row);
                    merged += 1;
                }
            }
        }
    }
    // Rows of shapes the run did not measure are the file's own business (a file of every
    // shape merged into a run of a few); rows whose id the run already has are said.
    let elsewhere = peers.rows.len() - merged - taken.len();
    let mut line = format!("merged {merged} peer rows ({})", peers.tool);
    if elsewhere > 0 {
        line.push_str(&format!("; {elsewhere} of shapes this run did not measure"));
    }
    if !taken.is_empty() {
        line.push_str(&format!(
            "; not merged, a row of the same id being in the run already: {}",
            taken.join(", ")
        ));
    }
    line
}

fn to_row(p: &PeerRow, tool: &str, shape: &kernel::Shape) -> Option<Row> {
    let precision = Precision::parse(&p.precision)?;
    let elem = match precision {
        Precision::Fp8 => 1,
        Precision::Fp16 | Precision::Bf16 => 2,
        Precision::Fp32 | Precision::Tf32 => 4,
    };
    let tolerance = precision.tolerance();
    let (status, reason, check) = match (&p.error, p.rel_error) {
        (Some(e), _) => (Status::Error, Some(e.clone()), None),
        (None, Some(err)) => {
            let passed = err.is_finite() && err <= tolerance;
            let check = Check {
                rel_error: err,
                max_abs_error: f64::NAN,
                nonfinite: 0,
                first_nonfinite: None,
                poisoned: 0,
                unwritten: 0,
                first_unwritten: None,
                sampled: None,
                blocks: None,
                worst: None,
                tolerance,
                passed,
            };
            let reason = (!passed).then(|| {
                format!("relative error {err:.2e} above the {precision} bound {tolerance:.0e}")
            });
            let status = if passed {
                Status::Passed
            } else {
                Status::Failed
            };
            (status, reason, Some(check))
        }
        (None, None) => (
            Status::Error,
            Some("the peers file gives no error".into()),
            None,
        ),
    };
    let timing = (!p.samples_ms.is_empty() && status != Status::Error)
        .then(|| Timing::from_samples(p.samples_ms.clone(), 1));
    Some(Row {
        id: p.id.clone(),
        stage: Stage::Reference,
        precision,
        role: Role::Peer,
        rung: 0,
        summary: format!("{} [{tool}]", p.summary),
        parent: None,
        status,
        reason,
        min_bytes: shape.min_bytes(elem),
        scratch_bytes: 0,
        timing,
        check,
        resources: Vec::new(),
        traffic: None,
        banks: None,
        coalescing: None,
        kernel_accesses: Vec::new(),
        same_cpu_port_as: None,
        paired: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(device: &str) -> PeerFile {
        let row = |id: &str, precision: &str, err: Option<f64>, error: Option<&str>| PeerRow {
            workload: "gemm".into(),
            shape: "4096x4096x4096".into(),
            id: id.into(),
            precision: precision.into(),
            summary: format!("{id} call"),
            samples_ms: vec![1.0, 1.1, 0.9],
            rel_error: err,
            error: error.map(str::to_string),
        };
        PeerFile {
            schema_version: PEERS_VERSION,
            tool: "torch 2.9.0".into(),
            device: device.into(),
            date: "2026-11-22T00:00:00Z".into(),
            rows: vec![
                row("torch-matmul-fp16", "fp16", Some(3e-4), None),
                row("torch-matmul-fp32", "fp32", Some(1e-3), None),
                row(
                    "torch-compiled",
                    "fp32",
                    None,
                    Some("RuntimeError: no Triton"),
                ),
                row("cublas-sgemm", "fp32", Some(1e-7), None),
            ],
        }
    }

    #[test]
    fn peer_rows_join_their_shape_judged_by_their_precision() {
        let mut run = crate::report::tests::synthetic();
        let before = run.workloads[0].shapes[2].rows.len();
        let mut file = peers("NVIDIA H100 80GB HBM3");
        let mut other = file.rows[0].clone();
        other.shape = "8x8x8".into();
        file.rows.push(other);
        let note = merge(&mut run, &file);
        assert_eq!(
            note,
            "merged 3 peer rows (torch 2.9.0); 1 of shapes this run did not measure; not \
             merged, a row of the same id being in the run already: cublas-sgemm 4096x4096x4096"
        );
        let shape = &run.workloads[0].shapes[2];
        assert_eq!(
            shape.rows.len(),
            before + 3,
            "an id already in the table is kept as is"
        );
        let get = |id: &str| shape.rows.iter().find(|r| r.id == id).unwrap();
        let fp16 = get("torch-matmul-fp16");
        assert_eq!((fp16.role, fp16.status), (Role::Peer, Status::Passed));
        assert_eq!(fp16.median_ms(), Some(1.0));
        // 1e-3 is above the FP32 bound: a peer that is not accurate enough fails like a rung.
        assert_eq!(get("torch-matmul-fp32").status, Status::Failed);
        let err = get("torch-compiled");
        assert_eq!(err.status, Status::Error);
        assert!(err.reason.as_deref().unwrap().contains("no Triton"));
        assert!(err.timing.is_none());
        // Other shapes got nothing.
        assert!(
            run.workloads[0].shapes[0]
                .rows
                .iter()
                .all(|r| r.role != Role::Peer)
        );
        // A run with peers reads back (their absolute error is no number).
        let file = std::env::temp_dir().join(format!("lab-peers-{}.json", std::process::id()));
        run.write(&file).unwrap();
        let back = RunResults::read(&file).unwrap();
        let _ = std::fs::remove_file(&file);
        let rows = |r: &RunResults| r.workloads[0].shapes[2].rows.len();
        assert_eq!(rows(&back), rows(&run));
    }

    #[test]
    fn a_row_no_run_could_take_is_refused_naming_it() {
        let path = std::env::temp_dir().join(format!("lab-peers-bad-{}.json", std::process::id()));
        let refused = |edit: &dyn Fn(&mut PeerRow)| {
            let mut file = peers("NVIDIA H100 80GB HBM3");
            edit(&mut file.rows[1]);
            std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
            format!("{:#}", PeerFile::read(&path).unwrap_err())
        };
        let e = refused(&|r| r.samples_ms = vec![1.0, -1.0]);
        assert!(
            e.contains(
                "row 2 (torch-matmul-fp32 gemm 4096x4096x4096): a time of -1 ms: no run \
                 measures that; is the file edited or damaged?"
            ),
            "{e}"
        );
        assert!(
            refused(&|r| r.precision = "fp4".into()).contains("no precision is called \"fp4\"")
        );
        assert!(
            refused(&|r| r.workload = "nope".into()).contains("no workload is called \"nope\"")
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn peers_from_another_device_are_not_merged() {
        let mut run = crate::report::tests::synthetic();
        let note = merge(&mut run, &peers("NVIDIA A100-SXM4-80GB"));
        assert!(
            note.contains("not merged") && note.contains("A100"),
            "{note}"
        );
        assert!(
            run.workloads[0]
                .shapes
                .iter()
                .flat_map(|s| &s.rows)
                .all(|r| r.role != Role::Peer)
        );
    }
}
