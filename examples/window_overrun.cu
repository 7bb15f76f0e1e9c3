// A write past a local array, for the simulator to find: `load` fills REPS rows of `vals` and
// is given the count of lanes where the count of rows belongs, so it writes a second row past
// the end of the caller's one-row array. Inside `load` the array is a pointer; once the call
// is inlined, the compiler sees which array it points into.
//
//   harness run --workload eltwise --kernel examples/window_overrun.cu:sum4,block=256,grid=cdiv(M*N,256),args=(X,Y,M,N)
//
// Without a GPU the row runs in the simulator, which fails it at the write, with its line.
template <int REPS, int WIDTH>
__device__ void load(float vals[REPS][WIDTH], const float *x, int i, int n) {
    for (int r = 0; r < REPS; ++r)
        for (int c = 0; c < WIDTH; ++c) vals[r][c] = x[(i + r * WIDTH + c) % n];
}

__global__ void sum4(const float *X, float *Y, int M, int N) {
    constexpr int REPS = 1, WIDTH = 4, LANES = 2;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float vals[REPS][WIDTH];
    load<LANES, WIDTH>(vals, X, i, M * N);  // BUG: REPS rows, not LANES
    if (i < M * N) Y[i] = vals[0][0] + vals[0][1] + vals[0][2] + vals[0][3];
}
