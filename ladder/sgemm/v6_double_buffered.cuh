// SPDX-License-Identifier: Apache-2.0
// sgemm ladder v6: v5 with two shared-memory buffers filled by cp.async: the copy of k-tile
// t + 1 runs while tile t is computed (one barrier pair per tile). A is transposed on the
// way in with 4-byte copies, B copied 16 bytes at a time. Same restrictions as v5.
//
// The A copy is laid out so that it costs no more L1 / shared-memory wavefronts than v5's
// LDG.128 + STS: the 32 lanes of a warp copy 4 rows x 8 k (4 whole 32-byte sectors per
// instruction), and the transposed tile has rows of 128 + 4 floats, so the 8 k of one row
// land in banks 4 apart (conflict-free writes). The first version gave each thread 4
// consecutive k of one row (16 lines per instruction, 4 instructions per tile where v5 has
// one LDG.128 of 16 lines) and ran at 30 TFLOP/s against v5's 36: the SASS of the two loops
// is otherwise the same (512 FFMA, 32 LDS.128, 2 barriers), so the extra L1 wavefronts on
// top of the 4-way conflicted B fragment loads (tx * 8 floats apart) are the suspect.
#pragma once

#include <cuda_pipeline_primitives.h>

#include "ladder/sgemm/v5_vectorized.cuh"

namespace kernelkit::ladder::sgemm {

namespace detail {
// (a template only so that the header can be included by several translation units)
template <int Tag = 0>
__global__ void __launch_bounds__(256, 2)  // <= 128 registers: 2 blocks / SM, as v5
    v6_double_buffered_kernel(int64_t k, float alpha, const float* A, int64_t lda, const float* B,
                              int64_t ldb, float beta, float* C, int64_t ldc) {
  constexpr int kStrideA = 128 + 4;  // transposed A rows: the 8 k of one m in banks 4 apart
  __shared__ alignas(16) float As[2][8][kStrideA];
  __shared__ alignas(16) float Bs[2][8][128];
  const int tid = threadIdx.x;
  const int ty = tid / 16, tx = tid % 16;
  const int64_t i0 = blockIdx.y * int64_t{128}, j0 = blockIdx.x * int64_t{128};
  const int ar = tid / 8, ap = tid % 8;  // A: rows ar + 32 q, k ap (a warp: 4 rows x 8 k)
  const int bp = tid / 32, bc = (tid % 32) * 4;
  const float* a_src = A + (i0 + ar) * lda + ap;
  const float* b_src = B + bp * ldb + j0 + bc;
  auto load = [&](int buf, int64_t p0) {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      __pipeline_memcpy_async(&As[buf][ap][ar + 32 * q], a_src + 32 * q * lda + p0, 4);
    __pipeline_memcpy_async(&Bs[buf][bp][bc], b_src + p0 * ldb, 16);
    __pipeline_commit();
  };
  float acc[8][8] = {};
  const int64_t tiles = k / 8;
  if (tiles > 0) load(0, 0);
  for (int64_t t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) {
      load((t + 1) & 1, (t + 1) * 8);  // buffer last read in iteration t - 1
      __pipeline_wait_prior(1);        // tile t landed, t + 1 may be in flight
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
    v5_compute_tile(As[t & 1], Bs[t & 1], ty, tx, acc);
    __syncthreads();
  }
  v5_store_tile(C, ldc, i0, j0, ty, tx, acc, alpha, beta);
}
}  // namespace detail

inline cudaError_t v6_double_buffered(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                      float alpha, const float* A, int64_t lda, const float* B,
                                      int64_t ldb, float beta, float* C, int64_t ldc,
                                      cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE(supports_aligned_nn(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE(m / 128 <= 65535 && n / 128 <= INT32_MAX);
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(n / 128), static_cast<unsigned>(m / 128));
  detail::v6_double_buffered_kernel<>
      <<<grid, 256, 0, stream>>>(k, alpha, A, lda, B, ldb, beta, C, ldc);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::sgemm
