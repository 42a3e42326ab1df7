// SPDX-License-Identifier: Apache-2.0
/// @file
/// Row-wise reduction of a rows x cols row-major matrix: out[r] = op(init, in[r][0], ...,
/// in[r][cols - 1]).
///
/// Types: T in {float, double, __half, __nv_bfloat16, int32_t, int64_t}; Acc is the output
/// type, accumulated in compute_t<Acc> (half/bf16 outputs accumulate in float; a half or bf16
/// input with a float output accumulates in float). Max and Min propagate NaN.
///
/// How a call runs (plan_row_reduce; P = 16 / sizeof(T) elements per 16-byte pack):
///   - rows of up to 128 bytes (8 packs) that are not whole aligned packs, ld = cols (past 8
///     columns, where the tiles fill the device): the matrix as one flat array of packs,
///     tiles of 32 KB staged in shared memory, a thread per row (kShort; one column is a
///     strided copy);
///   - rows of whole packs, <= 32 of them, all starting aligned: Width lanes per row, one
///     pack each, 4 rows per group in flight (kFlat);
///   - other rows of <= 32 packs: 1..16 lanes per row, 2 rows per group (kGroup);
///   - <= 512 packs with a wave of rows or more: a warp per row (kGroup, Width 32);
///   - longer rows: a block per row (kBlock; rows of <= 1024 packs kBlockOnce: every
///     thread's packs of the row in one batch of loads, 5 blocks an SM) when the rows fill
///     a wave of blocks; fewer rows
///     are split over `split` blocks each, whose partials go to the workspace and are
///     combined in order after a grid sync of a cooperative launch, else by a second kernel
///     (kSplit; one row is the device-wide reduction); without a
///     workspace, a thread-block cluster per row combines through distributed shared memory
///     (kCluster, sm_90 builds on sm_90+), else a block per row.
/// Every path reads 16-byte packs (misaligned rows peel a scalar head and tail).
///
/// Row stride: the overloads taking `ld` read row r at in + r * ld (ld >= cols), a strided
/// slice of rows in place (x[:, j, :] of a 3-D tensor, logits[:, -1, :]); the others are
/// ld = cols. Every row starts on a pack boundary only when both the pointer and ld * sizeof(T)
/// do (common_alignment of the two), which is what kFlat asks; the short kernel reads the
/// matrix as one flat array and is planned only for ld == cols (short strided rows take the
/// group kernel, which peels each row's own head and tail). Deterministic:
/// the order of the operations depends only on the pointer alignment, the shape, the device
/// and the workspace size.
///
/// Preconditions: in, out (and the workspace) device pointers aligned to their element (the
/// workspace to 16 bytes); out overlaps neither in nor the workspace, nor the workspace in.
/// rows, cols >= 0, ld >= cols, rows * cols and rows * ld representable in int64_t; null
/// pointers only with nothing to read or write. rows == 0 does nothing; cols == 0 writes init to
/// every row. Asynchronous on `stream`, no allocation, graph-capturable; the workspace may hold
/// anything before a call. Returns cudaErrorInvalidValue (before any launch, nothing written) on
/// bad arguments, otherwise the launch status.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/reduce/detail/reduce_kernels.cuh"
#include "kernelkit/reduce/detail/row_reduce_kernels.cuh"
#include "kernelkit/reduce/reduce.cuh"

