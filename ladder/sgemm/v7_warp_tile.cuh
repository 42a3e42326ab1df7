// SPDX-License-Identifier: Apache-2.0
// sgemm ladder v7: warp tiling. 128 x 128 x 16 block tile, each warp a 32 x 64 sub-tile and
// each thread two 4 x 4 quads per direction, so that A and B fragments come from
// conflict-free 16-byte shared loads (broadcast for A, 128 contiguous bytes for B), padded
// K-major tiles, cp.async double buffering with zero-filled edges, fragments
// double-buffered in registers. This is the library's tiled kernel
// (detail/sgemm_kernels.cuh) with two stages, one tile shape and no split of K, launched
// through a plan written by hand; the library adds deeper pipelines, the choice of tile
// and split per shape and device (plan_sgemm), and the other paths (gemv, skinny). Accepts
// BlasOp::N / BlasOp::N, any shape, B and ldb 16-byte aligned.
#pragma once

#include "kernelkit/blas/sgemm.cuh"
#include "kernelkit/blas/sgemm_plan.cuh"
#include "kernelkit/core/device.cuh"
#include "ladder/sgemm/common.cuh"

namespace kernelkit::ladder::sgemm {

inline bool supports_v7(BlasOp op_a, BlasOp op_b, int64_t, int64_t, int64_t, const float*, int64_t,
                        const float* B, int64_t ldb, const float*, int64_t) {
  return op_a == BlasOp::N && op_b == BlasOp::N && ldb % 4 == 0 && aligned16(B);
}

inline cudaError_t v7_warp_tile(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float* A, int64_t lda, const float* B,
                                int64_t ldb, float beta, float* C, int64_t ldc,
                                cudaStream_t stream) {
  namespace kd = kernelkit::detail;
  KERNELKIT_REQUIRE(kernelkit::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE(supports_v7(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  if (m == 0 || n == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  kd::SgemmTiledChoice c;
  c.tile = SgemmTile::k128x128;
  c.fit = {2, 1};  // two stages (double buffering)
  c.dp_tiles = ceil_div<int64_t>(m, 128) * ceil_div<int64_t>(n, 128);  // every tile whole
  const SgemmAlignment al{alignment_of(A), alignment_of(B), alignment_of(C)};
  const SgemmPlan plan = kd::sgemm_tiled_plan(c, op_a, op_b, m, n, k, lda, ldb, ldc, al, d);
  const int64_t k_used = alpha == 0.f ? 0 : k;  // alpha == 0: C = beta * C, A and B unread
  return kernelkit::launch_sgemm(plan, m, n, k_used, alpha, A, lda, B, ldb, beta, C, ldc, nullptr,
                                 stream);
}

}  // namespace kernelkit::ladder::sgemm
