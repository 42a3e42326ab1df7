// SPDX-License-Identifier: Apache-2.0
// Ladder step 0: every thread adds its elements straight into out with atomicAdd. Correct
// but serialised on one address, and for floats not deterministic (the order of the adds
// changes from run to run).
#pragma once

#include "ladder/reduce/common.cuh"

namespace kernelkit::ladder::reduce::detail {
template <typename T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (sizeof(T) == 8 && std::is_integral_v<T>) {
    // two's complement: an unsigned 64-bit add is the signed add
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    atomicAdd(p, v);
  }
}

template <typename T>
__global__ void v0_atomic_kernel(const T* in, int64_t n, T* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    atomic_add(out, in[i]);
}
}  // namespace kernelkit::ladder::reduce::detail

namespace kernelkit::ladder::reduce {
template <typename T>
cudaError_t v0_atomic(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(kernelkit::reduce_args_ok(in, n, out, workspace, workspace_bytes));
  KERNELKIT_RETURN_IF_ERROR(cudaMemsetAsync(out, 0, sizeof(T), stream));  // 0 bits = 0
  if (n == 0) return cudaSuccess;
  constexpr int kBlock = 256;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(n, kBlock, d);
  detail::v0_atomic_kernel<<<grid, kBlock, 0, stream>>>(in, n, out);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::reduce
