// SPDX-License-Identifier: Apache-2.0
/// @file
/// The plans of cross_entropy and cross_entropy_backward: every decision of one call (threads
/// a row task, block, pack, chunks a row, grid, how the chunks and the rows' losses meet),
/// made by pure host code from the shape, the operands' alignment and the device's facts.
/// Host-tested on shapes x devices (tests/loss/cross_entropy_plan_test.cu).
///
/// Forward: a row's loss needs four numbers, the row's max and sum of exp(x - max) (the
/// softmax module's SoftmaxStats and their combine, reused), the sum of its logits (label
/// smoothing) and the target's logit; nothing of the row is kept on chip, so the logits are
/// read once, streamed in 16-byte packs at any alignment (SoftmaxSpan: a partial head and
/// tail pack a row, element by element). Work is cut into tasks, a task a chunk of a row
/// (softmax_chunk_begin's balanced, pack-aligned chunks: `split` of them a row):
///  - split == 1 (enough rows to give every block slot one): a task is a row, owned by a warp
///    (narrow rows: four a block of 128) or a block (128 or 512 threads, by width), which
///    writes the row's lse and loss itself.
///  - split > 1 (rows fewer than the block slots): each row over `split` blocks of 512, each
///    chunk's (max, sum, sum of x) parked in the workspace; the rows are finished from them.
/// Finishing (combine): where chunks were parked, or the losses are summed (sum, mean), one
/// block finishes the call in a fixed order (deterministic): the chunks of each row combined
/// by a group of `group` threads (cross_entropy_finish_group: split rounded up to a power of
/// two up to a warp, past it at most 4 chunks a thread), every row's parts and target loaded
/// before any is used (one L2 round trip for up to block / group rows), the block's warps past
/// the rows' returning at once (finish_warps); else each block's record (its rows' losses
/// summed and targets not ignored counted by the kernel, in a fixed order) added in block
/// order. kGrid (d.cooperative_launch): the grid is resident, the finish runs in block 0 after
/// a grid barrier, one launch; else kSecondKernel: a second launch of one block. kNone:
/// reduction none and split == 1.
///
/// Backward: dlogits = g (softmax - smoothing / vocab - (1 - smoothing) [j == target]), an
/// elementwise pass over each row given its lse (saved by the forward), target and g (dloss,
/// or dloss / rows counted for mean: every block counts the targets not ignored itself, an
/// integer sum, no workspace); logits read once, dlogits written once (in place allowed). Tasks
/// are chunks of rows of at most one batch of loads a thread (a warp per row for narrow rows),
/// smaller where the rows are too few to give every block slot a chunk; 16-byte
/// packs where logits and dlogits sit alike on the 16-byte grid in every row, else one element
/// an access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit {

/// How the rows' losses are returned (torch's `reduction`).
enum class LossReduction { kNone, kSum, kMean };
/** @var LossReduction::kNone
    One loss a row (0 for ignored rows). */
/** @var LossReduction::kSum
    One float: the sum of the rows' losses. */
/** @var LossReduction::kMean
    One float: the sum over the rows whose target is not ignore_index, divided by their count
    (NaN when there are none, as torch). */

