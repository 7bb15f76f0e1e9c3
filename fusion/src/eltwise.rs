//! The element-wise chain Y = GELU(X + b) + R (GELU with the tanh approximation) as a ladder
//! of its own: three kernels through scratch buffers, one fused kernel, and the fused kernel
//! with 16-byte accesses. The chain is DRAM-bound; the lesson is bytes moved per element:
//! 7 x 4 for rung 01, 3 x 4 (the compulsory minimum) for rungs 02 and 03.

use kernel::{
    Activation, Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Launch,
    Lineage, Precision, Role, Scratch, Shape, Stage, Step, Workload, cuda_source, div_ceil,
};
use rayon::prelude::*;

/// The element-wise rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![
        Box::new(EltwiseUnfused),
        Box::new(EltwiseFused),
        Box::new(EltwiseFusedVec4),
    ]
}

/// Threads per block of every element-wise launch.
const BLOCK: usize = 256;
/// Rows per rayon task of the CPU ports: large enough to amortize the task, small enough to
/// balance two cores on the small CPU shapes.
const ROWS_PER_TASK: usize = 16;

/// `(m, n)` of an element-wise shape. The harness only hands a kernel its own workload.
fn dims(shape: &Shape) -> (usize, usize) {
    match *shape {
        Shape::Eltwise { m, n } => (m, n),
        other => panic!("an element-wise kernel was given {other}"),
    }
}

/// GELU (tanh approximation) in f32, as every rung computes it.
fn gelu(x: f32) -> f32 {
    Activation::Gelu.apply_f32(x)
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Eltwise,
        stage: Stage::Fusion,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// A one-thread-per-element launch of `entry` in `source`.
fn launch(source: CudaSource, entry: &'static str, threads: usize, args: Vec<Arg>) -> Launch {
    Launch {
        source,
        entry: entry.into(),
        grid: [div_ceil(threads, BLOCK), 1, 1],
        block: [BLOCK as u32, 1, 1],
        dynamic_smem: 0,
        args,
    }
}

/// `eltwise/01_unfused.cu`: bias add, GELU and residual add as three launches.
pub struct EltwiseUnfused;

impl Kernel for EltwiseUnfused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "one kernel per operation, as an eager framework runs the chain: every intermediate is an M x N tensor in DRAM",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "eltwise-unfused",
            1,
            "bias add, GELU, residual add as three kernels through two M x N scratch buffers",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        let src = || cuda_source!("fusion", "eltwise/01_unfused.cu");
        let (mi, ni) = (Arg::I32(m as i32), Arg::I32(n as i32));
        let steps = vec![
            launch(
                src(),
                "eltwise_bias_add",
                m * n,
                vec![
                    Arg::Ptr(Buf::Input(0)),
                    Arg::Ptr(Buf::Input(1)),
                    Arg::Ptr(Buf::Scratch(0)),
                    mi,
                    ni,
                ],
            ),
            launch(
                src(),
                "eltwise_gelu",
                m * n,
                vec![Arg::Ptr(Buf::Scratch(0)), Arg::Ptr(Buf::Scratch(1)), mi, ni],
            ),
            launch(
                src(),
                "eltwise_residual_add",
                m * n,
                vec![
                    Arg::Ptr(Buf::Scratch(1)),
                    Arg::Ptr(Buf::Input(2)),
                    Arg::Ptr(Buf::Output),
                    mi,
                    ni,
                ],
            ),
        ];
        Some(CudaPlan {
            inputs: vec![Dtype::F32; 3],
            output: Dtype::F32,
            scratch: vec![
                Scratch::new("X+b", Dtype::F32, m * n),
                Scratch::new("GELU(X+b)", Dtype::F32, m * n),
            ],
            steps: steps.into_iter().map(Step::Kernel).collect(),
            ..Default::default()
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_unfused)
    }
}

/// CPU port of rung 01: three passes over M x N, each writing a full temporary that the next
/// reads back, as the three launches do.
fn cpu_unfused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n) = dims(shape);
    let (x, bias, r) = (inputs[0], inputs[1], inputs[2]);
    let chunk = ROWS_PER_TASK * n;
    let mut t1 = vec![0.0f32; m * n];
    t1.par_chunks_mut(chunk)
        .zip(x.par_chunks(chunk))
        .for_each(|(t, x)| {
            for (t, x) in t.chunks_mut(n).zip(x.chunks(n)) {
                for ((tv, &xv), &b) in t.iter_mut().zip(x).zip(bias) {
                    *tv = xv + b;
                }
            }
        });
    let mut t2 = vec![0.0f32; m * n];
    t2.par_chunks_mut(chunk)
        .zip(t1.par_chunks(chunk))
        .for_each(|(u, t)| {
            for (uv, &tv) in u.iter_mut().zip(t) {
                *uv = gelu(tv);
            }
        });
    out.par_chunks_mut(chunk)
        .zip(t2.par_chunks(chunk).zip(r.par_chunks(chunk)))
        .for_each(|(y, (u, r))| {
            for ((yv, &uv), &rv) in y.iter_mut().zip(u).zip(r) {
                *yv = uv + rv;
            }
        });
}

