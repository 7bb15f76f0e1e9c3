//! Attention rung 01: the naive three-kernel pipeline (scores, softmax, P V) with the S x S
//! score matrix in scratch memory, and its CPU port.

use kernel::{
    Arg, AttentionDims, Buf, CpuPort, CudaPlan, Dtype, Kernel, KernelInfo, Launch, Lineage,
    Precision, Role, Scratch, Shape, Stage, Step, Unsupported, Workload, attention_dims,
    cuda_source, div_ceil,
};
use rayon::prelude::*;

/// Every attention kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![Box::new(AttnNaive)]
}

/// Most scratch memory the naive rung allocates for scores: heads are processed in chunks
/// whose S x S matrices fit in it (8 GiB, 2^31 floats).
pub const NAIVE_SCRATCH_BYTES: usize = 8 << 30;

/// Heads per chunk of the naive pipeline: as many S x S score matrices as fit in
/// [`NAIVE_SCRATCH_BYTES`], at most all of them; 0 when a single one does not fit.
pub fn naive_heads_per_chunk(dims: &AttentionDims) -> usize {
    let per_head = dims.s * dims.s * 4;
    (NAIVE_SCRATCH_BYTES / per_head).min(dims.heads)
}

/// `attention/01_naive.cu`: S = Q K^T scaled, row softmax, O = P V, three launches per chunk
/// of heads, S x S scores in scratch.
pub struct AttnNaive;

/// Threads per block of the softmax kernel (one thread per row).
const SOFTMAX_BLOCK: usize = 128;

impl Kernel for AttnNaive {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: None,
            idea: "QK^T, softmax and PV as three kernels with the S x S scores in memory: the starting point",
            bound: None,
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "attn-naive".into(),
            workload: Workload::Attention,
            stage: Stage::Baseline,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 1,
            summary: "three kernels: S = QK^T scaled, row softmax, O = PV; S x S scores in memory"
                .into(),
        }
    }

    /// Every score, then every product with V: a causal mask only zeroes them.
    fn computed_flops(&self, shape: &Shape) -> f64 {
        shape.unmasked().flops()
    }

    /// The scores take D multiply-adds each, the product with V S a row element: half the
    /// work each.
    fn flops_by_kernel(&self, shape: &Shape) -> Vec<(&'static str, f64)> {
        let half = self.computed_flops(shape) / 2.0;
        vec![("attn_scores", half), ("attn_pv", half)]
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        let dims = attention_dims(shape);
        if naive_heads_per_chunk(&dims) == 0 {
            let need = dims.s * dims.s * 4;
            return Err(Unsupported(format!(
                "one head's {s} x {s} FP32 score matrix needs {:.1} GiB of scratch, above the \
                 naive rung's {} GiB",
                need as f64 / (1u64 << 30) as f64,
                NAIVE_SCRATCH_BYTES >> 30,
                s = dims.s,
            )));
        }
        Ok(())
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let dims = attention_dims(shape);
        let chunk = naive_heads_per_chunk(&dims);
        if chunk == 0 {
            return None;
        }
        let (s, d) = (dims.s, dims.d);
        let source = cuda_source!("baseline", "attention/01_naive.cu");
        let mut steps = Vec::new();
        for first in (0..dims.heads).step_by(chunk) {
            let heads = chunk.min(dims.heads - first);
            let at = |b: Buf| Arg::PtrAt(b.at(first * dims.head_len()));
            let launch = |entry: &str, grid, block, args| {
                Step::Kernel(Launch {
                    source: source.clone(),
                    entry: entry.to_string().into(),
                    grid,
                    block,
                    dynamic_smem: 0,
                    args,
                })
            };
            steps.push(launch(
                "attn_scores",
                [div_ceil(s, 16), div_ceil(s, 16), heads as u32],
                [16, 16, 1],
                vec![
                    at(Buf::Input(0)),
                    at(Buf::Input(1)),
                    Arg::Ptr(Buf::Scratch(0)),
                    Arg::I32(heads as i32),
                    Arg::I32(s as i32),
                    Arg::I32(d as i32),
                    Arg::F32(dims.scale()),
                    Arg::I32(i32::from(dims.causal)),
                ],
            ));
            steps.push(launch(
                "attn_softmax",
                [div_ceil(heads * s, SOFTMAX_BLOCK), 1, 1],
                [SOFTMAX_BLOCK as u32, 1, 1],
                vec![
                    Arg::Ptr(Buf::Scratch(0)),
                    Arg::I32((heads * s) as i32),
                    Arg::I32(s as i32),
                ],
            ));
            steps.push(launch(
                "attn_pv",
                [div_ceil(d, 32), div_ceil(s, 8), heads as u32],
                [32, 8, 1],
                vec![
                    Arg::Ptr(Buf::Scratch(0)),
                    at(Buf::Input(2)),
                    at(Buf::Output),
                    Arg::I32(heads as i32),
                    Arg::I32(s as i32),
                    Arg::I32(d as i32),
                ],
            ));
        }
        Some(CudaPlan {
            inputs: vec![Dtype::F32; 3],
            scratch: vec![Scratch::new("S x S scores", Dtype::F32, chunk * s * s)],
            steps,
            ..Default::default()
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_naive)
    }
}

