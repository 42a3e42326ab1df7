// SPDX-License-Identifier: Apache-2.0
// The transpose ladder in order (kSteps<T>), each step with the library's signature, then
// the library itself (kLibrary<T>, never among the steps). Tests run every entry on the same
// cases; the benchmark times each.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/transpose/transpose.cuh"
#include "ladder/transpose/v0_naive.cuh"
#include "ladder/transpose/v1_coalesced_write_ldg.cuh"
#include "ladder/transpose/v2_smem_padded.cuh"

namespace kernelkit::ladder::transpose {

template <typename T>
using Fn = cudaError_t (*)(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream);
// Whether a step runs on these arguments (every transpose step takes any shape and any
// element-aligned pointers).
template <typename T>
using SupportsFn = bool (*)(const T* in, const T* out, int64_t rows, int64_t cols);

template <typename T>
struct Step {
  const char* name;  // "v<k>_<what>"; the benchmark names the case ladder.<name>
  Fn<T> fn;
  SupportsFn<T> supports;
};

template <typename T>
bool any_shape(const T*, const T*, int64_t, int64_t) {
  return true;
}

template <typename T>
cudaError_t library(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  return kernelkit::transpose(in, out, rows, cols, stream);
}

template <typename T>
inline constexpr Step<T> kSteps[] = {
    {"v0_naive", v0_naive<T>, any_shape<T>},
    {"v1_coalesced_write_ldg", v1_coalesced_write_ldg<T>, any_shape<T>},
    {"v2_smem_padded", v2_smem_padded<T>, any_shape<T>},
};

template <typename T>
inline constexpr Step<T> kLibrary = {"kernelkit", library<T>, any_shape<T>};

}  // namespace kernelkit::ladder::transpose
