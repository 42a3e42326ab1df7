// SPDX-License-Identifier: Apache-2.0
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
#include "kernelkit/softmax/softmax.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::ladder::softmax {

inline constexpr int kV1Block = 128;
inline constexpr int kV1Warps = kV1Block / kWarpSize;

template <int = 0>
__global__ void __launch_bounds__(kV1Block)
    v1_kernel(const float* in, float* out, int64_t rows, int64_t cols) {
  __shared__ float broadcast[kV1Warps];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  for (int64_t row = blockIdx.x * int64_t{kV1Warps} + warp; row < rows;
       row += int64_t{gridDim.x} * kV1Warps) {
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

// softmax over the rows of a rows x cols f32 matrix (the library's signature).
inline cudaError_t v1_warp_per_row_shfl_down(const float* in, float* out, int64_t rows,
                                             int64_t cols, cudaStream_t stream) {
  KERNELKIT_REQUIRE(softmax_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(ceil_div<int64_t>(rows, kV1Warps) * kV1Block, kV1Block, d);
  v1_kernel<<<grid, kV1Block, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::softmax
