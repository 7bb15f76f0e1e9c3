//! Tables from results: Markdown and CSV per workload, and the compact terminal summary.

use super::roofline::{Ceilings, Source};
use super::{Derived, derive_with};
use crate::results::{Row, RunResults, Status, WorkloadResults};
use crate::run::primary_resources;
use kernel::Role;
use std::fmt::Write as _;

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn status_cell(r: &Row) -> &'static str {
    match r.status {
        Status::Passed => "pass",
        Status::Failed => "**FAILED**",
        Status::Unsupported => "n/a",
        Status::Error => "**ERROR**",
    }
}

/// `1.2 TFLOP/s` or `345.6 GFLOP/s`.
pub fn throughput(gflops: f64) -> String {
    if gflops >= 1000.0 {
        format!("{:.1} TFLOP/s", gflops / 1e3)
    } else {
        format!("{gflops:.1} GFLOP/s")
    }
}

fn error_cell(r: &Row) -> String {
    opt(r.check.map(|c| c.rel_error), |v| {
        if v.is_finite() {
            format!("{v:.1e}")
        } else {
            "NaN".into()
        }
    })
}

/// The rung number, or what the row is when it is not a rung.
fn rung_cell(r: &Row) -> String {
    match r.role {
        Role::Rung => r.rung.to_string(),
        Role::Reference => "ref".into(),
        Role::Peer => "peer".into(),
        Role::User => "user".into(),
    }
}

