// SPDX-License-Identifier: Apache-2.0
// sgemm ladder v2: 32 x 32 tiles of op(A) and op(B) staged in shared memory (32 x 32
// threads, one element of C each); every global element is read once per tile instead of
// once per thread. Out-of-range elements are staged as zero.
#pragma once

#include "ladder/sgemm/common.cuh"

namespace kernelkit::ladder::sgemm {

namespace detail {
// (a template only so that the header can be included by several translation units)
template <int Tag = 0>
__global__ void __launch_bounds__(1024)
    v2_smem_block_tile_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                              const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                              float* C, int64_t ldc) {
  __shared__ float As[32][32];  // As[i][p]
  __shared__ float Bs[32][33];  // Bs[p][j] (+1 column: the transposed-B store is conflict-free)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i0 = blockIdx.y * int64_t{32}, j0 = blockIdx.x * int64_t{32};
  float acc = 0.f;
  for (int64_t p0 = 0; p0 < k; p0 += 32) {
    As[ty][tx] = (i0 + ty < m && p0 + tx < k) ? op_at(A, ta, i0 + ty, p0 + tx, lda) : 0.f;
    Bs[ty][tx] = (p0 + ty < k && j0 + tx < n) ? op_at(B, tb, p0 + ty, j0 + tx, ldb) : 0.f;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < 32; ++p)
      acc = fmaf(As[ty][p], Bs[p][tx], acc);
    __syncthreads();
  }
  if (i0 + ty < m && j0 + tx < n) store_c(C, ldc, i0 + ty, j0 + tx, alpha, acc, beta);
}
}  // namespace detail

inline cudaError_t v2_smem_block_tile(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                      float alpha, const float* A, int64_t lda, const float* B,
                                      int64_t ldb, float beta, float* C, int64_t ldc,
                                      cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE((m + 31) / 32 <= 65535 && (n + 31) / 32 <= INT32_MAX);
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>((m + 31) / 32));
  detail::v2_smem_block_tile_kernel<><<<grid, dim3(32, 32), 0, stream>>>(
      op_a == BlasOp::T, op_b == BlasOp::T, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::sgemm
