// SPDX-License-Identifier: Apache-2.0
/// @file
/// cross_entropy and cross_entropy_backward over the last dimension (the vocabulary) of a
/// row-major rows x vocab matrix of logits. The plans (every decision) are in
/// cross_entropy_plan.cuh, the kernels in detail/cross_entropy_kernels.cuh; here: the argument
/// checks, the launchers (the plan's values become template arguments) and the public
/// functions.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/loss/cross_entropy_plan.cuh"
#include "kernelkit/loss/detail/cross_entropy_kernels.cuh"

namespace kernelkit {

namespace detail {
template <typename T, typename Tgt>
constexpr void cross_entropy_check_types() {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "cross_entropy supports float, __half and __nv_bfloat16 logits");
  static_assert(std::is_same_v<Tgt, int32_t> || std::is_same_v<Tgt, int64_t>,
                "targets are int32_t or int64_t");
}
// The common size checks: sizes >= 0, a non-empty matrix has vocab >= 1 and ld >= vocab, its
// span in bytes within int64; label smoothing in [0, 1]; a known reduction.
inline bool cross_entropy_sizes_ok(int64_t rows, int64_t vocab, int64_t ld, int elem_bytes,
                                   float smoothing, LossReduction reduction) {
  if (rows < 0 || vocab < 0 || !(smoothing >= 0.f && smoothing <= 1.f)) return false;
  if (reduction != LossReduction::kNone && reduction != LossReduction::kSum &&
      reduction != LossReduction::kMean)
    return false;
  if (rows == 0) return true;
  if (vocab == 0 || ld < vocab) return false;
  if (rows - 1 > (INT64_MAX / elem_bytes - vocab) / ld) return false;
  return true;
}
}  // namespace detail

/// The arguments cross_entropy accepts: cross_entropy_sizes_ok (rows, vocab >= 0; rows >= 1
/// needs vocab >= 1 and ld >= vocab; the logits' span within int64 bytes; 0 <= smoothing <= 1;
/// a known reduction); loss non-null where written (kNone with rows >= 1; kSum, kMean always);
/// with rows >= 1, logits and target non-null and a workspace of at least
/// cross_entropy_workspace_bytes(rows, vocab) bytes, non-null and 16-byte aligned; every
/// pointer aligned to its type; nothing written (loss, lse, workspace) overlaps anything read
/// or written.
template <typename T, typename Tgt>
bool cross_entropy_args_ok(const detail::CrossEntropyArgs<T, Tgt>& a, size_t workspace_bytes) {
  detail::cross_entropy_check_types<T, Tgt>();
  if (!detail::cross_entropy_sizes_ok(a.rows, a.vocab, a.ld, sizeof(T), a.smoothing, a.reduction))
    return false;
  const bool none = a.reduction == LossReduction::kNone;
  if (a.loss == nullptr && (!none || a.rows > 0)) return false;
  if (!is_element_aligned(a.logits) || !is_element_aligned(a.target) ||
      !is_element_aligned(a.loss) || !is_element_aligned(a.lse))
    return false;
  if (a.rows == 0) return true;
  if (a.logits == nullptr || a.target == nullptr) return false;
  const size_t ws = cross_entropy_workspace_bytes(a.rows, a.vocab);
  if (a.workspace == nullptr || workspace_bytes < ws ||
      reinterpret_cast<std::uintptr_t>(a.workspace) % 16 != 0)
    return false;
  struct Range {
    const void* p;
    int64_t bytes;
  };
  const Range outs[] = {{a.loss, none ? a.rows * 4 : 4},
                        {a.lse, a.lse ? a.rows * 4 : 0},
                        {a.workspace, static_cast<int64_t>(ws)}};
  const Range ins[] = {{a.logits, matrix_span_bytes(a.rows, a.vocab, a.ld, sizeof(T))},
                       {a.target, a.rows * int64_t{sizeof(Tgt)}}};
  for (int i = 0; i < 3; ++i) {
    for (int j = i + 1; j < 3; ++j)
      if (ranges_overlap(outs[i].p, outs[i].bytes, outs[j].p, outs[j].bytes)) return false;
    for (const Range& in : ins)
      if (ranges_overlap(outs[i].p, outs[i].bytes, in.p, in.bytes)) return false;
  }
  return true;
}

