//! Cooperative groups in the simulator: kernels that `#include <cooperative_groups.h>` (and
//! `<cooperative_groups/reduce.h>`) run unmodified, on the simulator's stand-in header, with
//! the real API's semantics: block and tile ranks, shuffles that stay within their tile, votes,
//! `cg::reduce`, cluster groups over `barrier.cluster` and `mapa`, grid queries, and the grid's
//! barrier under a cooperative launch (without one, `grid.sync()` is an error). NVRTC
//! compiles the same sources against the real header, so that the stand-in accepts nothing the
//! real one rejects.

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::{PlanKernel, inputs, source_line};
use kernel::{Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Shape, Step};

/// A block reduction in f64: each warp-sized tile sums by `shfl_down`, the tiles' sums meet in
/// shared memory after `block.sync()`, and the first tile sums those. The inputs are
/// multiples of 2^-23 below 1 in magnitude, so every f64 sum of them is exact in any order.
const BLOCK_SUM: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void block_sum(const float *x, double *out, int n) {
    __shared__ double tile_sums[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    double s = 0.0;
    for (int i = blockIdx.x * block.size() + block.thread_rank(); i < n; i += gridDim.x * block.num_threads())
        s += x[i];
    for (int d = tile.size() / 2; d > 0; d /= 2) s += tile.shfl_down(s, d);
    if (tile.thread_rank() == 0) tile_sums[tile.meta_group_rank()] = s;
    block.sync();
    if (tile.meta_group_rank() == 0) {
        s = tile.thread_rank() < tile.meta_group_size() ? tile_sums[tile.thread_rank()] : 0.0;
        for (int d = tile.size() / 2; d > 0; d /= 2) s += tile.shfl_down(s, d);
        if (block.thread_rank() == 0) out[block.group_index().x] = s;
    }
}
"#;

/// Tiles of 8 and 16 (and 4 within 16) of a 64-thread block: what each thread reads, field by
/// field (`F` fields of one float per thread).
const TILES: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void tiles(const float *x, float *out) {
    cg::thread_block block = cg::this_thread_block();
    auto t8 = cg::tiled_partition<8>(block);
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(block);
    auto t4 = cg::tiled_partition<4>(t16);
    const unsigned n = gridDim.x * block.size();
    const unsigned i = blockIdx.x * block.size() + block.thread_rank();
    const float v = floorf(x[i] * 1000.0f);  // small integers: every sum below is exact
    float s8 = v, s16 = v;
    for (unsigned m = 1; m < t8.num_threads(); m <<= 1) s8 += t8.shfl_xor(s8, m);
    // Every other tile of 8 does one more warp operation than its neighbour, which the tile
    // of 16 then waits for.
    float last = 0.0f;
    if (t8.meta_group_rank() % 2 == 0) last = t8.shfl(v, 7);
    for (unsigned m = 1; m < t16.num_threads(); m <<= 1) s16 += t16.shfl_xor(s16, m);
    out[0 * n + i] = s8;
    out[1 * n + i] = t8.shfl_down(v, 1);
    out[2 * n + i] = t16.shfl_up(v, 3);
    out[3 * n + i] = t16.shfl(v, 5);
    out[4 * n + i] = t8.meta_group_rank() + 100.0f * t8.meta_group_size();
    out[5 * n + i] = t16.meta_group_rank() + 100.0f * t16.meta_group_size() + 10000.0f * t16.thread_rank();
    out[6 * n + i] = (float)t8.ballot(v > 0);
    out[7 * n + i] = t16.any(v > 900) + 2.0f * t16.all(v > 0);
    out[8 * n + i] = (float)t8.match_any((int)(v > 0));
    out[9 * n + i] = s16;
    out[10 * n + i] = t4.meta_group_rank() + 100.0f * t4.meta_group_size() + 10000.0f * t4.thread_rank();
    out[11 * n + i] = last;
    t8.sync();
    cg::sync(t16);
}
"#;

/// `cg::reduce` over warp-sized and half-warp tiles: integers with plus, greater, less and
/// bit_xor; floats with plus (the real header's shuffle-xor butterfly, which the test
/// replays in f32).
const REDUCE: &str = r#"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void reduce(const float *x, int *out) {
    cg::thread_block block = cg::this_thread_block();
    auto t32 = cg::tiled_partition<32>(block);
    auto t16 = cg::tiled_partition<16>(block);
    const unsigned n = block.size();
    const unsigned i = block.thread_rank();
    const int v = (int)floorf(x[i] * 1000000.0f);
    out[0 * n + i] = cg::reduce(t32, v, cg::plus<int>());
    out[1 * n + i] = cg::reduce(t32, v, cg::greater<int>());
    out[2 * n + i] = cg::reduce(t16, v, cg::less<int>());
    out[3 * n + i] = cg::reduce(t16, v, cg::bit_xor<int>());
    const float f = cg::reduce(t32, x[i], cg::plus<float>());
    out[4 * n + i] = __float_as_int(f);
}
"#;

