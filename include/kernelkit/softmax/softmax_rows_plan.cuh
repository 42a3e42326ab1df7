// SPDX-License-Identifier: Apache-2.0
/// @file
/// The plan of the backward row family (detail/softmax_rows_kernels.cuh): softmax_backward /
/// log_softmax_backward over rows with leading dimensions (contiguous or strided; two inputs a
/// row, y and dy). The forward, strided or not, is plan_softmax's (softmax_plan.cuh: its
/// kernels take a row stride). Pure host code, host-tested on shapes x devices
/// (tests/softmax/softmax_rows_plan_test.cu).
///
/// Paths, by row width (the numbers read from DeviceInfo):
///  - kWarp: the row in the registers of a group of 4..32 lanes, at most 16 floats of each
///    input a lane (512 columns), all loads of a row issued before the reduction.
///  - kBlock: one block per row; the row's first `cached` packs of each input kept in shared
///    memory between the reduction and the write (one read when the row fits: up to ~113 KB a
///    row and input on an H100), the rest read again.
///  - kCluster (d.clusters(), 16-byte packs): rows fewer than half the SMs and of at least
///    kSoftmaxRowsClusterMinPacks packs: the kBlock kernel with a cluster of 1024-thread blocks a
///    row, the largest power of two up to d.max_cluster() that keeps rows x cluster <= SMs and
///    at least 1024 packs a block, each block's chunk cached.
/// Not (yet) in this family: the forward's block-register and grid paths; builds without
/// clusters run few wide rows one block a row.
///
/// Pricing: every plan carries the bytes it moves (rows x cols x elem_bytes x 3, plus the
/// inputs' columns past `cached` read again): a row kept whole moves 3 streams, a row past
/// shared memory 5 on its uncached part; kBlock keeps as much of each input on chip as one block
/// may hold, the fewest bytes this family can move.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/softmax/softmax_plan.cuh"

