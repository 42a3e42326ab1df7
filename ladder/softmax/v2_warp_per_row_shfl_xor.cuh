// SPDX-License-Identifier: Apache-2.0
// Ladder step 2: one warp per row with a butterfly (shfl_xor) all-reduce: every lane ends
// with the row max and sum, so no shared memory and no __syncwarp. Still three passes over
// the row in global memory, scalar loads. f32 only. (The library, kLibrary, then keeps the
// row on chip between one read and one write: in a lane group's registers, in a block's
// shared memory, or split over a cluster or a cooperative grid; 16-byte accesses.)
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::ladder::softmax {

inline constexpr int kV2Block = 128;
inline constexpr int kV2Warps = kV2Block / kWarpSize;

template <int = 0>
__global__ void __launch_bounds__(kV2Block)
    v2_kernel(const float* in, float* out, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  for (int64_t row = blockIdx.x * int64_t{kV2Warps} + threadIdx.x / kWarpSize; row < rows;
       row += int64_t{gridDim.x} * kV2Warps) {
    const float* x = in + row * cols;
    float m = -INFINITY;
    for (int64_t c = lane; c < cols; c += kWarpSize)
      m = Max{}(m, x[c]);
    m = warp_all_reduce<kWarpSize>(m, Max{});  // every lane holds the row max
    float s = 0.f;
    for (int64_t c = lane; c < cols; c += kWarpSize)
      s += expf(x[c] - m);
    s = warp_all_reduce<kWarpSize>(s, Sum{});  // every lane holds the row sum
    const float inv = 1.f / s;
    for (int64_t c = lane; c < cols; c += kWarpSize)
      out[row * cols + c] = expf(x[c] - m) * inv;
  }
}

// softmax over the rows of a rows x cols f32 matrix (the library's signature).
inline cudaError_t v2_warp_per_row_shfl_xor(const float* in, float* out, int64_t rows, int64_t cols,
                                            cudaStream_t stream) {
  KERNELKIT_REQUIRE(softmax_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(ceil_div<int64_t>(rows, kV2Warps) * kV2Block, kV2Block, d);
  v2_kernel<<<grid, kV2Block, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::softmax
