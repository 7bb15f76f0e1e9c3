//! Rung 09: rung 08 with its tile shape as NVRTC defines, and the grid of shapes `harness tune`
//! sweeps. [`TileConfig::check`] holds the constraints `09_tuned.cu` asserts, so an invalid
//! combination is rejected before anything is compiled.

use kernel::{
    Bound, CpuPort, CudaPlan, Kernel, KernelInfo, Lineage, Precision, Role, Shape, Stage,
    Unsupported, Workload, cuda_source, gemm_dims,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Outputs per thread per sub-tile, fixed: the tiles are read as float4.
const TM: u32 = 4;
const TN: u32 = 4;

/// One tile shape of rung 09: block tile `bm x bn x bk`, warp tile `wm x wn` in `wniter`
/// sub-tiles across. Threads, sub-tiles down and launch bounds follow from these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TileConfig {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub wm: u32,
    pub wn: u32,
    pub wniter: u32,
}

impl Default for TileConfig {
    /// Rung 08's shape: 128x128x8 blocks of 2x4 warps of 64x32, 256 threads.
    fn default() -> Self {
        Self {
            bm: 128,
            bn: 128,
            bk: 8,
            wm: 64,
            wn: 32,
            wniter: 2,
        }
    }
}

impl fmt::Display for TileConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{} warp {}x{}/{} ({} threads)",
            self.bm,
            self.bn,
            self.bk,
            self.wm,
            self.wn,
            self.wniter,
            self.threads()
        )
    }
}

impl TileConfig {
    /// Threads per block: one warp per warp tile.
    pub fn threads(&self) -> u32 {
        (self.bm / self.wm.max(1)) * (self.bn / self.wn.max(1)) * 32
    }

    /// Sub-tiles down a warp tile: 32 lanes of `TM x TN` cover one sub-tile.
    pub fn wmiter(&self) -> u32 {
        (self.wm * self.wn) / (32 * TM * TN * self.wniter.max(1))
    }

    /// Outputs (accumulator registers) per thread.
    pub fn outputs_per_thread(&self) -> u32 {
        self.wm * self.wn / 32
    }

    /// `__launch_bounds__` blocks per SM: 2 when the registers a thread needs (accumulators,
    /// fragments, the tile in flight and some 32 for addresses) fit 64K / (2 x threads), else 1.
    pub fn min_blocks(&self) -> u32 {
        let loads = (self.bm + self.bn) * self.bk / (4 * self.threads().max(1));
        let need = self.outputs_per_thread() + (self.wmiter() + self.wniter) * 4 + 4 * loads + 32;
        if 65536 / (2 * self.threads().max(1)) >= need {
            2
        } else {
            1
        }
    }

    /// Static shared memory: two buffers of an A and a B tile.
    pub fn smem_bytes(&self) -> u32 {
        2 * self.bk * (self.bm + self.bn) * 4
    }

    /// The constraints `09_tuned.cu` asserts, plus the grid's own limit on accumulators.
    pub fn check(&self) -> Result<(), String> {
        let TileConfig {
            bm,
            bn,
            bk,
            wm,
            wn,
            wniter,
        } = *self;
        if [bm, bn, bk, wm, wn, wniter].contains(&0) {
            return Err("every parameter must be positive".into());
        }
        if bm % wm != 0 || bn % wn != 0 {
            return Err(format!(
                "warp tile {wm}x{wn} must divide block tile {bm}x{bn}"
            ));
        }
        let threads = self.threads();
        if !(64..=512).contains(&threads) {
            return Err(format!("{threads} threads: 2 to 16 warps per block"));
        }
        if (wm * wn) % (32 * TM * TN * wniter) != 0 {
            return Err(format!(
                "warp tile {wm}x{wn} is not a whole number of 32-lane sub-tiles with WNITER {wniter}"
            ));
        }
        let wmiter = self.wmiter();
        if wm % wmiter != 0 || wn % wniter != 0 {
            return Err(format!(
                "sub-tiles {wmiter}x{wniter} must divide the warp tile"
            ));
        }
        let (subm, subn) = (wm / wmiter, wn / wniter);
        if subm % TM != 0 || subn % TN != 0 || (subm / TM) * (subn / TN) != 32 {
            return Err(format!(
                "sub-tile {subm}x{subn} is not 32 lanes of {TM}x{TN}"
            ));
        }
        if bk % 4 != 0 {
            return Err(format!("BK {bk}: A tile rows are read as float4"));
        }
        if (bm * bk) % (4 * threads) != 0 || (bn * bk) % (4 * threads) != 0 {
            return Err(format!(
                "{bm}x{bk} and {bk}x{bn} tiles are not whole float4s per thread of {threads}"
            ));
        }
        if !threads.is_multiple_of(bn / 4) {
            return Err(format!(
                "{threads} threads do not load whole B rows of {bn}"
            ));
        }
        if self.smem_bytes() > 48 * 1024 {
            return Err(format!(
                "{} B of shared memory over 48 KB",
                self.smem_bytes()
            ));
        }
        if self.outputs_per_thread() > 128 {
            return Err(format!(
                "{} outputs per thread: more accumulators than registers allow without spills",
                self.outputs_per_thread()
            ));
        }
        Ok(())
    }

