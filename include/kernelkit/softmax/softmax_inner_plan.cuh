// SPDX-License-Identifier: Apache-2.0
/// @file
/// The plan of softmax over the middle axis of an (outer, n, inner) row-major layout
/// (softmax_inner, log_softmax_inner and their backward passes; softmax_inner.cuh): every
/// decision of one call, made by pure host code from the shape, the operands' alignment, the
/// workspace and the device's facts. Host-tested on shapes x devices
/// (tests/softmax/softmax_inner_plan_test.cu). inner == 1 is a row softmax (outer rows of n)
/// and never reaches this plan.
///
/// Column (o, i) is the n elements x[o][k][i], k < n, inner elements apart. Three paths:
///  - kRegs: short columns (n <= 16 forward, 8 backward) in registers: each thread loads its
///    columns' n rows straight from global memory (a 16- or 8-byte pack of columns a row where
///    every row starts on the 16-byte grid, else one element), reduces them and writes them:
///    one read and one write, 10-25 instructions an element, no shared memory, no barrier.
///    `rows` (n rounded up to a power of two) is the kernel's register bound; a thread holds
///    `units` column units (pack columns each) at once. Tiles of `run` units of one slice's
///    columns (`cols` columns) where a slice has at least 256 units, else of run / 256 steps of
///    256 / units-a-slice whole slices (cols 0; the threads past those slices' units idle).
///  - kTile: a tile of whole columns in shared memory, read once and written once. Short
///    slices (n x inner x inputs fitting the tile budget): `slices` consecutive whole slices, one
///    contiguous run of memory moved as 16-byte packs (its partial end packs element by element).
///    Taller ones: `cols` adjacent columns of one slice (n rows of cols elements, inner apart;
///    16-byte packs when every row starts on the 16-byte grid). The block then reduces each
///    column out of shared memory (one thread a column, or `lanes` threads a column when the tile
///    has fewer columns than threads), writes the result in place there and copies the tile out.
///    The tile budget (kSoftmaxInnerTileBytes, at most a quarter of the SM's shared memory, so
///    four blocks overlap their loads with their arithmetic) sets how many columns a tile holds;
///    a tile is at least a 32-byte sector of each row wide, up to half the SM's shared memory.
///  - kSplit: columns too tall for a tile (a sector of each of n rows past half the SM's shared
///    memory): column tiles of `width` packs x 256 / width row lanes streamed from global memory
///    (column_tile_width, as col_reduce). With a workspace and too few tiles to fill a wave, n is
///    split over `split` blocks per tile: a statistics kernel writes each split's (max, sum) per
///    column to the workspace, then the writing kernel combines them (every block the partials of
///    its columns, in split order) and streams its rows again. Without a split the writing kernel
///    reduces its columns itself first. Either way x is read twice (the second read from L2 when
///    the columns in flight fit it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernelkit/core/column_tiles.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"

