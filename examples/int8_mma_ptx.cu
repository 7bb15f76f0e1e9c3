// An int8 tensor-core GEMM with mma.sync m16n8k32 (sm_80 and later: s8 operands, s32
// accumulators) as inline PTX: C[M,N] = A[M,K] B[N,K]^T, A and B in int8, C in int32.
//
//   harness run --workload gemm \
//     --kernel 'examples/int8_mma_ptx.cu:int8_mma_gemm,dtype=s8,C:i32,b=col,block=128,grid=tile:32x32'
//
// examples/fp8_mma_ptx.cu with integers: the same tiles, staging and fragment layouts (lane
// 4g + t: rows g and g + 8, K 4t..4t+3 and 4t+16..4t+19, four bytes a 32-bit register, the
// lowest K in the low byte), the same 32x32 tile of C per block of 4 warps. The sums are
// exact: an int8 GEMM is checked against its integer result with no rounding at all.
//
// For sm_90, ptxas issues each m16n8k32 as one IMMA.16832.S8.S8 on the tensor cores
// (`harness inspect --sass --arch sm_90 examples/int8_mma_ptx.cu`), unlike FP8's, which it
// unpacks to FP16.
#include <cstdint>

#define TILE 32
// Bytes a staged row: 32 and 16 of padding, so that the 8 rows x 4 words a fragment load
// reads fall in 32 different banks (12g + t mod 32).
#define ROW 48

__device__ __forceinline__ uint32_t word(const int8_t *s, int row, int col) {
  return *reinterpret_cast<const uint32_t *>(s + row * ROW + col);
}

__global__ void int8_mma_gemm(const int8_t *A, const int8_t *B, int *C, int M, int N, int K) {
  __shared__ __align__(16) int8_t As[TILE * ROW], Bs[TILE * ROW];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wm = (warp / 2) * 16, wn = (warp % 2) * 16;  // the warp's 16x16 of the tile
  const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
  int d[2][4] = {};
  for (int k0 = 0; k0 < K; k0 += TILE) {
    for (int i = threadIdx.x; i < TILE * TILE; i += blockDim.x) {
      const int r = i / TILE, c = i % TILE;
      As[r * ROW + c] = (m0 + r < M && k0 + c < K) ? A[(size_t)(m0 + r) * K + k0 + c] : 0;
      Bs[r * ROW + c] = (n0 + r < N && k0 + c < K) ? B[(size_t)(n0 + r) * K + k0 + c] : 0;
    }
    __syncthreads();
    const uint32_t a0 = word(As, wm + g, 4 * t), a1 = word(As, wm + g + 8, 4 * t);
    const uint32_t a2 = word(As, wm + g, 4 * t + 16), a3 = word(As, wm + g + 8, 4 * t + 16);
    for (int j = 0; j < 2; ++j) {
      const uint32_t b0 = word(Bs, wn + 8 * j + g, 4 * t);
      const uint32_t b1 = word(Bs, wn + 8 * j + g, 4 * t + 16);
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+r"(d[j][0]), "+r"(d[j][1]), "+r"(d[j][2]), "+r"(d[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    __syncthreads();
  }
  // d[j][0..1]: row g, columns 2t and 2t + 1 of the j-th 16x8; d[j][2..3]: row g + 8.
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 4; ++i) {
      const int row = m0 + wm + g + 8 * (i / 2), col = n0 + wn + 8 * j + 2 * t + i % 2;
      if (row < M && col < N) C[(size_t)row * N + col] = d[j][i];
    }
}
