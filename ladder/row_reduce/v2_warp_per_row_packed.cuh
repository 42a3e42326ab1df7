// SPDX-License-Identifier: Apache-2.0
// row_ladder.v2_warp_per_row_packed: v0 with 16-byte pack loads (OneFlow style). Packs
// are legal only when every row start is aligned: the base pointer aligned to the pack
// AND cols a multiple of the pack; otherwise this version falls back to P = 1 (the
// library instead peels a per-row head and tail so that misaligned rows keep packs).
// Each lane keeps 4 packs in flight. Sum only.
#pragma once

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/warp/warp.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kernelkit::ladder::row_reduce::detail {
template <int P, typename T>
__global__ void __launch_bounds__(256)
    v2_warp_per_row_packed_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, T* out) {
  using C = compute_t<T>;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarpSize);
  const int64_t packs = cols / P;  // cols % P == 0 here
  for (int64_t r = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / kWarpSize; r < rows;
       r += warps) {
    const T* row = in + r * cols;
    C acc = C(0);
    int64_t i = lane;
    for (; i + 3 * kWarpSize < packs; i += 4 * kWarpSize) {
      Pack<T, P> v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        v[u] = load_pack<P>(row, i + u * kWarpSize);
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < P; ++j)
          acc += convert<C>(v[u].elem[j]);
    }
    for (; i < packs; i += kWarpSize) {
      const Pack<T, P> v = load_pack<P>(row, i);
#pragma unroll
      for (int j = 0; j < P; ++j)
        acc += convert<C>(v.elem[j]);
    }
    acc = warp_reduce<kWarpSize>(acc, Sum{});
    if (lane == 0) out[r] = convert<T>(acc);
  }
}
}  // namespace kernelkit::ladder::row_reduce::detail

namespace kernelkit::ladder::row_reduce {
// out[r] = sum of row r. Same contract as kernelkit::row_sum.
template <typename T>
[[nodiscard]] cudaError_t v2_warp_per_row_packed(const T* in, int64_t rows, int64_t cols, T* out,
                                                 cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(kernelkit::row_reduce_args_ok(in, rows, cols, out));
  if (rows == 0) return cudaSuccess;
  constexpr int P = kMaxPackSize<T>;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(rows * kWarpSize, 256, d);
  if (pack_size_for(in) == P && cols % P == 0) {
    detail::v2_warp_per_row_packed_kernel<P, T><<<grid, 256, 0, stream>>>(in, rows, cols, out);
  } else {
    detail::v2_warp_per_row_packed_kernel<1, T><<<grid, 256, 0, stream>>>(in, rows, cols, out);
  }
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::row_reduce
