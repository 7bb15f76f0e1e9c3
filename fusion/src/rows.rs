//! What the row-wise rungs (layer normalization, softmax) share: the 32 "lanes" of a warp as
//! the CPU ports mirror them, and the launch geometry of one thread or one warp per row.

use kernel::div_ceil;

/// Lanes of a warp: the warp-per-row rungs split a row over this many threads.
pub const LANES: usize = 32;
/// Threads per block of the thread-per-row rungs (128 rows per block).
pub const ROW_BLOCK: usize = 128;
/// Threads per block of the warp-per-row rungs (8 warps, 8 rows per block).
pub const WARP_BLOCK: usize = 256;
/// Rows per rayon task of the CPU ports: large enough to amortize the task, small enough to
/// balance two cores on the small CPU shapes.
pub const ROWS_PER_TASK: usize = 16;

/// Grid and block of a launch with one thread per row.
pub fn thread_per_row(m: usize) -> ([u32; 3], [u32; 3]) {
    ([div_ceil(m, ROW_BLOCK), 1, 1], [ROW_BLOCK as u32, 1, 1])
}

/// Grid and block of a launch with one warp per row.
pub fn warp_per_row(m: usize) -> ([u32; 3], [u32; 3]) {
    (
        [div_ceil(m, WARP_BLOCK / LANES), 1, 1],
        [WARP_BLOCK as u32, 1, 1],
    )
}

/// The butterfly of `__shfl_xor_sync` with offsets 16, 8, 4, 2, 1: after it every lane holds
/// `combine` of all 32 values, combined in the order the GPU combines them.
pub fn butterfly<T: Copy>(lanes: &mut [T; LANES], combine: impl Fn(T, T) -> T) {
    let mut offset = LANES / 2;
    while offset > 0 {
        let before = *lanes;
        for (l, v) in lanes.iter_mut().enumerate() {
            *v = combine(before[l], before[l ^ offset]);
        }
        offset /= 2;
    }
}

/// The sum of `row` as a warp computes it: lane l adds elements l, l + 32, ... in order, then
/// the butterfly adds the 32 partial sums.
pub fn warp_sum(row: impl Iterator<Item = f32>) -> f32 {
    let mut lanes = [0.0f32; LANES];
    for (j, v) in row.enumerate() {
        lanes[j % LANES] += v;
    }
    butterfly(&mut lanes, |a, b| a + b);
    lanes[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_butterfly_leaves_the_total_in_every_lane() {
        let mut lanes: [f32; LANES] = std::array::from_fn(|l| l as f32);
        butterfly(&mut lanes, |a, b| a + b);
        assert!(lanes.iter().all(|&v| v == 496.0), "{lanes:?}");
        assert_eq!(warp_sum((1..=100).map(|v| v as f32)), 5050.0);
        assert_eq!(warp_sum([2.5f32].into_iter()), 2.5);
    }

    #[test]
    fn geometry_covers_every_row() {
        for m in [1, 7, 8, 9, 128, 129, 8192] {
            let (g, b) = thread_per_row(m);
            assert!(
                g[0] as usize * b[0] as usize >= m && (g[0] as usize - 1) * (b[0] as usize) < m
            );
            let (g, b) = warp_per_row(m);
            let rows = b[0] as usize / LANES;
            assert!(g[0] as usize * rows >= m && (g[0] as usize - 1) * rows < m);
        }
    }
}
