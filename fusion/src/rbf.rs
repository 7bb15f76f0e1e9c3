//! The radial-basis expansion with cosine cutoff of a molecular-dynamics network's embedding:
//! out[n,k] = exp(-gamma (d_n - mu_k)^2) * 0.5 (cos(pi d_n / r_c) + 1) for d_n < r_c, else 0,
//! mu_k = k r_c / (K - 1), with r_c = [`RBF_CUTOFF`] and gamma = [`RBF_GAMMA`]. Rung 01 runs
//! it as three kernels through scratch (12 bytes moved per output), rung 02 as one kernel
//! that computes the cutoff once per distance (4 bytes per output, the compulsory minimum).

use kernel::workload::{RBF_CUTOFF, RBF_GAMMA, rbf_center};
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, Dtype, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Scratch, Shape, Stage, Step, Unsupported, Workload, cuda_source, div_ceil,
};
use rayon::prelude::*;

/// The radial-basis rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(RbfUnfused), Box::new(RbfFused)]
}

/// Threads per block of the one-thread-per-element launches, and the target of rung 02's
/// K x ROWS blocks.
const BLOCK: usize = 256;
/// Most threads of a block: rung 02 gives each centre of a distance its own thread.
const MAX_BLOCK: usize = 1024;
/// Distances per rayon task of the CPU ports.
const ROWS_PER_TASK: usize = 256;

/// `(n, k)` of a radial-basis shape. The harness only hands a kernel its own workload.
fn dims(shape: &Shape) -> (usize, usize) {
    match *shape {
        Shape::Rbf { n, k } => (n, k),
        other => panic!("a radial-basis kernel was given {other}"),
    }
}

/// The f32 constants every rung computes with: the spacing of the centres, gamma, r_c.
fn constants(k: usize) -> (f32, f32, f32) {
    (rbf_center(1, k) as f32, RBF_GAMMA as f32, RBF_CUTOFF as f32)
}

/// The cosine cutoff in f32, as the kernels compute it.
fn cutoff(d: f32, rc: f32) -> f32 {
    if d < rc {
        0.5 * ((std::f32::consts::PI * d / rc).cos() + 1.0)
    } else {
        0.0
    }
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Rbf,
        stage: Stage::Fusion,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// `rbf/01_unfused.cu`: Gaussians, cutoff and product as three launches through scratch.
pub struct RbfUnfused;

impl Kernel for RbfUnfused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "three tensor operations, three kernels: the n x K Gaussians and the n cutoffs make a round trip through DRAM",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "rbf-unfused",
            1,
            "Gaussian expansion, cosine cutoff, product as three kernels through scratch",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (n, k) = dims(shape);
        let (step, gamma, rc) = constants(k);
        let src = || cuda_source!("fusion", "rbf/01_unfused.cu");
        let launch = |entry: &'static str, threads: usize, args: Vec<Arg>| Launch {
            source: src(),
            entry: entry.into(),
            grid: [div_ceil(threads, BLOCK), 1, 1],
            block: [BLOCK as u32, 1, 1],
            dynamic_smem: 0,
            args,
        };
        let (ni, ki) = (Arg::I32(n as i32), Arg::I32(k as i32));
        let steps = vec![
            launch(
                "rbf_expand",
                n * k,
                vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Scratch(0)),
                    ni,
                    ki,
                    Arg::F32(step),
                    Arg::F32(gamma),
                ],
            ),
            launch(
                "rbf_cutoff",
                n,
                vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Scratch(1)),
                    ni,
                    Arg::F32(rc),
                ],
            ),
            launch(
                "rbf_multiply",
                n * k,
                vec![
                    Arg::Ptr(Buf::Scratch(0)),
                    Arg::Ptr(Buf::Scratch(1)),
                    Arg::Ptr(Buf::Output),
                    ni,
                    ki,
                ],
            ),
        ];
        Some(CudaPlan {
            inputs: vec![Dtype::F32],
            output: Dtype::F32,
            scratch: vec![
                Scratch::new("Gaussians", Dtype::F32, n * k),
                Scratch::new("cutoffs", Dtype::F32, n),
            ],
            steps: steps.into_iter().map(Step::Kernel).collect(),
            ..Default::default()
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_unfused)
    }
}

