// SPDX-License-Identifier: Apache-2.0
// Ladder step 1: one thread per row, the mean and variance in one pass (Welford): after k
// elements a thread holds their count, mean and M2 = sum of squared deviations from that
// mean; element k + 1 moves the mean by delta / (k + 1) (delta = x - mean) and adds delta *
// (x - new mean) to M2. Every term added to M2 is >= 0 up to rounding, so var = M2 / cols
// keeps its relative accuracy however large the mean is against the spread. The other
// one-pass formula, var = E[x^2] - E[x]^2, subtracts two numbers of size mean^2: with
// |mean| / stddev = 10^3 in float (24 bits) it cancels 20 of them and keeps ~4 bits of the
// variance (negative ones happen). Welford runs over chunks of kV1Chunk columns, and the
// chunks' statistics merge by Chan's formula (welford_merge: the two means' difference
// squared, weighted by the counts, joins the M2s): one running M2 of 3 x 10^5 terms drifts
// ~3e-5 relative in float, chunks of 256 keep it under 1e-6 (v2 merges its lanes the same
// way). Two reads of every row instead of v0's three (statistics, then the write); still a
// thread's own walk along its row. Welford's running mean turns NaN after an inf (inf -
// inf): the plain sum kept beside it (one add an element) gives the row's mean then, +-inf
// as the float64 formula does. Predicted ~0.13 of SOL at 8192x4096, 0.2 at 65536x768.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "ladder/layer_norm/common.cuh"

namespace kernelkit::ladder::layer_norm {

inline constexpr int kV1Block = 64;
inline constexpr int kV1Chunk = 256;  // columns a Welford run takes before it is merged

// The running statistics of the elements seen so far: count, mean, M2 (sum of squared
// deviations from the mean) and the plain sum.
struct Welford {
  int64_t n = 0;  // (a float count stops growing at 2^24)
  float mean = 0.f, m2 = 0.f, sum = 0.f;
};

// Welford's update with one more element v.
__device__ __forceinline__ void welford_push(Welford& w, float v) {
  ++w.n;
  const float delta = v - w.mean;
  // (__fdividef: within 2 ulps, no IEEE division's slow-path call, which spilled here)
  w.mean += __fdividef(delta, static_cast<float>(w.n));
  w.m2 += delta * (v - w.mean);
  w.sum += v;
}

// Chan's merge: the statistics of a's elements and b's together.
__device__ __forceinline__ Welford welford_merge(Welford a, const Welford& b) {
  if (b.n == 0) return a;
  const int64_t n = a.n + b.n;
  const float delta = b.mean - a.mean;
  const float r = __fdividef(static_cast<float>(b.n), static_cast<float>(n));
  a.mean += delta * r;
  a.m2 += b.m2 + delta * delta * static_cast<float>(a.n) * r;  // a.n * b.n / n
  a.n = n;
  a.sum += b.sum;
  return a;
}

template <int = 0>
__global__ void __launch_bounds__(kV1Block)
    v1_kernel(const float* x, const float* weight, const float* bias, float* y, float* mean_out,
              float* rstd_out, int64_t rows, int64_t cols, float eps) {
  const float inv_cols = 1.f / static_cast<float>(cols);
  for (int64_t row = blockIdx.x * int64_t{kV1Block} + threadIdx.x; row < rows;
       row += int64_t{gridDim.x} * kV1Block) {
    const float* xr = x + row * cols;
    Welford w;  // the chunks so far
    for (int64_t c0 = 0; c0 < cols; c0 += kV1Chunk) {
      const int64_t end = c0 + kV1Chunk < cols ? c0 + kV1Chunk : cols;
      Welford chunk;
      for (int64_t c = c0; c < end; ++c)
        welford_push(chunk, xr[c]);
      w = welford_merge(w, chunk);
    }
    const float mean = isfinite(w.mean) ? w.mean : __fmul_rn(w.sum, inv_cols);
    const float rstd = rsqrtf(w.m2 * inv_cols + eps);
    if (mean_out != nullptr) mean_out[row] = mean;
    if (rstd_out != nullptr) rstd_out[row] = rstd;
    float* yr = y + row * cols;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = affine(xr[c], mean, rstd, weight, bias, c);
  }
}

// layer_norm of the rows of a rows x cols f32 matrix (the library's signature).
inline cudaError_t v1_welford(const float* x, const float* weight, const float* bias, float* y,
                              float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                              cudaStream_t stream) {
  KERNELKIT_REQUIRE(args_ok(x, weight, bias, y, mean, rstd, rows, cols, eps));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(rows, kV1Block, d);
  v1_kernel<<<grid, kV1Block, 0, stream>>>(x, weight, bias, y, mean, rstd, rows, cols, eps);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::layer_norm
