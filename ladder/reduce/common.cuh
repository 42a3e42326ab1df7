// SPDX-License-Identifier: Apache-2.0
// Shared driver of the reduction ladder. Every step has the launcher signature
//   cudaError_t fn(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
//                  cudaStream_t stream)
// and sums in T (f32 and i64 are what the ladder is tested and benchmarked on). The
// published kernels reduce one chunk per block into a partial; the passes repeat on the
// partials (ping-ponging in the workspace) until one value is left, which goes to out.
// Workspace: ladder_workspace_bytes<T>(n) bytes, any contents. Arguments are checked with
// the library's kernelkit::reduce_args_ok (the registry's workspace_bytes<T>(n) covers it).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/reduce/reduce.cuh"

namespace kernelkit::ladder::reduce {

inline constexpr int64_t kMinChunk = 256;  // the smallest chunk any version gives a block

// Two partial buffers of ceil(n / kMinChunk) elements each (enough for every pass of every
// version), each starting 256-byte aligned.
template <typename T>
constexpr size_t ladder_workspace_bytes(int64_t n) {
  const int64_t parts = n <= 0 ? 0 : (n + kMinChunk - 1) / kMinChunk;
  const size_t one = (static_cast<size_t>(parts) * sizeof(T) + 255) / 256 * 256;
  return 2 * one;
}

}  // namespace kernelkit::ladder::reduce

namespace kernelkit::ladder::reduce::detail {

// One wave of resident blocks of `block` threads on the current device.
inline cudaError_t one_wave_grid(int block, int* grid) {
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  *grid = grid_size_for(d.device_threads(), block, d, 1);
  return cudaSuccess;
}

template <typename T>
__global__ void zero_kernel(T* out) {
  *out = T(0);
}

// Runs pass(src, m, dst, grid, stream) until one value is left. blocks_for(m) is the grid
// a pass over m values uses (1 means the pass writes the final value).
template <typename T, typename BlocksFor, typename Pass>
cudaError_t multi_pass(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
                       cudaStream_t stream, BlocksFor blocks_for, Pass pass) {
  KERNELKIT_REQUIRE(kernelkit::reduce_args_ok(in, n, out, workspace, workspace_bytes));
  // (the library reads no workspace within one tile; a pass of the ladder's may write one)
  KERNELKIT_REQUIRE(n == 0 || (workspace != nullptr && alignment_of(workspace).fits(16)));
  KERNELKIT_REQUIRE(workspace_bytes >= ladder_workspace_bytes<T>(n));
  if (n == 0) {
    zero_kernel<<<1, 1, 0, stream>>>(out);
    return cudaGetLastError();
  }
  T* buf[2] = {static_cast<T*>(workspace), reinterpret_cast<T*>(static_cast<char*>(workspace) +
                                                                workspace_bytes / 2 / 256 * 256)};
  const T* src = in;
  int64_t m = n;
  for (int k = 0;; k ^= 1) {
    const int64_t grid = blocks_for(m);
    T* dst = grid == 1 ? out : buf[k];
    pass(src, m, dst, grid, stream);
    KERNELKIT_RETURN_IF_ERROR(cudaGetLastError());
    if (grid == 1) return cudaSuccess;
    src = dst;
    m = grid;
  }
}

}  // namespace kernelkit::ladder::reduce::detail
