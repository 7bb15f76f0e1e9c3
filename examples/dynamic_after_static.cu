// Where a GPU puts the dynamic shared memory of a kernel that has static shared variables:
// right after them, as ptxas counts their bytes, not on a 1024-byte boundary. Three mbarriers
// (24 bytes, padded to 32) put the `extern __shared__` buffer 32 bytes past one. A Hopper
// kernel that puts a TMA destination or a 128-byte swizzled tile at the start of that buffer
// must align it at run time, as the lab's rungs do. The kernel traps if its buffer starts
// anywhere else, so that the same row checks the simulator's layout and a GPU's:
//
//   harness check --workload gemm --sizes 5x7x3 \
//     --kernel 'examples/dynamic_after_static.cu:after_bars,signature=gemm-blas,block=256,grid=(cdiv(M*N,256)),smem=1024'
//
// Past that check, a GEMM of one output per thread, C = alpha A B + beta C.
__global__ void after_bars(int M, int N, int K, float alpha, const float *A, const float *B,
                           float beta, float *C) {
    __shared__ __align__(8) unsigned long long bars[3];
    extern __shared__ unsigned char smem[];
    if (threadIdx.x == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(
            (unsigned)__cvta_generic_to_shared(&bars[2])));
    __syncthreads();
    if (((unsigned)__cvta_generic_to_shared(smem) & 1023) != 32) __trap();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M * N) return;
    float t = 0.f;
    for (int k = 0; k < K; ++k) t += A[i / N * K + k] * B[k * N + i % N];
    C[i] = alpha * t + beta * C[i];
}