/// Two-block clusters through the cluster API: each block fills its shared memory, the
/// cluster synchronizes, each thread reads its neighbour's element in the partner block
/// through `map_shared_rank`, and a split barrier keeps the partner's memory alive until all
/// have read it.
const CLUSTER: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void __cluster_dims__(2, 1, 1) cg_exchange(const float *x, float *out) {
    extern __shared__ float mine[];
    cg::cluster_group cluster = cg::this_cluster();
    cg::thread_block block = cg::this_thread_block();
    const unsigned t = block.thread_rank(), nt = block.size();
    const unsigned g = gridDim.x * nt;
    const unsigned rank = cluster.block_rank();
    mine[t] = x[blockIdx.x * nt + t];
    cluster.sync();
    const float *theirs = cluster.map_shared_rank(mine, rank ^ 1);
    out[blockIdx.x * nt + t] = theirs[(t + 1) % nt];
    out[g + blockIdx.x * nt + t] = (float)cluster.thread_rank() + 10000.0f * cluster.num_threads();
    if (t == 0)
        out[2 * g + blockIdx.x] = rank + 10.0f * cluster.num_blocks() + 100.0f * cluster.block_index().x +
                                  1000.0f * cluster.dim_blocks().x + 10000.0f * cluster.query_shared_rank(theirs);
    cluster.barrier_arrive();
    cluster.barrier_wait();
}
"#;

/// The grid's queries, and a grid-wide barrier.
const GRID: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void grid_queries(float *out) {
    cg::grid_group grid = cg::this_grid();
    const unsigned long long r = grid.thread_rank();
    out[r] = (float)grid.block_rank() + 100.0f * grid.num_blocks();
    out[grid.size() + r] = (float)r + 10000.0f * grid.is_valid();
}

extern "C" __global__ void grid_sync(float *out) {
    cg::grid_group grid = cg::this_grid();
    out[grid.thread_rank()] = 1.0f;
    grid.sync();
    out[grid.thread_rank()] = 2.0f;
}

// Three rounds over a cooperative grid: each thread adds what the thread at the mirrored rank
// (another block) wrote in the round before, through one grid.sync() and one split barrier
// (barrier_arrive, then barrier_wait) a round; is_valid() is true.
extern "C" __global__ void grid_rounds(const float *x, float *out) {
    cg::grid_group grid = cg::this_grid();
    const unsigned long long n = grid.size(), r = grid.thread_rank();
    float *a = out, *b = out + n;
    a[r] = x[r];
    for (int round = 0; round < 3; ++round) {
        grid.sync();
        b[r] = a[r] + 2.0f * a[n - 1 - r];
        auto token = grid.barrier_arrive();
        grid.barrier_wait(std::move(token));
        a[r] = b[r];
    }
    out[2 * n + r] = grid.is_valid();
}
"#;

