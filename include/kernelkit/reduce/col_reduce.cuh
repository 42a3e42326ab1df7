// SPDX-License-Identifier: Apache-2.0
/// @file
/// Reduction over the middle axis of an (outer, n, inner) row-major layout:
/// out[o * inner + i] = op(init, in[o][0][i], ..., in[o][n - 1][i]) for o < outer, i < inner.
///
/// What it covers: `x.sum(0)` of a rows x cols matrix is (1, rows, cols) (every bias
/// gradient); reducing axis d of any contiguous tensor is (prod of the dims before d, dim d,
/// prod of the dims after d); the last axis is inner == 1, which is a row reduction and goes
/// to row_reduce (outer rows of n). Per-channel sums of NCHW (reduce N and HW) are two calls:
/// (N, C, HW) -> row reduce of the N*C rows of HW (inner == 1), then (1, N, C) over N; or one
/// call over N of (1, N, C*HW) followed by a row reduction of C rows of HW.
///
/// Types: T in {float, double, __half, __nv_bfloat16, int32_t, int64_t}; Acc is the output
/// type, accumulated in compute_t<Acc> (half/bf16 in float). Max and Min propagate NaN.
///
/// How a call runs (plan_col_reduce): columns are read in 16-byte packs of P = 16 / sizeof(T)
/// adjacent elements when the pointer and inner * sizeof(T) are on the 16-byte grid (every row
/// then starts on a pack), one element at a time otherwise. A block is `width` column packs x
/// 256 / width row lanes: narrow slices (inner / P <= 32) take width = inner / P, so a warp
/// reads whole consecutive rows (several k at once, contiguous); wider ones tiles of 32 column
/// packs (512 bytes of a row per warp instruction), narrowed to 16 or 8 (128 bytes, a whole
/// cache line) when the tiles would not fill a wave of blocks, widened up to 256 packs (fewer
/// row lanes) when n is too short to give 8 row lanes 4 rows each. The row lanes loop down k with
/// 8 loads in flight and meet in shared memory in a fixed tree. When the tiles still do not
/// fill a wave, n is split over `split` blocks per tile (at least 32 rows each): each writes
/// its partial column sums to the workspace and the same kernel, run over the (split, outer *
/// inner) partials, combines them in split order (BlockCombine::kSecondKernel; on sm_90 builds
/// a programmatic dependent launch, scheduled while the split kernel's last blocks run).
///
/// Why a workspace and not clusters: the shapes that need a split are the ones with few
/// tiles (x.sum(0) of 8192 x 4096 f32 has 128 tiles of 128 bytes a row against a wave of
/// 528 blocks on an H100, and (1, 1M, 4) has one tile), which need 4 to 500 blocks per tile:
/// past the 8 (16) blocks of a cluster. The partials cost outer * inner * split accumulator
/// values, a few percent of the input at most (split <= n / 32), and the combine runs on every
/// architecture. Without a workspace (or too small a one) the call still runs, unsplit.
///
/// Deterministic: the order of the operations depends only on the pointer alignment, the
/// shape, the device and the workspace size, never on timing; no atomics.
///
/// Preconditions: in, out (and the workspace) device pointers aligned to their element (the
/// workspace to 16 bytes); out overlaps neither in nor the workspace, nor the workspace in.
/// outer, n, inner >= 0, outer * n * inner elements of T representable in bytes in int64_t;
/// null pointers only with nothing to read or write. outer == 0 or inner == 0 does nothing;
/// n == 0 writes init to every output. Asynchronous on `stream`, no allocation,
/// graph-capturable; the workspace may hold anything before a call. Returns
/// cudaErrorInvalidValue (before any launch, nothing written) on bad arguments, otherwise
/// the launch status.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/column_tiles.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/reduce/detail/col_reduce_kernels.cuh"
#include "kernelkit/reduce/reduce.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kernelkit {

