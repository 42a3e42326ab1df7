// SPDX-License-Identifier: Apache-2.0
// The row-reduction ladder, step by step, for the tests and the benchmark: every step sums
// each row of a rows x cols f32 matrix (the signature of kernelkit::row_sum without a
// workspace) and checks its arguments with kernelkit::row_reduce_args_ok. kLibrary is
// kernelkit::row_sum itself; it is never among the steps. (The steps are templates on the
// element type; the tests also run them on int64_t.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/reduce/row_reduce.cuh"
#include "ladder/row_reduce/v0_warp_per_row.cuh"
#include "ladder/row_reduce/v1_block_per_row.cuh"
#include "ladder/row_reduce/v2_warp_per_row_packed.cuh"
#include "ladder/row_reduce/v3_block_per_row_packed.cuh"
#include "ladder/row_reduce/v4_cub_block_reduce.cuh"

namespace kernelkit::ladder::row_reduce {

using Fn = cudaError_t (*)(const float* in, int64_t rows, int64_t cols, float* out,
                           cudaStream_t stream);
// Every step takes any shape.
using SupportsFn = bool (*)(int64_t rows, int64_t cols);

struct Step {
  const char* name;  // "v<k>_<what>"; benchmark cases are named ladder.<name>
  Fn fn;
  SupportsFn supports;
};

constexpr bool any_shape(int64_t, int64_t) {
  return true;
}

inline cudaError_t library(const float* in, int64_t rows, int64_t cols, float* out,
                           cudaStream_t stream) {
  return kernelkit::row_sum(in, rows, cols, out, stream);
}

inline constexpr Step kSteps[] = {
    {"v0_warp_per_row", &v0_warp_per_row<float>, &any_shape},
    {"v1_block_per_row", &v1_block_per_row<float>, &any_shape},
    {"v2_warp_per_row_packed", &v2_warp_per_row_packed<float>, &any_shape},
    {"v3_block_per_row_packed", &v3_block_per_row_packed<float>, &any_shape},
    {"v4_cub_block_reduce", &v4_cub_block_reduce<float>, &any_shape},
};

inline constexpr Step kLibrary = {"kernelkit", &library, &any_shape};

}  // namespace kernelkit::ladder::row_reduce
