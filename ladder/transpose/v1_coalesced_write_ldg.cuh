// SPDX-License-Identifier: Apache-2.0
// Ladder step 1: lanes along the output row instead, so writes are coalesced; the strided
// reads go through the read-only data cache (__ldg), where the rest of each 32-byte sector
// fetched for one lane is often still present when the neighbouring columns are read.
#pragma once

#include "ladder/transpose/common.cuh"

namespace kernelkit::ladder::transpose::detail {
template <typename U>
__global__ void v1_coalesced_write_ldg_kernel(const U* __restrict__ in, U* __restrict__ out,
                                              int64_t rows, int64_t cols) {
  // x runs along out rows (= in columns r), y along out row index (= in column c).
  for (int64_t c = blockIdx.y * int64_t{blockDim.y} + threadIdx.y; c < cols;
       c += int64_t{gridDim.y} * blockDim.y)
    for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
         r += int64_t{gridDim.x} * blockDim.x)
      out[c * rows + r] = __ldg(in + r * cols + c);
}
}  // namespace kernelkit::ladder::transpose::detail

namespace kernelkit::ladder::transpose {

template <typename T>
[[nodiscard]] cudaError_t v1_coalesced_write_ldg(const T* in, T* out, int64_t rows, int64_t cols,
                                                 cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(transpose_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  using U = bits_t<sizeof(T)>;
  const dim3 block(32, 8);
  detail::v1_coalesced_write_ldg_kernel<U><<<grid_2d(rows, cols, 32, 8), block, 0, stream>>>(
      reinterpret_cast<const U*>(in), reinterpret_cast<U*>(out), rows, cols);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::transpose
