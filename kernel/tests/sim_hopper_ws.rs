//! What warp-specialized Hopper kernels use beyond a TMA + wgmma loop (fast.cu's later
//! kernels, CUTLASS's epilogues), in the simulator: tensor maps of 3 dimensions (a row of K
//! elements split into planes of 64, so that one box spans several 128-byte swizzle rows), TMA
//! stores of a box back to global memory in bulk groups and reductions into it
//! (`cp.reduce.async.bulk`), named barriers between warpgroups
//! (`bar.sync id, count`, `bar.arrive`), plain bulk copies, distributed shared memory,
//! `%clusterid`, `stmatrix` and `elect.sync`. Each check is against the PTX ISA's
//! definition: the swizzle of 5.5.7 written out here, the element a box coordinate names, the
//! elements outside the tensor (zeros read, nothing written).

use kernel::cuda::nvrtc;
use kernel::sim::SimDevice;
use kernel::testing::PlanKernel;
use kernel::{
    Arg, Buf, CudaPlan, CudaSource, DeviceError, Dtype, Executor, Launch, Shape, Step, TensorMap,
    TmaSwizzle,
};

const KERNELS: &str = r#"
#ifndef KERNEL_LAB_SIM
struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };  // cuda.h's, for NVRTC
#endif
typedef unsigned u32;
typedef unsigned long long u64;
__device__ __forceinline__ u32 smem(const void *p) { return (u32)__cvta_generic_to_shared(p); }

// The 128-byte swizzle (PTX ISA 5.5.7): 16-byte chunk j of 128-byte line i moves to j ^ (i % 8).
__device__ __forceinline__ u32 swz(u32 byte) { return byte ^ (((byte >> 7) & 7) << 4); }

// A box of 32 x 8 x 2 floats (columns, rows, planes) at coordinates (0, 36, 1) of a 3-D map;
// each thread reads elements where the swizzle put them and writes them in box order.
__device__ void load_3d_into(const CUtensorMap &map, float *box, u64 &bar, float *out) {
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)));
        asm volatile("fence.mbarrier_init.release.cluster;");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&bar)), "r"(2 * 8 * 32 * 4));
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4}], [%5];"
                     ::"r"(smem(box)), "l"((u64)&map), "n"(0), "r"(36), "r"(1), "r"(smem(&bar)) : "memory");
    }
    asm volatile("{\n.reg .pred P1;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], 0;\n"
                 "@!P1 bra.uni WAIT;\n}\n" ::"r"(smem(&bar)));
    const char *bytes = (const char *)box;
    for (int i = threadIdx.x; i < 2 * 8 * 32; i += blockDim.x) out[i] = *(const float *)(bytes + swz(4 * i));
}
extern "C" __global__ void load_3d(const __grid_constant__ CUtensorMap map, float *out) {
    __shared__ __align__(1024) float box[2 * 8 * 32];
    __shared__ __align__(8) u64 bar;
    load_3d_into(map, box, bar, out);
}
// The tile declared 128-byte aligned, as public kernels often declare swizzled tiles: it is
// the first static variable, which a GPU's compiler packs at the start of shared memory, on a
// 1024-byte boundary.
extern "C" __global__ void load_3d_first_tile(const __grid_constant__ CUtensorMap map, float *out) {
    __shared__ __align__(128) float box[2 * 8 * 32];
    __shared__ __align__(8) u64 bar;
    load_3d_into(map, box, bar, out);
}

// The reverse: threads write a[i] where the swizzle puts box element i, hand the box over with
// a fence and a named barrier, and thread 0 stores it at (0, 36, 1) of a 3-D map of C.
extern "C" __global__ void store_3d(const __grid_constant__ CUtensorMap map, const float *a) {
    __shared__ __align__(1024) float box[2 * 8 * 32];
    char *bytes = (char *)box;
    for (int i = threadIdx.x; i < 2 * 8 * 32; i += blockDim.x) *(float *)(bytes + swz(4 * i)) = a[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 1, 64;" ::: "memory");
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];"
                     ::"l"((u64)&map), "n"(0), "r"(36), "r"(1), "r"(smem(box)) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}

