//! Small helpers the stage crates' tests share: deterministic inputs, an f64 GEMM with the
//! operand rounding of a precision, and the relative error the harness judges rows by. The
//! unrounded f64 references of every workload are in [`crate::reference`].

use crate::workload::Shape;

/// Deterministic inputs in [-1, 1) for every input tensor of `shape` (in [0, 1] for a
/// [`crate::TensorSpec::positive`] one; a 64-bit LCG, so no value is zero by construction and
/// runs repeat exactly).
pub fn inputs(shape: &Shape, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed;
    shape
        .inputs()
        .iter()
        .map(|t| {
            (0..t.len())
                .map(|_| {
                    s = s
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    let u = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                    if t.positive { u.abs() } else { u }
                })
                .collect()
        })
        .collect()
}

/// Row-major `C[m,n] = round(A)[m,k] * round(B)[k,n]` in f64, where `round` models the operand
/// rounding of a precision (TF32, FP16, BF16; the identity for FP32).
pub fn gemm_f64(
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    b: &[f32],
    round: impl Fn(f32) -> f32,
) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for kk in 0..k {
            let aik = f64::from(round(a[i * k + kk]));
            for j in 0..n {
                c[i * n + j] += aik * f64::from(round(b[kk * n + j]));
            }
        }
    }
    c
}

/// Relative Frobenius error `||out - ref|| / ||ref||`; NaN (a poisoned, unwritten output)
/// counts as infinite, so it can never pass a bound.
pub fn relative_error(out: &[f32], reference: &[f64]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&o, r) in out.iter().zip(reference) {
        diff += (f64::from(o) - r).powi(2);
        norm += r * r;
    }
    let e = (diff / norm.max(f64::MIN_POSITIVE)).sqrt();
    if e.is_nan() { f64::INFINITY } else { e }
}

/// A kernel that is nothing but a fixed CUDA plan, for tests that run sources of their own.
pub struct PlanKernel {
    pub plan: crate::CudaPlan,
    pub precision: crate::Precision,
}

impl PlanKernel {
    pub fn fp32(plan: crate::CudaPlan) -> Self {
        Self {
            plan,
            precision: crate::Precision::Fp32,
        }
    }
}

/// The `len` floats `entry` of `src` writes, run in the simulator as one block of `threads`
/// threads whose only argument is the output: a test of what device code computes.
pub fn sim_one_block(src: crate::CudaSource, entry: &str, threads: u32, len: usize) -> Vec<f32> {
    use crate::Executor;
    let plan = crate::CudaPlan {
        inputs: vec![crate::Dtype::F32; 2],
        steps: vec![crate::Step::Kernel(crate::Launch {
            source: src,
            entry: entry.to_string().into(),
            grid: [1, 1, 1],
            block: [threads, 1, 1],
            dynamic_smem: 0,
            args: vec![crate::Arg::Ptr(crate::Buf::Output)],
        })],
        ..Default::default()
    };
    let shape = Shape::gemm(1, len, 1);
    let dev = crate::sim::SimDevice::new().expect("the simulator needs a host C++ compiler");
    let k = PlanKernel::fp32(plan);
    let data = inputs(&shape, 3);
    let mut p = dev
        .prepare(&k, &shape, &data)
        .unwrap_or_else(|e| panic!("{e}"));
    p.run().unwrap_or_else(|e| panic!("{e}"));
    p.output().unwrap_or_else(|e| panic!("{e}"))
}

/// One launch of `entry` in `code` with the GEMM parameters `(A, B, C, M, N, K)` of `dims`,
/// the output starting at zero: the plan of a test's own GEMM-shaped kernel.
pub fn gemm_launch(
    file: &'static str,
    code: &'static str,
    entry: &str,
    grid: [u32; 3],
    block: [u32; 3],
    (m, n, k): (usize, usize, usize),
) -> crate::CudaPlan {
    crate::CudaPlan {
        inputs: vec![crate::Dtype::F32; 2],
        steps: vec![crate::Step::Kernel(crate::Launch {
            source: crate::CudaSource::embedded(file, code),
            entry: entry.to_string().into(),
            grid,
            block,
            dynamic_smem: 0,
            args: crate::gemm_args(m, n, k),
        })],
        output_fill: crate::Fill::Zero,
        ..Default::default()
    }
}

impl crate::Kernel for PlanKernel {
    fn info(&self) -> crate::KernelInfo {
        crate::KernelInfo {
            id: "test-plan".into(),
            workload: crate::Workload::Gemm,
            stage: crate::Stage::Baseline,
            precision: self.precision,
            role: crate::Role::Rung,
            rung: 0,
            summary: "a test's own CUDA source".into(),
        }
    }

    fn cuda(&self, _shape: &Shape) -> Option<crate::CudaPlan> {
        Some(self.plan.clone())
    }
}

/// The files below `dir`, as paths relative to it: what a test compares with a list of
/// embedded files (headers served to a compiler) so that none is left out.
pub fn files_below(dir: &std::path::Path) -> Vec<String> {
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, base, out);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The line that messages give the first line of `source` holding `marker`: counted from the
/// start, or from the last `#line N` directive before it, as a compiler counts.
pub fn source_line(source: &str, marker: &str) -> usize {
    let mut line = 1;
    for l in source.lines() {
        if l.contains(marker) {
            return line;
        }
        line = l
            .trim_start()
            .strip_prefix("#line ")
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(line + 1);
    }
    panic!("no line holds {marker:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_line_counts_from_the_last_line_directive() {
        let source = "a\nb // here\n#line 1 \"h.cuh\"\nc\nd // there\n";
        assert_eq!(source_line(source, "// here"), 2);
        assert_eq!(source_line(source, "// there"), 2);
    }

    #[test]
    fn errors_are_relative_and_nan_never_passes() {
        assert_eq!(relative_error(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        let e = relative_error(&[1.1, 2.0], &[1.0, 2.0]);
        assert!((e - 0.1 / 5f64.sqrt()).abs() < 1e-6, "{e}");
        assert_eq!(relative_error(&[f32::NAN, 2.0], &[1.0, 2.0]), f64::INFINITY);
    }

    #[test]
    fn inputs_repeat_and_are_never_zero() {
        let shape = Shape::Gemm { m: 3, n: 4, k: 5 };
        let (x, y) = (inputs(&shape, 7), inputs(&shape, 7));
        assert_eq!(x, y);
        assert_eq!(x.len(), 2);
        assert!(
            x.iter()
                .flatten()
                .all(|v| (-1.0..1.0).contains(v) && *v != 0.0)
        );
        assert_eq!(
            gemm_f64((1, 1, 2), &[1.0, 2.0], &[3.0, 4.0], |v| v),
            vec![11.0]
        );
    }
}