namespace kernelkit {

/// The kernel family of a softmax_inner call.
enum class SoftmaxInnerPath { kTile, kSplit, kRegs };
/** @var SoftmaxInnerPath::kRegs
    Short columns in registers, read straight from global memory: one read, one write. */
/** @var SoftmaxInnerPath::kTile
    Whole columns in shared memory: one read, one write. */
/** @var SoftmaxInnerPath::kSplit
    Columns streamed twice from global memory (statistics, then the write), n optionally split
    over blocks through the workspace. */

namespace detail {
inline constexpr int kSoftmaxInnerBlock = 256;  // threads of every softmax_inner block
// Resident blocks per SM the kernels' __launch_bounds__ ask for (64 registers a thread).
inline constexpr int kSoftmaxInnerMinBlocks = 4;
// Registers a thread at kSoftmaxInnerMinBlocks blocks of 256 threads.
inline constexpr int kSoftmaxInnerRegs = 64;
// The streaming kernels: 3 blocks, 80 registers (a pack's (max, sum) pairs, compensations and
// column statistics next to the rows in flight: 2-byte packs of 8 spilled 8-428 bytes at 64
// registers, sm_90).
inline constexpr int kSoftmaxInnerStreamMinBlocks = 3;
inline constexpr int kSoftmaxInnerStreamRegs = 80;
// Bytes of a kTile tile (all inputs together) aimed for: at 4 blocks a SM 128 KiB of loads in
// flight a SM (an H100 SM needs ~25 KB at full bandwidth) while other blocks compute.
inline constexpr int64_t kSoftmaxInnerTileBytes = 32 * 1024;
// Blocks a SM the tile budget leaves room for (the budget is at most the SM's shared memory over
// this).
inline constexpr int kSoftmaxInnerTileBlocksPerSm = 4;
// Static shared memory of the kernels: the tile kernel's per-lane (max, sum) slots (2 floats a
// thread); the streaming kernels' row-lane tree (a (max, sum) pair a pack element a thread).
constexpr int softmax_inner_tile_static_smem() {
  return kSoftmaxInnerBlock * 2 * 4;
}
constexpr int softmax_inner_stream_static_smem(int pack) {
  return kSoftmaxInnerBlock * pack * 8;
}
// kSplit: elements per access where the rows sit on the 16-byte grid: 4 (f32 16 bytes, 2-byte
// types 8: their packs of 8 kept 8 (max, sum) pairs a thread and spilled 8-212 bytes at 80
// registers, sm_90).
inline constexpr int kSoftmaxInnerSplitPack = 4;
// kSplit: column tiles of at most 32 packs, row lanes with at least 4 rows (col_reduce's).
inline constexpr int kSoftmaxInnerMaxWidth = 32;
inline constexpr int kSoftmaxInnerMinLaneRows = 4;
// kSplit: fewest rows a split block reads, and most blocks a tile (bounds the workspace).
inline constexpr int64_t kSoftmaxInnerMinSplitRows = 64;
inline constexpr int64_t kSoftmaxInnerMaxSplit = 1024;
// kRegs: the tallest columns forward / backward (backward columns of 16 rows, 32 registers of
// loads, spilled 4-12 bytes at 64 registers on sm_75 / 80 / 100 / 120).
inline constexpr int kSoftmaxInnerRegsMaxRows = 16;
inline constexpr int kSoftmaxInnerRegsMaxRowsBackward = 8;
// kRegs: elements a load where every row is on the 16-byte grid: 16-byte packs up to 4 rows
// forward / 1 backward, 8-byte ones up to 8 / 4 (2-byte 16-byte packs of 2 rows backward
// spilled 8 bytes at 64 registers, sm_90: a pack's 8 columns are 8 floats a row once
// converted), single elements past that.
KERNELKIT_HD constexpr int softmax_inner_regs_pack(int elem_bytes, bool backward, int rows) {
  return rows <= (backward ? 1 : 4) ? 16 / elem_bytes
                                    : (rows <= (backward ? 4 : 8) ? 8 / elem_bytes : 1);
}
// kRegs: column units (pack columns) a thread holds at once: the loads of all of them (every
// row of every input) fill 16 registers of packs (64 bytes in flight a thread), 16 of 2-byte
// single elements (a register each: 32 bytes) or 10 of f32 ones (40 bytes): 32-64 KB an SM at 4
// blocks of 256, about what an SM needs at the copy's rate (~25-36 KB). 2-byte single elements
// 20-32 at a time spilled 4-50 bytes at 64 registers (sm_100, sm_120), f32 12 at a time 4-16
// bytes (sm_120).
KERNELKIT_HD constexpr int softmax_inner_regs_units(int elem_bytes, int pack, bool backward,
                                                    int rows) {
  const int bytes = elem_bytes * pack;
  const int regs_a_load = bytes < 4 ? 1 : bytes / 4;
  const int target = bytes < 4 ? 16 : (bytes == 4 ? 10 : 16);
  const int u = target / (regs_a_load * rows * (backward ? 2 : 1));
  return u < 1 ? 1 : u;
}
// kSplit: each writing block reads the split partials of its columns (8 bytes a split and
// column, from L2): split^2 x 8 <= n x elem_bytes x streams / 32 keeps them under a quarter of
// the block's own traffic.
constexpr int64_t softmax_inner_split_by_combine(int64_t n, int elem_bytes, int streams) {
  const double v = std::sqrt(double(n) * elem_bytes * streams / 32.0);
  return static_cast<int64_t>(v);
}
}  // namespace detail

/// One kernel configuration of softmax_inner (an entry of kSoftmaxInnerConfigs); each is
/// instantiated for the four SoftmaxKinds.
struct SoftmaxInnerConfig {
  int elem_bytes = 0;                               ///< 4: float; 2: __half, __nv_bfloat16
  SoftmaxInnerPath path = SoftmaxInnerPath::kTile;  ///< the kernel family
  int pack = 0;                                     ///< elements per access: 16 / elem_bytes or 1
  int rows = 0;                                     ///< kRegs: the register bound on n; else 0
};

/// Same kernel.
constexpr bool operator==(const SoftmaxInnerConfig& a, const SoftmaxInnerConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.path == b.path && a.pack == b.pack && a.rows == b.rows;
}

/// Every kernel configuration of softmax_inner, each element size's together: kTile with 16-byte
/// packs or one element per access; kSplit with packs of 4 elements (kSoftmaxInnerSplitPack) or
/// one; kRegs with 16-byte packs (n bound 1, 2, 4), 8-byte ones (2, 4, 8) or one element per
/// access (1 .. 16).
inline constexpr SoftmaxInnerConfig kSoftmaxInnerConfigs[] = {
    {4, SoftmaxInnerPath::kTile, 4},     {4, SoftmaxInnerPath::kTile, 1},
    {4, SoftmaxInnerPath::kSplit, 4},    {4, SoftmaxInnerPath::kSplit, 1},
    {4, SoftmaxInnerPath::kRegs, 4, 1},  {4, SoftmaxInnerPath::kRegs, 4, 2},
    {4, SoftmaxInnerPath::kRegs, 4, 4},  {4, SoftmaxInnerPath::kRegs, 2, 2},
    {4, SoftmaxInnerPath::kRegs, 2, 4},  {4, SoftmaxInnerPath::kRegs, 2, 8},
    {4, SoftmaxInnerPath::kRegs, 1, 1},  {4, SoftmaxInnerPath::kRegs, 1, 2},
    {4, SoftmaxInnerPath::kRegs, 1, 4},  {4, SoftmaxInnerPath::kRegs, 1, 8},
    {4, SoftmaxInnerPath::kRegs, 1, 16}, {2, SoftmaxInnerPath::kTile, 8},
    {2, SoftmaxInnerPath::kTile, 1},     {2, SoftmaxInnerPath::kSplit, 4},
    {2, SoftmaxInnerPath::kSplit, 1},    {2, SoftmaxInnerPath::kRegs, 8, 1},
    {2, SoftmaxInnerPath::kRegs, 8, 2},  {2, SoftmaxInnerPath::kRegs, 8, 4},
    {2, SoftmaxInnerPath::kRegs, 4, 2},  {2, SoftmaxInnerPath::kRegs, 4, 4},
    {2, SoftmaxInnerPath::kRegs, 4, 8},  {2, SoftmaxInnerPath::kRegs, 1, 1},
    {2, SoftmaxInnerPath::kRegs, 1, 2},  {2, SoftmaxInnerPath::kRegs, 1, 4},
    {2, SoftmaxInnerPath::kRegs, 1, 8},  {2, SoftmaxInnerPath::kRegs, 1, 16},
};

/// The entries of kSoftmaxInnerConfigs for elem_bytes-byte elements: [begin, end).
constexpr ConfigRange softmax_inner_configs_of(int elem_bytes) {
  return config_range(kSoftmaxInnerConfigs, [elem_bytes](const SoftmaxInnerConfig& c) {
    return c.elem_bytes == elem_bytes;
  });
}
static_assert(softmax_inner_configs_of(4).end - softmax_inner_configs_of(4).begin == 15 &&
                  softmax_inner_configs_of(2).end - softmax_inner_configs_of(2).begin == 15,
              "each element size's entries together");

/// Where a call's operands sit on the 16-byte grid: all of them together (common) and whether
/// they all sit at the same offset (matched: a flat run of elements is the same packs in each).
struct SoftmaxInnerLayout {
  Alignment common;     ///< common_alignment of every operand
  bool matched = true;  ///< every operand at the same offset within 16 bytes
};

/// The layout of operands at a, b and (when given) c.
inline SoftmaxInnerLayout softmax_inner_layout(Alignment a, Alignment b,
                                               const Alignment* c = nullptr) {
  SoftmaxInnerLayout l;
  l.common = c ? common_alignment(a, b, *c) : common_alignment(a, b);
  l.matched = a == b && (c == nullptr || *c == a);
  return l;
}

/// What one softmax_inner call does.
struct SoftmaxInnerPlan {
  SoftmaxInnerPath path = SoftmaxInnerPath::kTile;  ///< the kernel family
  int pack = 1;     ///< elements per access (kTile: 16 / elem_bytes or 1; kRegs: 16 or 8 bytes'
                    ///< worth or 1; kSplit: 4 or 1)
  int rows = 0;     ///< kRegs: the register bound on n (n rounded up to a power of two); else 0
  int units = 0;    ///< kRegs: column units (pack columns each) a thread holds at once
  int64_t run = 0;  ///< kRegs: 256 x the units a thread takes a tile (at most 256 x units)
  /// kTile: whole slices a tile holds (> 1 only when a slice fits the tile budget); with cols ==
  /// inner a tile is one contiguous run of slices x n x inner elements.
  int64_t slices = 1;
  /// kTile: columns of a slice a tile holds (inner: whole slices); kRegs: columns of a slice a
  /// tile holds (run x pack), or 0 for tiles of whole slices (run / 256 steps of 256 / (inner /
  /// pack) slices)
  int64_t cols = 0;
  /// kTile, kRegs with cols > 0: tiles of a slice (ceil(inner / cols)); kSplit: column tiles of a
  /// slice; kRegs with cols 0: 0
  int64_t tiles_per_outer = 1;
  /// tiles of the call (kTile: ceil(outer / slices) x tiles_per_outer; kRegs: outer x
  /// tiles_per_outer, or ceil(outer / slices a tile))
  int64_t tiles = 0;
  int64_t tile_elems = 0;  ///< kTile: elements of one input's shared-memory tile (a pack's slack)
  int width = 1;           ///< kSplit: column packs of a tile (256 / width row lanes)
  int split = 1;           ///< kSplit: blocks a tile along n (> 1: the statistics kernel runs)
  int64_t rows_per_split = 0;  ///< kSplit: rows a split reads
  int blocks_per_sm = 0;       ///< resident blocks a SM the grid is sized for
  double bytes = 0;            ///< bytes the plan moves in DRAM at most (re-reads counted)
  LaunchShape shape;           ///< the writing kernel (kTile: the only one)
  LaunchShape stats_shape;     ///< kSplit with split > 1: the statistics kernel
};

/// The configuration plan p launches with elem_bytes-byte elements.
constexpr SoftmaxInnerConfig softmax_inner_config(const SoftmaxInnerPlan& p, int elem_bytes) {
  return {elem_bytes, p.path, p.pack, p.path == SoftmaxInnerPath::kRegs ? p.rows : 0};
}

namespace detail {
// Blocks of a split kernel any device's wave may hold (bounds the workspace without a device).
inline constexpr int64_t kSoftmaxInnerMaxWave = 2048;
// Most blocks a tile along n any plan takes for this shape (device-independent bound).
constexpr int64_t softmax_inner_split_bound(int64_t outer, int64_t n, int64_t inner,
                                            int elem_bytes) {
  if (outer <= 0 || n <= 0 || inner <= 0) return 1;
  const int64_t tiles =
      outer * ceil_div<int64_t>(inner, int64_t{kSoftmaxInnerBlock} * (16 / elem_bytes));
  int64_t split = ceil_div<int64_t>(kSoftmaxInnerMaxWave, tiles);
  split = std::min(split, n / kSoftmaxInnerMinSplitRows);
  split = std::min(split, softmax_inner_split_by_combine(n, elem_bytes, 3));
  split = std::min(split, kSoftmaxInnerMaxSplit);
  return split < 1 ? 1 : split;
}
}  // namespace detail

/// Bytes of workspace that let every (outer, n, inner) call of elem_bytes-byte elements split n
/// on any device, forward or backward: 8 bytes a column and split block; 0 when no split can
/// help. Calls run with less (or none): they split only as far as the workspace holds.
constexpr size_t softmax_inner_workspace_bytes(int64_t outer, int64_t n, int64_t inner,
                                               int elem_bytes) {
  const int64_t split = detail::softmax_inner_split_bound(outer, n, inner, elem_bytes);
  return split < 2 ? 0 : static_cast<size_t>(split * outer * inner) * 8;
}

namespace detail {
// Every row of every slice starts on a 16-byte pack in every operand.
inline bool softmax_inner_rows_on_grid(int64_t inner, int elem_bytes,
                                       const SoftmaxInnerLayout& at) {
  return common_alignment(at.common, Alignment(inner * elem_bytes)).fits(kMaxPackBytes);
}

// The kRegs plan (n <= kSoftmaxInnerRegsMaxRows): see plan_softmax_inner.
inline SoftmaxInnerPlan plan_softmax_inner_regs(int64_t outer, int64_t n, int64_t inner,
                                                int elem_bytes, bool backward,
                                                const SoftmaxInnerLayout& at, const DeviceInfo& d) {
  SoftmaxInnerPlan p;
  const int inputs = backward ? 2 : 1;
  const double elems = double(outer) * double(n) * double(inner);
  const bool rows_on_grid = softmax_inner_rows_on_grid(inner, elem_bytes, at);
  p.shape.block = dim3(kSoftmaxInnerBlock);
  p.stats_shape.block = dim3(kSoftmaxInnerBlock);
  p.path = SoftmaxInnerPath::kRegs;
  p.rows = static_cast<int>(pow2_ceil(static_cast<uint64_t>(n)));
  p.pack = rows_on_grid ? softmax_inner_regs_pack(elem_bytes, backward, p.rows) : 1;
  p.units = softmax_inner_regs_units(elem_bytes, p.pack, backward, p.rows);
  p.blocks_per_sm = std::max(1, blocks_per_sm(d, kSoftmaxInnerBlock, kSoftmaxInnerRegs, 0));
  const int64_t block = kSoftmaxInnerBlock;
  const int64_t cu = inner / p.pack;  // column units a slice
  const int64_t wave = int64_t{p.blocks_per_sm} * d.sm_count;
  // tiles of 256 x units units, halved (whole 256s) while they do not fill a wave
  p.run = block * p.units;
  // tiles of `run` units: of one slice's columns, or of run / 256 steps of 256 / cu slices
  const auto count = [&](int64_t run) {
    return cu >= block ? outer * ceil_div(cu, run) : ceil_div(outer, run / block * (block / cu));
  };
  while (p.run > block && count(p.run) < wave)
    p.run = round_up(p.run / 2, block);
  if (cu >= block) {
    // columns of one slice a tile (a slice of at least 256 units: no thread idle in a tile
    // but the slice's last)
    p.run = std::min(p.run, round_up(cu, block));
    p.cols = p.run * p.pack;
    p.tiles_per_outer = ceil_div(inner, p.cols);
    p.tiles = outer * p.tiles_per_outer;
  } else {
    // steps of whole slices
    p.cols = 0;
    p.tiles_per_outer = 0;
    p.tiles = count(p.run);
  }
  p.shape.grid = dim3(static_cast<unsigned>(grid_size_for(
      p.tiles * kSoftmaxInnerBlock, kSoftmaxInnerBlock, d, kDefaultWaves, p.blocks_per_sm)));
  p.bytes = elems * elem_bytes * (inputs + 1);
  return p;
}

// The kTile / kSplit plan: see plan_softmax_inner.
inline SoftmaxInnerPlan plan_softmax_inner_columns(int64_t outer, int64_t n, int64_t inner,
                                                   int elem_bytes, bool backward,
                                                   const SoftmaxInnerLayout& at,
                                                   size_t workspace_bytes, const DeviceInfo& d) {
  SoftmaxInnerPlan p;
  const int inputs = backward ? 2 : 1;
  const int full = kMaxPackBytes / elem_bytes;
  const double elems = double(outer) * double(n) * double(inner);
  // every row of every slice starts on a 16-byte pack in every operand
  const bool rows_on_grid = softmax_inner_rows_on_grid(inner, elem_bytes, at);
  const int64_t reserve = d.smem_reserved_per_block;
  const int64_t tile_static = softmax_inner_tile_static_smem();
  // the tile budget (all inputs): four blocks a SM; the largest tile: two blocks a SM
  const int64_t largest = std::min<int64_t>(d.smem_per_block_optin - tile_static,
                                            d.smem_per_sm / 2 - reserve - tile_static);
  const int64_t budget = std::min<int64_t>(
      kSoftmaxInnerTileBytes, d.smem_per_sm / kSoftmaxInnerTileBlocksPerSm - reserve - tile_static);
  const int64_t row_bytes = int64_t{inputs} * elem_bytes;  // one element of each input
  const int64_t slice_bytes = n * inner * row_bytes;
  // the narrowest tile: a 32-byte sector of each row (whole packs on the grid)
  const int64_t sector = std::max<int64_t>(32 / elem_bytes, 1);
  const int64_t min_cols = std::min<int64_t>(inner, sector);
  p.shape.block = dim3(kSoftmaxInnerBlock);
  p.stats_shape.block = dim3(kSoftmaxInnerBlock);
  if (slice_bytes <= budget || (n * min_cols + full) * row_bytes <= largest) {
    p.path = SoftmaxInnerPath::kTile;
    int64_t cols = inner;
    int64_t slices = 1;
    if (slice_bytes <= budget) {
      // whole slices: as many as the budget holds, while the tiles still give every SM two
      slices = std::max<int64_t>(1, budget / slice_bytes);
      const int64_t fill = std::max<int64_t>(1, outer / (2 * int64_t{d.sm_count}));
      slices = std::min({slices, fill, outer});
    } else {
      // columns of one slice: as many as the budget holds (whole sectors on the grid), at least
      // a sector, halved (rounded up to whole sectors) down to a sector while the tiles do not
      // give every SM two; then the slice's tiles evened out (the fewest tiles of at most that
      // many columns). (Halving only while the half was whole sectors left 1 x 27 x 44320 f32
      // at 296 columns = 37 sectors: 150 tiles on 132 SMs, 0.51 of SOL on the H200.)
      const int64_t unit = rows_on_grid ? sector : 1;
      cols = std::max<int64_t>(budget / row_bytes / n / unit * unit, min_cols);
      cols = std::min(cols, inner);
      while (outer * ceil_div<int64_t>(inner, cols) < 2 * int64_t{d.sm_count}) {
        const int64_t half = std::max(min_cols, round_up<int64_t>(cols / 2, unit));
        if (half >= cols) break;
        cols = half;
      }
      cols = std::min(inner, round_up<int64_t>(ceil_div(inner, ceil_div(inner, cols)), unit));
    }
    p.slices = slices;
    p.cols = cols;
    // a tile of whole slices is one run (packs where every operand sits alike); a tile of some
    // columns is rows of cols elements (packs where every row is on the grid)
    const bool flat = cols == inner;
    p.pack = (flat ? at.matched : rows_on_grid) ? full : 1;
    p.tiles_per_outer = ceil_div<int64_t>(inner, cols);
    p.tiles = ceil_div<int64_t>(outer, slices) * p.tiles_per_outer;
    // one input's tile, with a pack of slack for a run that starts inside a pack
    p.tile_elems = round_up<int64_t>(slices * n * cols + full, full);
    const int64_t smem = p.tile_elems * elem_bytes * inputs;
    p.blocks_per_sm =
        std::max(1, blocks_per_sm(d, kSoftmaxInnerBlock, kSoftmaxInnerRegs, smem + tile_static));
    p.shape.smem = static_cast<size_t>(smem);
    p.shape.grid = dim3(static_cast<unsigned>(grid_size_for(
        p.tiles * kSoftmaxInnerBlock, kSoftmaxInnerBlock, d, kDefaultWaves, p.blocks_per_sm)));
    p.bytes = elems * elem_bytes * (inputs + 1);
    return p;
  }
  // kSplit: streamed columns
  p.path = SoftmaxInnerPath::kSplit;
  p.pack = rows_on_grid ? kSoftmaxInnerSplitPack : 1;
  const int64_t cp = inner / p.pack;
  p.blocks_per_sm = std::max(1, blocks_per_sm(d, kSoftmaxInnerBlock, kSoftmaxInnerStreamRegs,
                                              softmax_inner_stream_static_smem(p.pack)));
  const int64_t wave = int64_t{p.blocks_per_sm} * d.sm_count;
  const int line = std::max(1, 128 / (p.pack * elem_bytes));
  p.width = column_tile_width(cp, n, outer, kSoftmaxInnerBlock, kSoftmaxInnerMaxWidth,
                              kSoftmaxInnerMinLaneRows, line, wave);
  p.tiles_per_outer = ceil_div<int64_t>(cp, p.width);
  p.tiles = outer * p.tiles_per_outer;
  const int64_t columns = outer * inner;
  const int64_t room =
      static_cast<int64_t>(std::min<size_t>(workspace_bytes / 8 / static_cast<size_t>(columns),
                                            static_cast<size_t>(kSoftmaxInnerMaxSplit)));
  const int64_t most = std::min(room, softmax_inner_split_by_combine(n, elem_bytes, inputs + 1));
  const ColumnSplit cs = column_split(n, p.tiles, wave, kSoftmaxInnerMinSplitRows, most);
  p.split = cs.split;
  p.rows_per_split = cs.rows_per_split;
  if (p.split > 1) {
    p.shape.grid = dim3(static_cast<unsigned>(p.tiles), static_cast<unsigned>(p.split));
    p.stats_shape.grid = p.shape.grid;
    // scheduled while the statistics kernel's last blocks run; waits for it before reading
    p.shape.overlap_previous = d.cc_major >= 9 && d.code_arch >= 90;
  } else {
    p.shape.grid = dim3(static_cast<unsigned>(grid_size_for(
        p.tiles * kSoftmaxInnerBlock, kSoftmaxInnerBlock, d, kDefaultWaves, p.blocks_per_sm)));
  }
  p.bytes = elems * elem_bytes * (2 * inputs + 1);
  return p;
}
}  // namespace detail

/// Pure: the plan of a call over (outer, n, inner) (outer, n >= 1, inner >= 2) of
/// elem_bytes-byte elements (4 or 2), forward (x in, y out) or backward (y and dy in, dx out),
/// whose operands sit as `at` says, with workspace_bytes of workspace, on device d: kRegs for
/// columns of at most kSoftmaxInnerRegsMaxRows rows, else kTile or kSplit.
inline SoftmaxInnerPlan plan_softmax_inner(int64_t outer, int64_t n, int64_t inner, int elem_bytes,
                                           bool backward, const SoftmaxInnerLayout& at,
                                           size_t workspace_bytes, const DeviceInfo& d) {
  if (n <= (backward ? detail::kSoftmaxInnerRegsMaxRowsBackward : detail::kSoftmaxInnerRegsMaxRows))
    return detail::plan_softmax_inner_regs(outer, n, inner, elem_bytes, backward, at, d);
  return detail::plan_softmax_inner_columns(outer, n, inner, elem_bytes, backward, at,
                                            workspace_bytes, d);
}

}  // namespace kernelkit