// Plain bulk copies: thread 0 brings 512 bytes (128 floats) of A from element 96 into shared
// memory on an mbarrier, and after the wait stores them to C at element 200.
extern "C" __global__ void bulk_copies(const float *a, float *c) {
    __shared__ __align__(128) float buf[128];
    __shared__ __align__(8) u64 bar;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)));
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 512;" ::"r"(smem(&bar)));
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 512, [%2];"
                     ::"r"(smem(buf)), "l"(a + 96), "r"(smem(&bar)) : "memory");
        asm volatile("{\n.reg .pred P1;\nW:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], 0;\n"
                     "@!P1 bra.uni W;\n}\n" ::"r"(smem(&bar)));
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 512;"
                     ::"l"(c + 200), "r"(smem(buf)) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

// A store whose buffer another thread rewrites before the issuing thread has waited for it
// (`wait`: thread 0 waits after the rewrite; otherwise it never waits and the block's end
// completes the store). `fence`: whether the writers fence before the store.
template <bool WAIT, bool FENCE>
__device__ void store_then_rewrite(const CUtensorMap &map, const float *a) {
    __shared__ __align__(1024) float box[2 * 8 * 32];
    for (int i = threadIdx.x; i < 2 * 8 * 32; i += blockDim.x) box[i] = a[i];
    if (FENCE) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 1, 64;" ::: "memory");
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                     ::"l"((u64)&map), "r"(0), "r"(0), "r"(0), "r"(smem(box)) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
    }
    // Thread 0 has issued the store: the next tile's results go into the same buffer.
    asm volatile("bar.sync 2, 64;" ::: "memory");
    if (threadIdx.x == 37) box[100] = -1.0f;
    asm volatile("bar.sync 3, 64;" ::: "memory");
    if (WAIT && threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
extern "C" __global__ void rewrite_before_wait(const __grid_constant__ CUtensorMap map, const float *a) {
    store_then_rewrite<true, true>(map, a);
}
extern "C" __global__ void rewrite_never_waited(const __grid_constant__ CUtensorMap map, const float *a) {
    store_then_rewrite<false, true>(map, a);
}
// FENCE 0: no thread fences. 1: the issuing thread fences after the barrier, which covers the
// writes the barrier showed it (a fence is cumulative). 2: it fences before the barrier, which
// covers its own writes only.
template <int FENCE>
__device__ void store_fenced(const CUtensorMap &map, const float *a) {
    __shared__ __align__(1024) float box[2 * 8 * 32];
    for (int i = threadIdx.x; i < 2 * 8 * 32; i += blockDim.x) box[i] = a[i];
    if (FENCE == 2 && threadIdx.x == 0) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 1, 64;" ::: "memory");
    if (threadIdx.x == 0) {
        if (FENCE == 1) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                     ::"l"((u64)&map), "r"(0), "r"(0), "r"(0), "r"(smem(box)) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
extern "C" __global__ void store_unfenced(const __grid_constant__ CUtensorMap map, const float *a) {
    store_fenced<0>(map, a);
}
extern "C" __global__ void store_fenced_by_issuer(const __grid_constant__ CUtensorMap map, const float *a) {
    store_fenced<1>(map, a);
}
extern "C" __global__ void store_fenced_too_early(const __grid_constant__ CUtensorMap map, const float *a) {
    store_fenced<2>(map, a);
}

// Warp-specialized hand-over with named barriers, as producer and consumer warpgroups do it:
// warp 0 fills a buffer and signals barrier 5 with bar.arrive (no wait); warps 1 and 2 wait
// there (bar.sync 5, 96) and then use it; warp 3 takes no part, and syncs with warp 0 alone on
// barrier 6 (bar.sync 6, 64). Then out[t] for the 96 participants, and warp 3 writes what warp
// 0 left in `late`.
extern "C" __global__ void named_handover(float *out) {
    __shared__ float buf[64];
    __shared__ float late;
    const int t = threadIdx.x, warp = t / 32;
    if (warp == 0) {
        buf[t] = t;
        buf[t + 32] = t + 32;
        asm volatile("bar.arrive 5, 96;" ::: "memory");
        if (t == 0) late = 7.0f;
        asm volatile("barrier.sync.aligned 6, 64;" ::: "memory");
    } else if (warp < 3) {
        asm volatile("bar.cta.sync 5, 96;" ::: "memory");
        out[t - 32] = buf[t - 32];
    } else {
        asm volatile("bar.sync 6, 64;" ::: "memory");
        out[64 + t - 96] = late;
    }
}

// stmatrix x4 of one warp: lane l's register i holds the codes 1000 i + 2 l (low half) and
// 1000 i + 2 l + 1 (high half); lane l gives the address of tile row perm(l). out = the tile.
__device__ int perm(int l) { return (l * 7 + 3) % 32; }
template <bool T>
__device__ void store_matrices(float *out) {
    __shared__ __align__(16) unsigned short tile[32][8];
    const int l = threadIdx.x;
    u32 r[4];
    for (int i = 0; i < 4; ++i) r[i] = (u32)(1000 * i + 2 * l) | ((u32)(1000 * i + 2 * l + 1) << 16);
    if (T)
        asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared::cta.b16 [%0], {%1, %2, %3, %4};"
                     ::"r"(smem(&tile[perm(l)][0])), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    else
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                     ::"r"(smem(&tile[perm(l)][0])), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    __syncwarp();
    for (int c = 0; c < 8; ++c) out[l * 8 + c] = tile[l][c];
}
extern "C" __global__ void st_x4(float *out) { store_matrices<false>(out); }
extern "C" __global__ void st_x4_trans(float *out) { store_matrices<true>(out); }
// As store_matrices<false>, read back with no __syncwarp: MODE 0 the halves this lane's own
// registers gave (row g, columns 2t and 2t + 1 of each matrix), MODE 1 tile row l, which
// other lanes' registers gave.
template <int MODE>
__device__ void store_then_read(float *out) {
    __shared__ __align__(16) unsigned short tile[32][8];
    const int l = threadIdx.x, g = l / 4, t = l % 4;
    u32 r[4];
    for (int i = 0; i < 4; ++i) r[i] = (u32)(1000 * i + 2 * l) | ((u32)(1000 * i + 2 * l + 1) << 16);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(smem(&tile[perm(l)][0])), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    for (int i = 0; i < 4; ++i)
        for (int h = 0; h < 2; ++h)
            out[l * 8 + 2 * i + h] = MODE == 0 ? tile[perm(8 * i + g)][2 * t + h] : tile[l][2 * i + h];
}
extern "C" __global__ void st_own(float *out) { store_then_read<0>(out); }
extern "C" __global__ void st_others(float *out) { store_then_read<1>(out); }

// CUTLASS's elect_one_sync, as cute writes it: out[t] is 1 for the elected lane of each warp;
// then lanes 4-7 elect among themselves: out[64 + t] = the elected lane, + 100 if it is t.
__device__ u32 elect_one() {
    u32 pred = 0, laneid = 0;
    asm volatile("{\n.reg .b32 %%rx;\n.reg .pred %%px;\n     elect.sync %%rx|%%px, %2;\n"
                 "@%%px mov.s32 %1, 1;\n     mov.s32 %0, %%rx;\n}\n"
                 : "+r"(laneid), "+r"(pred) : "r"(0xFFFFFFFF));
    return pred;
}
extern "C" __global__ void elect(float *out) {
    const int t = threadIdx.x;
    out[t] = elect_one();
    if (t >= 4 && t < 8) {
        u32 leader, mine;
        asm volatile("{\n.reg .pred p;\nelect.sync %0|p, %2;\nselp.u32 %1, 1, 0, p;\n}\n"
                     : "=r"(leader), "=r"(mine) : "r"(0xF0u));
        out[64 + t] = leader + 100 * mine;
    }
}

// 96 threads wait at barrier 1 for 128 while warp 3 exits: a GPU hangs; the simulator reports
// the barrier. In a block of 96 threads the count itself is wrong.
extern "C" __global__ void named_short(float *out) {
    if (threadIdx.x < 96) asm volatile("bar.sync 1, 128;" ::: "memory");
    out[threadIdx.x] = 1.0f;
}


// Reductions into global memory (cp.reduce.async.bulk), after `init_c` has set C[i] = i / 4.
extern "C" __global__ void init_c(float *c, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = 0.25f * i;
}

// Block b adds (b + 1) times A's first 512 floats, as the box at (0, 36, 1) of a 3-D map of C
// (store_3d's box), by a TMA reduction.
extern "C" __global__ void reduce_add_3d(const __grid_constant__ CUtensorMap map, const float *a) {
    __shared__ __align__(1024) float box[2 * 8 * 32];
    char *bytes = (char *)box;
    for (int i = threadIdx.x; i < 2 * 8 * 32; i += blockDim.x)
        *(float *)(bytes + swz(4 * i)) = (blockIdx.x + 1) * a[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3}], [%4];"
                     ::"l"((u64)&map), "n"(0), "r"(36), "r"(1), "r"(smem(box)) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
}

// Block b reduces 128 floats into C at element 200 with .add ((b + 1) a[i]) and into C at
// element 400 with .max (100 b + a[i]), plain bulk reductions of 512 bytes in one group. There
// is no .max.f32; .max.s32 orders positive floats as floats (their bits grow with them).
extern "C" __global__ void reduce_plain(float *c, const float *a) {
    __shared__ __align__(128) float add[128], mx[128];
    for (int i = threadIdx.x; i < 128; i += blockDim.x) {
        add[i] = (blockIdx.x + 1) * a[i];
        mx[i] = 100.0f * blockIdx.x + a[i];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], 512;"
                     ::"l"(c + 200), "r"(smem(add)) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.max.s32 [%0], [%1], 512;"
                     ::"l"(c + 400), "r"(smem(mx)) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
}

// As reduce_plain's .add, with the buffer rewritten before the reduction has read it.
extern "C" __global__ void reduce_rewritten(float *c, const float *a) {
    __shared__ __align__(128) float add[128];
    for (int i = threadIdx.x; i < 128; i += blockDim.x) add[i] = a[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], 512;"
                     ::"l"(c + 200), "r"(smem(add)) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        add[0] = 1.0f;
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
"#;

/// A kernel with `__cluster_dims__`, in a file of its own.
const CLUSTER: &str = r#"
typedef unsigned u32;

// Distributed shared memory through inline PTX: in clusters of 2 blocks, each block's thread t
// writes 10 * rank + t into its own buffer; after a cluster barrier it reads its partner's
// element t (ld.shared::cluster on a mapa.shared::cluster address), writes it back plus 100
// into the partner's second half (st.shared::cluster) and adds 1 to the partner's counter
// (red.shared::cluster); after another barrier each block writes out what it holds.
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsmem(float *out) {
    extern __shared__ u32 buf[];  // 32 values, 32 written by the partner, a counter
    const u32 t = threadIdx.x;
    u32 rank, own, remote, got;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    own = (u32)__cvta_generic_to_shared(buf);
    if (t == 0) buf[64] = 0;
    buf[t] = 10 * rank + t;
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(own), "r"(rank ^ 1));
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(got) : "r"(remote + 4 * t));
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(remote + 4 * (32 + t)), "r"(got + 100) : "memory");
    asm volatile("red.shared::cluster.add.u32 [%0], 1;" ::"r"(remote + 4 * 64) : "memory");
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
    out[blockIdx.x * 65 + t] = buf[t];
    out[blockIdx.x * 65 + 32 + t] = buf[32 + t];
    if (t == 0) out[blockIdx.x * 65 + 64] = buf[64];
}
// Clusters of 2 blocks along x over a grid of 6 x 2: each block writes its %clusterid,
// %nclusterid and %cluster_ctaid.
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_ids(float *out) {
    u32 cx, cy, nx, ny, rx;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cx));
    asm volatile("mov.u32 %0, %%clusterid.y;" : "=r"(cy));
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(nx));
    asm volatile("mov.u32 %0, %%nclusterid.y;" : "=r"(ny));
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(rx));
    if (threadIdx.x == 0) {
        float *o = out + 5 * (blockIdx.y * gridDim.x + blockIdx.x);
        o[0] = cx, o[1] = cy, o[2] = nx, o[3] = ny, o[4] = rx;
    }
}
"#;

