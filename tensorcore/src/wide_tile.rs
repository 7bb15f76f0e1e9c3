//! Rungs 19, 20 and 27: 128x256 block tiles of 8 warps on `mma.sync` (19), the same main loop
//! with K split across blocks when a shape has fewer tiles than the GPU has SMs (20), and 19
//! with its addresses computed once per thread (27). A and B reach the kernels in FP16 (the
//! executor converts them before timing); C is FP32.

use crate::pipelined::{F16, cpu_fp16};
use half::f16;
use kernel::{
    Arg, Bound, Buf, CpuPort, CudaPlan, CudaSource, DeviceInfo, Dtype, Fill, Kernel, KernelInfo,
    Launch, Lineage, Precision, Role, Scratch, Shape, Stage, Step, Workload, cuda_source,
    cuda_source_after, div_ceil, gemm_args, gemm_dims,
};
use rayon::prelude::*;
use restrict_unroll::cpu::{BLayout, gemm_blocked};

/// The constants of `19_mma_128x256.cu`: block tile, K step, ring depth, threads (8 warps).
const BM: usize = 128;
const BN: usize = 256;
const BK: usize = 32;
const STAGES: usize = 4;
const THREADS: u32 = 256;
/// The ring: `STAGES` x (A: BM x BK, B: BK x BN) 16-bit elements, 96 KB.
const SMEM: usize = STAGES * (BM * BK + BK * BN) * 2;
// One block per SM fits an A100 (163 KB per block) as well as an H100 (227 KB).
const _: () = assert!(SMEM <= 163 * 1024);

/// The SM count rung 20 plans for where no GPU says otherwise (the CPU port, the simulator,
/// the NVRTC checks): an H100 SXM's.
pub const DEFAULT_SMS: u32 = 132;

/// The most blocks that share one tile's K range.
const MAX_SPLITS: usize = 16;

/// What a split costs besides its share of K, in k-tiles of main-loop time (an estimate, to
/// be calibrated on a GPU): each block stores a 128x256 FP32 partial (128 KB), and the tile's
/// last block reads back all `s` of them, so the slowest block of a tile split `s` ways moves
/// `s + 1` partials through L2 outside the main loop. A k-tile is 2 x 128 x 256 x 32 =
/// 2.1 MFLOP of math overlapped with 24 KB of copies; a partial is 5.3 times those bytes, not
/// overlapped with any math. Counted as 2 k-tiles per partial, splitting pays where it turns
/// idle SMs into work: 1024^3 on 132 SMs splits 4 ways, 2048^3 (128 tiles) and larger do not.
const PARTIAL_COST_KTILES: usize = 2;

/// Launches of `entry` over 128x256 tiles of C (`splits` blocks per tile along z).
fn launch(source: CudaSource, entry: &str, shape: &Shape, splits: usize, args: Vec<Arg>) -> Step {
    let (m, n, _) = gemm_dims(shape);
    Step::Kernel(Launch {
        source,
        entry: entry.to_string().into(),
        grid: [div_ceil(n, BN), div_ceil(m, BM), splits as u32],
        block: [THREADS, 1, 1],
        dynamic_smem: SMEM as u32,
        args,
    })
}

/// The plan of a rung whose one launch gives each block one 128x256 tile of C and all of K
/// (19 and 27): FP16 A and B in, FP32 C out.
fn one_tile_per_block(source: CudaSource, entry: &str, shape: &Shape) -> CudaPlan {
    let (m, n, k) = gemm_dims(shape);
    CudaPlan {
        inputs: vec![Dtype::F16, Dtype::F16],
        output: Dtype::F32,
        steps: vec![launch(source, entry, shape, 1, gemm_args(m, n, k))],
        ..Default::default()
    }
}

fn info(id: &'static str, rung: u32, summary: String) -> KernelInfo {
    KernelInfo {
        id: id.into(),
        workload: Workload::Gemm,
        stage: Stage::Tensorcore,
        precision: Precision::Fp16,
        role: Role::Rung,
        rung,
        summary: summary.into(),
    }
}

fn source_19() -> CudaSource {
    cuda_source!("tensorcore", "19_mma_128x256.cu")
}

/// `19_mma_128x256.cu`: rung 16's warp tile in 128x256 block tiles of 8 warps, a 4-stage ring.
pub struct GemmMma128x256;

