//! Theoretical occupancy from the per-SM limits (shared/HARDWARE.md): resident blocks per SM is
//! the smallest of the block, thread, register and shared-memory limits.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmLimits {
    pub regs_per_sm: u32,
    pub max_threads: u32,
    pub max_blocks: u32,
    pub max_warps: u32,
    pub smem_per_sm: u32,
    pub smem_per_block: u32,
    pub smem_reserved_per_block: u32,
}

/// Limits of an architecture by compute capability (`(8, 0)`, `(9, 0)`); `None` if unknown.
pub fn limits(cc: (u32, u32)) -> Option<SmLimits> {
    let kb = 1024;
    let l = |max_threads, max_blocks, smem_sm, smem_block| SmLimits {
        regs_per_sm: 65536,
        max_threads,
        max_blocks,
        max_warps: max_threads / 32,
        smem_per_sm: smem_sm * kb,
        smem_per_block: smem_block * kb,
        smem_reserved_per_block: kb,
    };
    Some(match cc {
        (8, 0) => l(2048, 32, 164, 163),
        (8, 6) => l(1536, 16, 100, 99),
        (8, 9) => l(1536, 24, 100, 99),
        (9, 0) => l(2048, 32, 228, 227),
        _ => return None,
    })
}

/// Parses `sm_90` / `sm_90a` / `compute_80` into a compute capability.
pub fn parse_arch(arch: &str) -> Option<(u32, u32)> {
    let digits: String = arch
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: u32 = digits.parse().ok()?;
    Some((n / 10, n % 10))
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Occupancy {
    pub blocks_per_sm: u32,
    pub warps_per_sm: u32,
    /// Resident warps over the SM's maximum, 0..=1.
    pub fraction: f64,
    /// Which limit binds: "blocks", "threads", "registers" or "shared memory".
    pub limiter: &'static str,
}

/// Theoretical occupancy of a launch with `threads` per block, `regs` registers per thread and
/// `smem` bytes of shared memory per block (static plus dynamic).
pub fn occupancy(lim: &SmLimits, threads: u32, regs: u32, smem: u32) -> Occupancy {
    let warps_per_block = threads.div_ceil(32).max(1);
    // Registers are allocated per warp in units of 256. Products in 64 bits: no block size
    // or register count wraps a divisor to zero.
    let regs_per_warp = (u64::from(regs.max(1)) * 32).div_ceil(256) * 256;
    let per_block = |total: u32, each: u64| (u64::from(total) / each.max(1)) as u32;
    let by_regs = per_block(lim.regs_per_sm, regs_per_warp) / warps_per_block;
    let by_smem = per_block(
        lim.smem_per_sm,
        u64::from(smem) + u64::from(lim.smem_reserved_per_block),
    );
    let by_threads = per_block(lim.max_threads, u64::from(warps_per_block) * 32);
    let candidates = [
        (lim.max_blocks, "blocks"),
        (by_threads, "threads"),
        (by_regs, "registers"),
        (
            if smem > lim.smem_per_block {
                0
            } else {
                by_smem
            },
            "shared memory",
        ),
    ];
    let (blocks, limiter) = candidates
        .into_iter()
        .min_by_key(|(b, _)| *b)
        .expect("non-empty");
    let warps = blocks * warps_per_block;
    Occupancy {
        blocks_per_sm: blocks,
        warps_per_sm: warps,
        fraction: f64::from(warps) / f64::from(lim.max_warps),
        limiter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_matches_hand_calculation() {
        let h100 = limits((9, 0)).unwrap();
        // 256 threads, 32 regs: 8 blocks by threads, 8 by registers -> 64 warps, full.
        let o = occupancy(&h100, 256, 32, 0);
        assert_eq!((o.blocks_per_sm, o.fraction), (8, 1.0));
        // 128 regs/thread: 4096 per warp -> 16 warps -> 2 blocks of 8 warps.
        let o = occupancy(&h100, 256, 128, 0);
        assert_eq!((o.blocks_per_sm, o.limiter), (2, "registers"));
        assert_eq!(o.fraction, 0.25);
        // 100 KB of shared memory: 228 / 101 -> 2 blocks.
        let o = occupancy(&h100, 128, 32, 100 * 1024);
        assert_eq!((o.blocks_per_sm, o.limiter), (2, "shared memory"));
        // More shared memory than a block may have: cannot launch.
        assert_eq!(occupancy(&h100, 128, 32, 300 * 1024).blocks_per_sm, 0);
        // Sizes no launch has: no block fits, and no divisor wraps to zero.
        assert_eq!(occupancy(&h100, u32::MAX, 32, 0).blocks_per_sm, 0);
        assert_eq!(occupancy(&h100, 128, u32::MAX, 0).blocks_per_sm, 0);
        assert_eq!(occupancy(&h100, 128, 32, u32::MAX - 100).blocks_per_sm, 0);
        assert_eq!(parse_arch("sm_90a"), Some((9, 0)));
        assert_eq!(parse_arch("sm_80"), Some((8, 0)));
    }
}
