// The reduction ladder in order: name -> launcher, for the ladder tests and the benchmark.
// Every entry sums n elements of T into out[0] (T = float or int64_t) with a workspace of
// ladder_workspace_bytes<T>(n) bytes. "library" is kernelkit::sum, whose workspace must
// be zero-filled once (the others' need not be; zero-filling it serves all).
#pragma once

#include <array>

#include "kernelkit/reduce/device_reduce.cuh"
#include "v0_atomic.cuh"
#include "v1_smem_halving.cuh"
#include "v2_sequential_addressing.cuh"
#include "v3_add_during_load.cuh"
#include "v4_unrolled_last_warp.cuh"
#include "v5_warp_shuffle.cuh"
#include "v6_shuffle_float4.cuh"

namespace kernelkit::ladder::reduce {

template <typename T>
using LadderFn = cudaError_t (*)(const T*, int64_t, T*, void*, size_t, cudaStream_t);

template <typename T>
struct LadderEntry {
  const char* name;
  LadderFn<T> fn;
};

template <typename T>
cudaError_t library(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream = nullptr) {
  return kernelkit::sum(in, n, out, workspace, workspace_bytes, stream);
}

// Workspace for every entry, the library included.
template <typename T>
constexpr size_t registry_workspace_bytes(int64_t n) {
  const size_t a = ladder_workspace_bytes<T>(n), b = reduce_workspace_bytes<T, T>(n);
  return a > b ? a : b;
}

template <typename T>
inline constexpr std::array<LadderEntry<T>, 8> kLadder = {{
    {"v0_atomic", &v0_atomic<T>},
    {"v1_smem_halving", &v1_smem_halving<T>},
    {"v2_sequential_addressing", &v2_sequential_addressing<T>},
    {"v3_add_during_load", &v3_add_during_load<T>},
    {"v4_unrolled_last_warp", &v4_unrolled_last_warp<T>},
    {"v5_warp_shuffle", &v5_warp_shuffle<T>},
    {"v6_shuffle_float4", &v6_shuffle_float4<T>},
    {"library", &library<T>},
}};

}  // namespace kernelkit::ladder::reduce
