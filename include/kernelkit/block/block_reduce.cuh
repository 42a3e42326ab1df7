// SPDX-License-Identifier: Apache-2.0
/// @file
/// Block-level reductions: a warp reduction, one shared-memory slot per warp, then a
/// second warp reduction over the slots in warp 0.
///
/// Every thread of the block must call them (they contain __syncthreads). BlockSize is the
/// number of threads of the (one-dimensional) block: a multiple of 32 from 32 to 1024. Two
/// calls may follow each other with no barrier in between, on any types and ops.
#pragma once

#include "../warp/warp.cuh"

namespace kernelkit {

/// static_assert that BlockSize is a block size the block primitives take: a multiple of 32
/// from 32 to 1024.
#define KERNELKIT_CHECK_BLOCK_SIZE(BlockSize)                                               \
  static_assert(BlockSize >= 32 && BlockSize <= 1024,                                       \
                "block_reduce: BlockSize must be between 32 and 1024 threads");             \
  static_assert(BlockSize % 32 == 0,                                                        \
                "block_reduce: BlockSize must be a multiple of 32 (a partial last warp is " \
                "not supported)")

namespace detail {

// Reduces v over the block; the result is in thread 0 (warp 0's lane 0). Leaves the
// per-warp slots free for reuse only after the caller's next barrier, so the public
// functions below add the barrier they need.
template <int BlockSize, typename T, typename Op>
__device__ __forceinline__ T block_reduce_to_thread0(T v, Op op, T* slots) {
  constexpr int kWarps = BlockSize / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = warp_reduce<kWarpSize>(v, op);
  if constexpr (kWarps == 1) {
    return v;
  } else {
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    // warp 0 now combines the kWarps partials
    if (warp == 0) {
      v = slots[lane < kWarps ? lane : 0];
      v = warp_reduce_first<kWarpSize>(v, op, kWarps);
    }
    return v;
  }
}
}  // namespace detail

/// Reduces v over the block. The result is valid in thread 0 only.
template <int BlockSize, typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op) {
  KERNELKIT_CHECK_BLOCK_SIZE(BlockSize);
  __shared__ T slots[BlockSize / kWarpSize];
  if constexpr (BlockSize > kWarpSize) {
    // a previous call's warp 0 may still be reading the slots
    __syncthreads();
  }
  return detail::block_reduce_to_thread0<BlockSize>(v, op, slots);
}

/// Reduces v over the block. Every thread receives the result.
template <int BlockSize, typename T, typename Op>
__device__ __forceinline__ T block_all_reduce(T v, Op op) {
  KERNELKIT_CHECK_BLOCK_SIZE(BlockSize);
  if constexpr (BlockSize == kWarpSize) {
    return warp_all_reduce<kWarpSize>(v, op);
  } else {
    __shared__ T slots[BlockSize / kWarpSize];
    __shared__ T result;
    // No leading barrier: a previous call's readers of `result` have all passed this
    // call's first barrier before warp 0 writes `result` again, and the slots were last
    // read by warp 0 before it wrote `result`.
    v = detail::block_reduce_to_thread0<BlockSize>(v, op, slots);
    if (threadIdx.x == 0) result = v;
    __syncthreads();
    return result;
  }
}

}  // namespace kernelkit
