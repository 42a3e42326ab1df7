// SPDX-License-Identifier: Apache-2.0
// Ladder step 5: as step 4, but the block tree is warp shuffles (kernelkit::block_reduce:
// a shfl_down tree per warp, one shared slot per warp, a shuffle over the slots), so
// shared memory holds 8 values instead of 256 and there is one __syncthreads.
#pragma once

#include "kernelkit/block/block_reduce.cuh"
#include "ladder/reduce/v4_unrolled_last_warp.cuh"

namespace kernelkit::ladder::reduce::detail {
template <int Block, typename T>
__global__ void __launch_bounds__(Block) v5_warp_shuffle_kernel(const T* in, int64_t n, T* out) {
  T v = T(0);
  for (int64_t i = blockIdx.x * int64_t{Block} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * Block)
    v += in[i];
  v = block_reduce<Block>(v, Sum{});  // thread 0 holds the block's sum
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
}  // namespace kernelkit::ladder::reduce::detail

namespace kernelkit::ladder::reduce {
template <typename T>
cudaError_t v5_warp_shuffle(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream = nullptr) {
  constexpr int kBlock = 256;
  constexpr int64_t kPerBlock = 8 * kBlock;
  int cap = 0;
  KERNELKIT_RETURN_IF_ERROR(detail::one_wave_grid(kBlock, &cap));
  return detail::multi_pass(
      in, n, out, workspace, workspace_bytes, stream,
      [cap](int64_t m) { return std::min<int64_t>(ceil_div<int64_t>(m, kPerBlock), cap); },
      [](const T* src, int64_t m, T* dst, int64_t grid, cudaStream_t s) {
        detail::v5_warp_shuffle_kernel<kBlock>
            <<<static_cast<unsigned>(grid), kBlock, 0, s>>>(src, m, dst);
      });
}

}  // namespace kernelkit::ladder::reduce
