// SPDX-License-Identifier: Apache-2.0
// Kernels of the device-wide reduction, shared with the row-wise reduction's long rows.
//
// Shape: a rows x cols row-major matrix; the device-wide reduction is its one row of n.
// Each row is read by `split` blocks (reduce_split_kernel): block s of a row reads the tiles
// s, s + split, s + 2 split, ... of the row's 16-byte packs (a tile is kReduceBlock x
// kReduceUnroll packs, thread t loading packs t, t + kReduceBlock, ... of it, all issued
// before any add), block 0 of the row also the scalar head (elements before the first
// aligned address) and tail. The row's `split` block partials are then combined in block
// order, by one of the four ways of core BlockCombine:
//   kNone:         split == 1, the block writes op(init, its partial) to out[r];
//   kGrid:         a cooperative launch (every block resident): each block writes its partial
//                  to partials[r * split + s] and syncs the grid (the driver's barrier, not the
//                  workspace's); then block r combines row r's partials in order
//                  s = 0, 1, ... (combine_partials) in the same launch;
//   kSecondKernel: as kGrid, but the combine is reduce_combine_kernel (one block per row), a
//                  second launch (a programmatic dependent launch on sm_90): the fallback
//                  where a cooperative grid cannot be launched;
//   kCluster:      the row's blocks form a thread-block cluster of at most kReduceMaxCluster
//                  (sm_90+, one item a block): each block stores its partial into a slot of
//                  the rank-0 block's shared memory and arrives on the cluster barrier; rank 0
//                  alone waits, then combines the slots exactly as combine_partials combines a
//                  row's partials (one launch, no workspace, no global atomics: the same bits
//                  as kGrid / kSecondKernel for the same split).
// No state is kept in the workspace between calls (kGrid and kSecondKernel write every partial
// they read in the same call), so the workspace may hold anything before a call.
// Accumulation is in C = compute_t<Acc>. The order of every operation depends only on
// (pointer alignment, rows, cols, split), and kGrid and kSecondKernel combine in the same order,
// so the same call gives the same bits every run.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/cluster.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/grid.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"

namespace kernelkit::detail {

inline constexpr int kReduceBlock = 256;  // threads per block, both kernels
// Packs of 16 bytes each thread loads per tile (all issued before the adds): 256 threads x 4
// blocks x 8 x 16 B = 128 KB of loads in flight per SM, ~6x what latency x bandwidth needs.
inline constexpr int kReduceUnroll = 8;
// Resident blocks per SM the split kernel is built for (__launch_bounds__): 4 x 256 threads
// leave 64 registers a thread (f32 sum 61, i64 64, f16 -> f32 64 measured, no spills).
inline constexpr int kReduceMinBlocks = 4;
inline constexpr int kReduceRegs = 65536 / (kReduceBlock * kReduceMinBlocks);
// Partials each combine thread loads before it adds them (one L2 round trip for up to
// kReduceBlock x this many partials of a row).
inline constexpr int kReduceCombineUnroll = 8;
// Most blocks of a kCluster row: the portable cluster size (every sm_90+ part schedules it).
inline constexpr int kReduceMaxCluster = 8;

// A load that bypasses L1 (partials written by other SMs).
template <typename C>
__device__ __forceinline__ C load_partial(const C* p) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double> || std::is_same_v<C, int> ||
                std::is_same_v<C, long long> || std::is_same_v<C, unsigned int> ||
                std::is_same_v<C, unsigned long long>) {
    return __ldcg(p);
  } else if constexpr (std::is_integral_v<C> && sizeof(C) == 8) {
    return static_cast<C>(__ldcg(reinterpret_cast<const long long*>(p)));
  } else {
    return *static_cast<const volatile C*>(p);
  }
}