/// CPU port of rung 01: the n x K Gaussians into a temporary, the n cutoffs into another, then
/// a third pass multiplies them into the output, as the three launches do.
fn cpu_unfused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (n, k) = dims(shape);
    let (step, gamma, rc) = constants(k);
    let d = inputs[0];
    let chunk = ROWS_PER_TASK * k;
    let mut e = vec![0.0f32; n * k];
    e.par_chunks_mut(chunk)
        .zip(d.par_chunks(ROWS_PER_TASK))
        .for_each(|(e, d)| {
            for (row, &dv) in e.chunks_mut(k).zip(d) {
                for (j, ev) in row.iter_mut().enumerate() {
                    let x = dv - j as f32 * step;
                    *ev = (-gamma * x * x).exp();
                }
            }
        });
    let c: Vec<f32> = d.par_iter().map(|&dv| cutoff(dv, rc)).collect();
    out.par_chunks_mut(chunk)
        .zip(e.par_chunks(chunk).zip(c.par_chunks(ROWS_PER_TASK)))
        .for_each(|(o, (e, c))| {
            for ((o, e), &cv) in o.chunks_mut(k).zip(e.chunks(k)).zip(c) {
                for (ov, &ev) in o.iter_mut().zip(e) {
                    *ov = ev * cv;
                }
            }
        });
}

/// `rbf/02_fused.cu`: one kernel, the cutoff computed once per distance in shared memory.
pub struct RbfFused;

/// Rows (distances) per block of rung 02: blocks of about [`BLOCK`] threads, K per row.
fn fused_rows(k: usize) -> usize {
    (BLOCK / k).max(1)
}

impl Kernel for RbfFused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("rbf-unfused"),
            idea: "one kernel: the cutoff computed once per distance into shared memory, each output written once, no scratch",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "rbf-fused",
            2,
            "expansion, cutoff and product fused: one launch, one cospif per distance, one store per output",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        let (_, k) = dims(shape);
        if k > MAX_BLOCK {
            return Err(Unsupported(format!(
                "K = {k} is above {MAX_BLOCK}: each centre of a distance is a thread of one block"
            )));
        }
        Ok(())
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (n, k) = dims(shape);
        let (step, gamma, rc) = constants(k);
        let rows = fused_rows(k);
        Some(CudaPlan::single(
            1,
            Launch {
                source: cuda_source!("fusion", "rbf/02_fused.cu"),
                entry: "rbf_fused".into(),
                grid: [div_ceil(n, rows), 1, 1],
                block: [k as u32, rows as u32, 1],
                dynamic_smem: (2 * rows * std::mem::size_of::<f32>()) as u32,
                args: vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Output),
                    Arg::I32(n as i32),
                    Arg::I32(k as i32),
                    Arg::F32(step),
                    Arg::F32(gamma),
                    Arg::F32(rc),
                ],
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

/// CPU port of rung 02: per distance, the cutoff once, then its row of K outputs written
/// once (zeros beyond the cutoff, without the exponentials).
fn cpu_fused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, k) = dims(shape);
    let (step, gamma, rc) = constants(k);
    let d = inputs[0];
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .zip(d.par_chunks(ROWS_PER_TASK))
        .for_each(|(o, d)| {
            for (row, &dv) in o.chunks_mut(k).zip(d) {
                let fc = cutoff(dv, rc);
                for (j, ov) in row.iter_mut().enumerate() {
                    let x = dv - j as f32 * step;
                    *ov = if fc == 0.0 {
                        0.0
                    } else {
                        (-gamma * x * x).exp() * fc
                    };
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ports against the f64 reference at one distance, one centre, K not a power of two
    /// and more distances than one rayon task; the inputs span both sides of the cutoff.
    #[test]
    fn ports_agree_with_the_reference() {
        for &(n, k) in &[(1, 1), (5, 1), (7, 3), (300, 17), (513, 64)] {
            let d: Vec<f32> = (0..n)
                .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
                .collect();
            assert!(d.iter().any(|&v| v >= RBF_CUTOFF as f32) || n < 10);
            let shape = Shape::Rbf { n, k };
            let want = kernel::reference::reference(&shape, std::slice::from_ref(&d));
            for kern in kernels() {
                let port = kern.cpu().expect("every radial-basis rung has a CPU port");
                let mut out = vec![f32::NAN; n * k];
                port(&shape, &[&d], &mut out);
                let err = kernel::testing::relative_error(&out, &want);
                assert!(err < 1e-5, "{} {n}x{k}: error {err}", kern.info().id);
            }
        }
    }

    #[test]
    fn fused_blocks_cover_every_distance_and_decline_wide_rows() {
        let plan = RbfFused.cuda(&Shape::Rbf { n: 100, k: 17 }).unwrap();
        let l = plan.launches().next().unwrap();
        assert_eq!(l.block, [17, 15, 1]);
        assert!(l.grid[0] as usize * 15 >= 100);
        let e = RbfFused
            .supports(&Shape::Rbf { n: 4, k: 2000 })
            .unwrap_err();
        assert!(e.0.contains("above 1024"), "{e}");
        let unfused = RbfUnfused.cuda(&Shape::Rbf { n: 3, k: 5 }).unwrap();
        assert_eq!(unfused.launches().count(), 3);
        assert_eq!(unfused.scratch[0].len, 15);
    }
}
