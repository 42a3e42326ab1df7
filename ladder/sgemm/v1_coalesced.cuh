// SPDX-License-Identifier: Apache-2.0
// sgemm ladder v1: one thread per element of C, threadIdx.x along the columns: a warp reads
// one element of A (broadcast) and 32 consecutive elements of B, and writes 32 consecutive
// elements of C.
#pragma once

#include "ladder/sgemm/common.cuh"

namespace kernelkit::ladder::sgemm {

namespace detail {
// (a template only so that the header can be included by several translation units)
template <int Tag = 0>
__global__ void v1_coalesced_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                    const float* A, int64_t lda, const float* B, int64_t ldb,
                                    float beta, float* C, int64_t ldc) {
  const int64_t j = blockIdx.x * int64_t{32} + threadIdx.x;
  const int64_t i = blockIdx.y * int64_t{32} + threadIdx.y;
  if (i >= m || j >= n) return;
  float acc = 0.f;
  for (int64_t p = 0; p < k; ++p)
    acc = fmaf(op_at(A, ta, i, p, lda), op_at(B, tb, p, j, ldb), acc);
  store_c(C, ldc, i, j, alpha, acc, beta);
}
}  // namespace detail

inline cudaError_t v1_coalesced(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float* A, int64_t lda, const float* B,
                                int64_t ldb, float beta, float* C, int64_t ldc,
                                cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE((m + 31) / 32 <= 65535 && (n + 31) / 32 <= INT32_MAX);
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>((m + 31) / 32));
  detail::v1_coalesced_kernel<><<<grid, dim3(32, 32), 0, stream>>>(
      op_a == BlasOp::T, op_b == BlasOp::T, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::sgemm
