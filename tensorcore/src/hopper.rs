//! The Hopper rungs, for sm_90a alone: `wgmma` fed by TMA copies through an mbarrier pipeline
//! (18), on 128x256 tiles (21), persistent (22), walking its tiles in L2-friendly groups (23),
//! in 2-block clusters sharing each B tile by TMA multicast (24), with one k-tile of wgmma
//! kept in flight (25), releasing the partner's stage at CTA scope (26), and with K split
//! across the blocks of a cluster on shapes with fewer tiles than SMs (28).
//! Their plans pass A and B as TMA tensor maps ([`kernel::TensorMap`]), which
//! the CUDA device encodes with `cuTensorMapEncodeTiled`. A GPU other than Hopper declines it
//! (no sm_90a code); the CUDA simulator runs it through its emulation of wgmma, TMA and
//! mbarriers.

use crate::pipelined::cpu_bf16;
use crate::wide_tile::{DEFAULT_SMS, best_split};
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, DeviceInfo, Dtype, Kernel, KernelInfo, Launch,
    Lineage, Precision, Role, Shape, Stage, Step, TensorMap, TmaSwizzle, Unsupported, Workload,
    cuda_source, div_ceil, gemm_dims,
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
            Arg::TensorMap(TensorMap::matrix(
                buf,
                rows,
                cols,
                box_rows as u32,
                box_cols as u32,
                TmaSwizzle::B128,
            ))
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
/// `23_wgmma_l2_order.cu`: 22's.
const L2_ORDER: Design = PERSISTENT;
/// `24_wgmma_cluster.cu`: 23's, in each block of a cluster.
const CLUSTERED: Design = L2_ORDER;
/// `25_wgmma_overlap.cu`: 23's.
const OVERLAP: Design = L2_ORDER;
/// `28_wgmma_split_k.cu`: 25's; the partial tile reuses the ring.
const SPLIT_K: Design = OVERLAP;
/// Blocks per cluster of rung 24 (its `CLUSTER`), stacked along M.
const CLUSTER: u32 = 2;
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

/// Block-rows per group of rung 23's tile walk (its `GROUP`; the source's header says why 16).
pub const L2_GROUP: u32 = 16;

/// The block-tile coordinates (block-row, block-column) of tile `tile` of rung 23's walk over
/// `tiles_m` x `tiles_n` tiles in groups of `group` block-rows: one group after the other,
/// column-major inside a group, the last group holding what is left of the block-rows. The
/// Rust twin of the kernel's `tile_origin` (the simulator's tests hold the two to each other).
pub fn grouped_tile(tile: u32, tiles_m: u32, tiles_n: u32, group: u32) -> (u32, u32) {
    let per_group = group * tiles_n;
    let first = tile / per_group * group;
    let rows = group.min(tiles_m - first);
    let local = tile % per_group;
    (first + local % rows, local / rows)
}

/// `23_wgmma_l2_order.cu`: rung 22 walking its tiles in groups of [`L2_GROUP`] block-rows,
/// column-major inside a group, so that the tiles in flight together share rows of A and
/// columns of B in L2. The grid is planned for `sms` SMs, as 22's.
pub struct GemmWgmmaL2Order {
    pub sms: u32,
}

impl Default for GemmWgmmaL2Order {
    fn default() -> Self {
        Self { sms: DEFAULT_SMS }
    }
}

impl Kernel for GemmWgmmaL2Order {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wgmma-persistent"),
            idea: "a grouped tile order: the tiles in flight together cover 16 block-rows by a few block-columns, so they share bands of A and B in L2",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wgmma-l2-order",
            23,
            "rung 22 walking its tiles in groups of 16 block-rows, column-major inside a group: \
             a wave of 132 tiles reads under half the bytes of A and B per element of K at N = 8192",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, _) = gemm_dims(shape);
        let (tn, tm) = L2_ORDER.tiles(m, n);
        let grid = (tn * tm).min(self.sms);
        let src = cuda_source!("tensorcore", "23_wgmma_l2_order.cu");
        let mut plan = L2_ORDER.plan(shape, src, "gemm_wgmma_l2_order", [grid, 1, 1]);
        let entry = "gemm_wgmma_l2_order".to_string().into();
        plan.persistent = vec![(entry, u64::from(tn * tm))];
        Some(plan)
    }

    /// Rung 17's port: the tile order changes where the bytes come from, not the product.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

