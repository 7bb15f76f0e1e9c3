//! Tables from results: Markdown and CSV per workload, and a compact terminal summary. Every
//! figure comes from the results JSON, so `harness report` can regenerate them later.

use crate::results::{Row, RunResults, ShapeResults, Status, WorkloadResults};
use crate::run::primary_resources;
use anyhow::{Context, Result};
use kernel::Role;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Derived figures of one row within its shape.
pub struct Derived {
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
    /// FLOPs per minimal byte.
    pub intensity: f64,
    /// Speedup over the previous passing rung, and over the first rung.
    pub vs_prev: Option<f64>,
    pub vs_first: Option<f64>,
    /// Percent of the reference row's throughput.
    pub pct_of_ref: Option<f64>,
}

/// The row the `% of ref` column compares against: cuBLAS SGEMM-like FP32 first, else the
/// first passing reference.
pub fn reference_row(shape: &ShapeResults) -> Option<&Row> {
    let refs = shape
        .rows
        .iter()
        .filter(|r| r.role == Role::Reference && r.passed() && r.timing.is_some());
    let mut refs: Vec<&Row> = refs.collect();
    refs.sort_by_key(|r| (r.precision != kernel::Precision::Fp32, r.rung));
    refs.first().copied()
}

pub fn derive(shape: &ShapeResults) -> Vec<Derived> {
    let passed_time = |r: &Row| if r.passed() { r.median_ms() } else { None };
    let first = shape
        .rows
        .iter()
        .filter(|r| r.role == Role::Rung)
        .find_map(passed_time);
    let reference = reference_row(shape).and_then(|r| r.median_ms());
    let mut prev: Option<f64> = None;
    shape
        .rows
        .iter()
        .map(|r| {
            let t = passed_time(r);
            let d = Derived {
                gflops: t.map(|ms| shape.flops / (ms * 1e6)),
                gbps: t.map(|ms| r.min_bytes / (ms * 1e6)),
                intensity: shape.flops / r.min_bytes,
                vs_prev: match (r.role, t, prev) {
                    (Role::Rung, Some(ms), Some(p)) => Some(p / ms),
                    _ => None,
                },
                vs_first: match (r.role, t, first) {
                    (Role::Rung, Some(ms), Some(f)) => Some(f / ms),
                    _ => None,
                },
                pct_of_ref: match (t, reference) {
                    (Some(ms), Some(rf)) => Some(100.0 * rf / ms),
                    _ => None,
                },
            };
            if r.role == Role::Rung && t.is_some() {
                prev = t;
            }
            d
        })
        .collect()
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn status_cell(r: &Row) -> String {
    match r.status {
        Status::Passed => "pass".into(),
        Status::Failed => "**FAILED**".into(),
        Status::Unsupported => "n/a".into(),
        Status::Error => "**ERROR**".into(),
    }
}

fn throughput(gflops: f64) -> String {
    if gflops >= 1000.0 {
        format!("{:.1} TFLOP/s", gflops / 1e3)
    } else {
        format!("{gflops:.1} GFLOP/s")
    }
}

/// The Markdown tables of one workload.
pub fn markdown(run: &RunResults, w: &WorkloadResults) -> String {
    let mut s = String::new();
    let dev = &run.device;
    let _ = writeln!(
        s,
        "# {} ablation on {}\n",
        w.workload.name().to_uppercase(),
        dev.name
    );
    let _ = writeln!(
        s,
        "Device `{}`, driver {}{}; commit `{}`; {}. Generated from `{}.json` by the harness; \
         times are medians of per-run samples, spread is p10-p90.\n",
        dev.name,
        dev.driver,
        dev.cuda
            .as_ref()
            .map(|c| format!(", {c}"))
            .unwrap_or_default(),
        run.commit,
        run.date,
        w.workload.name()
    );
    for shape in &w.shapes {
        let _ = writeln!(
            s,
            "## {} ({:.2} GFLOP)\n\nChecked against: {}.\n",
            shape.label,
            shape.flops / 1e9,
            shape.reference
        );
        s.push_str("| # | kernel | prec | median ms | spread | throughput | GB/s | FLOP/B | vs prev | vs first | % of ref | rel. error | status | regs | smem B | occupancy |\n");
        s.push_str(
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n",
        );
        for (r, d) in shape.rows.iter().zip(derive(shape)) {
            let res = primary_resources(r);
            let num = if r.role == Role::Rung {
                r.rung.to_string()
            } else {
                "ref".into()
            };
            let _ = writeln!(
                s,
                "| {num} | `{}` | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.id,
                r.precision,
                opt(r.median_ms(), |v| format!("{v:.3}")),
                opt(r.timing.as_ref().map(|t| t.spread_pct()), |v| format!(
                    "±{v:.1}%"
                )),
                opt(d.gflops, throughput),
                opt(d.gbps, |v| format!("{v:.1}")),
                d.intensity,
                opt(d.vs_prev, |v| format!("{v:.2}x")),
                opt(d.vs_first, |v| format!("{v:.1}x")),
                opt(d.pct_of_ref, |v| format!("{v:.1}%")),
                opt(r.check.map(|c| c.rel_error), |v| if v.is_finite() {
                    format!("{v:.1e}")
                } else {
                    "NaN".into()
                }),
                status_cell(r),
                opt(res.map(|x| f64::from(x.registers)), |v| format!("{v}")),
                opt(res.map(|x| f64::from(x.smem_bytes)), |v| format!("{v}")),
                opt(res.and_then(|x| x.occupancy), |v| format!(
                    "{:.0}%",
                    v * 100.0
                )),
            );
        }
        let notes: Vec<String> = shape
            .rows
            .iter()
            .filter_map(|r| r.reason.as_ref().map(|why| format!("- `{}`: {why}", r.id)))
            .collect();
        if !notes.is_empty() {
            let _ = writeln!(s, "\n{}", notes.join("\n"));
        }
        s.push('\n');
    }
    s
}

/// One CSV line per row, all shapes of a workload.
pub fn csv(w: &WorkloadResults) -> String {
    let mut s = String::from(
        "shape,rung,kernel,role,stage,precision,status,median_ms,p10_ms,p90_ms,gflops,gbps,flop_per_byte,speedup_prev,speedup_first,pct_of_ref,rel_error,registers,smem_bytes,occupancy\n",
    );
    let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for shape in &w.shapes {
        for (r, d) in shape.rows.iter().zip(derive(shape)) {
            let res = primary_resources(r);
            let _ = writeln!(
                s,
                "{},{},{},{:?},{},{},{:?},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                shape.label,
                r.rung,
                r.id,
                r.role,
                r.stage,
                r.precision,
                r.status,
                f(r.median_ms()),
                f(r.timing.as_ref().map(|t| t.p10_ms)),
                f(r.timing.as_ref().map(|t| t.p90_ms)),
                f(d.gflops),
                f(d.gbps),
                d.intensity,
                f(d.vs_prev),
                f(d.vs_first),
                f(d.pct_of_ref),
                f(r.check.map(|c| c.rel_error)),
                f(res.map(|x| f64::from(x.registers))),
                f(res.map(|x| f64::from(x.smem_bytes))),
                f(res.and_then(|x| x.occupancy)),
            );
        }
    }
    s.to_lowercase()
}

/// The compact table printed at the end of a run.
pub fn terminal(run: &RunResults) -> String {
    let mut s = String::new();
    for w in &run.workloads {
        for shape in &w.shapes {
            let _ = writeln!(s, "\n{} {}  ({})", w.workload, shape.label, run.device.name);
            let _ = writeln!(
                s,
                "  {:<18} {:>11} {:>8} {:>15} {:>9} {:>8} {:>9}  status",
                "kernel", "median ms", "spread", "throughput", "vs first", "% ref", "error"
            );
            for (r, d) in shape.rows.iter().zip(derive(shape)) {
                let _ = writeln!(
                    s,
                    "  {:<18} {:>11} {:>8} {:>15} {:>9} {:>8} {:>9}  {}",
                    r.id,
                    opt(r.median_ms(), |v| format!("{v:.3}")),
                    opt(r.timing.as_ref().map(|t| t.spread_pct()), |v| format!(
                        "±{v:.1}%"
                    )),
                    opt(d.gflops, throughput),
                    opt(d.vs_first, |v| format!("{v:.1}x")),
                    opt(d.pct_of_ref, |v| format!("{v:.1}%")),
                    opt(r.check.map(|c| c.rel_error), |v| if v.is_finite() {
                        format!("{v:.1e}")
                    } else {
                        "NaN".into()
                    }),
                    match r.status {
                        Status::Passed => "pass".to_string(),
                        other => format!("{other:?}: {}", r.reason.as_deref().unwrap_or(""))
                            .to_lowercase(),
                    }
                );
            }
        }
    }
    s
}

/// Writes `<root>/<device-slug>/<workload>.{json,md,csv}`; returns the files written.
pub fn write_all(run: &RunResults, root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join(&run.device.slug);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for w in &run.workloads {
        let one = RunResults {
            workloads: vec![w.clone()],
            ..run.clone()
        };
        let name = w.workload.name();
        let files = [
            (
                format!("{name}.json"),
                serde_json::to_string_pretty(&one)? + "\n",
            ),
            (format!("{name}.md"), markdown(run, w)),
            (format!("{name}.csv"), csv(w)),
        ];
        for (file, text) in files {
            let path = dir.join(file);
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}