/// One kernel configuration of col_reduce (an entry of kColReduceConfigs): the template
/// arguments launch_col_reduce gives col_reduce_kernel besides the types and the operator.
struct ColReduceConfig {
  int elem_bytes = 0;  ///< sizeof(T): 2, 4 or 8
  int pack = 0;        ///< elements per load: 16 / elem_bytes, or 1 (unaligned rows)
  /// kNone: one block per tile writes out; kSecondKernel: split blocks per tile write partials
  /// to the workspace, combined by the same kernel over them (Pack 1, kNone)
  BlockCombine combine = BlockCombine::kNone;
};

/// Same kernels.
constexpr bool operator==(const ColReduceConfig& a, const ColReduceConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.pack == b.pack && a.combine == b.combine;
}

/// Every kernel configuration col_reduce launches, each element size's entries together:
/// 16-byte packs and single elements, unsplit or split through the workspace.
/// plan_col_reduce returns one of them (col_reduce_config), launch_col_reduce instantiates
/// exactly these (and, for each kSecondKernel entry, the Pack 1 kNone kernel of the partials),
/// and the plan tests check that every plan is one and every one is planned.
inline constexpr ColReduceConfig kColReduceConfigs[] = {
    {2, 8, BlockCombine::kNone}, {2, 8, BlockCombine::kSecondKernel},
    {2, 1, BlockCombine::kNone}, {2, 1, BlockCombine::kSecondKernel},
    {4, 4, BlockCombine::kNone}, {4, 4, BlockCombine::kSecondKernel},
    {4, 1, BlockCombine::kNone}, {4, 1, BlockCombine::kSecondKernel},
    {8, 2, BlockCombine::kNone}, {8, 2, BlockCombine::kSecondKernel},
    {8, 1, BlockCombine::kNone}, {8, 1, BlockCombine::kSecondKernel},
};

/// The entries of kColReduceConfigs for elements of elem_bytes: [begin, end).
constexpr ConfigRange col_reduce_configs_of(int elem_bytes) {
  return config_range(kColReduceConfigs, [elem_bytes](const ColReduceConfig& c) {
    return c.elem_bytes == elem_bytes;
  });
}
static_assert(col_reduce_configs_of(2).end - col_reduce_configs_of(2).begin == 4 &&
                  col_reduce_configs_of(4).end - col_reduce_configs_of(4).begin == 4 &&
                  col_reduce_configs_of(8).end - col_reduce_configs_of(8).begin == 4,
              "each element size's entries together");

/// What one call does; every decision is here.
struct ColReducePlan {
  int elem_bytes = 4;  ///< sizeof(T)
  int pack = 1;        ///< elements per load: 16 / sizeof(T) when every row starts on a pack
  BlockCombine combine = BlockCombine::kNone;  ///< kSecondKernel: split > 1
  int width = 1;  ///< column packs of a tile (threads per row lane, 1..256): inner / pack up
                  ///< to 32; wider slices 32, down to 8 (a wave of tiles), up to 256 (few rows)
  int64_t tiles_per_outer = 1;  ///< tiles of a slice: ceil(inner / pack / width)
  int split = 1;                ///< blocks per tile along n (gridDim.y)
  int64_t rows_per_split = 0;   ///< rows of n a split reads: ceil(n / split)
  LaunchShape shape;            ///< the reading kernel: grid (tiles, split) of 256 threads
  /// kSecondKernel: the combine (the same kernel over the (split, outer * inner) partials,
  /// Pack 1): its width, tiles and shape
  int combine_width = 1;
  int64_t combine_tiles = 1;  ///< tiles of the partials' one slice
  LaunchShape combine_shape;  ///< the combine kernel's grid (combine_tiles) and block
};

/// The configuration plan p launches.
constexpr ColReduceConfig col_reduce_config(const ColReducePlan& p) {
  return {p.elem_bytes, p.pack, p.combine};
}

}  // namespace kernelkit

