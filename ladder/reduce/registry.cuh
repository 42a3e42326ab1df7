// SPDX-License-Identifier: Apache-2.0
// The reduction ladder, step by step, for the tests and the benchmark: every step sums n
// elements of T into out[0] (T = float or int64_t) with a workspace of workspace_bytes<T>(n)
// bytes (any contents), and checks its arguments with kernelkit::reduce_args_ok. kLibrary is
// kernelkit::sum itself; it is never among the steps.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernelkit/reduce/reduce.cuh"
#include "ladder/reduce/common.cuh"
#include "ladder/reduce/v0_atomic.cuh"
#include "ladder/reduce/v1_smem_halving.cuh"
#include "ladder/reduce/v2_sequential_addressing.cuh"
#include "ladder/reduce/v3_add_during_load.cuh"
#include "ladder/reduce/v4_unrolled_last_warp.cuh"
#include "ladder/reduce/v5_warp_shuffle.cuh"
#include "ladder/reduce/v6_shuffle_float4.cuh"

namespace kernelkit::ladder::reduce {

template <typename T>
using Fn = cudaError_t (*)(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
                           cudaStream_t stream);
// Every step takes any n.
template <typename T>
using SupportsFn = bool (*)(int64_t n);

template <typename T>
struct Step {
  const char* name;  // "v<k>_<what>"; benchmark cases are named ladder.<name>
  Fn<T> fn;
  SupportsFn<T> supports;
};

template <typename T>
constexpr bool any_size(int64_t) {
  return true;
}

template <typename T>
cudaError_t library(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream) {
  return kernelkit::sum(in, n, out, workspace, workspace_bytes, stream);
}

template <typename T>
inline constexpr Step<T> kSteps[] = {
    {"v0_atomic", &v0_atomic<T>, &any_size<T>},
    {"v1_smem_halving", &v1_smem_halving<T>, &any_size<T>},
    {"v2_sequential_addressing", &v2_sequential_addressing<T>, &any_size<T>},
    {"v3_add_during_load", &v3_add_during_load<T>, &any_size<T>},
    {"v4_unrolled_last_warp", &v4_unrolled_last_warp<T>, &any_size<T>},
    {"v5_warp_shuffle", &v5_warp_shuffle<T>, &any_size<T>},
    {"v6_shuffle_float4", &v6_shuffle_float4<T>, &any_size<T>},
};

template <typename T>
inline constexpr Step<T> kLibrary = {"kernelkit", &library<T>, &any_size<T>};

// Workspace bytes for n elements that serve every step and the library.
template <typename T>
constexpr size_t workspace_bytes(int64_t n) {
  const size_t steps = ladder_workspace_bytes<T>(n);
  const size_t lib = kernelkit::reduce_workspace_bytes<T, T>(n);
  return steps > lib ? steps : lib;
}

}  // namespace kernelkit::ladder::reduce
