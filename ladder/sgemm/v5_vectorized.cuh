// SPDX-License-Identifier: Apache-2.0
// sgemm ladder v5: v4 with 16-byte global loads and stores, and the A tile stored
// transposed (As[k][m]) so that a thread reads its 8 values of A, like its 8 of B, with two
// 16-byte shared loads. Accepts BlasOp::N / BlasOp::N, m and n multiples of 128, k of 8, 16-byte
// aligned rows (supports_aligned_nn); cudaErrorInvalidValue otherwise.
#pragma once

#include "ladder/sgemm/common.cuh"

namespace kernelkit::ladder::sgemm {

namespace detail {

// C[i][j..j+3] = alpha * v + beta * C[i][j..j+3] (core's epilogue: C not read when beta == 0)
__device__ __forceinline__ void store_c4(float* c, float4 v, float alpha, float beta) {
  const kernelkit::Pack<float, 4> acc = {{v.x, v.y, v.z, v.w}};
  kernelkit::store_pack<4>(c, 0, kernelkit::axpby<4>(alpha, acc, beta, c));
}

// The 8 x 8 outer-product step of v5 / v6 on one staged k-tile (As[8][StrideA] with
// StrideA >= 128, Bs[8][128]).
template <int StrideA>
__device__ __forceinline__ void v5_compute_tile(const float (*As)[StrideA], const float (*Bs)[128],
                                                int ty, int tx, float (&acc)[8][8]) {
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const float4 a0 = *reinterpret_cast<const float4*>(&As[p][ty * 8]);
    const float4 a1 = *reinterpret_cast<const float4*>(&As[p][ty * 8 + 4]);
    const float4 b0 = *reinterpret_cast<const float4*>(&Bs[p][tx * 8]);
    const float4 b1 = *reinterpret_cast<const float4*>(&Bs[p][tx * 8 + 4]);
    const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
      for (int c = 0; c < 8; ++c)
        acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
  }
}

__device__ __forceinline__ void v5_store_tile(float* C, int64_t ldc, int64_t i0, int64_t j0, int ty,
                                              int tx, const float (&acc)[8][8], float alpha,
                                              float beta) {
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    float* row = C + (i0 + ty * 8 + r) * ldc + j0 + tx * 8;
    store_c4(row, make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]), alpha, beta);
    store_c4(row + 4, make_float4(acc[r][4], acc[r][5], acc[r][6], acc[r][7]), alpha, beta);
  }
}

// (a template only so that the header can be included by several translation units)
template <int Tag = 0>
__global__ void __launch_bounds__(256)
    v5_vectorized_kernel(int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                         int64_t ldb, float beta, float* C, int64_t ldc) {
  __shared__ alignas(16) float As[8][128];  // As[p][i]: A tile transposed
  __shared__ alignas(16) float Bs[8][128];
  const int tid = threadIdx.x;
  const int ty = tid / 16, tx = tid % 16;
  const int64_t i0 = blockIdx.y * int64_t{128}, j0 = blockIdx.x * int64_t{128};
  const int ar = tid / 2, ap = (tid % 2) * 4;    // A: row ar, k ap..ap+3
  const int bp = tid / 32, bc = (tid % 32) * 4;  // B: k bp, columns bc..bc+3
  const float* a_src = A + (i0 + ar) * lda + ap;
  const float* b_src = B + bp * ldb + j0 + bc;
  float acc[8][8] = {};
  for (int64_t p0 = 0; p0 < k; p0 += 8) {
    const float4 a = *reinterpret_cast<const float4*>(a_src + p0);
    As[ap + 0][ar] = a.x, As[ap + 1][ar] = a.y, As[ap + 2][ar] = a.z, As[ap + 3][ar] = a.w;
    *reinterpret_cast<float4*>(&Bs[bp][bc]) = *reinterpret_cast<const float4*>(b_src + p0 * ldb);
    __syncthreads();
    v5_compute_tile(As, Bs, ty, tx, acc);
    __syncthreads();
  }
  v5_store_tile(C, ldc, i0, j0, ty, tx, acc, alpha, beta);
}
}  // namespace detail

inline cudaError_t v5_vectorized(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                 float alpha, const float* A, int64_t lda, const float* B,
                                 int64_t ldb, float beta, float* C, int64_t ldc,
                                 cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE(supports_aligned_nn(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE(m / 128 <= 65535 && n / 128 <= INT32_MAX);
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(n / 128), static_cast<unsigned>(m / 128));
  detail::v5_vectorized_kernel<><<<grid, 256, 0, stream>>>(k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::sgemm
