//! The Hopper rungs, for sm_90a alone: `wgmma` fed by TMA copies through an mbarrier pipeline
//! (18), on 128x256 tiles (21), persistent (22). Their plans pass A and B as TMA tensor maps ([`kernel::TensorMap`]), which
//! the CUDA device encodes with `cuTensorMapEncodeTiled`. A GPU other than Hopper declines it
//! (no sm_90a code); the CUDA simulator runs it through its emulation of wgmma, TMA and
//! mbarriers.

use crate::pipelined::cpu_bf16;
use crate::wide_tile::DEFAULT_SMS;
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, Dtype, Kernel, KernelInfo, Launch, Lineage,
    Precision, Role, Shape, Stage, Step, TensorMap, TmaSwizzle, Unsupported, Workload, cuda_source,
    div_ceil, gemm_dims,
};

/// What the Hopper rungs share: a 128-row block tile of two consumer warpgroups and a TMA
/// producer warpgroup, K in steps of 64 (one 128-byte swizzle row of BF16); they differ in
/// the tile's width, the ring's depth and the schedule.
const BM: usize = 128;
const BK: usize = 64;
const THREADS: u32 = 3 * 128;
/// B arrives in boxes of 64 columns: a TMA box row may not be wider than its 128 B swizzle.
const B_BOX_COLS: usize = 64;
const BF16: usize = 2;

/// One Hopper rung's launch constants (its `.cu` file's defines).
struct Design {
    bn: usize,
    stages: usize,
}

impl Design {
    /// The ring, its 2 x stages mbarriers, and 1024 B of slack to align it to the swizzle
    /// period.
    const fn smem(&self) -> usize {
        1024 + self.stages * (BM * BK + BK * self.bn) * BF16 + 2 * self.stages * 8
    }

    fn tiles(&self, m: usize, n: usize) -> (u32, u32) {
        (div_ceil(n, self.bn), div_ceil(m, BM))
    }