/// `eltwise/02_fused.cu`: the chain in one kernel, intermediates in registers.
pub struct EltwiseFused;

/// The parameter list `(X, bias, R, Y, M, N)` of the one-kernel rungs.
fn fused_args(m: usize, n: usize) -> Vec<Arg> {
    vec![
        Arg::Ptr(Buf::Input(0)),
        Arg::Ptr(Buf::Input(1)),
        Arg::Ptr(Buf::Input(2)),
        Arg::Ptr(Buf::Output),
        Arg::I32(m as i32),
        Arg::I32(n as i32),
    ]
}

impl Kernel for EltwiseFused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("eltwise-unfused"),
            idea: "the three operations in one kernel: the intermediates stay in registers, X and R are read once and Y written once",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "eltwise-fused",
            2,
            "bias + GELU + residual fused: one launch, one thread per element, no scratch",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        Some(CudaPlan::single(
            3,
            launch(
                cuda_source!("fusion", "eltwise/02_fused.cu"),
                "eltwise_fused",
                m * n,
                fused_args(m, n),
            ),
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

/// CPU port of rungs 02 and 03: one pass, each output computed from X, b and R while they are
/// in registers (the compiler vectorizes the row loop, which is what rung 03 does by hand).
fn cpu_fused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (_, n) = dims(shape);
    let (x, bias, r) = (inputs[0], inputs[1], inputs[2]);
    let chunk = ROWS_PER_TASK * n;
    out.par_chunks_mut(chunk)
        .zip(x.par_chunks(chunk).zip(r.par_chunks(chunk)))
        .for_each(|(y, (x, r))| {
            for ((y, x), r) in y.chunks_mut(n).zip(x.chunks(n)).zip(r.chunks(n)) {
                for (((yv, &xv), &rv), &b) in y.iter_mut().zip(x).zip(r).zip(bias) {
                    *yv = gelu(xv + b) + rv;
                }
            }
        });
}

/// `eltwise/03_fused_vec4.cu`: rung 02 with float4 loads and stores, a scalar tail path.
pub struct EltwiseFusedVec4;

impl Kernel for EltwiseFusedVec4 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("eltwise-fused"),
            idea: "16-byte loads and stores, four elements per thread: the same bytes in a quarter of the memory instructions",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "eltwise-fused-vec4",
            3,
            "rung 02 with float4 loads/stores (4 elements per thread), scalar path when N % 4 != 0",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n) = dims(shape);
        Some(CudaPlan::single(
            3,
            launch(
                cuda_source!("fusion", "eltwise/03_fused_vec4.cu"),
                "eltwise_fused_vec4",
                (m * n).div_ceil(4),
                fused_args(m, n),
            ),
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every port against the f64 reference, at shapes with N % 4 != 0, a single element, a
    /// single row and more rows than one rayon task.
    #[test]
    fn ports_agree_with_the_reference() {
        for &(m, n) in &[(1, 1), (1, 7), (3, 5), (37, 130), (17, 64)] {
            let x: Vec<f32> = (0..m * n)
                .map(|i| ((i * 31) % 23) as f32 / 5.0 - 2.3)
                .collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 / 3.0 - 1.0).collect();
            let r: Vec<f32> = (0..m * n)
                .map(|i| ((i * 17) % 13) as f32 / 6.0 - 1.0)
                .collect();
            let shape = Shape::Eltwise { m, n };
            let want = kernel::reference::reference(&shape, &[x.clone(), b.clone(), r.clone()]);
            for kern in kernels() {
                let port = kern.cpu().expect("every element-wise rung has a CPU port");
                let mut out = vec![f32::NAN; m * n];
                port(&shape, &[&x, &b, &r], &mut out);
                let err = kernel::testing::relative_error(&out, &want);
                assert!(err < 1e-5, "{} {m}x{n}: error {err}", kern.info().id);
            }
        }
    }

    #[test]
    fn unfused_plan_routes_through_two_scratch_buffers() {
        let plan = EltwiseUnfused
            .cuda(&Shape::Eltwise { m: 3, n: 5 })
            .expect("a plan");
        assert_eq!(plan.launches().count(), 3);
        assert_eq!(plan.scratch.len(), 2);
        assert!(plan.scratch.iter().all(|s| s.len == 15));
    }

    #[test]
    fn vec4_launches_one_thread_per_group_of_four() {
        let plan = EltwiseFusedVec4
            .cuda(&Shape::Eltwise { m: 3, n: 5 })
            .expect("a plan");
        let l = plan.launches().next().expect("one launch");
        assert_eq!(l.grid[0] as usize * l.block[0] as usize, BLOCK);
        assert_eq!(l.grid[0], 1);
    }
}
