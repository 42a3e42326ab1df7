// SPDX-License-Identifier: Apache-2.0
// The gemv ladder (BlasOp::N, y = alpha * A x + beta * y), in order, then the library: name,
// launcher and whether a step can run on the given pointers. Tests and the benchmark
// iterate this list. Each step checks its arguments with kernelkit::gemv_args_ok.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/blas/gemv.cuh"
#include "ladder/gemv/v0_thread_per_row.cuh"
#include "ladder/gemv/v1_warp_per_row.cuh"
#include "ladder/gemv/v2_warp_per_row_float4.cuh"

namespace kernelkit::ladder::gemv {

using Fn = cudaError_t (*)(int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                           const float* x, float beta, float* y, cudaStream_t stream);
using SupportsFn = bool (*)(const float* A, int64_t lda, const float* x);

struct Step {
  const char* name;  // "v<k>_<name>" (benchmark impl: "ladder.<name>")
  Fn fn;
  SupportsFn supports;
};

inline bool any_alignment(const float*, int64_t, const float*) {
  return true;
}

// The library's gemv (BlasOp::N, no workspace) under the ladder's signature.
inline cudaError_t library_n(int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                             const float* x, float beta, float* y, cudaStream_t stream) {
  return kernelkit::gemv(BlasOp::N, m, n, alpha, A, lda, x, beta, y, stream);
}

inline constexpr Step kSteps[] = {
    {"v0_thread_per_row", v0_thread_per_row, any_alignment},
    {"v1_warp_per_row", v1_warp_per_row, any_alignment},
    {"v2_warp_per_row_float4", v2_warp_per_row_float4, v2_warp_per_row_float4_supports},
};

inline constexpr Step kLibrary = {"kernelkit", library_n, any_alignment};

}  // namespace kernelkit::ladder::gemv
