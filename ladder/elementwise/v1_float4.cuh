// Ladder step 1: four elements per thread through float4 (one 16-byte load per input and
// one 16-byte store), with the grid, not the block, divided by four: thread i takes
// elements [4i, 4i + 4), so the grid has ceil(n / 4) threads. The thread whose four
// elements run past n does the last n % 4 one by one (the tail, in the same launch).
// float4 needs every pointer 16-byte aligned; otherwise this step falls back to step 0's
// one-thread-per-element kernel. Still one load per input in flight per thread, and a
// grid as large as n / 4. f32 only; same launcher signature as kernelkit::unary / binary.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "ladder/elementwise/v0_naive.cuh"

namespace kernelkit {
namespace ladder {
namespace elementwise {
namespace v1_float4 {

inline constexpr int kBlock = 256;

template <typename F>
__device__ __forceinline__ float4 apply4(const F& f, float4 a) {
  return make_float4(f(a.x), f(a.y), f(a.z), f(a.w));
}
template <typename F>
__device__ __forceinline__ float4 apply4(const F& f, float4 a, float4 b) {
  return make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}

template <typename F>
__global__ void unary_kernel(F f, int64_t n, float* out, const float* a) {
  const int64_t i = int64_t{blockIdx.x} * kBlock + threadIdx.x;  // float4 index
  if (4 * i + 3 < n) {
    reinterpret_cast<float4*>(out)[i] = apply4(f, reinterpret_cast<const float4*>(a)[i]);
  } else {
    for (int64_t j = 4 * i; j < n; ++j)  // the tail: fewer than four elements
      out[j] = f(a[j]);
  }
}

template <typename F>
__global__ void binary_kernel(F f, int64_t n, float* out, const float* a, const float* b) {
  const int64_t i = int64_t{blockIdx.x} * kBlock + threadIdx.x;
  if (4 * i + 3 < n) {
    reinterpret_cast<float4*>(out)[i] =
        apply4(f, reinterpret_cast<const float4*>(a)[i], reinterpret_cast<const float4*>(b)[i]);
  } else {
    for (int64_t j = 4 * i; j < n; ++j)
      out[j] = f(a[j], b[j]);
  }
}

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <typename F>
[[nodiscard]] cudaError_t unary(F f, int64_t n, float* out, const float* a,
                                cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(n >= 0);
  if (n == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(out != nullptr && a != nullptr);
  if (!aligned16(out) || !aligned16(a)) return v0_naive::unary(f, n, out, a, stream);
  const int64_t blocks = ceil_div<int64_t>(ceil_div<int64_t>(n, 4), kBlock);
  KERNELKIT_REQUIRE(blocks <= INT32_MAX);
  unary_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(f, n, out, a);
  return cudaGetLastError();
}

template <typename F>
[[nodiscard]] cudaError_t binary(F f, int64_t n, float* out, const float* a, const float* b,
                                 cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(n >= 0);
  if (n == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(out != nullptr && a != nullptr && b != nullptr);
  if (!aligned16(out) || !aligned16(a) || !aligned16(b))
    return v0_naive::binary(f, n, out, a, b, stream);
  const int64_t blocks = ceil_div<int64_t>(ceil_div<int64_t>(n, 4), kBlock);
  KERNELKIT_REQUIRE(blocks <= INT32_MAX);
  binary_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(f, n, out, a, b);
  return cudaGetLastError();
}

}  // namespace v1_float4
}  // namespace elementwise
}  // namespace ladder
}  // namespace kernelkit
