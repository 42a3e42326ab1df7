// SPDX-License-Identifier: Apache-2.0
/// @file
/// rms_norm, layer_norm and add_rms_norm over the last dimension of a row-major rows x cols
/// matrix. The plan (every decision) is in norm_plan.cuh, the kernels in
/// detail/norm_kernels.cuh; here: the argument checks, launch_norm (the plan's values become
/// template arguments) and the public functions.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/norm/detail/norm_kernels.cuh"
#include "kernelkit/norm/norm_plan.cuh"

namespace kernelkit {

/// The arguments rms_norm, layer_norm and add_rms_norm accept (a.residual / a.sum: add_rms_norm
/// only, null otherwise; a.bias, a.mean: layer_norm only): sizes >= 0; rows * cols *
/// sizeof(T) within int64; eps >= 0 and not NaN; when the matrix is not empty, x and y (and
/// residual, sum) non-null; every pointer aligned to its element type; weight, bias, mean and
/// rstd may be null (no scale, no shift, not saved). Overlaps: y may be exactly x (in
/// place); add_rms_norm's sum may be exactly x or exactly residual; nothing else written
/// overlaps anything read or written.
template <typename T, typename W>
bool norm_args_ok(NormKind kind, const detail::NormArgs<T, W>& a) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "the norm ops support float, __half and __nv_bfloat16");
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, T>,
                "the weight and bias are float or the type of x");
  if (a.rows < 0 || a.cols < 0 || !(a.eps >= 0.f)) return false;
  if (kind != NormKind::kAddRms && (a.residual != nullptr || a.sum != nullptr)) return false;
  if (kind != NormKind::kLayer && (a.bias != nullptr || a.mean != nullptr)) return false;
  if (a.rows == 0 || a.cols == 0) return true;
  if (a.x == nullptr || a.y == nullptr) return false;
  if (kind == NormKind::kAddRms && (a.residual == nullptr || a.sum == nullptr)) return false;
  if (a.rows > INT64_MAX / a.cols || a.rows * a.cols > INT64_MAX / int64_t{sizeof(T)}) return false;
  if (!is_element_aligned(a.x) || !is_element_aligned(a.y) || !is_element_aligned(a.residual) ||
      !is_element_aligned(a.sum) || !is_element_aligned(a.weight) || !is_element_aligned(a.bias) ||
      !is_element_aligned(a.mean) || !is_element_aligned(a.rstd))
    return false;
  const int64_t m = a.rows * a.cols * int64_t{sizeof(T)};
  const int64_t v = a.cols * int64_t{sizeof(W)};
  const int64_t s = a.rows * 4;
  // each output against every other output (any overlap) and every input (exact aliases
  // where allowed)
  struct Range {
    const void* p;
    int64_t bytes;
  };
  const Range outs[] = {
      {a.y, m}, {a.sum, a.sum ? m : 0}, {a.mean, a.mean ? s : 0}, {a.rstd, a.rstd ? s : 0}};
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j)
      if (ranges_overlap(outs[i].p, outs[i].bytes, outs[j].p, outs[j].bytes)) return false;
  const Range ins[] = {{a.x, m},
                       {a.residual, a.residual ? m : 0},
                       {a.weight, a.weight ? v : 0},
                       {a.bias, a.bias ? v : 0}};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const bool exact_ok = (i == 0 && j == 0) || (i == 1 && (j == 0 || j == 1));
      if (exact_ok ? partial_overlap(outs[i].p, outs[i].bytes, ins[j].p, ins[j].bytes)
                   : ranges_overlap(outs[i].p, outs[i].bytes, ins[j].p, ins[j].bytes))
        return false;
    }
  }
  return true;
}

