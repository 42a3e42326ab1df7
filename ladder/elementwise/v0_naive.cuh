// SPDX-License-Identifier: Apache-2.0
// Ladder step 0: one thread per element, one 4-byte load per input and one store per
// thread; the grid covers n exactly (ceil(n / 256) blocks). Every access is coalesced, but
// each thread keeps only one load per input in flight and the grid is as large as n.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/elementwise/elementwise.cuh"

namespace kernelkit::ladder::elementwise {

inline constexpr int kV0Block = 256;

template <int = 0>
__global__ void v0_naive_kernel(int64_t n, float* out, const float* a, const float* b) {
  const int64_t i = int64_t{blockIdx.x} * kV0Block + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

// out = a + b (f32), n elements.
inline cudaError_t v0_naive(int64_t n, float* out, const float* a, const float* b,
                            cudaStream_t stream) {
  KERNELKIT_REQUIRE(kernelkit::elementwise_args_ok(n, out, a, b));
  if (n == 0) return cudaSuccess;
  const int64_t blocks = ceil_div<int64_t>(n, kV0Block);
  KERNELKIT_REQUIRE(blocks <= INT32_MAX);
  v0_naive_kernel<<<static_cast<unsigned>(blocks), kV0Block, 0, stream>>>(n, out, a, b);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::elementwise
