// SPDX-License-Identifier: Apache-2.0
// Ladder step 2: one warp per row (four a block). Lane l walks columns l, l + 32, ...:
// each load instruction of the warp reads 128 contiguous bytes (coalesced), where v1's
// touched 32 rows. Each lane keeps v1's Welford statistics of its own columns; the warp
// then combines the lanes with two butterfly sums (warp_all_reduce, every lane gets the
// result): the row's mean from the plain sums, and M2 = sum over lanes of (M2_l + n_l *
// (mean_l - mean)^2) (Chan's combination of groups: every term >= 0, no cancellation).
// Still two reads of the row (statistics, then the write) and scalar 4-byte loads; the
// second read hits L2 only where the rows in flight fit it (65536x768: 25 MB; 8192x4096 has
// every row in flight at once, 128 MB). Predicted ~0.55 of SOL at 8192x4096 and 4096x16384
// (1.5x the fewest bytes through DRAM), ~0.65 at 65536x768.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/warp/warp.cuh"
#include "ladder/layer_norm/common.cuh"
#include "ladder/layer_norm/v1_welford.cuh"

namespace kernelkit::ladder::layer_norm {

inline constexpr int kV2Block = 128;
inline constexpr int kV2Warps = kV2Block / kWarpSize;

template <int = 0>
__global__ void __launch_bounds__(kV2Block)
    v2_kernel(const float* x, const float* weight, const float* bias, float* y, float* mean_out,
              float* rstd_out, int64_t rows, int64_t cols, float eps) {
  const int lane = threadIdx.x % kWarpSize;
  const float inv_cols = 1.f / static_cast<float>(cols);
  // row is the same for every lane of a warp: the shuffles below are convergent
  for (int64_t row = blockIdx.x * int64_t{kV2Warps} + threadIdx.x / kWarpSize; row < rows;
       row += int64_t{gridDim.x} * kV2Warps) {
    const float* xr = x + row * cols;
    Welford w;  // this lane's columns
    for (int64_t c = lane; c < cols; c += kWarpSize)
      welford_push(w, xr[c]);
    const float mean = __fmul_rn(warp_all_reduce<kWarpSize>(w.sum, Sum{}), inv_cols);
    const float d = w.mean - mean;
    const float mine = w.n > 0 ? w.m2 + static_cast<float>(w.n) * d * d : 0.f;
    const float m2 = warp_all_reduce<kWarpSize>(mine, Sum{});
    const float rstd = rsqrtf(m2 * inv_cols + eps);  // every lane holds mean and rstd
    if (lane == 0) {
      if (mean_out != nullptr) mean_out[row] = mean;
      if (rstd_out != nullptr) rstd_out[row] = rstd;
    }
    float* yr = y + row * cols;
    for (int64_t c = lane; c < cols; c += kWarpSize)
      yr[c] = affine(xr[c], mean, rstd, weight, bias, c);
  }
}

// layer_norm of the rows of a rows x cols f32 matrix (the library's signature).
inline cudaError_t v2_warp_per_row(const float* x, const float* weight, const float* bias, float* y,
                                   float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                   cudaStream_t stream) {
  KERNELKIT_REQUIRE(args_ok(x, weight, bias, y, mean, rstd, rows, cols, eps));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(ceil_div<int64_t>(rows, kV2Warps) * kV2Block, kV2Block, d);
  v2_kernel<<<grid, kV2Block, 0, stream>>>(x, weight, bias, y, mean, rstd, rows, cols, eps);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::layer_norm
