// SPDX-License-Identifier: Apache-2.0
// Ladder step 3 (Harris's kernels 4-5, unrolled by 8): each thread adds 8 elements, a
// block-stride apart (coalesced), while loading, so a block covers 8 x 256 elements and
// the shared-memory tree runs on 8x fewer values; then sequential addressing.
#pragma once

#include "ladder/reduce/common.cuh"

namespace kernelkit::ladder::reduce::detail {
template <int Block, int Unroll, typename T>
__global__ void __launch_bounds__(Block) v3_add_during_load_kernel(const T* in, int64_t n, T* out) {
  __shared__ T s[Block];
  const int tid = threadIdx.x;
  const int64_t base = blockIdx.x * int64_t{Block} * Unroll + tid;
  T v = T(0);
#pragma unroll
  for (int j = 0; j < Unroll; ++j) {
    const int64_t i = base + int64_t{j} * Block;
    if (i < n) v += in[i];
  }
  s[tid] = v;
  __syncthreads();
  for (int stride = Block / 2; stride > 0; stride /= 2) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
}  // namespace kernelkit::ladder::reduce::detail

namespace kernelkit::ladder::reduce {
template <typename T>
cudaError_t v3_add_during_load(const T* in, int64_t n, T* out, void* workspace,
                               size_t workspace_bytes, cudaStream_t stream = nullptr) {
  constexpr int kBlock = 256, kUnroll = 8;
  return detail::multi_pass(
      in, n, out, workspace, workspace_bytes, stream,
      [](int64_t m) { return ceil_div<int64_t>(m, int64_t{kBlock} * kUnroll); },
      [](const T* src, int64_t m, T* dst, int64_t grid, cudaStream_t s) {
        detail::v3_add_during_load_kernel<kBlock, kUnroll>
            <<<static_cast<unsigned>(grid), kBlock, 0, s>>>(src, m, dst);
      });
}

}  // namespace kernelkit::ladder::reduce
