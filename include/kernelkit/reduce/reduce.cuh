// SPDX-License-Identifier: Apache-2.0
/// @file
/// Device-wide reduction: out[0] = op(init, in[0], ..., in[n - 1]), accumulated in
/// compute_t<Acc>. Kernels: detail/reduce_kernels.cuh.
///
/// How a call runs (plan_reduce): n fits one tile (kReduceBlock x kReduceUnroll packs of 16
/// bytes, 8192 floats): one block reduces it and writes out. Larger: `split` blocks (one per
/// tile up to one wave of resident blocks) each reduce an interleaved share of whole tiles
/// into a partial. 2..8 tiles (up to 65536 floats) on sm_90 builds: the blocks are one
/// thread-block cluster and the partials meet in block 0's shared memory (one launch, a
/// hardware barrier, no workspace). More tiles: the partials go to the workspace and are
/// combined in block order in the same launch, by block 0 after the grid barrier of a
/// cooperative launch (the barrier's counter is the driver's, not the workspace's). Where no
/// cooperative grid can be launched (the device has none, or MPS/MIG leaves fewer resident
/// blocks), a second kernel of one block combines them (on sm_90 a programmatic dependent
/// launch). Nothing is kept in the workspace between calls: a call is correct whatever the
/// workspace holds. Deterministic: the same input, pointer alignment, n, device and
/// workspace size give the same bits every run (the three combines add the same partials in
/// the same order, so a fallback gives the same bits too). No atomics on data.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
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
#include "kernelkit/core/types.cuh"
#include "kernelkit/reduce/detail/reduce_kernels.cuh"

namespace kernelkit {

/// Most blocks that read one row (and partials a row keeps in the workspace), whatever the
/// device: bounds reduce_workspace_bytes without knowing the device.
inline constexpr int kReduceMaxSplit = 2048;
/// Packs of one tile: one round of loads of a block (kReduceUnroll a thread). A block of a
/// split reads whole tiles (the shares interleave by tile), so a split has at most one block
/// per tile; one tile is reduced by one block that writes out directly.
inline constexpr int64_t kReduceTilePacks = int64_t{detail::kReduceBlock} * detail::kReduceUnroll;

/// The functor of a ReduceOp value.
template <ReduceOp O>
using reduce_functor_t =
    std::conditional_t<O == ReduceOp::kSum, Sum, std::conditional_t<O == ReduceOp::kMax, Max, Min>>;

/// op is one of the ReduceOp values (an unknown value is an argument error).
inline constexpr bool reduce_op_ok(ReduceOp op) {
  return op == ReduceOp::kSum || op == ReduceOp::kMax || op == ReduceOp::kMin;
}

}  // namespace kernelkit

namespace kernelkit::detail {
// Blocks of the split kernel resident at once on d (one wave), at most kReduceMaxSplit.
inline int64_t reduce_wave(const DeviceInfo& d) {
  const int per_sm = blocks_per_sm(d, kReduceBlock, kReduceRegs, 0);
  return std::clamp<int64_t>(int64_t{std::max(per_sm, 1)} * std::max(d.sm_count, 1), 1,
                             kReduceMaxSplit);
}

// Blocks per row for `rows` rows of `packs` packs each: one when a row fits one tile,
// otherwise as many as one wave of resident blocks gives each row (all rows at once), no
// more than one per tile (a block past the row's last tile would read nothing). `wave` is
// reduce_wave(d), or kReduceMaxSplit for the device-independent bound.
constexpr int64_t reduce_split_for(int64_t rows, int64_t packs, int64_t wave) {
  if (rows <= 0 || packs <= kReduceTilePacks) return 1;
  const int64_t by_wave = wave / rows;
  const int64_t by_work = ceil_div(packs, kReduceTilePacks);
  const int64_t split = by_wave < by_work ? by_wave : by_work;
  return split < 1 ? 1 : split;
}
}  // namespace kernelkit::detail