/// `24_wgmma_cluster.cu`: rung 23 in clusters of two blocks stacked along M that share each
/// B tile by TMA multicast. The grid is planned for `sms` SMs, as 22's, rounded down to whole
/// clusters.
pub struct GemmWgmmaCluster {
    pub sms: u32,
}

impl Default for GemmWgmmaCluster {
    fn default() -> Self {
        Self { sms: DEFAULT_SMS }
    }
}

impl Kernel for GemmWgmmaCluster {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wgmma-l2-order"),
            idea: "2-block clusters: the blocks of a pair take vertically adjacent tiles and each multicasts half of their common B tile to both, so the L2 sends each B box once per pair",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wgmma-cluster",
            24,
            "rung 23 in clusters of 2 blocks over 256x256 tiles: each producer multicasts half \
             of B to both blocks (TMA .multicast::cluster), consumers release a stage in both",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let src = cuda_source!("tensorcore", "24_wgmma_cluster.cu");
        Some(cluster_plan(shape, self.sms, src, "gemm_wgmma_cluster"))
    }

    /// Rung 17's port: the clusters change where B's bytes come from, not the product.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

/// The launch of a clustered rung (24, 26): as many whole clusters as `sms` SMs hold, each
/// walking pair tiles.
fn cluster_plan(shape: &Shape, sms: u32, src: CudaSource, entry: &str) -> CudaPlan {
    let (m, n, _) = gemm_dims(shape);
    let (tn, tm) = CLUSTERED.tiles(m, n);
    let pairs = div_ceil(tm as usize, CLUSTER as usize) * tn;
    let clusters = pairs.min((sms / CLUSTER).max(1));
    let mut plan = CLUSTERED.plan(shape, src, entry, [clusters * CLUSTER, 1, 1]);
    // Each pair tile is CLUSTER block tiles, the last pair's second one past M if tm is odd.
    plan.persistent = vec![(entry.to_string().into(), u64::from(pairs * CLUSTER))];
    plan
}

/// `25_wgmma_overlap.cu`: rung 23 with each consumer waiting for the previous k-tile's wgmma
/// (wait_group 1) instead of its own, so one group stays in flight. The grid is planned for
/// `sms` SMs, as 22's.
pub struct GemmWgmmaOverlap {
    pub sms: u32,
}

impl Default for GemmWgmmaOverlap {
    fn default() -> Self {
        Self { sms: DEFAULT_SMS }
    }
}

impl Kernel for GemmWgmmaOverlap {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wgmma-l2-order"),
            idea: "wgmma.wait_group 1: each consumer issues the next k-tile's wgmma while its previous group still runs, and frees that group's stage one k-tile later",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wgmma-overlap",
            25,
            "rung 23 with one k-tile of wgmma in flight per consumer (wait_group 1): the tensor \
             cores are not left idle while a consumer waits for its own wgmma",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, _) = gemm_dims(shape);
        let (tn, tm) = OVERLAP.tiles(m, n);
        let grid = (tn * tm).min(self.sms);
        let src = cuda_source!("tensorcore", "25_wgmma_overlap.cu");
        let mut plan = OVERLAP.plan(shape, src, "gemm_wgmma_overlap", [grid, 1, 1]);
        plan.persistent = vec![("gemm_wgmma_overlap".to_string().into(), u64::from(tn * tm))];
        Some(plan)
    }

    /// Rung 17's port: when a stage is freed changes, not the product.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

