// SPDX-License-Identifier: Apache-2.0
// Ladder step 3: one block of 256 threads per row, the row read once into shared memory
// (up to 12288 columns: 48 KiB, within what every GPU from sm_75 lets a block have; wider
// rows are declined, v3_block_smem_supports). With the row on chip the exact two-pass
// formula costs no second read: block_all_reduce of the sum gives the mean, of the squared
// deviations (from shared memory) the variance, then y is written from shared memory.
// Thread t stores and reads back columns t, t + 256, ...: shared memory is room for the row
// here, not a channel between threads, so the row needs no barrier of its own. Each thread
// keeps kV3Unroll loads in flight before it stores them. Scalar 4-byte accesses; two block
// reductions a row (narrow rows leave most of the block idle for them). Predicted ~0.8 of
// SOL at 8192x4096, ~0.6 at 65536x768.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/types.cuh"
#include "ladder/layer_norm/common.cuh"

namespace kernelkit::ladder::layer_norm {

inline constexpr int kV3Block = 256;
inline constexpr int kV3Unroll = 8;
inline constexpr int64_t kV3MaxCols = 48 * 1024 / sizeof(float);

// The widths v3 takes: rows that fit 48 KiB of shared memory.
inline bool v3_block_smem_supports(int64_t, int64_t cols) {
  return cols <= kV3MaxCols;
}

template <int = 0>
__global__ void __launch_bounds__(kV3Block)
    v3_kernel(const float* x, const float* weight, const float* bias, float* y, float* mean_out,
              float* rstd_out, int64_t rows, int cols, float eps) {
  extern __shared__ float row_smem[];  // cols floats
  const int t = static_cast<int>(threadIdx.x);
  const float inv_cols = 1.f / static_cast<float>(cols);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    // read once: kV3Unroll loads in flight a thread, then their stores to shared memory
    float s = 0.f;
    for (int c0 = t; c0 < cols; c0 += kV3Unroll * kV3Block) {
      float v[kV3Unroll];
#pragma unroll
      for (int u = 0; u < kV3Unroll; ++u) {
        const int c = c0 + u * kV3Block;
        v[u] = c < cols ? xr[c] : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kV3Unroll; ++u) {
        const int c = c0 + u * kV3Block;
        if (c < cols) row_smem[c] = v[u];
        s += v[u];
      }
    }
    // (block_all_reduce's barriers also order the stores above before the reads below)
    const float mean = __fmul_rn(block_all_reduce<kV3Block>(s, Sum{}), inv_cols);
    float ss = 0.f;
    for (int c = t; c < cols; c += kV3Block)
      ss += (row_smem[c] - mean) * (row_smem[c] - mean);
    const float rstd = rsqrtf(block_all_reduce<kV3Block>(ss, Sum{}) * inv_cols + eps);
    if (t == 0) {
      if (mean_out != nullptr) mean_out[row] = mean;
      if (rstd_out != nullptr) rstd_out[row] = rstd;
    }
    float* yr = y + row * cols;
    for (int c = t; c < cols; c += kV3Block)
      yr[c] = affine(row_smem[c], mean, rstd, weight, bias, c);
    // (no barrier before the next row: a thread reads back only the elements it stored)
  }
}

// layer_norm of the rows of a rows x cols f32 matrix (the library's signature); rows wider
// than kV3MaxCols: cudaErrorInvalidValue.
inline cudaError_t v3_block_smem(const float* x, const float* weight, const float* bias, float* y,
                                 float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                 cudaStream_t stream) {
  KERNELKIT_REQUIRE(args_ok(x, weight, bias, y, mean, rstd, rows, cols, eps) &&
                    v3_block_smem_supports(rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  // once per kernel and device: the full 48 KiB of dynamic shared memory (past the default
  // limit by the block reduction's static slots: an opt-in every GPU from sm_75 grants) and
  // the largest shared-memory carveout (the row is read once: L1 is of no use)
  KERNELKIT_RETURN_IF_ERROR(once_per_kernel(reinterpret_cast<const void*>(v3_kernel<0>), [] {
    KERNELKIT_RETURN_IF_ERROR(cudaFuncSetAttribute(v3_kernel<0>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   static_cast<int>(kV3MaxCols * sizeof(float))));
    return cudaFuncSetAttribute(v3_kernel<0>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared);
  }));
  const size_t smem = static_cast<size_t>(cols) * sizeof(float);
  // (+ 64: the block reduction's static slots)
  const int blocks_per_sm = std::max(
      1, std::min(d.max_threads_per_sm / kV3Block,
                  d.smem_per_sm / static_cast<int>(smem + 64 + d.smem_reserved_per_block)));
  const int grid = grid_size_for(rows * kV3Block, kV3Block, d, kDefaultWaves, blocks_per_sm);
  v3_kernel<<<grid, kV3Block, smem, stream>>>(x, weight, bias, y, mean, rstd, rows,
                                              static_cast<int>(cols), eps);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::layer_norm