namespace kernelkit {

/// The kernel family of a row reduction, by row width and count.
enum class RowReducePath {
  kShort,      ///< rows of <= 128 bytes: shared-memory tiles of the flat matrix, a thread per row
  kFlat,       ///< <= 32 whole packs, every row aligned: Width lanes per row, a pack each
  kGroup,      ///< <= 512 packs: Width lanes per row (1..16, 2 rows at a time; 32: a warp)
  kBlock,      ///< a block per row (the split kernel, split 1)
  kBlockOnce,  ///< a block per row of <= 1024 packs, loaded in one batch, 5 blocks an SM
  kCluster,    ///< a cluster of `split` blocks per row, combined through DSMEM (sm_90)
  kSplit,      ///< `split` blocks per row, partials in the workspace, combined after a grid sync
               ///< (shape.cooperative) or by a combine kernel
};

/// What one call does; every decision is here.
struct RowReducePlan {
  RowReducePath path = RowReducePath::kGroup;  ///< the kernel family
  int pack = 1;                                ///< elements of T per 16-byte load (16 / sizeof(T))
  int width = 1;  ///< threads that share a row: kFlat / kGroup 1..32 lanes; kBlock, kCluster
                  ///< and kSplit kReduceBlock (per block of the row), kBlockOnce
                  ///< kRowBlock; kShort 1
  int rows_per_group = 1;    ///< rows a group reduces per tile: kShort ~8 P / cols (a thread),
                             ///< kFlat kRowFlatSteps, narrow kGroup kRowGroupRows, else 1
  int packs_per_thread = 1;  ///< 16-byte loads a thread issues before it reduces any
  int split = 1;             ///< blocks per row: kCluster the cluster size, kSplit > 1, else 1
  LaunchShape shape;         ///< the reduction kernel (shape.cluster for kCluster)
  /// kSplit without shape.cooperative: the combine kernel, a block a row
  LaunchShape combine_shape;
};

/// One kernel configuration of row_reduce: the template arguments launch_row_reduce gives a
/// kernel besides the types and the operator (an entry of kRowReduceConfigs). Fields a path
/// does not take are 0 / kNone.
struct RowReduceConfig {
  int pack = 0;  ///< elements of T per 16-byte load: 8 (2-byte T), 4 (4-byte), 2 (8-byte)
  RowReducePath path = RowReducePath::kGroup;  ///< the kernel family
  int width = 0;                               ///< kFlat, kGroup: lanes per row (1..32)
  /// how the blocks of a row combine (BlockCombine): kCluster for kCluster; for kSplit kGrid
  /// (one cooperative launch) or kSecondKernel (the combine kernel); kNone for the other paths
  BlockCombine combine = BlockCombine::kNone;
};

/// Same kernels.
constexpr bool operator==(const RowReduceConfig& a, const RowReduceConfig& b) {
  return a.pack == b.pack && a.path == b.path && a.width == b.width && a.combine == b.combine;
}

namespace detail {
constexpr RowReduceConfig row_reduce_config_of(int pack, RowReducePath path, int width = 0,
                                               BlockCombine combine = BlockCombine::kNone) {
  return {pack, path, width, combine};
}
}  // namespace detail

/// Every kernel configuration row_reduce launches, each pack's entries together (2-, 4-, then
/// 8-byte elements); per pack: the short kernel; flat and group kernels of 1, 2, 4, 8, 16 and
/// 32 lanes a row; a block per row (the split kernel writing out, and the one-batch kernel); a
/// cluster per row; split rows combined in a cooperative grid or by the combine kernel. No
/// group of 2 lanes for 8-byte elements: its rows (3 or 4 packs, 5..8 columns) are the short
/// kernel's, or the flat kernel's when they are whole aligned packs. plan_row_reduce returns
/// one of them (row_reduce_config), launch_row_reduce instantiates exactly these, and the plan
/// tests check that every plan is one and every one is planned.
inline constexpr RowReduceConfig kRowReduceConfigs[] = {
    // 2-byte elements
    detail::row_reduce_config_of(8, RowReducePath::kShort),
    detail::row_reduce_config_of(8, RowReducePath::kFlat, 1),
    detail::row_reduce_config_of(8, RowReducePath::kFlat, 2),
    detail::row_reduce_config_of(8, RowReducePath::kFlat, 4),
    detail::row_reduce_config_of(8, RowReducePath::kFlat, 8),
    detail::row_reduce_config_of(8, RowReducePath::kFlat, 16),
    detail::row_reduce_config_of(8, RowReducePath::kFlat, 32),
    detail::row_reduce_config_of(8, RowReducePath::kGroup, 1),
    detail::row_reduce_config_of(8, RowReducePath::kGroup, 2),
    detail::row_reduce_config_of(8, RowReducePath::kGroup, 4),
    detail::row_reduce_config_of(8, RowReducePath::kGroup, 8),
    detail::row_reduce_config_of(8, RowReducePath::kGroup, 16),
    detail::row_reduce_config_of(8, RowReducePath::kGroup, 32),
    detail::row_reduce_config_of(8, RowReducePath::kBlock),
    detail::row_reduce_config_of(8, RowReducePath::kBlockOnce),
    detail::row_reduce_config_of(8, RowReducePath::kCluster, 0, BlockCombine::kCluster),
    detail::row_reduce_config_of(8, RowReducePath::kSplit, 0, BlockCombine::kGrid),
    detail::row_reduce_config_of(8, RowReducePath::kSplit, 0, BlockCombine::kSecondKernel),
    // 4-byte elements
    detail::row_reduce_config_of(4, RowReducePath::kShort),
    detail::row_reduce_config_of(4, RowReducePath::kFlat, 1),
    detail::row_reduce_config_of(4, RowReducePath::kFlat, 2),
    detail::row_reduce_config_of(4, RowReducePath::kFlat, 4),
    detail::row_reduce_config_of(4, RowReducePath::kFlat, 8),
    detail::row_reduce_config_of(4, RowReducePath::kFlat, 16),
    detail::row_reduce_config_of(4, RowReducePath::kFlat, 32),
    detail::row_reduce_config_of(4, RowReducePath::kGroup, 1),
    detail::row_reduce_config_of(4, RowReducePath::kGroup, 2),
    detail::row_reduce_config_of(4, RowReducePath::kGroup, 4),
    detail::row_reduce_config_of(4, RowReducePath::kGroup, 8),
    detail::row_reduce_config_of(4, RowReducePath::kGroup, 16),
    detail::row_reduce_config_of(4, RowReducePath::kGroup, 32),
    detail::row_reduce_config_of(4, RowReducePath::kBlock),
    detail::row_reduce_config_of(4, RowReducePath::kBlockOnce),
    detail::row_reduce_config_of(4, RowReducePath::kCluster, 0, BlockCombine::kCluster),
    detail::row_reduce_config_of(4, RowReducePath::kSplit, 0, BlockCombine::kGrid),
    detail::row_reduce_config_of(4, RowReducePath::kSplit, 0, BlockCombine::kSecondKernel),
    // 8-byte elements
    detail::row_reduce_config_of(2, RowReducePath::kShort),
    detail::row_reduce_config_of(2, RowReducePath::kFlat, 1),
    detail::row_reduce_config_of(2, RowReducePath::kFlat, 2),
    detail::row_reduce_config_of(2, RowReducePath::kFlat, 4),
    detail::row_reduce_config_of(2, RowReducePath::kFlat, 8),
    detail::row_reduce_config_of(2, RowReducePath::kFlat, 16),
    detail::row_reduce_config_of(2, RowReducePath::kFlat, 32),
    detail::row_reduce_config_of(2, RowReducePath::kGroup, 1),
    detail::row_reduce_config_of(2, RowReducePath::kGroup, 4),
    detail::row_reduce_config_of(2, RowReducePath::kGroup, 8),
    detail::row_reduce_config_of(2, RowReducePath::kGroup, 16),
    detail::row_reduce_config_of(2, RowReducePath::kGroup, 32),
    detail::row_reduce_config_of(2, RowReducePath::kBlock),
    detail::row_reduce_config_of(2, RowReducePath::kBlockOnce),
    detail::row_reduce_config_of(2, RowReducePath::kCluster, 0, BlockCombine::kCluster),
    detail::row_reduce_config_of(2, RowReducePath::kSplit, 0, BlockCombine::kGrid),
    detail::row_reduce_config_of(2, RowReducePath::kSplit, 0, BlockCombine::kSecondKernel),
};

/// The entries of kRowReduceConfigs with this pack: [begin, end).
constexpr ConfigRange row_reduce_configs_of(int pack) {
  return config_range(kRowReduceConfigs,
                      [pack](const RowReduceConfig& c) { return c.pack == pack; });
}
static_assert(row_reduce_configs_of(8).end - row_reduce_configs_of(8).begin == 18 &&
                  row_reduce_configs_of(4).end - row_reduce_configs_of(4).begin == 18 &&
                  row_reduce_configs_of(2).end - row_reduce_configs_of(2).begin == 17,
              "each pack's entries together");

/// The configuration plan p launches: the lanes per row for kFlat and kGroup, how a row's
/// blocks combine for kCluster and kSplit (shape.cooperative: kGrid). An entry of
/// kRowReduceConfigs for every plan plan_row_reduce makes for 2-, 4- and 8-byte elements;
/// launch_row_reduce answers cudaErrorInvalidValue for any other.
inline RowReduceConfig row_reduce_config(const RowReducePlan& p) {
  switch (p.path) {
    case RowReducePath::kFlat:
    case RowReducePath::kGroup:
      return detail::row_reduce_config_of(p.pack, p.path, p.width);
    case RowReducePath::kCluster:
      return detail::row_reduce_config_of(p.pack, p.path, 0, BlockCombine::kCluster);
    case RowReducePath::kSplit:
      return detail::row_reduce_config_of(
          p.pack, p.path, 0,
          p.shape.cooperative ? BlockCombine::kGrid : BlockCombine::kSecondKernel);
    default:
      return detail::row_reduce_config_of(p.pack, p.path);
  }
}

}  // namespace kernelkit