impl Kernel for GemmMma128x256 {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-mma-dbuf"),
            idea: "two ideas: 128x256 block tiles of 8 warps (a quarter fewer L2 bytes per FLOP than 128x128), and a 4-stage ring of BK = 32 with one barrier per k-tile, the fragment double buffering carried across it",
            bound: Some(Bound::MemoryTraffic),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-mma-128x256",
            19,
            "mma.sync FP16, 128x256 block tiles of 8 warps (64x64 each), 4-stage cp.async ring, fragments double-buffered across k-tiles".into(),
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(one_tile_per_block(source_19(), "gemm_mma_128x256", shape))
    }

    /// The FP16 rungs' port (14..16): the operands rounded to FP16, FP32 sums. The block tile
    /// is a GPU schedule with no CPU counterpart; the arithmetic is the same.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16)
    }
}

/// Rung 19's source followed by rung 27's main loop and entry, which call 19's copies of a
/// tile's edges, mma.sync step and store.
fn source_27() -> CudaSource {
    cuda_source_after!("tensorcore", "19_mma_128x256.cu", "27_mma_hoisted.cu")
}

/// `27_mma_hoisted.cu`: rung 19 with its ldmatrix and cp.async addresses computed once per
/// thread, and full k-tiles copied without bounds arithmetic.
pub struct GemmMmaHoisted;

impl Kernel for GemmMmaHoisted {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-mma-128x256"),
            idea: "two ideas, both fewer integer instructions per HMMA: every ldmatrix and cp.async address worked out once per thread before the loop (the swizzle's XOR is the same 16 rows on), and k-tiles inside A and B copied without bounds arithmetic",
            bound: Some(Bound::Issue),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-mma-hoisted",
            27,
            "mma.sync FP16, rung 19 with its addresses computed once per thread and full k-tiles copied without bounds checks".into(),
        )
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        Some(one_tile_per_block(source_27(), "gemm_mma_hoisted", shape))
    }

    /// Rung 19's port: the same rounded operands and FP32 sums.
    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_fp16)
    }
}

/// `20_mma_split_k.cu`: rung 19 with K split across `splits` blocks per tile when the tiles
/// alone would leave SMs idle, the partials added in a fixed order by the tile's last block.
#[derive(Clone, Copy, Debug)]
pub struct GemmMmaSplitK {
    /// The SM count the split is planned for.
    sms: u32,
}

impl Default for GemmMmaSplitK {
    fn default() -> Self {
        Self { sms: DEFAULT_SMS }
    }
}

impl GemmMmaSplitK {
    /// The rung planned for a GPU of `sms` multiprocessors (at least 1).
    pub const fn for_sms(sms: u32) -> Self {
        Self {
            sms: if sms == 0 { 1 } else { sms },
        }
    }

    /// Blocks per tile for `shape` ([`best_split`]), where a tile's last block costs its
    /// k-tiles plus [`PARTIAL_COST_KTILES`] per partial it stores or reads.
    pub fn splits(&self, shape: &Shape) -> usize {
        let (m, n, k) = gemm_dims(shape);
        let tiles = m.div_ceil(BM) * n.div_ceil(BN);
        best_split(tiles, k.div_ceil(BK), self.sms, MAX_SPLITS, |s| {
            PARTIAL_COST_KTILES * (s + 1)
        })
    }
}

/// How many blocks share each of `tiles` tiles of `k_tiles` k-tiles on `sms` SMs (one block
/// per SM), at most `max_splits`: 1 when the tiles alone fill the SMs (the quantization of
/// several waves is stream-K's problem, not split-K's); else the split with the least
/// estimated time, a block's share of the k-tiles times the waves plus `fixup(s)` k-tiles of
/// reduction for a split `s > 1`. Ties go to fewer splits. Rungs 20 and 28 differ in `fixup`.
pub(crate) fn best_split(
    tiles: usize,
    k_tiles: usize,
    sms: u32,
    max_splits: usize,
    fixup: impl Fn(usize) -> usize,
) -> usize {
    let (k_tiles, sms) = (k_tiles.max(1), sms.max(1) as usize);
    if tiles >= sms {
        return 1;
    }
    let cost = |s: usize| {
        let waves = (tiles * s).div_ceil(sms);
        waves * k_tiles.div_ceil(s) + if s > 1 { fixup(s) } else { 0 }
    };
    (1..=k_tiles.min(max_splits))
        .min_by_key(|&s| (cost(s), s))
        .unwrap_or(1)
}

/// Rung 19's source followed by rung 20's entry, which calls 19's main loop and store.
fn source_20() -> CudaSource {
    cuda_source_after!("tensorcore", "19_mma_128x256.cu", "20_mma_split_k.cu")
}

