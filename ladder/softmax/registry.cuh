// SPDX-License-Identifier: Apache-2.0
// The softmax ladder (f32 softmax over the rows of a rows x cols matrix), in order, then
// the library: name, launcher and whether a step can run on the given arguments (every
// step runs on every valid call). Tests and the benchmark iterate this list. Each step
// checks its arguments with softmax_args_ok.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/softmax/softmax.cuh"
#include "ladder/softmax/v0_three_kernels.cuh"
#include "ladder/softmax/v1_warp_per_row_shfl_down.cuh"
#include "ladder/softmax/v2_warp_per_row_shfl_xor.cuh"

namespace kernelkit::ladder::softmax {

using Fn = cudaError_t (*)(const float* in, float* out, int64_t rows, int64_t cols,
                           cudaStream_t stream);
using SupportsFn = bool (*)(const float* in, const float* out, int64_t rows, int64_t cols);

struct Step {
  const char* name;  // "v<k>_<name>" (benchmark impl: "ladder.<name>")
  Fn fn;
  SupportsFn supports;
};

inline bool any_call(const float*, const float*, int64_t, int64_t) {
  return true;
}

// The library's softmax under the same signature.
inline cudaError_t library_softmax(const float* in, float* out, int64_t rows, int64_t cols,
                                   cudaStream_t stream) {
  return kernelkit::softmax(in, out, rows, cols, stream);
}

inline constexpr Step kSteps[] = {
    {"v0_three_kernels", v0_three_kernels, any_call},
    {"v1_warp_per_row_shfl_down", v1_warp_per_row_shfl_down, any_call},
    {"v2_warp_per_row_shfl_xor", v2_warp_per_row_shfl_xor, any_call},
};

inline constexpr Step kLibrary = {"kernelkit", library_softmax, any_call};

}  // namespace kernelkit::ladder::softmax