namespace kernelkit::detail {
// Blocks per row a split may use on any device (kReduceMaxSplit blocks in all); 1: none.
constexpr int64_t row_split_bound(int64_t rows, int64_t cols, int in_bytes) {
  if (rows <= 0 || cols <= 0) return 1;
  const int pack = kMaxPackBytes / in_bytes;
  return reduce_split_for(rows, ceil_div<int64_t>(cols, pack), kReduceMaxSplit);
}
}  // namespace kernelkit::detail

namespace kernelkit {

/// Bytes of workspace that let every shape split its rows on any device (an upper bound from
/// the shape only): one compute_t<Acc> partial per block of a split row. 0 when no split can
/// help (many rows, short rows). row_reduce runs with less (or none): it splits only when the
/// workspace holds the split's partials.
template <typename T, typename Acc = compute_t<T>>
constexpr size_t row_reduce_workspace_bytes(int64_t rows, int64_t cols) {
  const int64_t split = detail::row_split_bound(rows, cols, sizeof(T));
  return split < 2 ? 0 : static_cast<size_t>(rows * split) * sizeof(compute_t<Acc>);
}

/// Pure: the plan for rows x cols elements of in_bytes bytes accumulated in acc_bytes-byte
/// values, row r at in + r * ld (ld >= cols), the input at `in` on the 16-byte grid, with
/// workspace_bytes of workspace.
inline RowReducePlan plan_row_reduce(int64_t rows, int64_t cols, int64_t ld, int in_bytes,
                                     int acc_bytes, Alignment in, size_t workspace_bytes,
                                     const DeviceInfo& d) {
  using detail::kRowBlock;
  RowReducePlan p;
  const int pack = std::max(1, kMaxPackBytes / std::max(in_bytes, 1));
  const bool in_aligned = in.fits(kMaxPackBytes);
  // every row starts on a 16-byte boundary and holds whole packs (cols and ld too)
  const bool rows_aligned =
      common_alignment(in, Alignment(cols * in_bytes), Alignment(ld * in_bytes))
          .fits(kMaxPackBytes);
  p.pack = pack;
  p.shape.block = dim3(kRowBlock);
  if (rows <= 0) return p;  // nothing to launch
  const int64_t packs = ceil_div<int64_t>(std::max<int64_t>(cols, 0), pack);
  const int64_t wave = detail::reduce_wave(d);  // resident blocks of the block kernels
  if (cols <= 0) {
    // writes init: the narrow group kernel with one lane per row reads nothing
    p.path = RowReducePath::kGroup;
    p.rows_per_group = detail::kRowGroupRows;
    p.shape.grid = dim3(grid_size_for(ceil_div<int64_t>(rows, p.rows_per_group), kRowBlock, d));
    return p;
  }
  // The short kernel: rows of up to 8 columns always (the group kernel reads them an element
  // at a time); longer rows of up to 128 bytes while its 32 KB tiles fill the device's resident
  // blocks of it once (a smaller matrix spreads over more blocks of the group kernel: f16
  // 85389x29, 152 tiles for 396 blocks, 7 % slower on the short kernel).
  const int64_t short_tiles =
      ceil_div<int64_t>(rows * cols + (in_aligned ? 0 : pack - 1),
                        int64_t{detail::kRowShortTilePacks} * pack);  // the count may be one
                                                                      // over: misaligned input
  if (cols * in_bytes <= detail::kRowShortMaxBytes && !rows_aligned && ld == cols &&
      (cols <= detail::kRowShortAlwaysCols ||
       short_tiles >= int64_t{d.sm_count} * detail::row_short_blocks(d, in_bytes, acc_bytes))) {
    p.path = RowReducePath::kShort;
    p.packs_per_thread = detail::kRowShortPacks;
    p.rows_per_group =
        static_cast<int>(ceil_div<int64_t>(int64_t{detail::kRowShortPacks} * pack, cols));
    // one block per tile of the flat matrix (the kernel strides over the exact count)
    p.shape.grid = dim3(grid_one_block_per_tile(short_tiles));
    return p;
  }
  if (rows_aligned && packs <= kWarpSize) {
    p.path = RowReducePath::kFlat;
    p.width = static_cast<int>(pow2_ceil(packs));
    p.rows_per_group = detail::kRowFlatSteps;
    p.packs_per_thread = detail::kRowFlatSteps;
    const int64_t tile_rows = int64_t{kRowBlock / p.width} * detail::kRowFlatSteps;
    p.shape.grid = dim3(grid_one_block_per_tile(ceil_div<int64_t>(rows, tile_rows)));
    return p;
  }
  if (packs <= int64_t{detail::kRowPrePacks} * (kWarpSize / 2)) {
    // 1..16 lanes, kRowPrePacks packs each, kRowGroupRows rows at a time
    p.path = RowReducePath::kGroup;
    p.width = static_cast<int>(pow2_ceil(ceil_div<int64_t>(packs, detail::kRowPrePacks)));
    // 8-byte elements have no 2-lane entry: contiguous rows of 3..4 packs are the short or
    // flat kernel's; strided ones (ld != cols) take 4 lanes, two of them idle
    if (pack == 2 && p.width == 2) p.width = 4;
    p.rows_per_group = detail::kRowGroupRows;
    p.packs_per_thread = detail::kRowPrePacks * detail::kRowGroupRows;
    const int64_t groups = ceil_div<int64_t>(rows, detail::kRowGroupRows);
    p.shape.grid = dim3(grid_size_for(groups * p.width, kRowBlock, d));
    return p;
  }
  if (packs <= int64_t{kWarpSize} * 16 && rows >= wave) {
    // a warp per row; fewer rows than a wave of blocks go to a block per row instead
    p.path = RowReducePath::kGroup;
    p.width = kWarpSize;
    p.packs_per_thread = detail::kRowWarpUnroll;
    p.shape.grid = dim3(grid_size_for(rows * kWarpSize, kRowBlock, d));
    return p;
  }
  // long rows, or few rows: the block kernels
  p.width = detail::kReduceBlock;
  p.packs_per_thread = detail::kReduceUnroll;
  p.shape.block = dim3(detail::kReduceBlock);
  const int64_t room =
      static_cast<int64_t>(std::min<size_t>(
          workspace_bytes / static_cast<size_t>(std::max(acc_bytes, 1)), kReduceMaxSplit)) /
      rows;
  const int64_t split = std::min(detail::reduce_split_for(rows, packs, wave), room);
  if (split >= 2) {
    p.path = RowReducePath::kSplit;
    p.split = static_cast<int>(split);
    p.shape.grid = dim3(static_cast<unsigned>(rows * split));
    if (d.cooperative_launch) {
      // one cooperative launch: the blocks sync the grid, then block r combines row r (no
      // second kernel; launch() re-plans without it where the grid cannot be resident)
      p.shape.cooperative = true;
    } else {
      p.combine_shape.grid = dim3(static_cast<unsigned>(rows));
      p.combine_shape.block = dim3(detail::kReduceBlock);
      p.combine_shape.overlap_previous = d.cc_major >= 9 && d.code_arch >= 90;
    }
    return p;
  }
  // Without a workspace: fewer rows than 2 blocks per SM are split over a cluster of up to
  // 8 blocks (keeping >= 4 packs a thread); small clusters over half the device schedule in
  // one wave.
  const int64_t target = 2 * int64_t{d.sm_count};
  if (d.clusters() && rows < target) {
    const int64_t by_fill = ceil_div<int64_t>(target, rows);
    const int64_t by_work = std::max<int64_t>(1, packs / (int64_t{detail::kReduceBlock} * 4));
    const int64_t cluster =
        std::min<int64_t>({by_fill, by_work, int64_t{detail::kReduceMaxCluster}});
    if (cluster >= 2) {
      p.path = RowReducePath::kCluster;
      p.split = static_cast<int>(cluster);
      p.shape.grid = dim3(static_cast<unsigned>(rows * cluster));
      p.shape.cluster = dim3(static_cast<unsigned>(cluster));
      return p;
    }
  }
  p.shape.grid = dim3(grid_one_block_per_tile(rows));
  if (packs <= detail::kRowBlockOncePacks) {
    // the row is one batch of <= 4 loads a thread: a leaner kernel, 5 blocks an SM instead
    // of the split kernel's 4 (8192x4096 f32 on the split kernel: 47.0 us; the ladder's v3,
    // 4 loads a thread at 38 registers, 6 blocks an SM: 45.8-46.1)
    p.path = RowReducePath::kBlockOnce;
    p.width = kRowBlock;
    p.packs_per_thread = detail::kRowBlockOnceUnroll;
    p.shape.block = dim3(kRowBlock);
    return p;
  }
  p.path = RowReducePath::kBlock;
  return p;
}

/// plan_row_reduce of contiguous rows (ld = cols).
inline RowReducePlan plan_row_reduce(int64_t rows, int64_t cols, int in_bytes, int acc_bytes,
                                     Alignment in, size_t workspace_bytes, const DeviceInfo& d) {
  return plan_row_reduce(rows, cols, cols, in_bytes, acc_bytes, in, workspace_bytes, d);
}

/// The argument checks of every entry point with a row stride ld (row r at in + r * ld).
template <typename T, typename Acc>
bool row_reduce_args_ok(const T* in, int64_t rows, int64_t cols, int64_t ld, const Acc* out,
                        const void* workspace, size_t workspace_bytes) {
  if (rows < 0 || cols < 0 || ld < cols) return false;
  if (cols > 0 && rows > INT64_MAX / cols) return false;
  if (ld > 0 && rows > INT64_MAX / ld) return false;
  if (rows == 0) return true;  // nothing read or written
  if (out == nullptr || !is_element_aligned(out)) return false;
  if (rows > INT64_MAX / static_cast<int64_t>(sizeof(Acc))) return false;
  if (workspace_bytes > 0 && (workspace == nullptr || !alignment_of(workspace).fits(16)))
    return false;
  const int64_t out_span = rows * static_cast<int64_t>(sizeof(Acc));
  const int64_t ws_span = static_cast<int64_t>(std::min<size_t>(workspace_bytes, INT64_MAX));
  if (ranges_overlap(out, out_span, workspace, ws_span)) return false;
  if (cols == 0) return true;  // writes init; in is not read
  if (in == nullptr || !is_element_aligned(in)) return false;
  if (rows * ld > INT64_MAX / static_cast<int64_t>(sizeof(T))) return false;
  // rows * ld does not overflow, so neither does the last row's end
  const int64_t in_span = ((rows - 1) * ld + cols) * static_cast<int64_t>(sizeof(T));
  return !ranges_overlap(out, out_span, in, in_span) &&
         !ranges_overlap(workspace, ws_span, in, in_span);
}

/// The argument checks of every contiguous entry point (and of the row_reduce ladder's steps).
template <typename T, typename Acc>
bool row_reduce_args_ok(const T* in, int64_t rows, int64_t cols, const Acc* out,
                        const void* workspace = nullptr, size_t workspace_bytes = 0) {
  return row_reduce_args_ok(in, rows, cols, cols, out, workspace, workspace_bytes);
}

/// Launches plan p with the functor Op (arguments already checked): the one place the plan's
/// values become template arguments, those of its entry of kRowReduceConfigs
/// (row_reduce_config; any other plan, or one made for another element size, answers
/// cudaErrorInvalidValue).
template <typename Op, typename T, typename Acc>
cudaError_t launch_row_reduce(const RowReducePlan& p, const T* in, int64_t rows, int64_t cols,
                              int64_t ld, Acc* out, Acc init, void* workspace,
                              cudaStream_t stream) {
  using C = compute_t<Acc>;
  constexpr ConfigRange kEntries = row_reduce_configs_of(kMaxPackSize<T>);
  static_assert(kEntries.end > kEntries.begin, "T is a 2-, 4- or 8-byte type");
  C* const no_partials = nullptr;
  C* const partials = static_cast<C*>(workspace);
  return dispatch_table<kRowReduceConfigs, kEntries.begin, kEntries.end>(
      row_reduce_config(p), [&](auto i) {
        constexpr RowReduceConfig c = kRowReduceConfigs[decltype(i)::value];
        if constexpr (c.path == RowReducePath::kShort) {
          return launch(detail::row_reduce_short_kernel<c.pack, T, Acc, Op>, p.shape, stream, in,
                        rows, static_cast<int>(cols), out, init);
        } else if constexpr (c.path == RowReducePath::kFlat) {
          return launch(detail::row_reduce_flat_kernel<c.width, c.pack, T, Acc, Op>, p.shape,
                        stream, in, rows, static_cast<int>(cols / c.pack), ld / c.pack, out, init);
        } else if constexpr (c.path == RowReducePath::kGroup) {
          return launch(detail::row_reduce_group_kernel<c.width, c.pack, T, Acc, Op>, p.shape,
                        stream, in, rows, cols, ld, out, init);
        } else if constexpr (c.path == RowReducePath::kBlock) {
          return launch(detail::reduce_split_kernel<c.pack, BlockCombine::kNone, T, C, Acc, Op>,
                        p.shape, stream, in, rows, cols, ld, 1, out, init, no_partials);
        } else if constexpr (c.path == RowReducePath::kBlockOnce) {
          return launch(detail::row_reduce_block_once_kernel<c.pack, T, Acc, Op>, p.shape, stream,
                        in, rows, cols, ld, out, init);
        } else if constexpr (c.path == RowReducePath::kCluster) {
          return launch(detail::reduce_split_kernel<c.pack, BlockCombine::kCluster, T, C, Acc, Op>,
                        p.shape, stream, in, rows, cols, ld, p.split, out, init, no_partials);
        } else if constexpr (c.combine == BlockCombine::kGrid) {
          return launch(detail::reduce_split_kernel<c.pack, BlockCombine::kGrid, T, C, Acc, Op>,
                        p.shape, stream, in, rows, cols, ld, p.split, out, init, partials);
        } else {
          KERNELKIT_RETURN_IF_ERROR(launch(
              detail::reduce_split_kernel<c.pack, BlockCombine::kSecondKernel, T, C, Acc, Op>,
              p.shape, stream, in, rows, cols, ld, p.split, out, init, partials));
          return launch(detail::reduce_combine_kernel<C, Acc, Op>, p.combine_shape, stream,
                        static_cast<const C*>(partials), rows, p.split, out, init);
        }
      });
}

/// launch_row_reduce of contiguous rows (ld = cols).
template <typename Op, typename T, typename Acc>
cudaError_t launch_row_reduce(const RowReducePlan& p, const T* in, int64_t rows, int64_t cols,
                              Acc* out, Acc init, void* workspace, cudaStream_t stream) {
  return launch_row_reduce<Op>(p, in, rows, cols, cols, out, init, workspace, stream);
}

}  // namespace kernelkit

