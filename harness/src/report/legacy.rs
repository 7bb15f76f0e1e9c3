//! The derivation the charts used before the report model; the charts move onto
//! [`super::model`] and this file goes away with them.

use super::roofline::{self, Ceilings};
use crate::results::{Row, RunResults, ShapeResults};
use kernel::{Precision, Role};

/// Derived figures of one row within its shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Derived {
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
    /// FLOPs per minimal byte.
    pub intensity: f64,
    /// Speedup over the previous passing rung, and over the first rung.
    pub vs_prev: Option<f64>,
    pub vs_first: Option<f64>,
    /// Percent of the throughput of the reference of this row's precision, and which one.
    pub pct_of_ref: Option<f64>,
    pub reference: Option<String>,
    /// The roofline bound at this row's intensity and precision (GFLOP/s), and the percent
    /// of it reached.
    pub roof_gflops: Option<f64>,
    pub pct_of_roof: Option<f64>,
}

/// The reference a row of `precision` is compared with: the library row of the same
/// arithmetic (cuBLAS SGEMM for FP32, cuBLAS TF32 for TF32, cuBLAS FP16/BF16 for those), so a
/// reduced-precision rung is judged against the tensor-core library at its own precision. Where
/// the table has no reference of that precision at all (the CPU has one peer crate, FP32), the
/// FP32 reference stands in; a reference that exists but failed leaves the column empty.
fn reference_for(shape: &ShapeResults, precision: Precision) -> Option<&Row> {
    let refs = || shape.rows.iter().filter(|r| r.role == Role::Reference);
    let usable = |r: &&Row| r.passed() && r.timing.is_some();
    let same = refs()
        .filter(|r| r.precision == precision)
        .min_by_key(|r| r.rung);
    match same {
        Some(r) => usable(&r).then_some(r),
        None => refs()
            .filter(|r| r.precision == Precision::Fp32)
            .filter(usable)
            .min_by_key(|r| r.rung),
    }
}

/// Derived figures; only passing rows get throughput, speedups and percentages.
pub fn derive_with(shape: &ShapeResults, ceilings: Option<&Ceilings>) -> Vec<Derived> {
    let passed_time = |r: &Row| if r.passed() { r.median_ms() } else { None };
    let first = shape
        .rows
        .iter()
        .filter(|r| r.role == Role::Rung)
        .find_map(passed_time);
    let mut prev: Option<f64> = None;
    shape
        .rows
        .iter()
        .map(|r| {
            let t = passed_time(r);
            let reference = reference_for(shape, r.precision);
            let intensity = shape.flops / r.min_bytes;
            let gflops = t.map(|ms| shape.flops / (ms * 1e6));
            let roof = ceilings.map(|c| c.bound_gflops(r.precision, intensity));
            let d = Derived {
                gflops,
                gbps: t.map(|ms| r.min_bytes / (ms * 1e6)),
                intensity,
                vs_prev: match (r.role, t, prev) {
                    (Role::Rung, Some(ms), Some(p)) => Some(p / ms),
                    _ => None,
                },
                vs_first: match (r.role, t, first) {
                    (Role::Rung | Role::User, Some(ms), Some(f)) => Some(f / ms),
                    _ => None,
                },
                pct_of_ref: match (t, reference.and_then(Row::median_ms)) {
                    (Some(ms), Some(rf)) => Some(100.0 * rf / ms),
                    _ => None,
                },
                reference: reference.map(|r| r.id.clone()),
                roof_gflops: roof,
                pct_of_roof: match (gflops, roof) {
                    (Some(g), Some(b)) if b > 0.0 => Some(100.0 * g / b),
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

/// The ceilings a run's roofline uses: its calibration when it belongs to the run's device,
/// else the datasheet of a known GPU, else none.
pub fn ceilings(run: &RunResults) -> Option<Ceilings> {
    run.calibration
        .as_ref()
        .filter(|c| c.matches(&run.device))
        .map(Ceilings::from_calibration)
        .or_else(|| roofline::datasheet(&run.device.name))
}

/// The shape a workload's headline chart shows: the largest.
pub fn headline(shapes: &[ShapeResults]) -> Option<&ShapeResults> {
    shapes.iter().max_by(|a, b| a.flops.total_cmp(&b.flops))
}
