// SPDX-License-Identifier: Apache-2.0
// row_ladder.v4_cub_block_reduce: v1 (block per row, scalar loads) with the block
// reduction done by cub::BlockReduce instead of kernelkit::block_reduce, to compare the
// two reductions in the same kernel. Sum only.
#pragma once

#include <cstdint>

#include <cub/block/block_reduce.cuh>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kernelkit::ladder::row_reduce::detail {
template <typename T>
__global__ void __launch_bounds__(256)
    v4_cub_block_reduce_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, T* out) {
  using C = compute_t<T>;
  using Reduce = cub::BlockReduce<C, 256>;
  __shared__ typename Reduce::TempStorage temp;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = in + r * cols;
    C acc = C(0);
    for (int64_t c = threadIdx.x; c < cols; c += 256)
      acc += convert<C>(row[c]);
    acc = Reduce(temp).Sum(acc);  // thread 0 holds the row's sum
    if (threadIdx.x == 0) out[r] = convert<T>(acc);
    __syncthreads();  // temp is reused by the next row
  }
}
}  // namespace kernelkit::ladder::row_reduce::detail

namespace kernelkit::ladder::row_reduce {
// out[r] = sum of row r. Same contract as kernelkit::row_sum.
template <typename T>
[[nodiscard]] cudaError_t v4_cub_block_reduce(const T* in, int64_t rows, int64_t cols, T* out,
                                              cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(kernelkit::row_reduce_args_ok(in, rows, cols, out));
  if (rows == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(rows * 256, 256, d);
  detail::v4_cub_block_reduce_kernel<T><<<grid, 256, 0, stream>>>(in, rows, cols, out);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::row_reduce