impl Kernel for GemmMmaSplitK {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-mma-128x256"),
            idea: "split-K when the tiles do not fill the SMs: blocks share a tile's K range, and the tile's last block adds the FP32 partials in a fixed order (deterministic)",
            bound: Some(Bound::Occupancy),
        })
    }

    fn info(&self) -> KernelInfo {
        info(
            "gemm-mma-split-k",
            20,
            format!(
                "rung 19 with K split across blocks when its tiles leave SMs idle (planned for {} SMs), partials reduced in a fixed order",
                self.sms
            ),
        )
    }

    fn summary_at(&self, shape: &Shape) -> Option<String> {
        let splits = self.splits(shape);
        Some(match splits {
            1 => format!(
                "rung 19 with split-K: not split here (enough tiles for {} SMs)",
                self.sms
            ),
            s => format!(
                "rung 19 with split-K: K split {s} ways for {} SMs, partials reduced in a fixed order",
                self.sms
            ),
        })
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let (m, n, k) = gemm_dims(shape);
        let splits = self.splits(shape);
        let tiles = m.div_ceil(BM) * n.div_ceil(BN);
        let mut args = gemm_args(m, n, k);
        let scratch = if splits > 1 {
            args.extend([Arg::Ptr(Buf::Scratch(0)), Arg::Ptr(Buf::Scratch(1))]);
            vec![
                // Poisoned: a partial read before it is written shows as NaN in C.
                Scratch {
                    fill: Fill::Nan,
                    ..Scratch::new(
                        "split-K partial tiles",
                        Dtype::F32,
                        tiles * splits * BM * BN,
                    )
                },
                // One 32-bit arrival counter per tile (the kernel reads them as unsigned).
                Scratch::new("split-K tile counters", Dtype::F32, tiles),
            ]
        } else {
            // Unsplit, the kernel stores C directly and never touches these two.
            args.extend([Arg::Ptr(Buf::Output), Arg::Ptr(Buf::Output)]);
            Vec::new()
        };
        Some(CudaPlan {
            inputs: vec![Dtype::F16, Dtype::F16],
            output: Dtype::F32,
            scratch,
            steps: vec![launch(source_20(), "gemm_mma_split_k", shape, splits, args)],
            ..Default::default()
        })
    }

    fn cpu(&self) -> Option<CpuPort> {
        Some(cpu_split_k)
    }

    fn for_device(&self, device: &DeviceInfo) -> Option<Box<dyn Kernel>> {
        (device.units > 0).then(|| Box::new(Self::for_sms(device.units)) as Box<dyn Kernel>)
    }
}

/// The k-tile range of split `z` of `splits` over `k_tiles`, as the kernel computes it.
fn split_range(z: usize, splits: usize, k_tiles: usize) -> (usize, usize) {
    (z * k_tiles / splits, (z + 1) * k_tiles / splits)
}

