// SPDX-License-Identifier: Apache-2.0
// Ladder step 0: one thread per element, lanes along the input row. Reads are coalesced;
// each lane's write lands `rows` elements from its neighbour's, so every store of a warp
// touches 32 different sectors.
#pragma once

#include "ladder/transpose/common.cuh"

namespace kernelkit::ladder::transpose::detail {
template <typename U>
__global__ void v0_naive_kernel(const U* in, U* out, int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.y * int64_t{blockDim.y} + threadIdx.y; r < rows;
       r += int64_t{gridDim.y} * blockDim.y)
    for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < cols;
         c += int64_t{gridDim.x} * blockDim.x)
      out[c * rows + r] = in[r * cols + c];
}
}  // namespace kernelkit::ladder::transpose::detail

namespace kernelkit::ladder::transpose {

template <typename T>
[[nodiscard]] cudaError_t v0_naive(const T* in, T* out, int64_t rows, int64_t cols,
                                   cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(transpose_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  using U = bits_t<sizeof(T)>;
  const dim3 block(32, 8);
  detail::v0_naive_kernel<U><<<grid_2d(cols, rows, 32, 8), block, 0, stream>>>(
      reinterpret_cast<const U*>(in), reinterpret_cast<U*>(out), rows, cols);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::transpose