/// `12.0 MiB`, `-` for none.
pub fn bytes(b: u64) -> String {
    match b {
        0 => "-".into(),
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}

/// Which reference each precision of a shape's rows is compared with, for a legend line.
fn references_used(shape: &crate::results::ShapeResults) -> String {
    let mut seen: Vec<String> = Vec::new();
    for p in kernel::Precision::ALL {
        if !shape.rows.iter().any(|r| r.precision == p) {
            continue;
        }
        let line = match super::reference_for(shape, p) {
            Some(r) if r.precision == p => format!("{p} rows against {}", r.id),
            Some(r) => format!("{p} rows against {} (no {p} reference here)", r.id),
            None => format!("{p} rows against nothing (no passing reference of that precision)"),
        };
        seen.push(line);
    }
    seen.join("; ")
}

/// What the roofline column is measured against, for headers.
pub fn roof_source(c: Option<&Ceilings>) -> String {
    match c {
        Some(c) if c.source == Source::Measured => format!(
            "measured ceilings ({}, FP32 {}{}{})",
            super::charts::bandwidth(c.bandwidth_gbs),
            throughput(c.fp32_gflops),
            c.tf32_gflops
                .map(|t| format!(", TF32 tensor {}", throughput(t)))
                .unwrap_or_default(),
            c.fp16_gflops
                .map(|h| format!(", FP16 tensor {}", throughput(h)))
                .unwrap_or_default()
        ),
        Some(c) => format!("{} ceilings (not measured here)", c.label),
        None => "no ceilings: run `harness calibrate`".into(),
    }
}

/// Why the plan columns are empty in a CPU run's tables.
pub const CPU_RESOURCES_NOTE: &str = "On the CPU device every row runs its CPU port, not a GPU \
    plan: nothing is allocated on a device and nothing goes through ptxas, so `scratch`, \
    `regs`, `smem B`, `occupancy` and `waves` are `-`. A GPU or simulator run shows them.\n\n";

/// The Markdown tables of one workload.
pub fn markdown(run: &RunResults, w: &WorkloadResults, ceilings: Option<&Ceilings>) -> String {
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
         times are medians of per-run samples, spread is half the p10-p90 range. \
         `% roof` is the share of the roofline bound min(peak for the row's precision, \
         FLOP/B x bandwidth) from {}.\n",
        dev.name,
        dev.driver,
        dev.cuda
            .as_ref()
            .map(|c| format!(", {c}"))
            .unwrap_or_default(),
        run.commit,
        run.date,
        w.workload.name(),
        roof_source(ceilings),
    );
    if dev.kind == kernel::DeviceKind::Cpu.name() {
        // Not the GPU plan's figures: this run allocated none of them.
        s.push_str(CPU_RESOURCES_NOTE);
    }
    for shape in &w.shapes {
        let _ = writeln!(
            s,
            "## {} ({:.2} GFLOP)\n\nChecked against: {}.\n",
            shape.label,
            shape.flops / 1e9,
            shape.reference
        );
        let roof_head = match ceilings.map(|c| c.source) {
            Some(Source::Measured) => "% roof (measured)",
            Some(Source::Datasheet) => "% roof (datasheet)",
            None => "% roof",
        };
        let _ = writeln!(s, "`% of ref`: {}.\n", references_used(shape));
        let _ = writeln!(
            s,
            "| # | kernel | prec | median ms | spread | throughput | GB/s | FLOP/B | vs prev | vs first | % of ref | {roof_head} | rel. error | status | scratch | regs | smem B | occupancy | waves |"
        );
        s.push_str(
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n",
        );
        for (r, d) in shape.rows.iter().zip(derive_with(shape, ceilings)) {
            let res = primary_resources(r);
            let _ = writeln!(
                s,
                "| {} | `{}` | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                rung_cell(r),
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
                opt(d.pct_of_roof, |v| format!("{v:.1}%")),
                error_cell(r),
                status_cell(r),
                bytes(r.scratch_bytes),
                opt(res.map(|x| f64::from(x.registers)), |v| format!("{v}")),
                opt(res.map(|x| f64::from(x.smem_bytes)), |v| format!("{v}")),
                opt(res.and_then(|x| x.occupancy), |v| format!(
                    "{:.0}%",
                    v * 100.0
                )),
                opt(res.and_then(|x| x.waves), |v| format!("{v:.2}")),
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

/// The CSV header; every line has exactly these columns.
pub const CSV_HEADER: &str = "shape,rung,kernel,role,stage,precision,status,median_ms,p10_ms,p90_ms,gflops,gbps,flop_per_byte,speedup_prev,speedup_first,pct_of_ref,reference,roof_gflops,pct_of_roof,roof_source,rel_error,scratch_bytes,registers,smem_bytes,occupancy,waves";

/// Quotes a CSV field when it needs it (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV line per row, all shapes of a workload.
pub fn csv(w: &WorkloadResults, ceilings: Option<&Ceilings>) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    let f = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    let source = match ceilings.map(|c| c.source) {
        Some(Source::Measured) => "measured",
        Some(Source::Datasheet) => "datasheet",
        None => "",
    };
    for shape in &w.shapes {
        for (r, d) in shape.rows.iter().zip(derive_with(shape, ceilings)) {
            let res = primary_resources(r);
            let Derived {
                gflops,
                gbps,
                intensity,
                vs_prev,
                vs_first,
                pct_of_ref,
                reference,
                roof_gflops,
                pct_of_roof,
            } = d;
            let cells = [
                field(&shape.label),
                r.rung.to_string(),
                field(&r.id),
                r.role.name().to_string(),
                r.stage.to_string(),
                r.precision.to_string(),
                format!("{:?}", r.status).to_lowercase(),
                f(r.median_ms()),
                f(r.timing.as_ref().map(|t| t.p10_ms)),
                f(r.timing.as_ref().map(|t| t.p90_ms)),
                f(gflops),
                f(gbps),
                format!("{intensity}"),
                f(vs_prev),
                f(vs_first),
                f(pct_of_ref),
                field(reference.as_deref().unwrap_or("")),
                f(roof_gflops),
                f(pct_of_roof),
                source.to_string(),
                f(r.check.map(|c| c.rel_error)),
                r.scratch_bytes.to_string(),
                f(res.map(|x| f64::from(x.registers))),
                f(res.map(|x| f64::from(x.smem_bytes))),
                f(res.and_then(|x| x.occupancy)),
                f(res.and_then(|x| x.waves)),
            ];
            let _ = writeln!(s, "{}", cells.join(","));
        }
    }
    s
}

/// The compact table printed at the end of a run.
pub fn terminal(run: &RunResults, ceilings: Option<&Ceilings>) -> String {
    let mut s = String::new();
    for w in &run.workloads {
        for shape in &w.shapes {
            let _ = writeln!(s, "\n{} {}  ({})", w.workload, shape.label, run.device.name);
            // The id column fits the longest id (user kernels such as
            // `gemm_blocktile<64,64,8>` outgrow the ladder's short names).
            let idw = shape
                .rows
                .iter()
                .filter(|r| r.status != Status::Unsupported)
                .map(|r| r.id.chars().count())
                .max()
                .unwrap_or(0)
                .max(20);
            let _ = writeln!(
                s,
                "  {:<3} {:<idw$} {:>10} {:>7} {:>15} {:>8} {:>9} {:>7} {:>7} {:>8}  status",
                "#",
                "kernel",
                "median ms",
                "spread",
                "throughput",
                "vs prev",
                "vs first",
                "% ref",
                "% roof",
                "error"
            );
            let mut skipped = Vec::new();
            for (r, d) in shape.rows.iter().zip(derive_with(shape, ceilings)) {
                // Rows that cannot run here (no CPU port, say) go on one line below.
                if r.status == Status::Unsupported {
                    skipped.push(r.id.as_str());
                    continue;
                }
                let _ = writeln!(
                    s,
                    "  {:<3} {:<idw$} {:>10} {:>7} {:>15} {:>8} {:>9} {:>7} {:>7} {:>8}  {}",
                    rung_cell(r),
                    r.id,
                    opt(r.median_ms(), |v| format!("{v:.3}")),
                    opt(r.timing.as_ref().map(|t| t.spread_pct()), |v| format!(
                        "±{v:.1}%"
                    )),
                    opt(d.gflops, throughput),
                    opt(d.vs_prev, |v| format!("{v:.2}x")),
                    opt(d.vs_first, |v| format!("{v:.1}x")),
                    opt(d.pct_of_ref, |v| format!("{v:.0}%")),
                    opt(d.pct_of_roof, |v| format!("{v:.0}%")),
                    error_cell(r),
                    match r.status {
                        Status::Passed => "pass".to_string(),
                        // Only the status word is lowercased: reasons quote code and
                        // identifiers (`C`, `'A'`) and stay as written.
                        other => format!(
                            "{}: {}",
                            format!("{other:?}").to_lowercase(),
                            r.reason.as_deref().unwrap_or("")
                        ),
                    }
                );
            }
            if !skipped.is_empty() {
                let _ = writeln!(s, "  not run on this device: {}", skipped.join(", "));
            }
            let _ = writeln!(s, "  % ref: {}", references_used(shape));
        }
    }
    if !s.is_empty() {
        let _ = writeln!(s, "\n% roof against {}", roof_source(ceilings));
    }
    s
}