/// A (40 x 96 floats) as 3 planes of 32 columns: dimensions (32, 40, 3), a row 96 floats on,
/// a plane 32; boxes of 32 x 8 x 2 in the 128-byte swizzle.
fn planes(buf: Buf) -> TensorMap {
    TensorMap {
        buf,
        rank: 3,
        dims: [32, ROWS, 3, 1, 1],
        strides: [COLS, 32, 0, 0],
        boxes: [32, 8, 2, 1, 1],
        swizzle: TmaSwizzle::B128,
    }
}

const ROWS: usize = 40;
const COLS: usize = 96;

fn run(
    entry: &str,
    grid: [u32; 3],
    threads: u32,
    args: Vec<Arg>,
    dev: SimDevice,
) -> Result<Vec<f32>, DeviceError> {
    run_in(KERNELS, entry, grid, threads, args, dev)
}

/// One block of `threads` whose only argument is the output.
fn run_out(entry: &str, threads: u32, dev: SimDevice) -> Result<Vec<f32>, DeviceError> {
    run(entry, [1, 1, 1], threads, vec![Arg::Ptr(Buf::Output)], dev)
}

fn run_in(
    code: &'static str,
    entry: &str,
    grid: [u32; 3],
    threads: u32,
    args: Vec<Arg>,
    dev: SimDevice,
) -> Result<Vec<f32>, DeviceError> {
    let a: Vec<f32> = (0..ROWS * COLS).map(|i| (i % 997) as f32 + 0.5).collect();
    let b = vec![0.0; COLS * COLS];
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![Step::Kernel(Launch {
            source: CudaSource::embedded("tests/hopper_ws.cu", code),
            entry: entry.to_string().into(),
            grid,
            block: [threads, 1, 1],
            dynamic_smem: 1024, // for the kernels with extern __shared__ memory
            args,
        })],
        ..Default::default()
    };
    let k = PlanKernel::fp32(plan);
    let shape = Shape::gemm(ROWS, COLS, COLS);
    let data = [a, b];
    let mut p = dev.prepare(&k, &shape, &data)?;
    p.run()?;
    p.output()
}

