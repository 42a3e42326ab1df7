// SPDX-License-Identifier: Apache-2.0
/// @file
/// Warp-level primitives on register values through __shfl_*_sync.
///
/// Every function here must be called by all 32 lanes of the warp (the mask is the full
/// warp). Width (1, 2, 4, 8, 16 or 32) splits the warp into 32 / Width independent groups of
/// consecutive lanes, as the width argument of __shfl_*_sync does; "lane" below means the
/// lane's index inside its group. With Width 1 every lane is its own group: the functions
/// return the lane's own value (the exclusive scan: init) and issue no shuffle, so a kernel
/// whose group width is a template parameter calls them for every width.
///
/// Types: int32, int64, float, double, __half, __nv_bfloat16 (shuffled as themselves;
/// accumulate half/bf16 in float by converting first, see compute_t). Op is any associative
/// functor (Sum, Max, Min from core/types.cuh or the caller's own).
#pragma once

#include "../core/types.cuh"

namespace kernelkit {

/// Threads of a warp.
inline constexpr int kWarpSize = 32;
/// The shuffle mask of every lane of the warp.
inline constexpr unsigned kFullMask = 0xffffffffu;

/// True for the group widths the warp primitives take: 1, 2, 4, 8, 16 or 32 lanes.
template <int Width>
inline constexpr bool kValidWidth =
    Width == 1 || Width == 2 || Width == 4 || Width == 8 || Width == 16 || Width == 32;
/// static_assert that Width is a valid group width (kValidWidth).
#define KERNELKIT_CHECK_WIDTH(Width) \
  static_assert(kValidWidth<Width>, "Width must be 1, 2, 4, 8, 16 or 32 lanes")

/// Tree reduction with shfl_down (log2(Width) steps). The result is in lane 0 of each group;
/// other lanes hold partial results.
template <int Width = kWarpSize, typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  KERNELKIT_CHECK_WIDTH(Width);
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2) {
    v = op(v, __shfl_down_sync(kFullMask, v, offset, Width));
  }
  return v;
}

/// Tree reduction over only the first `valid` lanes of each group (0 < valid <= Width):
/// lanes at or past `valid` contribute nothing. The result is in lane 0. Used where the
/// number of values is not a power of two (the per-warp slots of a block reduction).
template <int Width = kWarpSize, typename T, typename Op>
__device__ __forceinline__ T warp_reduce_first(T v, Op op, int valid) {
  KERNELKIT_CHECK_WIDTH(Width);
  const int lane = threadIdx.x % Width;
#pragma unroll
  for (int offset = Width / 2; offset > 0; offset /= 2) {
    const T other = __shfl_down_sync(kFullMask, v, offset, Width);
    if (lane + offset < valid) v = op(v, other);
  }
  return v;
}

/// Butterfly (xor) reduction: every lane of each group ends with the group's result. For
/// commutative ops every lane holds the same bits.
template <int Width = kWarpSize, typename T, typename Op>
__device__ __forceinline__ T warp_all_reduce(T v, Op op) {
  KERNELKIT_CHECK_WIDTH(Width);
#pragma unroll
  for (int mask = Width / 2; mask > 0; mask /= 2) {
    v = op(v, __shfl_xor_sync(kFullMask, v, mask, Width));
  }
  return v;
}

/// Every lane of each group receives the value of lane src_lane (0 <= src_lane < Width) of
/// its group.
template <int Width = kWarpSize, typename T>
__device__ __forceinline__ T warp_broadcast(T v, int src_lane) {
  KERNELKIT_CHECK_WIDTH(Width);
  if constexpr (Width == 1) {
    return v;  // src_lane is 0: the lane itself
  } else {
    return __shfl_sync(kFullMask, v, src_lane, Width);
  }
}

/// Inclusive scan (Kogge-Stone with shfl_up): lane i of each group receives
/// op(v_0, ..., v_i).
template <int Width = kWarpSize, typename T, typename Op>
__device__ __forceinline__ T warp_inclusive_scan(T v, Op op) {
  KERNELKIT_CHECK_WIDTH(Width);
  const int lane = threadIdx.x % Width;
#pragma unroll
  for (int offset = 1; offset < Width; offset *= 2) {
    const T other = __shfl_up_sync(kFullMask, v, offset, Width);
    if (lane >= offset) v = op(other, v);
  }
  return v;
}

/// Exclusive scan: lane i of each group receives op(init, v_0, ..., v_{i-1}); lane 0
/// receives init.
template <int Width = kWarpSize, typename T, typename Op>
__device__ __forceinline__ T warp_exclusive_scan(T v, Op op, T init) {
  KERNELKIT_CHECK_WIDTH(Width);
  if constexpr (Width == 1) {
    return init;  // every lane is lane 0 of its group
  } else {
    const T inclusive = warp_inclusive_scan<Width>(v, op);
    const T shifted = __shfl_up_sync(kFullMask, inclusive, 1, Width);
    return (threadIdx.x % Width == 0) ? init : op(init, shifted);
  }
}

}  // namespace kernelkit
