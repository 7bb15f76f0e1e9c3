//! Convolution rungs of the baseline stage: 01 the naive direct convolution, 02 unroll
//! (im2col) -> GEMM -> permute in batch chunks, with their CPU ports.

use crate::{GemmTiled, TILED_TILE, gemm_tiled_cpu};
use kernel::{
    Arg, Bound, Buf, ConvDims, CpuPort, CudaPlan, Dtype, Kernel, KernelInfo, Launch, Lineage,
    Precision, Role, Scratch, Shape, Stage, Step, Unsupported, Workload, conv_args, conv_chunk,
    conv_dims, cuda_source, div_ceil,
};
use rayon::prelude::*;

/// The convolution rungs of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(ConvDirect), Box::new(ConvUnrollGemm::default())]
}

/// Threads per block of the one-thread-per-element kernels.
const BLOCK: usize = 256;

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Conv,
        stage: Stage::Baseline,
        precision: Precision::Fp32,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// `conv/01_direct.cu`: one thread per output, window and weights from global memory.
pub struct ConvDirect;

impl Kernel for ConvDirect {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "one thread per output, its whole window straight from global memory: the starting point",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "conv-direct",
            1,
            "naive direct convolution: one thread per output, everything from global memory",
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = conv_dims(shape);
        Some(CudaPlan::single(
            2,
            Launch {
                source: cuda_source!("baseline", "conv/01_direct.cu"),
                entry: "conv_direct".into(),
                grid: [div_ceil(d.b * d.out_image(), BLOCK), 1, 1],
                block: [BLOCK as u32, 1, 1],
                dynamic_smem: 0,
                args: conv_args(&d),
            },
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_direct)
    }
}

/// CPU port of the direct rung: each output is its own serial C x K x K dot product over the
/// window, as each GPU thread computes it; feature maps are spread over rayon's threads.
fn cpu_direct(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let d = conv_dims(shape);
    let (x, f) = (inputs[0], inputs[1]);
    out.par_chunks_mut(d.plane())
        .enumerate()
        .for_each(|(bm, plane)| {
            let (b, m) = (bm / d.m, bm % d.m);
            for (pix, yv) in plane.iter_mut().enumerate() {
                let (oh, ow) = (pix / d.wo, pix % d.wo);
                let mut acc = 0.0f32;
                for c in 0..d.c {
                    for p in 0..d.k {
                        let xr = ((b * d.c + c) * d.h + oh + p) * d.w + ow;
                        let fr = ((m * d.c + c) * d.k + p) * d.k;
                        for q in 0..d.k {
                            acc += x[xr + q] * f[fr + q];
                        }
                    }
                }
                *yv = acc;
            }
        });
}

/// Scratch budget of the unroll -> GEMM -> permute pipeline, in f32 elements (128 MiB): the
/// unrolled matrix and the GEMM output of one chunk of images together stay within it.
pub const UNROLL_SCRATCH_ELEMENTS: usize = 32 << 20;

/// `conv/02_unroll_gemm.cu` + `02_tiled.cu`: im2col, the tiled GEMM, permute, per chunk.
pub struct ConvUnrollGemm {
    /// Scratch budget in f32 elements; the batch is processed in chunks that fit it.
    pub scratch_elements: usize,
}

impl Default for ConvUnrollGemm {
    fn default() -> Self {
        Self {
            scratch_elements: UNROLL_SCRATCH_ELEMENTS,
        }
    }
}

impl ConvUnrollGemm {
    /// Images per chunk: the unrolled matrix (C*K*K x Bc*Ho*Wo) and the GEMM output
    /// (M x Bc*Ho*Wo) of one chunk fit the scratch budget.
    pub fn chunk(&self, d: &ConvDims) -> usize {
        conv_chunk(d, (d.ckk() + d.m) * d.plane(), self.scratch_elements)
    }
}