fn a_at(i: usize) -> f32 {
    (i % 997) as f32 + 0.5
}

/// Box element i = ((plane * 8) + row) * 32 + column at coordinates (0, 36, 1): the element of
/// A it names, if inside the 40 x 96 view.
fn named(i: usize) -> Option<usize> {
    let (c, r, p) = (i % 32, i / 32 % 8, i / 256);
    (36 + r < ROWS).then(|| (36 + r) * COLS + (1 + p) * 32 + c)
}

fn sim_error(r: Result<Vec<f32>, DeviceError>) -> String {
    match r {
        Err(DeviceError::Sim(msg)) => msg,
        other => panic!("expected a simulator error, got {:?}", other.map(|_| ())),
    }
}

/// Also with the tile declared only 128-byte aligned: the simulator places it where a GPU's
/// packing would, on a 1024-byte boundary, which the 128-byte swizzle's phases count from.
#[test]
fn a_3d_box_lands_swizzled_with_zeros_outside_the_tensor() {
    for entry in ["load_3d", "load_3d_first_tile"] {
        let args = vec![Arg::TensorMap(planes(Buf::Input(0))), Arg::Ptr(Buf::Output)];
        let out = run(entry, [1, 1, 1], 64, args, SimDevice::new().unwrap()).unwrap();
        for (i, &got) in out[..512].iter().enumerate() {
            let want = named(i).map_or(0.0, a_at);
            assert_eq!(got, want, "{entry}: box element {i}");
        }
    }
}

