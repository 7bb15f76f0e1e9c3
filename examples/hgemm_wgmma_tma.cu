// A Hopper GEMM written the way public sm_90a kernels write it (the wrappers of the fast.cu
// worklog's kernels and of CUTLASS's cute/arch): BF16 operands brought into shared
// memory by the Tensor Memory Accelerator, multiplied by wgmma straight from shared memory,
// everything as inline PTX: mbarrier.init, mbarrier.arrive.expect_tx, the try_wait retry
// loop with its labels and branches, cp.async.bulk.tensor.2d, wgmma.fence, mma_async,
// commit_group and wait_group. The tensor maps come from cuTensorMapEncodeTiled in the host
// code below, which the lab never compiles: it encodes the same maps from the `tmap(...)`
// items of the launch's argument list. Without a GPU the lab runs the file in its CUDA
// simulator, whose front end maps each asm statement onto the emulation of the lab's own
// Hopper rungs.
//
//   harness run --device sim --workload gemm --sizes 100x72x136,64x128x64 \
//     --kernel 'examples/hgemm_wgmma_tma.cu:hgemm_wgmma_tma<64,128,64,3>,dtype=bf16,C:f32,b=col,block=128,grid=tile:64x128,smem=3*(64+128)*64*2+1024+64,args=(M,N,K,C,tmap(A,M,K,64,64,128B),tmap(B,N,K,128,64,128B))'
//
// C = A B with A row-major (M x K) and B column-major (N x K, "TN"), both K-major as wgmma
// reads them without transposes. One warpgroup computes a BM x BN tile; thread 0 keeps QSIZE
// K-tiles in flight through TMA, each completing on its mbarrier (arrival + bytes). The TMA
// fills box elements past the matrix edges with zeros, so the M, N and K tails need no code;
// K must be a multiple of 8 (a TMA row pitch is a multiple of 16 bytes).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>

typedef __nv_bfloat16 bf16;

__device__ static inline uint64_t matrix_descriptor_encode(uint64_t x) { return (((x) & 0x3FFFF) >> 0x4); }

// The shared-memory matrix descriptor of a K-major tile in the 128-byte swizzle the TMA wrote:
// 8-row groups 1024 bytes apart.
__device__ uint64_t make_smem_desc(bf16 *ptr) {
  uint64_t addr = static_cast<uint64_t>(__cvta_generic_to_shared(ptr));
  uint64_t desc = 0x0000000000000000;
  desc |= matrix_descriptor_encode(addr);
  desc |= matrix_descriptor_encode((uint64_t)16) << 16;
  desc |= matrix_descriptor_encode((uint64_t)1024) << 32;
  desc |= 1llu << 62;  // 128B swizzle
  return desc;
}

__device__ static inline void init_barrier(uint64_t *bar, int thread_count) {
  uint32_t bar_ptr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar_ptr), "r"(thread_count));
}

__device__ static inline void expect_bytes(uint64_t *bar, uint32_t bytes) {
  uint32_t bar_ptr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar_ptr), "r"(bytes));
}

__device__ static inline void wait(uint64_t *bar, int phase) {
  uint32_t bar_ptr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "LAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra.uni DONE;\n"
      "bra.uni LAB_WAIT;\n"
      "DONE:\n"
      "}\n" ::"r"(bar_ptr),
      "r"(phase));
}

__device__ static inline void load_async(bf16 *dst, void const *src_tma_map, uint64_t *bar, int col, int row) {
  uint64_t tma_ptr = reinterpret_cast<uint64_t>(src_tma_map);
  uint32_t mbar_ptr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  uint32_t dst_ptr = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst_ptr),
      "l"(tma_ptr), "r"(mbar_ptr), "r"(col), "r"(row)
      : "memory");
}

__device__ static inline void warpgroup_arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ static inline void warpgroup_commit_batch() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ static inline void warpgroup_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// D[64x128] += A[64x16] B[16x128]: 64 FP32 accumulators a thread, d[j / 8][j % 8] holding
// element j of the m64nNk16 D fragment.
template <int ScaleD, int ScaleA, int ScaleB, int TransA, int TransB>
__device__ void wgmma128(float d[8][8], bf16 *sA, bf16 *sB) {
  uint64_t desc_a = make_smem_desc(&sA[0]);
  uint64_t desc_b = make_smem_desc(&sB[0]);
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "},"
      " %64,"
      " %65,"
      " %66, %67, %68, %69, %70;\n"
      "}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7])
      : "l"(desc_a), "l"(desc_b), "n"(int32_t(ScaleD)), "n"(int32_t(ScaleA)), "n"(int32_t(ScaleB)),
        "n"(int32_t(TransA)), "n"(int32_t(TransB)));
}