// Adds to acc (one accumulator per pack lane) the packs of body at i, i + inner, ...,
// i + (U - 1) * inner, then the same from i + outer, i + 2 outer, ...: every such index below
// packs. The U loads of a step are all issued before the adds; the last, partial step is
// written as load-then-add per pack, which ptxas still predicates and batches (a plain
// remainder loop waits a round trip per pack). The device reduction (inner = the block,
// outer = the grid's tile stride) and the row reduction (inner = the row's lanes,
// outer = U x lanes) share it.
template <int U, int Pack, typename C, typename T, typename Op>
__device__ __forceinline__ void accumulate_packs(C (&acc)[Pack], const T* __restrict__ body,
                                                 int64_t i, int64_t packs, int64_t inner,
                                                 int64_t outer, Op op) {
#pragma unroll 1
  for (; i + (U - 1) * inner < packs; i += outer) {
    kernelkit::Pack<T, Pack> p[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      p[u] = load_pack<Pack>(body, i + u * inner);
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        acc[k] = op(acc[k], convert<C>(p[u].elem[k]));
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t idx = i + u * inner;
    if (idx < packs) {
      const kernelkit::Pack<T, Pack> p = load_pack<Pack>(body, idx);
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        acc[k] = op(acc[k], convert<C>(p.elem[k]));
    }
  }
}

// One thread's share of split s (of `split`) of a row of cols elements: its packs of every
// tile s + k * split, then (block s == 0) one head and one tail scalar. Returns the thread's
// partial (the identity when it read nothing).
template <int Pack, typename C, typename T, typename Op>
__device__ __forceinline__ C reduce_share(const T* __restrict__ row, int64_t cols, int s, int split,
                                          Op op) {
  const int64_t head = pack_head<Pack>(row, cols);
  const T* __restrict__ body = row + head;  // aligned to a whole pack
  const int64_t packs = (cols - head) / Pack;
  const int64_t tail = cols - head - packs * Pack;  // < Pack
  // one accumulator per pack lane
  C acc[Pack];
#pragma unroll
  for (int k = 0; k < Pack; ++k)
    acc[k] = identity<Op, C>();
  // tiles of kReduceBlock x kReduceUnroll packs, split s taking tiles s, s + split, ...;
  // thread t of a tile loads packs t + j * kReduceBlock
  accumulate_packs<kReduceUnroll>(acc, body,
                                  int64_t{s} * kReduceBlock * kReduceUnroll + threadIdx.x, packs,
                                  kReduceBlock, int64_t{split} * kReduceBlock * kReduceUnroll, op);
  C v = acc[0];
#pragma unroll
  for (int k = 1; k < Pack; ++k)
    v = op(v, acc[k]);
  if (s == 0) {
    if (threadIdx.x < head) v = op(v, convert<C>(row[threadIdx.x]));
    if (threadIdx.x < tail) v = op(v, convert<C>(body[packs * Pack + threadIdx.x]));
  }
  return v;
}

// Combines the split partials p[0..split) in order 0, 1, ..., split - 1: thread t takes
// partials t, t + kReduceBlock, ... (kReduceCombineUnroll loads issued before their adds),
// then the block tree. The result is valid in thread 0. Every thread of the block calls it.
template <typename C, typename Op>
__device__ __forceinline__ C combine_partials(const C* __restrict__ p, int split, Op op) {
  C v = identity<Op, C>();
  for (int base = threadIdx.x; base < split; base += kReduceBlock * kReduceCombineUnroll) {
    C q[kReduceCombineUnroll];
#pragma unroll
    for (int k = 0; k < kReduceCombineUnroll; ++k) {
      const int b = base + k * kReduceBlock;
      if (b < split) q[k] = load_partial(p + b);
    }
#pragma unroll
    for (int k = 0; k < kReduceCombineUnroll; ++k) {
      if (base + k * kReduceBlock < split) v = op(v, q[k]);
    }
  }
  return block_reduce<kReduceBlock>(v, op);
}

// kCluster: block `rank` of the 1-D cluster `cluster_id` (grid = rows x split, split <=
// kReduceMaxCluster, one item a block) reduces share `rank` of row `cluster_id`; the
// partials meet in the rank-0 block's shared memory and it writes out[row]. One barrier
// phase to know every block of the cluster has started (arrived at the kernel's start,
// waited for only before the remote store), one to publish the slots (release / acquire);
// the other blocks leave without waiting for rank 0. The combine is combine_partials' on
// the slots (thread t takes slot t, then the block tree): the same bits as kGrid.
template <int Pack, typename T, typename C, typename Acc, typename Op>
__device__ __forceinline__ void reduce_row_in_cluster(const T* __restrict__ in, int64_t cols,
                                                      int64_t ld, int split, Acc* __restrict__ out,
                                                      Acc init, Op op) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ C slots[kReduceMaxCluster];
  cluster_arrive_relaxed();  // phase 0: this block has started
  const int rank = cluster_rank();
  const int64_t r = static_cast<int>(blockIdx.x) / split;  // the cluster's row
  C v = reduce_share<Pack, C>(in + r * ld, cols, rank, split, op);
  v = block_reduce<kReduceBlock>(v, op);  // thread 0 holds the block's partial
  cluster_wait();                         // phase 0 done: rank 0's shared memory exists
  if (threadIdx.x == 0) *cluster_map(&slots[rank], 0) = v;
  cluster_arrive();  // phase 1 (release): this block's slot is written
  if (rank != 0) return;
  cluster_wait();  // (acquire) every slot of the row is written
  C w = identity<Op, C>();
  if (static_cast<int>(threadIdx.x) < split) w = op(w, slots[threadIdx.x]);
  w = block_reduce<kReduceBlock>(w, op);
  if (threadIdx.x == 0) out[r] = convert<Acc>(op(convert<C>(init), w));
#else
  // Unreachable: the plans choose kCluster only when DeviceInfo::clusters() says the
  // kernels were compiled for sm_90 or later. Loud rather than silently wrong.
  (void)in, (void)cols, (void)ld, (void)split, (void)out, (void)init, (void)op;
  __trap();
#endif
}