/// Launches plan p (made by plan_norm for these operands) of a norm op: the one place the
/// plan's values become template arguments, those of its entry of kNormConfigs (any other
/// plan, or a kWarp or kTile plan whose lanes are not 1, 2, 4, ..., 32, answers
/// cudaErrorInvalidValue).
template <typename T, typename W>
cudaError_t launch_norm(const NormPlan& p, NormKind kind, const detail::NormArgs<T, W>& a,
                        cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = norm_configs_of(sizeof(T));
  const NormConfig key = norm_config(p, sizeof(T));
  return dispatch<NormKind::kRms, NormKind::kLayer, NormKind::kAddRms>(kind, [&](auto k) {
    constexpr NormKind kKind = decltype(k)::value;
    return dispatch_table<kNormConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
      constexpr NormConfig c = kNormConfigs[decltype(i)::value];
      if constexpr (c.path == NormPath::kTile) {
        const auto kernel = norm_tile_kernel<kKind, T, W, c.packs>;
        // (its shared-memory attributes; the plan reserves its static part: kNormTileStatic)
        KERNELKIT_RETURN_IF_ERROR(set_shared_memory_kernel_once(kernel));
        if (p.lanes < 1 || p.lanes > kWarpSize || !is_pow2(p.lanes) || p.tile_rows < 1 ||
            p.tile_rows % (c.block / p.lanes) != 0)
          return cudaErrorInvalidValue;
        return launch(kernel, p.shape, stream, a, p.lanes, p.tile_rows);
      } else if constexpr (c.path == NormPath::kSplit) {
        return launch(norm_split_kernel<kKind, T, W, c.pack, c.block>, p.shape, stream, a, p.split);
      } else if constexpr (c.path == NormPath::kTwoPass) {
        return launch(norm_two_pass_kernel<kKind, T, W, c.pack, c.block, c.phased>, p.shape, stream,
                      a);
      } else {
        constexpr int kThreads = c.path == NormPath::kWarp ? kWarpSize : c.block;
        // kWarp: a group of 1, 2, 4, ..., 32 lanes a row
        if (c.path == NormPath::kWarp && (p.lanes > kWarpSize || !is_pow2(p.lanes)))
          return cudaErrorInvalidValue;
        // 1 / cols as a parameter (constant bank): the 2-byte 32-element kBlock kernels held it
        // in a register spilled at their bound (sm_90)
        return launch(
            norm_registers_kernel<kKind, T, W, c.pack, kThreads, c.packs, c.block, c.phased>,
            p.shape, stream, a, p.lanes, 1.f / static_cast<float>(a.cols));
      }
    });
  });
}

namespace detail {
// Every norm op: check, plan for the current device, launch.
template <typename T, typename W>
cudaError_t run_norm(NormKind kind, const NormArgs<T, W>& a, cudaStream_t stream) {
  KERNELKIT_REQUIRE(norm_args_ok(kind, a));
  if (a.rows == 0 || a.cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  // where x's rows sit on the 16-byte grid (the kernels read and write the other operands at
  // x's columns wherever they sit), and whether every operand does (the aligned kernels)
  const Alignment x_at =
      common_alignment(alignment_of(a.x), Alignment(a.cols * int64_t{sizeof(T)}));
  const Alignment all_at =
      common_alignment(x_at, alignment_of(a.y), alignment_of(a.residual), alignment_of(a.sum),
                       alignment_of(a.weight), alignment_of(a.bias));
  const int wb = a.weight ? int{sizeof(W)} : 0, bb = a.bias ? int{sizeof(W)} : 0;
  const int64_t fewest = norm_fewest_bytes(kind, a.rows, a.cols, sizeof(T), wb, bb,
                                           a.mean != nullptr, a.rstd != nullptr);
  // (no clusters or cooperative grids yet: plan_and_launch launches the first plan)
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_norm(kind, a.rows, a.cols, sizeof(T), x_at, all_at, fewest, dev);
      },
      [&](const NormPlan& p) { return launch_norm(p, kind, a, stream); });
}
}  // namespace detail