#[test]
fn a_3d_tma_store_writes_the_box_inside_the_tensor_only() {
    let args = vec![Arg::TensorMap(planes(Buf::Output)), Arg::Ptr(Buf::Input(0))];
    let out = run("store_3d", [1, 1, 1], 64, args, SimDevice::new().unwrap()).unwrap();
    let mut written = 0;
    for i in 0..512 {
        if let Some(at) = named(i) {
            assert_eq!(out[at], a_at(i), "box element {i} at C[{at}]");
            written += 1;
        }
    }
    // Rows 36 to 39 of the box lie inside; rows 40 to 43 would be past C's end, which is
    // guarded: a write there faults.
    assert_eq!(written, 2 * 4 * 32);
    assert!(out[36 * COLS].is_nan(), "plane 0 is not in the box");
}

#[test]
fn a_plain_bulk_copy_loads_on_an_mbarrier_and_stores_in_a_bulk_group() {
    let args = vec![Arg::Ptr(Buf::Input(0)), Arg::Ptr(Buf::Output)];
    let out = run(
        "bulk_copies",
        [1, 1, 1],
        32,
        args,
        SimDevice::new().unwrap(),
    )
    .unwrap();
    for i in 0..128 {
        assert_eq!(out[200 + i], a_at(96 + i), "element {i}");
    }
    assert!(
        out[199].is_nan() && out[328].is_nan(),
        "only the 512 bytes are written"
    );
}