namespace detail {
// Threads of the warp-per-row blocks (four rows a block).
inline constexpr int kCrossEntropyWarpBlock = 128;
// Registers a thread of the cross-entropy kernels is held to (__launch_bounds__ minimum
// blocks 65536 / (block x 64), capped by the architecture: 8 blocks of 128, 2 of 512): what
// they build to without spills on sm_75..sm_120 (at 40 every kernel spilled 8-640 bytes on
// sm_90). 1024 threads a SM x 32-64 bytes in flight a thread: 32-64 KiB a SM, past the ~20 KiB an
// H100 SM needs at the copy's rate.
inline constexpr int kCrossEntropyRegs = 64;
// Packs a thread loads before it reduces them (16-byte loads in flight a thread).
inline constexpr int kCrossEntropyUnroll = 4;
// The forward's batch of packs: 4 for every pack size (64 bytes in flight a thread). It was 2
// for 8-element packs (at 4 the 2-byte kernels spilled 16-60 bytes at 64 registers on sm_90);
// with bf16 unpacked by a shift / mask of its word (cross_entropy_elem) and the target reduced to
// its kind before the row streams, 4 builds without spills on sm_75..sm_120.
__host__ __device__ constexpr int cross_entropy_unroll(int) {
  return kCrossEntropyUnroll;
}
// The backward kernel's batch: 4 packs a thread for every pack size (64 bytes in flight a thread
// for 16-byte packs; 0 spills on sm_75..sm_120 since its inner loop is 8-9 instructions an
// element: at 2 packs the 2-byte kernel had 32 bytes in flight and 16 elements a task).
__host__ __device__ constexpr int cross_entropy_backward_unroll(int) {
  return kCrossEntropyUnroll;
}
// Narrow rows (at most this many packs: 512 f32 / 1024 2-byte columns) take a warp per row.
inline constexpr int64_t kCrossEntropyWarpMaxPacks = 128;
// Forward rows of at most this many packs (2048 f32 / 4096 2-byte columns) may take a warp per
// row too (cross_entropy_warp_rows says whether they do).
inline constexpr int64_t kCrossEntropyForwardWarpMaxPacks = 512;
// Rows of at most this many packs (16 a thread of 128) take blocks of 128, wider ones 512.
inline constexpr int64_t kCrossEntropySmallBlockMaxPacks = 2048;
// Forward split: the fewest packs of a chunk (2 KiB: one 16-byte load for a quarter of a block's
// threads; below that its fixed cost, a block reduction, outweighs its bytes; a row of 16K packs,
// 128K 2-byte classes, then spans 128 blocks).
inline constexpr int64_t kCrossEntropyMinChunkPacks = 128;
// The most tasks a split forward plans (its parked chunks: the workspace's bound, above the
// block slots of any device: 132 SMs x 2 on an H100).
inline constexpr int64_t kCrossEntropyMaxTasks = 4096;
// Threads of the second kernel's one block (at 512 the bf16 one spilled 4 bytes on sm_100).
inline constexpr int kCrossEntropyFinishBlock = 256;
// Parts a finishing thread loads before it combines them (16-byte loads in flight a thread).
inline constexpr int kCrossEntropyFinishUnroll = 4;

// Threads of the finishing block (`block` threads) a split row's parked parts take there (a
// power of two): split rounded up while that is at most a warp (a part a thread, 32 / group
// rows a warp); past a warp, the fewest that leave a thread at most kCrossEntropyFinishUnroll
// parts (one batch of loads, one round trip), at least a warp; at most the block. Not split
// rounded up past a warp: the finish is issue-bound (one SM's schedulers run it), every warp
// of a group pays the setup, the butterfly and the tree, and a group wider than a warp meets
// through shared memory and a barrier (H200: groups of 64-512, one part a thread, with every
// warp of the block through the finish, ran f32 5x38317+5 0.57 us and bf16 1x22134989 0.58 us
// slower than a warp a row of 2-9 parts a lane).
inline int cross_entropy_finish_group(int64_t split, int block) {
  const int64_t want =
      split <= kWarpSize
          ? split
          : std::max<int64_t>(kWarpSize, ceil_div<int64_t>(split, kCrossEntropyFinishUnroll));
  int g = 1;
  while (g < want && g < block)
    g *= 2;
  return g;
}

__host__ __device__ constexpr int cross_entropy_min_blocks(int block) {
  const int b = 65536 / (block * kCrossEntropyRegs);
  return b < 1 ? 1 : b;
}

// Whether rows of vp packs take a warp each (4 a block of 128) rather than a block of 128:
// the one with the fewer round trips on the critical path, counted in quarters of a batch's
// round trip: rounds of rows over the slots x (batches a row + the reduction: a quarter for the
// warp's shuffles, three for the block's barriers and shared memory). A warp a row keeps 4x
// the rows, and their loads, in flight (the block of 128 read a 1-2K-column row in one batch,
// then sat in its reduction: 0.25-0.45 of SOL measured), but takes 4x the batches a row, which
// loses where the rows are too few to fill the warps (311 x 1693 f32: 1 round either way,
// 4 batches against 1).
inline bool cross_entropy_warp_rows(int64_t rows, int64_t vp, const DeviceInfo& d) {
  if (vp <= kCrossEntropyWarpMaxPacks) return true;
  if (vp > kCrossEntropyForwardWarpMaxPacks) return false;
  const int64_t bps = std::max(1, blocks_per_sm(d, kCrossEntropyWarpBlock, kCrossEntropyRegs, 0));
  const int64_t block_slots = bps * d.sm_count;
  const int64_t warp_slots = block_slots * (kCrossEntropyWarpBlock / kWarpSize);
  const int64_t batch = int64_t{cross_entropy_unroll(0)};
  const int64_t warp_cost =
      ceil_div(rows, warp_slots) * (4 * ceil_div<int64_t>(vp, kWarpSize * batch) + 1);
  const int64_t block_cost =
      ceil_div(rows, block_slots) * (4 * ceil_div<int64_t>(vp, kCrossEntropyWarpBlock * batch) + 3);
  return warp_cost <= block_cost;
}
}  // namespace detail