    /// The grid `harness tune` sweeps: block tiles of 64, 128 or 256 a side, BK 8 or 16, warp
    /// tiles 32x64, 64x32 or 64x64 (64 or 128 outputs a thread: fewer starve the FMA pipes of
    /// operands, more spill), 1 or 2 sub-tiles across, 128 or 256 threads; every combination
    /// that passes [`check`](Self::check), 52 in all. The default (rung 08's) comes first.
    pub fn grid() -> Vec<TileConfig> {
        let mut out = vec![TileConfig::default()];
        for bm in [64, 128, 256] {
            for bn in [64, 128, 256] {
                for bk in [8, 16] {
                    for wm in [32, 64] {
                        for wn in [32, 64] {
                            for wniter in [1, 2] {
                                let c = TileConfig {
                                    bm,
                                    bn,
                                    bk,
                                    wm,
                                    wn,
                                    wniter,
                                };
                                if c.check().is_ok()
                                    && wm * wn >= 2048
                                    && [128, 256].contains(&c.threads())
                                    && !out.contains(&c)
                                {
                                    out.push(c);
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// `09_tuned.cu` compiled for this shape.
    pub fn source(&self) -> kernel::CudaSource {
        cuda_source!("restrict-unroll", "09_tuned.cu")
            .define("BM", self.bm)
            .define("BN", self.bn)
            .define("BK", self.bk)
            .define("WM", self.wm)
            .define("WN", self.wn)
            .define("WNITER", self.wniter)
            .define("MINBLOCKS", self.min_blocks())
    }
}

/// `09_tuned.cu`: rung 08 with a tile shape per size, chosen by `harness tune` on the GPU that
/// runs it, else rung 08's.
#[derive(Debug, Clone, Default)]
pub struct GemmTuned {
    /// `(size, config)`: the configuration chosen at each tuned size (the cube root of
    /// M x N x K); empty: the default everywhere.
    choices: Vec<(usize, TileConfig)>,
}

impl GemmTuned {
    /// The configurations chosen per size; the nearest size's applies to a shape.
    pub fn with_choices(choices: Vec<(usize, TileConfig)>) -> Self {
        Self { choices }
    }

    /// One configuration at every size (what `harness tune` runs for each grid point).
    pub fn fixed(config: TileConfig) -> Self {
        Self {
            choices: vec![(1, config)],
        }
    }

    /// The configuration for `shape`: the one chosen at the nearest tuned size (by ratio),
    /// else the default.
    pub fn config_for(&self, shape: &Shape) -> TileConfig {
        self.choice_for(shape)
            .map_or_else(TileConfig::default, |c| c.1)
    }

    /// The `(size, config)` chosen nearest `shape`'s size, `None` when nothing was tuned.
    fn choice_for(&self, shape: &Shape) -> Option<(usize, TileConfig)> {
        let (m, n, k) = gemm_dims(shape);
        let size = ((m * n * k) as f64).cbrt().max(1.0);
        self.choices
            .iter()
            .min_by(|a, b| {
                let d = |s: usize| (size / s.max(1) as f64).ln().abs();
                d(a.0).total_cmp(&d(b.0))
            })
            .copied()
    }
}

impl Kernel for GemmTuned {
    fn lineage(&self) -> Option<Lineage> {
        Some(Lineage {
            parent: Some("gemm-double-buffer"),
            idea: "the tile shape as compile-time parameters, chosen per GPU and size by `harness tune`",
            bound: Some(Bound::Occupancy),
        })
    }

    fn info(&self) -> KernelInfo {
        let configs = match self.choices.as_slice() {
            [] => format!("default {}", TileConfig::default()),
            [(_, c)] => c.to_string(),
            many => {
                let each: Vec<String> = many.iter().map(|(s, c)| format!("{s}: {c}")).collect();
                format!("tuned per size, {}", each.join("; "))
            }
        };
        KernelInfo {
            id: "gemm-tuned".into(),
            workload: Workload::Gemm,
            stage: Stage::RestrictUnroll,
            precision: Precision::Fp32,
            role: Role::Rung,
            rung: 9,
            summary: format!("rung 08 with the tile shape `harness tune` chose: {configs}").into(),
        }
    }

    /// A row names the one configuration it ran, not every tuned size's.
    fn summary_at(&self, shape: &Shape) -> Option<String> {
        let config = match (self.choices.as_slice(), self.choice_for(shape)) {
            ([_], Some((_, c))) => c.to_string(),
            (_, Some((size, c))) => format!("{c} (tuned at size {size})"),
            (_, None) => format!("default {}", TileConfig::default()),
        };
        Some(format!(
            "rung 08 with the tile shape `harness tune` chose: {config}"
        ))
    }

    fn supports(&self, shape: &Shape) -> Result<(), Unsupported> {
        crate::needs_float4_rows(shape)
    }

    fn cuda(&self, shape: &Shape) -> Option<CudaPlan> {
        let c = self.config_for(shape);
        Some(crate::plan(
            c.source(),
            "gemm_tuned",
            shape,
            [c.bm as usize, c.bn as usize],
            [c.threads(), 1, 1],
        ))
    }

    fn cpu(&self) -> Option<CpuPort> {
        // Rung 08's port (07's): the tile shape is a GPU concern.
        Some(crate::port_warptile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_rung_08s_shape_and_valid() {
        let c = TileConfig::default();
        assert_eq!(c.check(), Ok(()));
        assert_eq!((c.threads(), c.wmiter(), c.min_blocks()), (256, 2, 2));
        assert_eq!(c.smem_bytes(), 16 * 1024);
    }

    #[test]
    fn the_grid_is_a_few_dozen_valid_distinct_shapes() {
        let g = TileConfig::grid();
        assert_eq!(g[0], TileConfig::default());
        assert_eq!(g.len(), 52);
        for c in &g {
            assert_eq!(c.check(), Ok(()), "{c}");
        }
        let mut d = g.clone();
        d.sort_by_key(|c| (c.bm, c.bn, c.bk, c.wm, c.wn, c.wniter));
        d.dedup();
        assert_eq!(d.len(), g.len());
    }

    #[test]
    fn invalid_shapes_are_rejected_with_the_constraint() {
        let bad = |f: fn(&mut TileConfig)| {
            let mut c = TileConfig::default();
            f(&mut c);
            c.check().unwrap_err()
        };
        assert!(bad(|c| c.wm = 48).contains("divide"));
        assert!(bad(|c| c.bk = 6).contains("float4"));
        assert!(bad(|c| c.wniter = 3).contains("sub-tiles"));
        assert!(bad(|c| c.bk = 64).contains("48 KB"));
        assert!(bad(|c| c.bn = 512).contains("threads"));
    }

    #[test]
    fn the_nearest_tuned_size_applies() {
        let small = TileConfig {
            bm: 64,
            bn: 64,
            bk: 8,
            wm: 32,
            wn: 32,
            wniter: 1,
        };
        let k = GemmTuned::with_choices(vec![(512, small), (4096, TileConfig::default())]);
        assert_eq!(k.config_for(&Shape::square_gemm(300)), small);
        assert_eq!(k.config_for(&Shape::square_gemm(1400)), small);
        assert_eq!(
            k.config_for(&Shape::square_gemm(1500)),
            TileConfig::default()
        );
        assert_eq!(
            k.config_for(&Shape::gemm(8192, 8192, 100)),
            TileConfig::default()
        );
        assert_eq!(
            GemmTuned::default().config_for(&Shape::square_gemm(64)),
            TileConfig::default()
        );
        assert!(
            k.info().summary.contains("512: 64x64x8"),
            "{}",
            k.info().summary
        );
        // A row names the configuration it ran, not every tuned size's.
        let at = |n| k.summary_at(&Shape::square_gemm(n)).unwrap();
        assert!(
            at(300).contains("64x64x8") && at(300).contains("size 512"),
            "{}",
            at(300)
        );
        assert!(!at(300).contains("128x128x8"), "{}", at(300));
        assert!(at(4096).contains("128x128x8") && !at(4096).contains("64x64x8"));
        let plan = k.cuda(&Shape::square_gemm(256)).unwrap();
        let l = plan.launches().next().unwrap();
        assert_eq!((l.block, l.grid), ([128, 1, 1], [4, 4, 1]));
        assert!(l.source.label().contains("BM=64"), "{}", l.source.label());
    }
}