/// RMSNorm of each row: y[r][c] = x[r][c] * rstd_r * weight[c], rstd_r = 1 / sqrt(mean_c
/// x[r][c]^2 + eps), computed in float. Types: x, y float, __half or __nv_bfloat16; weight
/// float or the type of x, or null (no scale). rstd (rows floats) saved when non-null.
/// y == x (in place) is allowed; no other overlap. Any alignment of the pointers to their
/// element; any width; rows * cols may pass 2^31. A NaN in a row makes the row NaN; an inf
/// makes rstd 0 (the row 0, the inf element NaN). rows == 0 or cols == 0 does nothing.
/// Returns cudaErrorInvalidValue (before any launch, nothing written) when norm_args_ok
/// fails: negative sizes, eps < 0 or NaN, a null x or y with a non-empty matrix, a pointer
/// misaligned for its type, rows * cols * sizeof(T) overflowing int64, an overlap other
/// than y == x. Reads x once and writes y once, except rows past a block's registers
/// (16384 float / 32768 2-byte columns; a few fewer where x or the row stride is off the
/// 16-byte grid), which x is read twice for. Rows at any alignment move in 16-byte accesses (a
/// row's partial head and tail element by element).
/// @param x device pointer to the rows x cols input, row-major
/// @param weight device pointer to cols scale factors, or null
/// @param y device pointer to the rows x cols output (may be x)
/// @param rstd device pointer to rows floats (1 / rms of each row), or null
/// @param rows rows (>= 0)
/// @param cols columns, the normalized dimension (>= 0)
/// @param eps added to the mean square (>= 0)
/// @param stream the stream the work is enqueued on
/// @return cudaSuccess once enqueued; cudaErrorInvalidValue as above; otherwise the error
/// of reading the device's facts or of the launch.
template <typename T, typename W>
[[nodiscard]] cudaError_t rms_norm(const T* x, const W* weight, T* y, float* rstd, int64_t rows,
                                   int64_t cols, float eps, cudaStream_t stream = nullptr) {
  const detail::NormArgs<T, W> a{x,       nullptr, weight, nullptr, y,  nullptr,
                                 nullptr, rstd,    rows,   cols,    eps};
  return detail::run_norm(NormKind::kRms, a, stream);
}

/// LayerNorm of each row: y[r][c] = (x[r][c] - mean_r) * rstd_r * weight[c] + bias[c], mean_r
/// and the biased variance var_r of the row, rstd_r = 1 / sqrt(var_r + eps), in float (the
/// variance as the mean of squared deviations from the mean, never E[x^2] - E[x]^2).
/// weight and bias: float or the type of x, each may be null (no scale / no shift). mean and
/// rstd (rows floats each) saved where non-null. An inf or NaN in a row makes the row NaN.
/// Same types, aliasing, errors and reads as rms_norm.
template <typename T, typename W>
[[nodiscard]] cudaError_t layer_norm(const T* x, const W* weight, const W* bias, T* y, float* mean,
                                     float* rstd, int64_t rows, int64_t cols, float eps,
                                     cudaStream_t stream = nullptr) {
  const detail::NormArgs<T, W> a{x, nullptr, weight, bias, y, nullptr, mean, rstd, rows, cols, eps};
  return detail::run_norm(NormKind::kLayer, a, stream);
}

/// Residual add + RMSNorm: sum_out = x + residual (rounded to T), y = rms_norm(sum_out,
/// weight) computed from the rounded sum (what a separate add then rms_norm gives). residual
/// and sum_out are required; sum_out may be exactly x or exactly residual (in place), y may
/// be exactly x; y and sum_out must not overlap. Same types, errors and special values as
/// rms_norm; reads x and residual once and writes y and sum_out once, except rows past a
/// block's registers (see rms_norm), whose sum is read back.
template <typename T, typename W>
[[nodiscard]] cudaError_t add_rms_norm(const T* x, const T* residual, const W* weight, T* y,
                                       T* sum_out, float* rstd, int64_t rows, int64_t cols,
                                       float eps, cudaStream_t stream = nullptr) {
  const detail::NormArgs<T, W> a{x,       residual, weight, nullptr, y,  sum_out,
                                 nullptr, rstd,     rows,   cols,    eps};
  return detail::run_norm(NormKind::kAddRms, a, stream);
}