/// One kernel configuration of cross_entropy or cross_entropy_backward (an entry of
/// kCrossEntropyConfigs): the template arguments besides the logit and target types.
struct CrossEntropyConfig {
  bool backward = false;  ///< the backward kernel (else the forward)
  int elem_bytes = 0;     ///< 4: float; 2: __half, __nv_bfloat16
  int pack = 0;           ///< elements per access (16 bytes, or 1: backward off the grid)
  int threads = 0;        ///< threads a task (a row or a chunk of one): 32 or the block
  int block = 0;          ///< threads per block
};

/// Same kernel.
constexpr bool operator==(const CrossEntropyConfig& a, const CrossEntropyConfig& b) {
  return a.backward == b.backward && a.elem_bytes == b.elem_bytes && a.pack == b.pack &&
         a.threads == b.threads && a.block == b.block;
}

/// Every kernel configuration the two ops launch, each (direction, element size)'s entries
/// together. Forward: 16-byte packs always (nothing is written at the logits' columns, so any
/// row alignment streams in packs), a warp a row (narrow rows), a block of 128 (up to 16 packs
/// a thread) or of 512 (wider rows, and the chunks of a split). Backward: a warp a row or a
/// block of 512 a chunk, 16-byte packs or one element an access.
inline constexpr CrossEntropyConfig kCrossEntropyConfigs[] = {
    // forward, float
    {false, 4, 4, 32, detail::kCrossEntropyWarpBlock},
    {false, 4, 4, 128, 128},
    {false, 4, 4, 512, 512},
    // forward, __half and __nv_bfloat16
    {false, 2, 8, 32, detail::kCrossEntropyWarpBlock},
    {false, 2, 8, 128, 128},
    {false, 2, 8, 512, 512},
    // backward, float
    {true, 4, 4, 32, detail::kCrossEntropyWarpBlock},
    {true, 4, 4, 512, 512},
    {true, 4, 1, 32, detail::kCrossEntropyWarpBlock},
    {true, 4, 1, 512, 512},
    // backward, __half and __nv_bfloat16
    {true, 2, 8, 32, detail::kCrossEntropyWarpBlock},
    {true, 2, 8, 512, 512},
    {true, 2, 1, 32, detail::kCrossEntropyWarpBlock},
    {true, 2, 1, 512, 512},
};

/// The entries of kCrossEntropyConfigs of one direction and element size.
constexpr ConfigRange cross_entropy_configs_of(bool backward, int elem_bytes) {
  return config_range(kCrossEntropyConfigs, [backward, elem_bytes](const CrossEntropyConfig& c) {
    return c.backward == backward && c.elem_bytes == elem_bytes;
  });
}
static_assert(
    cross_entropy_configs_of(false, 4).end - cross_entropy_configs_of(false, 4).begin == 3 &&
        cross_entropy_configs_of(false, 2).end - cross_entropy_configs_of(false, 2).begin == 3 &&
        cross_entropy_configs_of(true, 4).end - cross_entropy_configs_of(true, 4).begin == 4 &&
        cross_entropy_configs_of(true, 2).end - cross_entropy_configs_of(true, 2).begin == 4,
    "each direction and element size's entries together");

/// Every decision of one cross_entropy or cross_entropy_backward call.
struct CrossEntropyPlan {
  int pack = 1;           ///< elements per access
  int threads = 0;        ///< threads a task: 32 (a warp) or the block
  int split = 1;          ///< chunks a row (tasks = rows x split)
  int64_t tasks = 0;      ///< tasks of the grid-stride loop
  int blocks_per_sm = 0;  ///< resident blocks per SM the plan counts on
  /// Forward: how parked chunks and row losses meet (kNone: nothing to finish; kGrid: block 0
  /// after a grid barrier; kSecondKernel: a second launch of one block). Backward: kNone.
  BlockCombine combine = BlockCombine::kNone;
  int64_t bytes = 0;   ///< bytes the plan moves (DRAM; backward: + the targets each block
                       ///< counts for mean, from L2)
  LaunchShape shape;   ///< the main launch
  LaunchShape finish;  ///< kSecondKernel: the second launch (one block)
  /// Forward, split > 1: threads of the finishing block a row's chunks take there (a power of
  /// two: cross_entropy_finish_group); 1 otherwise.
  int group = 1;
  /// Forward, combine kGrid or kSecondKernel: the finishing block's warps that take part (the
  /// rows' groups, or a thread a block's record; at most the block); the others return at once.
  int finish_warps = 0;
};

