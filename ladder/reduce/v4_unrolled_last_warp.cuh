// SPDX-License-Identifier: Apache-2.0
// Ladder step 4 (Harris's kernels 6-7): the block size is a template parameter so the
// tree is fully unrolled, the last 32 values are reduced by one warp without
// __syncthreads, and each thread first adds elements a grid apart (grid = one wave of
// resident blocks), so one pass plus one single-block pass finish the job. Harris's last
// warp relies on implicit warp synchrony, which Volta and later do not give: here each
// step of it reads, __syncwarp()s, writes and __syncwarp()s.
#pragma once

#include "ladder/reduce/common.cuh"

namespace kernelkit::ladder::reduce::detail {
template <int Block, typename T>
__device__ __forceinline__ void last_warp_reduce(volatile T* s, int tid) {
  T v = s[tid];
#pragma unroll
  for (int stride = 32; stride > 0; stride /= 2) {
    if (Block >= 2 * stride) {
      v += s[tid + stride];
      __syncwarp();
      s[tid] = v;
      __syncwarp();
    }
  }
}

template <int Block, typename T>
__global__ void __launch_bounds__(Block)
    v4_unrolled_last_warp_kernel(const T* in, int64_t n, T* out) {
  static_assert(Block >= 64 && Block <= 1024 && (Block & (Block - 1)) == 0,
                "Harris's kernel 6 needs a power-of-two block of 64 to 1024 threads");
  __shared__ T s[Block];
  const int tid = threadIdx.x;
  T v = T(0);
  for (int64_t i = blockIdx.x * int64_t{Block} + tid; i < n; i += int64_t{gridDim.x} * Block)
    v += in[i];
  s[tid] = v;
  __syncthreads();
  if (Block >= 1024) {
    if (tid < 512) s[tid] += s[tid + 512];
    __syncthreads();
  }
  if (Block >= 512) {
    if (tid < 256) s[tid] += s[tid + 256];
    __syncthreads();
  }
  if (Block >= 256) {
    if (tid < 128) s[tid] += s[tid + 128];
    __syncthreads();
  }
  if (Block >= 128) {
    if (tid < 64) s[tid] += s[tid + 64];
    __syncthreads();
  }
  if (tid < 32) last_warp_reduce<Block>(static_cast<volatile T*>(s), tid);
  if (tid == 0) out[blockIdx.x] = s[0];
}

}  // namespace kernelkit::ladder::reduce::detail

namespace kernelkit::ladder::reduce {
template <typename T>
cudaError_t v4_unrolled_last_warp(const T* in, int64_t n, T* out, void* workspace,
                                  size_t workspace_bytes, cudaStream_t stream = nullptr) {
  constexpr int kBlock = 256;
  constexpr int64_t kPerBlock = 8 * kBlock;  // at least 8 adds per thread before the tree
  int cap = 0;
  KERNELKIT_RETURN_IF_ERROR(detail::one_wave_grid(kBlock, &cap));
  return detail::multi_pass(
      in, n, out, workspace, workspace_bytes, stream,
      [cap](int64_t m) { return std::min<int64_t>(ceil_div<int64_t>(m, kPerBlock), cap); },
      [](const T* src, int64_t m, T* dst, int64_t grid, cudaStream_t s) {
        detail::v4_unrolled_last_warp_kernel<kBlock>
            <<<static_cast<unsigned>(grid), kBlock, 0, s>>>(src, m, dst);
      });
}

}  // namespace kernelkit::ladder::reduce