/// Asynchronous copies into shared memory by a 64-thread block: cg::memcpy_async of 1000
/// floats whose addresses agree modulo 8 bytes only (8-byte copies, an unaligned head), then
/// of 64 aligned floats, completed one batch at a time by wait_prior<1> and wait; a warp
/// tile's copy by element counts; the pipeline primitives with zero-fill. A thread reading its
/// own copy before the wait that completes it sees the shared memory as the simulator left it
/// at the block's start (NaN).
const ASYNC_COPIES: &str = r#"
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_pipeline_primitives.h>
namespace cg = cooperative_groups;

// EARLY_READS: each thread reads its own copies before their waits, which the plain build
// shows as the bytes there before (the fill) and the instrumented one refuses.
#ifndef EARLY_READS
#define EARLY_READS 1
#endif
extern "C" __global__ void async_copies(const float *x, float *out) {
    __shared__ __align__(16) float a[1004];
    __shared__ __align__(16) float b[64];
    __shared__ __align__(16) float c[2][104];
    __shared__ __align__(16) float d[256];
    cg::thread_block block = cg::this_thread_block();
    const unsigned t = block.thread_rank();
    cg::memcpy_async(block, a + 1, x + 3, sizeof(float) * 1000);
    cg::memcpy_async(block, b, x, sizeof(float) * 64);
    cg::wait_prior<1>(block);
    for (unsigned i = t; i < 1000; i += block.size()) out[i] = a[1 + i];
    if (EARLY_READS && t < 16) out[1000 + t] = b[4 * t];  // thread t's own pending copy
    cg::wait(block);
    out[1064 + t] = b[t];
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    const unsigned w = tile.meta_group_rank();
    cg::memcpy_async(tile, c[w] + 2, 102, x + 7 + 100 * w, 100);
    cg::wait(tile);
    for (unsigned i = tile.thread_rank(); i < 100; i += tile.size()) out[1128 + 100 * w + i] = c[w][2 + i];
    __pipeline_memcpy_async(d + 4 * t, x + 4 * t, 16, 8);
    if (EARLY_READS) out[1328 + t] = d[4 * t];
    __pipeline_commit();
    __pipeline_wait_prior(0);
    for (int k = 0; k < 4; ++k) out[1392 + 4 * t + k] = d[4 * t + k];
}
"#;

/// Half of each warp returns before the tile's reduction, which then reads lanes that have
/// exited (an undefined value on a GPU).
const REDUCE_AFTER_EXIT: &str = r#"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void reduce_after_exit(const float *x, float *out, int n) {
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    if (tile.thread_rank() >= 16) return;
    out[threadIdx.x] = cg::reduce(tile, x[threadIdx.x], cg::plus<float>());  // the reduction
}
"#;

fn launch(code: &'static str, entry: &str, grid: [u32; 3], block: [u32; 3]) -> Launch {
    Launch {
        source: CudaSource::embedded("tests/cooperative_groups.cu", code),
        entry: entry.to_string().into(),
        grid,
        block,
        dynamic_smem: 0,
        args: vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)],
    }
}

/// Runs `l` with `n` random inputs in [-1, 1) (none zero) and an output of `out` floats (NaN
/// before the run); returns both.
fn run(
    dev: &SimDevice,
    l: Launch,
    n: usize,
    out: usize,
) -> Result<(Vec<f32>, Vec<f32>), DeviceError> {
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![Step::Kernel(l)],
        ..Default::default()
    };
    let shape = Shape::gemm(1, out, n);
    let data = inputs(&shape, 11);
    let x = data[0].clone();
    let k = PlanKernel::fp32(plan);
    let mut p = dev.prepare(&k, &shape, &data)?;
    p.run()?;
    Ok((x, p.output()?))
}