/// The arguments cross_entropy_backward accepts: cross_entropy_sizes_ok for the logits (ld)
/// and dlogits (ld_dlogits); with rows >= 1, every pointer non-null; every pointer aligned to
/// its type; dlogits may be exactly logits with ld_dlogits == ld (in place); nothing else
/// written overlaps anything read.
template <typename T, typename Tgt>
bool cross_entropy_backward_args_ok(const detail::CrossEntropyBackwardArgs<T, Tgt>& a) {
  detail::cross_entropy_check_types<T, Tgt>();
  if (!detail::cross_entropy_sizes_ok(a.rows, a.vocab, a.ld, sizeof(T), a.smoothing, a.reduction) ||
      !detail::cross_entropy_sizes_ok(a.rows, a.vocab, a.ld_dlogits, sizeof(T), a.smoothing,
                                      a.reduction))
    return false;
  if (!is_element_aligned(a.logits) || !is_element_aligned(a.target) ||
      !is_element_aligned(a.lse) || !is_element_aligned(a.dloss) || !is_element_aligned(a.dlogits))
    return false;
  if (a.rows == 0) return true;
  if (a.logits == nullptr || a.target == nullptr || a.lse == nullptr || a.dloss == nullptr ||
      a.dlogits == nullptr)
    return false;
  const int64_t out = matrix_span_bytes(a.rows, a.vocab, a.ld_dlogits, sizeof(T));
  const int64_t in = matrix_span_bytes(a.rows, a.vocab, a.ld, sizeof(T));
  if (a.dlogits == a.logits ? a.ld_dlogits != a.ld : ranges_overlap(a.dlogits, out, a.logits, in))
    return false;
  const int64_t dloss = a.reduction == LossReduction::kNone ? a.rows * 4 : 4;
  return !ranges_overlap(a.dlogits, out, a.target, a.rows * int64_t{sizeof(Tgt)}) &&
         !ranges_overlap(a.dlogits, out, a.lse, a.rows * 4) &&
         !ranges_overlap(a.dlogits, out, a.dloss, dloss);
}

/// Launches plan p (made by plan_cross_entropy for these operands): its entry of
/// kCrossEntropyConfigs (any other plan answers cudaErrorInvalidValue), then, for
/// kSecondKernel, the finishing block.
template <typename T, typename Tgt>
cudaError_t launch_cross_entropy(const CrossEntropyPlan& p,
                                 const detail::CrossEntropyArgs<T, Tgt>& a, cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = cross_entropy_configs_of(false, sizeof(T));
  const CrossEntropyConfig key = cross_entropy_config(p, false, sizeof(T));
  KERNELKIT_RETURN_IF_ERROR(
      (dispatch_table<kCrossEntropyConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
        constexpr CrossEntropyConfig c = kCrossEntropyConfigs[decltype(i)::value];
        return launch(cross_entropy_kernel<T, Tgt, c.pack, c.threads, c.block>, p.shape, stream, a,
                      p.split, p.group, p.finish_warps, p.combine);
      })));
  if (p.combine != BlockCombine::kSecondKernel) return cudaSuccess;
  return launch(cross_entropy_finish_kernel<T, Tgt, kCrossEntropyFinishBlock>, p.finish, stream, a,
                p.split, p.group, p.finish_warps, static_cast<int>(p.shape.grid.x));
}

/// Launches plan p (made by plan_cross_entropy_backward for these operands): its entry of
/// kCrossEntropyConfigs.
template <typename T, typename Tgt>
cudaError_t launch_cross_entropy_backward(const CrossEntropyPlan& p,
                                          const detail::CrossEntropyBackwardArgs<T, Tgt>& a,
                                          cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = cross_entropy_configs_of(true, sizeof(T));
  const CrossEntropyConfig key = cross_entropy_config(p, true, sizeof(T));
  const CrossEntropyOffsets o = cross_entropy_backward_offsets(a.smoothing, a.vocab);
  return dispatch_table<kCrossEntropyConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
    constexpr CrossEntropyConfig c = kCrossEntropyConfigs[decltype(i)::value];
    return launch(cross_entropy_backward_kernel<T, Tgt, c.pack, c.threads, c.block>, p.shape,
                  stream, a, p.split, p.tasks, o.off, o.off_t);
  });
}

