// /work/main/00-HELPERS-READ-FIRST.md). Do NOT git stash/checkout/reset/commit/add in /work/main:
// the other helper has uncommitted files here too. Keep editing only your own files; when done
// (deadline 15:00 UTC), create your worktree (git -C /work/main worktree add /work/wt-<name> -b
// <name> 85c0129), copy ONLY your changed files there, delete this line from them, commit there,
// then `git -C /work/main checkout -- <your files>`. SPDX-License-Identifier: Apache-2.0
/// @file
/// Softmax and log-softmax over the last dimension of a row-major rows x cols matrix, with or
/// without a leading dimension, and their backward passes (softmax_backward,
/// log_softmax_backward). The forward, contiguous or strided rows: plan in softmax_plan.cuh,
/// kernels in detail/softmax_kernels.cuh; the backward: softmax_rows_plan.cuh and
/// detail/softmax_rows_kernels.cuh. Here: the argument checks, launch_softmax /
/// launch_softmax_rows (the plan's values become template arguments), and the public functions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/softmax/detail/softmax_kernels.cuh"
#include "kernelkit/softmax/detail/softmax_rows_kernels.cuh"
#include "kernelkit/softmax/softmax_plan.cuh"
#include "kernelkit/softmax/softmax_rows_plan.cuh"

namespace kernelkit {

/// The arguments softmax / log_softmax (and the softmax ladder) accept: sizes >= 0; rows *
/// cols * sizeof(T) within int64; when the matrix is not empty, both pointers non-null and
/// aligned to T, and out either exactly in (in place) or not overlapping in at all.
template <typename T>
bool softmax_args_ok(const T* in, const T* out, int64_t rows, int64_t cols) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "softmax supports float, __half and __nv_bfloat16");
  if (rows < 0 || cols < 0) return false;
  if (rows == 0 || cols == 0) return true;
  if (in == nullptr || out == nullptr) return false;
  if (rows > INT64_MAX / cols || rows * cols > INT64_MAX / int64_t{sizeof(T)}) return false;
  if (!is_element_aligned(in) || !is_element_aligned(out)) return false;
  const int64_t bytes = rows * cols * int64_t{sizeof(T)};
  return !partial_overlap(out, bytes, in, bytes);
}

namespace detail {
// A rows x cols matrix of T with leading dimension ld: ld >= cols, its span ((rows - 1) x ld +
// cols elements) within int64 bytes, p non-null and aligned to T (rows, cols >= 1).
template <typename T>
bool softmax_matrix_ok(const T* p, int64_t ld, int64_t rows, int64_t cols) {
  if (p == nullptr || ld < cols || !is_element_aligned(p)) return false;
  if (rows - 1 > (INT64_MAX - cols) / ld) return false;
  return (rows - 1) * ld + cols <= INT64_MAX / int64_t{sizeof(T)};
}
}  // namespace detail

/// The arguments of the leading-dimension softmax / log_softmax: sizes >= 0; when the matrix is
/// not empty, ld_in >= cols and ld_out >= cols, both pointers non-null and aligned to T, each
/// span ((rows - 1) x ld + cols elements) within int64 bytes, and out either exactly in (same
/// pointer and ld: in place) or its span not overlapping in's at all.
template <typename T>
bool softmax_args_ok(const T* in, int64_t ld_in, const T* out, int64_t ld_out, int64_t rows,
                     int64_t cols) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "softmax supports float, __half and __nv_bfloat16");
  if (rows < 0 || cols < 0) return false;
  if (rows == 0 || cols == 0) return true;
  if (!detail::softmax_matrix_ok(in, ld_in, rows, cols) ||
      !detail::softmax_matrix_ok(out, ld_out, rows, cols))
    return false;
  const int64_t e = sizeof(T);
  return !partial_overlap(out, matrix_span_bytes(rows, cols, ld_out, e), in,
                          matrix_span_bytes(rows, cols, ld_in, e));
}