// SKEW (0 or a multiple of 128) puts the tiles that many bytes past a 1024-byte boundary, where
// the static mbarriers of the fast.cu worklog's kernels 4, 5, 7 and 9 put theirs (128 bytes
// past): the TMA writes them in the swizzle of their absolute addresses, and the descriptors
// keep base offset 0, where PTX asks for the pattern's phase. The lab's simulator reads them
// as the TMA wrote them; the row with SKEW 128 checks that a GPU does too.
template <int BM, int BN, int BK, int QSIZE, int SKEW = 0>
__global__ void __launch_bounds__(128)
    hgemm_wgmma_tma(int M, int N, int K, float *C, const __grid_constant__ CUtensorMap tensorMapA,
                    const __grid_constant__ CUtensorMap tensorMapB) {
  static_assert(BM == 64 && BN == 128 && BK == 64, "one m64n128k16 warpgroup, 128-byte rows of K");
  static_assert(SKEW % 128 == 0 && SKEW < 1024, "TMA destinations are 128-byte aligned");
  // The 128B swizzle repeats every 1024 bytes: the launch gives 1024 bytes of slack to start
  // the tiles on that boundary (plus SKEW).
  extern __shared__ unsigned char smem_raw[];
  const uint32_t pad = (1024 - (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) & 1023)) & 1023;
  bf16 *sA = reinterpret_cast<bf16 *>(smem_raw + pad + SKEW);
  bf16 *sB = sA + QSIZE * BM * BK;
  uint64_t *full = reinterpret_cast<uint64_t *>(sB + QSIZE * BN * BK);

  const int num_blocks_k = (K + BK - 1) / BK;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  if (threadIdx.x == 0) {
    for (int s = 0; s < QSIZE; ++s) init_barrier(&full[s], 1);
  }
  __syncthreads();
  auto issue = [&](int kt) {
    const int s = kt % QSIZE;
    expect_bytes(&full[s], (BM + BN) * BK * sizeof(bf16));
    load_async(&sA[s * BM * BK], &tensorMapA, &full[s], kt * BK, m0);
    load_async(&sB[s * BN * BK], &tensorMapB, &full[s], kt * BK, n0);
  };
  if (threadIdx.x == 0)
    for (int kt = 0; kt < QSIZE && kt < num_blocks_k; ++kt) issue(kt);

  float d[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) d[i][j] = 0.0f;
  for (int kt = 0; kt < num_blocks_k; ++kt) {
    const int s = kt % QSIZE;
    wait(&full[s], (kt / QSIZE) & 1);
    warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma128<1, 1, 1, 0, 0>(d, &sA[s * BM * BK + kk * 16], &sB[s * BN * BK + kk * 16]);
    warpgroup_commit_batch();
    warpgroup_wait<0>();
    // Every warp's wgmma has read stage s before thread 0 refills it.
    __syncthreads();
    if (threadIdx.x == 0 && kt + QSIZE < num_blocks_k) issue(kt + QSIZE);
  }

  // The m64nNk16 D layout: warp w holds rows 16w..16w+15; with g = lane / 4, t = lane % 4,
  // element 4j + {0,1} is D[16w + g][8j + 2t + {0,1}], 4j + {2,3} the same 8 rows down.
  const float *f = &d[0][0];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row = m0 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row + (e / 2) * 8, c = n0 + 8 * j + 2 * (lane % 4) + e % 2;
      if (r < M && c < N) C[(size_t)r * N + c] = f[4 * j + e];
    }
  }
}

// ---- Host code (the lab never compiles it) ----

static void create_tensor_map(CUtensorMap *map, bf16 *ptr, int rows, int cols, int box_rows, int box_cols) {
  uint64_t shape[2] = {(uint64_t)cols, (uint64_t)rows};
  uint64_t stride[1] = {sizeof(bf16) * cols};
  uint32_t box[2] = {(uint32_t)box_cols, (uint32_t)box_rows};
  uint32_t elem_stride[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, ptr, shape, stride, box, elem_stride,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) fprintf(stderr, "cuTensorMapEncodeTiled failed: %d\n", (int)r);
}

void run_hgemm_wgmma_tma(int M, int N, int K, bf16 *A, bf16 *B, float *C) {
  constexpr int BM = 64, BN = 128, BK = 64, QSIZE = 3;
  CUtensorMap mapA, mapB;
  create_tensor_map(&mapA, A, M, K, BM, BK);
  create_tensor_map(&mapB, B, N, K, BN, BK);
  const size_t smem = QSIZE * (BM + BN) * BK * sizeof(bf16) + 1024 + QSIZE * sizeof(uint64_t);
  auto kernel = hgemm_wgmma_tma<BM, BN, BK, QSIZE>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  kernel<<<grid, 128, smem>>>(M, N, K, C, mapA, mapB);
}