namespace kernelkit::detail {
// Checks, plan and launch of a row reduction with the functor Op.
template <typename Op, typename T, typename Acc>
cudaError_t row_reduce_with(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out, Acc init,
                            void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  KERNELKIT_REQUIRE(row_reduce_args_ok(in, rows, cols, ld, out, workspace, workspace_bytes));
  if (rows == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const Alignment in_at = alignment_of(in);
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_row_reduce(rows, cols, ld, sizeof(T), sizeof(compute_t<Acc>), in_at,
                               workspace_bytes, dev);
      },
      [&](const RowReducePlan& p) {
        return launch_row_reduce<Op>(p, in, rows, cols, ld, out, init, workspace, stream);
      });
}
// Contiguous rows.
template <typename Op, typename T, typename Acc>
cudaError_t row_reduce_with(const T* in, int64_t rows, int64_t cols, Acc* out, Acc init,
                            void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  return row_reduce_with<Op>(in, rows, cols, cols, out, init, workspace, workspace_bytes, stream);
}
}  // namespace kernelkit::detail

namespace kernelkit {

/// out[r] = op(init, reduction of row r) for r in [0, rows), with workspace_bytes of
/// workspace (row_reduce_workspace_bytes<T, Acc>(rows, cols) lets every shape split; less
/// or none still runs). See the top of this file. Instantiates all three operators;
/// row_sum / row_max / row_min instantiate one.
/// @param in device pointer to the rows x cols matrix of T, row-major, rows contiguous
/// @param rows rows (>= 0; 0 does nothing)
/// @param cols columns (>= 0; an empty row gives init)
/// @param out device pointer to rows values of Acc
/// @param op kSum, kMax or kMin
/// @param init the first operand of every row's reduction
/// @param workspace device scratch, 16-byte aligned, or null with workspace_bytes 0
/// @param workspace_bytes bytes of workspace
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when row_reduce_args_ok fails or op is unknown; otherwise the
/// error of reading the device's facts or of the launch.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_reduce(const T* in, int64_t rows, int64_t cols, Acc* out, ReduceOp op,
                                     Acc init, void* workspace, size_t workspace_bytes,
                                     cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(reduce_op_ok(op));
  return dispatch<ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin>(op, [&](auto o) {
    return detail::row_reduce_with<reduce_functor_t<decltype(o)::value>>(
        in, rows, cols, out, init, workspace, workspace_bytes, stream);
  });
}

