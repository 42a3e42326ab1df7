// Ladder step 1: one warp per row. Each lane strides over the row (coalesced scalar
// loads), the warp reduces with shfl_down (result in lane 0) and lane 0 broadcasts it
// through shared memory. Three passes over the row in global memory (max, sum, write);
// the second and third mostly hit L1/L2. f32 only.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit {
namespace ladder {
namespace softmax_v1 {

inline constexpr int kBlock = 128;
inline constexpr int kWarps = kBlock / kWarpSize;

static __global__ void __launch_bounds__(kBlock)
    softmax_kernel(const float* in, float* out, int64_t rows, int64_t cols) {
  __shared__ float broadcast[kWarps];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  for (int64_t row = blockIdx.x * int64_t{kWarps} + warp; row < rows;
       row += int64_t{gridDim.x} * kWarps) {
    const float* x = in + row * cols;
    float m = -INFINITY;
    for (int64_t c = lane; c < cols; c += kWarpSize)
      m = Max{}(m, x[c]);
    m = warp_reduce<kWarpSize>(m, Max{});  // lane 0 holds the row max
    if (lane == 0) broadcast[warp] = m;
    __syncwarp();
    m = broadcast[warp];
    __syncwarp();  // every lane has read before lane 0 writes the sum
    float s = 0.f;
    for (int64_t c = lane; c < cols; c += kWarpSize)
      s += expf(x[c] - m);
    s = warp_reduce<kWarpSize>(s, Sum{});  // lane 0 holds the row sum
    if (lane == 0) broadcast[warp] = s;
    __syncwarp();
    const float inv = 1.f / broadcast[warp];
    __syncwarp();  // read before the next row's max is written
    for (int64_t c = lane; c < cols; c += kWarpSize)
      out[row * cols + c] = expf(x[c] - m) * inv;
  }
}

}  // namespace softmax_v1

[[nodiscard]] inline cudaError_t softmax_v1_warp_per_row_shfl_down(const float* in, float* out,
                                                                   int64_t rows, int64_t cols,
                                                                   cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(rows >= 0 && cols >= 0);
  if (rows == 0 || cols == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(in != nullptr && out != nullptr);
  KERNELKIT_REQUIRE(rows <= INT64_MAX / cols);
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(rows * kWarpSize, softmax_v1::kBlock, &grid));
  softmax_v1::softmax_kernel<<<grid, softmax_v1::kBlock, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

}  // namespace ladder
}  // namespace kernelkit