/// Cross-entropy of each row of logits against its target class, torch's
/// cross_entropy(logits, target, ignore_index=, label_smoothing=, reduction=) for a 2-D input:
/// with lse_r = log(sum_j exp(logits[r][j])), t = target[r], eps = label_smoothing,
///   loss_r = lse_r - (1 - eps) logits[r][t] - eps / vocab * sum_j logits[r][j],
/// 0 where t == ignore_index. reduction kNone writes loss[r] (rows floats); kSum one float, the
/// sum; kMean one float, the sum over the rows whose target is not ignore_index divided by
/// their count (NaN when there are none, as torch). The per-row lse (rows floats, for
/// cross_entropy_backward) is written where lse is non-null (ignored rows too). Computed in
/// float; deterministic (the same bits run after run on one device: no float atomics).
/// A target outside [0, vocab) that is not ignore_index (torch raises; a kernel cannot): the
/// row's loss is NaN (so are sum and mean); its lse is still written. A NaN or +inf logit
/// makes its row's lse and loss NaN; -inf logits are exp() = 0 (an -inf target logit gives
/// loss +inf; with eps > 0 any -inf logit does). rows == 0: kNone writes nothing, kSum writes
/// 0, kMean NaN. Types: logits float, __half or __nv_bfloat16, at any element alignment and
/// any row stride ld >= vocab; target int32_t or int64_t. Reads the logits once (16-byte
/// accesses; a row's partial head and tail element by element); rows x ld may pass 2^31.
/// Few rows over a wide vocabulary split each row over blocks of every SM (their partial
/// statistics in the workspace, combined in a fixed order).
/// Returns cudaErrorInvalidValue (before any launch, nothing written) when
/// cross_entropy_args_ok fails (vocab == 0 with rows >= 1 included).
/// @param logits device pointer to rows x vocab logits, row r at logits + r * ld
/// @param ld elements between rows (>= vocab)
/// @param target device pointer to rows class indices
/// @param rows rows (>= 0)
/// @param vocab classes (>= 1 when rows >= 1)
/// @param ignore_index the target value whose rows count for nothing (torch: -100)
/// @param label_smoothing in [0, 1]
/// @param reduction kNone, kSum or kMean
/// @param loss device pointer to rows floats (kNone) or one float
/// @param lse device pointer to rows floats, or null (not saved)
/// @param workspace device scratch of cross_entropy_workspace_bytes(rows, vocab) bytes,
/// 16-byte aligned (any contents; null only when that is 0)
/// @param workspace_bytes its size
/// @param stream the stream the work is enqueued on
/// @return cudaSuccess once enqueued; cudaErrorInvalidValue as above; otherwise the error of
/// reading the device's facts or of a launch.
template <typename T, typename Tgt>
[[nodiscard]] cudaError_t cross_entropy(const T* logits, int64_t ld, const Tgt* target,
                                        int64_t rows, int64_t vocab, int64_t ignore_index,
                                        float label_smoothing, LossReduction reduction, float* loss,
                                        float* lse, void* workspace, size_t workspace_bytes,
                                        cudaStream_t stream = nullptr) {
  using namespace detail;
  const CrossEntropyArgs<T, Tgt> a{logits,          ld,        target, rows, vocab,    ignore_index,
                                   label_smoothing, reduction, loss,   lse,  workspace};
  KERNELKIT_REQUIRE(cross_entropy_args_ok(a, workspace_bytes));
  if (rows == 0) {
    if (reduction == LossReduction::kNone) return cudaSuccess;
    // the reduction of nothing: one block writes 0 (sum) or NaN (mean)
    LaunchShape one;
    one.block = dim3(kCrossEntropyFinishBlock);
    return launch(cross_entropy_finish_kernel<T, Tgt, kCrossEntropyFinishBlock>, one, stream, a, 1,
                  1, 1, 0);
  }
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int64_t fewest =
      cross_entropy_fewest_bytes(rows, vocab, sizeof(T), sizeof(Tgt), reduction, lse != nullptr);
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_cross_entropy(rows, vocab, sizeof(T), reduction, fewest, dev);
      },
      [&](const CrossEntropyPlan& p) { return launch_cross_entropy(p, a, stream); });
}

