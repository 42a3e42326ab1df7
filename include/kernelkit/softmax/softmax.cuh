// SPDX-License-Identifier: Apache-2.0
/// @file
/// Softmax and log-softmax over the last dimension of a row-major rows x cols matrix.
/// The plan (every decision) is in softmax_plan.cuh, the kernels in detail/softmax_kernels.cuh;
/// here: the argument checks, launch_softmax (the plan's values become template arguments),
/// and the public functions.
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
#include "kernelkit/softmax/softmax_plan.cuh"

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

// Once per kernel and device: the dynamic shared memory a chunk kernel may ask for (all a
// block may have; its static shared memory is 0), the largest shared-memory carveout
// (every byte is read once: L1 is of no use) and, for the cluster kernels on devices that
// the plan gives clusters of 16 (DeviceInfo::max_cluster), the non-portable cluster size.
template <bool Cluster, typename Kernel>
cudaError_t softmax_chunk_setup(Kernel kernel) {
  return once_per_kernel(reinterpret_cast<const void*>(kernel), [&] {
    DeviceInfo d;
    KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
    KERNELKIT_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smem_per_block_optin));
    if (Cluster && d.max_cluster() > 8) {
      KERNELKIT_RETURN_IF_ERROR(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
    return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared);
  });
}

template <typename T, SoftmaxKind Kind, int Pack, int Block, BlockCombine Combine>
cudaError_t softmax_launch_chunk(const SoftmaxPlan& p, const T* in, T* out, int64_t rows,
                                 int64_t cols, cudaStream_t stream) {
  const auto kernel = softmax_chunk_kernel<T, Kind, Pack, Block, Combine>;
  KERNELKIT_RETURN_IF_ERROR(softmax_chunk_setup<Combine == BlockCombine::kCluster>(kernel));
  const SoftmaxChunkArgs<T> args{
      in, out, rows, cols, p.split, p.buffers, p.buffer_bytes, p.rows_per_round, p.rounds};
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

/// Launches plan p (made by plan_softmax for these pointers and sizes) of softmax or
/// log_softmax: the one place the plan's values become template arguments, those of its entry
/// of kSoftmaxConfigs (softmax_config; any other plan answers cudaErrorInvalidValue).
template <typename T>
cudaError_t launch_softmax(const SoftmaxPlan& p, SoftmaxKind kind, const T* in, T* out,
                           int64_t rows, int64_t cols, cudaStream_t stream) {
  using namespace detail;
  constexpr ConfigRange kEntries = softmax_configs_of(sizeof(T));
  const SoftmaxConfig key = softmax_config(p, sizeof(T));
  return dispatch<SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax>(kind, [&](auto k) {
    constexpr SoftmaxKind kKind = decltype(k)::value;
    return dispatch_table<kSoftmaxConfigs, kEntries.begin, kEntries.end>(key, [&](auto i) {
      constexpr SoftmaxConfig c = kSoftmaxConfigs[decltype(i)::value];
      if constexpr (c.path == SoftmaxPath::kTile) {
        // rows of at most 256 columns, tiles of ~8 KB
        const auto kernel = softmax_tile_kernel<T, kKind, c.group, c.packs>;
        KERNELKIT_RETURN_IF_ERROR(softmax_chunk_setup<false>(kernel));
        return launch(kernel, p.shape, stream, in, out, rows, static_cast<int>(cols),
                      static_cast<int>(p.rows_per_round), p.buffer_bytes);
      } else if constexpr (c.path == SoftmaxPath::kWarp) {
        // the warp path's rows are at most 1024 wide
        return launch(softmax_warp_kernel<T, kKind, c.pack, c.group, c.packs, c.on_grid>, p.shape,
                      stream, in, out, rows, static_cast<int>(cols));
      } else if constexpr (c.path == SoftmaxPath::kBlock && c.on_grid) {
        // the register shapes hold at most 16384 columns
        return launch(softmax_block_registers_kernel<T, kKind, c.block, c.packs>, p.shape, stream,
                      in, out, rows, static_cast<int>(cols));
      } else if constexpr (c.path == SoftmaxPath::kBlock) {
        return softmax_launch_chunk<T, kKind, c.pack, c.block, BlockCombine::kNone>(
            p, in, out, rows, cols, stream);
      } else if constexpr (c.path == SoftmaxPath::kCluster) {
        return softmax_launch_chunk<T, kKind, c.pack, c.block, BlockCombine::kCluster>(
            p, in, out, rows, cols, stream);
      } else if constexpr (c.path == SoftmaxPath::kGrid) {
        return softmax_launch_chunk<T, kKind, c.pack, c.block, BlockCombine::kGrid>(
            p, in, out, rows, cols, stream);
      } else {
        return launch(softmax_two_pass_kernel<T, kKind, c.pack, c.block>, p.shape, stream, in, out,
                      rows, cols);
      }
    });
  });
}

namespace detail {
// softmax and log_softmax: check, plan for the current device, launch.
template <typename T>
cudaError_t run_softmax(SoftmaxKind kind, const T* in, T* out, int64_t rows, int64_t cols,
                        cudaStream_t stream) {
  KERNELKIT_REQUIRE(softmax_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const Alignment in_at = alignment_of(in), out_at = alignment_of(out);
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_softmax(rows, cols, sizeof(T), in_at, out_at, dev);
      },
      [&](const SoftmaxPlan& p) { return launch_softmax(p, kind, in, out, rows, cols, stream); });
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
  return detail::run_softmax(SoftmaxKind::kSoftmax, in, out, rows, cols, stream);
}

/// out[r][c] = (in[r][c] - max_r) - log(sum_c' exp(in[r][c'] - max_r)) (not log(softmax)).
/// Same types, aliasing, special values and errors as softmax.
template <typename T>
[[nodiscard]] cudaError_t log_softmax(const T* in, T* out, int64_t rows, int64_t cols,
                                      cudaStream_t stream = nullptr) {
  return detail::run_softmax(SoftmaxKind::kLogSoftmax, in, out, rows, cols, stream);
}

}  // namespace kernelkit