/// The arguments a backward pass of kind `kind` accepts (a.mean, a.dbias: kLayer only; a.dsum:
/// kAddRms only; null otherwise): sizes >= 0; rows * cols * sizeof(T) within int64; dweight
/// only with a weight; when the problem is not empty, dy, x, rstd, dx (and kLayer's mean)
/// non-null; where dweight or dbias is wanted (rows >= 1), a workspace of at least
/// norm_backward_workspace_bytes(kind, rows, cols) bytes, non-null and 4-byte aligned; every
/// pointer aligned to its type; dx may be exactly dy or exactly dsum; nothing else written
/// overlaps anything read or written (the workspace included).
template <typename T, typename W>
bool norm_backward_args_ok(NormKind kind, const detail::NormBackwardArgs<T, W>& a,
                           const void* workspace, size_t workspace_bytes) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "the norm ops support float, __half and __nv_bfloat16");
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, T>,
                "the weight is float or the type of x");
  if (kind != NormKind::kRms && kind != NormKind::kLayer && kind != NormKind::kAddRms) return false;
  if (a.rows < 0 || a.cols < 0) return false;
  if (a.weight == nullptr && a.dweight != nullptr) return false;
  if (kind != NormKind::kLayer && (a.mean != nullptr || a.dbias != nullptr)) return false;
  if (kind != NormKind::kAddRms && a.dsum != nullptr) return false;
  if (a.cols == 0) return true;
  if (!is_element_aligned(a.dweight) || !is_element_aligned(a.dbias)) return false;
  const int64_t v = a.cols * int64_t{sizeof(W)};
  if (a.cols > INT64_MAX / int64_t{sizeof(W)}) return false;
  if (ranges_overlap(a.dweight, a.dweight ? v : 0, a.dbias, a.dbias ? v : 0)) return false;
  if (a.rows == 0) return true;  // dweight and dbias are written (zeros), nothing else
  if (a.dy == nullptr || a.x == nullptr || a.rstd == nullptr || a.dx == nullptr) return false;
  if (kind == NormKind::kLayer && a.mean == nullptr) return false;
  if (a.rows > INT64_MAX / a.cols || a.rows * a.cols > INT64_MAX / int64_t{sizeof(T)}) return false;
  if (!is_element_aligned(a.dy) || !is_element_aligned(a.x) || !is_element_aligned(a.weight) ||
      !is_element_aligned(a.mean) || !is_element_aligned(a.rstd) || !is_element_aligned(a.dsum) ||
      !is_element_aligned(a.dx))
    return false;
  const int64_t m = a.rows * a.cols * int64_t{sizeof(T)};
  const bool wanted = a.dweight != nullptr || a.dbias != nullptr;
  const int64_t ws =
      wanted ? static_cast<int64_t>(norm_backward_workspace_bytes(kind, a.rows, a.cols)) : 0;
  if (wanted && (workspace == nullptr || workspace_bytes < static_cast<size_t>(ws) ||
                 reinterpret_cast<std::uintptr_t>(workspace) % 4 != 0))
    return false;
  struct Range {
    const void* p;
    int64_t bytes;
  };
  const Range outs[] = {
      {a.dx, m}, {a.dweight, a.dweight ? v : 0}, {a.dbias, a.dbias ? v : 0}, {workspace, ws}};
  const Range ins[] = {{a.dy, m},
                       {a.x, m},
                       {a.dsum, a.dsum ? m : 0},
                       {a.weight, a.weight ? v : 0},
                       {a.mean, a.mean ? a.rows * 4 : 0},
                       {a.rstd, a.rows * 4}};
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j)
      if (ranges_overlap(outs[i].p, outs[i].bytes, outs[j].p, outs[j].bytes)) return false;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 6; ++j) {
      const bool exact_ok = i == 0 && (j == 0 || j == 2);  // dx over dy or dsum
      if (exact_ok ? partial_overlap(outs[i].p, outs[i].bytes, ins[j].p, ins[j].bytes)
                   : ranges_overlap(outs[i].p, outs[i].bytes, ins[j].p, ins[j].bytes))
        return false;
    }
  }
  return true;
}

/// rms_norm_backward's arguments: norm_backward_args_ok(NormKind::kRms, ...).
template <typename T, typename W>
bool rms_norm_backward_args_ok(const detail::NormBackwardArgs<T, W>& a, const void* workspace,
                               size_t workspace_bytes) {
  return norm_backward_args_ok(NormKind::kRms, a, workspace, workspace_bytes);
}

