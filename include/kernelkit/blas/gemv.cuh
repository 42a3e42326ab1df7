// SPDX-License-Identifier: Apache-2.0
/// @file
/// gemv: y = alpha * op(A) * x + beta * y for a row-major f32 matrix A (m x n, leading
/// dimension lda), op = BlasOp::N or BlasOp::T.
///
/// The four layers: GemvPlan / plan_gemv (every decision, pure host code), launch_gemv (the
/// plan's entry of kGemvConfigs becomes template arguments through core dispatch_table and runs
/// through core launch()),
/// gemv_args_ok (the argument checks, shared with the gemv ladder), and the public gemv
/// overloads (checks, plan, launch). The kernels are in detail/gemv_kernels.cuh.
///
/// How each shape runs (plan_gemv; "slots": the 256-thread blocks the device holds at once):
///   - alpha == 0 or an empty inner dimension: y = beta * y (kScale).
///   - N with n == 1, T with m == 1: a scaled copy of A's column / row (kCopy).
///   - N with m == 1, T with n == 1 and lda == 1: a dot product, split over the device
///     (kSplitRows with one row).
///   - N with rows of <= 64 floats (<= 32 when 16-byte aligned), T with <= 64 columns (lda
///     <= 64, at least half of it used): whole rows staged in shared memory as one
///     16-byte-loaded span (kShortRows, kShortColumns; the latter writes a partial per block
///     and needs the workspace; its x is loaded beside the rows).
///   - N, few long rows (fewer than the device's slots): several blocks per row
///     (kSplitRows, see Splits below); 2..4 aligned rows share each pack of x in one block
///     (a group, split through the workspace); aligned rows enough for a block per pair of
///     rows to fill the device: kRowPairs (rows of <= 8192 floats: 4 packs of each row a trip).
///     Many rows: aligned rows of >= 4096 floats a block per pair of rows (kRowPairs), else a
///     group of 4..32 lanes per row (kRows).
///   - T: blocks own column tiles (kColumns): m <= 64: a thread owns 4 columns over its
///     split's rows; n in about [SMs/2, SMs] x 32..128 columns: one 1024-thread block per SM,
///     8 loads in flight, no split; long matrices (m >= 2n): 1024-column tiles split over the
///     rows through the workspace where 3/4 used; else 64-column tiles of 256 threads. Rows
///     that do not all start equally far past a 16-byte boundary (lda % 4 != 0) are read
///     with scalar loads, a warp across 128 consecutive bytes of a row (the strided tiles).
///   - Splits (blocks sharing a row, or a column tile's rows): as many as fill the device's
///     resident blocks once, each at least a trip of its loop; then the cheapest of none, a
///     cluster (up to d.max_cluster() blocks) and the workspace with a combine kernel, each
///     priced in trips of a thread's loop: a cluster 2 more (and an eighth more past 8
///     blocks), the workspace 3 more (gemv_split; measured on the H100).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <utility>

#include "kernelkit/blas/blas.cuh"
#include "kernelkit/blas/detail/gemv_kernels.cuh"
#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/math.cuh"
#include "kernelkit/core/pack.cuh"

