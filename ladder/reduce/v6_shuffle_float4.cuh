// SPDX-License-Identifier: Apache-2.0
// Ladder step 6: step 5 with 16-byte loads (float4 for f32, two i64): each thread reads
// packs of kMaxPackSize<T> elements. The unaligned head and the tail (fewer than a pack
// each) are added by the first threads of block 0, so any pointer and any n work.
#pragma once

#include "kernelkit/core/pack.cuh"
#include "ladder/reduce/v5_warp_shuffle.cuh"

namespace kernelkit::ladder::reduce::detail {
template <int Block, int PackSize, typename T>
__global__ void __launch_bounds__(Block)
    v6_shuffle_float4_kernel(const T* in, int head, int64_t num_packs, int tail, T* out) {
  const T* body = in + head;  // aligned to PackSize * sizeof(T)
  T v = T(0);
  for (int64_t i = blockIdx.x * int64_t{Block} + threadIdx.x; i < num_packs;
       i += int64_t{gridDim.x} * Block) {
    const Pack<T, PackSize> p = load_pack<PackSize>(body, i);
#pragma unroll
    for (int k = 0; k < PackSize; ++k)
      v += p.elem[k];
  }
  if (blockIdx.x == 0) {
    if (static_cast<int>(threadIdx.x) < head) v += in[threadIdx.x];
    if (static_cast<int>(threadIdx.x) < tail) v += body[num_packs * PackSize + threadIdx.x];
  }
  v = block_reduce<Block>(v, Sum{});
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
}  // namespace kernelkit::ladder::reduce::detail

namespace kernelkit::ladder::reduce {
template <typename T>
cudaError_t v6_shuffle_float4(const T* in, int64_t n, T* out, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream = nullptr) {
  constexpr int kBlock = 256;
  constexpr int kPack = kMaxPackSize<T>;
  constexpr int64_t kPerBlock = 8 * kBlock;
  int cap = 0;
  KERNELKIT_RETURN_IF_ERROR(detail::one_wave_grid(kBlock, &cap));
  return detail::multi_pass(
      in, n, out, workspace, workspace_bytes, stream,
      [cap](int64_t m) { return std::min<int64_t>(ceil_div<int64_t>(m, kPerBlock), cap); },
      [](const T* src, int64_t m, T* dst, int64_t grid, cudaStream_t s) {
        const int head = static_cast<int>(pack_head<kPack>(src, m));  // < kPack
        const int64_t num_packs = (m - head) / kPack;
        const int tail = static_cast<int>(m - head - num_packs * kPack);
        detail::v6_shuffle_float4_kernel<kBlock, kPack>
            <<<static_cast<unsigned>(grid), kBlock, 0, s>>>(src, head, num_packs, tail, dst);
      });
}

}  // namespace kernelkit::ladder::reduce