/// `26_wgmma_cluster_cta.cu`: rung 24 with each consumer freeing the partner's stage by an
/// arrival released at CTA scope, without the fence a cluster-scope release costs.
pub struct GemmWgmmaClusterCta {
    pub sms: u32,
}

impl Default for GemmWgmmaClusterCta {
    fn default() -> Self {
        Self { sms: DEFAULT_SMS }
    }
}

impl Kernel for GemmWgmmaClusterCta {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wgmma-cluster"),
            idea: "the consumers free a stage in both blocks with mbarrier.arrive's default release at CTA scope: their wgmma reads are complete, and the fence before each cluster-scope arrival (MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, ERRBAR, CGAERRBAR) goes",
            bound: Some(Bound::Latency),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wgmma-cluster-cta",
            26,
            "rung 24 with the stage released to the partner block at CTA scope: no fence \
             between a consumer's wgmma wait and its arrivals",
        )
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let src = cuda_source!("tensorcore", "26_wgmma_cluster_cta.cu");
        Some(cluster_plan(shape, self.sms, src, "gemm_wgmma_cluster_cta"))
    }

    /// Rung 17's port: how a stage is released changes, not the product.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }
}

/// The most blocks rung 28 splits a tile across: its cluster, at most the portable 8.
const MAX_CLUSTER_SPLITS: usize = 8;

/// What rung 28's reduction costs a block besides its share of K, in k-tiles of main-loop
/// time (an estimate, to be calibrated on a GPU): it writes its 132 KB partial into its own
/// shared memory, reads 128 KB of the partials (all but its own share through distributed
/// shared memory), stores a share of the tile and waits at a named and two cluster barriers,
/// whatever the split. A k-tile is 2 x 128 x 256 x 64 = 4.2 MFLOP, about 0.56 us of an SM's
/// wgmma at the data sheet's rate (989 TFLOP/s over 132 SMs); at 20 to 60 bytes a cycle of the
/// SM-to-SM network (1.98 GHz), the 128 KB of reads alone take 1.1 to 3.3 us, 2 to 6 k-tiles.
const CLUSTER_FIXUP_KTILES: usize = 4;

/// `28_wgmma_split_k.cu`: rung 25 with K split across the blocks of a cluster when its tiles
/// leave SMs idle, the partials added through distributed shared memory in a fixed order.
/// The split is planned for `sms` SMs; unsplit, the plan is rung 25's.
pub struct GemmWgmmaSplitK {
    pub sms: u32,
}

impl Default for GemmWgmmaSplitK {
    fn default() -> Self {
        Self { sms: DEFAULT_SMS }
    }
}

impl GemmWgmmaSplitK {
    /// Blocks per tile (the cluster size) for `shape`: 1 where the tiles fill the SMs.
    pub fn splits(&self, shape: &Shape) -> usize {
        let (m, n, k) = gemm_dims(shape);
        let (tn, tm) = SPLIT_K.tiles(m, n);
        best_split(
            (tn * tm) as usize,
            k.div_ceil(BK),
            self.sms,
            MAX_CLUSTER_SPLITS,
            |_| CLUSTER_FIXUP_KTILES,
        )
    }
}

