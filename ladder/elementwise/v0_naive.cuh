// Ladder step 0: one thread per element, one 4-byte load per input and one store per
// thread; the grid covers n exactly (ceil(n / 256) blocks). Every access is coalesced,
// but each thread keeps only one load per input in flight and the grid is as large as n.
// f32 only; same launcher signature as kernelkit::unary / kernelkit::binary.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"

namespace kernelkit {
namespace ladder {
namespace elementwise {
namespace v0_naive {

inline constexpr int kBlock = 256;

template <typename F>
__global__ void unary_kernel(F f, int64_t n, float* out, const float* a) {
  const int64_t i = int64_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(f(a[i]));
}

template <typename F>
__global__ void binary_kernel(F f, int64_t n, float* out, const float* a, const float* b) {
  const int64_t i = int64_t{blockIdx.x} * kBlock + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(f(a[i], b[i]));
}

template <typename F>
[[nodiscard]] cudaError_t unary(F f, int64_t n, float* out, const float* a,
                                cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(n >= 0);
  if (n == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(out != nullptr && a != nullptr);
  KERNELKIT_REQUIRE(ceil_div<int64_t>(n, kBlock) <= INT32_MAX);
  unary_kernel<<<static_cast<unsigned>(ceil_div<int64_t>(n, kBlock)), kBlock, 0, stream>>>(f, n,
                                                                                           out, a);
  return cudaGetLastError();
}

template <typename F>
[[nodiscard]] cudaError_t binary(F f, int64_t n, float* out, const float* a, const float* b,
                                 cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(n >= 0);
  if (n == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(out != nullptr && a != nullptr && b != nullptr);
  KERNELKIT_REQUIRE(ceil_div<int64_t>(n, kBlock) <= INT32_MAX);
  binary_kernel<<<static_cast<unsigned>(ceil_div<int64_t>(n, kBlock)), kBlock, 0, stream>>>(
      f, n, out, a, b);
  return cudaGetLastError();
}

}  // namespace v0_naive
}  // namespace elementwise
}  // namespace ladder
}  // namespace kernelkit