/// The launches of unroll -> `gemm` -> permute over `d`'s batch in chunks of `chunk` images,
/// with the unrolled matrix in scratch 0 and the GEMM output in scratch 1. `gemm` is the GEMM
/// step for `(m, n, k)` reading A = filter, B = scratch 0 and writing scratch 1. Shared with
/// the cuBLAS reference row, which passes a library GEMM.
pub fn unroll_gemm_permute_plan(
    d: &ConvDims,
    chunk: usize,
    gemm: impl Fn(usize, usize, usize) -> Step,
) -> CudaPlan {
    let source = cuda_source!("baseline", "conv/02_unroll_gemm.cu");
    let mut steps = Vec::new();
    let mut b0 = 0;
    while b0 < d.b {
        let bc = chunk.min(d.b - b0);
        let n = bc * d.plane();
        steps.push(Step::Kernel(Launch {
            source: source.clone(),
            entry: "conv_unroll".into(),
            grid: [div_ceil(d.ckk() * n, BLOCK), 1, 1],
            block: [BLOCK as u32, 1, 1],
            dynamic_smem: 0,
            args: vec![
                Arg::PtrAt(Buf::Input(0).at(b0 * d.image())),
                Arg::Ptr(Buf::Scratch(0)),
                Arg::I32(bc as i32),
                Arg::I32(d.c as i32),
                Arg::I32(d.h as i32),
                Arg::I32(d.w as i32),
                Arg::I32(d.k as i32),
            ],
        }));
        steps.push(gemm(d.m, n, d.ckk()));
        steps.push(Step::Kernel(Launch {
            source: source.clone(),
            entry: "conv_permute".into(),
            grid: [div_ceil(d.m * n, BLOCK), 1, 1],
            block: [BLOCK as u32, 1, 1],
            dynamic_smem: 0,
            args: vec![
                Arg::Ptr(Buf::Scratch(1)),
                Arg::PtrAt(Buf::Output.at(b0 * d.out_image())),
                Arg::I32(bc as i32),
                Arg::I32(d.m as i32),
                Arg::I32(d.plane() as i32),
            ],
        }));
        b0 += bc;
    }
    let cols = chunk.min(d.b) * d.plane();
    CudaPlan {
        inputs: vec![Dtype::F32; 2],
        scratch: vec![
            Scratch::new("unrolled", Dtype::F32, d.ckk() * cols),
            Scratch::new("gemm-out", Dtype::F32, d.m * cols),
        ],
        steps,
        ..Default::default()
    }
}

/// Declines shapes where one image's unrolled matrix overflows the kernels' `int` indexing.
pub fn unroll_supports(d: &ConvDims) -> Result<(), Unsupported> {
    let per_image = (d.ckk() + d.m) * d.plane();
    if per_image > i32::MAX as usize {
        return Err(Unsupported(format!(
            "one image unrolls to {per_image} elements; the kernels index with int (at most {})",
            i32::MAX
        )));
    }
    Ok(())
}

impl Kernel for ConvUnrollGemm {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("conv-direct"),
            idea: "unroll (im2col) into a matrix, multiply it with GEMM rung 02's tiled kernel, permute back",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "conv-unroll-gemm",
            2,
            "unroll (im2col) -> tiled GEMM (gemm rung 02) -> permute, batch in bounded chunks",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        unroll_supports(&conv_dims(shape))
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = conv_dims(shape);
        let gemm = GemmTiled.cuda(&Shape::gemm(1, 1, 1))?;
        let Step::Kernel(tiled) = gemm.steps.into_iter().next()? else {
            return None;
        };
        Some(unroll_gemm_permute_plan(&d, self.chunk(&d), |m, n, k| {
            Step::Kernel(Launch {
                grid: [div_ceil(n, TILED_TILE), div_ceil(m, TILED_TILE), 1],
                args: vec![
                    Arg::Ptr(Buf::Input(1)),
                    Arg::Ptr(Buf::Scratch(0)),
                    Arg::Ptr(Buf::Scratch(1)),
                    Arg::I32(m as i32),
                    Arg::I32(n as i32),
                    Arg::I32(k as i32),
                ],
                ..tiled.clone()
            })
        }))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_unroll_gemm)
    }
}