/// The same without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_reduce(const T* in, int64_t rows, int64_t cols, Acc* out, ReduceOp op,
                                     Acc init, cudaStream_t stream = nullptr) {
  return row_reduce(in, rows, cols, out, op, init, nullptr, 0, stream);
}

/// Strided rows: out[r] = op(init, reduction of in[r * ld + 0 .. r * ld + cols)), ld >= cols
/// (the elements between rows are not read and may be anything). Otherwise as above.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_reduce(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                     ReduceOp op, Acc init, void* workspace, size_t workspace_bytes,
                                     cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(reduce_op_ok(op));
  return dispatch<ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin>(op, [&](auto o) {
    return detail::row_reduce_with<reduce_functor_t<decltype(o)::value>>(
        in, rows, cols, ld, out, init, workspace, workspace_bytes, stream);
  });
}

/// Strided rows without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_reduce(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                     ReduceOp op, Acc init, cudaStream_t stream = nullptr) {
  return row_reduce(in, rows, cols, ld, out, op, init, nullptr, 0, stream);
}

/// out[r] = sum of row r (0 for an empty row).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_sum(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::row_reduce_with<Sum>(in, rows, cols, out, identity<Sum, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// row_sum without a workspace (a split row then combines in a cooperative grid or
/// not at all; see row_reduce).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_sum(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return row_sum(in, rows, cols, out, nullptr, 0, stream);
}

