// SPDX-License-Identifier: Apache-2.0
// Ladder step 1: four elements per thread through float4 (one 16-byte load per input and
// one 16-byte store), with the grid, not the block, divided by four: thread i takes
// elements [4i, 4i + 4), so the grid has ceil(n / 4) threads. The thread whose four
// elements run past n does the last n % 4 one by one (the tail, in the same launch).
// float4 needs every pointer 16-byte aligned; otherwise this step falls back to step 0's
// one-thread-per-element kernel. Still one load per input in flight per thread, and a
// grid as large as n / 4.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "ladder/elementwise/v0_naive.cuh"

namespace kernelkit::ladder::elementwise {

inline constexpr int kV1Block = 256;

template <int = 0>
__global__ void v1_float4_kernel(int64_t n, float* out, const float* a, const float* b) {
  const int64_t i = int64_t{blockIdx.x} * kV1Block + threadIdx.x;  // float4 index
  if (4 * i + 3 < n) {
    const float4 x = reinterpret_cast<const float4*>(a)[i];
    const float4 y = reinterpret_cast<const float4*>(b)[i];
    reinterpret_cast<float4*>(out)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  } else {
    for (int64_t j = 4 * i; j < n; ++j)  // the tail: fewer than four elements
      out[j] = a[j] + b[j];
  }
}

inline bool v1_aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// out = a + b (f32), n elements.
inline cudaError_t v1_float4(int64_t n, float* out, const float* a, const float* b,
                             cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::elementwise_args_ok(n, out, a, b));
  if (n == 0) return cudaSuccess;
  if (!v1_aligned16(out) || !v1_aligned16(a) || !v1_aligned16(b))
    return v0_naive(n, out, a, b, stream);
  const int64_t blocks = ceil_div<int64_t>(ceil_div<int64_t>(n, 4), kV1Block);
  KERNELKIT_REQUIRE(blocks <= INT32_MAX);
  v1_float4_kernel<<<static_cast<unsigned>(blocks), kV1Block, 0, stream>>>(n, out, a, b);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::elementwise
