// SPDX-License-Identifier: Apache-2.0
// sgemm ladder v4: 128 x 128 block tile, BK = 8, 256 threads, each thread an 8 x 8 block of
// C: per k, 8 values of A and 8 of B from shared memory feed 64 FMAs (outer product).
#pragma once

#include "ladder/sgemm/common.cuh"

namespace kernelkit::ladder::sgemm {

namespace detail {
// (a template only so that the header can be included by several translation units)
template <int Tag = 0>
__global__ void __launch_bounds__(256)
    v4_thread_tile_2d_kernel(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                             const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                             float* C, int64_t ldc) {
  constexpr int kBM = 128, kBN = 128, kBK = 8, kT = 8, kThreads = 256;
  __shared__ float As[kBM][kBK];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int ty = tid / 16, tx = tid % 16;  // this thread: C rows ty*8.., columns tx*8..
  const int64_t i0 = blockIdx.y * int64_t{kBM}, j0 = blockIdx.x * int64_t{kBN};
  float acc[kT][kT] = {};
  for (int64_t p0 = 0; p0 < k; p0 += kBK) {
#pragma unroll
    for (int l = 0; l < kBM * kBK / kThreads; ++l) {
      const int e = tid + l * kThreads;
      const int r = e / kBK, p = e % kBK;
      As[r][p] = (i0 + r < m && p0 + p < k) ? op_at(A, ta, i0 + r, p0 + p, lda) : 0.f;
    }
#pragma unroll
    for (int l = 0; l < kBK * kBN / kThreads; ++l) {
      const int e = tid + l * kThreads;
      const int p = e / kBN, c = e % kBN;
      Bs[p][c] = (p0 + p < k && j0 + c < n) ? op_at(B, tb, p0 + p, j0 + c, ldb) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kBK; ++p) {
      float a[kT], b[kT];
#pragma unroll
      for (int t = 0; t < kT; ++t) {
        a[t] = As[ty * kT + t][p];
        b[t] = Bs[p][tx * kT + t];
      }
#pragma unroll
      for (int r = 0; r < kT; ++r)
#pragma unroll
        for (int c = 0; c < kT; ++c)
          acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kT; ++r)
#pragma unroll
    for (int c = 0; c < kT; ++c) {
      const int64_t i = i0 + ty * kT + r, j = j0 + tx * kT + c;
      if (i < m && j < n) store_c(C, ldc, i, j, alpha, acc[r][c], beta);
    }
}
}  // namespace detail

inline cudaError_t v4_thread_tile_2d(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                     float alpha, const float* A, int64_t lda, const float* B,
                                     int64_t ldb, float beta, float* C, int64_t ldc,
                                     cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE((m + 127) / 128 <= 65535 && (n + 127) / 128 <= INT32_MAX);
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((n + 127) / 128), static_cast<unsigned>((m + 127) / 128));
  detail::v4_thread_tile_2d_kernel<><<<grid, 256, 0, stream>>>(
      op_a == BlasOp::T, op_b == BlasOp::T, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::sgemm
