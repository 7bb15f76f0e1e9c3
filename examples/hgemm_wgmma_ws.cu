// A warp-specialized Hopper GEMM in the style of the fastest public sm_90a kernels (the later
// kernels of the fast.cu worklog): one producer warpgroup feeds two consumer warpgroups through
// a ring of mbarrier-guarded stages, the pair of blocks of a 2-CTA cluster shares B through a
// TMA multicast, the blocks are persistent over the output tiles, and the epilogue leaves
// through shared memory and a TMA store. Everything is inline PTX; beyond the simpler
// examples/hgemm_wgmma_tma.cu it uses 3-D tensor maps, setmaxnreg, mapa with remote mbarrier
// arrivals, named barriers, %clusterid, and TMA stores in bulk groups.
//
//   harness run --device sim --workload gemm --sizes 200x136x128,300x300x192 \
//     --kernel 'examples/hgemm_wgmma_ws.cu:hgemm_wgmma_ws<128,128,128,2>,dtype=bf16,C:f32,b=col,block=384,grid=SMS,smem=2*(128+128)*128*2+2*64*128*4+1024+64,args=(M,N,K,tmap(A,{64,M,K/64},{2*K,128},{64,128,2},128B),tmap(B,{64,N,K/64},{2*K,128},{64,128,2},128B),tmap(C,M,N,64,128))'
//
// grid=SMS: one block per SM (its shared memory allows no second), in clusters of two, each
// cluster walking its share of the tiles.
//
// C = A B with A row-major (M x K), B column-major (N x K, "TN") and C row-major in FP32.
// A and B are seen through 3-D maps that split each row of K into planes of 64 elements
// (128 bytes, one row of the 128-byte swizzle), so that one box brings BK = 128 columns as
// two swizzled planes. K must be a multiple of 64 for that view; M and N may be anything (the
// TMA fills rows past the edges with zeros and the TMA store writes only what lies inside C).
//
// Three hand-overs the hardware does not enforce, each of which a kernel can skip and still
// give the right answer on a GPU whose timing hides the race:
// - the consumers write the C tile with ordinary stores and the TMA reads it through the async
//   proxy: each writing thread executes fence.proxy.async before the barrier that hands the
//   tile to the thread issuing the store;
// - a C tile buffer is rewritten only after the store that reads it has finished reading:
//   the issuing thread waits with cp.async.bulk.wait_group.read, then a named barrier lets its
//   warpgroup write again;
// - consumers arrive on the other block's mbarriers (it multicasts B into their stages), so no
//   block may exit while its partner can still arrive: the kernel ends with a cluster barrier.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>

typedef __nv_bfloat16 bf16;

constexpr int CLUSTER = 2;  // blocks along M sharing a B tile

__device__ static inline uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The shared-memory matrix descriptor of a K-major plane in the 128-byte swizzle: 8-row groups
// 1024 bytes apart.
__device__ static inline uint64_t make_smem_desc(const bf16 *p) {
  uint64_t desc = (smem_u32(p) & 0x3FFFF) >> 4;
  desc |= (uint64_t)(16 >> 4) << 16;
  desc |= (uint64_t)(1024 >> 4) << 32;
  desc |= 1ull << 62;  // 128B swizzle
  return desc;
}

__device__ static inline void init_barrier(uint64_t *bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

__device__ static inline void expect_bytes(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes));
}

__device__ static inline void wait(uint64_t *bar, int phase) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "WAIT%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra.uni WAIT%=;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(phase)
      : "memory");
}

// One arrival on the mbarrier at `bar`'s offset in block `rank` of the cluster.
__device__ static inline void arrive_cluster(uint64_t *bar, uint32_t rank) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(rank)
      : "memory");
}

// A box of a 3-D map (planes of 64 columns) at column `col`, row `row`, into this block.
__device__ static inline void load_3d(bf16 *dst, const CUtensorMap *map, uint64_t *bar, int col, int row) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "n"(0), "r"(row), "r"(col / 64)
      : "memory");
}