/// The arguments softmax_backward / log_softmax_backward accept: sizes >= 0; when not empty,
/// every ld >= cols, y, dy, dx non-null and aligned to T, each span within int64 bytes; dx's
/// span does not overlap y's, and either is exactly dy (same pointer and ld: in place) or does
/// not overlap dy's. (y and dy may overlap: both are only read.)
template <typename T>
bool softmax_backward_args_ok(const T* y, int64_t ld_y, const T* dy, int64_t ld_dy, const T* dx,
                              int64_t ld_dx, int64_t rows, int64_t cols) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "softmax_backward supports float, __half and __nv_bfloat16");
  if (rows < 0 || cols < 0) return false;
  if (rows == 0 || cols == 0) return true;
  if (!detail::softmax_matrix_ok(y, ld_y, rows, cols) ||
      !detail::softmax_matrix_ok(dy, ld_dy, rows, cols) ||
      !detail::softmax_matrix_ok(dx, ld_dx, rows, cols))
    return false;
  const int64_t e = sizeof(T);
  const int64_t dx_bytes = matrix_span_bytes(rows, cols, ld_dx, e);
  if (ranges_overlap(dx, dx_bytes, y, matrix_span_bytes(rows, cols, ld_y, e))) return false;
  return !partial_overlap(dx, dx_bytes, dy, matrix_span_bytes(rows, cols, ld_dy, e));
}

namespace detail {

// Once per kernel and device: a chunk kernel's shared-memory attributes (core
// set_shared_memory_kernel) and, for the cluster kernels on devices that the plan gives
// clusters of 16 (DeviceInfo::max_cluster), the non-portable cluster size.
template <bool Cluster, typename Kernel>
cudaError_t softmax_chunk_setup(Kernel kernel) {
  return once_per_kernel(reinterpret_cast<const void*>(kernel), [&] {
    DeviceInfo d;
    KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
    if (Cluster && d.max_cluster() > 8) {
      KERNELKIT_RETURN_IF_ERROR(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
    return set_shared_memory_kernel(kernel);
  });
}

// The kTile kernel of Group lanes holding Per elements a row: 1, the narrow kernel (rows of at
// most two packs); whole packs, the pack-lane kernel.
template <typename T, SoftmaxKind Kind, int Group, int Per>
constexpr auto softmax_tile_kernel_of() {
  constexpr int kPack = kMaxPackSize<T>;
  if constexpr (Per == 1) {
    return softmax_tile_narrow_kernel<T, Kind>;
  } else {
    static_assert(Per % kPack == 0, "whole packs a lane");
    return softmax_tile_rows_kernel<T, Kind, Group, Per / kPack>;
  }
}

template <typename T, SoftmaxKind Kind, int Pack, int Block, BlockCombine Combine>
cudaError_t softmax_launch_chunk(const SoftmaxPlan& p, const T* in, int64_t ld_in, T* out,
                                 int64_t ld_out, int64_t rows, int64_t cols, cudaStream_t stream) {
  const auto kernel = softmax_chunk_kernel<T, Kind, Pack, Block, Combine>;
  KERNELKIT_RETURN_IF_ERROR(softmax_chunk_setup<Combine == BlockCombine::kCluster>(kernel));
  const SoftmaxChunkArgs<T> args{in,      out,     ld_in,     ld_out,         rows,
                                 cols,    p.split, p.buffers, p.buffer_bytes, p.rows_per_round,
                                 p.rounds};
  LaunchShape shape = p.shape;
  if constexpr (Combine == BlockCombine::kCluster) {
    // no more clusters than the runtime says can be resident (the row loop strides by the
    // grid, so fewer clusters cover every row)
    int clusters = 0;
    KERNELKIT_RETURN_IF_ERROR(cluster_occupancy(kernel, shape, &clusters));
    if (clusters < 1) return kClusterDoesNotFit;
    const int64_t most = int64_t{clusters} * p.split;
    if (int64_t{shape.grid.x} > most) shape.grid.x = static_cast<unsigned>(most);
  }
  return launch(kernel, shape, stream, args);
}

}  // namespace detail

/// Launches plan p (made by plan_softmax for these pointers, leading dimensions and sizes) of
/// softmax or log_softmax: the one place the plan's values become template arguments, those of
/// its entry of kSoftmaxConfigs (softmax_config; any other plan answers cudaErrorInvalidValue).
/// Row r of in starts at in + r * ld_in, of out at out + r * ld_out.
template <typename T>
cudaError_t launch_softmax(const SoftmaxPlan& p, SoftmaxKind kind, const T* in, int64_t ld_in,
                           T* out, int64_t ld_out, int64_t rows, int64_t cols,
                           cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = softmax_configs_of(sizeof(T));
  const SoftmaxConfig key = softmax_config(p, sizeof(T));
  return dispatch<SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax>(kind, [&](auto k) {
    constexpr SoftmaxKind kKind = decltype(k)::value;
    return dispatch_table<kSoftmaxConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
      constexpr SoftmaxConfig c = kSoftmaxConfigs[decltype(i)::value];
      if constexpr (c.path == SoftmaxPath::kTile) {
        // contiguous rows of at most kSoftmaxTileMaxPacks packs, tiles of ~8 KB; two packs or
        // more a lane: the pack-lane kernel, fewer elements: the narrow one
        if (rows > 1 && (ld_in != cols || ld_out != cols)) return cudaErrorInvalidValue;
        const auto kernel = softmax_tile_kernel_of<T, kKind, c.group, c.packs>();
        KERNELKIT_RETURN_IF_ERROR(softmax_chunk_setup<false>(kernel));
        return launch(kernel, p.shape, stream, in, out, rows, static_cast<int>(cols),
                      static_cast<int>(p.rows_per_round), p.buffer_bytes);
      } else if constexpr (c.path == SoftmaxPath::kWarp) {
        // the warp path's rows are at most 1024 wide
        return launch(softmax_warp_kernel<T, kKind, c.pack, c.group, c.packs, c.on_grid>, p.shape,
                      stream, in, ld_in, out, ld_out, rows, static_cast<int>(cols));
      } else if constexpr (c.path == SoftmaxPath::kBlock && c.on_grid) {
        // the register shapes hold at most 16384 columns
        return launch(softmax_block_registers_kernel<T, kKind, c.block, c.packs>, p.shape, stream,
                      in, ld_in, out, ld_out, rows, static_cast<int>(cols));
      } else if constexpr (c.path == SoftmaxPath::kBlock) {
        return softmax_launch_chunk<T, kKind, c.pack, c.block, BlockCombine::kNone>(
            p, in, ld_in, out, ld_out, rows, cols, stream);
      } else if constexpr (c.path == SoftmaxPath::kCluster) {
        return softmax_launch_chunk<T, kKind, c.pack, c.block, BlockCombine::kCluster>(
            p, in, ld_in, out, ld_out, rows, cols, stream);
      } else if constexpr (c.path == SoftmaxPath::kGrid) {
        return softmax_launch_chunk<T, kKind, c.pack, c.block, BlockCombine::kGrid>(
            p, in, ld_in, out, ld_out, rows, cols, stream);
      } else {
        return launch(softmax_two_pass_kernel<T, kKind, c.pack, c.block>, p.shape, stream, in,
                      ld_in, out, ld_out, rows, cols);
      }
    });
  });
}