    /// The launch of `entry` in `source` over `grid`, A and B as TMA tensor maps.
    fn plan(&self, shape: &Shape, source: CudaSource, entry: &str, grid: [u32; 3]) -> CudaPlan {
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
        CudaPlan {
            inputs: vec![Dtype::Bf16, Dtype::Bf16],
            output: Dtype::F32,
            steps: vec![Step::Kernel(Launch {
                source: source.for_arch("sm_90a"),
                entry: entry.to_string().into(),
                grid,
                block: [THREADS, 1, 1],
                dynamic_smem: self.smem() as u32,
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
        }
    }
}

/// `18_wgmma_tma.cu`: 128x128 tiles, a 5-stage ring.
const TMA: Design = Design { bn: 128, stages: 5 };
/// `21_wgmma_n256.cu`: 128x256 tiles, a 4-stage ring.
const N256: Design = Design { bn: 256, stages: 4 };
/// `22_wgmma_persistent.cu`: 21's tiles and ring.
const PERSISTENT: Design = N256;
// One block per SM within an H100's 227 KB of shared memory per block.
const _: () = assert!(TMA.smem() <= 227 * 1024 && N256.smem() <= 227 * 1024);

/// The TMA needs every row of A (K elements) and of B (N elements) to start 16 bytes after
/// the previous one.
fn tma_strides(shape: &Shape) -> Result<(), Unsupported> {
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

fn info(id: &'static str, rung: u32, summary: &'static str) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Gemm,
        stage: Stage::Tensorcore,
        precision: Precision::Bf16,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

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
        info(
            "gemm-wgmma-tma",
            18,
            "Hopper (sm_90a): wgmma BF16 from shared memory fed by TMA through a 5-stage \
             mbarrier ring, producer/consumer warpgroups",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, _) = gemm_dims(shape);
        let (tn, tm) = TMA.tiles(m, n);
        let src = cuda_source!("tensorcore", "18_wgmma_tma.cu");
        Some(TMA.plan(shape, src, "gemm_wgmma_tma", [tn, tm, 1]))
    }

    /// Rung 17's port: the same product (BF16 operands, FP32 accumulation).
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

/// `21_wgmma_n256.cu`: rung 18 on 128x256 tiles, wgmma m64n256k16.
pub struct GemmWgmmaN256;

impl Kernel for GemmWgmmaN256 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wgmma-tma"),
            idea: "128x256 block tiles (wgmma m64n256k16): twice the FLOP per byte of A landed in shared memory",
            bound: Some(Bound::SharedTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wgmma-n256",
            21,
            "rung 18 on 128x256 tiles: wgmma m64n256k16, 128 accumulators a consumer thread, a \
             4-stage ring",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, _) = gemm_dims(shape);
        let (tn, tm) = N256.tiles(m, n);
        let src = cuda_source!("tensorcore", "21_wgmma_n256.cu");
        Some(N256.plan(shape, src, "gemm_wgmma_n256", [tn, tm, 1]))
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

/// `22_wgmma_persistent.cu`: rung 21 with one block per SM walking the tiles. The grid is
/// planned for `sms` SMs (an H100's by default; tests plan for fewer to give each block
/// several tiles).
pub struct GemmWgmmaPersistent {
    pub sms: u32,
}

impl Default for GemmWgmmaPersistent {
    fn default() -> Self {
        Self { sms: DEFAULT_SMS }
    }
}

impl Kernel for GemmWgmmaPersistent {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wgmma-n256"),
            idea: "a persistent schedule: one block per SM walks the tiles, its producer filling the next tile's stages during the epilogue",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wgmma-persistent",
            22,
            "rung 21 persistent: min(tiles, 132) blocks each walk tiles b, b + grid, ...; the \
             ring runs on across tiles, so loads of the next tile overlap the epilogue",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, _) = gemm_dims(shape);
        let (tn, tm) = PERSISTENT.tiles(m, n);
        let grid = (tn * tm).min(self.sms);
        let src = cuda_source!("tensorcore", "22_wgmma_persistent.cu");
        let mut plan = PERSISTENT.plan(shape, src, "gemm_wgmma_persistent", [grid, 1, 1]);
        let entry = "gemm_wgmma_persistent".to_string().into();
        plan.persistent = vec![(entry, u64::from(tn * tm))];
        Some(plan)
    }

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
    fn launch_constants_match_the_kernel_sources() {
        for (src, d) in [
            (include_str!("../kernels/18_wgmma_tma.cu"), TMA),
            (include_str!("../kernels/21_wgmma_n256.cu"), N256),
            (
                include_str!("../kernels/22_wgmma_persistent.cu"),
                PERSISTENT,
            ),
        ] {
            assert_eq!(define(src, "BM"), BM);
            assert_eq!(define(src, "BN"), d.bn);
            assert_eq!(define(src, "BK"), BK);
            assert_eq!(define(src, "STAGES"), d.stages);
            assert_eq!(define(src, "CONSUMERS") + 1, THREADS as usize / 128);
        }
    }

    #[test]
    fn the_persistent_grid_is_one_block_per_sm_or_per_tile() {
        let grid = |k: &GemmWgmmaPersistent, m, n| {
            k.cuda(&Shape::gemm(m, n, 64))
                .unwrap()
                .launches()
                .next()
                .unwrap()
                .grid
        };
        // 4096 x 4096: 32 x 16 tiles of 128 x 256 for 132 SMs.
        assert_eq!(
            grid(&GemmWgmmaPersistent::default(), 4096, 4096),
            [132, 1, 1]
        );
        // 300 x 520: 3 x 3 tiles.
        assert_eq!(grid(&GemmWgmmaPersistent::default(), 300, 520), [9, 1, 1]);
        assert_eq!(grid(&GemmWgmmaPersistent { sms: 2 }, 300, 520), [2, 1, 1]);
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
        let stage = a.box_bytes(Dtype::Bf16) + (TMA.bn / B_BOX_COLS) * b.box_bytes(Dtype::Bf16);
        assert_eq!(stage, (BM * BK + BK * TMA.bn) * BF16);
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