namespace kernelkit {

/// Bytes of workspace reduce() needs for n elements of T accumulated in Acc: one partial (of
/// compute_t<Acc>) per block the plan may use on any device. 0 for n <= 0 and for n within one
/// tile (kReduceTilePacks packs), which one block reads and writes out: no workspace, and the
/// pointer may be null.
template <typename T, typename Acc = compute_t<T>>
constexpr size_t reduce_workspace_bytes(int64_t n) {
  if (n <= 0) return 0;
  const int64_t packs = ceil_div<int64_t>(n, kMaxPackSize<T>);
  const int64_t split = detail::reduce_split_for(1, packs, kReduceMaxSplit);
  return split > 1 ? static_cast<size_t>(split) * sizeof(compute_t<Acc>) : 0;
}

/// What one call does; every decision is here.
struct ReducePlan {
  int pack = 1;    ///< elements of T per 16-byte load (16 / sizeof(T))
  int unroll = 1;  ///< packs a thread loads per tile, all issued before its adds
  int split = 1;   ///< blocks that read the input; 1: that block writes out
  /// How the split blocks' partials reach out (all four BlockCombine values): kNone: split
  /// == 1, no workspace used; kCluster (split <= kReduceMaxCluster and d.clusters()): the
  /// split blocks are one cluster, block 0 combines their partials from its shared memory;
  /// kGrid (d.cooperative_launch): one partial per block in the workspace, combined in block
  /// order by block 0 after the grid barrier, in the same (cooperative) launch; kSecondKernel
  /// (neither): the same partials, combined in the same order by a second kernel.
  BlockCombine combine = BlockCombine::kNone;
  LaunchShape shape;          ///< the reading kernel: split blocks of kReduceBlock threads
                              ///< (kCluster: shape.cluster = split; kGrid: shape.cooperative)
  LaunchShape combine_shape;  ///< kSecondKernel: one block; a programmatic dependent launch on
                              ///< sm_90+
};

/// One kernel configuration of reduce: the template arguments launch_reduce gives the split
/// kernel besides the types and the operator (an entry of kReduceConfigs).
struct ReduceConfig {
  int pack = 0;  ///< elements of T per 16-byte load: 8 (2-byte T), 4 (4-byte), 2 (8-byte)
  /// how the split blocks' partials reach out; kSecondKernel also launches the combine kernel
  BlockCombine combine = BlockCombine::kNone;
};

/// Same kernels.
constexpr bool operator==(const ReduceConfig& a, const ReduceConfig& b) {
  return a.pack == b.pack && a.combine == b.combine;
}

/// Every kernel configuration reduce launches, each pack's entries together (2-, 4-, then
/// 8-byte elements): one block writing out, a cluster, a cooperative grid, partials and a
/// combine kernel. plan_reduce returns one of them (reduce_config), launch_reduce instantiates
/// exactly these, and the plan tests check that every plan is one and every one is planned.
inline constexpr ReduceConfig kReduceConfigs[] = {
    {8, BlockCombine::kNone}, {8, BlockCombine::kCluster},
    {8, BlockCombine::kGrid}, {8, BlockCombine::kSecondKernel},
    {4, BlockCombine::kNone}, {4, BlockCombine::kCluster},
    {4, BlockCombine::kGrid}, {4, BlockCombine::kSecondKernel},
    {2, BlockCombine::kNone}, {2, BlockCombine::kCluster},
    {2, BlockCombine::kGrid}, {2, BlockCombine::kSecondKernel},
};

/// The entries of kReduceConfigs with this pack: [begin, end).
constexpr ConfigRange reduce_configs_of(int pack) {
  return config_range(kReduceConfigs, [pack](const ReduceConfig& c) { return c.pack == pack; });
}
static_assert(reduce_configs_of(8).end - reduce_configs_of(8).begin == 4 &&
                  reduce_configs_of(4).end - reduce_configs_of(4).begin == 4 &&
                  reduce_configs_of(2).end - reduce_configs_of(2).begin == 4,
              "each pack's entries together");

/// The configuration plan p launches. An entry of kReduceConfigs for every plan plan_reduce
/// makes for 2-, 4- and 8-byte elements; launch_reduce answers cudaErrorInvalidValue for any
/// other.
inline ReduceConfig reduce_config(const ReducePlan& p) {
  return {p.pack, p.combine};
}

/// Pure: the plan for n elements of in_bytes bytes accumulated in acc_bytes-byte values, with
/// workspace_bytes of workspace, on d.
inline ReducePlan plan_reduce(int64_t n, int in_bytes, int acc_bytes, size_t workspace_bytes,
                              const DeviceInfo& d) {
  ReducePlan p;
  p.pack = std::max(1, kMaxPackBytes / std::max(in_bytes, 1));
  p.unroll = detail::kReduceUnroll;
  p.shape.block = dim3(detail::kReduceBlock);
  const int64_t packs = ceil_div<int64_t>(std::max<int64_t>(n, 0), p.pack);
  const int64_t room = static_cast<int64_t>(std::min<size_t>(
      workspace_bytes / static_cast<size_t>(std::max(acc_bytes, 1)), kReduceMaxSplit));
  const int64_t split = std::min(detail::reduce_split_for(1, packs, detail::reduce_wave(d)), room);
  p.split = static_cast<int>(std::max<int64_t>(split, 1));
  p.shape.grid = dim3(static_cast<unsigned>(p.split));
  if (p.split == 1) {
    p.combine = BlockCombine::kNone;
  } else if (d.clusters() && p.split <= detail::kReduceMaxCluster) {
    // a few tiles: a launch and a combine as short as they get (the cluster barrier is the
    // SMs', no round trip through L2 and no cooperative launch); launch() checks that the
    // cluster can be resident and plan_and_launch re-plans without clusters if not
    p.combine = BlockCombine::kCluster;
    p.shape.cluster = dim3(static_cast<unsigned>(p.split));
  } else if (d.cooperative_launch) {
    // one launch: the split is at most one wave, so every block is resident at once (core
    // launch() checks it and plan_and_launch re-plans without cooperative grids if not)
    p.combine = BlockCombine::kGrid;
    p.shape.cooperative = true;
  } else {
    p.combine = BlockCombine::kSecondKernel;
    p.combine_shape.grid = dim3(1);
    p.combine_shape.block = dim3(detail::kReduceBlock);
    p.combine_shape.overlap_previous = d.cc_major >= 9 && d.code_arch >= 90;
  }
  return p;
}

/// The argument checks of reduce / sum / max / min (and of the reduce ladder's steps): n >= 0;
/// out non-null and aligned to Acc; for n > 0, in non-null and aligned to T, n * sizeof(T)
/// representable, a workspace of at least reduce_workspace_bytes<T, Acc>(n) bytes aligned to
/// 16 bytes where that is > 0 (else none is read, whatever is passed), and no overlap between
/// out, in and the workspace.
template <typename T, typename Acc>
bool reduce_args_ok(const T* in, int64_t n, const Acc* out, const void* workspace,
                    size_t workspace_bytes) {
  if (n < 0 || out == nullptr || !is_element_aligned(out)) return false;
  if (n == 0) return true;  // writes init; neither in nor the workspace is touched
  if (in == nullptr || !is_element_aligned(in)) return false;
  if (n > INT64_MAX / static_cast<int64_t>(sizeof(T))) return false;
  const size_t need = reduce_workspace_bytes<T, Acc>(n);
  if (need > 0 && (workspace == nullptr || !alignment_of(workspace).fits(16))) return false;
  if (workspace_bytes < need) return false;
  const int64_t in_span = n * static_cast<int64_t>(sizeof(T));
  const int64_t ws_span =
      need > 0 ? static_cast<int64_t>(std::min<size_t>(workspace_bytes, INT64_MAX)) : 0;
  return !ranges_overlap(out, sizeof(Acc), in, in_span) &&
         !ranges_overlap(out, sizeof(Acc), workspace, ws_span) &&
         !ranges_overlap(workspace, ws_span, in, in_span);
}

/// Launches plan p with the functor Op (arguments already checked): the one place the plan's
/// values become template arguments, those of its entry of kReduceConfigs (reduce_config; any
/// other plan, or one made for another element size, answers cudaErrorInvalidValue).
template <typename Op, typename T, typename Acc>
cudaError_t launch_reduce(const ReducePlan& p, const T* in, int64_t n, Acc* out, Acc init,
                          void* workspace, cudaStream_t stream) {
  using C = compute_t<Acc>;
  constexpr ConfigRange kEntries = reduce_configs_of(kMaxPackSize<T>);
  static_assert(kEntries.end > kEntries.begin, "T is a 2-, 4- or 8-byte type");
  auto* partials = static_cast<C*>(workspace);
  return dispatch_table<kReduceConfigs, kEntries.begin, kEntries.end>(
      reduce_config(p), [&](auto i) {
        constexpr ReduceConfig c = kReduceConfigs[decltype(i)::value];
        KERNELKIT_RETURN_IF_ERROR(
            launch(detail::reduce_split_kernel<c.pack, c.combine, T, C, Acc, Op>, p.shape, stream,
                   in, int64_t{1}, n, n, p.split, out, init, partials));
        if constexpr (c.combine == BlockCombine::kSecondKernel) {
          return launch(detail::reduce_combine_kernel<C, Acc, Op>, p.combine_shape, stream,
                        static_cast<const C*>(partials), int64_t{1}, p.split, out, init);
        }
        return cudaSuccess;
      });
}

}  // namespace kernelkit