/// Tiles of 64 and 128 threads of a 256-thread block (as NVIDIA's reduction sample's
/// multi-warp kernel takes them, through block_tile_memory): ranks, cg::reduce and sync; and
/// sm_80's warp reductions of integers, every lane of the mask getting the result.
const MULTI_WARP: &str = r#"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void multi_warp(const float *x, float *out) {
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    auto t64 = cg::tiled_partition<64>(block);
    cg::thread_block_tile<128> t128 = cg::tiled_partition<128>(block);
    const unsigned t = block.thread_rank(), n = block.size();
    const int v = (int)floorf(x[t] * 1000.0f);  // small integers: every sum below is exact
    out[t] = __int_as_float(cg::reduce(t64, v, cg::plus<int>()));
    out[n + t] = __int_as_float(cg::reduce(t128, v, cg::greater<int>()));
    out[2 * n + t] = __int_as_float(t64.thread_rank() + 1000 * t64.meta_group_rank() + 100000 * t128.meta_group_size());
    // Lanes 0 to 15 of each warp: their sum, minimum and bits.
    if (t % 32 < 16) {
        out[3 * n + t] = __int_as_float(__reduce_add_sync(0xFFFFu, v));
        out[4 * n + t] = __int_as_float(__reduce_min_sync(0xFFFFu, v));
        out[5 * n + t] = __int_as_float((int)__reduce_or_sync(0xFFFFu, 1u << (t % 16)));
    }
    t128.sync();
}
"#;

/// The reduction of NVIDIA's cooperative-groups examples, which takes its group as a
/// `cg::thread_group`: given the 128-thread block, its warp tiles and its tiles of 16. Each
/// group's sum lands in `out` (1 + 4 + 8 of them).
const THREAD_GROUP: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ float reduce_sum(cg::thread_group g, float *temp, float val) {
    int lane = g.thread_rank();
    for (int i = g.size() / 2; i > 0; i /= 2) {
        temp[lane] = val;
        g.sync();
        if (lane < i) val += temp[lane + i];
        g.sync();
    }
    return val;
}

extern "C" __global__ void group_sums(const float *x, float *out) {
    __shared__ float temp[128];
    cg::thread_block block = cg::this_thread_block();
    const unsigned t = block.thread_rank();
    float s = reduce_sum(block, temp, x[t]);
    if (t == 0) out[0] = s;
    block.sync();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    s = reduce_sum(warp, temp + 32 * warp.meta_group_rank(), x[t]);
    if (warp.thread_rank() == 0) out[1 + warp.meta_group_rank()] = s;
    block.sync();
    cg::thread_group sixteen = cg::tiled_partition<16>(block);
    s = reduce_sum(sixteen, temp + 16 * (t / 16), x[t]);
    if (sixteen.thread_rank() == 0) out[5 + t / 16] = s;
}
"#;

#[test]
fn a_thread_group_made_from_the_block_or_a_tile_reduces_over_it() {
    let l = launch(THREAD_GROUP, "group_sums", [1, 1, 1], [128, 1, 1]);
    let (x, out) = run(&sim(), l, 128, 13).unwrap();
    let sum = |from: usize, n: usize| x[from..from + n].iter().map(|&v| f64::from(v)).sum::<f64>();
    let want: Vec<f64> = std::iter::once(sum(0, 128))
        .chain((0..4).map(|w| sum(32 * w, 32)))
        .chain((0..8).map(|t| sum(16 * t, 16)))
        .collect();
    for (i, (&got, want)) in out.iter().zip(&want).enumerate() {
        assert!(
            (f64::from(got) - want).abs() < 1e-5,
            "group {i}: {got} against {want}"
        );
    }
}

fn sim() -> SimDevice {
    SimDevice::new().expect("the simulator needs a host C++ compiler")
}

/// The 32-bit words of an output read back as another type of that width.
fn ints(out: &[f32]) -> Vec<i32> {
    out.iter().map(|v| v.to_bits() as i32).collect()
}