/// Launches plan p (made by plan_norm_backward for these operands) of the backward pass of
/// `kind`: the row kernel of its entry of kNormBackwardConfigs, then, when dweight or dbias is
/// wanted, the partials' column sums (p.gradients of them).
template <typename T, typename W>
cudaError_t launch_norm_backward(const NormBackwardPlan& p, NormKind kind,
                                 const detail::NormBackwardArgs<T, W>& a, cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = norm_backward_configs_of(sizeof(T));
  const NormBackwardConfig key = norm_backward_config(p, sizeof(T));
  KERNELKIT_RETURN_IF_ERROR(
      (dispatch<NormKind::kRms, NormKind::kLayer, NormKind::kAddRms>(kind, [&](auto k) {
        constexpr NormKind kKind = decltype(k)::value;
        return dispatch_table<kNormBackwardConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
          constexpr NormBackwardConfig c = kNormBackwardConfigs[decltype(i)::value];
          if constexpr (c.split) {
            return launch(norm_backward_split_kernel<kKind, T, W, c.pack, c.block>, p.shape, stream,
                          a, p.split);
          } else if constexpr (c.packs == 0) {
            return launch(norm_backward_kernel<kKind, T, W, c.pack, c.block>, p.shape, stream, a);
          } else {
            return launch(
                norm_backward_registers_kernel<kKind, T, W, c.pack, c.threads, c.packs, c.block>,
                p.shape, stream, a);
          }
        });
      })));
  // the wanted gradients first (grid.y = p.gradients of them)
  NormColumnSums<W> sums{{nullptr, nullptr}, {nullptr, nullptr}};
  int g = 0;
  if (a.dweight != nullptr) sums.partial[g] = a.partial_w, sums.out[g++] = a.dweight;
  if (a.dbias != nullptr) sums.partial[g] = a.partial_b, sums.out[g++] = a.dbias;
  if (g == 0) return cudaSuccess;
  return launch(norm_backward_reduce_kernel<W>, p.reduce, stream, sums, p.parts, a.cols);
}

namespace detail {
// Every backward pass: check, plan for the current device, launch. The partials: dweight's
// at the workspace's start, dbias's after them.
template <typename T, typename W>
cudaError_t run_norm_backward(NormKind kind, NormBackwardArgs<T, W> a, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  KERNELKIT_REQUIRE(norm_backward_args_ok(kind, a, workspace, workspace_bytes));
  if (a.cols == 0) return cudaSuccess;
  if (a.rows == 0) {
    // the empty sums
    const size_t v = static_cast<size_t>(a.cols) * sizeof(W);
    if (a.dweight != nullptr) KERNELKIT_RETURN_IF_ERROR(cudaMemsetAsync(a.dweight, 0, v, stream));
    if (a.dbias != nullptr) KERNELKIT_RETURN_IF_ERROR(cudaMemsetAsync(a.dbias, 0, v, stream));
    return cudaSuccess;
  }
  const int64_t part_floats = std::min(a.rows, norm_backward_parts_cap(a.cols)) * a.cols;
  float* ws = static_cast<float*>(workspace);
  a.partial_w = a.dweight != nullptr ? ws : nullptr;
  a.partial_b = a.dbias != nullptr ? ws + (a.dweight != nullptr ? part_floats : 0) : nullptr;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const Alignment x_at =
      common_alignment(alignment_of(a.dy), alignment_of(a.x), alignment_of(a.dx),
                       alignment_of(a.dsum), Alignment(a.cols * int64_t{sizeof(T)}));
  const Alignment w_at = alignment_of(a.weight);
  const int gradients = (a.dweight != nullptr ? 1 : 0) + (a.dbias != nullptr ? 1 : 0);
  const int64_t fewest =
      norm_backward_fewest_bytes(kind, a.rows, a.cols, sizeof(T), sizeof(W), a.weight != nullptr,
                                 gradients, a.dsum != nullptr);
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_norm_backward(a.rows, a.cols, sizeof(T), sizeof(W), x_at, w_at, gradients,
                                  fewest, dev);
      },
      [&](const NormBackwardPlan& p) { return launch_norm_backward(p, kind, a, stream); });
}
}  // namespace detail

