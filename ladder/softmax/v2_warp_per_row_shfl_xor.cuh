// Ladder step 2: one warp per row with a butterfly (shfl_xor) all-reduce: every lane ends
// with the row max and sum, so no shared memory and no __syncwarp. Still three passes over
// the row in global memory, scalar loads. f32 only.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit {
namespace ladder {
namespace softmax_v2 {

inline constexpr int kBlock = 128;
inline constexpr int kWarps = kBlock / kWarpSize;

static __global__ void __launch_bounds__(kBlock)
    softmax_kernel(const float* in, float* out, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  for (int64_t row = blockIdx.x * int64_t{kWarps} + threadIdx.x / kWarpSize; row < rows;
       row += int64_t{gridDim.x} * kWarps) {
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

}  // namespace softmax_v2

[[nodiscard]] inline cudaError_t softmax_v2_warp_per_row_shfl_xor(const float* in, float* out,
                                                                  int64_t rows, int64_t cols,
                                                                  cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(rows >= 0 && cols >= 0);
  if (rows == 0 || cols == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(in != nullptr && out != nullptr);
  KERNELKIT_REQUIRE(rows <= INT64_MAX / cols);
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(rows * kWarpSize, softmax_v2::kBlock, &grid));
  softmax_v2::softmax_kernel<<<grid, softmax_v2::kBlock, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

}  // namespace ladder
}  // namespace kernelkit