// The same box into every block of `mask`, at dst's offset, counted on bar's offset there.
__device__ static inline void load_3d_multicast(bf16 *dst, const CUtensorMap *map, uint64_t *bar, int col, int row,
                                                uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "n"(0), "r"(row), "r"(col / 64), "h"(mask)
      : "memory");
}

// A box of a 2-D map from shared memory to global memory, in this thread's open bulk group.
__device__ static inline void store_2d(const CUtensorMap *map, const float *src, int col, int row) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_u32(src)), "r"(col), "r"(row)
               : "memory");
}

__device__ static inline void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// D[64x128] += A[64x16] B[16x128] from two descriptors: 64 FP32 accumulators a thread.
__device__ static inline void wgmma128(float d[8][8], const bf16 *sA, const bf16 *sB) {
  const uint64_t desc_a = make_smem_desc(sA), desc_b = make_smem_desc(sB);
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "},"
      " %64, %65, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7])
      : "l"(desc_a), "l"(desc_b));
}

// Block (rank r of its cluster) computes rows m0 = (2 t_m + r) BM.. of tile (t_m, t_n); the
// cluster walks the tiles t = clusterid, clusterid + nclusters, ... in row-major order of
// (t_m, t_n) with t_m counting pairs of BM rows.
template <int BM, int BN, int BK, int QSIZE>
__global__ void __launch_bounds__(384, 1) __cluster_dims__(CLUSTER, 1, 1)
    hgemm_wgmma_ws(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                   const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
  static_assert(BM == 128 && BN == 128 && BK % 64 == 0, "two consumers of m64n128k16, planes of 64 columns");
  constexpr int PLANES = BK / 64, WG_ROWS = BM / 2;
  // Stages of A and B, then each consumer's C tile (FP32), then the mbarriers; the 128B
  // swizzle repeats every 1024 bytes, so the stages start on that boundary.
  extern __shared__ unsigned char smem_raw[];
  const uint32_t pad = (1024 - (smem_u32(smem_raw) & 1023)) & 1023;
  bf16 *sA = reinterpret_cast<bf16 *>(smem_raw + pad);
  bf16 *sB = sA + QSIZE * BM * BK;
  float *sC = reinterpret_cast<float *>(sB + QSIZE * BN * BK);
  uint64_t *full = reinterpret_cast<uint64_t *>(sC + BM * BN);
  uint64_t *empty = full + QSIZE;

  uint32_t rank, cluster, clusters;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(cluster));
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(clusters));
  const int tiles_m = (M + CLUSTER * BM - 1) / (CLUSTER * BM), tiles_n = (N + BN - 1) / BN;
  const int tiles = tiles_m * tiles_n, k_tiles = (K + BK - 1) / BK;
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < QSIZE; ++s) {
      init_barrier(&full[s], 1);                // the producer's arrival, plus the bytes
      init_barrier(&empty[s], 2 * CLUSTER);     // each consumer of each block of the cluster
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // Both blocks' barriers exist before either block arrives on the other's.
  asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;\n" ::: "memory");

  if (wg == 0) {
    // Producer: one thread issues every copy; the warpgroup gives registers to the consumers.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (tid == 0) {
      int s = 0, phase = 0;
      for (int t = cluster; t < tiles; t += clusters) {
        const int m0 = ((t / tiles_n) * CLUSTER + rank) * BM, n0 = (t % tiles_n) * BN;
        for (int kt = 0; kt < k_tiles; ++kt) {
          wait(&empty[s], phase);  // both blocks' consumers have released stage s
          expect_bytes(&full[s], (BM + BN) * BK * sizeof(bf16));
          load_3d(&sA[s * BM * BK], &mapA, &full[s], kt * BK, m0);
          if (rank == 0) load_3d_multicast(&sB[s * BN * BK], &mapB, &full[s], kt * BK, n0, (1 << CLUSTER) - 1);
          if (++s == QSIZE) s = 0, phase ^= 1;
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;  // consumer 0 or 1: rows c * 64.. of the block's tile
    float *tile_c = sC + c * WG_ROWS * BN;
    // Every stage starts out free: one release per stage and per block of the cluster.
    for (int s = 0; s < QSIZE; ++s)
      if (tid < CLUSTER) arrive_cluster(&empty[s], tid);
    int s = 0, phase = 0;
    for (int t = cluster; t < tiles; t += clusters) {
      const int m0 = ((t / tiles_n) * CLUSTER + rank) * BM, n0 = (t % tiles_n) * BN;
      float d[8][8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) d[i][j] = 0.0f;
      for (int kt = 0; kt < k_tiles; ++kt) {
        wait(&full[s], phase);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int p = 0; p < PLANES; ++p)
#pragma unroll
          for (int kk = 0; kk < 4; ++kk)
            wgmma128(d, &sA[(s * PLANES + p) * BM * 64 + c * WG_ROWS * 64 + kk * 16],
                     &sB[(s * PLANES + p) * BN * 64 + kk * 16]);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (tid < CLUSTER) arrive_cluster(&empty[s], tid);  // stage s is free in both blocks
        if (++s == QSIZE) s = 0, phase ^= 1;
      }
      // The previous tile's store must have read tile_c before anyone overwrites it.
      if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      named_sync(2 + c, 128);
      // The m64nNk16 D layout: warp w holds rows 16w..16w+15; with g = lane / 4, q = lane % 4,
      // element 4j + {0,1} is D[16w + g][8j + 2q + {0,1}], 4j + {2,3} the same 8 rows down.
      const float *f = &d[0][0];
      const int lane = tid % 32, row = (tid / 32) * 16 + lane / 4;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) tile_c[(row + (e / 2) * 8) * BN + 8 * j + 2 * (lane % 4) + e % 2] = f[4 * j + e];
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // visible to the TMA
      named_sync(2 + c, 128);
      if (tid == 0) {
        store_2d(&mapC, tile_c, n0, m0 + c * WG_ROWS);
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
      }
    }
    if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  }
  // No block leaves while its partner may still arrive on its mbarriers.
  asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;\n" ::: "memory");
}