/// cross_entropy over contiguous rows (ld = vocab).
template <typename T, typename Tgt>
[[nodiscard]] cudaError_t cross_entropy(const T* logits, const Tgt* target, int64_t rows,
                                        int64_t vocab, int64_t ignore_index, float label_smoothing,
                                        LossReduction reduction, float* loss, float* lse,
                                        void* workspace, size_t workspace_bytes,
                                        cudaStream_t stream = nullptr) {
  return cross_entropy(logits, vocab, target, rows, vocab, ignore_index, label_smoothing, reduction,
                       loss, lse, workspace, workspace_bytes, stream);
}

/// The gradient of cross_entropy with respect to the logits:
///   dlogits[r][j] = g_r (exp(logits[r][j] - lse[r]) - eps / vocab - (1 - eps) [j == t]),
/// g_r = dloss[r] (kNone), dloss[0] (kSum), dloss[0] / (rows whose target is not
/// ignore_index) (kMean; each block counts them: an integer sum, no workspace); 0 in rows
/// whose target is ignore_index, NaN in rows whose target is outside [0, vocab) otherwise.
/// lse: the forward's. dlogits may be exactly logits with ld_dlogits == ld (in place); no
/// other overlap. Reads the logits once and writes dlogits once (ignored rows are only
/// written): 16-byte accesses where row r of logits and of dlogits sit at the same offset on
/// the 16-byte grid for every r (in place always does), one element an access otherwise.
/// Same types, sizes and errors as cross_entropy; rows == 0 does nothing.
template <typename T, typename Tgt>
[[nodiscard]] cudaError_t cross_entropy_backward(const T* logits, int64_t ld, const Tgt* target,
                                                 const float* lse, const float* dloss, int64_t rows,
                                                 int64_t vocab, int64_t ignore_index,
                                                 float label_smoothing, LossReduction reduction,
                                                 T* dlogits, int64_t ld_dlogits,
                                                 cudaStream_t stream = nullptr) {
  using namespace detail;
  const CrossEntropyBackwardArgs<T, Tgt> a{logits,          ld,        target,  lse,
                                           dloss,           rows,      vocab,   ignore_index,
                                           label_smoothing, reduction, dlogits, ld_dlogits};
  KERNELKIT_REQUIRE(cross_entropy_backward_args_ok(a));
  if (rows == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int eb = sizeof(T);
  const bool alike = alignment_of(logits) == alignment_of(dlogits) &&
                     (rows == 1 || Alignment((ld - ld_dlogits) * eb) == Alignment());
  const int64_t fewest =
      cross_entropy_backward_fewest_bytes(rows, vocab, eb, sizeof(Tgt), reduction);
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_cross_entropy_backward(rows, vocab, eb, alike, sizeof(Tgt), reduction, fewest,
                                           dev);
      },
      [&](const CrossEntropyPlan& p) { return launch_cross_entropy_backward(p, a, stream); });
}

/// cross_entropy_backward over contiguous rows (ld = ld_dlogits = vocab).
template <typename T, typename Tgt>
[[nodiscard]] cudaError_t cross_entropy_backward(const T* logits, const Tgt* target,
                                                 const float* lse, const float* dloss, int64_t rows,
                                                 int64_t vocab, int64_t ignore_index,
                                                 float label_smoothing, LossReduction reduction,
                                                 T* dlogits, cudaStream_t stream = nullptr) {
  return cross_entropy_backward(logits, vocab, target, lse, dloss, rows, vocab, ignore_index,
                                label_smoothing, reduction, dlogits, vocab, stream);
}

}  // namespace kernelkit
