// SPDX-License-Identifier: Apache-2.0
// sgemm ladder v3: 64 x 64 block tile, BK = 8, 512 threads, each thread 8 rows of one column
// of C: one shared B value feeds 8 FMAs (8 accumulators in registers).
#pragma once

#include "ladder/sgemm/common.cuh"

namespace kernelkit::ladder::sgemm {

namespace detail {
// (a template only so that the header can be included by several translation units)
template <int Tag = 0>
__global__ void __launch_bounds__(512)
    v3_thread_tile_1d_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                             const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                             float* C, int64_t ldc) {
  constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 8;
  __shared__ float As[kBM][kBK];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int col = tid % kBN, rows = (tid / kBN) * kTM;  // this thread: C[rows .. rows+7][col]
  const int64_t i0 = blockIdx.y * int64_t{kBM}, j0 = blockIdx.x * int64_t{kBN};
  const int ar = tid / kBK, ap = tid % kBK;  // the A element this thread stages
  const int bp = tid / kBN, bc = tid % kBN;  // the B element this thread stages
  float acc[kTM] = {};
  for (int64_t p0 = 0; p0 < k; p0 += kBK) {
    As[ar][ap] = (i0 + ar < m && p0 + ap < k) ? op_at(A, ta, i0 + ar, p0 + ap, lda) : 0.f;
    Bs[bp][bc] = (p0 + bp < k && j0 + bc < n) ? op_at(B, tb, p0 + bp, j0 + bc, ldb) : 0.f;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kBK; ++p) {
      const float b = Bs[p][col];
#pragma unroll
      for (int t = 0; t < kTM; ++t)
        acc[t] = fmaf(As[rows + t][p], b, acc[t]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int t = 0; t < kTM; ++t)
    if (i0 + rows + t < m && j0 + col < n)
      store_c(C, ldc, i0 + rows + t, j0 + col, alpha, acc[t], beta);
}
}  // namespace detail

inline cudaError_t v3_thread_tile_1d(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                     float alpha, const float* A, int64_t lda, const float* B,
                                     int64_t ldb, float beta, float* C, int64_t ldc,
                                     cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE((m + 63) / 64 <= 65535 && (n + 63) / 64 <= INT32_MAX);
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((n + 63) / 64), static_cast<unsigned>((m + 63) / 64));
  detail::v3_thread_tile_1d_kernel<><<<grid, 512, 0, stream>>>(
      op_a == BlasOp::T, op_b == BlasOp::T, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::sgemm