namespace kernelkit {

/// What kind of work one gemv call launches (see the file comment).
enum class GemvPath {
  kScale,         ///< y = beta * y (alpha == 0 or an empty inner dimension): A, x unread
  kCopy,          ///< y = alpha * x[0] * (A's column or row) + beta * y
  kRows,          ///< N: `width` lanes per row, many rows
  kSplitRows,     ///< N: `splits` blocks per row, few long rows (one row: a dot product)
  kShortRows,     ///< N: rows of <= 64 floats staged in shared memory, a thread per row
  kColumns,       ///< T: blocks own column tiles over their share of the rows
  kShortColumns,  ///< T: <= 64 columns staged in shared memory, a partial row per block
  kRowPairs,      ///< N: a block per pair of long aligned rows (many of them)
};

/// BlasOp::T tile kernels: gemv_t_kernel<pack, tx, ty, unroll, strided> (GemvTileShape below).
enum class GemvTile {
  kTile,        ///< <4, 16, 16, 4>: 64 columns, 256 threads, rows split across blocks
  kFat,         ///< <4, 256, 1, 4>: 1024 columns, a thread owns its 4 over its split's rows
  kWide32,      ///< <4, 8, 128, 8>: 32 columns, 1024 threads, one block per SM
  kWide64,      ///< <4, 16, 64, 8>: 64 columns
  kWide128,     ///< <4, 32, 32, 8>: 128 columns
  kStrided,     ///< <4, 32, 8, 4> strided: 128 columns, scalar loads (lda % 4 != 0)
  kStridedFat,  ///< <4, 256, 1, 4> strided: 1024 columns, scalar loads (m <= 64)
};

/// gemv_t_kernel's template arguments: columns per thread (pack), threads across columns (tx)
/// and across rows (ty), rows a thread loads before its FMAs (unroll), and whether a thread's
/// columns are tx, tx + TX, ... read with scalar loads (strided) or one 16-byte pack. A block
/// covers tx x pack columns with tx x ty threads.
struct GemvTileShape {
  /// The template arguments (see GemvTileShape).
  /// @{
  int pack, tx, ty, unroll;
  bool strided = false;
  /// @}
};

/// gemv_t_kernel's template arguments per GemvTile, in the enum's order.
inline constexpr GemvTileShape kGemvTileShapes[] = {
    {4, 16, 16, detail::kGemvColUnroll},       {4, 256, 1, detail::kGemvColUnroll},
    {4, 8, 128, detail::kGemvWideUnroll},      {4, 16, 64, detail::kGemvWideUnroll},
    {4, 32, 32, detail::kGemvWideUnroll},      {4, 32, 8, detail::kGemvColUnroll, true},
    {4, 256, 1, detail::kGemvColUnroll, true},
};

/// The template arguments of tile t (kGemvTileShapes[t]).
constexpr GemvTileShape gemv_tile_shape(GemvTile t) {
  return kGemvTileShapes[static_cast<int>(t)];
}

/// Where the operands sit on the 16-byte grid: the core Alignment of A, x and y.
struct GemvAlignment {
  /// The alignment of A, x and y.
  /// @{
  Alignment a, x, y;
  /// @}
};

/// The alignment of A, x and y.
inline GemvAlignment gemv_alignment(const float* A, const float* x, const float* y) {
  return {alignment_of(A), alignment_of(x), alignment_of(y)};
}

/// Caps that bound the workspace a plan asks for, whatever the device.
inline constexpr int64_t kGemvMaxPartialRows = 4096;           ///< partial rows of a split
inline constexpr int64_t kGemvMaxPartials = int64_t{1} << 20;  ///< floats of partials

/// What one call runs; every decision is here.
struct GemvPlan {
  GemvPath path = GemvPath::kScale;  ///< the kernel family
  /// How blocks sharing an output add their sums (BlockCombine): kNone, one block (or lane
  /// group) per output, it writes y; kCluster, the `splits` blocks are one thread-block
  /// cluster, rank 0 adds them (DSMEM); kSecondKernel, partial rows in the workspace, added by
  /// gemv_combine_kernel in row order.
  BlockCombine combine = BlockCombine::kNone;
  /// The matrix as the kernels see it: rows x cols, leading dimension ld (kCopy: ld is the
  /// source's stride). The call's own m x n / lda, except BlasOp::T with n == 1 and lda == 1,
  /// planned as BlasOp::N on one row of m floats (a dot product).
  /// @{
  int64_t rows = 0, cols = 0, ld = 1;
  /// @}
  int64_t count = 0;  ///< outputs (elements of y)
  /// kRows: lanes per row (4, 8, 16, 32). kShortColumns: lanes per row of a column group
  /// (the power of two >= cols).
  int width = 0;
  GemvTile tile = GemvTile::kTile;  ///< kColumns: the tile kernel
  /// kRows, kSplitRows: A's rows and x are 16-byte aligned (else each row has a scalar head
  /// and x is read four floats at a time); kCopy: the source (stride 1) and y are equally far
  /// from a 16-byte boundary (16-byte loads and stores).
  bool aligned = false;
  int a_offset = 0;  ///< kColumns: A's floats past a 16-byte boundary
  /// Blocks that share one row (kSplitRows) or one column tile (kColumns); the cluster size
  /// with BlockCombine::kCluster. kShortColumns: blocks (one partial row each).
  int splits = 1;
  /// kShortRows / kShortColumns: rows staged per tile (kShortColumns: a multiple of 256 / width)
  int tile_rows = 0;
  /// kSplitRows: rows a block owns (its share of their columns), each pack of x loaded once
  /// for all of them (gemv_n_group_kernel; 2..4 aligned rows, all of the matrix's, a split
  /// through the workspace or none); 1: a block per row (gemv_n_split_kernel).
  int group = 1;
  int unroll = 2;             ///< kRowPairs: packs of each row a thread loads a trip (2 or 4)
  int64_t partials = 0;       ///< floats of workspace written (kSecondKernel), partial rows x count
  int combine_cols = 1;       ///< kSecondKernel: outputs per combine block (1 or 32)
  LaunchShape shape;          ///< the main kernel
  LaunchShape combine_shape;  ///< kSecondKernel: gemv_combine_kernel
};

/// One kernel configuration of gemv: the template arguments launch_gemv gives its main kernel,
/// and the combine kernel's, if it launches one (an entry of kGemvConfigs). Fields a path's
/// kernel does not take are 0 / false.
struct GemvConfig {
  GemvPath path = GemvPath::kScale;  ///< the kernel family
  /// kCopy, kRows, kSplitRows with group 1: 16-byte loads (the kernels' Vec / Aligned)
  bool aligned = false;
  int width = 0;   ///< kRows: lanes per row; kShortColumns: lanes per row of a column group
  int group = 0;   ///< kSplitRows: rows a block owns (1: gemv_n_split_kernel)
  int unroll = 0;  ///< kRowPairs: packs of each row a thread loads a trip
  GemvTile tile = GemvTile::kTile;  ///< kColumns: the tile kernel
  /// Outputs per block of gemv_combine_kernel, launched after the main kernel to add the
  /// partial rows in the workspace (BlockCombine::kSecondKernel); 0: no combine kernel.
  int combine_cols = 0;
};

/// Same kernels.
constexpr bool operator==(const GemvConfig& a, const GemvConfig& b) {
  return a.path == b.path && a.aligned == b.aligned && a.width == b.width && a.group == b.group &&
         a.unroll == b.unroll && a.tile == b.tile && a.combine_cols == b.combine_cols;
}

namespace detail {
constexpr GemvConfig gemv_path_config(GemvPath path, bool aligned = false, int combine_cols = 0) {
  return {path, aligned, 0, 0, 0, GemvTile::kTile, combine_cols};
}
constexpr GemvConfig gemv_rows_config(int width, bool aligned, int combine_cols = 0) {
  return {GemvPath::kRows, aligned, width, 0, 0, GemvTile::kTile, combine_cols};
}
constexpr GemvConfig gemv_split_config(int group, bool aligned, int combine_cols) {
  return {GemvPath::kSplitRows, aligned, 0, group, 0, GemvTile::kTile, combine_cols};
}
constexpr GemvConfig gemv_pairs_config(int unroll, int combine_cols = 0) {
  return {GemvPath::kRowPairs, false, 0, 0, unroll, GemvTile::kTile, combine_cols};
}
constexpr GemvConfig gemv_short_columns_config(int width, int combine_cols) {
  return {GemvPath::kShortColumns, false, width, 0, 0, GemvTile::kTile, combine_cols};
}
constexpr GemvConfig gemv_columns_config(GemvTile tile, int combine_cols) {
  return {GemvPath::kColumns, false, 0, 0, 0, tile, combine_cols};
}
}  // namespace detail

/// Every kernel configuration gemv launches. plan_gemv's plans are entries of it (gemv_config),
/// launch_gemv instantiates exactly these, and the plan tests check that every plan is one and
/// every one is planned for some shape. The combine kernel adds 32 outputs a block only where
/// there can be 32 of them (not for groups of <= 4 rows, nor for short columns narrower than
/// 17); row groups always split (through the workspace); the one-wave tiles never split.
inline constexpr GemvConfig kGemvConfigs[] = {
    detail::gemv_path_config(GemvPath::kScale),
    detail::gemv_path_config(GemvPath::kCopy, false),
    detail::gemv_path_config(GemvPath::kCopy, true),
    // BlasOp::N
    detail::gemv_rows_config(4, false),
    detail::gemv_rows_config(4, true),
    detail::gemv_rows_config(8, false),
    detail::gemv_rows_config(8, true),
    detail::gemv_rows_config(16, false),
    detail::gemv_rows_config(16, true),
    detail::gemv_rows_config(32, false),
    detail::gemv_rows_config(32, true),
    detail::gemv_split_config(1, false, 0),
    detail::gemv_split_config(1, false, 1),
    detail::gemv_split_config(1, false, 32),
    detail::gemv_split_config(1, true, 0),
    detail::gemv_split_config(1, true, 1),
    detail::gemv_split_config(1, true, 32),
    detail::gemv_split_config(2, false, 1),
    detail::gemv_split_config(3, false, 1),
    detail::gemv_split_config(detail::kGemvMaxGroupRows, false, 1),
    detail::gemv_pairs_config(2),
    detail::gemv_pairs_config(4),
    detail::gemv_path_config(GemvPath::kShortRows),
    // BlasOp::T
    detail::gemv_short_columns_config(1, 1),
    detail::gemv_short_columns_config(2, 1),
    detail::gemv_short_columns_config(4, 1),
    detail::gemv_short_columns_config(8, 1),
    detail::gemv_short_columns_config(16, 1),
    detail::gemv_short_columns_config(32, 1),
    detail::gemv_short_columns_config(32, 32),
    detail::gemv_short_columns_config(detail::kGemvShortMaxCols, 1),
    detail::gemv_short_columns_config(detail::kGemvShortMaxCols, 32),
    detail::gemv_columns_config(GemvTile::kTile, 0),
    detail::gemv_columns_config(GemvTile::kTile, 1),
    detail::gemv_columns_config(GemvTile::kTile, 32),
    detail::gemv_columns_config(GemvTile::kFat, 0),
    detail::gemv_columns_config(GemvTile::kFat, 1),
    detail::gemv_columns_config(GemvTile::kFat, 32),
    detail::gemv_columns_config(GemvTile::kWide32, 0),
    detail::gemv_columns_config(GemvTile::kWide64, 0),
    detail::gemv_columns_config(GemvTile::kWide128, 0),
    detail::gemv_columns_config(GemvTile::kStrided, 0),
    detail::gemv_columns_config(GemvTile::kStrided, 1),
    detail::gemv_columns_config(GemvTile::kStrided, 32),
    detail::gemv_columns_config(GemvTile::kStridedFat, 0),
    detail::gemv_columns_config(GemvTile::kStridedFat, 1),
    detail::gemv_columns_config(GemvTile::kStridedFat, 32),
};

/// The configuration plan p launches: p's fields that become template arguments, the others
/// 0 / false. An entry of kGemvConfigs for every plan plan_gemv makes; launch_gemv answers
/// cudaErrorInvalidValue for any other.
inline GemvConfig gemv_config(const GemvPlan& p) {
  const int combine_cols = p.combine == BlockCombine::kSecondKernel ? p.combine_cols : 0;
  switch (p.path) {
    case GemvPath::kRows:
      return detail::gemv_rows_config(p.width, p.aligned, combine_cols);
    case GemvPath::kSplitRows:
      // the group kernel's rows are always aligned: it takes no Aligned argument
      return detail::gemv_split_config(p.group, p.group == 1 && p.aligned, combine_cols);
    case GemvPath::kRowPairs:
      return detail::gemv_pairs_config(p.unroll, combine_cols);
    case GemvPath::kShortColumns:
      return detail::gemv_short_columns_config(p.width, combine_cols);
    case GemvPath::kColumns:
      return detail::gemv_columns_config(p.tile, combine_cols);
    case GemvPath::kCopy:
      return detail::gemv_path_config(p.path, p.aligned, combine_cols);
    default:  // kScale, kShortRows
      return detail::gemv_path_config(p.path, false, combine_cols);
  }
}

namespace detail {

// Blocks of `threads` threads (`regs` registers each, 0: the full-occupancy kernels, as many
// as gemv_full_blocks leaves for the code's architecture; `smem` bytes) the whole device holds
// at once; at least one per SM.
inline int64_t gemv_slots(const DeviceInfo& d, int threads, int regs, int smem) {
  int blocks = blocks_per_sm(d, threads, regs, smem);
  if (regs == 0) blocks = gemv_full_blocks(blocks, d.code_arch);
  return int64_t{std::max(1, blocks)} * std::max(1, d.sm_count);
}

// Rows of <= 64 floats whose span (lda) is at most 64 floats and at least half used (or at
// most a 32-byte sector): staged in shared memory. One row (m == 1) is always a span of n.
inline bool gemv_short_span(int64_t m, int64_t n, int64_t lda) {
  if (n > kGemvShortMaxCols) return false;
  if (m == 1) return true;
  return lda <= kGemvShortMaxCols && (2 * n >= lda || lda <= 8);
}

// Widest aligned rows (floats) that BlasOp::N stages as short rows (see gemv_plan_n).
inline constexpr int64_t kGemvShortRowsMaxAlignedCols = 32;

inline void gemv_plan_combine(GemvPlan& p, int64_t parts, const DeviceInfo& d) {
  p.combine = BlockCombine::kSecondKernel;
  p.partials = parts * p.count;
  // 32 outputs a block (8 threads each) when there are few parts or enough outputs to fill
  // 64 blocks (T 151936 x 4096 with 132 parts: 128 blocks, not 4096 of one output each)
  p.combine_cols = p.count >= 32 && (parts < 64 || p.count >= 64 * 32) ? 32 : 1;
  p.combine_shape.block = dim3(kGemvBlock);
  p.combine_shape.grid = dim3(static_cast<unsigned>(
      std::min<int64_t>(ceil_div<int64_t>(p.count, p.combine_cols), INT32_MAX)));
  p.combine_shape.overlap_previous = d.cc_major >= 9 && d.code_arch >= 90;
}

// Splits of `units` independent pieces of work (rows, row groups, column tiles) so that their
// blocks fill the device's `slots` resident blocks once: none when the units already do.
// (A quarter of the device's threads was the old line: 363 x 463296, a block per row, 2.75
// blocks an SM, ran 0.80 of the speed of light; 8011 x 4878 T, 308 tiles, 0.53.)
inline int64_t gemv_wanted_splits(int64_t units, int64_t slots) {
  if (units >= slots) return 1;
  return std::max<int64_t>(1, slots / std::max<int64_t>(units, 1));
}

// How the blocks of one unit of work (a row, a group of rows, a column tile) share its output.
struct GemvSplit {
  int splits = 1;                              // blocks per unit (the cluster size with kCluster)
  BlockCombine combine = BlockCombine::kNone;  // kNone: splits == 1
};

// The split of `want` >= 2 blocks per unit through the workspace: min(want, the partial rows
// of count floats it holds, kGemvMaxPartialRows) when that is at least 2; else none.
inline GemvSplit gemv_workspace_split(int64_t count, int64_t want, size_t workspace_bytes) {
  const int64_t room = static_cast<int64_t>(
      std::min<size_t>(workspace_bytes / sizeof(float), static_cast<size_t>(kGemvMaxPartials)));
  const int64_t fits = std::min(room / std::max<int64_t>(count, 1), kGemvMaxPartialRows);
  const int64_t splits = std::min(want, fits);
  if (splits < 2) return {};
  return {static_cast<int>(splits), BlockCombine::kSecondKernel};
}

// The split of `want` blocks per unit with `count` outputs; trips(s): the trips of its loop a
// thread of the unit makes with s blocks per unit. Each choice is priced in trips: none,
// trips(1); a cluster of the power of two <= min(want, d.max_cluster()) blocks (16 where the
// architecture has non-portable clusters), trips + 2 (the cluster's barrier and the rank-0
// sums through DSMEM), and past the portable 8 blocks an eighth more of its trips; the
// workspace's split, trips + 3 (the combine kernel's launch costs about a memory round trip
// more: reduce f32, H100: a second, PDL kernel +1.0-1.6 us; 2..8 tiles as a cluster 6.46 ->
// 5.34 us at 65536). The cheapest wins; ties go to none, then to the cluster. (Measured on
// the H100, seed 2, against splits priced at their trips alone: clusters of 16 lost to the
// workspace's 16 at equal trips, 64 x 524288 52.5 -> 59.7 us (16 trips), 33 x 1480995 73.5 ->
// 92.3; clusters of 2 lost to no split at 2 trips against 3 or 4, 286 x 4352 6.85 -> 7.62,
// 15 x 68672 T 6.18 -> 7.94.)
template <typename Trips>
GemvSplit gemv_split(int64_t count, int64_t want, Trips trips, size_t workspace_bytes,
                     const DeviceInfo& d) {
  if (want < 2) return {};
  constexpr int kPortableCluster = 8;
  GemvSplit best;
  int64_t best_cost = trips(1);
  const int64_t cluster = pow2_floor(std::min<int64_t>(want, d.max_cluster()));
  if (cluster >= 2) {
    const int64_t t = trips(cluster);
    const int64_t cost = t + 2 + (cluster > kPortableCluster ? ceil_div<int64_t>(t, 8) : 0);
    if (cost < best_cost)
      best = {static_cast<int>(cluster), BlockCombine::kCluster}, best_cost = cost;
  }
  const GemvSplit ws = gemv_workspace_split(count, want, workspace_bytes);
  if (ws.splits >= 2 && trips(ws.splits) + 3 < best_cost) best = ws;
  return best;
}

// Plan p splits as s: splits, combine and, through the workspace, the partials and the
// combine kernel.
inline void gemv_plan_split(GemvPlan& p, GemvSplit s, const DeviceInfo& d) {
  p.splits = s.splits;
  p.combine = s.combine;
  if (s.combine == BlockCombine::kSecondKernel) gemv_plan_combine(p, s.splits, d);
}

// BlasOp::N on rows x cols (ld), `aligned` decided by the caller.
inline void gemv_plan_n(GemvPlan& p, const DeviceInfo& d, size_t workspace_bytes) {
  const int64_t m = p.rows, n = p.cols;
  const int64_t packs = n / kGemvPack;
  // the unaligned kernels run at half the SM's threads (64 registers)
  const int64_t slots = gemv_slots(d, kGemvBlock, p.aligned ? 0 : 64, 0);
  // Short rows compute with a thread per row: tile_rows = 4096 / lda of the 256 threads (64 at
  // lda = 64). Aligned rows of more than 32 floats go to lane groups instead (H100, 524288 x
  // 64: 47.9 us on 8-lane groups, 50.5 us as short rows).
  const bool lane_groups = m > 1 && p.aligned && n > kGemvShortRowsMaxAlignedCols;
  if (gemv_short_span(m, n, p.ld) && !lane_groups) {
    p.path = GemvPath::kShortRows;
    p.tile_rows = static_cast<int>(kGemvTileFloats / std::max<int64_t>(p.ld, 1));
    const int per_sm = std::max(1, blocks_per_sm(d, kGemvBlock, 0, kGemvShortRowsSmem));
    const int64_t tiles = ceil_div<int64_t>(m, p.tile_rows);
    p.shape.grid = dim3(grid_size_for(tiles * kGemvBlock, kGemvBlock, d, 1, per_sm));
    p.shape.block = dim3(kGemvBlock);
    return;
  }
  const bool few_rows = m * 2 * kWarpSize < d.device_threads() && packs >= 4 * kGemvBlock;
  // Rows of at most two trips of 4 packs a thread load 4 of each row a trip in the pair
  // kernel (4096 floats: the whole pair in one trip), longer ones 2.
  const int unroll = packs <= 2 * 4 * int64_t{kGemvBlock} ? 4 : 2;
  const int64_t pair_slots =
      int64_t{gemv_pairs_blocks(blocks_per_sm(d, kGemvBlock, 0, 0), unroll)} * d.sm_count;
  const auto plan_pairs = [&] {
    p.path = GemvPath::kRowPairs;
    p.group = 1;
    p.unroll = unroll;
    p.shape.grid =
        dim3(1, static_cast<unsigned>(std::min<int64_t>(ceil_div<int64_t>(m, 2), 65535)));
    p.shape.block = dim3(kGemvBlock);
  };
  const bool pairs_fit = p.aligned && m >= 2 && ceil_div<int64_t>(m, 2) >= pair_slots &&
                         packs >= 4 * kGemvBlock && packs <= INT32_MAX;
  if (m == 1 || few_rows) {
    // Packs of a row a block reads a trip of its loop: a block per row, 256 x kGemvRowUnroll;
    // a group of rows, 256 of each.
    const auto trip_packs = [](int group) {
      return int64_t{kGemvBlock} * (group == 1 ? kGemvRowUnroll : 1);
    };
    const auto trips_of = [&](int group) {
      return [&, group](int64_t splits) {
        return ceil_div<int64_t>(std::max<int64_t>(packs, 1), splits * trip_packs(group));
      };
    };
    // Blocks wanted per unit of `group` rows (1: a block per row): enough to fill the device,
    // each at least one trip of its loop (the old line, 4 x 256 packs a block, gave 3 x 216128
    // 52 blocks of 4 round trips each: 0.52 of the speed of light), at most
    // kGemvMaxPartialRows partial rows.
    const auto wanted_splits = [&](int group) {
      const int64_t units = ceil_div<int64_t>(m, group);
      const int64_t unit_slots =
          group == 1 ? slots
                     : int64_t{gemv_group_blocks(blocks_per_sm(d, kGemvBlock, 0, 0))} * d.sm_count;
      return std::min({gemv_wanted_splits(units, unit_slots),
                       std::max<int64_t>(1, packs / trip_packs(group)),
                       std::max<int64_t>(1, kGemvMaxPartialRows / m)});
    };
    const int64_t row_want = wanted_splits(1);
    // a block per pair of rows: when pairs of aligned rows fill the pair kernel's blocks at
    // least once and a block per row wants no split (4096 x 4096: a block per row ran 26.3 us
    // against a 21 us copy, DRAM 78 %, 2 round trips a row; pairs, 2 packs a row a trip: 25.6).
    if (row_want == 1 && pairs_fit) {
      plan_pairs();
      return;
    }
    // 2..4 aligned rows share x's loads in one block (3 x 8388608 read x three times, from
    // L2: 50.6 us; one group of 3, 660 blocks, 5 an SM: 50.1), where the group's split goes
    // through the workspace or it wants none (the group kernel has no cluster form);
    // otherwise a block per row, split through a cluster, the workspace or not at all.
    // (Groups of 4 and 8 rows lost on the H100: 8x4194304 55.4 -> 57.9 us, 64x524288 50.3 ->
    // 52.4, 1024x32768 50.0 -> 50.7, at 512 blocks of 8.)
    int group = 1;
    GemvSplit split = gemv_split(p.count, row_want, trips_of(1), workspace_bytes, d);
    if (p.aligned && m >= 2 && m <= 4) {
      const int64_t group_want = wanted_splits(static_cast<int>(m));
      const GemvSplit group_split = gemv_workspace_split(p.count, group_want, workspace_bytes);
      if (group_want == 1 || group_split.combine == BlockCombine::kSecondKernel) {
        group = static_cast<int>(m);
        split = group_split;
      }
    }
    const int64_t units = ceil_div<int64_t>(m, group);
    p.path = GemvPath::kSplitRows;
    p.group = group;
    gemv_plan_split(p, split, d);
    p.shape.grid = dim3(static_cast<unsigned>(split.splits),
                        static_cast<unsigned>(std::min<int64_t>(units, 65535)));
    p.shape.block = dim3(kGemvBlock);
    if (split.combine == BlockCombine::kCluster) p.shape.cluster = dim3(split.splits, 1, 1);
    return;
  }
  // many aligned rows of >= 4096 floats: pairs too (4 or 8 loads of A in flight a thread; a
  // warp per row has 2: 14336 x 4096 and 8192 x 8192 ran 0.920 of the copy on warps, 8 us
  // over bytes / 3.14 TB/s, where the kernels with 4 loads a thread paid 3-4 us)
  if (pairs_fit) {
    plan_pairs();
    return;
  }
  p.path = GemvPath::kRows;
  // a group of about half the packs of a row, 4 .. 32 lanes
  p.width = packs >= 64 ? 32 : packs >= 32 ? 16 : packs >= 16 ? 8 : 4;
  p.shape.grid = dim3(grid_size_for(m * p.width, kGemvBlock, d));
  p.shape.block = dim3(kGemvBlock);
}

// BlasOp::T on rows x cols (ld), alignment al.
inline void gemv_plan_t(GemvPlan& p, const GemvAlignment& al, const DeviceInfo& d,
                        size_t workspace_bytes) {
  const int64_t m = p.rows, n = p.cols, lda = p.ld;
  const int64_t room = static_cast<int64_t>(
      std::min<size_t>(workspace_bytes / sizeof(float), static_cast<size_t>(kGemvMaxPartials)));
  if (gemv_short_span(m, n, lda)) {
    // one partial row per block: as many blocks as fill the device once and the workspace holds
    const int per_sm = std::max(1, blocks_per_sm(d, kGemvBlock, 0, kGemvShortColsSmem));
    // col_lanes threads per row of a column group; tile_rows a multiple of the groups (every
    // thread the same trips over a whole tile)
    const int col_lanes = static_cast<int>(std::min<int64_t>(pow2_ceil(n), 64));
    const int groups = kGemvBlock / col_lanes;
    const int tile_rows = static_cast<int>(
        std::min<int64_t>(kGemvTileFloats / std::max<int64_t>(lda, 1), kGemvShortMaxTileRows) /
        groups * groups);
    const int64_t tiles = ceil_div<int64_t>(m, tile_rows);
    const int64_t blocks = std::min(
        {tiles, int64_t{per_sm} * d.sm_count, kGemvMaxPartialRows, room / std::max<int64_t>(n, 1)});
    if (blocks >= 1) {
      p.path = GemvPath::kShortColumns;
      p.tile_rows = tile_rows;
      p.width = col_lanes;
      p.splits = static_cast<int>(blocks);
      p.shape.grid = dim3(static_cast<unsigned>(blocks));
      p.shape.block = dim3(kGemvBlock);
      gemv_plan_combine(p, blocks, d);
      return;
    }
  }
  p.path = GemvPath::kColumns;
  const int a_floats = al.a.elements(sizeof(float));  // A's floats past a 16-byte boundary
  p.a_offset = a_floats;
  // Every row as far past a 16-byte boundary as A (lda % 4 == 0): 16-byte packs. Otherwise
  // the strided tiles' scalar loads, a warp across 128 consecutive bytes of a row. (Packs by
  // row class, a partial row per class through the workspace, ran 444619 x 1061 at 0.71 of
  // the speed of light and 8011 x 4878 (lda 4883) at 0.53; without room for the classes,
  // 16-column scalar tiles ran 555 x 592049 at 0.69 and 3 x 6937363 at 0.50.)
  const bool packed = lda % kGemvPack == 0;
  constexpr int64_t kFatCols =
      int64_t{gemv_tile_shape(GemvTile::kFat).tx} * gemv_tile_shape(GemvTile::kFat).pack;
  const auto tiles_of = [&](GemvTile t) {
    const GemvTileShape s = gemv_tile_shape(t);
    return ceil_div<int64_t>(n + (s.strided ? 0 : a_floats), int64_t{s.tx} * s.pack);
  };
  const auto finish = [&](GemvTile t) {
    const GemvTileShape s = gemv_tile_shape(t);
    p.tile = t;
    p.shape.grid = dim3(static_cast<unsigned>(tiles_of(t)), static_cast<unsigned>(p.splits));
    p.shape.block = dim3(s.tx * s.ty);
    if (p.combine == BlockCombine::kCluster) p.shape.cluster = dim3(1, p.splits, 1);
  };
  // the tiles of t, their rows split `want` ways (a trip of the loop: ty x unroll rows)
  const auto split_rows = [&](GemvTile t, int64_t want) {
    const GemvTileShape s = gemv_tile_shape(t);
    const auto trips = [&](int64_t splits) {
      return ceil_div<int64_t>(m, splits * s.ty * s.unroll);
    };
    gemv_plan_split(p, gemv_split(p.count, want, trips, workspace_bytes, d), d);
    finish(t);
  };
  if (m <= 64) {
    // few rows: a thread owns its 4 columns over its split's rows; the rows split while the
    // tiles leave resident blocks idle, each block a whole trip (4 rows) at least (54 x 7677
    // ran 8 blocks of 14 trips: 0.49 of the speed of light)
    const GemvTile t = packed ? GemvTile::kFat : GemvTile::kStridedFat;
    const GemvTileShape s = gemv_tile_shape(t);
    const int64_t slots = gemv_slots(d, s.tx * s.ty, 64, gemv_t_smem_bytes(s.pack, s.tx, s.ty));
    split_rows(
        t, std::min(gemv_wanted_splits(tiles_of(t), slots), std::max<int64_t>(1, m / s.unroll)));
    return;
  }
  if (packed && m >= 2 * n && 4 * n >= 3 * tiles_of(GemvTile::kFat) * kFatCols) {
    // long matrices: a thread owns 4 columns over its split's rows (kFat: block (c, s) reads
    // rows s, s + S, ... of the 1024-column tile c), S splits filling the device, partials
    // combined. The 1024-thread one-wave tiles below ran the n = 4096 LLM shapes at
    // 0.922-0.967 of the copy (151936 x 4096: 853 us, 0.968x cuBLAS; every block reads 128
    // bytes of each of 1024 rows a trip), where kFat ran 3 x 8388608 at 1.04 (whole 4 KiB
    // row segments a block). Through the workspace only (as measured), and only where the
    // 1024-column tiles are 3/4 used at least (179861 x 192 ran 0.84 of the speed of light
    // with 48 of every block's 256 threads holding a column).
    const GemvTileShape s = gemv_tile_shape(GemvTile::kFat);
    const int64_t fat_slots = gemv_slots(d, kGemvBlock, 64, gemv_t_smem_bytes(s.pack, s.tx, s.ty));
    const int64_t want = fat_slots / tiles_of(GemvTile::kFat);
    // (>= 128 rows a block: 14336 x 4096, 108 rows a block, ran 84.1 us against 82.5 on the
    // wide tiles; 32000 x 4096 177.1 against 180.3, 151936 x 4096 810.9 against 853.2)
    if (want >= 2 && m / want >= 128) {
      const GemvSplit split = gemv_workspace_split(p.count, want, workspace_bytes);
      if (split.combine == BlockCombine::kSecondKernel) {
        gemv_plan_split(p, split, d);
        finish(GemvTile::kFat);
        return;
      }
    }
  }
  if (packed) {
    // one 1024-thread block per SM owning 32, 64 or 128 columns over every row: no split
    const int64_t per_sm =
        std::max(1, blocks_per_sm(d, kGemvWideBlock, 64, detail::gemv_t_smem_bytes(4, 8, 128)));
    for (GemvTile t : {GemvTile::kWide32, GemvTile::kWide64, GemvTile::kWide128}) {
      const GemvTileShape s = gemv_tile_shape(t);
      const int64_t blocks = tiles_of(t);
      if (blocks <= per_sm * d.sm_count && blocks * 2 >= d.sm_count &&
          m >= int64_t{s.ty} * s.unroll * 2) {
        finish(t);
        return;
      }
    }
  }
  // column tiles, their rows split to fill the device, each block two trips at least
  const GemvTile t = packed ? GemvTile::kTile : GemvTile::kStrided;
  const GemvTileShape s = gemv_tile_shape(t);
  const int64_t slots =
      gemv_slots(d, s.tx * s.ty, s.strided ? 64 : 0, detail::gemv_t_smem_bytes(s.pack, s.tx, s.ty));
  split_rows(t, std::min(gemv_wanted_splits(tiles_of(t), slots),
                         std::max<int64_t>(1, m / (int64_t{s.ty} * s.unroll * 2))));
}

}  // namespace detail

/// The plan of gemv(op, m, n, alpha, A, lda, x, beta, y[, workspace, workspace_bytes]) with
/// operands aligned as `align` and workspace_bytes of workspace, on device d. Pure. An empty
/// inner dimension (n == 0 for N, m == 0 for T; gemv plans alpha == 0 this way) plans y =
/// beta * y. Splits the work across blocks through the workspace only when it holds the
/// partials (at most gemv_workspace_bytes(op, m, n)); clusters only when d.clusters().
/// Preconditions: gemv_args_ok, and at least one output.
inline GemvPlan plan_gemv(BlasOp op, int64_t m, int64_t n, int64_t lda, GemvAlignment align,
                          size_t workspace_bytes, const DeviceInfo& d) {
  GemvPlan p;
  const bool n_op = op == BlasOp::N;
  p.rows = m, p.cols = n, p.ld = lda;
  p.count = n_op ? m : n;
  const int64_t inner = n_op ? n : m;
  if (inner == 0 || p.count == 0) {  // (no outputs: nothing to read either)
    p.path = GemvPath::kScale;
    p.shape.grid = dim3(grid_size_for(p.count, detail::kGemvBlock, d));
    p.shape.block = dim3(detail::kGemvBlock);
    return p;
  }
  if (inner == 1) {
    // y = alpha * x[0] * (A's column: stride lda | A's row: stride 1) + beta * y
    p.path = GemvPath::kCopy;
    p.ld = n_op ? lda : 1;
    p.aligned = p.ld == 1 && align.a == align.y;
    p.shape.grid = dim3(grid_size_for(ceil_div<int64_t>(p.count, 16), detail::kGemvBlock, d));
    p.shape.block = dim3(detail::kGemvBlock);
    return p;
  }
  if (!n_op && n == 1 && lda == 1) {
    // A's only column is contiguous: the dot product of one row of m floats with x
    p.rows = 1, p.cols = m, p.ld = m;
    p.count = 1;
    p.aligned = common_alignment(align.a, align.x).fits(16);
    detail::gemv_plan_n(p, d, workspace_bytes);
    return p;
  }
  if (n_op) {
    if (m == 1) p.ld = n;  // one row: its span is n
    // every row of A and x on the 16-byte grid (one row: no stride between rows)
    const Alignment stride = m == 1 ? Alignment() : Alignment(lda * int64_t{sizeof(float)});
    p.aligned = common_alignment(align.a, align.x, stride).fits(16);
    detail::gemv_plan_n(p, d, workspace_bytes);
  } else {
    detail::gemv_plan_t(p, align, d, workspace_bytes);
  }
  return p;
}

/// Workspace bytes with which gemv(op, m, n, ...) can split any work it wants to split on any
/// device (a device-independent upper bound from the shape; 0 when no plan ever splits).
inline size_t gemv_workspace_bytes(BlasOp op, int64_t m, int64_t n) {
  if (m <= 0 || n <= 0) return 0;
  if (op == BlasOp::N) {
    // splits only rows of more than 64 floats: one row, or rows of >= 4096 floats
    const bool may_split =
        m == 1 ? n > detail::kGemvShortMaxCols : n >= 4 * detail::kGemvBlock * detail::kGemvPack;
    return may_split ? static_cast<size_t>(kGemvMaxPartialRows) * sizeof(float) : 0;
  }
  if (m == 1) return 0;  // a scaled copy
  return static_cast<size_t>(std::min(kGemvMaxPartials, kGemvMaxPartialRows * n)) * sizeof(float);
}

/// The argument checks of gemv (and of the gemv ladder's steps): a known op; m, n >= 0; lda
/// >= max(1, n); the matrix's span ((m - 1) * lda + n floats) addressable in bytes; y non-null
/// when there are outputs; A and x non-null when read (alpha != 0, m, n > 0); every pointer
/// aligned to float; y overlapping neither A nor x (when read); the workspace, when
/// workspace_bytes > 0, non-null, aligned to float and overlapping none of A, x, y.
inline bool gemv_args_ok(BlasOp op, int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                         const float* x, const float* y, const void* workspace = nullptr,
                         size_t workspace_bytes = 0) {
  if (op != BlasOp::N && op != BlasOp::T) return false;
  if (m < 0 || n < 0 || lda < std::max<int64_t>(1, n)) return false;
  constexpr int64_t kMaxFloats = std::numeric_limits<int64_t>::max() / sizeof(float);
  if (n > kMaxFloats || (m > 1 && m - 1 > (kMaxFloats - n) / lda)) return false;
  const int64_t outputs = op == BlasOp::N ? m : n;
  const int64_t inputs = op == BlasOp::N ? n : m;
  if (outputs > 0 && y == nullptr) return false;
  const bool reads = alpha != 0.f && m > 0 && n > 0;
  if (reads && (A == nullptr || x == nullptr)) return false;
  if (!is_element_aligned(A) || !is_element_aligned(x) || !is_element_aligned(y)) return false;
  const int64_t y_bytes = outputs * static_cast<int64_t>(sizeof(float));
  const int64_t a_bytes = reads ? matrix_span_bytes(m, n, lda, sizeof(float)) : 0;
  const int64_t x_bytes = reads ? inputs * static_cast<int64_t>(sizeof(float)) : 0;
  if (ranges_overlap(y, y_bytes, A, a_bytes) || ranges_overlap(y, y_bytes, x, x_bytes))
    return false;
  if (workspace_bytes > 0) {
    if (workspace == nullptr) return false;
    if (reinterpret_cast<std::uintptr_t>(workspace) % sizeof(float) != 0) return false;
    const int64_t w_bytes = static_cast<int64_t>(
        std::min<size_t>(workspace_bytes, std::numeric_limits<int64_t>::max()));
    if (ranges_overlap(workspace, w_bytes, y, y_bytes) ||
        ranges_overlap(workspace, w_bytes, A, a_bytes) ||
        ranges_overlap(workspace, w_bytes, x, x_bytes))
      return false;
  }
  return true;
}

namespace detail {
// core launch() of a gemv kernel; a cluster past the portable 8 blocks (plans ask for one only
// where d.max_cluster() allows it: sm_90, sm_100) first allows it, once per kernel.
template <typename... Params, typename... Args>
cudaError_t gemv_launch(void (*kernel)(Params...), const LaunchShape& shape, cudaStream_t stream,
                        Args&&... args) {
  if (shape.cluster.x * shape.cluster.y * shape.cluster.z > 8) {
    KERNELKIT_RETURN_IF_ERROR(once_per_kernel(reinterpret_cast<const void*>(kernel), [&] {
      return cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    }));
  }
  return launch(kernel, shape, stream, std::forward<Args>(args)...);
}
}  // namespace detail

/// Runs plan p (from plan_gemv for these operands and workspace) on stream: the main kernel,
/// then, for a workspace split, gemv_combine_kernel. The one place a plan's run-time choices
/// become template arguments: those of its entry of kGemvConfigs (gemv_config; any other plan
/// answers cudaErrorInvalidValue).
template <int = 0>
cudaError_t launch_gemv(const GemvPlan& p, float alpha, const float* A, const float* x, float beta,
                        float* y, void* workspace, cudaStream_t stream) {
  using namespace detail;
  return dispatch_table<kGemvConfigs, 0, std::size(kGemvConfigs)>(gemv_config(p), [&](auto i) {
    constexpr GemvConfig c = kGemvConfigs[decltype(i)::value];
    // the partial rows the combine kernel adds (none without one)
    float* const partials = c.combine_cols > 0 ? static_cast<float*>(workspace) : nullptr;
    cudaError_t err = cudaSuccess;
    if constexpr (c.path == GemvPath::kScale) {
      err = launch(gemv_scale_kernel<>, p.shape, stream, p.count, beta, y);
    } else if constexpr (c.path == GemvPath::kCopy) {
      err =
          launch(gemv_copy_kernel<c.aligned>, p.shape, stream, p.count, alpha, A, p.ld, x, beta, y);
    } else if constexpr (c.path == GemvPath::kRows) {
      err = launch(gemv_n_rows_kernel<c.width, c.aligned>, p.shape, stream, p.rows, p.cols, alpha,
                   A, p.ld, x, beta, y);
    } else if constexpr (c.path == GemvPath::kSplitRows && c.group > 1) {
      err = launch(gemv_n_group_kernel<c.group>, p.shape, stream, p.rows, p.cols, alpha, A, p.ld, x,
                   beta, y, partials);
    } else if constexpr (c.path == GemvPath::kSplitRows) {
      err = gemv_launch(gemv_n_split_kernel<c.aligned>, p.shape, stream, p.rows, p.cols, alpha, A,
                        p.ld, x, beta, y, partials);
    } else if constexpr (c.path == GemvPath::kRowPairs) {
      err = launch(gemv_n_row_pairs_kernel<c.unroll>, p.shape, stream, p.rows, p.cols, alpha, A,
                   p.ld, x, beta, y);
    } else if constexpr (c.path == GemvPath::kShortRows) {
      err = launch(gemv_n_short_kernel<>, p.shape, stream, p.rows, p.cols, alpha, A, p.ld, x, beta,
                   y, p.tile_rows);
    } else if constexpr (c.path == GemvPath::kShortColumns) {
      err = launch(gemv_t_short_kernel<c.width>, p.shape, stream, p.rows, p.cols, A, p.ld, x,
                   partials, p.tile_rows);
    } else {
      constexpr GemvTileShape s = gemv_tile_shape(c.tile);
      err = gemv_launch(gemv_t_kernel<s.pack, s.tx, s.ty, s.unroll, s.strided>, p.shape, stream,
                        p.rows, p.cols, alpha, A, p.ld, x, beta, y, partials, p.a_offset);
    }
    if constexpr (c.combine_cols > 0) {
      if (err != cudaSuccess) return err;
      const int parts = static_cast<int>(p.partials / std::max<int64_t>(p.count, 1));
      return launch(gemv_combine_kernel<c.combine_cols>, p.combine_shape, stream, p.count, parts,
                    static_cast<const float*>(partials), alpha, beta, y);
    } else {
      return err;
    }
  });
}

/// y = alpha * op(A) * x + beta * y, f32.
///
/// A is m x n, row-major, row i at A + i * lda (lda >= max(1, n)). op == BlasOp::N: x has n
/// elements and y has m; op == BlasOp::T: x has m elements and y has n. Every pointer aligned
/// to float, any further alignment (16-byte loads wherever the rows allow). y must not
/// overlap A or x. beta == 0 never reads y (a NaN in y is overwritten); alpha == 0 (or an
/// empty inner dimension) never reads A or x (they may be null) and sets y = beta * y; with
/// beta == 1 too nothing is launched.
///
/// workspace: optional device memory of workspace_bytes bytes (aligned to float, overlapping
/// none of A, x, y) in which thin and fat shapes (few long rows, few columns, a dot product)
/// split their work across the device and add the partial sums in a fixed order;
/// gemv_workspace_bytes(op, m, n) is always enough. Whatever it held before is ignored; it is
/// in use until the call's work on `stream` is done. Without one (or with too little) those
/// shapes run with thread-block clusters where the device and build allow, else unsplit:
/// correct, slower.
///
/// Deterministic: the same call (same shape, alignment, workspace size and device) gives the
/// same bits, run after run. Errors: cudaErrorInvalidValue, before any launch and with nothing
/// written, when gemv_args_ok fails.
/// @param op BlasOp::N (y = alpha A x + beta y) or BlasOp::T (y = alpha A^T x + beta y)
/// @param m rows of A (>= 0)
/// @param n columns of A (>= 0)
/// @param alpha scale of op(A) x
/// @param A device pointer to A, row-major with leading dimension lda
/// @param lda floats from one row of A to the next (>= max(1, n))
/// @param x device pointer to x (n floats for N, m for T)
/// @param beta scale of y; 0: y is not read
/// @param y device pointer to y (m floats for N, n for T), read and written
/// @param workspace optional device scratch (see above), or null with workspace_bytes 0
/// @param workspace_bytes bytes of workspace; gemv_workspace_bytes(op, m, n) is enough
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when gemv_args_ok fails; otherwise the error of reading the
/// device's facts or of the launch.
template <int = 0>
[[nodiscard]] cudaError_t gemv(BlasOp op, int64_t m, int64_t n, float alpha, const float* A,
                               int64_t lda, const float* x, float beta, float* y, void* workspace,
                               size_t workspace_bytes, cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(gemv_args_ok(op, m, n, alpha, A, lda, x, y, workspace, workspace_bytes));
  const int64_t outputs = op == BlasOp::N ? m : n;
  if (outputs == 0) return cudaSuccess;
  const bool reads = alpha != 0.f && m > 0 && n > 0;
  if (!reads && beta == 1.f) return cudaSuccess;  // y = 1 * y
  // alpha == 0: planned as an empty inner dimension (A and x unread)
  const int64_t pm = !reads && op == BlasOp::T ? 0 : m;
  const int64_t pn = !reads && op == BlasOp::N ? 0 : n;
  const GemvAlignment align = gemv_alignment(A, x, y);
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_gemv(op, pm, pn, lda, align, workspace_bytes, dev);
      },
      [&](const GemvPlan& p) { return launch_gemv(p, alpha, A, x, beta, y, workspace, stream); });
}

/// The same without a workspace.
template <int = 0>
[[nodiscard]] cudaError_t gemv(BlasOp op, int64_t m, int64_t n, float alpha, const float* A,
                               int64_t lda, const float* x, float beta, float* y,
                               cudaStream_t stream = nullptr) {
  return gemv<>(op, m, n, alpha, A, lda, x, beta, y, nullptr, 0, stream);
}

}  // namespace kernelkit
