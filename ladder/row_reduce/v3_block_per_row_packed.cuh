// SPDX-License-Identifier: Apache-2.0
// row_ladder.v3_block_per_row_packed: v1 with 16-byte pack loads, 4 packs in flight per
// thread. Packs only when every row start is aligned (base pointer aligned to the pack
// and cols a multiple of it), otherwise P = 1. Sum only.
#pragma once

#include <cstdint>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kernelkit::ladder::row_reduce::detail {
template <int P, typename T>
__global__ void __launch_bounds__(256)
    v3_block_per_row_packed_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, T* out) {
  using C = compute_t<T>;
  const int64_t packs = cols / P;  // cols % P == 0 here
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = in + r * cols;
    C acc = C(0);
    int64_t i = threadIdx.x;
    for (; i + 3 * 256 < packs; i += 4 * 256) {
      Pack<T, P> v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        v[u] = load_pack<P>(row, i + u * 256);
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < P; ++j)
          acc += convert<C>(v[u].elem[j]);
    }
    for (; i < packs; i += 256) {
      const Pack<T, P> v = load_pack<P>(row, i);
#pragma unroll
      for (int j = 0; j < P; ++j)
        acc += convert<C>(v.elem[j]);
    }
    acc = block_reduce<256>(acc, Sum{});  // thread 0 holds the row's sum
    if (threadIdx.x == 0) out[r] = convert<T>(acc);
  }
}
}  // namespace kernelkit::ladder::row_reduce::detail

namespace kernelkit::ladder::row_reduce {
// out[r] = sum of row r. Same contract as kernelkit::row_sum.
template <typename T>
[[nodiscard]] cudaError_t v3_block_per_row_packed(const T* in, int64_t rows, int64_t cols, T* out,
                                                  cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(kernelkit::row_reduce_args_ok(in, rows, cols, out));
  if (rows == 0) return cudaSuccess;
  constexpr int P = kMaxPackSize<T>;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = grid_size_for(rows * 256, 256, d);
  if (pack_size_for(in) == P && cols % P == 0) {
    detail::v3_block_per_row_packed_kernel<P, T><<<grid, 256, 0, stream>>>(in, rows, cols, out);
  } else {
    detail::v3_block_per_row_packed_kernel<1, T><<<grid, 256, 0, stream>>>(in, rows, cols, out);
  }
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::row_reduce