#[test]
fn a_block_reduction_over_warp_tiles_sums_exactly() {
    // 10007 elements (prime) over 5 blocks of 192 threads (6 tiles): the grid-stride loop
    // leaves some threads one element more than others.
    let (n, blocks, threads) = (10_007usize, 5u32, 192u32);
    for seed in 0..3 {
        let mut l = launch(BLOCK_SUM, "block_sum", [blocks, 1, 1], [threads, 1, 1]);
        l.args.push(Arg::I32(n as i32));
        let (x, out) = run(&sim().with_seed(seed), l, n, 2 * blocks as usize)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(x.iter().all(|&v| v != 0.0));
        let stride = (blocks * threads) as usize;
        let mut total = 0.0f64;
        for b in 0..blocks as usize {
            let want: f64 = (0..threads as usize)
                .flat_map(|t| (b * threads as usize + t..n).step_by(stride))
                .map(|i| f64::from(x[i]))
                .sum();
            let lo = u64::from(out[2 * b].to_bits());
            let hi = u64::from(out[2 * b + 1].to_bits());
            let got = f64::from_bits(lo | hi << 32);
            assert_eq!(got, want, "seed {seed}: block {b}");
            total += got;
        }
        let all: f64 = x.iter().map(|&v| f64::from(v)).sum();
        assert_eq!(total, all, "seed {seed}");
    }
}

#[test]
fn tiles_of_8_and_16_shuffle_and_vote_within_their_tile() {
    let (blocks, threads) = (2usize, 64usize);
    let n = blocks * threads;
    const FIELDS: usize = 12;
    for seed in 0..4 {
        let l = launch(
            TILES,
            "tiles",
            [blocks as u32, 1, 1],
            [threads as u32, 1, 1],
        );
        let (x, out) = run(&sim().with_seed(seed), l, n, FIELDS * n)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let v: Vec<f32> = x.iter().map(|x| (x * 1000.0).floor()).collect();
        let tile_sum = |i: usize, size: usize| -> f32 { v[i / size * size..][..size].iter().sum() };
        for i in 0..n {
            let t = i % threads; // rank in the block
            let field = |f: usize| out[f * n + i];
            let what = |f: usize| format!("seed {seed}: thread {i}, field {f}");
            assert_eq!(field(0), tile_sum(i, 8), "{}", what(0));
            // shfl_down past the tile's end and shfl_up before its start: the thread's own value.
            let down = if t % 8 == 7 { v[i] } else { v[i + 1] };
            assert_eq!(field(1), down, "{}", what(1));
            let up = if t % 16 < 3 { v[i] } else { v[i - 3] };
            assert_eq!(field(2), up, "{}", what(2));
            assert_eq!(field(3), v[i / 16 * 16 + 5], "{}", what(3));
            assert_eq!(field(4), (t / 8) as f32 + 100.0 * 8.0, "{}", what(4));
            let want = (t / 16) as f32 + 100.0 * 4.0 + 10000.0 * (t % 16) as f32;
            assert_eq!(field(5), want, "{}", what(5));
            let tile8 = &v[i / 8 * 8..][..8];
            let positive = tile8
                .iter()
                .enumerate()
                .filter(|&(_, &w)| w > 0.0)
                .fold(0u32, |m, (r, _)| m | 1 << r);
            assert_eq!(field(6), positive as f32, "{}", what(6));
            let tile16 = &v[i / 16 * 16..][..16];
            let any = tile16.iter().any(|&w| w > 900.0);
            let all = tile16.iter().all(|&w| w > 0.0);
            assert_eq!(
                field(7),
                f32::from(any) + 2.0 * f32::from(all),
                "{}",
                what(7)
            );
            let same = if v[i] > 0.0 {
                positive
            } else {
                !positive & 0xFF
            };
            assert_eq!(field(8), same as f32, "{}", what(8));
            assert_eq!(field(9), tile_sum(i, 16), "{}", what(9));
            let want = ((t % 16) / 4) as f32 + 100.0 * 4.0 + 10000.0 * (t % 4) as f32;
            assert_eq!(field(10), want, "{}", what(10));
            let last = if (t / 8) % 2 == 0 {
                v[i / 8 * 8 + 7]
            } else {
                0.0
            };
            assert_eq!(field(11), last, "{}", what(11));
        }
    }
}

