// SPDX-License-Identifier: Apache-2.0
// The sgemm ladder in order, then the library: name, launcher and which arguments a step
// accepts. Tests and the benchmark iterate this list.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/blas/sgemm.cuh"
#include "ladder/sgemm/common.cuh"
#include "ladder/sgemm/v0_naive.cuh"
#include "ladder/sgemm/v1_coalesced.cuh"
#include "ladder/sgemm/v2_smem_block_tile.cuh"
#include "ladder/sgemm/v3_thread_tile_1d.cuh"
#include "ladder/sgemm/v4_thread_tile_2d.cuh"
#include "ladder/sgemm/v5_vectorized.cuh"
#include "ladder/sgemm/v6_double_buffered.cuh"
#include "ladder/sgemm/v7_warp_tile.cuh"

namespace kernelkit::ladder::sgemm {

struct Step {
  const char* name;  // "v<k>_<name>" (benchmark impl: "ladder.<name>")
  Fn fn;
  SupportsFn supports;
};

// The library (without a workspace: no split of K) under the ladder signature.
inline cudaError_t library(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                           float* C, int64_t ldc, cudaStream_t stream) {
  return kernelkit::sgemm(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

inline constexpr Step kSteps[] = {
    {"v0_naive", v0_naive, supports_any},
    {"v1_coalesced", v1_coalesced, supports_any},
    {"v2_smem_block_tile", v2_smem_block_tile, supports_any},
    {"v3_thread_tile_1d", v3_thread_tile_1d, supports_any},
    {"v4_thread_tile_2d", v4_thread_tile_2d, supports_any},
    {"v5_vectorized", v5_vectorized, supports_aligned_nn},
    {"v6_double_buffered", v6_double_buffered, supports_aligned_nn},
    {"v7_warp_tile", v7_warp_tile, supports_v7},
};
inline constexpr int kNumSteps = sizeof(kSteps) / sizeof(kSteps[0]);

inline constexpr Step kLibrary = {"kernelkit", library, supports_any};

}  // namespace kernelkit::ladder::sgemm