#[test]
fn shared_memory_rewritten_before_a_tma_store_completes_fails_the_row() {
    for entry in ["rewrite_before_wait", "rewrite_never_waited"] {
        let args = vec![Arg::TensorMap(planes(Buf::Output)), Arg::Ptr(Buf::Input(0))];
        let why = sim_error(run(
            entry,
            [1, 1, 1],
            64,
            args.clone(),
            SimDevice::new().unwrap(),
        ));
        assert!(
            why.contains("which a TMA store (cp.async.bulk.tensor ... global.shared::cta)")
                && why.contains("issued by thread (0,0,0) at ")
                && why.contains(" reads, was written before that store completed"),
            "{entry}: {why}"
        );
        assert!(
            issued_at(&why).contains("cp.async.bulk.tensor"),
            "{entry}: {why}"
        );
        // The race checker knows who wrote the byte.
        let dev = SimDevice::new().unwrap().instrumented();
        let why = sim_error(run(entry, [1, 1, 1], 64, args, dev));
        assert!(
            why.contains(" reads, was written by thread (37,0,0) before that store completed"),
            "{entry}: {why}"
        );
    }
}

#[test]
fn a_tma_store_of_unfenced_writes_is_caught_by_the_sanitizer() {
    let store = |entry: &str| {
        let args = vec![Arg::TensorMap(planes(Buf::Output)), Arg::Ptr(Buf::Input(0))];
        run(
            entry,
            [1, 1, 1],
            64,
            args,
            SimDevice::new().unwrap().instrumented(),
        )
    };
    for entry in ["store_unfenced", "store_fenced_too_early"] {
        let why = sim_error(store(entry));
        assert!(
            why.contains("cp.async.bulk.tensor.3d (a TMA store) reads")
                && why.contains("with no fence.proxy.async between that write and this read"),
            "{entry}: {why}"
        );
    }
    // The issuing thread's fence after the barrier covers every write the barrier ordered
    // before it, as a fence by each writer before the barrier does.
    store("store_fenced_by_issuer").unwrap();
}

#[test]
fn named_barriers_hand_over_between_warps_and_a_short_count_is_a_deadlock() {
    let out = run_out("named_handover", 128, SimDevice::new().unwrap()).unwrap();
    let want: Vec<f32> = (0..64).map(|i| i as f32).chain([7.0; 32]).collect();
    assert_eq!(&out[..96], &want[..]);
    // The same under the race checker: the hand-over orders the writes before the reads.
    let checked = run_out(
        "named_handover",
        128,
        SimDevice::new().unwrap().instrumented(),
    )
    .unwrap();
    assert_eq!(&checked[..96], &want[..]);
    let short = |threads| sim_error(run_out("named_short", threads, SimDevice::new().unwrap()));
    let why = short(128);
    assert!(
        why.contains("deadlock at a named barrier (bar.sync with an id)")
            && why
                .contains("96 threads wait, 32 exited; named barrier 1: 96 of 128 threads arrived"),
        "{why}"
    );
    let why = short(96);
    assert!(
        why.contains("bar.sync: a count of 128 threads; it must be a multiple of the warp size, at most the block's 96"),
        "{why}"
    );
}