/// launch_softmax over contiguous rows (ld_in = ld_out = cols).
template <typename T>
cudaError_t launch_softmax(const SoftmaxPlan& p, SoftmaxKind kind, const T* in, T* out,
                           int64_t rows, int64_t cols, cudaStream_t stream) {
  return launch_softmax(p, kind, in, cols, out, cols, rows, cols, stream);
}

/// Launches plan p (made by plan_softmax_rows for these operands) of the backward row
/// family (kind: kSoftmaxBackward or kLogSoftmaxBackward; any other kind, or a plan that is not
/// an entry of kSoftmaxRowsConfigs (softmax_rows_config), answers cudaErrorInvalidValue).
/// args.cached and args.split are p's.
template <typename T>
cudaError_t launch_softmax_rows(const SoftmaxRowsPlan& p, SoftmaxKind kind,
                                detail::SoftmaxRowsArgs<T> args, cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = softmax_rows_configs_of(sizeof(T));
  const SoftmaxRowsConfig key = softmax_rows_config(p, sizeof(T));
  args.cached = p.cached;
  args.split = p.split;
  return dispatch<SoftmaxKind::kSoftmaxBackward, SoftmaxKind::kLogSoftmaxBackward>(
      kind, [&](auto k) {
        constexpr SoftmaxKind kKind = decltype(k)::value;
        return dispatch_table<kSoftmaxRowsConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
          constexpr SoftmaxRowsConfig c = kSoftmaxRowsConfigs[decltype(i)::value];
          if constexpr (c.path == SoftmaxRowsPath::kWarp) {
            return launch(softmax_rows_warp_kernel<T, kKind, c.pack, c.group, c.packs>, p.shape,
                          stream, args);
          } else {
            constexpr bool kCluster = c.path == SoftmaxRowsPath::kCluster;
            const auto kernel = softmax_rows_block_kernel<T, kKind, c.pack, c.block, kCluster>;
            KERNELKIT_RETURN_IF_ERROR(softmax_chunk_setup<kCluster>(kernel));
            return launch(kernel, p.shape, stream, args);
          }
        });
      });
}

