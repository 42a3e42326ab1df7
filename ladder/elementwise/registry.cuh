// SPDX-License-Identifier: Apache-2.0
// The elementwise ladder (f32 add, out = a + b), in order, then the library: name, launcher
// and whether a step can run on the given arguments (every step runs on every valid call:
// v1 falls back to v0's kernel for pointers float4 cannot load). Tests and the benchmark
// iterate this list. Each step checks its arguments with elementwise_args_ok.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"
#include "ladder/elementwise/v0_naive.cuh"
#include "ladder/elementwise/v1_float4.cuh"

namespace kernelkit::ladder::elementwise {

using Fn = cudaError_t (*)(int64_t n, float* out, const float* a, const float* b,
                           cudaStream_t stream);
using SupportsFn = bool (*)(int64_t n, const float* out, const float* a, const float* b);

struct Step {
  const char* name;  // "v<k>_<name>" (benchmark impl: "ladder.<name>")
  Fn fn;
  SupportsFn supports;
};

inline bool any_call(int64_t, const float*, const float*, const float*) {
  return true;
}

// The library engine (16-byte packs after a scalar head, the plan's packs per thread and
// grid, 32-bit indices below 2^30) under the same signature.
inline cudaError_t library_add(int64_t n, float* out, const float* a, const float* b,
                               cudaStream_t stream) {
  return kernelkit::binary(kernelkit::Add{}, n, out, a, b, stream);
}

inline constexpr Step kSteps[] = {
    {"v0_naive", v0_naive, any_call},
    {"v1_float4", v1_float4, any_call},
};

inline constexpr Step kLibrary = {"kernelkit", library_add, any_call};

}  // namespace kernelkit::ladder::elementwise