/// The configuration plan p launches (forward or backward) with elem_bytes-byte logits.
inline CrossEntropyConfig cross_entropy_config(const CrossEntropyPlan& p, bool backward,
                                               int elem_bytes) {
  return {backward, elem_bytes, p.pack, p.threads, static_cast<int>(p.shape.block.x)};
}

/// Bytes of workspace cross_entropy needs for rows x vocab logits: a float a row or 16 bytes a
/// parked chunk (at most kCrossEntropyMaxTasks, and vocab / 256 + 1 a row), whichever is more
/// (it also holds the 16-byte record of each block of a grid of at most min(rows,
/// kCrossEntropyMaxTasks) blocks, which the sums of whole rows park). 0 for no rows. Pure: no
/// device fact enters.
inline size_t cross_entropy_workspace_bytes(int64_t rows, int64_t vocab) {
  if (rows <= 0 || vocab <= 0) return 0;
  const int64_t per_row = vocab / detail::kCrossEntropyMinChunkPacks + 1;
  const int64_t chunks = rows > detail::kCrossEntropyMaxTasks / per_row
                             ? detail::kCrossEntropyMaxTasks
                             : std::min(rows * per_row, detail::kCrossEntropyMaxTasks);
  return static_cast<size_t>(std::max(rows * 4, chunks * 16));
}

/// The fewest bytes a forward call moves: the logits and targets read once, the losses (a row
/// or one) and the lse written once.
inline int64_t cross_entropy_fewest_bytes(int64_t rows, int64_t vocab, int elem_bytes,
                                          int target_bytes, LossReduction reduction, bool lse) {
  return rows * vocab * elem_bytes + rows * target_bytes + (lse ? rows * 4 : 0) +
         (reduction == LossReduction::kNone ? rows * 4 : 4);
}

/// The fewest bytes a backward call moves: logits read and dlogits written once, the targets,
/// lse and dloss (a row or one) read once.
inline int64_t cross_entropy_backward_fewest_bytes(int64_t rows, int64_t vocab, int elem_bytes,
                                                   int target_bytes, LossReduction reduction) {
  return 2 * rows * vocab * elem_bytes + rows * (target_bytes + 4) +
         (reduction == LossReduction::kNone ? rows * 4 : 4);
}

/// The plan of cross_entropy over rows x vocab (>= 1) logits of elem_bytes-byte elements (4 or
/// 2), any alignment and row stride (the forward always streams 16-byte packs). fewest:
/// cross_entropy_fewest_bytes of the call. Pure: no CUDA call.
inline CrossEntropyPlan plan_cross_entropy(int64_t rows, int64_t vocab, int elem_bytes,
                                           LossReduction reduction, int64_t fewest,
                                           const DeviceInfo& d) {
  using namespace detail;
  CrossEntropyPlan p;
  p.pack = kMaxPackBytes / elem_bytes;
  p.bytes = fewest;
  // packs a row spans at most (a partial head and tail)
  const int64_t vp = (vocab + 2 * p.pack - 2) / p.pack;
  int block = 512;
  if (cross_entropy_warp_rows(rows, vp, d)) {
    p.threads = kWarpSize, block = kCrossEntropyWarpBlock;
  } else if (vp <= kCrossEntropySmallBlockMaxPacks) {
    p.threads = block = 128;
  } else {
    p.threads = block = 512;
  }
  int bps = std::max(1, blocks_per_sm(d, block, kCrossEntropyRegs, 0));
  int64_t slots = int64_t{bps} * d.sm_count;
  // rows too few for the block slots: each row over blocks of 512, chunks of at least
  // kCrossEntropyMinChunkPacks packs
  const int bps512 = std::max(1, blocks_per_sm(d, 512, kCrossEntropyRegs, 0));
  const int64_t slots512 = int64_t{bps512} * d.sm_count;
  const int64_t split =
      std::min({slots512 / rows, vp / kCrossEntropyMinChunkPacks, kCrossEntropyMaxTasks / rows});
  if (split >= 2) {
    p.threads = block = 512;
    bps = bps512, slots = slots512;
    p.split = static_cast<int>(split);
  }
  p.tasks = rows * p.split;
  p.blocks_per_sm = bps;
  p.shape.block = dim3(static_cast<unsigned>(block));
  const bool finish = p.split > 1 || reduction != LossReduction::kNone;
  // a grid-stride loop over the tasks on the resident blocks (every task's bytes in flight
  // at once where they are fewer)
  const int64_t grid = std::min(ceil_div<int64_t>(p.tasks, block / p.threads), slots);
  p.shape.grid = dim3(static_cast<unsigned>(grid));
  if (!finish) {
    p.combine = BlockCombine::kNone;
  } else if (d.cooperative_launch) {
    p.combine = BlockCombine::kGrid;
    p.shape.cooperative = true;
  } else {
    p.combine = BlockCombine::kSecondKernel;
    p.finish.block = dim3(kCrossEntropyFinishBlock);
    p.finish.grid = dim3(1);
  }
  if (finish) {
    // the finishing block: the main one (kGrid) or the second kernel's
    const int fb = p.combine == BlockCombine::kGrid ? block : kCrossEntropyFinishBlock;
    if (p.split > 1) p.group = cross_entropy_finish_group(p.split, fb);
    const int64_t items = p.split > 1 ? rows * p.group : int64_t{p.shape.grid.x};
    p.finish_warps = static_cast<int>(ceil_div<int64_t>(std::min<int64_t>(items, fb), kWarpSize));
  }
  // parked chunks or the blocks' records (16 bytes each) written and read back
  if (p.split > 1)
    p.bytes += 2 * p.tasks * 16;
  else if (finish)
    p.bytes += 2 * int64_t{p.shape.grid.x} * 16;
  return p;
}

