// SPDX-License-Identifier: Apache-2.0
// row_ladder.v0_warp_per_row: one warp per row, scalar loads. Lane l reads columns
// l, l + 32, ... (coalesced), then a shuffle reduction puts the row's sum in lane 0.
// Good for rows of a few hundred elements; wastes lanes on short rows and has too little
// parallelism per row on long ones. Sum only; T in {float, double, int32_t, int64_t,
// __half, __nv_bfloat16}, accumulated in compute_t<T>.
#pragma once

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/warp/warp.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kernelkit::ladder::row_reduce::detail {
template <typename T>
__global__ void __launch_bounds__(256)
    v0_warp_per_row_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, T* out) {
  using C = compute_t<T>;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarpSize);
  // r is the same for every lane of a warp, so the shuffle is convergent
  for (int64_t r = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarpSize; r < rows;
       r += warps) {
    const T* row = in + r * cols;
    C acc = C(0);
    for (int64_t c = lane; c < cols; c += kWarpSize)
      acc += convert<C>(row[c]);
    acc = warp_reduce<kWarpSize>(acc, Sum{});
    if (lane == 0) out[r] = convert<T>(acc);
  }
}
}  // namespace kernelkit::ladder::row_reduce::detail

namespace kernelkit::ladder::row_reduce {
// out[r] = sum of row r. Same contract as kernelkit::row_sum.
template <typename T>
[[nodiscard]] cudaError_t v0_warp_per_row(const T* in, int64_t rows, int64_t cols, T* out,
                                          cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(kernelkit::row_reduce_args_ok(in, rows, cols, out));
  if (rows == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(rows * kWarpSize, 256, d);
  detail::v0_warp_per_row_kernel<T><<<grid, 256, 0, stream>>>(in, rows, cols, out);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::row_reduce
