// SPDX-License-Identifier: Apache-2.0
/// @file
/// Softmax and log-softmax over the middle axis of an (outer, n, inner) row-major layout, and
/// their backward passes: y[o][k][i] = exp(x[o][k][i] - m) / sum over k' of exp(x[o][k'][i] - m),
/// m the max of column (o, i). Channel softmax of NCHW is (N, C, H x W); softmax over axis d of
/// any contiguous tensor is (prod of the dims before d, dim d, prod of the dims after d); inner
/// == 1 is the row softmax (softmax / softmax_backward over outer rows of n, softmax.cuh).
/// Plan: softmax_inner_plan.cuh; kernels: detail/softmax_inner_kernels.cuh. Here: the argument
/// checks, launch_softmax_inner and the public functions.
///
/// Types: float, __half, __nv_bfloat16, computed in float. Special values as the row softmax:
/// a column holding NaN, or only -inf, becomes NaN; -inf elements of other columns give 0.
/// Reads its input once and writes its output once where columns are short (n <= 16, 8
/// backward: in registers, straight from global memory) or a tile of whole columns fits shared
/// memory (n x 8 f32 / 16 2-byte columns within half an SM's shared memory: n up to ~3500 f32
/// on an H100, ~1700 backward); taller columns are read twice (streamed, n split over blocks
/// through the workspace when the columns are too few to fill the GPU). Deterministic (no
/// atomics; the order of operations depends only on the shape, the alignment, the device and
/// the workspace size). Asynchronous, no allocation, graph-capturable; sizes past 2^31 elements
/// work.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/softmax/detail/softmax_inner_kernels.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "kernelkit/softmax/softmax_inner_plan.cuh"

namespace kernelkit {

namespace detail {
// outer x n x inner elements of T within int64 bytes (sizes >= 0).
template <typename T>
bool softmax_inner_size_ok(int64_t outer, int64_t n, int64_t inner) {
  if (outer < 0 || n < 0 || inner < 0) return false;
  if (outer == 0 || n == 0 || inner == 0) return true;
  if (outer > INT64_MAX / n || outer * n > INT64_MAX / inner) return false;
  return outer * n * inner <= INT64_MAX / int64_t{sizeof(T)};
}
// A workspace: none, or a non-null 16-byte aligned pointer; not overlapping [p, p + bytes).
inline bool softmax_inner_workspace_ok(const void* ws, size_t ws_bytes, const void* p,
                                       int64_t bytes) {
  if (ws_bytes == 0) return true;
  if (ws == nullptr || !alignment_of(ws).fits(16)) return false;
  const int64_t span = static_cast<int64_t>(std::min<size_t>(ws_bytes, INT64_MAX));
  return !ranges_overlap(ws, span, p, bytes);
}
}  // namespace detail

/// The arguments softmax_inner / log_softmax_inner accept: sizes >= 0 with outer x n x inner x
/// sizeof(T) within int64; when not empty, in and out non-null and aligned to T, out either
/// exactly in (in place) or not overlapping it; a workspace (workspace_bytes > 0) non-null,
/// 16-byte aligned and overlapping neither.
template <typename T>
bool softmax_inner_args_ok(const T* in, const T* out, int64_t outer, int64_t n, int64_t inner,
                           const void* workspace = nullptr, size_t workspace_bytes = 0) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "softmax_inner supports float, __half and __nv_bfloat16");
  if (!detail::softmax_inner_size_ok<T>(outer, n, inner)) return false;
  if (outer == 0 || n == 0 || inner == 0) return true;
  if (in == nullptr || out == nullptr) return false;
  if (!is_element_aligned(in) || !is_element_aligned(out)) return false;
  const int64_t bytes = outer * n * inner * int64_t{sizeof(T)};
  if (partial_overlap(out, bytes, in, bytes)) return false;
  return detail::softmax_inner_workspace_ok(workspace, workspace_bytes, in, bytes) &&
         detail::softmax_inner_workspace_ok(workspace, workspace_bytes, out, bytes);
}