#[test]
fn stmatrix_writes_each_register_where_ldmatrix_reads_it() {
    let perm = |l: usize| (l * 7 + 3) % 32;
    for (entry, trans) in [("st_x4", false), ("st_x4_trans", true)] {
        let out = run_out(entry, 32, SimDevice::new().unwrap()).unwrap();
        // The code lane l put in the low (h = 0) or high half of its register i.
        let code = |i: usize, l: usize, h: usize| (1000 * i + 2 * l + h) as f32;
        for i in 0..4 {
            for lane in 0..32 {
                let (g, t) = (lane / 4, lane % 4);
                for h in 0..2 {
                    // ldmatrix's layout: row g, column 2t + h of matrix i; transposed, row
                    // 2t + h, column g. Row r of matrix i is tile row perm(8i + r).
                    let (r, c) = if trans {
                        (2 * t + h, g)
                    } else {
                        (g, 2 * t + h)
                    };
                    let at = perm(8 * i + r) * 8 + c;
                    assert_eq!(
                        out[at],
                        code(i, lane, h),
                        "{entry}: matrix {i}, lane {lane}"
                    );
                }
            }
        }
    }
}

/// stmatrix's bytes are written by the lanes whose registers give them: a lane may read back
/// its own without a __syncwarp, and one that reads another lane's is told which lane wrote
/// them (not the lane that happened to complete the warp's instruction).
#[test]
fn stmatrix_bytes_are_the_writes_of_the_lanes_that_give_them() {
    let dev = || SimDevice::new().unwrap().instrumented();
    let out = run_out("st_own", 32, dev()).unwrap();
    for l in 0..32 {
        for i in 0..4 {
            for h in 0..2 {
                assert_eq!(
                    out[l * 8 + 2 * i + h],
                    (1000 * i + 2 * l + h) as f32,
                    "lane {l}"
                );
            }
        }
    }
    let msg = sim_error(run_out("st_others", 32, dev()));
    let number = |after: &str| -> usize {
        let at = msg
            .find(after)
            .unwrap_or_else(|| panic!("no {after:?}: {msg}"))
            + after.len();
        msg[at..].split(',').next().unwrap().parse().unwrap()
    };
    let (reader, writer) = (number("(thread ("), number("which thread ("));
    // Tile row `reader` is row r of matrix i (perm(8 i + r) = reader); its columns 0 and 1
    // came from lane 4 r's register i.
    let r = (0..32).find(|&k| (k * 7 + 3) % 32 == reader).unwrap() % 8;
    assert!(msg.contains("race on shared memory"), "{msg}");
    assert_eq!(writer, 4 * r, "{msg}");
}

#[test]
fn elect_sync_picks_the_lowest_lane_of_its_mask() {
    let out = run_out("elect", 64, SimDevice::new().unwrap()).unwrap();
    let elected: Vec<usize> = (0..64).filter(|&t| out[t] == 1.0).collect();
    assert_eq!(elected, [0, 32]);
    assert!((0..64).all(|t| out[t] == 0.0 || out[t] == 1.0));
    assert_eq!(&out[68..72], &[104.0, 4.0, 4.0, 4.0]);
}

#[test]
fn distributed_shared_memory_is_read_written_and_added_to_across_the_cluster() {
    let plan_args = vec![Arg::Ptr(Buf::Output)];
    let out = run_in(
        CLUSTER,
        "dsmem",
        [4, 1, 1],
        32,
        plan_args,
        SimDevice::new().unwrap().instrumented(),
    )
    .unwrap();
    for block in 0..4 {
        let (rank, o) = (block % 2, &out[block * 65..][..65]);
        for t in 0..32 {
            assert_eq!(o[t], (10 * rank + t) as f32, "block {block}: own {t}");
            // The partner read this block's element t and wrote it back, plus 100.
            let back = 10 * rank + t + 100;
            assert_eq!(o[32 + t], back as f32, "block {block}: written {t}");
        }
        assert_eq!(o[64], 32.0, "block {block}: the partner's 32 additions");
    }
}

#[test]
fn cluster_ids_follow_the_grid_in_clusters() {
    let out = run_in(
        CLUSTER,
        "cluster_ids",
        [6, 2, 1],
        32,
        vec![Arg::Ptr(Buf::Output)],
        SimDevice::new().unwrap(),
    )
    .unwrap();
    for by in 0..2 {
        for bx in 0..6 {
            let o = &out[5 * (by * 6 + bx)..][..5];
            let want = [(bx / 2) as f32, by as f32, 3.0, 2.0, (bx % 2) as f32];
            assert_eq!(o, want, "block ({bx}, {by})");
        }
    }
}

