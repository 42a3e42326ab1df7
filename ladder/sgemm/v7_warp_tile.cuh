// sgemm ladder v7: warp tiling. 128 x 128 x 16 block tile, each warp a 32 x 64 sub-tile and
// each thread two 4 x 4 quads per direction, so that A and B fragments come from
// conflict-free 16-byte shared loads (broadcast for A, 128 contiguous bytes for B), padded
// K-major tiles, cp.async double buffering with zero-filled edges, fragments
// double-buffered in registers. This is the library kernel (detail/sgemm_kernels.cuh)
// with two stages and one tile shape; the library adds deeper pipelines, the tile-shape
// dispatch and the other Op / alignment paths. Accepts BlasOp::N / BlasOp::N, any shape, B and ldb
// 16-byte aligned.
#pragma once

#include "ladder/sgemm/common.cuh"

namespace kernelkit::ladder::sgemm {

inline bool supports_v7(BlasOp op_a, BlasOp op_b, int64_t, int64_t, int64_t, const float*, int64_t,
                        const float* B, int64_t ldb, const float*, int64_t) {
  return op_a == BlasOp::N && op_b == BlasOp::N && ldb % 4 == 0 && aligned16(B);
}

inline cudaError_t v7_warp_tile(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k, float alpha,
                                const float* A, int64_t lda, const float* B, int64_t ldb,
                                float beta, float* C, int64_t ldc, cudaStream_t stream) {
  namespace kd = kernelkit::detail;
  KERNELKIT_REQUIRE(kd::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE(supports_v7(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  if (m == 0 || n == 0) return cudaSuccess;
  const kd::SgemmParams p =
      kd::sgemm_params(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  return kd::sgemm_launch_tile<128, 128, 2, kd::SgemmLoad::kKContig, kd::SgemmLoad::kMnVec4>(
      p, stream);
}

}  // namespace kernelkit::ladder::sgemm
