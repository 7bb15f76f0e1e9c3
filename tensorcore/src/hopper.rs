//! Rung 18, the Hopper rung: `wgmma` fed by TMA copies through an mbarrier pipeline, for
//! sm_90a alone. Its plan passes A and B as TMA tensor maps ([`kernel::TensorMap`]), which
//! the CUDA device encodes with `cuTensorMapEncodeTiled`. A GPU other than Hopper declines it
//! (no sm_90a code); the CUDA simulator runs it through its emulation of wgmma, TMA and
//! mbarriers.

use crate::pipelined::cpu_bf16;
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, Dtype, Kernel, KernelInfo, Launch, Lineage, Precision,
    Role, Shape, Stage, Step, TensorMap, TmaSwizzle, Unsupported, Workload, cuda_source, div_ceil,
    gemm_dims,
};

/// The constants of `18_wgmma_tma.cu`: a 128x128 block tile, K in steps of 64 (one 128-byte
/// swizzle row of BF16), a 5-stage ring, a producer and two consumer warpgroups.
const BM: usize = 128;
const BN: usize = 128;
const BK: usize = 64;
const STAGES: usize = 5;
const THREADS: u32 = 3 * 128;
/// B arrives in boxes of 64 columns: a TMA box row may not be wider than its 128 B swizzle.
const B_BOX_COLS: usize = 64;
const BF16: usize = 2;
/// The ring, its 2 x STAGES mbarriers, and 1024 B of slack to align it to the swizzle period.
const SMEM: usize = 1024 + STAGES * (BM * BK + BK * BN) * BF16 + 2 * STAGES * 8;
// One block per SM within an H100's 227 KB of shared memory per block.
const _: () = assert!(SMEM <= 227 * 1024);

/// `18_wgmma_tma.cu`: wgmma m64n128k16 BF16 from shared memory, TMA copies, mbarrier ring.
pub struct GemmWgmmaTma;

impl Kernel for GemmWgmmaTma {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-mma-bf16"),
            idea: "three ideas: Hopper's wgmma reading shared memory, TMA copies counted on mbarriers, and producer and consumer warpgroups",
            bound: Some(Bound::Compute),
        })
    }

    fn info(&self) -> KernelInfo {
        KernelInfo {
            id: "gemm-wgmma-tma".into(),
            workload: Workload::Gemm,
            stage: Stage::Tensorcore,
            precision: Precision::Bf16,
            role: Role::Rung,
            rung: 18,
            summary: "Hopper (sm_90a): wgmma BF16 from shared memory fed by TMA through a \
                      5-stage mbarrier ring, producer/consumer warpgroups"
                .into(),
        }
    }

    /// The TMA needs every row of A (K elements) and of B (N elements) to start 16 bytes
    /// after the previous one.
    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        let (_, n, k) = gemm_dims(shape);
        let off: Vec<String> = [("K", k), ("N", n)]
            .iter()
            .filter(|(_, v)| !v.is_multiple_of(8))
            .map(|(name, v)| format!("{name} = {v}"))
            .collect();
        if off.is_empty() {
            return Ok(());
        }
        let verb = if off.len() == 1 {
            "is not a multiple"
        } else {
            "are not multiples"
        };
        Err(Unsupported(format!(
            "{} {verb} of 8: TMA row strides must be multiples of 16 bytes (8 BF16 elements)",
            off.join(" and ")
        )))
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k) = gemm_dims(shape);
        let map = |buf, rows, cols, box_rows: usize, box_cols: usize| {
            Arg::TensorMap(TensorMap {
                buf,
                rows,
                cols,
                box_rows: box_rows as u32,
                box_cols: box_cols as u32,
                swizzle: TmaSwizzle::B128,
            })
        };
        Some(CudaPlan {
            inputs: vec![Dtype::Bf16, Dtype::Bf16],
            output: Dtype::F32,
            steps: vec![Step::Kernel(Launch {
                source: cuda_source!("tensorcore", "18_wgmma_tma.cu").for_arch("sm_90a"),
                entry: "gemm_wgmma_tma".into(),
                grid: [div_ceil(n, BN), div_ceil(m, BM), 1],
                block: [THREADS, 1, 1],
                dynamic_smem: SMEM as u32,
                args: vec![
                    map(Buf::Input(0), m, k, BM, BK),
                    map(Buf::Input(1), k, n, BK, B_BOX_COLS),
                    Arg::Ptr(Buf::Output),
                    Arg::I32(m as i32),
                    Arg::I32(n as i32),
                    Arg::I32(k as i32),
                ],
            })],
            ..Default::default()
        })
    }

    /// Rung 17's port: the same product (BF16 operands, FP32 accumulation).
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn define(source: &str, name: &str) -> usize {
        source
            .lines()
            .find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some("#define") && w.next() == Some(name))
                    .then(|| w.next().and_then(|v| v.parse().ok()))
                    .flatten()
            })
            .unwrap_or_else(|| panic!("no numeric #define {name}"))
    }

    #[test]
    fn launch_constants_match_the_kernel_source() {
        let src = include_str!("../kernels/18_wgmma_tma.cu");
        assert_eq!(define(src, "BM"), BM);
        assert_eq!(define(src, "BN"), BN);
        assert_eq!(define(src, "BK"), BK);
        assert_eq!(define(src, "STAGES"), STAGES);
        assert_eq!(define(src, "CONSUMERS") + 1, THREADS as usize / 128);
    }

    #[test]
    fn the_plan_maps_a_and_b_in_boxes_the_tma_accepts() {
        let plan = GemmWgmmaTma.cuda(&Shape::gemm(300, 136, 72)).unwrap();
        assert_eq!(plan.required_arch(), Some("sm_90a"));
        let launch = plan.launches().next().unwrap();
        assert_eq!(launch.grid, [2, 3, 1]);
        let maps: Vec<TensorMap> = launch
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::TensorMap(m) => Some(*m),
                _ => None,
            })
            .collect();
        assert_eq!(maps.len(), 2);
        let (a, b) = (maps[0], maps[1]);
        assert_eq!((a.buf, a.rows, a.cols), (Buf::Input(0), 300, 72));
        assert_eq!((b.buf, b.rows, b.cols), (Buf::Input(1), 72, 136));
        let ea = a.encoding(Dtype::Bf16).unwrap();
        let eb = b.encoding(Dtype::Bf16).unwrap();
        assert_eq!((ea.global_dim, ea.box_dim), ([72, 300], [64, 128]));
        assert_eq!((eb.global_dim, eb.box_dim), ([136, 72], [64, 64]));
        // One stage's mbarrier expects exactly what its copies write: A's box and BN / 64 of B's.
        let stage = a.box_bytes(Dtype::Bf16) + (BN / B_BOX_COLS) * b.box_bytes(Dtype::Bf16);
        assert_eq!(stage, (BM * BK + BK * BN) * BF16);
    }

    #[test]
    fn declines_strides_the_tma_cannot_map() {
        assert!(GemmWgmmaTma.supports(&Shape::gemm(33, 136, 72)).is_ok());
        let why = GemmWgmmaTma
            .supports(&Shape::gemm(64, 37, 64))
            .unwrap_err()
            .0;
        assert!(why.contains("N = 37") && why.contains("16 bytes"), "{why}");
        assert!(GemmWgmmaTma.supports(&Shape::gemm(64, 64, 129)).is_err());
    }
}