namespace kernelkit::detail {
// Fewest rows of n a split block reads.
inline constexpr int64_t kColMinSplitRows = 32;
// Blocks per tile a split may use on any device (an upper bound from the shape only): a wave
// is at most kReduceMaxSplit blocks and a slice has at least ceil(inner / 256) tiles (32
// column packs of at most 8 elements).
constexpr int64_t col_split_bound(int64_t outer, int64_t n, int64_t inner) {
  if (outer <= 0 || n <= 0 || inner <= 0) return 1;
  const int64_t tiles = outer * ceil_div<int64_t>(inner, int64_t{kColMaxWidth} * 8);
  const int64_t by_wave = ceil_div<int64_t>(kReduceMaxSplit, tiles);
  const int64_t by_rows = n / kColMinSplitRows;
  const int64_t split = by_wave < by_rows ? by_wave : by_rows;
  return split < 1 ? 1 : split;
}
}  // namespace kernelkit::detail

namespace kernelkit {

/// Bytes of workspace that let every shape split on any device (an upper bound from the shape
/// only): one compute_t<Acc> partial per output and split block; for inner == 1 (a row
/// reduction) row_reduce_workspace_bytes. 0 when no split can help. col_reduce runs with less
/// (or none): it splits only when the workspace holds the split's partials.
template <typename T, typename Acc = compute_t<T>>
constexpr size_t col_reduce_workspace_bytes(int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) return row_reduce_workspace_bytes<T, Acc>(outer, n);
  const int64_t split = detail::col_split_bound(outer, n, inner);
  return split < 2 ? 0 : static_cast<size_t>(split * outer * inner) * sizeof(compute_t<Acc>);
}

/// Pure: the plan for an (outer, n, inner) input of elem_bytes-byte elements (inner >= 2;
/// inner == 1 is row_reduce's) accumulated in acc_bytes-byte values, the input at `in` on the
/// 16-byte grid, with workspace_bytes of workspace.
inline ColReducePlan plan_col_reduce(int64_t outer, int64_t n, int64_t inner, int elem_bytes,
                                     int acc_bytes, Alignment in, size_t workspace_bytes,
                                     const DeviceInfo& d) {
  using detail::kColBlock;
  using detail::kColMaxWidth;
  ColReducePlan p;
  p.elem_bytes = elem_bytes;
  const int full = std::max(1, kMaxPackBytes / std::max(elem_bytes, 1));
  // every row of every slice starts on a 16-byte pack
  p.pack = common_alignment(in, Alignment(inner * elem_bytes)).fits(kMaxPackBytes) ? full : 1;
  p.shape.block = dim3(kColBlock);
  if (outer <= 0 || inner <= 0) return p;  // nothing to launch
  const int64_t cp = inner / p.pack;       // column packs of a slice
  const int64_t wave = detail::reduce_wave(d);
  // narrow slices: a tile is the whole row; wide ones 32 packs, widened for few rows and
  // narrowed to a 128-byte line for few tiles (column_tile_width)
  const int line = std::max(1, 128 / (p.pack * elem_bytes));
  const int width =
      column_tile_width(cp, n, outer, kColBlock, kColMaxWidth, detail::kColMinLaneRows, line, wave);
  p.width = width;
  p.tiles_per_outer = ceil_div<int64_t>(cp, width);
  const int64_t tiles = outer * p.tiles_per_outer;
  // split n while the tiles do not fill a wave, into splits of >= kColMinSplitRows rows, as
  // far as the workspace holds the partials
  const int64_t outputs = outer * inner;
  const int64_t room = static_cast<int64_t>(std::min<size_t>(
      workspace_bytes / static_cast<size_t>(std::max(acc_bytes, 1)) / static_cast<size_t>(outputs),
      kReduceMaxSplit));
  const ColumnSplit cs = column_split(n, tiles, wave, detail::kColMinSplitRows, room);
  p.rows_per_split = cs.rows_per_split;
  if (cs.split >= 2) {
    p.combine = BlockCombine::kSecondKernel;
    p.split = cs.split;
    p.shape.grid = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(p.split));
    // the partials: one slice of split rows of outer * inner, one element a load
    p.combine_width = static_cast<int>(std::min<int64_t>(outputs, kColMaxWidth));
    p.combine_tiles = ceil_div<int64_t>(outputs, p.combine_width);
    p.combine_shape.block = dim3(kColBlock);
    // a programmatic dependent launch on sm_90 builds: scheduled while the split kernel's
    // last blocks finish, it waits for that grid before reading the partials
    p.combine_shape.overlap_previous = d.cc_major >= 9 && d.code_arch >= 90;
    p.combine_shape.grid = dim3(static_cast<unsigned>(std::min<int64_t>(
        p.combine_tiles, grid_size_for(p.combine_tiles * kColBlock, kColBlock, d))));
    return p;
  }
  p.shape.grid = dim3(grid_size_for(tiles * kColBlock, kColBlock, d));
  return p;
}