#[test]
fn cg_reduce_with_plus_greater_less_and_bit_xor() {
    // 96 threads: three warp tiles, six half-warp tiles.
    let threads = 96usize;
    for seed in 0..3 {
        let l = launch(REDUCE, "reduce", [1, 1, 1], [threads as u32, 1, 1]);
        let (x, out) = run(&sim().with_seed(seed), l, threads, 5 * threads)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let got = ints(&out);
        let v: Vec<i32> = x.iter().map(|x| (x * 1_000_000.0).floor() as i32).collect();
        for i in 0..threads {
            let what = |f: usize| format!("seed {seed}: thread {i}, field {f}");
            let w32 = &v[i / 32 * 32..][..32];
            let w16 = &v[i / 16 * 16..][..16];
            assert_eq!(got[i], w32.iter().sum::<i32>(), "{}", what(0));
            assert_eq!(got[threads + i], *w32.iter().max().unwrap(), "{}", what(1));
            assert_eq!(
                got[2 * threads + i],
                *w16.iter().min().unwrap(),
                "{}",
                what(2)
            );
            let xor = w16.iter().fold(0, |a, b| a ^ b);
            assert_eq!(got[3 * threads + i], xor, "{}", what(3));
            // The butterfly, as the real header's coalesced_reduce runs it.
            let mut f: Vec<f32> = x[i / 32 * 32..][..32].to_vec();
            let mut m = 16;
            while m > 0 {
                f = (0..32).map(|l| f[l] + f[l ^ m]).collect();
                m /= 2;
            }
            assert_eq!(
                f32::from_bits(got[4 * threads + i] as u32),
                f[i % 32],
                "{}",
                what(4)
            );
        }
    }
}

#[test]
fn tiles_of_more_than_a_warp_and_warp_reductions_of_integers() {
    let threads = 256usize;
    for seed in 0..3 {
        let l = launch(MULTI_WARP, "multi_warp", [1, 1, 1], [threads as u32, 1, 1]);
        let (x, out) = run(&sim().with_seed(seed), l, threads, 6 * threads)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let got = ints(&out);
        let v: Vec<i32> = x.iter().map(|x| (x * 1000.0).floor() as i32).collect();
        for t in 0..threads {
            let what = |f: usize| format!("seed {seed}: thread {t}, field {f}");
            assert_eq!(
                got[t],
                v[t / 64 * 64..][..64].iter().sum::<i32>(),
                "{}",
                what(0)
            );
            let most = *v[t / 128 * 128..][..128].iter().max().unwrap();
            assert_eq!(got[threads + t], most, "{}", what(1));
            let ranks = (t % 64 + 1000 * (t / 64) + 100_000 * 2) as i32;
            assert_eq!(got[2 * threads + t], ranks, "{}", what(2));
            let half = &v[t / 32 * 32..][..16];
            if t % 32 < 16 {
                assert_eq!(
                    got[3 * threads + t],
                    half.iter().sum::<i32>(),
                    "{}",
                    what(3)
                );
                assert_eq!(
                    got[4 * threads + t],
                    *half.iter().min().unwrap(),
                    "{}",
                    what(4)
                );
                assert_eq!(got[5 * threads + t], 0xFFFF, "{}", what(5));
            } else {
                assert!(out[3 * threads + t].is_nan(), "{}", what(3));
            }
        }
    }
}

