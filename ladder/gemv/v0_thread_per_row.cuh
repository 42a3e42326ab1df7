// SPDX-License-Identifier: Apache-2.0
// gemv ladder, step 0: one thread per row (y = alpha * A x + beta * y, BlasOp::N only).
// Neighbouring threads read addresses lda floats apart, so every load is its own
// transaction: the baseline the later steps improve on.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/epilogue.cuh"
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
    y[row] = axpby(alpha, dot, beta, y + row);
  }
}
}  // namespace detail

// Preconditions as kernelkit::gemv with BlasOp::N (gemv_args_ok); alpha == 0 reads neither A
// nor x (the row loop runs over an empty row).
[[nodiscard]] inline cudaError_t v0_thread_per_row(int64_t m, int64_t n, float alpha,
                                                   const float* A, int64_t lda, const float* x,
                                                   float beta, float* y,
                                                   cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(gemv_args_ok(BlasOp::N, m, n, alpha, A, lda, x, y));
  if (m == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  constexpr int kBlock = 256;
  const LaunchShape shape{dim3(grid_size_for(m, kBlock, d)), dim3(kBlock)};
  return launch(detail::v0_thread_per_row_kernel<kBlock>, shape, stream, m,
                alpha == 0.f ? int64_t{0} : n, alpha, A, lda, x, beta, y);
}

}  // namespace kernelkit::ladder::gemv
