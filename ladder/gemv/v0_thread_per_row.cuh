// gemv ladder, step 0: one thread per row (y = alpha * A x + beta * y, BlasOp::N only).
// Neighbouring threads read addresses lda floats apart, so every load is its own
// transaction: the baseline the later steps improve on.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"

namespace kernelkit::ladder::gemv {

namespace detail {
template <int BlockSize>
__global__ void __launch_bounds__(BlockSize)
    v0_thread_per_row_kernel(int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                             const float* x, float beta, float* y) {
  for (int64_t row = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; row < m;
       row += int64_t{gridDim.x} * blockDim.x) {
    float dot = 0.f;
    for (int64_t j = 0; j < n; ++j)
      dot += A[row * lda + j] * x[j];
    y[row] = beta == 0.f ? alpha * dot : alpha * dot + beta * y[row];
  }
}
}  // namespace detail

// Preconditions as kernelkit::gemv with BlasOp::N; alpha == 0 still reads A and x (ladder
// steps show the kernel, not the special cases).
[[nodiscard]] inline cudaError_t v0_thread_per_row(int64_t m, int64_t n, float alpha,
                                                   const float* A, int64_t lda, const float* x,
                                                   float beta, float* y,
                                                   cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(m >= 0 && n >= 0 && lda >= (n > 0 ? n : 1));
  KERNELKIT_REQUIRE(m == 0 || y != nullptr);
  KERNELKIT_REQUIRE(m == 0 || n == 0 || (A != nullptr && x != nullptr));
  if (m == 0) return cudaSuccess;
  constexpr int kBlock = 256;
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(m, kBlock, &grid));
  detail::v0_thread_per_row_kernel<kBlock>
      <<<grid, kBlock, 0, stream>>>(m, n, alpha, A, lda, x, beta, y);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::gemv
