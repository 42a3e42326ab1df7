// SPDX-License-Identifier: Apache-2.0
// row_ladder.v1_block_per_row: one 256-thread block per row, scalar loads, then
// block_reduce. Fills the machine on long rows when there are enough of them; short rows
// leave most of the block idle and pay two barriers per row. Sum only.
#pragma once

#include <cstdint>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kernelkit::ladder::row_reduce::detail {
template <typename T>
__global__ void __launch_bounds__(256)
    v1_block_per_row_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, T* out) {
  using C = compute_t<T>;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = in + r * cols;
    C acc = C(0);
    for (int64_t c = threadIdx.x; c < cols; c += 256)
      acc += convert<C>(row[c]);
    acc = block_reduce<256>(acc, Sum{});  // thread 0 holds the row's sum
    if (threadIdx.x == 0) out[r] = convert<T>(acc);
  }
}
}  // namespace kernelkit::ladder::row_reduce::detail

namespace kernelkit::ladder::row_reduce {
// out[r] = sum of row r. Same contract as kernelkit::row_sum.
template <typename T>
[[nodiscard]] cudaError_t v1_block_per_row(const T* in, int64_t rows, int64_t cols, T* out,
                                           cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(kernelkit::row_reduce_args_ok(in, rows, cols, out));
  if (rows == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(rows * 256, 256, d);
  detail::v1_block_per_row_kernel<T><<<grid, 256, 0, stream>>>(in, rows, cols, out);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::row_reduce