/// A failure inside the stand-in header's shuffles names the kernel's line that called them,
/// not the header's.
#[test]
fn a_reduction_reading_exited_lanes_names_the_kernels_line() {
    let mut l = launch(
        REDUCE_AFTER_EXIT,
        "reduce_after_exit",
        [1, 1, 1],
        [32, 1, 1],
    );
    l.args.push(Arg::I32(32));
    let msg = match run(&sim(), l, 32, 32) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("the reduction over exited lanes ran"),
    };
    let line = source_line(REDUCE_AFTER_EXIT, "// the reduction");
    assert!(
        msg.contains(", which has exited")
            && msg.contains(&format!(
                "; this thread's access is at tests/cooperative_groups.cu:{line} ("
            )),
        "{msg}"
    );
}

#[test]
fn the_blocks_of_a_cluster_exchange_shared_memory_through_map_shared_rank() {
    let (blocks, threads) = (4usize, 64usize);
    let g = blocks * threads;
    for seed in 0..6 {
        let mut l = launch(
            CLUSTER,
            "cg_exchange",
            [blocks as u32, 1, 1],
            [threads as u32, 1, 1],
        );
        l.dynamic_smem = (threads * 4) as u32;
        let (x, out) = run(&sim().with_seed(seed), l, g, 2 * g + blocks)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for b in 0..blocks {
            let rank = b % 2;
            for t in 0..threads {
                let want = x[(b ^ 1) * threads + (t + 1) % threads];
                assert_eq!(
                    out[b * threads + t],
                    want,
                    "seed {seed}: block {b} thread {t}"
                );
                let want = (rank * threads + t) as f32 + 10000.0 * (2 * threads) as f32;
                assert_eq!(
                    out[g + b * threads + t],
                    want,
                    "seed {seed}: block {b} thread {t}'s rank"
                );
            }
            let want = rank as f32
                + 10.0 * 2.0
                + 100.0 * rank as f32
                + 1000.0 * 2.0
                + 10000.0 * (rank ^ 1) as f32;
            assert_eq!(
                out[2 * g + b],
                want,
                "seed {seed}: block {b}'s cluster queries"
            );
        }
    }
}

#[test]
fn the_grid_group_ranks_blocks_and_threads_x_fastest() {
    let (grid, block) = ([3u32, 2, 1], [32u32, 2, 1]);
    let mut l = launch(GRID, "grid_queries", grid, block);
    l.args = vec![Arg::Ptr(Buf::Output)];
    let (_, out) = run(&sim(), l, 1, 2 * 384).unwrap_or_else(|e| panic!("{e}"));
    for r in 0..384usize {
        assert_eq!(out[r], (r / 64) as f32 + 100.0 * 6.0, "thread {r}'s block");
        // is_valid() is false: no cooperative launch.
        assert_eq!(out[384 + r], r as f32, "thread {r}'s rank");
    }
}

#[test]
fn a_grid_sync_without_a_cooperative_launch_is_an_error_not_a_hang() {
    let mut l = launch(GRID, "grid_sync", [2, 1, 1], [32, 1, 1]);
    l.args = vec![Arg::Ptr(Buf::Output)];
    let msg = match run(&sim(), l, 1, 64) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("grid.sync() ran"),
    };
    assert!(
        msg.contains(
            "grid_sync: cooperative_groups::grid_group::sync() needs a cooperative \
             launch"
        ),
        "{msg}"
    );
}

