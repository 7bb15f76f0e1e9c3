//! ReLU then P x P max pooling (stride P, no padding), a CNN's activation and pooling layers,
//! as a ladder of its own: two kernels through a scratch buffer the size of x, then one kernel
//! with the ReLU folded into the maximum (max(relu(x)) = relu(max(x))). The lesson is the
//! activation's round trip through DRAM.

use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Launch, Lineage,
    Precision, Role, Scratch, Shape, Stage, Step, Workload, cuda_source, div_ceil,
};
use rayon::prelude::*;

/// The pooling rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(PoolUnfused), Box::new(PoolFused)]
}

/// Threads per block of every pooling launch.
const BLOCK: usize = 256;

/// `(b, c, h, w, p)` of a pooling shape. The harness only hands a kernel its own workload.
fn dims(shape: &Shape) -> (usize, usize, usize, usize, usize) {
    match *shape {
        Shape::Pool { b, c, h, w, p } => (b, c, h, w, p),
        other => panic!("a pooling kernel was given {other}"),
    }
}

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Pool,
        stage: Stage::Fusion,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// A one-thread-per-item launch of `entry` in `source`.
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

/// The pooling launch `(src, y, B, C, H, W, P)`, one thread per output.
fn pool_launch(source: CudaSource, entry: &'static str, src: Buf, shape: &Shape) -> Launch {
    let (b, c, h, w, p) = dims(shape);
    let dim = |v: usize| Arg::I32(v as i32);
    launch(
        source,
        entry,
        shape.output().len(),
        vec![
            Arg::Ptr(src),
            Arg::Ptr(Buf::Output),
            dim(b),
            dim(c),
            dim(h),
            dim(w),
            dim(p),
        ],
    )
}

/// The maximum of `start` and the P x P window at output (oh, ow) of the H x W plane `x`.
fn window_max(x: &[f32], w: usize, p: usize, oh: usize, ow: usize, start: f32) -> f32 {
    let mut m = start;
    for r in 0..p {
        let line = &x[(oh * p + r) * w + ow * p..][..p];
        for &v in line {
            m = m.max(v);
        }
    }
    m
}

/// Pools every H x W plane of `src` into its HO x WO plane of `out`, the running maximum of
/// each window starting at `start(window's first element)`; planes spread over rayon.
fn pool_planes(shape: &Shape, src: &[f32], out: &mut [f32], start: impl Fn(f32) -> f32 + Sync) {
    let (_, _, h, w, p) = dims(shape);
    let (ho, wo) = Shape::pool_out(h, w, p);
    out.par_chunks_mut(ho * wo)
        .zip(src.par_chunks(h * w))
        .for_each(|(y, x)| {
            for (oh, y_row) in y.chunks_mut(wo).enumerate() {
                for (ow, yv) in y_row.iter_mut().enumerate() {
                    *yv = window_max(x, w, p, oh, ow, start(x[oh * p * w + ow * p]));
                }
            }
        });
}

/// `pool/01_unfused.cu`: a ReLU kernel into scratch, then a max-pooling kernel.
pub struct PoolUnfused;

impl Kernel for PoolUnfused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "one kernel per layer, as an eager framework runs them: the ReLU's output is a tensor the size of x in DRAM, read back by the pooling",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "pool-unfused",
            1,
            "a ReLU kernel into a scratch buffer the size of x, then a max-pooling kernel",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (b, c, h, w, _) = dims(shape);
        let src = || cuda_source!("fusion", "pool/01_unfused.cu");
        let dim = |v: usize| Arg::I32(v as i32);
        let relu = launch(
            src(),
            "pool_relu",
            b * c * h * w,
            vec![
                Arg::Ptr(Buf::Input(0)),
                Arg::Ptr(Buf::Scratch(0)),
                dim(b),
                dim(c),
                dim(h),
                dim(w),
            ],
        );
        let pool = pool_launch(src(), "pool_max", Buf::Scratch(0), shape);
        Some(CudaPlan {
            inputs: vec![Dtype::F32],
            output: Dtype::F32,
            scratch: vec![Scratch::new("relu(x)", Dtype::F32, b * c * h * w)],
            steps: vec![Step::Kernel(relu), Step::Kernel(pool)],
            ..Default::default()
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_unfused)
    }
}

/// CPU port of rung 01: a pass writing relu(x) to a temporary the size of x, then a pooling
/// pass reading it back, each window's maximum starting at its first element.
fn cpu_unfused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let x = inputs[0];
    let mut a = vec![0.0f32; x.len()];
    a.par_chunks_mut(4096)
        .zip(x.par_chunks(4096))
        .for_each(|(a, x)| {
            for (av, &xv) in a.iter_mut().zip(x) {
                *av = xv.max(0.0);
            }
        });
    pool_planes(shape, &a, out, |first| first);
}

/// `pool/02_fused.cu`: one kernel, the ReLU as the running maximum's starting value 0.
pub struct PoolFused;

impl Kernel for PoolFused {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("pool-unfused"),
            idea: "the ReLU folded into the maximum (max(relu(x)) = relu(max(x)), a running maximum starting at 0): one launch, no scratch, x read once",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "pool-fused",
            2,
            "ReLU folded into the max pooling: one launch, one thread per output, no scratch",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(CudaPlan::single(
            1,
            pool_launch(
                cuda_source!("fusion", "pool/02_fused.cu"),
                "pool_fused",
                Buf::Input(0),
                shape,
            ),
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fused)
    }
}

/// CPU port of rung 02: one pass over the windows of x, each running maximum starting at 0
/// (the ReLU); no temporary.
fn cpu_fused(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    pool_planes(shape, inputs[0], out, |_| 0.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every port against the f64 reference on random inputs (never zeros): 1 x 1 images, a
    /// window the size of the image, H and W not multiples of P, several planes per batch.
    #[test]
    fn ports_agree_with_the_reference() {
        for &(b, c, h, w, p) in &[
            (1, 1, 1, 1, 1),
            (1, 2, 3, 3, 3),
            (2, 3, 7, 9, 2),
            (3, 2, 34, 34, 4),
            (1, 4, 11, 10, 3),
        ] {
            let shape = Shape::Pool { b, c, h, w, p };
            shape.validate().expect("a valid shape");
            let x = kernel::testing::inputs(&shape, 5);
            let want = kernel::reference::reference(&shape, &x);
            for kern in kernels() {
                let port = kern.cpu().expect("every pooling rung has a CPU port");
                let mut out = vec![f32::NAN; shape.output().len()];
                port(&shape, &[&x[0]], &mut out);
                let err = kernel::testing::relative_error(&out, &want);
                assert!(
                    err < 1e-6,
                    "{} {}: error {err}",
                    kern.info().id,
                    shape.label()
                );
            }
        }
    }

    #[test]
    fn unfused_plan_routes_through_a_scratch_buffer_the_size_of_x() {
        let shape = Shape::Pool {
            b: 2,
            c: 3,
            h: 7,
            w: 9,
            p: 2,
        };
        let plan = PoolUnfused.cuda(&shape).expect("a plan");
        assert_eq!(plan.launches().count(), 2);
        assert_eq!(plan.scratch.len(), 1);
        assert_eq!(plan.scratch[0].len, 2 * 3 * 7 * 9);
        let fused = PoolFused.cuda(&shape).expect("a plan");
        assert!(fused.scratch.is_empty());
        let l = fused.launches().next().expect("one launch");
        // One thread per output: 2 x 3 x 3 x 4 = 72 fit one block.
        assert_eq!(l.grid[0], 1);
    }
}
