// The forward convolution as CUDA courses first teach it: one thread per output pixel, the
// filter bank ("mask") in __constant__ memory, which the host fills with
// cudaMemcpyToSymbol(Mc, ...) before the launch. The lab fills it the same way: constant=Mc:filter
// copies the workload's filter into Mc before each launch. Every thread of a warp reads the
// same mask element at the same time, the access constant memory's cache broadcasts.
//
//   harness run --device sim --workload conv \
//     --kernel 'examples/conv_constant_mask.cu:conv_forward_kernel,args=(y,x,B,M,C,H,W,K),constant=Mc:filter,block=16x16,grid=(M,cdiv(WO,16)*cdiv(HO,16),B)'
//
// Grid: x over output channels, y over 16x16 tiles of the output image, z over the batch.
#define TILE_WIDTH 16
// The largest filter bank it takes (M * C * K * K floats): 48 KiB of the 64 KiB of constant
// memory. The lab refuses a shape whose filter is larger, naming the array's size.
#define MAX_MASK (12 * 1024)

__constant__ float Mc[MAX_MASK];

__global__ void conv_forward_kernel(float *y, const float *x, const int B, const int M, const int C,
                                    const int H, const int W, const int K) {
  const int H_out = H - K + 1;
  const int W_out = W - K + 1;
  const int W_grid = (W_out + TILE_WIDTH - 1) / TILE_WIDTH;
#define y4d(i3, i2, i1, i0) y[(i3) * (M * H_out * W_out) + (i2) * (H_out * W_out) + (i1) * (W_out) + i0]
#define x4d(i3, i2, i1, i0) x[(i3) * (C * H * W) + (i2) * (H * W) + (i1) * (W) + i0]
#define k4d(i3, i2, i1, i0) Mc[(i3) * (C * K * K) + (i2) * (K * K) + (i1) * (K) + i0]
  const int m = blockIdx.x;
  const int h = (blockIdx.y / W_grid) * TILE_WIDTH + threadIdx.y;
  const int w = (blockIdx.y % W_grid) * TILE_WIDTH + threadIdx.x;
  const int b = blockIdx.z;
  if (h < H_out && w < W_out) {
    float acc = 0.0f;
    for (int c = 0; c < C; ++c)
      for (int p = 0; p < K; ++p)
        for (int q = 0; q < K; ++q) acc += x4d(b, c, h + p, w + q) * k4d(m, c, p, q);
    y4d(b, m, h, w) = acc;
  }
#undef y4d
#undef x4d
#undef k4d
}
