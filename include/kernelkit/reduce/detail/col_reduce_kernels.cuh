// SPDX-License-Identifier: Apache-2.0
// Kernel of the reduction over the middle axis of an (outer, n, inner) row-major layout:
// out[o * inner + i] = op(init, in[(o * n + 0) * inner + i], ..., in[(o * n + n - 1) * inner + i]).
//
// Columns are read in packs of Pack adjacent elements (Pack > 1 only when the pointer and
// inner * sizeof(T) are both on the 16-byte grid, so every row of every slice starts on a pack;
// else Pack = 1): a slice o has cp = inner / Pack column packs. A block of kColBlock threads is
// `width` column lanes x `lanes_k` = kColBlock / width row lanes (threads past width x lanes_k
// idle): thread t is column lane t % width, row lane t / width. A tile is `width` adjacent
// column packs of one slice (slice o = tile / tiles_per_outer); with width == cp (narrow
// slices) consecutive threads read consecutive packs of the flat array, whole rows at a time;
// width is 1..256 (few rows: wide tiles of few row lanes).
// Row lane l of split s reads rows k0 + l, k0 + l + lanes_k, ... of the split's rows
// [k0, k1) = [s * rows_per_split, min(n, (s + 1) * rows_per_split)), kColUnroll loads in flight
// (accumulate_packs, kColUnroll), one accumulator per pack element. The row lanes then meet in
// shared memory in a fixed tree (halving, with a barrier per level), and threads t < width * Pack
// write the tile's elements t (coalesced): to out (split 1, kNone) or to the workspace as
// partials[s * outer * inner + o * inner + i] (kSecondKernel), which the same kernel, run over
// the (split, outer * inner) partials with Pack 1, combines in split order. The order of the
// operations depends only on the plan, so the same call gives the same bits every run.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/math.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/reduce/detail/reduce_kernels.cuh"

namespace kernelkit::detail {

inline constexpr int kColBlock = 256;  // threads per block
// Loads of Pack elements a thread issues before it adds them: 256 threads x 4 blocks x 8 x 16 B
// = 128 KB in flight per SM (the split kernel's figure). Packs of 8 two-byte elements take 4:
// their 8 float accumulators and conversions left f16 at 64 registers with a 4-byte spill at 8
// loads (sm_90); 64 KB in flight per SM is still ~3x what an H100 SM needs at full bandwidth.
template <typename T, int Pack>
inline constexpr int kColUnroll = sizeof(T) == 2 && Pack > 1 ? 4 : 8;
// Resident blocks per SM the kernel is built for (64 registers a thread, as the split kernel):
// the plan's wave is reduce_wave(d).
inline constexpr int kColMinBlocks = 4;
// Column tile of a slice with enough rows, in packs: a warp reads a 512-byte row segment
// (16-byte packs), 8 row lanes. Fewer rows take fewer row lanes and wider tiles (up to the
// block): each row lane keeps >= kColMinLaneRows rows.
inline constexpr int kColMaxWidth = 32;
inline constexpr int kColMinLaneRows = 4;

// See the top of this file. partials: kSecondKernel only (split * outer * inner values).
template <int Pack, BlockCombine Combine, typename T, typename C, typename Acc, typename Op>
__global__ void __launch_bounds__(kColBlock, min_blocks_per_sm(kColBlock, kColMinBlocks))
    col_reduce_kernel(const T* __restrict__ in, int64_t outer, int64_t n, int64_t inner, int width,
                      int64_t tiles_per_outer, int64_t rows_per_split, Acc* __restrict__ out,
                      Acc init, C* __restrict__ partials) {
  static_assert(Combine == BlockCombine::kNone || Combine == BlockCombine::kSecondKernel,
                "col_reduce combines splits through the workspace");
  static_assert(std::is_same_v<C, compute_t<Acc>>, "accumulated in the compute type of Acc");
  __shared__ C red[kColBlock * Pack];
  const Op op;
  const int lanes_k = kColBlock / width;
  const int t = static_cast<int>(threadIdx.x);
  const int c = t % width;          // column lane
  const int l = t / width;          // row lane (idle threads: l >= lanes_k)
  const int64_t cp = inner / Pack;  // column packs of a slice
  const int64_t s = blockIdx.y;
  const int64_t k0 = s * rows_per_split;
  const int64_t k1 = k0 + rows_per_split < n ? k0 + rows_per_split : n;
  const int64_t tiles = outer * tiles_per_outer;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The combine over the partials may be a programmatic dependent launch of the split
  // kernel: nothing is read before that grid is complete and its writes visible (a no-op
  // in a kernel launched without the attribute).
  cudaGridDependencySynchronize();
#endif
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t o = tile / tiles_per_outer;
    const int64_t cb = (tile - o * tiles_per_outer) * width;  // the tile's first column pack
    C acc[Pack];
#pragma unroll
    for (int j = 0; j < Pack; ++j)
      acc[j] = identity<Op, C>();
    if (l < lanes_k && cb + c < cp && k0 + l < k1) {
      // rows are cp packs apart; this thread's column pack of row k is body[k * cp]
      const T* __restrict__ body = in + o * n * inner + (cb + c) * Pack;
      constexpr int kUnroll = kColUnroll<T, Pack>;
      accumulate_packs<kUnroll>(acc, body, (k0 + l) * cp, k1 * cp, int64_t{lanes_k} * cp,
                                int64_t{kUnroll} * lanes_k * cp, op);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // every load of this block is done: the combine may be scheduled once every block got
    // here (it waits for this grid's completion before it reads)
    if constexpr (Combine == BlockCombine::kSecondKernel) {
      if (tile + gridDim.x >= tiles) cudaTriggerProgrammaticLaunchCompletion();
    }
#endif
    __syncthreads();  // the previous tile's tree is read
    if (l < lanes_k) {
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        red[t * Pack + j] = acc[j];
    }
    __syncthreads();
    // row lanes [0, 2h) -> [0, h): lane l adds lane l + h (lanes past lanes_k count as the
    // identity); a fixed tree
    for (int h = static_cast<int>(pow2_ceil(static_cast<unsigned>(lanes_k))) / 2; h >= 1; h /= 2) {
      if (l < h && l + h < lanes_k) {
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          red[t * Pack + j] = op(red[t * Pack + j], red[(t + h * width) * Pack + j]);
      }
      __syncthreads();
    }
    // row lane 0 holds the tile: element e of it (column pack e / Pack) is red[e]; thread t
    // writes e = t, t + kColBlock, ... (wide tiles of few row lanes hold more than a block)
    for (int e = t; e < width * Pack; e += kColBlock) {
      const int64_t i = cb * Pack + e;
      if (i >= inner) break;
      const C v = red[e];
      if constexpr (Combine == BlockCombine::kNone) {
        out[o * inner + i] = convert<Acc>(op(convert<C>(init), v));
      } else {
        partials[s * outer * inner + o * inner + i] = v;
      }
    }
  }
}

}  // namespace kernelkit::detail