namespace detail {
// softmax_backward / log_softmax_backward: check, plan for the current device (packs where
// every operand's rows sit alike on the 16-byte grid), launch.
template <typename T>
cudaError_t run_softmax_backward(SoftmaxKind kind, const T* y, int64_t ld_y, const T* dy,
                                 int64_t ld_dy, T* dx, int64_t ld_dx, int64_t rows, int64_t cols,
                                 cudaStream_t stream) {
  KERNELKIT_REQUIRE(softmax_backward_args_ok(y, ld_y, dy, ld_dy, dx, ld_dx, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const SoftmaxRowsArgs<T> args{y, ld_y, dy, ld_dy, dx, ld_dx, rows, cols, 0, 1};
  const SoftmaxRowsLayout at = softmax_rows_layout(
      sizeof(T), alignment_of(y), ld_y, alignment_of(dx), ld_dx, alignment_of(dy), ld_dy);
  // a cluster that cannot be placed is planned again (plan_and_launch)
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_softmax_rows(rows, cols, static_cast<int>(sizeof(T)), at, dev);
      },
      [&](const SoftmaxRowsPlan& p) { return launch_softmax_rows(p, kind, args, stream); });
}

// softmax and log_softmax, contiguous or strided rows: check, plan for the current device,
// launch.
template <typename T>
cudaError_t run_softmax_ld(SoftmaxKind kind, const T* in, int64_t ld_in, T* out, int64_t ld_out,
                           int64_t rows, int64_t cols, cudaStream_t stream) {
  KERNELKIT_REQUIRE(softmax_args_ok(in, ld_in, out, ld_out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const Alignment in_at = alignment_of(in), out_at = alignment_of(out);
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_softmax(rows, cols, sizeof(T), in_at, ld_in, out_at, ld_out, dev);
      },
      [&](const SoftmaxPlan& p) {
        return launch_softmax(p, kind, in, ld_in, out, ld_out, rows, cols, stream);
      });
}
}  // namespace detail

/// out[r][c] = exp(in[r][c] - max_r) / sum_c' exp(in[r][c'] - max_r), computed in float.
/// Types: float, __half, __nv_bfloat16 (no float copy of the input). in == out (in place) is
/// allowed; any other overlap is not. Any alignment of in and out to their element; any
/// width. rows * cols may pass 2^31. A row containing NaN, or made only of -inf, becomes NaN;
/// -inf elements of other rows give 0. rows == 0 or cols == 0 does nothing. Returns
/// cudaErrorInvalidValue (before any launch, nothing written) for negative sizes, a null or
/// misaligned pointer with a non-empty matrix, rows * cols * sizeof(T) overflowing int64, or
/// a partial overlap of in and out. Reads the input once, except where a row does not fit the
/// GPU's shared memory (part of it is read twice) or one block's while no cooperative grid can
/// be resident (read twice).
/// @param in device pointer to the rows x cols matrix, row-major, rows contiguous
/// @param out device pointer to rows x cols elements (may be in)
/// @param rows rows (>= 0)
/// @param cols columns, the softmax dimension (>= 0)
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when softmax_args_ok fails (see above); otherwise the error of
/// reading the device's facts or of the launch.
template <typename T>
[[nodiscard]] cudaError_t softmax(const T* in, T* out, int64_t rows, int64_t cols,
                                  cudaStream_t stream = nullptr) {
  return detail::run_softmax_ld(SoftmaxKind::kSoftmax, in, cols, out, cols, rows, cols, stream);
}

/// softmax over rows with leading dimensions: row r of the input starts at in + r * ld_in, of
/// the output at out + r * ld_out (ld >= cols; rows need not be contiguous, e.g. logits[:, -1, :]
/// read in place). softmax(in, out, rows, cols) is this with ld_in = ld_out = cols. Same types,
/// numerics and special values as softmax. in == out with ld_in == ld_out is in place; otherwise
/// the spans ((rows - 1) x ld + cols elements from each pointer) must not overlap. Where row r of
/// in and of out sit at the same offset within 16 bytes for every r (the same pointer offset and
/// ld x sizeof(T) offset), rows move in 16-byte packs (a partial head and tail element by
/// element), otherwise element by element. The same plan and kernels as softmax (plan_softmax
/// with the strides): rows that sit on the 16-byte grid as contiguous rows would run as those
/// do; short rows off the pack grid, which contiguous rows take in tiles of several rows, run
/// a row in a group of lanes. Returns cudaErrorInvalidValue (nothing written) when
/// softmax_args_ok(in, ld_in, out, ld_out, rows, cols) fails.
template <typename T>
[[nodiscard]] cudaError_t softmax(const T* in, int64_t ld_in, T* out, int64_t ld_out, int64_t rows,
                                  int64_t cols, cudaStream_t stream = nullptr) {
  return detail::run_softmax_ld(SoftmaxKind::kSoftmax, in, ld_in, out, ld_out, rows, cols, stream);
}

