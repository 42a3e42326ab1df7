// SPDX-License-Identifier: Apache-2.0
// Ladder step 1 (Harris's kernel 1): each block loads 256 elements into shared memory and
// halves them in place with interleaved addressing: at step s, threads whose index is a
// multiple of 2s add the element s away. Divergent warps (tid % (2s)) and, as the stride
// grows, few active threads per warp.
#pragma once

#include "ladder/reduce/common.cuh"

namespace kernelkit::ladder::reduce::detail {
template <int Block, typename T>
__global__ void __launch_bounds__(Block) v1_smem_halving_kernel(const T* in, int64_t n, T* out) {
  __shared__ T s[Block];
  const int tid = threadIdx.x;
  const int64_t i = blockIdx.x * int64_t{Block} + tid;
  s[tid] = i < n ? in[i] : T(0);  // the published kernel assumes n % Block == 0
  __syncthreads();
  for (int stride = 1; stride < Block; stride *= 2) {
    if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
}  // namespace kernelkit::ladder::reduce::detail

namespace kernelkit::ladder::reduce {
template <typename T>
cudaError_t v1_smem_halving(const T* in, int64_t n, T* out, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream = nullptr) {
  constexpr int kBlock = 256;
  return detail::multi_pass(
      in, n, out, workspace, workspace_bytes, stream,
      [](int64_t m) { return ceil_div<int64_t>(m, kBlock); },
      [](const T* src, int64_t m, T* dst, int64_t grid, cudaStream_t s) {
        detail::v1_smem_halving_kernel<kBlock>
            <<<static_cast<unsigned>(grid), kBlock, 0, s>>>(src, m, dst);
      });
}

}  // namespace kernelkit::ladder::reduce