// ---- Host code (the lab never compiles it) ----

// A row-major matrix of `rows` x `cols` (cols a multiple of 64) as 3-D planes of 64 columns.
static void create_planes_map(CUtensorMap *map, bf16 *ptr, int rows, int cols, int box_rows, int box_cols) {
  uint64_t shape[3] = {64, (uint64_t)rows, (uint64_t)cols / 64};
  uint64_t stride[2] = {sizeof(bf16) * cols, 64 * sizeof(bf16)};
  uint32_t box[3] = {64, (uint32_t)box_rows, (uint32_t)box_cols / 64};
  uint32_t elem_stride[3] = {1, 1, 1};
  CUresult r = cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, ptr, shape, stride, box, elem_stride,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", (int)r);
}

void run_hgemm_wgmma_ws(int M, int N, int K, bf16 *A, bf16 *B, float *C, int sms) {
  constexpr int BM = 128, BN = 128, BK = 128, QSIZE = 2;
  CUtensorMap mapA, mapB, mapC;
  create_planes_map(&mapA, A, M, K, BM, BK);
  create_planes_map(&mapB, B, N, K, BN, BK);
  uint64_t shape[2] = {(uint64_t)N, (uint64_t)M}, stride[1] = {sizeof(float) * N};
  uint32_t box[2] = {BN, BM / 2}, elem_stride[2] = {1, 1};
  cuTensorMapEncodeTiled(&mapC, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, C, shape, stride, box, elem_stride,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  const size_t smem = QSIZE * (BM + BN) * BK * sizeof(bf16) + BM * BN * sizeof(float) + 1024 + 2 * QSIZE * 8;
  auto kernel = hgemm_wgmma_ws<BM, BN, BK, QSIZE>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  kernel<<<sms / CLUSTER * CLUSTER, 384, smem>>>(M, N, K, mapA, mapB, mapC);
}
