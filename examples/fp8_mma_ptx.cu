// An FP8 tensor-core GEMM with mma.sync m16n8k32 (sm_89 and later: E4M3 operands, FP32
// accumulators) as inline PTX: C[M,N] = A[M,K] B[N,K]^T, A and B in E4M3, C in FP32.
//
//   harness run --workload gemm \
//     --kernel 'examples/fp8_mma_ptx.cu:fp8_mma_gemm,dtype=e4m3,C:f32,b=col,block=128,grid=tile:32x32'
//
// Each block computes a 32x32 tile of C with 4 warps (2x2, 16x16 each: two m16n8k32). Per
// 32-deep K step the block stages the 32x32-byte tiles of A and B in shared memory (zeros past
// the matrix edges), and each lane reads its fragment registers straight from them: four
// consecutive K elements a 32-bit register, where the m16n8k32 layouts place them (lane
// 4g + t: rows g and g + 8, K 4t..4t+3 and 4t+16..4t+19; the lowest K in the low byte).
//
// On an H100 this cannot beat FP16: for sm_90, ptxas turns each m16n8k32 into
// F2FP.F16.E4M3.UNPACK_B conversions of the bytes to FP16 and two HMMA.16816.F32, FP16's own
// instruction for the same 32 of K, so the tensor cores do FP16's work plus the conversions
// (`harness inspect --sass --arch sm_90 examples/fp8_mma_ptx.cu`). Hopper's FP8 rate is
// wgmma's alone.
#include <cstdint>
#include <cuda_fp8.h>

#define TILE 32
// Bytes a staged row: 32 and 16 of padding, so that the 8 rows x 4 words a fragment load
// reads fall in 32 different banks (12g + t mod 32).
#define ROW 48

__device__ __forceinline__ uint32_t word(const unsigned char *s, int row, int col) {
  return *reinterpret_cast<const uint32_t *>(s + row * ROW + col);
}

__global__ void fp8_mma_gemm(const __nv_fp8_e4m3 *A, const __nv_fp8_e4m3 *B, float *C, int M,
                             int N, int K) {
  __shared__ __align__(16) unsigned char As[TILE * ROW], Bs[TILE * ROW];
  const unsigned char *a = reinterpret_cast<const unsigned char *>(A);
  const unsigned char *b = reinterpret_cast<const unsigned char *>(B);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int wm = (warp / 2) * 16, wn = (warp % 2) * 16;  // the warp's 16x16 of the tile
  const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
  float d[2][4] = {};
  for (int k0 = 0; k0 < K; k0 += TILE) {
    for (int i = threadIdx.x; i < TILE * TILE; i += blockDim.x) {
      const int r = i / TILE, c = i % TILE;
      As[r * ROW + c] = (m0 + r < M && k0 + c < K) ? a[(size_t)(m0 + r) * K + k0 + c] : 0;
      Bs[r * ROW + c] = (n0 + r < N && k0 + c < K) ? b[(size_t)(n0 + r) * K + k0 + c] : 0;
    }
    __syncthreads();
    const uint32_t a0 = word(As, wm + g, 4 * t), a1 = word(As, wm + g + 8, 4 * t);
    const uint32_t a2 = word(As, wm + g, 4 * t + 16), a3 = word(As, wm + g + 8, 4 * t + 16);
    for (int j = 0; j < 2; ++j) {
      const uint32_t b0 = word(Bs, wn + 8 * j + g, 4 * t);
      const uint32_t b1 = word(Bs, wn + 8 * j + g, 4 * t + 16);
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
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