/// The argument checks of every entry point.
template <typename T, typename Acc>
bool col_reduce_args_ok(const T* in, int64_t outer, int64_t n, int64_t inner, const Acc* out,
                        const void* workspace = nullptr, size_t workspace_bytes = 0) {
  if (outer < 0 || n < 0 || inner < 0) return false;
  if (inner > 0 && outer > INT64_MAX / inner) return false;
  const int64_t outputs = outer * inner;
  if (outputs == 0) return true;  // nothing read or written
  if (out == nullptr || !is_element_aligned(out)) return false;
  if (outputs > INT64_MAX / static_cast<int64_t>(sizeof(Acc))) return false;
  if (workspace_bytes > 0 && (workspace == nullptr || !alignment_of(workspace).fits(16)))
    return false;
  const int64_t out_span = outputs * static_cast<int64_t>(sizeof(Acc));
  const int64_t ws_span = static_cast<int64_t>(std::min<size_t>(workspace_bytes, INT64_MAX));
  if (ranges_overlap(out, out_span, workspace, ws_span)) return false;
  if (n == 0) return true;  // writes init; in is not read
  if (in == nullptr || !is_element_aligned(in)) return false;
  if (outputs > INT64_MAX / n) return false;
  if (outputs * n > INT64_MAX / static_cast<int64_t>(sizeof(T))) return false;
  const int64_t in_span = outputs * n * static_cast<int64_t>(sizeof(T));
  return !ranges_overlap(out, out_span, in, in_span) &&
         !ranges_overlap(workspace, ws_span, in, in_span);
}

/// Launches plan p with the functor Op (arguments already checked, inner >= 2): the one place
/// the plan's values become template arguments, those of its entry of kColReduceConfigs (any
/// other plan, or one made for another element size, answers cudaErrorInvalidValue).
template <typename Op, typename T, typename Acc>
cudaError_t launch_col_reduce(const ColReducePlan& p, const T* in, int64_t outer, int64_t n,
                              int64_t inner, Acc* out, Acc init, void* workspace,
                              cudaStream_t stream) {
  using C = compute_t<Acc>;
  constexpr ConfigRange kEntries = col_reduce_configs_of(static_cast<int>(sizeof(T)));
  static_assert(kEntries.end > kEntries.begin, "T is a 2-, 4- or 8-byte type");
  C* const partials = static_cast<C*>(workspace);
  return dispatch_table<kColReduceConfigs, kEntries.begin, kEntries.end>(
      col_reduce_config(p), [&](auto i) {
        constexpr ColReduceConfig c = kColReduceConfigs[decltype(i)::value];
        KERNELKIT_RETURN_IF_ERROR(launch(
            detail::col_reduce_kernel<c.pack, c.combine, T, C, Acc, Op>, p.shape, stream, in, outer,
            n, inner, p.width, p.tiles_per_outer, p.rows_per_split, out, init, partials));
        if constexpr (c.combine == BlockCombine::kSecondKernel) {
          return launch(detail::col_reduce_kernel<1, BlockCombine::kNone, C, C, Acc, Op>,
                        p.combine_shape, stream, static_cast<const C*>(partials), int64_t{1},
                        int64_t{p.split}, outer * inner, p.combine_width, p.combine_tiles,
                        int64_t{p.split}, out, init, static_cast<C*>(nullptr));
        }
        return cudaSuccess;
      });
}

}  // namespace kernelkit

