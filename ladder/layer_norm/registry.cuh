// SPDX-License-Identifier: Apache-2.0
// The layer_norm ladder (f32 x, weight and bias; mean and rstd saved as floats), in order,
// then the library: name, launcher and whether a step can run on the given shape (v3 holds
// a row in 48 KiB of shared memory, v4 in a 1024-thread block's registers: each declines
// wider rows, and answers them with cudaErrorInvalidValue; every other step takes every
// valid call). Tests and the benchmark iterate this list. Each step checks its arguments
// with kernelkit::norm_args_ok (common.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/norm/norm.cuh"
#include "ladder/layer_norm/v0_naive.cuh"
#include "ladder/layer_norm/v1_welford.cuh"
#include "ladder/layer_norm/v2_warp_per_row.cuh"
#include "ladder/layer_norm/v3_block_smem.cuh"
#include "ladder/layer_norm/v4_vectorized.cuh"

namespace kernelkit::ladder::layer_norm {

using Fn = cudaError_t (*)(const float* x, const float* weight, const float* bias, float* y,
                           float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                           cudaStream_t stream);
// Whether a step takes a rows x cols matrix (any pointers the library takes).
using SupportsFn = bool (*)(int64_t rows, int64_t cols);

struct Step {
  const char* name;  // "v<k>_<name>" (benchmark impl: "ladder.<name>")
  Fn fn;
  SupportsFn supports;
};

inline bool any_shape(int64_t, int64_t) {
  return true;
}

// The library's layer_norm under the same signature.
inline cudaError_t library_layer_norm(const float* x, const float* weight, const float* bias,
                                      float* y, float* mean, float* rstd, int64_t rows,
                                      int64_t cols, float eps, cudaStream_t stream) {
  return kernelkit::layer_norm(x, weight, bias, y, mean, rstd, rows, cols, eps, stream);
}

inline constexpr Step kSteps[] = {
    {"v0_naive", v0_naive, any_shape},
    {"v1_welford", v1_welford, any_shape},
    {"v2_warp_per_row", v2_warp_per_row, any_shape},
    {"v3_block_smem", v3_block_smem, v3_block_smem_supports},
    {"v4_vectorized", v4_vectorized, v4_vectorized_supports},
};

inline constexpr Step kLibrary = {"kernelkit", library_layer_norm, any_shape};

}  // namespace kernelkit::ladder::layer_norm
