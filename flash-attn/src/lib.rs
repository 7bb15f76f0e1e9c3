//! Flash attention: the attention ladder after the naive baseline (rung 01, in `baseline`).
//! 02 one thread per query row with the online softmax (FP32); 03 the FlashAttention-2 order
//! (a block's warps split its query tile, normalization deferred); 04 causal tiles skipped;
//! 05 and 06 both products on tensor cores (WMMA) with FP16 or BF16 inputs and FP32 softmax
//! state; 07 and 08 the FlashAttention-2 kernel on `mma.sync` with P and the output kept in
//! registers (FP16, BF16); 09 and 10 the same kernel on 128-row query blocks of 8 warps, with
//! the scale folded into the base-2 exponent and one barrier per K/V tile (FP16, BF16); 11 and
//! 12 that kernel on Hopper's `wgmma` (FP16, BF16); 13 and 14 with each warpgroup's softmax
//! overlapping its own `wgmma` (FP16, BF16). The walkthrough is in this crate's README.

pub mod cpu;
mod wgmma;

pub use wgmma::{FlashWgmma, FlashWgmmaOverlap, smem_flash_wgmma, smem_flash_wgmma_overlap};

use cpu::{Round, Tiling};
use kernel::{
    Bound, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Shape, Stage, Step, Unsupported, Workload, attention_args, attention_dims, cuda_source,
    div_ceil,
};

/// Every kernel of this crate, in ladder order.
pub fn kernels() -> Vec<Box<dyn Kernel>> {
    vec![
        Box::new(FlashFp32),
        Box::new(Flash2Fp32),
        Box::new(Flash2Causal),
        Box::new(Flash2Wmma(Round::F16)),
        Box::new(Flash2Wmma(Round::Bf16)),
        Box::new(Flash2Mma(Round::F16)),
        Box::new(Flash2Mma(Round::Bf16)),
        Box::new(Flash2Br128(Round::F16)),
        Box::new(Flash2Br128(Round::Bf16)),
        Box::new(FlashWgmma(Round::F16)),
        Box::new(FlashWgmma(Round::Bf16)),
        Box::new(FlashWgmmaOverlap(Round::F16)),
        Box::new(FlashWgmmaOverlap(Round::Bf16)),
    ]
}

/// Largest head dimension the kernels take: the FP32 rungs keep a D-float output row (02) or
/// its share per lane (03, 04) in registers, and the tensor-core rungs stage 16 rows of
/// FP32 output per warp in shared memory.
pub const MAX_HEAD_DIM: usize = 128;

/// Query rows per block of every flash kernel (02: one per thread; 03-06: 16 per warp, 4 warps).
const BR: usize = 64;
/// Keys per tile of rungs 02-04 (05/06 use [`BC_WMMA`]).
const BC: usize = 32;
const BC_WMMA: usize = 64;
/// Grids put the head in `blockIdx.y`.
const MAX_GRID_Y: usize = 65535;