/// The arguments softmax_inner_backward / log_softmax_inner_backward accept: as
/// softmax_inner_args_ok for y, dy and dx; dx does not overlap y, and is either exactly dy (in
/// place) or does not overlap it (y and dy may overlap: both are only read).
template <typename T>
bool softmax_inner_backward_args_ok(const T* y, const T* dy, const T* dx, int64_t outer, int64_t n,
                                    int64_t inner, const void* workspace = nullptr,
                                    size_t workspace_bytes = 0) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "softmax_inner_backward supports float, __half and __nv_bfloat16");
  if (!detail::softmax_inner_size_ok<T>(outer, n, inner)) return false;
  if (outer == 0 || n == 0 || inner == 0) return true;
  if (y == nullptr || dy == nullptr || dx == nullptr) return false;
  if (!is_element_aligned(y) || !is_element_aligned(dy) || !is_element_aligned(dx)) return false;
  const int64_t bytes = outer * n * inner * int64_t{sizeof(T)};
  if (ranges_overlap(dx, bytes, y, bytes) || partial_overlap(dx, bytes, dy, bytes)) return false;
  return detail::softmax_inner_workspace_ok(workspace, workspace_bytes, y, bytes) &&
         detail::softmax_inner_workspace_ok(workspace, workspace_bytes, dy, bytes) &&
         detail::softmax_inner_workspace_ok(workspace, workspace_bytes, dx, bytes);
}

/// Bytes of workspace that let every call over (outer, n, inner) of T split n on any device
/// (forward or backward); 0 when no split can help. Less (or none) still runs.
template <typename T>
constexpr size_t softmax_inner_workspace_bytes(int64_t outer, int64_t n, int64_t inner) {
  return inner == 1 ? 0
                    : softmax_inner_workspace_bytes(outer, n, inner, static_cast<int>(sizeof(T)));
}

/// Launches plan p (made by plan_softmax_inner for these operands; inner >= 2) of kind: the one
/// place the plan's values become template arguments, those of its entry of
/// kSoftmaxInnerConfigs (any other plan answers cudaErrorInvalidValue). dy: backward only
/// (null forward); workspace: p.split partials per column when p.split > 1.
template <typename T>
cudaError_t launch_softmax_inner(const SoftmaxInnerPlan& p, SoftmaxKind kind, const T* x,
                                 const T* dy, T* out, int64_t outer, int64_t n, int64_t inner,
                                 void* workspace, cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = softmax_inner_configs_of(sizeof(T));
  const SoftmaxInnerConfig key = softmax_inner_config(p, sizeof(T));
  const SoftmaxInnerArgs<T> args{x,
                                 dy,
                                 out,
                                 outer,
                                 n,
                                 inner,
                                 p.slices,
                                 p.cols,
                                 p.tiles_per_outer,
                                 p.tiles,
                                 p.tile_elems,
                                 p.width,
                                 p.split,
                                 p.rows_per_split,
                                 static_cast<SoftmaxStats*>(workspace),
                                 p.run};
  return dispatch<SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax, SoftmaxKind::kSoftmaxBackward,
                  SoftmaxKind::kLogSoftmaxBackward>(kind, [&](auto k) {
    constexpr SoftmaxKind kKind = decltype(k)::value;
    return dispatch_table<kSoftmaxInnerConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
      constexpr SoftmaxInnerConfig c = kSoftmaxInnerConfigs[decltype(i)::value];
      if constexpr (c.path == SoftmaxInnerPath::kRegs) {
        // the entries this direction's plans take: packs of their rows' width, rows within
        // the direction's bound
        constexpr bool kBack = softmax_is_backward(kKind);
        if constexpr ((c.pack > 1 && c.pack != softmax_inner_regs_pack(sizeof(T), kBack, c.rows)) ||
                      c.rows >
                          (kBack ? kSoftmaxInnerRegsMaxRowsBackward : kSoftmaxInnerRegsMaxRows)) {
          return cudaErrorInvalidValue;
        } else {
          return launch(softmax_inner_regs_kernel<T, kKind, c.pack, c.rows>, p.shape, stream, args);
        }
      } else if constexpr (c.path == SoftmaxInnerPath::kTile) {
        const auto kernel = softmax_inner_tile_kernel<T, kKind, c.pack>;
        // (its shared-memory attributes; the plan counts its static slots:
        // softmax_inner_tile_static_smem)
        KERNELKIT_RETURN_IF_ERROR(set_shared_memory_kernel_once(kernel));
        return launch(kernel, p.shape, stream, args);
      } else {
        if (p.split > 1) {
          if (workspace == nullptr) return cudaErrorInvalidValue;
          KERNELKIT_RETURN_IF_ERROR(launch(softmax_inner_stream_kernel<T, kKind, c.pack, false>,
                                           p.stats_shape, stream, args));
        }
        return launch(softmax_inner_stream_kernel<T, kKind, c.pack, true>, p.shape, stream, args);
      }
    });
  });
}