namespace kernelkit {

/// The kernel family of a strided-row call.
enum class SoftmaxRowsPath { kWarp, kBlock, kCluster };
/** @var SoftmaxRowsPath::kWarp
    The row in registers of a group of 4..32 lanes. */
/** @var SoftmaxRowsPath::kBlock
    One block per row, the row (or its first part) in shared memory. */
/** @var SoftmaxRowsPath::kCluster
    Few wide rows (sm_90 builds): a cluster of 2..16 blocks a row, each block's chunk in its
    shared memory, the accumulators combined through distributed shared memory. */

namespace detail {
inline constexpr int kSoftmaxRowsLaneFloats = 16;  // most floats of one input a lane holds
inline constexpr int kSoftmaxRowsInputs = 2;       // inputs read a row: y and dy
// Blocks of 128 threads per SM the warp kernel's __launch_bounds__ ask for, by the
// architecture the kernels were compiled for (kCompiledArch in the kernel, d.code_arch in the
// plan): 6, 80 registers (two inputs of 16 floats a lane and the partial packs' element-wise
// code; at 8 blocks, 64 registers, the f32 4 x 4 and 2-byte 8 x 2 backward kernels spilled
// 20-36 bytes on sm_100); sm_120 code 5, 96 registers (at 6 the f32 4 x 4 backward kernels
// spilled 20 bytes there).
constexpr int softmax_rows_warp_min_blocks(int code_arch) {
  return code_arch == 120 ? 5 : 6;
}
// Packs per thread the block kernel's block size aims for: 256 threads up to 8 packs a
// thread, 1024 past that.
inline constexpr int kSoftmaxRowsPacksPerThread = 8;
// Packs of each input (y and dy) the block kernel has in flight a thread (its loads issued
// together): 2, or 1 for packs of 8 elements and on a cluster (its rank and chunk bounds). At the
// 64 registers of 1024 threads more spilled: f32 4 + 4 16-24 bytes on sm_80, bf16 2 + 2 8 bytes
// on sm_120.
__host__ __device__ constexpr int softmax_rows_batch(int pack, bool cluster) {
  return pack == 8 || cluster ? 1 : 2;
}
// Dynamic shared memory the block kernel keeps before its cache: the block reduction's two
// slot sets (one accumulator of at most 16 bytes a warp each) and the cluster's two slots.
__host__ __device__ constexpr int softmax_rows_scratch_bytes(int block) {
  return (2 * (block / kWarpSize) + 2) * 16;
}
// kCluster: rows fewer than half the SMs, of at least this many packs (f32 8192 columns,
// 2-byte 16384): one block a row leaves most SMs idle and each busy SM moves its row alone.
inline constexpr int64_t kSoftmaxRowsClusterMinPacks = 2 * 1024;
}  // namespace detail

/// What one strided-row call does.
struct SoftmaxRowsPlan {
  SoftmaxRowsPath path = SoftmaxRowsPath::kWarp;  ///< the kernel family
  /// Elements per access: 16 / elem_bytes when every operand's row r sits at the same offset
  /// within 16 bytes (SoftmaxRowsLayout::matched: a row's partial head and tail move element by
  /// element), else 1.
  int pack = 1;
  int group = 32;  ///< kWarp: lanes that share one row (4, 8, 16, 32)
  int packs = 1;   ///< kWarp: packs each lane holds of each input
  /// kBlock: packs of a row (of each input) kept in shared memory (the rest is read twice).
  int64_t cached = 0;
  int split = 1;          ///< kCluster: blocks a row (the cluster's size); 1 otherwise
  int blocks_per_sm = 0;  ///< resident blocks per SM the grid is sized for
  double bytes = 0;       ///< bytes the plan moves (the reads past `cached` counted twice)
  LaunchShape shape;      ///< grid, block, dynamic shared memory of the one launch
};

/// One kernel configuration of the strided row family (an entry of kSoftmaxRowsConfigs).
struct SoftmaxRowsConfig {
  int elem_bytes = 0;                             ///< 4: float; 2: __half, __nv_bfloat16
  SoftmaxRowsPath path = SoftmaxRowsPath::kWarp;  ///< the kernel family
  int pack = 0;                                   ///< elements per access
  int block = 0;                                  ///< threads per block
  int group = 0;                                  ///< kWarp: lanes per row
  int packs = 0;                                  ///< kWarp: packs a lane holds
};

/// Same kernel.
constexpr bool operator==(const SoftmaxRowsConfig& a, const SoftmaxRowsConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.path == b.path && a.pack == b.pack &&
         a.block == b.block && a.group == b.group && a.packs == b.packs;
}

namespace detail {
constexpr SoftmaxRowsConfig softmax_rows_warp_config(int elem_bytes, int pack, int group,
                                                     int packs) {
  return {elem_bytes, SoftmaxRowsPath::kWarp, pack, kSoftmaxWarpBlock, group, packs};
}
constexpr SoftmaxRowsConfig softmax_rows_block_config(int elem_bytes, int pack, int block) {
  return {elem_bytes, SoftmaxRowsPath::kBlock, pack, block, 0, 0};
}
constexpr SoftmaxRowsConfig softmax_rows_cluster_config(int elem_bytes, int pack) {
  return {elem_bytes, SoftmaxRowsPath::kCluster, pack, kSoftmaxWideBlock, 0, 0};
}
}  // namespace detail

/// Every kernel configuration of the backward row family, each element size's together. Each is
/// instantiated for the two backward SoftmaxKinds.
/// - kWarp, 128 threads, 16-byte packs: groups of 4, 8, 16, 32 lanes one pack a lane; 32 lanes
///   2 or 4 (f32) packs a lane. One element per access: 32 lanes holding 1, 4 or 16.
/// - kBlock: 256 or 1024 threads, 16-byte packs or one element per access.
/// - kCluster: 1024 threads, 16-byte packs.
inline constexpr SoftmaxRowsConfig kSoftmaxRowsConfigs[] = {
    // float
    detail::softmax_rows_warp_config(4, 4, 4, 1),
    detail::softmax_rows_warp_config(4, 4, 8, 1),
    detail::softmax_rows_warp_config(4, 4, 16, 1),
    detail::softmax_rows_warp_config(4, 4, 32, 1),
    detail::softmax_rows_warp_config(4, 4, 32, 2),
    detail::softmax_rows_warp_config(4, 4, 32, 4),
    detail::softmax_rows_warp_config(4, 1, 32, 1),
    detail::softmax_rows_warp_config(4, 1, 32, 4),
    detail::softmax_rows_warp_config(4, 1, 32, 16),
    detail::softmax_rows_block_config(4, 4, 256),
    detail::softmax_rows_block_config(4, 4, 1024),
    detail::softmax_rows_block_config(4, 1, 256),
    detail::softmax_rows_block_config(4, 1, 1024),
    detail::softmax_rows_cluster_config(4, 4),
    // __half, __nv_bfloat16
    detail::softmax_rows_warp_config(2, 8, 4, 1),
    detail::softmax_rows_warp_config(2, 8, 8, 1),
    detail::softmax_rows_warp_config(2, 8, 16, 1),
    detail::softmax_rows_warp_config(2, 8, 32, 1),
    detail::softmax_rows_warp_config(2, 8, 32, 2),
    detail::softmax_rows_warp_config(2, 1, 32, 1),
    detail::softmax_rows_warp_config(2, 1, 32, 4),
    detail::softmax_rows_warp_config(2, 1, 32, 16),
    detail::softmax_rows_block_config(2, 8, 256),
    detail::softmax_rows_block_config(2, 8, 1024),
    detail::softmax_rows_block_config(2, 1, 256),
    detail::softmax_rows_block_config(2, 1, 1024),
    detail::softmax_rows_cluster_config(2, 8),
};

/// The entries of kSoftmaxRowsConfigs for elem_bytes-byte elements: [begin, end).
constexpr ConfigRange softmax_rows_configs_of(int elem_bytes) {
  return config_range(kSoftmaxRowsConfigs, [elem_bytes](const SoftmaxRowsConfig& c) {
    return c.elem_bytes == elem_bytes;
  });
}
static_assert(softmax_rows_configs_of(4).end - softmax_rows_configs_of(4).begin == 14 &&
                  softmax_rows_configs_of(2).end - softmax_rows_configs_of(2).begin == 13,
              "each element size's entries together");

/// The configuration plan p launches with elem_bytes-byte elements.
inline SoftmaxRowsConfig softmax_rows_config(const SoftmaxRowsPlan& p, int elem_bytes) {
  if (p.path == SoftmaxRowsPath::kWarp)
    return detail::softmax_rows_warp_config(elem_bytes, p.pack, p.group, p.packs);
  if (p.path == SoftmaxRowsPath::kCluster)
    return detail::softmax_rows_cluster_config(elem_bytes, p.pack);
  return detail::softmax_rows_block_config(elem_bytes, p.pack, static_cast<int>(p.shape.block.x));
}

/// Where the rows of a call's operands sit on the 16-byte grid: the first rows' offset and the
/// row stride's (ld x elem_bytes bytes), and whether every operand's row r sits at the same offset
/// (matched: the same first offset and stride offset for each), which lets a pack index mean the
/// same columns in every operand.
struct SoftmaxRowsLayout {
  Alignment first;      ///< the operands' first rows (matched: each one's)
  Alignment stride;     ///< the operands' row strides in bytes (matched: each one's)
  bool matched = true;  ///< false: the operands' rows sit at different offsets
};

/// The layout of x (ld_x elements of elem_bytes), out, and dy when dy_ld >= 0.
inline SoftmaxRowsLayout softmax_rows_layout(int elem_bytes, Alignment x, int64_t ld_x,
                                             Alignment out, int64_t ld_out,
                                             Alignment dy = Alignment(), int64_t ld_dy = -1) {
  const Alignment sx(ld_x * elem_bytes), so(ld_out * elem_bytes);
  bool matched = x == out && sx == so;
  if (ld_dy >= 0) matched = matched && dy == x && Alignment(ld_dy * elem_bytes) == sx;
  return {x, sx, matched};
}

/// The plan of a backward call (softmax_backward or log_softmax_backward: the plan is the same)
/// over rows x cols (rows, cols >= 1) of elem_bytes-byte elements (4 or 2) whose operands (y,
/// dy, dx) sit as `at` says, on device d. Pure: no CUDA call.
inline SoftmaxRowsPlan plan_softmax_rows(int64_t rows, int64_t cols, int elem_bytes,
                                         const SoftmaxRowsLayout& at, const DeviceInfo& d) {
  using namespace detail;
  SoftmaxRowsPlan p;
  const int max_pack = kMaxPackBytes / elem_bytes;
  p.pack = at.matched ? max_pack : 1;
  const int64_t pack_bytes = int64_t{p.pack} * elem_bytes;
  // packs a row spans (with its partial head and tail); whole packs at least and at most
  const bool on_grid = at.first.fits(kMaxPackBytes) && at.stride.fits(kMaxPackBytes);
  const int64_t vp = on_grid ? ceil_div<int64_t>(cols, p.pack) : (cols + 2 * p.pack - 2) / p.pack;
  const int64_t whole_min =
      on_grid ? cols / p.pack : std::max<int64_t>(0, cols - p.pack + 1) / p.pack;
  const int64_t whole_max = cols / p.pack;
  const double elems = double(rows) * double(cols);
  const int max_packs = p.pack > 1 ? kSoftmaxRowsLaneFloats / p.pack : kSoftmaxRowsLaneFloats;
  if (vp <= int64_t{kWarpSize} * max_packs) {
    p.path = SoftmaxRowsPath::kWarp;
    if (p.pack > 1 && vp <= kWarpSize) {
      p.group = static_cast<int>(std::max<int64_t>(4, pow2_ceil(vp)));
      p.packs = 1;
    } else {
      const int64_t need = ceil_div<int64_t>(vp, kWarpSize);
      p.group = kWarpSize;
      p.packs =
          p.pack > 1 ? static_cast<int>(pow2_ceil(need)) : (need <= 1 ? 1 : (need <= 4 ? 4 : 16));
    }
    const int regs =
        softmax_regs_bound(d, kSoftmaxWarpBlock, softmax_rows_warp_min_blocks(d.code_arch));
    p.blocks_per_sm = std::max(1, blocks_per_sm(d, kSoftmaxWarpBlock, regs, 0));
    const int64_t rows_per_block = kSoftmaxWarpBlock / p.group;
    const int64_t blocks = ceil_div(rows, rows_per_block);
    p.shape.block = dim3(kSoftmaxWarpBlock);
    p.shape.grid = dim3(static_cast<unsigned>(grid_size_for(
        blocks * kSoftmaxWarpBlock, kSoftmaxWarpBlock, d, kDefaultWaves, p.blocks_per_sm)));
    p.bytes = elems * elem_bytes * (kSoftmaxRowsInputs + 1);
    return p;
  }
  // few wide rows: a cluster a row (whole packs: every block's share at least 1024)
  int split = 1;
  if (d.clusters() && p.pack > 1 && 2 * rows <= d.sm_count &&
      whole_min >= kSoftmaxRowsClusterMinPacks) {
    while (split * 2 <= d.max_cluster() && rows * split * 2 <= d.sm_count &&
           whole_min / (split * 2) >= kSoftmaxWideBlock)
      split *= 2;
  }
  p.path = split > 1 ? SoftmaxRowsPath::kCluster : SoftmaxRowsPath::kBlock;
  p.split = split;
  const int block =
      split > 1 || vp > int64_t{256} * kSoftmaxRowsPacksPerThread ? kSoftmaxWideBlock : 256;
  const int regs = softmax_regs_bound(d, block, kSoftmaxWideBlock / block);
  const int64_t slots_bytes = softmax_rows_scratch_bytes(block);
  // the cache: the whole row of each input where one block may hold it, else as much as fits
  const int64_t room = std::max<int64_t>(0, d.smem_per_block_optin - slots_bytes) /
                       (kSoftmaxRowsInputs * pack_bytes);
  // a block's whole packs at most (the partial head and tail are read twice, not cached)
  const int64_t share = ceil_div<int64_t>(whole_max, split);
  p.cached = std::min(share, room);
  const int64_t smem = p.cached * kSoftmaxRowsInputs * pack_bytes;
  p.blocks_per_sm = std::max(1, blocks_per_sm(d, block, regs, slots_bytes + smem));
  const int64_t slots = int64_t{p.blocks_per_sm} * d.sm_count;
  p.shape.block = dim3(static_cast<unsigned>(block));
  p.shape.grid = dim3(static_cast<unsigned>(split > 1 ? rows * split : std::min(rows, slots)));
  p.shape.cluster = dim3(static_cast<unsigned>(split));
  p.shape.smem = static_cast<size_t>(slots_bytes + smem);
  // (a cluster's blocks each hold `cached` packs of their share)
  const double again =
      double(rows) * double(std::max<int64_t>(0, cols - int64_t{split} * p.cached * p.pack));
  p.bytes = (elems * (kSoftmaxRowsInputs + 1) + again * kSoftmaxRowsInputs) * elem_bytes;
  return p;
}

}  // namespace kernelkit