/// The gradients of rms_norm (y = x * rstd * weight): dx = rstd * (g - x * rstd^2 * mean(g *
/// x)) with g = dy * weight, and dweight[c] = the sum over the rows of dy * x * rstd, from the
/// rstd rms_norm saved. Types as rms_norm (dweight of the weight's type). weight null: no scale
/// (dweight must be null too); dweight null: only dx. dweight needs a workspace of
/// rms_norm_backward_workspace_bytes(rows, cols) bytes (whatever it holds); its sums run in a
/// fixed order (the same bits run after run). dx may be exactly dy. rows == 0 writes dweight =
/// 0; cols == 0 does nothing. Reads dy and x once and writes dx once on rows a warp's or a
/// block's registers hold (8192 columns; 4096 when an operand or the row stride is off the
/// 16-byte grid), reads them twice past that (the second time from L2 where the rows in flight
/// fit it); the float partials (a row of cols a block) are written and read once more. Returns
/// cudaErrorInvalidValue, before any launch and with nothing written, when
/// rms_norm_backward_args_ok fails.
template <typename T, typename W>
[[nodiscard]] cudaError_t rms_norm_backward(const T* x, const T* dy, const W* weight,
                                            const float* rstd, T* dx, W* dweight, int64_t rows,
                                            int64_t cols, void* workspace, size_t workspace_bytes,
                                            cudaStream_t stream = nullptr) {
  const detail::NormBackwardArgs<T, W> a{dy,      x,       weight,  nullptr, rstd, nullptr, dx,
                                         dweight, nullptr, nullptr, nullptr, rows, cols};
  return detail::run_norm_backward(NormKind::kRms, a, workspace, workspace_bytes, stream);
}

/// The gradients of layer_norm (y = xhat * weight + bias, xhat = (x - mean) * rstd), from the
/// mean and rstd layer_norm saved: dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)) with g
/// = dy * weight; dweight[c] = the sum over the rows of dy * xhat; dbias[c] = the sum over the
/// rows of dy. Types as layer_norm (dweight and dbias of the weight's type). weight null: no
/// scale (g = dy; dweight must be null); dweight, dbias null: not wanted (dbias needs no bias
/// pointer: the bias does not enter dx). Where either gradient is wanted, a workspace of
/// layer_norm_backward_workspace_bytes(rows, cols) bytes (whatever it holds): one row of float
/// partials a block for each, summed in a fixed order (the same bits run after run). dx may be
/// exactly dy. rows == 0 writes dweight = dbias = 0; cols == 0 does nothing. Reads and writes
/// as rms_norm_backward. Returns cudaErrorInvalidValue, before any launch and with nothing
/// written, when norm_backward_args_ok fails (negative sizes, a null dy / x / mean / rstd / dx
/// with a non-empty problem, dweight without a weight, a too-small or misaligned workspace, a
/// pointer misaligned for its type, an overlap other than dx == dy, rows * cols * sizeof(T)
/// overflowing int64).
template <typename T, typename W>
[[nodiscard]] cudaError_t layer_norm_backward(const T* x, const T* dy, const W* weight,
                                              const float* mean, const float* rstd, T* dx,
                                              W* dweight, W* dbias, int64_t rows, int64_t cols,
                                              void* workspace, size_t workspace_bytes,
                                              cudaStream_t stream = nullptr) {
  const detail::NormBackwardArgs<T, W> a{dy,      x,     weight,  mean,    rstd, nullptr, dx,
                                         dweight, dbias, nullptr, nullptr, rows, cols};
  return detail::run_norm_backward(NormKind::kLayer, a, workspace, workspace_bytes, stream);
}

/// The gradients of add_rms_norm (sum_out = x + residual, y = rms_norm(sum_out, weight)), from
/// the sum_out and rstd it saved: dx = rms_norm_backward's dx of sum_out, plus dsum (the
/// gradient arriving on sum_out, e.g. from the next residual add; null: none), in one kernel.
/// dx is the gradient of both x and residual (d sum_out / dx = d sum_out / d residual = 1):
/// the caller uses the one tensor for both. dweight[c] = the sum over the rows of dy * sum_out
/// * rstd. Workspace: add_rms_norm_backward_workspace_bytes(rows, cols) where dweight is
/// wanted. dx may be exactly dy or exactly dsum. Same types, special cases, reads and errors as
/// rms_norm_backward (dsum read once more).
template <typename T, typename W>
[[nodiscard]] cudaError_t add_rms_norm_backward(const T* sum, const T* dy, const T* dsum,
                                                const W* weight, const float* rstd, T* dx,
                                                W* dweight, int64_t rows, int64_t cols,
                                                void* workspace, size_t workspace_bytes,
                                                cudaStream_t stream = nullptr) {
  const detail::NormBackwardArgs<T, W> a{dy,      sum,     weight,  nullptr, rstd, dsum, dx,
                                         dweight, nullptr, nullptr, nullptr, rows, cols};
  return detail::run_norm_backward(NormKind::kAddRms, a, workspace, workspace_bytes, stream);
}

}  // namespace kernelkit