namespace detail {
// Forward: checks, inner == 1 to the row softmax, plan for the current device, launch.
template <typename T>
cudaError_t run_softmax_inner(SoftmaxKind kind, const T* in, T* out, int64_t outer, int64_t n,
                              int64_t inner, void* workspace, size_t workspace_bytes,
                              cudaStream_t stream) {
  KERNELKIT_REQUIRE(softmax_inner_args_ok(in, out, outer, n, inner, workspace, workspace_bytes));
  if (outer == 0 || n == 0 || inner == 0) return cudaSuccess;
  if (inner == 1) return run_softmax_ld(kind, in, n, out, n, outer, n, stream);
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const SoftmaxInnerPlan p = plan_softmax_inner(
      outer, n, inner, sizeof(T), false, softmax_inner_layout(alignment_of(in), alignment_of(out)),
      workspace_bytes, d);
  return launch_softmax_inner(p, kind, in, static_cast<const T*>(nullptr), out, outer, n, inner,
                              workspace, stream);
}

// Backward: checks, inner == 1 to the row family, plan, launch.
template <typename T>
cudaError_t run_softmax_inner_backward(SoftmaxKind kind, const T* y, const T* dy, T* dx,
                                       int64_t outer, int64_t n, int64_t inner, void* workspace,
                                       size_t workspace_bytes, cudaStream_t stream) {
  KERNELKIT_REQUIRE(
      softmax_inner_backward_args_ok(y, dy, dx, outer, n, inner, workspace, workspace_bytes));
  if (outer == 0 || n == 0 || inner == 0) return cudaSuccess;
  if (inner == 1) return run_softmax_backward(kind, y, n, dy, n, dx, n, outer, n, stream);
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const Alignment a_dy = alignment_of(dy);
  const SoftmaxInnerPlan p = plan_softmax_inner(
      outer, n, inner, sizeof(T), true,
      softmax_inner_layout(alignment_of(y), alignment_of(dx), &a_dy), workspace_bytes, d);
  return launch_softmax_inner(p, kind, y, dy, dx, outer, n, inner, workspace, stream);
}
}  // namespace detail

/// y[o][k][i] = exp(x[o][k][i] - m) / sum over k' of exp(x[o][k'][i] - m) over the middle axis of
/// the outer x n x inner array `in` (see the top of this file), with workspace_bytes of workspace
/// (softmax_inner_workspace_bytes<T>(outer, n, inner) lets every shape split; less or none still
/// runs). in == out is allowed (in place); no other overlap. Returns cudaErrorInvalidValue
/// (before any launch, nothing written) when softmax_inner_args_ok fails; otherwise the error of
/// reading the device's facts or of the launch.
template <typename T>
[[nodiscard]] cudaError_t softmax_inner(const T* in, T* out, int64_t outer, int64_t n,
                                        int64_t inner, void* workspace, size_t workspace_bytes,
                                        cudaStream_t stream = nullptr) {
  return detail::run_softmax_inner(SoftmaxKind::kSoftmax, in, out, outer, n, inner, workspace,
                                   workspace_bytes, stream);
}