/// `init_c`, then `entry` over `blocks` blocks of 64 threads with `args`.
fn reduce_run(entry: &str, blocks: u32, args: Vec<Arg>) -> Result<Vec<f32>, DeviceError> {
    let a: Vec<f32> = (0..ROWS * COLS).map(a_at).collect();
    let n = ROWS * COLS;
    let launch = |entry: &str, grid: u32, args| {
        Step::Kernel(Launch {
            source: CudaSource::embedded("tests/hopper_ws.cu", KERNELS),
            entry: entry.to_string().into(),
            grid: [grid, 1, 1],
            block: [64, 1, 1],
            dynamic_smem: 0,
            args,
        })
    };
    let plan = CudaPlan {
        inputs: vec![Dtype::F32; 2],
        steps: vec![
            launch(
                "init_c",
                n.div_ceil(64) as u32,
                vec![Arg::Ptr(Buf::Output), Arg::I32(n as i32)],
            ),
            launch(entry, blocks, args),
        ],
        ..Default::default()
    };
    let k = PlanKernel::fp32(plan);
    let data = [a, vec![0.0; COLS * COLS]];
    let dev = SimDevice::new()?;
    let mut p = dev.prepare(&k, &Shape::gemm(ROWS, COLS, COLS), &data)?;
    p.run()?;
    p.output()
}

/// Four blocks reduce into the same elements, atomically: a box of a 3-D map (only the
/// elements inside C), and plain runs of bytes with .add and .max.
#[test]
fn bulk_reductions_add_and_take_the_max_into_global_memory() {
    let args = vec![Arg::TensorMap(planes(Buf::Output)), Arg::Ptr(Buf::Input(0))];
    let out = reduce_run("reduce_add_3d", 4, args).unwrap();
    let init = |at: usize| 0.25 * at as f32;
    let mut inside = vec![false; ROWS * COLS];
    for i in 0..512 {
        if let Some(at) = named(i) {
            assert_eq!(
                out[at],
                init(at) + 10.0 * a_at(i),
                "box element {i} at C[{at}]"
            );
            inside[at] = true;
        }
    }
    for at in (0..ROWS * COLS).filter(|&at| !inside[at]) {
        assert_eq!(out[at], init(at), "C[{at}] is outside the box");
    }
    let args = vec![Arg::Ptr(Buf::Output), Arg::Ptr(Buf::Input(0))];
    let out = reduce_run("reduce_plain", 4, args).unwrap();
    for i in 0..128 {
        assert_eq!(out[200 + i], init(200 + i) + 10.0 * a_at(i), "add {i}");
        assert_eq!(out[400 + i], init(400 + i).max(300.0 + a_at(i)), "max {i}");
    }
    assert_eq!((out[199], out[328]), (init(199), init(328)));
    let args = vec![Arg::Ptr(Buf::Output), Arg::Ptr(Buf::Input(0))];
    let why = sim_error(reduce_run("reduce_rewritten", 1, args));
    assert!(
        why.contains("which a bulk reduction (cp.reduce.async.bulk) issued by thread (0,0,0) at ")
            && why.contains(" reads, was written before"),
        "{why}"
    );
    assert!(issued_at(&why).contains("cp.reduce.async.bulk"), "{why}");
}

/// The line of `KERNELS` a message says an instruction was issued at (`at tests/hopper_ws.cu:N`).
fn issued_at(why: &str) -> &'static str {
    let n: usize = why
        .split("at tests/hopper_ws.cu:")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no line in {why}"));
    KERNELS.lines().nth(n - 1).unwrap_or_default()
}

#[test]
fn nvrtc_compiles_the_same_ptx_for_sm90a() {
    if let Err(e) = nvrtc::version() {
        panic!("{e}\nThis test needs NVRTC: run tools/install-cuda-tools.sh first.");
    }
    for (code, entries) in [(KERNELS, 20), (CLUSTER, 2)] {
        let src = CudaSource::embedded("tests/hopper_ws.cu", code).for_arch("sm_90a");
        let c = nvrtc::compile(&src, "sm_90").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((c.arch.as_str(), c.resources.len()), ("sm_90a", entries));
    }
}