/// out[r][c] = (in[r][c] - max_r) - log(sum_c' exp(in[r][c'] - max_r)) (not log(softmax)).
/// Same types, aliasing, special values and errors as softmax.
template <typename T>
[[nodiscard]] cudaError_t log_softmax(const T* in, T* out, int64_t rows, int64_t cols,
                                      cudaStream_t stream = nullptr) {
  return detail::run_softmax_ld(SoftmaxKind::kLogSoftmax, in, cols, out, cols, rows, cols, stream);
}

/// log_softmax with leading dimensions: as softmax(in, ld_in, out, ld_out, rows, cols).
template <typename T>
[[nodiscard]] cudaError_t log_softmax(const T* in, int64_t ld_in, T* out, int64_t ld_out,
                                      int64_t rows, int64_t cols, cudaStream_t stream = nullptr) {
  return detail::run_softmax_ld(SoftmaxKind::kLogSoftmax, in, ld_in, out, ld_out, rows, cols,
                                stream);
}

/// The gradient of softmax: dx[r][c] = y[r][c] * (dy[r][c] - sum_c' y[r][c'] * dy[r][c']), y the
/// softmax output, dy the gradient of the loss with respect to y. Fused: y and dy read once, dx
/// written once (rows whose two inputs do not fit one block's shared memory, past ~113 KB each
/// on an H100, read their remainder twice). The sum is accumulated in float (also for __half
/// and __nv_bfloat16); types: float, __half, __nv_bfloat16. Row r of each operand starts at
/// ptr + r * ld (ld >= cols); the overload without ld takes ld = cols. dx == dy with ld_dx ==
/// ld_dy is allowed (in place); dx must not overlap y, nor dy otherwise (spans: (rows - 1) x ld
/// + cols elements); y and dy may overlap. rows * cols may pass 2^31; rows == 0 or cols == 0 does
/// nothing. Returns cudaErrorInvalidValue (before any launch, nothing written) when
/// softmax_backward_args_ok fails: negative sizes, a null or misaligned pointer with a non-empty
/// matrix, ld < cols, a span overflowing int64 bytes, a forbidden overlap. Rows of up to 512
/// columns in registers, wider ones one block a row, few wide rows a cluster of blocks a row
/// (sm_90 builds; elsewhere one block a row).
template <typename T>
[[nodiscard]] cudaError_t softmax_backward(const T* y, int64_t ld_y, const T* dy, int64_t ld_dy,
                                           T* dx, int64_t ld_dx, int64_t rows, int64_t cols,
                                           cudaStream_t stream = nullptr) {
  return detail::run_softmax_backward(SoftmaxKind::kSoftmaxBackward, y, ld_y, dy, ld_dy, dx, ld_dx,
                                      rows, cols, stream);
}

/// softmax_backward over contiguous rows (every ld = cols).
template <typename T>
[[nodiscard]] cudaError_t softmax_backward(const T* y, const T* dy, T* dx, int64_t rows,
                                           int64_t cols, cudaStream_t stream = nullptr) {
  return softmax_backward(y, cols, dy, cols, dx, cols, rows, cols, stream);
}

/// The gradient of log_softmax: dx[r][c] = dy[r][c] - exp(y[r][c]) * sum_c' dy[r][c'], y the
/// log_softmax output. Same fusion, types, leading dimensions, aliasing (dx == dy in place) and
/// errors as softmax_backward.
template <typename T>
[[nodiscard]] cudaError_t log_softmax_backward(const T* y, int64_t ld_y, const T* dy, int64_t ld_dy,
                                               T* dx, int64_t ld_dx, int64_t rows, int64_t cols,
                                               cudaStream_t stream = nullptr) {
  return detail::run_softmax_backward(SoftmaxKind::kLogSoftmaxBackward, y, ld_y, dy, ld_dy, dx,
                                      ld_dx, rows, cols, stream);
}

/// log_softmax_backward over contiguous rows (every ld = cols).
template <typename T>
[[nodiscard]] cudaError_t log_softmax_backward(const T* y, const T* dy, T* dx, int64_t rows,
                                               int64_t cols, cudaStream_t stream = nullptr) {
  return log_softmax_backward(y, cols, dy, cols, dx, cols, rows, cols, stream);
}

}  // namespace kernelkit