/// Under a cooperative launch the grid's barrier orders every block's writes before every
/// block's reads, round after round, whichever order the simulator starts the blocks in, and
/// the race checker of global memory sees the ordering too.
#[test]
fn a_cooperative_launch_synchronizes_the_grid() {
    let (blocks, threads) = (12u32, 48u32);
    let n = (blocks * threads) as usize;
    for dev in [sim().with_seed(3), sim().with_seed(4).instrumented()] {
        let plan = CudaPlan {
            inputs: vec![Dtype::F32; 2],
            steps: vec![Step::Kernel(launch(
                GRID,
                "grid_rounds",
                [blocks, 1, 1],
                [threads, 1, 1],
            ))],
            cooperative: vec!["grid_rounds".into()],
            ..Default::default()
        };
        let shape = Shape::gemm(1, 3 * n, n);
        let data = inputs(&shape, 5);
        let k = PlanKernel::fp32(plan);
        let mut p = dev
            .prepare(&k, &shape, &data)
            .unwrap_or_else(|e| panic!("{e}"));
        p.run().unwrap_or_else(|e| panic!("{e}"));
        let out = p.output().unwrap();
        let mut a: Vec<f64> = data[0].iter().map(|&v| f64::from(v)).collect();
        for _ in 0..3 {
            a = (0..n).map(|r| a[r] + 2.0 * a[n - 1 - r]).collect();
        }
        for r in 0..n {
            assert!(
                (f64::from(out[r]) - a[r]).abs() <= 1e-5 * a[r].abs().max(1.0),
                "thread {r}: {} against {}",
                out[r],
                a[r]
            );
            assert_eq!(out[2 * n + r], 1.0, "is_valid() of thread {r}");
        }
    }
}

#[test]
fn nvrtc_compiles_the_cooperative_groups_kernels_for_sm90() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    for (name, code, entries) in [
        ("block_sum", BLOCK_SUM, 1),
        ("tiles", TILES, 1),
        ("reduce", REDUCE, 1),
        ("cluster", CLUSTER, 1),
        ("grid", GRID, 3),
        ("async_copies", ASYNC_COPIES, 1),
        ("multi_warp", MULTI_WARP, 1),
        ("thread_group", THREAD_GROUP, 1),
    ] {
        let src = CudaSource::embedded("tests/cooperative_groups.cu", code);
        let c = nvrtc::compile(&src, "sm_90").unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(c.resources.len(), entries, "{name}: {:?}", c.resources);
    }
}

#[test]
fn memcpy_async_and_the_pipeline_primitives_land_at_their_waits() {
    let l = launch(ASYNC_COPIES, "async_copies", [1, 1, 1], [64, 1, 1]);
    let (x, out) = run(&sim(), l.clone(), 1024, 1648).unwrap();
    // Instrumented, a read of a copy before its wait fails; without those reads the race
    // checkers find nothing: every read of another thread's copy follows its wait and the
    // group's sync.
    let early = run(&sim().instrumented(), l.clone(), 1024, 1648)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        early.contains("cp.async not landed: this thread reads __shared__ 'b' (in async_copies)")
            && early.contains("where a cp.async issued by this thread has not landed yet"),
        "{early}"
    );
    let late = Launch {
        source: l.source.clone().define("EARLY_READS", 0),
        ..l
    };
    let checked = run(&sim().instrumented(), late, 1024, 1648).unwrap().1;
    let early_outputs = |i: usize| (1000..1016).contains(&i) || (1328..1392).contains(&i);
    for (i, (c, o)) in checked.iter().zip(&out).enumerate() {
        if early_outputs(i) {
            assert!(c.is_nan() && o.is_nan(), "out[{i}]: {c} and {o}");
        } else {
            assert_eq!(c.to_bits(), o.to_bits(), "out[{i}]");
        }
    }
    assert_eq!(
        &out[..1000],
        &x[3..1003],
        "wait_prior<1> completes the first batch"
    );
    assert!(
        out[1000..1016].iter().all(|v| v.is_nan()),
        "the second batch is still pending: {:?}",
        &out[1000..1016]
    );
    assert_eq!(&out[1064..1128], &x[..64], "wait completes it");
    for w in 0..2 {
        let got = &out[1128 + 100 * w..1228 + 100 * w];
        assert_eq!(got, &x[7 + 100 * w..107 + 100 * w], "tile {w}");
    }
    assert!(
        out[1328..1392].iter().all(|v| v.is_nan()),
        "before the commit and wait"
    );
    for t in 0..64 {
        let got = &out[1392 + 4 * t..1396 + 4 * t];
        assert_eq!(
            got,
            &[x[4 * t], x[4 * t + 1], 0.0, 0.0],
            "thread {t}: zfill 8"
        );
    }
}