namespace kernelkit::detail {
// Checks, plan and launch of a column reduction with the functor Op; inner == 1 is the row
// reduction of outer rows of n.
template <typename Op, typename T, typename Acc>
cudaError_t col_reduce_with(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                            Acc init, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream) {
  KERNELKIT_REQUIRE(col_reduce_args_ok(in, outer, n, inner, out, workspace, workspace_bytes));
  if (outer == 0 || inner == 0) return cudaSuccess;
  if (inner == 1)
    return row_reduce_with<Op>(in, outer, n, out, init, workspace, workspace_bytes, stream);
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const ColReducePlan p = plan_col_reduce(outer, n, inner, sizeof(T), sizeof(compute_t<Acc>),
                                          alignment_of(in), workspace_bytes, d);
  return launch_col_reduce<Op>(p, in, outer, n, inner, out, init, workspace, stream);
}
}  // namespace kernelkit::detail

namespace kernelkit {

/// out[o * inner + i] = op(init, reduction over k < n of in[(o * n + k) * inner + i]), with
/// workspace_bytes of workspace (col_reduce_workspace_bytes<T, Acc>(outer, n, inner) lets
/// every shape split; less or none still runs). See the top of this file. Instantiates all
/// three operators; col_sum / col_max / col_min instantiate one.
/// @param in device pointer to the outer x n x inner array of T, row-major, contiguous
/// @param outer slices (>= 0; 0 does nothing)
/// @param n the reduced axis (>= 0; 0 writes init)
/// @param inner elements of a row of a slice (>= 0; 0 does nothing; 1 is row_reduce)
/// @param out device pointer to outer x inner values of Acc
/// @param op kSum, kMax or kMin
/// @param init the first operand of every output's reduction
/// @param workspace device scratch, 16-byte aligned, or null with workspace_bytes 0
/// @param workspace_bytes bytes of workspace
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued; cudaErrorInvalidValue, before any launch and
/// with nothing written, when col_reduce_args_ok fails or op is unknown; otherwise the error of
/// reading the device's facts or of the launch.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_reduce(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                     ReduceOp op, Acc init, void* workspace, size_t workspace_bytes,
                                     cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(reduce_op_ok(op));
  return dispatch<ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin>(op, [&](auto o) {
    return detail::col_reduce_with<reduce_functor_t<decltype(o)::value>>(
        in, outer, n, inner, out, init, workspace, workspace_bytes, stream);
  });
}

/// The same without a workspace (no split: see the top of this file).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_reduce(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                     ReduceOp op, Acc init, cudaStream_t stream = nullptr) {
  return col_reduce(in, outer, n, inner, out, op, init, nullptr, 0, stream);
}

/// out[o * inner + i] = sum over k of in[o][k][i] (0 for n == 0).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_sum(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::col_reduce_with<Sum>(in, outer, n, inner, out, identity<Sum, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// col_sum without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_sum(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return col_sum(in, outer, n, inner, out, nullptr, 0, stream);
}

/// out[o * inner + i] = max over k of in[o][k][i] (NaN if one is; -inf / lowest for n == 0).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_max(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::col_reduce_with<Max>(in, outer, n, inner, out, identity<Max, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// col_max without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_max(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return col_max(in, outer, n, inner, out, nullptr, 0, stream);
}

/// out[o * inner + i] = min over k of in[o][k][i] (NaN if one is; +inf / highest for n == 0).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_min(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                  void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream = nullptr) {
  return detail::col_reduce_with<Min>(in, outer, n, inner, out, identity<Min, Acc>(), workspace,
                                      workspace_bytes, stream);
}
/// col_min without a workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t col_min(const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return col_min(in, outer, n, inner, out, nullptr, 0, stream);
}

}  // namespace kernelkit