/// row_sum of strided rows (row r at in + r * ld, ld >= cols).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_sum(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::row_reduce_with<Sum>(in, rows, cols, ld, out, identity<Sum, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// row_sum of strided rows without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_sum(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return row_sum(in, rows, cols, ld, out, nullptr, 0, stream);
}

/// out[r] = max of row r (NaN if the row holds one; -inf / lowest for an empty row).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_max(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::row_reduce_with<Max>(in, rows, cols, out, identity<Max, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// row_max without a workspace (a split row then combines in a cooperative grid or
/// not at all; see row_reduce).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_max(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return row_max(in, rows, cols, out, nullptr, 0, stream);
}

/// row_max of strided rows (row r at in + r * ld, ld >= cols).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_max(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::row_reduce_with<Max>(in, rows, cols, ld, out, identity<Max, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// row_max of strided rows without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_max(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return row_max(in, rows, cols, ld, out, nullptr, 0, stream);
}

/// out[r] = min of row r (NaN if the row holds one; +inf / highest for an empty row).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_min(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::row_reduce_with<Min>(in, rows, cols, out, identity<Min, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// row_min without a workspace (a split row then combines in a cooperative grid or
/// not at all; see row_reduce).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_min(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return row_min(in, rows, cols, out, nullptr, 0, stream);
}

/// row_min of strided rows (row r at in + r * ld, ld >= cols).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_min(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::row_reduce_with<Min>(in, rows, cols, ld, out, identity<Min, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// row_min of strided rows without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_min(const T* in, int64_t rows, int64_t cols, int64_t ld, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return row_min(in, rows, cols, ld, out, nullptr, 0, stream);
}

}  // namespace kernelkit