// Reduces rows x cols (see the top of this file; row r starts at in + r * ld, ld >= cols) with
// `split` blocks per row; the grid is a
// multiple of split and blocks stride over the rows * split (row, share) items by gridDim.x
// (kCluster: grid = rows x split in clusters of split, one item a block). partials:
// rows * split slots (kSecondKernel, kGrid). kGrid: launched cooperatively (every block
// resident at once).
template <int Pack, BlockCombine Combine, typename T, typename C, typename Acc, typename Op>
__global__ void __launch_bounds__(kReduceBlock, min_blocks_per_sm(kReduceBlock, kReduceMinBlocks))
    reduce_split_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, int64_t ld, int split,
                        Acc* __restrict__ out, Acc init, C* __restrict__ partials) {
  static_assert(std::is_same_v<C, compute_t<Acc>>, "partials are in the compute type of Acc");
  const Op op;
  if constexpr (Combine == BlockCombine::kCluster) {
    reduce_row_in_cluster<Pack, T, C>(in, cols, ld, split, out, init, op);
    return;
  }
  const int64_t items = rows * split;
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    // (row, share) of item w; split > 1 only for fewer than kReduceMaxSplit items, so a
    // 32-bit division does (a 64-bit one costs registers the loads need)
    const int64_t r = split == 1 ? w : static_cast<int>(w) / split;
    const int s = split == 1 ? 0 : static_cast<int>(w) - static_cast<int>(r) * split;
    C v = reduce_share<Pack, C>(in + r * ld, cols, s, split, op);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // every load of this block is done: the combine kernel (a programmatic dependent launch)
    // may be scheduled once every block got here; it waits for this grid before reading
    if constexpr (Combine == BlockCombine::kSecondKernel) {
      if (w + gridDim.x >= items) cudaTriggerProgrammaticLaunchCompletion();
    }
#endif
    v = block_reduce<kReduceBlock>(v, op);  // thread 0 holds the block's partial
    if constexpr (Combine == BlockCombine::kNone) {
      if (threadIdx.x == 0)
        out[r] = convert<Acc>(cols == 0 ? convert<C>(init) : op(convert<C>(init), v));
    } else {
      if (threadIdx.x == 0) partials[w] = v;  // kSecondKernel, kGrid
    }
  }
  if constexpr (Combine == BlockCombine::kGrid) {
    // The grid barrier of the cooperative launch (its counter is the driver's, per launch):
    // it releases thread 0's partial stores to every block. Every block takes part in the
    // whole barrier, as documented (the blocks with no row to combine then only leave: the
    // kernel's end is block 0's combine either way).
    grid_sync();  // every partial of every row is visible
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
      const C v = combine_partials(partials + r * split, split, op);
      if (threadIdx.x == 0) out[r] = convert<Acc>(op(convert<C>(init), v));
    }
  }
}

// Combines split partials per row in order 0, 1, ..., split - 1 (combine_partials) into
// out[r] = op(init, ...). One block per row (blocks stride over rows). On sm_90+ it may be a
// programmatic dependent launch: it waits for the split kernel before reading.
template <typename C, typename Acc, typename Op>
__global__ void __launch_bounds__(kReduceBlock)
    reduce_combine_kernel(const C* __restrict__ partials, int64_t rows, int split,
                          Acc* __restrict__ out, Acc init) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();  // the split kernel's partials are written and visible
#endif
  const Op op;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const C v = combine_partials(partials + r * split, split, op);
    if (threadIdx.x == 0) out[r] = convert<Acc>(op(convert<C>(init), v));
  }
}

}  // namespace kernelkit::detail