/// CPU port of the unroll rung: the same three passes over the same chunks. Unroll writes the
/// C*K*K x Bc*Ho*Wo matrix, the cache-blocked GEMM of rung 02 multiplies the filter by it,
/// and permute copies the M x Bc*Ho*Wo product back to NCHW; both intermediates make a round
/// trip through memory, as on the GPU.
fn cpu_unroll_gemm(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let d = conv_dims(shape);
    let chunk = ConvUnrollGemm::default().chunk(&d);
    unroll_gemm_cpu(&d, chunk, inputs[0], inputs[1], out);
}

/// The CPU unroll -> GEMM -> permute over chunks of `chunk` images.
pub fn unroll_gemm_cpu(d: &ConvDims, chunk: usize, x: &[f32], f: &[f32], out: &mut [f32]) {
    let plane = d.plane();
    for (ci, y) in out.chunks_mut(chunk * d.out_image()).enumerate() {
        let bc = y.len() / d.out_image();
        let x = &x[ci * chunk * d.image()..];
        let n = bc * plane;
        let mut u = vec![0.0f32; d.ckk() * n];
        u.par_chunks_mut(n).enumerate().for_each(|(row, u_row)| {
            let (c, p, q) = (row / (d.k * d.k), (row / d.k) % d.k, row % d.k);
            for (col, uv) in u_row.iter_mut().enumerate() {
                let (b, oh, ow) = (col / plane, (col / d.wo) % d.ho, col % d.wo);
                *uv = x[((b * d.c + c) * d.h + oh + p) * d.w + ow + q];
            }
        });
        let mut g = vec![0.0f32; d.m * n];
        gemm_tiled_cpu(d.m, n, d.ckk(), f, &u, &mut g);
        y.par_chunks_mut(plane).enumerate().for_each(|(bm, yp)| {
            let (b, m) = (bm / d.m, bm % d.m);
            yp.copy_from_slice(&g[m * n + b * plane..m * n + (b + 1) * plane]);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_match_a_direct_f64_loop_on_awkward_shapes_and_chunks() {
        for &(b, c, m, h, w, k) in &[
            (1, 1, 1, 1, 1, 1),
            (3, 2, 5, 9, 7, 3),
            (5, 3, 7, 11, 13, 5),
            (2, 1, 4, 7, 7, 7),
        ] {
            let shape = Shape::Conv { b, c, m, h, w, k };
            let d = conv_dims(&shape);
            let x: Vec<f32> = (0..d.b * d.image())
                .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
                .collect();
            let f: Vec<f32> = (0..d.m * d.ckk())
                .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
                .collect();
            let want = kernel::reference::reference(&shape, &[x.clone(), f.clone()]);
            let check = |name: &str, out: &[f32]| {
                let err = kernel::testing::relative_error(out, &want);
                assert!(err < 1e-5, "{name} {}: error {err}", shape.label());
            };
            let mut out = vec![f32::NAN; want.len()];
            cpu_direct(&shape, &[&x, &f], &mut out);
            check("direct", &out);
            for chunk in [1, 2, b] {
                let mut out = vec![f32::NAN; want.len()];
                unroll_gemm_cpu(&d, chunk, &x, &f, &mut out);
                check("unroll-gemm", &out);
            }
        }
    }

    #[test]
    fn the_pipeline_walks_the_batch_in_chunks_within_the_budget() {
        let shape = Shape::Conv {
            b: 10,
            c: 1,
            m: 4,
            h: 86,
            w: 86,
            k: 7,
        };
        let d = conv_dims(&shape);
        let k = ConvUnrollGemm {
            scratch_elements: 3 * (49 + 4) * 80 * 80,
        };
        let plan = k.cuda(&shape).unwrap();
        assert_eq!(k.chunk(&d), 3);
        assert_eq!(
            plan.steps.len(),
            4 * 3,
            "4 chunks (3+3+3+1), 3 launches each"
        );
        assert_eq!(plan.scratch_bytes(), 3 * (49 + 4) * 80 * 80 * 4);
        let Step::Kernel(last) = plan.steps.last().unwrap() else {
            panic!("permute is a kernel")
        };
        assert_eq!(last.args[1], Arg::PtrAt(Buf::Output.at(9 * 4 * 80 * 80)));
        assert_eq!(last.args[2], Arg::I32(1));
    }
}
