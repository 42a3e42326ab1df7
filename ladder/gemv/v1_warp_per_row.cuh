// SPDX-License-Identifier: Apache-2.0
// gemv ladder, step 1: one warp per row (the classic sgemv). The 32 lanes read 32
// consecutive floats of the row (one coalesced 128-byte access), each keeps a partial
// sum, and a shuffle reduction leaves the row's dot product in lane 0. BlasOp::N only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/epilogue.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::ladder::gemv {

namespace detail {
template <int BlockSize>
__global__ void __launch_bounds__(BlockSize)
    v1_warp_per_row_kernel(int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                           const float* x, float beta, float* y) {
  constexpr int kWarps = BlockSize / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  // the loop bound is warp-uniform: every lane of a warp runs the shuffles together
  for (int64_t row = blockIdx.x * int64_t{kWarps} + threadIdx.x / kWarpSize; row < m;
       row += int64_t{gridDim.x} * kWarps) {
    float dot = 0.f;
    for (int64_t j = lane; j < n; j += kWarpSize)
      dot += A[row * lda + j] * x[j];
    dot = warp_reduce(dot, Sum{});
    if (lane == 0) y[row] = axpby(alpha, dot, beta, y + row);
  }
}
}  // namespace detail

// Preconditions as kernelkit::gemv with BlasOp::N (gemv_args_ok); alpha == 0 reads neither A
// nor x.
[[nodiscard]] inline cudaError_t v1_warp_per_row(int64_t m, int64_t n, float alpha, const float* A,
                                                 int64_t lda, const float* x, float beta, float* y,
                                                 cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(gemv_args_ok(BlasOp::N, m, n, alpha, A, lda, x, y));
  if (m == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  constexpr int kBlock = 256;
  const LaunchShape shape{dim3(grid_size_for(m * kWarpSize, kBlock, d)), dim3(kBlock)};
  return launch(detail::v1_warp_per_row_kernel<kBlock>, shape, stream, m,
                alpha == 0.f ? int64_t{0} : n, alpha, A, lda, x, beta, y);
}

}  // namespace kernelkit::ladder::gemv