namespace kernelkit::detail {
// Checks, plan and launch of a reduction with the functor Op.
template <typename Op, typename T, typename Acc>
cudaError_t reduce_with(const T* in, int64_t n, Acc* out, Acc init, void* workspace,
                        size_t workspace_bytes, cudaStream_t stream) {
  KERNELKIT_REQUIRE(reduce_args_ok(in, n, out, workspace, workspace_bytes));
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_reduce(n, sizeof(T), sizeof(compute_t<Acc>), workspace_bytes, dev);
      },
      [&](const ReducePlan& p) {
        return launch_reduce<Op>(p, in, n, out, init, workspace, stream);
      });
}
}  // namespace kernelkit::detail

namespace kernelkit {

/// out[0] = op(init, in[0] op in[1] op ... op in[n - 1]), accumulated in compute_t<Acc>.
/// Types: T in {float, double, __half, __nv_bfloat16, int32_t, int64_t} (half and bf16 are
/// converted to float); Acc any of those. Max and Min propagate NaN. n == 0 writes init.
/// in: aligned to sizeof(T) (any element offset). workspace: at least
/// reduce_workspace_bytes<T, Acc>(n) bytes of device memory, 16-byte aligned, any contents
/// (nothing is kept in it between calls; none, and null allowed, where that is 0); calls that may
/// run at the same time need separate workspaces. out must not overlap in or the workspace, nor the
/// workspace in. Asynchronous, no allocation, capturable in a CUDA graph. Returns
/// cudaErrorInvalidValue, before any launch and without writing, for n < 0, an unknown op, a null
/// or misaligned pointer where one is needed, a too-small workspace or an overlap.
/// @param in device pointer to n elements of T
/// @param n elements (>= 0)
/// @param out device pointer to one Acc
/// @param op kSum, kMax or kMin
/// @param init the first operand of the reduction (its identity for a plain reduction)
/// @param workspace device scratch of at least reduce_workspace_bytes<T, Acc>(n) bytes,
///        16-byte aligned (unused, may be null, when reduce_workspace_bytes<T, Acc>(n) is 0)
/// @param workspace_bytes bytes of workspace
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when the arguments are bad (see above); otherwise the error of
/// reading the device's facts or of the launch.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t reduce(const T* in, int64_t n, Acc* out, ReduceOp op, Acc init,
                                 void* workspace, size_t workspace_bytes,
                                 cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(reduce_op_ok(op));
  return dispatch<ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin>(op, [&](auto o) {
    return detail::reduce_with<reduce_functor_t<decltype(o)::value>>(in, n, out, init, workspace,
                                                                     workspace_bytes, stream);
  });
}

/// out[0] = sum of in[0..n) (0 for n == 0). Same contract as reduce().
template <typename T, typename Acc>
[[nodiscard]] cudaError_t sum(const T* in, int64_t n, Acc* out, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream = nullptr) {
  return detail::reduce_with<Sum>(in, n, out, identity<Sum, Acc>(), workspace, workspace_bytes,
                                  stream);
}

/// out[0] = max of in[0..n); NaN wins; -inf (lowest for integers) for n == 0.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t max(const T* in, int64_t n, Acc* out, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream = nullptr) {
  return detail::reduce_with<Max>(in, n, out, identity<Max, Acc>(), workspace, workspace_bytes,
                                  stream);
}

/// out[0] = min of in[0..n); NaN wins; +inf (highest for integers) for n == 0.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t min(const T* in, int64_t n, Acc* out, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream = nullptr) {
  return detail::reduce_with<Min>(in, n, out, identity<Min, Acc>(), workspace, workspace_bytes,
                                  stream);
}

}  // namespace kernelkit
