// gemv ladder, step 1: one warp per row (the classic sgemv). The 32 lanes read 32
// consecutive floats of the row (one coalesced 128-byte access), each keeps a partial
// sum, and a shuffle reduction leaves the row's dot product in lane 0. BlasOp::N only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

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
    if (lane == 0) y[row] = beta == 0.f ? alpha * dot : alpha * dot + beta * y[row];
  }
}
}  // namespace detail

[[nodiscard]] inline cudaError_t v1_warp_per_row(int64_t m, int64_t n, float alpha, const float* A,
                                                 int64_t lda, const float* x, float beta, float* y,
                                                 cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(m >= 0 && n >= 0 && lda >= (n > 0 ? n : 1));
  KERNELKIT_REQUIRE(m == 0 || y != nullptr);
  KERNELKIT_REQUIRE(m == 0 || n == 0 || (A != nullptr && x != nullptr));
  if (m == 0) return cudaSuccess;
  constexpr int kBlock = 256;
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(m * kWarpSize, kBlock, &grid));
  detail::v1_warp_per_row_kernel<kBlock>
      <<<grid, kBlock, 0, stream>>>(m, n, alpha, A, lda, x, beta, y);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::gemv
