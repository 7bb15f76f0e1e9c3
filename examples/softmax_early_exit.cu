// A row softmax whose threads past the row's end return before the block's barriers, as many
// kernels launched with a fixed block do: one block of 256 threads per row of at most 256
// elements.
//
//   harness check --workload softmax --sizes 3x5,37x130,2x256 \
//     --kernel 'examples/softmax_early_exit.cu:softmax_early_exit,block=256,grid=(M)'
//
// A barrier does not wait for threads that have exited: PTX's `exit` releases one that only
// exited threads hold up, so the N threads left go on, and __syncthreads_count counts those
// that reached it. The kernel traps if the count is any other, so that the same row checks the
// simulator's barrier and a GPU's.
__global__ void softmax_early_exit(const float *X, float *Y, int M, int N) {
    __shared__ float s[256];
    __shared__ float stat[2];  // the row's maximum and the sum of its exponentials
    const int row = blockIdx.x, t = threadIdx.x;
    if (N > 256) __trap();  // one element a thread
    if (t >= N) return;
    const float x = X[row * N + t];
    s[t] = x;
    if (__syncthreads_count(1) != N) __trap();
    if (t == 0) {
        float m = -INFINITY, sum = 0.f;
        for (int i = 0; i < N; ++i) m = fmaxf(m, s[i]);
        for (int i = 0; i < N; ++i) sum += expf(s[i] - m);
        stat[0] = m;
        stat[1] = sum;
    }
    __syncthreads();
    Y[row * N + t] = expf(x - stat[0]) / stat[1];
}
