// SPDX-License-Identifier: Apache-2.0
// Ladder step 0: layer norm as the formula reads, one thread per row: a pass over the row
// for the mean, a second for the variance (the mean of squared deviations, exact in float
// for any offset of the data), a third that writes. Each sum runs in two levels, a float
// partial per kV0Chunk columns added into the row's total: one float accumulator of 3 x 10^5
// terms drifts ~3e-5 relative (the variance's sum of positive terms), past the tests' 2e-5;
// chunks of 256 keep it under 1e-6. Three reads of every row, each a thread's own walk
// along it: a warp's 32 loads touch 32 rows (32 sectors for 128 useful bytes), so L1 turns
// every load instruction into 32 wavefronts, and few rows leave most of the machine idle
// (8192 rows: 128 blocks of 64 threads). The baseline; predicted ~0.1 of SOL at 8192x4096,
// 0.07 at 4096x16384 (64 SMs busy), 0.15 at 65536x768 (every SM busy).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "ladder/layer_norm/common.cuh"

namespace kernelkit::ladder::layer_norm {

inline constexpr int kV0Block = 64;
inline constexpr int kV0Chunk = 256;  // columns a float partial sum takes

template <int = 0>
__global__ void __launch_bounds__(kV0Block)
    v0_kernel(const float* x, const float* weight, const float* bias, float* y, float* mean_out,
              float* rstd_out, int64_t rows, int64_t cols, float eps) {
  const float inv_cols = 1.f / static_cast<float>(cols);
  for (int64_t row = blockIdx.x * int64_t{kV0Block} + threadIdx.x; row < rows;
       row += int64_t{gridDim.x} * kV0Block) {
    const float* xr = x + row * cols;
    float s = 0.f;
    for (int64_t c0 = 0; c0 < cols; c0 += kV0Chunk) {
      const int64_t end = c0 + kV0Chunk < cols ? c0 + kV0Chunk : cols;
      float part = 0.f;
      for (int64_t c = c0; c < end; ++c)
        part += xr[c];
      s += part;
    }
    const float mean = __fmul_rn(s, inv_cols);
    float ss = 0.f;
    for (int64_t c0 = 0; c0 < cols; c0 += kV0Chunk) {
      const int64_t end = c0 + kV0Chunk < cols ? c0 + kV0Chunk : cols;
      float part = 0.f;
      for (int64_t c = c0; c < end; ++c)
        part += (xr[c] - mean) * (xr[c] - mean);
      ss += part;
    }
    const float rstd = rsqrtf(ss * inv_cols + eps);
    if (mean_out != nullptr) mean_out[row] = mean;
    if (rstd_out != nullptr) rstd_out[row] = rstd;
    float* yr = y + row * cols;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = affine(xr[c], mean, rstd, weight, bias, c);
  }
}

// layer_norm of the rows of a rows x cols f32 matrix (the library's signature).
inline cudaError_t v0_naive(const float* x, const float* weight, const float* bias, float* y,
                            float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                            cudaStream_t stream) {
  KERNELKIT_REQUIRE(args_ok(x, weight, bias, y, mean, rstd, rows, cols, eps));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(rows, kV0Block, d);
  v0_kernel<<<grid, kV0Block, 0, stream>>>(x, weight, bias, y, mean, rstd, rows, cols, eps);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::layer_norm
