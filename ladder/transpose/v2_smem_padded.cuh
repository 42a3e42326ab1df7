// SPDX-License-Identifier: Apache-2.0
// Ladder step 2: a 32 x 32 tile staged through shared memory, read along in rows and
// written along out rows, so both global sides are coalesced. One column of padding
// (33 words per row) puts the elements of a tile column in 32 different banks.
#pragma once

#include "ladder/transpose/common.cuh"

namespace kernelkit::ladder::transpose::detail {
inline constexpr int kV2Tile = 32;
inline constexpr int kV2Rows = 8;  // block = 32 x 8 threads, 4 elements per thread

template <typename U>
__global__ void __launch_bounds__(kV2Tile* kV2Rows)
    v2_smem_padded_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows,
                          int64_t cols) {
  __shared__ U tile[kV2Tile][kV2Tile + 1];
  const int x = threadIdx.x, y = threadIdx.y;
  for (int64_t r0 = blockIdx.y * int64_t{kV2Tile}; r0 < rows; r0 += int64_t{gridDim.y} * kV2Tile) {
    for (int64_t c0 = blockIdx.x * int64_t{kV2Tile}; c0 < cols;
         c0 += int64_t{gridDim.x} * kV2Tile) {
      for (int i = y; i < kV2Tile; i += kV2Rows) {
        const int64_t r = r0 + i, c = c0 + x;
        if (r < rows && c < cols) tile[i][x] = in[r * cols + c];
      }
      __syncthreads();
      // out(c0 + i, r0 + x) = in(r0 + x, c0 + i)
      for (int i = y; i < kV2Tile; i += kV2Rows) {
        const int64_t oc = c0 + i, orr = r0 + x;
        if (oc < cols && orr < rows) out[oc * rows + orr] = tile[x][i];
      }
      __syncthreads();  // the tile is refilled next
    }
  }
}
}  // namespace kernelkit::ladder::transpose::detail

namespace kernelkit::ladder::transpose {

template <typename T>
[[nodiscard]] cudaError_t v2_smem_padded(const T* in, T* out, int64_t rows, int64_t cols,
                                         cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(transpose_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  using U = bits_t<sizeof(T)>;
  const dim3 block(detail::kV2Tile, detail::kV2Rows);
  detail::v2_smem_padded_kernel<U>
      <<<grid_2d(cols, rows, detail::kV2Tile, detail::kV2Tile), block, 0, stream>>>(
          reinterpret_cast<const U*>(in), reinterpret_cast<U*>(out), rows, cols);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::transpose