/// The plan of cross_entropy_backward over rows x vocab (>= 1) elem_bytes-byte elements:
/// alike when row r of logits and of dlogits sit at the same place on the 16-byte grid for
/// every r (then 16-byte packs). target_bytes: 4 or 8; fewest: the call's
/// cross_entropy_backward_fewest_bytes. Pure.
inline CrossEntropyPlan plan_cross_entropy_backward(int64_t rows, int64_t vocab, int elem_bytes,
                                                    bool alike, int target_bytes,
                                                    LossReduction reduction, int64_t fewest,
                                                    const DeviceInfo& d) {
  using namespace detail;
  CrossEntropyPlan p;
  p.pack = alike ? kMaxPackBytes / elem_bytes : 1;
  const int64_t vp = p.pack == 1 ? vocab : (vocab + 2 * p.pack - 2) / p.pack;
  int block;
  if (vp <= kCrossEntropyWarpMaxPacks) {
    p.threads = kWarpSize, block = kCrossEntropyWarpBlock;
  } else {
    p.threads = block = 512;
    // chunks of at most one batch of loads a thread (cross_entropy_backward_unroll packs); rows too
    // few for the block slots: more chunks, down to kCrossEntropyMinChunkPacks packs, as many as
    // fit the slots in one round (slots / rows a row: rounding up, 16 rows x 17 chunks = 272
    // tasks on an H100's 264 slots ran 8 of them in a second round)
    const int64_t batch = int64_t{block} * cross_entropy_backward_unroll(p.pack);
    const int64_t slots =
        int64_t{std::max(1, blocks_per_sm(d, block, kCrossEntropyRegs, 0))} * d.sm_count;
    const int64_t split = std::max(ceil_div<int64_t>(vp, batch),
                                   std::min(slots / rows, vp / kCrossEntropyMinChunkPacks));
    // (chunks of at least a pack: vp > kCrossEntropyWarpMaxPacks here)
    p.split = static_cast<int>(std::min<int64_t>(split, vp / 2));
  }
  p.tasks = rows * p.split;
  const int bps = std::max(1, blocks_per_sm(d, block, kCrossEntropyRegs, 0));
  p.blocks_per_sm = bps;
  const int64_t slots = int64_t{bps} * d.sm_count;
  const int64_t grid = std::min(ceil_div<int64_t>(p.tasks, block / p.threads), slots);
  p.shape.block = dim3(static_cast<unsigned>(block));
  p.shape.grid = dim3(static_cast<unsigned>(grid));
  p.combine = BlockCombine::kNone;
  p.bytes = fewest;
  // mean: every block counts the targets (from L2 after the first)
  if (reduction == LossReduction::kMean) p.bytes += (grid - 1) * rows * target_bytes;
  return p;
}

}  // namespace kernelkit