/// softmax_inner without a workspace (tall columns that would split are read unsplit).
template <typename T>
[[nodiscard]] cudaError_t softmax_inner(const T* in, T* out, int64_t outer, int64_t n,
                                        int64_t inner, cudaStream_t stream = nullptr) {
  return softmax_inner(in, out, outer, n, inner, nullptr, 0, stream);
}

/// y = (x - m) - log(sum over k' of exp(x[o][k'][i] - m)) over the middle axis; as softmax_inner.
template <typename T>
[[nodiscard]] cudaError_t log_softmax_inner(const T* in, T* out, int64_t outer, int64_t n,
                                            int64_t inner, void* workspace, size_t workspace_bytes,
                                            cudaStream_t stream = nullptr) {
  return detail::run_softmax_inner(SoftmaxKind::kLogSoftmax, in, out, outer, n, inner, workspace,
                                   workspace_bytes, stream);
}

/// log_softmax_inner without a workspace.
template <typename T>
[[nodiscard]] cudaError_t log_softmax_inner(const T* in, T* out, int64_t outer, int64_t n,
                                            int64_t inner, cudaStream_t stream = nullptr) {
  return log_softmax_inner(in, out, outer, n, inner, nullptr, 0, stream);
}

/// The gradient of softmax_inner: dx[o][k][i] = y[o][k][i] * (dy[o][k][i] - sum over k' of
/// y[o][k'][i] * dy[o][k'][i]), y the softmax_inner output. One read of y and dy and one write of
/// dx where a tile of whole columns fits shared memory (see the top of this file). dx == dy is
/// allowed (in place); dx must not overlap y; y and dy may overlap. Returns
/// cudaErrorInvalidValue (nothing written) when softmax_inner_backward_args_ok fails.
template <typename T>
[[nodiscard]] cudaError_t softmax_inner_backward(const T* y, const T* dy, T* dx, int64_t outer,
                                                 int64_t n, int64_t inner, void* workspace,
                                                 size_t workspace_bytes,
                                                 cudaStream_t stream = nullptr) {
  return detail::run_softmax_inner_backward(SoftmaxKind::kSoftmaxBackward, y, dy, dx, outer, n,
                                            inner, workspace, workspace_bytes, stream);
}

/// softmax_inner_backward without a workspace.
template <typename T>
[[nodiscard]] cudaError_t softmax_inner_backward(const T* y, const T* dy, T* dx, int64_t outer,
                                                 int64_t n, int64_t inner,
                                                 cudaStream_t stream = nullptr) {
  return softmax_inner_backward(y, dy, dx, outer, n, inner, nullptr, 0, stream);
}

/// The gradient of log_softmax_inner: dx = dy - exp(y) * (sum over k' of dy[o][k'][i]), y the
/// log_softmax_inner output. As softmax_inner_backward.
template <typename T>
[[nodiscard]] cudaError_t log_softmax_inner_backward(const T* y, const T* dy, T* dx, int64_t outer,
                                                     int64_t n, int64_t inner, void* workspace,
                                                     size_t workspace_bytes,
                                                     cudaStream_t stream = nullptr) {
  return detail::run_softmax_inner_backward(SoftmaxKind::kLogSoftmaxBackward, y, dy, dx, outer, n,
                                            inner, workspace, workspace_bytes, stream);
}

/// log_softmax_inner_backward without a workspace.
template <typename T>
[[nodiscard]] cudaError_t log_softmax_inner_backward(const T* y, const T* dy, T* dx, int64_t outer,
                                                     int64_t n, int64_t inner,
                                                     cudaStream_t stream = nullptr) {
  return log_softmax_inner_backward(y, dy, dx, outer, n, inner, nullptr, 0, stream);
}

}  // namespace kernelkit