/// CPU port of rung 20: the split of the default plan (an H100's 132 SMs), each split's K
/// range multiplied on its own (FP16 operands, FP32 sums, the splits in parallel), then the
/// partials added in split order, as the kernel's last block adds them.
fn cpu_split_k(shape: &Shape, inputs: &[&[f32]], out: &mut [f32]) {
    let (m, n, k) = gemm_dims(shape);
    let splits = GemmMmaSplitK::default().splits(shape);
    let k_tiles = k.div_ceil(BK);
    let partials: Vec<Vec<f32>> = (0..splits)
        .into_par_iter()
        .map(|z| {
            let (t0, t1) = split_range(z, splits, k_tiles);
            let (k0, k1) = (t0 * BK, (t1 * BK).min(k));
            let kr = k1 - k0;
            let a: Vec<F16> = (0..m)
                .flat_map(|i| &inputs[0][i * k + k0..i * k + k1])
                .map(|&v| F16(f16::from_f32(v)))
                .collect();
            let b: Vec<F16> = inputs[1][k0 * n..k1 * n]
                .iter()
                .map(|&v| F16(f16::from_f32(v)))
                .collect();
            let mut p = vec![0.0f32; m * n];
            gemm_blocked(m, n, kr, &a, &b, BLayout::KxN, &mut p, &|_, v| v);
            p
        })
        .collect();
    out.copy_from_slice(&partials[0]);
    for p in &partials[1..] {
        out.par_iter_mut().zip(p).for_each(|(o, &v)| *o += v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `#define NAME value` in a kernel source.
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
        let src = include_str!("../kernels/19_mma_128x256.cu");
        assert_eq!(define(src, "BM"), BM);
        assert_eq!(define(src, "BN"), BN);
        assert_eq!(define(src, "BK"), BK);
        assert_eq!(define(src, "STAGES"), STAGES);
        assert_eq!(define(src, "NTHREADS"), THREADS as usize);
        assert_eq!(SMEM, 96 * 1024);
    }

    #[test]
    fn splits_fill_the_sms_only_where_tiles_do_not() {
        let h100 = GemmMmaSplitK::default();
        let at = |k: &GemmMmaSplitK, m, n, kk| k.splits(&Shape::gemm(m, n, kk));
        // 1024^3: 32 tiles for 132 SMs, K = 32 k-tiles: 4 splits make one full wave.
        assert_eq!(at(&h100, 1024, 1024, 1024), 4);
        // 128 tiles or more: one wave (or more) already, no split.
        assert_eq!(at(&h100, 2048, 2048, 2048), 1);
        assert_eq!(at(&h100, 4096, 4096, 4096), 1);
        assert_eq!(at(&h100, 8192, 8192, 8192), 1);
        // 132 tiles exactly, long K: no split.
        assert_eq!(at(&h100, 128 * 12, 256 * 11, 1 << 15), 1);
        // An A100's 108 SMs hold 3 splits of 32 tiles in one wave, not 4.
        assert_eq!(at(&GemmMmaSplitK::for_sms(108), 1024, 1024, 1024), 3);
        // Short K: the partials would cost more than the k-tiles they spread.
        assert_eq!(at(&h100, 1024, 1024, 128), 1);
        // One tile, long K: as many splits as pay for their partials, never above K's tiles.
        assert_eq!(at(&h100, 100, 37, 1000), 4);
        assert_eq!(at(&h100, 1, 1, 1), 1);
        for (m, n, k) in [(1, 1, 40), (64, 64, 64), (300, 700, 5000)] {
            let s = at(&h100, m, n, k);
            assert!(
                s >= 1 && s <= k.div_ceil(BK).min(MAX_SPLITS),
                "{m}x{n}x{k}: {s}"
            );
        }
    }

    #[test]
    fn split_ranges_cover_k_once_and_none_is_empty() {
        for k_tiles in 1..40 {
            for splits in 1..=k_tiles.min(MAX_SPLITS) {
                let mut next = 0;
                for z in 0..splits {
                    let (t0, t1) = split_range(z, splits, k_tiles);
                    assert_eq!(t0, next);
                    assert!(t1 > t0, "{z} of {splits} over {k_tiles} is empty");
                    next = t1;
                }
                assert_eq!(next, k_tiles);
            }
        }
    }

    #[test]
    fn the_plan_adds_a_workspace_only_when_it_splits() {
        let k = GemmMmaSplitK::default();
        let split = k.cuda(&Shape::square_gemm(1024)).unwrap();
        let l = split.launches().next().unwrap();
        assert_eq!((l.grid, l.block), ([4, 8, 4], [256, 1, 1]));
        assert_eq!(split.scratch[0].len, 32 * 4 * BM * BN);
        assert_eq!(split.scratch[0].fill, Fill::Nan);
        assert_eq!(
            (split.scratch[1].len, split.scratch[1].fill),
            (32, Fill::Zero)
        );
        assert!(
            l.source.code.contains("mma_128x256(") && l.source.code.contains("gemm_mma_split_k(")
        );
        let whole = k.cuda(&Shape::square_gemm(4096)).unwrap();
        assert_eq!(whole.scratch_bytes(), 0);
        assert_eq!(whole.launches().next().unwrap().grid, [16, 32, 1]);
        // A GPU's SM count reaches the plan through `for_device`.
        let a100 = DeviceInfo {
            kind: "cuda".into(),
            units: 108,
            ..DeviceInfo::default()
        };
        let on_a100 = k.for_device(&a100).unwrap();
        let l = on_a100.cuda(&Shape::square_gemm(1024)).unwrap();
        assert_eq!(l.launches().next().unwrap().grid[2], 3);
        assert!(on_a100.info().summary.contains("108 SMs"));
    }

    fn relative_error(port: CpuPort, (m, n, k): (usize, usize, usize)) -> f64 {
        let data = kernel::testing::inputs(&Shape::gemm(m, n, k), 11);
        let mut out = vec![f32::NAN; m * n];
        port(&Shape::gemm(m, n, k), &[&data[0], &data[1]], &mut out);
        let exact = kernel::testing::gemm_f64((m, n, k), &data[0], &data[1], |v| v);
        kernel::testing::relative_error(&out, &exact)
    }

    #[test]
    fn split_port_is_within_the_fp16_bound_on_tails() {
        // 100x37x1000 splits 4 ways (k-tiles 8, 8, 8, 8; the last one partial).
        assert_eq!(
            GemmMmaSplitK::default().splits(&Shape::gemm(100, 37, 1000)),
            4
        );
        for dims in [(100, 37, 1000), (33, 17, 65), (1, 1, 1)] {
            let e = relative_error(cpu_split_k, dims);
            assert!(e > 0.0 && e < Precision::Fp16.tolerance(), "{dims:?}: {e}");
        }
    }
}