impl Kernel for GemmWgmmaSplitK {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-wgmma-overlap"),
            idea: "split-K in a cluster when the tiles do not fill the SMs: the blocks of a cluster share a tile's K range and add their FP32 partials through distributed shared memory, in a fixed order",
            bound: Some(Bound::Occupancy),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-wgmma-split-k",
            28,
            "rung 25 with K split across the blocks of a cluster when its tiles leave SMs idle, \
             partials added through distributed shared memory in a fixed order",
        )
    }

    fn summary_at(&self, shape: &Shape) -> Option<String> {
        Some(match self.splits(shape) {
            1 => format!(
                "rung 25 with split-K: not split here (enough tiles for {} SMs), rung 25 as it is",
                self.sms
            ),
            s => format!(
                "rung 25 with split-K: K split {s} ways in clusters of {s} for {} SMs, partials \
                 added through distributed shared memory",
                self.sms
            ),
        })
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        tma_strides(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let splits = self.splits(shape);
        if splits == 1 {
            return GemmWgmmaOverlap { sms: self.sms }.cuda(shape);
        }
        let (m, n, _) = gemm_dims(shape);
        let (tn, tm) = SPLIT_K.tiles(m, n);
        let src = cuda_source!("tensorcore", "28_wgmma_split_k.cu").define("SPLITS", splits);
        let grid = [tn * tm * splits as u32, 1, 1];
        Some(SPLIT_K.plan(shape, src, "gemm_wgmma_split_k", grid))
    }

    /// 1024^3, where it splits on an H100 or H200 (at 4096^3 it is rung 25).
    fn inspect_shape(&self) -> Option<(&'static str, Shape)> {
        Some(("1024^3", Shape::square_gemm(1024)))
    }

    /// Rung 17's port: the split changes the order of the FP32 sums, not the product.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_bf16)
    }

    fn for_device(&self, device: &DeviceInfo) -> Option<Box<dyn Kernel>> {
        (device.units > 0).then(|| Box::new(Self { sms: device.units }) as Box<dyn Kernel>)
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
            (include_str!("../kernels/23_wgmma_l2_order.cu"), L2_ORDER),
            (include_str!("../kernels/24_wgmma_cluster.cu"), CLUSTERED),
            (include_str!("../kernels/25_wgmma_overlap.cu"), OVERLAP),
            (
                include_str!("../kernels/26_wgmma_cluster_cta.cu"),
                CLUSTERED,
            ),
            (include_str!("../kernels/28_wgmma_split_k.cu"), SPLIT_K),
        ] {
            assert_eq!(define(src, "BM"), BM);
            assert_eq!(define(src, "BN"), d.bn);
            assert_eq!(define(src, "BK"), BK);
            assert_eq!(define(src, "STAGES"), d.stages);
            assert_eq!(define(src, "CONSUMERS") + 1, THREADS as usize / 128);
        }
        let l2 = include_str!("../kernels/23_wgmma_l2_order.cu");
        assert_eq!(define(l2, "GROUP"), L2_GROUP as usize);
        // 24 walks pair tiles in groups covering 23's block-rows.
        let cl = include_str!("../kernels/24_wgmma_cluster.cu");
        assert_eq!(define(cl, "CLUSTER"), CLUSTER as usize);
        assert_eq!(
            define(cl, "GROUP") * define(cl, "CLUSTER"),
            L2_GROUP as usize
        );
    }

    #[test]
    fn the_cluster_grid_is_whole_clusters_one_block_per_sm_or_per_tile() {
        let grid = |sms, m, n| {
            let plan = GemmWgmmaCluster { sms }
                .cuda(&Shape::gemm(m, n, 64))
                .unwrap();
            (plan.launches().next().unwrap().grid, plan.persistent[0].1)
        };
        // 4096 x 4096: 16 pair-rows x 16 block-columns = 256 pairs for 66 clusters.
        assert_eq!(grid(DEFAULT_SMS, 4096, 4096), ([132, 1, 1], 512));
        // 300 x 520: 3 block-rows make 2 pairs of rows (the second half empty) x 3 columns.
        assert_eq!(grid(DEFAULT_SMS, 300, 520), ([12, 1, 1], 12));
        // An odd SM count leaves an SM idle; one SM still gets a cluster.
        assert_eq!(grid(5, 300, 520).0, [4, 1, 1]);
        assert_eq!(grid(1, 300, 520).0, [2, 1, 1]);
    }

    #[test]
    fn split_k_splits_only_shapes_whose_tiles_leave_sms_idle() {
        let rung = GemmWgmmaSplitK::default();
        let cube = |s| Shape::gemm(s, s, s);
        // 1024^3: 32 tiles of 16 k-tiles; 4 ways fills 128 of 132 SMs for 4 + 4 k-tiles.
        assert_eq!(rung.splits(&cube(1024)), 4);
        let plan = rung.cuda(&cube(1024)).unwrap();
        let launch = plan.launches().next().unwrap();
        assert_eq!(
            (launch.entry.as_ref(), launch.grid),
            ("gemm_wgmma_split_k", [128, 1, 1])
        );
        assert!(
            launch
                .source
                .defines
                .iter()
                .any(|(k, v)| k.as_ref() == "SPLITS" && v == "4")
        );
        // 2048^3 (128 tiles) and beyond: unsplit, rung 25's plan as it is.
        for s in [2048, 4096] {
            assert_eq!(rung.splits(&cube(s)), 1);
            let plan = rung.cuda(&cube(s)).unwrap();
            let parent = GemmWgmmaOverlap::default().cuda(&cube(s)).unwrap();
            assert_eq!(plan.launches().next(), parent.launches().next());
        }
        // Never more than a portable cluster, nor more splits than k-tiles.
        assert_eq!(rung.splits(&Shape::gemm(128, 256, 64 * 64)), 8);
        assert_eq!(rung.splits(&Shape::gemm(128, 256, 128)), 1);
        // The GPU's SM count reaches the plan.
        let small = DeviceInfo {
            units: 16,
            ..DeviceInfo::default()
        };
        let on_small = rung.for_device(&small).unwrap();
        assert_eq!(
            on_small
                .cuda(&cube(1024))
                .unwrap()
                .launches()
                .next()
                .unwrap()
                .grid,
            [16, 1, 1],
            "32 tiles fill 16 SMs: unsplit, rung 25 persistent on 16 SMs"
        );
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
        assert_eq!((a.buf, a.dims[1], a.dims[0]), (Buf::Input(0), 300, 72));
        assert_eq!((b.buf, b.dims[1], b.dims[0]), (Buf::Input(1), 72, 136));
        let ea = a.encoding(Dtype::Bf16).unwrap();
        let eb = b.encoding(Dtype::Bf16).unwrap();
        assert_eq!(
            (&ea.global_dim[..2], &ea.box_dim[..2]),
            (&[72, 300][..], &[64, 128][..])
        );
        assert_eq!(
            (&eb.global_dim[..2], &eb.box_dim[..2]),
            (&[136, 72][..], &[64, 64][..])
        );
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

    #[test]
    fn the_grouped_walk_visits_every_tile_once() {
        // Group counts that divide the block-rows and that leave a short last group, fewer
        // block-rows than a group, single rows and columns.
        for group in [1, 2, 3, L2_GROUP] {
            for tiles_m in 1..=37 {
                for tiles_n in 1..=7 {
                    let tiles = tiles_m * tiles_n;
                    let mut seen = vec![false; tiles as usize];
                    for t in 0..tiles {
                        let (m, n) = grouped_tile(t, tiles_m, tiles_n, group);
                        assert!(m < tiles_m && n < tiles_n, "{t}: ({m}, {n})");
                        let i = (m * tiles_n + n) as usize;
                        assert!(!seen[i], "{tiles_m}x{tiles_n}/{group}: ({m}, {n}) twice");
                        seen[i] = true;
                    }
                }
            }
        }
    }

    #[test]
    fn the_walk_is_column_major_inside_groups_of_block_rows() {
        // 5 x 3 tiles in groups of 2: rows 0-1, then 2-3, then the short group of row 4.
        let walk: Vec<_> = (0..15).map(|t| grouped_tile(t, 5, 3, 2)).collect();
        let expect = [
            (0, 0),
            (1, 0),
            (0, 1),
            (1, 1),
            (0, 2),
            (1, 2),
            (2, 0),
            (3, 0),
            (2, 1),
            (3, 1),
            (2, 2),
            (3, 2),
            (4, 0),
            (4, 1),
            (4, 2),
        ];
        assert_eq!(walk, expect);
        // Up to a group of block-rows: column-major over the whole matrix.
        for tiles_m in [1, 15, 16] {
            for t in 0..tiles_m * 9 {
                let (m, n) = (t % tiles_m, t / tiles_m);
                assert_eq!(grouped_tile(t, tiles_m, 9, L2_GROUP), (m, n));
            }
        }
        // Tile t lies in group t / (16 tiles_n), within its 16 block-rows.
        for t in 0..37 * 5 {
            let (m, _) = grouped_tile(t, 37, 5, L2_GROUP);
            assert_eq!(m / L2_GROUP, t / (L2_GROUP * 5));
        }
    }

    /// Bytes of A and B per element of K that the tiles `tiles` read: their distinct
    /// block-rows of A (BM rows each) and block-columns of B (BN columns each), in BF16.
    fn band(tiles: impl Iterator<Item = (u32, u32)>) -> usize {
        let (mut rows, mut cols) = (Vec::new(), Vec::new());
        for (m, n) in tiles {
            rows.push(m);
            cols.push(n);
        }
        for v in [&mut rows, &mut cols] {
            v.sort_unstable();
            v.dedup();
        }
        (rows.len() * BM + cols.len() * L2_ORDER.bn) * BF16
    }

    /// The band of each full wave of `sms` tiles when `m` x `n` is walked by `walk` (tile
    /// number, block-rows, block-columns to tile coordinates).
    fn wave_bands(m: usize, n: usize, walk: fn(u32, u32, u32) -> (u32, u32)) -> Vec<usize> {
        let (tn, tm) = L2_ORDER.tiles(m, n);
        let sms = DEFAULT_SMS;
        (0..tn * tm / sms)
            .map(|w| band((w * sms..(w + 1) * sms).map(|t| walk(t, tm, tn))))
            .collect()
    }

    fn row_major(t: u32, _: u32, tiles_n: u32) -> (u32, u32) {
        (t / tiles_n, t % tiles_n)
    }

    fn grouped(t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
        grouped_tile(t, tiles_m, tiles_n, L2_GROUP)
    }

    #[test]
    fn a_wave_of_the_grouped_walk_reads_half_the_band_of_the_row_major_walk() {
        // The figures of the header of 23_wgmma_l2_order.cu and of its README section, for
        // an H100's 132 SMs and its 50 MiB L2. At M = N = 8192, 22's waves cover 5 block-rows
        // and all 32 block-columns.
        let rows = wave_bands(8192, 8192, row_major);
        assert_eq!(rows[0], (5 * BM + 32 * L2_ORDER.bn) * BF16);
        assert_eq!((rows[0], rows.iter().max()), (17664, Some(&17664)));
        // 23's 16 block-rows by 9 block-columns, up to 32 by 9 where a wave straddles groups.
        let groups = wave_bands(8192, 8192, grouped);
        assert_eq!(groups[0], (16 * BM + 9 * L2_ORDER.bn) * BF16);
        assert_eq!((groups[0], groups.iter().max()), (8704, Some(&12800)));
        // At 4096 x 4096 (32 x 16 tiles) the two walks read about as much.
        assert_eq!(wave_bands(4096, 4096, row_major)[0], 10496);
        let groups = wave_bands(4096, 4096, grouped);
        let range = (groups.iter().min(), groups.iter().max());
        assert_eq!(range, (Some(&8704), Some(&10752)));
        // The K up to which the L2 holds a wave's whole band.
        let l2 = 50 << 20;
        assert_eq!((l2 / 17664, l2 / 8704), (2968, 6023));
        // 128 r + 256 c with r c = 132 is smallest at r = sqrt(2 x 132).
        let best = (2.0 * f64::from(DEFAULT_SMS)).sqrt();
        assert_eq!(best.round(), f64::from(L2_GROUP));
    }
}
