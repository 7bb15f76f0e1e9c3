//! Rungs 11 to 14, for sm_90a alone: rung 09's kernel with both products on `wgmma`, each
//! warpgroup multiplying straight from shared memory (P from registers), then (13, 14) with
//! each warpgroup's softmax overlapping its own wgmma. A GPU other than Hopper declines them
//! (no sm_90a code); the CUDA simulator runs them through its emulation of wgmma.

use crate::cpu::Round;
use crate::{BC_WMMA, BR_WIDE, Flash2Br128, THREADS_WIDE, info, plan_rows};
use kernel::{
    Bound, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Lineage, Precision, Shape,
    Unsupported, attention_dims, cuda_source, cuda_source_after,
};

/// Dynamic shared memory of rungs 11 and 12 (the layout of `11_flash_wgmma.cu`): a 128-row Q
/// tile and two stages of K and V tiles, unpadded (in the swizzled layout wgmma reads), and
/// 1024 B of slack to start them on the swizzle's period.
pub fn smem_flash_wgmma(d: usize) -> usize {
    1024 + (BR_WIDE + 2 * 2 * BC_WMMA) * d * 2
}

/// `11_flash_wgmma.cu`: FP16 (rung 11) or BF16 (rung 12).
pub struct FlashWgmma(pub Round);

impl Kernel for FlashWgmma {
    fn lineage(&self) -> Option<Lineage> {
        Some(match self.0 {
            Round::F16 => Lineage {
                parent: Some("attn-flash2-br128-fp16"),
                idea: "wgmma: two warpgroups of 64 rows multiply from shared memory (Q and K by descriptors, P from registers, V as an MN-major operand), no ldmatrix and no Q fragments in registers",
                bound: Some(Bound::Issue),
            },
            Round::Bf16 => Lineage {
                parent: Some("attn-flash-wgmma-fp16"),
                idea: "BF16 in place of FP16: FP32's exponent range, an 8-bit mantissa",
                bound: None,
            },
        })
    }

    fn info(&self) -> KernelInfo {
        match self.0 {
            Round::F16 => info(
                "attn-flash-wgmma-fp16",
                11,
                Precision::Fp16,
                "rung 09 on Hopper's wgmma (sm_90a): QK^T from shared memory, PV with P from registers, tiles in the 128-byte swizzle",
            ),
            Round::Bf16 => info(
                "attn-flash-wgmma-bf16",
                12,
                Precision::Bf16,
                "rung 11 with BF16 inputs and P",
            ),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        wgmma_head_dims(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        let (entry, dtype) = match self.0 {
            Round::F16 => ("attn_flash_wgmma_fp16", Dtype::F16),
            Round::Bf16 => ("attn_flash_wgmma_bf16", Dtype::Bf16),
        };
        Some(plan_rows(
            shape,
            cuda_source!("flash-attn", "11_flash_wgmma.cu").for_arch("sm_90a"),
            (entry, THREADS_WIDE),
            dtype,
            smem_flash_wgmma(d),
            BR_WIDE,
        ))
    }

    /// Rung 09's port: the same tiles and rounding; only the instructions that multiply them
    /// differ.
    fn cpu(&self) -> Option<CpuPort> {
        Flash2Br128(self.0).cpu()
    }
}

/// Dynamic shared memory of rungs 13 and 14: rung 11's layout with three K/V stages.
pub fn smem_flash_wgmma_overlap(d: usize) -> usize {
    1024 + (BR_WIDE + 3 * 2 * BC_WMMA) * d * 2
}

/// Rung 11's source followed by rung 13's kernel, which calls 11's copies, descriptors and
/// P V product.
fn source_13() -> CudaSource {
    cuda_source_after!(
        "flash-attn",
        "11_flash_wgmma.cu",
        "13_flash_wgmma_overlap.cu"
    )
    .for_arch("sm_90a")
}

/// `13_flash_wgmma_overlap.cu`: FP16 (rung 13) or BF16 (rung 14).
pub struct FlashWgmmaOverlap(pub Round);

impl Kernel for FlashWgmmaOverlap {
    fn lineage(&self) -> Option<Lineage> {
        Some(match self.0 {
            Round::F16 => Lineage {
                parent: Some("attn-flash-wgmma-fp16"),
                idea: "each warpgroup issues the next tile's scores and this tile's P V together and computes the next softmax while P V runs (three K/V stages, one block per SM at D = 128)",
                bound: Some(Bound::Latency),
            },
            Round::Bf16 => Lineage {
                parent: Some("attn-flash-wgmma-overlap-fp16"),
                idea: "BF16 in place of FP16: FP32's exponent range, an 8-bit mantissa",
                bound: None,
            },
        })
    }

    fn info(&self) -> KernelInfo {
        match self.0 {
            Round::F16 => info(
                "attn-flash-wgmma-overlap-fp16",
                13,
                Precision::Fp16,
                "rung 11 with each warpgroup's softmax overlapping its own wgmma (FlashAttention-3's pipelining inside a warpgroup)",
            ),
            Round::Bf16 => info(
                "attn-flash-wgmma-overlap-bf16",
                14,
                Precision::Bf16,
                "rung 13 with BF16 inputs and P",
            ),
        }
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        wgmma_head_dims(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let d = attention_dims(shape).d;
        let (entry, dtype) = match self.0 {
            Round::F16 => ("attn_flash_wgmma_overlap_fp16", Dtype::F16),
            Round::Bf16 => ("attn_flash_wgmma_overlap_bf16", Dtype::Bf16),
        };
        Some(plan_rows(
            shape,
            source_13(),
            (entry, THREADS_WIDE),
            dtype,
            smem_flash_wgmma_overlap(d),
            BR_WIDE,
        ))
    }

    /// Rung 09's port, as 11's: the order of the work changes, not the arithmetic.
    fn cpu(&self) -> Option<CpuPort> {
        Flash2Br128(self.0).cpu()
    }
}

/// The head dimensions rungs 11-14 are written for: P V is one `wgmma` m64nDk16 per 16 keys,
/// whose N is D, in the two forms the kernel holds (D = 64 and 128).
fn wgmma_head_dims(shape: &Shape) -> Result<(), Unsupported> {
    crate::supports(shape, 16)?;
    let d = attention_dims(shape).d;
    if !crate::MMA_HEAD_DIMS.contains(&d) {
        return Err(Unsupported(format!(
            "D = {d} is not 64 or 128: P V is one wgmma m64nDk16, written for D = 64 and 128"
        )));
    }
    Ok(())
}
