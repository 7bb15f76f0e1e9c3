// 17_mma_bf16.cu: rung 16 on BF16 operands. This file is compiled after rung 16's source
// (the plan appends it), whose template body it instantiates for BF16.
//
// What changed since 16 and why: the element type. BF16 keeps FP32's 8-bit exponent with an
// 8-bit significand, 7 bits stored (FP16: 5-bit exponent, 11-bit significand), so products of large activations or gradients cannot
// overflow; it is what models train in. The tensor cores run m16n8k16 BF16 at the FP16 rate
// with the same fragment layouts, so the ring, the swizzle, ldmatrix and the double buffering
// stay as they are (they move 16-bit codes without reading them) and only the instruction
// becomes mma.sync...bf16. Rounding an input to BF16 costs up to 2^-8 relative (the unit
// roundoff of an 8-bit significand) instead of FP16's 2^-11: the BF16 tolerance of the table. cuBLAS BF16 (cublas-bf16) is this row's bar.

extern "C" __global__ void __launch_bounds__(NTHREADS)
    gemm_mma_bf16(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
                  float *__restrict__ C, int M, int N, int K) {
    gemm_mma_body<true>(reinterpret_cast<const unsigned short *>(A),
                        reinterpret_cast<const unsigned short *>(B), C, M, N, K, gemm_smem);
}