fn info(id: &'static str, rung: u32, precision: Precision, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Attention,
        stage: Stage::FlashAttn,
        precision,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

/// The constraints every flash kernel shares, plus `D` a multiple of `d_multiple`.
fn supports(shape: &Shape, d_multiple: usize) -> Result<(), Unsupported> {
    let dims = attention_dims(shape);
    if dims.d > MAX_HEAD_DIM {
        return Err(Unsupported(format!(
            "D = {} is above {MAX_HEAD_DIM}: the output row of a query is held on chip",
            dims.d
        )));
    }
    if !dims.d.is_multiple_of(d_multiple) {
        return Err(Unsupported(format!(
            "D = {} is not a multiple of {d_multiple}: the tensor-core tiles cover D in steps of 16",
            dims.d
        )));
    }
    if dims.heads > MAX_GRID_Y {
        return Err(Unsupported(format!(
            "B*H = {} heads is above the grid's y limit of {MAX_GRID_Y}",
            dims.heads
        )));
    }
    Ok(())
}

/// Threads per block of rung 02 (one per query row) and of rungs 03-06 (4 warps).
const THREADS_PER_ROW: u32 = BR as u32;
const THREADS_WARPS: u32 = 128;

/// A one-launch plan: a grid of query blocks of [`BR`] rows by heads, `HEAD_DIM` defined as
/// the shape's D.
fn plan(
    shape: &Shape,
    source: CudaSource,
    entry: (&str, u32),
    input: Dtype,
    smem: usize,
) -> CudaPlan {
    plan_rows(shape, source, entry, input, smem, BR)
}

/// [`plan`] for blocks of `rows` query rows.
fn plan_rows(
    shape: &Shape,
    source: CudaSource,
    (entry, threads): (&str, u32),
    input: Dtype,
    smem: usize,
    rows: usize,
) -> CudaPlan {
    let dims = attention_dims(shape);
    CudaPlan {
        inputs: vec![input; 3],
        output: Dtype::F32,
        steps: vec![Step::Kernel(Launch {
            source: source.define("HEAD_DIM", dims.d),
            entry: entry.to_string().into(),
            grid: [div_ceil(dims.s, rows), dims.heads as u32, 1],
            block: [threads, 1, 1],
            dynamic_smem: smem as u32,
            args: attention_args(&dims, 0, dims.heads),
        })],
        ..Default::default()
    }
}

/// `02_flash_fp32.cu`: one thread per query row, K/V tiles in shared memory, online softmax.
pub struct FlashFp32;

/// Dynamic shared memory of rung 02: Q rows padded by one float, a K and a V tile, and each
/// thread's scores of a tile.
pub fn smem_flash_fp32(d: usize) -> usize {
    (BR * (d + 1) + 2 * BC * d + BC * BR) * 4
}

impl Kernel for FlashFp32 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("attn-naive"),
            idea: "one fused kernel with an online softmax: K and V tiles in shared memory, S x S never stored",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "attn-flash-fp32",
            2,
            Precision::Fp32,
            "one fused kernel, a thread per query row, K/V tiles in shared memory, online softmax; S x S never stored",
        )
    }

    /// Every key tile for every row: a causal mask sets scores to -inf, it skips none.
    fn computed_flops(&self, shape: &Shape) -> f64 {
        shape.unmasked().flops()
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        supports(shape, 1)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        Some(plan(
            shape,
            cuda_source!("flash-attn", "02_flash_fp32.cu"),
            ("attn_flash_fp32", THREADS_PER_ROW),
            Dtype::F32,
            smem_flash_fp32(d),
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(|shape, inputs, out| {
            let t = Tiling {
                rows: BR,
                keys: BC,
                normalize_each_tile: true,
                skip_masked_tiles: false,
                round: None,
                keys_parallel: false,
            };
            cpu::flash(t, shape, inputs, out)
        })
    }
}

/// Dynamic shared memory of rungs 03 and 04: a Q tile, a padded K tile, a V tile and each
/// warp's 16 x 32 block of P.
pub fn smem_flash2_fp32(d: usize) -> usize {
    (BR * d + BC * (d + 1) + BC * d + BR * BC) * 4
}

/// The CPU port of rungs 03 and 04 (04 with the causal skip).
fn flash2_tiling(skip_masked_tiles: bool) -> Tiling {
    Tiling {
        rows: BR,
        keys: BC,
        normalize_each_tile: false,
        skip_masked_tiles,
        round: None,
        keys_parallel: true,
    }
}

/// `03_flash2_fp32.cu`: FlashAttention-2 order in FP32.
pub struct Flash2Fp32;

impl Kernel for Flash2Fp32 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("attn-flash-fp32"),
            idea: "the FlashAttention-2 order: warps split a 64-query tile, a key per lane, the normalization deferred to the end",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "attn-flash2-fp32",
            3,
            Precision::Fp32,
            "FlashAttention-2 order: 4 warps split a 64-query tile, a key per lane, normalization deferred to the end",
        )
    }

    /// Every key tile for every query tile: skipping the masked ones is rung 04's idea.
    fn computed_flops(&self, shape: &Shape) -> f64 {
        shape.unmasked().flops()
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        supports(shape, 1)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        Some(plan(
            shape,
            cuda_source!("flash-attn", "03_flash2_fp32.cu"),
            ("attn_flash2_fp32", THREADS_WARPS),
            Dtype::F32,
            smem_flash2_fp32(d),
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(|shape, inputs, out| cpu::flash(flash2_tiling(false), shape, inputs, out))
    }
}

/// `04_flash2_causal.cu`: rung 03 skipping the tiles a causal mask hides entirely.
pub struct Flash2Causal;

impl Kernel for Flash2Causal {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("attn-flash2-fp32"),
            idea: "causal masking by tiles: fully masked key tiles are skipped, not computed and masked",
            bound: Some(Bound::WastedWork),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "attn-flash2-causal",
            4,
            Precision::Fp32,
            "rung 03 skipping fully masked causal tiles: a block stops at its last row's tile",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        supports(shape, 1)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        Some(plan(
            shape,
            cuda_source!("flash-attn", "04_flash2_causal.cu"),
            ("attn_flash2_causal", THREADS_WARPS),
            Dtype::F32,
            smem_flash2_fp32(d),
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(|shape, inputs, out| cpu::flash(flash2_tiling(true), shape, inputs, out))
    }
}

/// Dynamic shared memory of rungs 05 and 06 (the carve of `05_flash2_wmma.cu`): Q, K and V
/// tiles in 16 bits with rows padded by 8, FP32 scores (padded by 4), 16-bit P (padded by 8)
/// and the FP32 output rows (padded by 4).
pub fn smem_flash2_wmma(d: usize) -> usize {
    let ldh = d + 8;
    (BR * ldh + 2 * BC_WMMA * ldh) * 2
        + BR * (BC_WMMA + 4) * 4
        + BR * (BC_WMMA + 8) * 2
        + BR * (d + 4) * 4
}

/// `05_flash2_wmma.cu`: both products on tensor cores, FP16 (rung 05) or BF16 (rung 06).
pub struct Flash2Wmma(pub Round);

impl Kernel for Flash2Wmma {
    fn lineage(&self) -> Option<Lineage> {
        Some(match self.0 {
            Round::F16 => Lineage {
                parent: Some("attn-flash2-causal"),
                idea: "both products on tensor cores (WMMA m16n16k16) with FP16 Q, K, V and P",
                bound: Some(Bound::Compute),
            },
            Round::Bf16 => Lineage {
                parent: Some("attn-flash2-wmma-fp16"),
                idea: "BF16 in place of FP16: FP32's exponent range, an 8-bit mantissa",
                bound: None,
            },
        })
    }

    fn info(&self) -> KernelInfo {
        match self.0 {
            Round::F16 => info(
                "attn-flash2-wmma-fp16",
                5,
                Precision::Fp16,
                "rung 04 on tensor cores: FP16 Q/K/V, QK^T and PV in WMMA m16n16k16, FP32 softmax state",
            ),
            Round::Bf16 => info(
                "attn-flash2-wmma-bf16",
                6,
                Precision::Bf16,
                "rung 05 with BF16 inputs and P: FP32's range, 8-bit mantissa",
            ),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        supports(shape, 16)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        let (entry, dtype) = match self.0 {
            Round::F16 => ("attn_flash2_wmma_fp16", Dtype::F16),
            Round::Bf16 => ("attn_flash2_wmma_bf16", Dtype::Bf16),
        };
        Some(plan(
            shape,
            cuda_source!("flash-attn", "05_flash2_wmma.cu"),
            (entry, THREADS_WARPS),
            dtype,
            smem_flash2_wmma(d),
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(match self.0 {
            Round::F16 => {
                |shape, inputs, out| cpu::flash(wmma_tiling(Round::F16), shape, inputs, out)
            }
            Round::Bf16 => {
                |shape, inputs, out| cpu::flash(wmma_tiling(Round::Bf16), shape, inputs, out)
            }
        })
    }
}

/// Head dimensions of rungs 07 and 08: their Q fragments and output accumulators are sized in
/// registers by D.
pub const MMA_HEAD_DIMS: [usize; 2] = [64, 128];

/// Dynamic shared memory of rungs 07 and 08 (the carve of `07_flash2_mma.cu`): a Q tile and
/// two stages of K and V tiles, 16-bit rows padded by 8.
pub fn smem_flash2_mma(d: usize) -> usize {
    (BR + 2 * 2 * BC_WMMA) * (d + 8) * 2
}

/// `07_flash2_mma.cu`: the FlashAttention-2 kernel on `mma.sync` m16n8k16, P and O in
/// registers, FP16 (rung 07) or BF16 (rung 08).
pub struct Flash2Mma(pub Round);

impl Kernel for Flash2Mma {
    fn lineage(&self) -> Option<Lineage> {
        Some(match self.0 {
            Round::F16 => Lineage {
                parent: Some("attn-flash2-wmma-fp16"),
                idea: "mma.sync with documented fragment layouts: the softmax on the accumulators, P and O kept in registers",
                bound: Some(Bound::SharedTraffic),
            },
            Round::Bf16 => Lineage {
                parent: Some("attn-flash2-mma-fp16"),
                idea: "BF16 in place of FP16: FP32's exponent range, an 8-bit mantissa",
                bound: None,
            },
        })
    }

    fn info(&self) -> KernelInfo {
        match self.0 {
            Round::F16 => info(
                "attn-flash2-mma-fp16",
                7,
                Precision::Fp16,
                "rung 05 on mma.sync m16n8k16: softmax on the accumulators, P reused in registers as the A operand, V by ldmatrix.trans, cp.async K/V stages",
            ),
            Round::Bf16 => info(
                "attn-flash2-mma-bf16",
                8,
                Precision::Bf16,
                "rung 07 with BF16 inputs and P",
            ),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        supports(shape, 16)?;
        let d = attention_dims(shape).d;
        if !MMA_HEAD_DIMS.contains(&d) {
            return Err(Unsupported(format!(
                "D = {d} is not 64 or 128: the Q fragments and output accumulators are held in registers sized for those"
            )));
        }
        Ok(())
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        let (entry, dtype) = match self.0 {
            Round::F16 => ("attn_flash2_mma_fp16", Dtype::F16),
            Round::Bf16 => ("attn_flash2_mma_bf16", Dtype::Bf16),
        };
        Some(plan(
            shape,
            cuda_source!("flash-attn", "07_flash2_mma.cu"),
            (entry, THREADS_WARPS),
            dtype,
            smem_flash2_mma(d),
        ))
    }

    /// The same rounding as rungs 05/06 (16-bit Q, K, V and P, FP32 scores, state and
    /// accumulation) and the same 64-key tiles: their CPU port.
    fn cpu(&self) -> Option<CpuPort> {
        Flash2Wmma(self.0).cpu()
    }
}

/// Query rows per block of rungs 09 and 10: 8 warps of 16.
const BR_WIDE: usize = 128;
const THREADS_WIDE: u32 = 256;

/// Dynamic shared memory of rungs 09 and 10 (the carve of `09_flash2_br128.cu`): a 128-row Q
/// tile and two stages of K and V tiles, 16-bit rows padded by 8.
pub fn smem_flash2_br128(d: usize) -> usize {
    (BR_WIDE + 2 * 2 * BC_WMMA) * (d + 8) * 2
}

/// `09_flash2_br128.cu`: rung 07 on 128-row query blocks of 8 warps, the scale folded into the
/// base-2 exponent, masks only on the tiles that need them, one barrier per K/V tile; FP16
/// (rung 09) or BF16 (rung 10).
pub struct Flash2Br128(pub Round);

impl Kernel for Flash2Br128 {
    fn lineage(&self) -> Option<Lineage> {
        Some(match self.0 {
            Round::F16 => Lineage {
                parent: Some("attn-flash2-mma-fp16"),
                idea: "three ideas: 128-row query blocks of 8 warps sharing each K/V tile (half the L2 bytes per FLOP), the scale folded into the base-2 exponent with masks only on boundary tiles, and one barrier per K/V tile",
                bound: Some(Bound::MemoryTraffic),
            },
            Round::Bf16 => Lineage {
                parent: Some("attn-flash2-br128-fp16"),
                idea: "BF16 in place of FP16: FP32's exponent range, an 8-bit mantissa",
                bound: None,
            },
        })
    }

    fn info(&self) -> KernelInfo {
        match self.0 {
            Round::F16 => info(
                "attn-flash2-br128-fp16",
                9,
                Precision::Fp16,
                "rung 07 on 128-row query blocks of 8 warps: each K/V tile serves 128 rows; exp2 with the scale in one FFMA, masks on boundary tiles only, one barrier per tile",
            ),
            Round::Bf16 => info(
                "attn-flash2-br128-bf16",
                10,
                Precision::Bf16,
                "rung 09 with BF16 inputs and P",
            ),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        Flash2Mma(self.0).supports(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        let (entry, dtype) = match self.0 {
            Round::F16 => ("attn_flash2_br128_fp16", Dtype::F16),
            Round::Bf16 => ("attn_flash2_br128_bf16", Dtype::Bf16),
        };
        Some(plan_rows(
            shape,
            cuda_source!("flash-attn", "09_flash2_br128.cu"),
            (entry, THREADS_WIDE),
            dtype,
            smem_flash2_br128(d),
            BR_WIDE,
        ))
    }

    /// The port of 05..08 on 128-row blocks: each K/V tile visited once per 128 rows, the
    /// same rounding (16-bit Q, K, V and P; FP32 scores, state and sums). The port's
    /// exponentials are base e on scaled scores; the kernel's base 2 with the scale folded
    /// in differs from them by FP32 rounding only.
    fn cpu(&self) -> Option<CpuPort> {
        Some(match self.0 {
            Round::F16 => {
                |shape, inputs, out| cpu::flash(br128_tiling(Round::F16), shape, inputs, out)
            }
            Round::Bf16 => {
                |shape, inputs, out| cpu::flash(br128_tiling(Round::Bf16), shape, inputs, out)
            }
        })
    }
}

fn br128_tiling(round: Round) -> Tiling {
    Tiling {
        rows: BR_WIDE,
        ..wmma_tiling(round)
    }
}

fn wmma_tiling(round: Round) -> Tiling {
    Tiling {
        rows: BR,
        keys: BC_WMMA,
        normalize_each_tile: false,
        skip_masked_tiles: true,
        round: Some(round),
        keys_parallel: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(shape: &Shape) -> Vec<Vec<f32>> {
        let n = shape.inputs()[0].len();
        (0..3u32)
            .map(|t| {
                (0..n as u32)
                    .map(|i| {
                        ((i.wrapping_mul(2654435761) ^ (t * 977)) % 2001) as f32 / 1000.0 - 1.0
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn cpu_ports_match_f64_on_awkward_shapes_causal_or_not() {
        let shapes = [
            "1x1x1x64",
            "2x1x70x32-causal",
            "1x2x130x48",
            "1x1x129x16-causal",
        ];
        for text in shapes {
            let shape = Shape::parse(Workload::Attention, text).unwrap();
            let x = inputs(&shape);
            let refs: Vec<&[f32]> = x.iter().map(Vec::as_slice).collect();
            let expected = kernel::reference::reference(&shape, &x);
            for k in kernels() {
                if k.supports(&shape).is_err() {
                    continue;
                }
                let mut out = vec![f32::NAN; shape.output().len()];
                (k.cpu().expect("every rung has a CPU port"))(&shape, &refs, &mut out);
                let err = kernel::testing::relative_error(&out, &expected);
                let info = k.info();
                assert!(
                    err <= info.precision.tolerance(),
                    "{} on {text}: error {err}",
                    info.id
                );
            }
        }
    }

    #[test]
    fn head_dims_the_kernels_cannot_take_are_declined_with_the_reason() {
        let shape = |d| Shape::Attention {
            b: 1,
            h: 1,
            s: 64,
            d,
            causal: false,
        };
        let e = Flash2Wmma(Round::F16).supports(&shape(40)).unwrap_err().0;
        assert!(e.contains("multiple of 16"), "{e}");
        assert!(Flash2Fp32.supports(&shape(40)).is_ok());
        let e = Flash2Mma(Round::F16).supports(&shape(96)).unwrap_err().0;
        assert!(e.contains("not 64 or 128"), "{e}");
        assert!(Flash2Mma(Round::Bf16).supports(&shape(128)).is_ok());
        let e = Flash2Br128(Round::Bf16).supports(&shape(96)).unwrap_err().0;
        assert!(e.contains("not 64 or 128"), "{e}");
        assert!(Flash2Br128(Round::F16).supports(&shape(64)).is_ok());
        // Rungs 11-14 hold no Q fragments: their reason is the wgmma that P V is.
        let e = FlashWgmma(Round::F16).supports(&shape(96)).unwrap_err().0;
        assert!(e.contains("not 64 or 128: P V is one wgmma"), "{e}");
        let e = FlashWgmmaOverlap(Round::Bf16)
            .supports(&shape(96))
            .unwrap_err()
            .0;
        assert!(e.contains("not 64 or 128: P V is one wgmma"), "{e}");
        assert!(FlashWgmmaOverlap(Round::F16).supports(&shape(128)).is_ok());
        let e = FlashFp32.supports(&shape(256)).unwrap_err().0;
        assert!(e.contains("above 128"), "{e}");
    }

    #[test]
    fn shared_memory_grows_with_d_not_with_s() {
        assert_eq!(smem_flash_fp32(64), (64 * 65 + 2 * 32 * 64 + 32 * 64) * 4);
        assert_eq!(smem_flash2_wmma(128), 112_640);
        assert_eq!(smem_flash2_mma(128), 87_040);
        // Rungs 09/10: two blocks per SM on an H100 at D = 128 (228 KB, 1 KB reserved each).
        assert_eq!(smem_flash2_br128(128), 104_448);
        assert_eq!(smem_flash2_br128(64), 55_296);
        assert!(2 * (smem_flash2_br128(128) + 1024) <= 228 * 1024);
        // Rungs 11/12: unpadded swizzled tiles and 1 KB of alignment slack, two blocks per SM.
        assert_eq!(smem_flash_wgmma(128), 99_328);
        assert_eq!(smem_flash_wgmma(64), 50_176);
        assert!(2 * (smem_flash_wgmma(128) + 1024) <= 228 * 1024);
        // Rungs 13/14: three K/V stages, one block per SM at D = 128.
        assert_eq!(smem_flash_wgmma_overlap(128), 132_096);
        assert!(smem_flash_wgmma_overlap(128) + 1024 <= 228 * 1024);
        let plan = |s| {
            Flash2Fp32
                .cuda(&Shape::Attention {
                    b: 1,
                    h: 1,
                    s,
                    d: 64,
                    causal: false,
                })
                .unwrap()
        };
        assert_eq!(plan(128).scratch_bytes(), 0);
        assert_eq!(plan(16384).scratch_bytes(), 0);
        let launch = plan(130).launches().next().cloned().unwrap();
        assert_eq!((launch.grid, launch.block), ([3, 1, 1], [128, 1, 1]));
        // Rungs 09/10: 128-row blocks of 8 warps, the grid counts blocks of 128 rows.
        let wide = Flash2Br128(Round::F16)
            .cuda(&Shape::Attention {
                b: 2,
                h: 3,
                s: 130,
                d: 128,
                causal: true,
            })
            .unwrap();
        let launch = wide.launches().next().cloned().unwrap();
        assert_eq!((launch.grid, launch.block), ([2, 6, 1], [256, 1, 1]));
        assert_eq!(launch.dynamic_smem as usize, smem_flash2_br128(128));
    }
}