/// Rows of scores per block of `softmax_rows.cu` (a warp per row).
const ROWS_PER_BLOCK: usize = 4;

/// One launch of `softmax_rows.cu`, the warp-per-row softmax the cuBLAS-based attention
/// reference row runs between its two library products, over `rows` rows of `s` scores in
/// scratch buffer 0 (masking keys past the diagonal when `causal`).
pub fn softmax_rows_launch(rows: usize, s: usize, causal: bool) -> Launch {
    Launch {
        source: cuda_source!("baseline", "attention/softmax_rows.cu"),
        entry: "softmax_rows".into(),
        grid: [div_ceil(rows, ROWS_PER_BLOCK), 1, 1],
        block: [(ROWS_PER_BLOCK * 32) as u32, 1, 1],
        dynamic_smem: 0,
        args: vec![
            Arg::Ptr(Buf::Scratch(0)),
            Arg::I32(rows as i32),
            Arg::I32(s as i32),
            Arg::I32(i32::from(causal)),
        ],
    }
}

/// CPU port of rung 01, the same three passes over a materialized S x S matrix per head: all
/// scores (one dot product each), then each row's softmax in place, then each output element
/// as a dot product striding down a column of V, as each GPU thread of `attn_pv` does.
fn cpu_naive(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let dims = attention_dims(shape);
    let (s, d, scale) = (dims.s, dims.d, dims.scale());
    let hl = dims.head_len();
    let mut scores = vec![0.0f32; s * s];
    for h in 0..dims.heads {
        let (q, k, v) = (
            &inputs[0][h * hl..(h + 1) * hl],
            &inputs[1][h * hl..(h + 1) * hl],
            &inputs[2][h * hl..(h + 1) * hl],
        );
        scores.par_chunks_mut(s).enumerate().for_each(|(i, row)| {
            let qi = &q[i * d..(i + 1) * d];
            for (j, sc) in row.iter_mut().enumerate() {
                let kj = &k[j * d..(j + 1) * d];
                let dot: f32 = qi.iter().zip(kj).map(|(a, b)| a * b).sum();
                *sc = if dims.causal && j > i {
                    f32::NEG_INFINITY
                } else {
                    dot * scale
                };
            }
        });
        scores.par_chunks_mut(s).for_each(|row| {
            let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0.0f32;
            for x in row.iter_mut() {
                *x = (*x - m).exp();
                sum += *x;
            }
            let inv = 1.0 / sum;
            row.iter_mut().for_each(|x| *x *= inv);
        });
        out[h * hl..(h + 1) * hl]
            .par_chunks_mut(d)
            .enumerate()
            .for_each(|(i, o)| {
                let p = &scores[i * s..(i + 1) * s];
                for (c, oc) in o.iter_mut().enumerate() {
                    let mut acc = 0.0f32;
                    for (j, &pj) in p.iter().enumerate() {
                        acc += pj * v[j * d + c];
                    }
                    *oc = acc;
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_chunks_heads_and_declines_a_score_matrix_too_big_for_the_scratch() {
        let shape = |b, s| Shape::Attention {
            b,
            h: 1,
            s,
            d: 64,
            causal: false,
        };
        let small = AttnNaive.cuda(&shape(3, 64)).expect("plan");
        assert_eq!(small.steps.len(), 3, "one chunk of three launches");
        assert_eq!(small.scratch_bytes(), 3 * 64 * 64 * 4);
        // 32 heads of 16384^2 scores (32 GiB) run as four chunks of 8 GiB.
        let big = AttnNaive.cuda(&shape(32, 16384)).expect("plan");
        assert_eq!(big.steps.len(), 12);
        assert_eq!(big.scratch_bytes(), NAIVE_SCRATCH_BYTES);
        let e = AttnNaive.supports(&shape(1, 65536)).unwrap_err().0;
        assert!(e.contains("16.0 GiB") && e.contains("8 GiB"), "{e}");
    }
}
