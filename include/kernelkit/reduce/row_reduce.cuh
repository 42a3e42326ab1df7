// Row-wise reduction of a rows x cols row-major matrix: out[r] = op(init, in[r][0], ...,
// in[r][cols - 1]).
//
// Types: T in {float, double, __half, __nv_bfloat16, int32_t, int64_t}; Acc is the output
// type, accumulated in compute_t<Acc> (half/bf16 outputs accumulate in float; a half or
// bf16 input with a float output accumulates in float). Max and Min propagate NaN.
//
// One dispatch on cols (see detail::choose_row_plan):
//   - short rows of whole packs (<= 32 packs, in 16-byte aligned, cols a multiple of the
//     pack): the matrix is read as one flat array of packs, a group of up to 32 lanes per
//     row with one pack per lane, kRowFlatSteps rows per group loaded before reducing;
//   - other short rows (<= 32 packs): a group of 1..16 lanes per row (Width template), up to
//     2 packs per lane, 2 rows per group at a time, all loads issued before any reduction;
//   - rows up to kWarpMaxCols packs: a warp per row;
//   - longer rows: a block per row, or, when there are too few rows to fill the device, a
//     thread-block cluster of up to 8 blocks per row reducing through distributed shared
//     memory (Hopper). Deterministic, no workspace, no atomics.
// Every path reads 16-byte packs with a scalar head and tail per row, so misaligned rows
// (cols not a multiple of the pack, an offset pointer) keep the wide loads.
//
// Preconditions: in and out device pointers, in not overlapping out. rows, cols >= 0,
// rows * cols representable in int64_t; null pointers only with nothing to read/write.
// rows == 0 does nothing; cols == 0 writes init to every row. Asynchronous on `stream`,
// no allocation, graph-capturable. Returns cudaErrorInvalidValue (before any launch) on bad
// arguments, otherwise the launch status.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/pack.cuh"
#include "../core/types.cuh"
#include "detail/row_reduce_kernels.cuh"

namespace kernelkit {

namespace detail {

inline constexpr int kRowBlock = 256;            // threads per block, every path
inline constexpr int kWarpMaxPacksPerLane = 16;  // warp per row up to 32 * 16 packs
inline constexpr int kMaxClusterSize = 8;        // portable cluster size limit

// The launch chosen for one call: flat-kernel group width (1..32 lanes per row; 0 = not
// the flat kernel), group width (1..32 lanes per row; 0 = block/cluster), cluster size
// (blocks per row) and grid.
struct RowPlan {
  int flat = 0;
  int width = 0;
  int cluster = 1;
  int grid = 1;
};

// Pure plan for a rows x cols reduction with P-element packs on a device with sm_count
// SMs of max_threads_per_sm threads. base_aligned: the input pointer is aligned to a whole
// pack. Host-tested.
inline RowPlan choose_row_plan(int64_t rows, int64_t cols, int pack, int sm_count,
                               int max_threads_per_sm, bool base_aligned = false) {
  RowPlan plan;
  const int64_t packs = ceil_div<int64_t>(cols, pack);  // packs per row (about)
  if (base_aligned && cols > 0 && cols % pack == 0 && packs <= kWarpSize) {
    // every row starts on a pack: the flat kernel, next power of two of packs lanes per row
    int width = 1;
    while (width < packs)
      width *= 2;
    plan.flat = width;
    const int64_t tiles = ceil_div<int64_t>(rows, int64_t{kRowBlock / width} * kRowFlatSteps);
    plan.grid =
        grid_size_for(tiles * kRowBlock, kRowBlock, sm_count, max_threads_per_sm, kDefaultWaves);
    return plan;
  }
  if (packs <= int64_t{kRowPrePacks} * (kWarpSize / 2)) {
    // a group of 1..16 lanes, kRowPrePacks packs each (rows of up to 32 packs)
    int width = 1;
    while (width < kWarpSize / 2 && width * kRowPrePacks < packs)
      width *= 2;
    plan.width = width;
  } else if (packs <= int64_t{kWarpSize} * kWarpMaxPacksPerLane) {
    plan.width = kWarpSize;
  }
  if (plan.width > 0) {
    // one thread per lane of each group; a narrow group takes kRowGroupRows rows at once
    const int64_t group_rows =
        plan.width == kWarpSize ? rows : ceil_div<int64_t>(rows, kRowGroupRows);
    plan.grid = grid_size_for(group_rows * plan.width, kRowBlock, sm_count, max_threads_per_sm,
                              kDefaultWaves);
    return plan;
  }
  // Block or cluster per row. Blocks resident at once on the device (at most):
  const int64_t resident = std::max<int64_t>(1, int64_t{sm_count} * max_threads_per_sm / kRowBlock);
  // Two blocks per SM (each with 256 x 4 x 16 B = 16 KB of loads in flight) saturate HBM;
  // with fewer rows than that, split each row over a cluster of blocks, keeping >= 4
  // packs per thread. Not all 8 resident blocks per SM: a cluster must fit in one GPC,
  // and small clusters over half the device schedule in one wave.
  const int64_t target = 2 * int64_t{sm_count};
  int64_t cluster = 1;
  if (rows < target) {
    const int64_t by_fill = ceil_div<int64_t>(target, rows);
    const int64_t by_work = std::max<int64_t>(1, packs / (int64_t{kRowBlock} * 4));
    cluster = std::min<int64_t>({by_fill, by_work, kMaxClusterSize});
  }
  plan.cluster = static_cast<int>(cluster);
  const int64_t clusters_cap = std::max<int64_t>(1, resident * kDefaultWaves / cluster);
  plan.grid = static_cast<int>(std::min<int64_t>(rows, clusters_cap) * cluster);
  return plan;
}

// The flat kernel with Width lanes per row and kSteps rows per group per tile, on `grid`
// blocks. Requires: rows >= 1, in aligned to P elements, cols a multiple of P, and
// 1 <= cols / P <= Width.
template <int Width, int kSteps, int P, typename T, typename Acc, typename Op>
cudaError_t launch_row_flat(const T* in, int64_t rows, int64_t cols, Acc* out, Acc init, int grid,
                            cudaStream_t stream) {
  row_reduce_flat_kernel<kRowBlock, Width, kSteps, P, T, Acc, Op>
      <<<grid, kRowBlock, 0, stream>>>(in, rows, static_cast<int>(cols / P), out, init);
  return cudaGetLastError();
}

template <int P, typename T, typename Acc, typename Op>
cudaError_t launch_row_reduce(const T* in, int64_t rows, int64_t cols, Acc* out, Acc init,
                              const RowPlan& plan, cudaStream_t stream) {
  constexpr int B = kRowBlock;
  constexpr int S = kRowFlatSteps;
  switch (plan.flat) {
    case 0:
      break;
    case 1:
      return launch_row_flat<1, S, P, T, Acc, Op>(in, rows, cols, out, init, plan.grid, stream);
    case 2:
      return launch_row_flat<2, S, P, T, Acc, Op>(in, rows, cols, out, init, plan.grid, stream);
    case 4:
      return launch_row_flat<4, S, P, T, Acc, Op>(in, rows, cols, out, init, plan.grid, stream);
    case 8:
      return launch_row_flat<8, S, P, T, Acc, Op>(in, rows, cols, out, init, plan.grid, stream);
    case 16:
      return launch_row_flat<16, S, P, T, Acc, Op>(in, rows, cols, out, init, plan.grid, stream);
    default:
      return launch_row_flat<32, S, P, T, Acc, Op>(in, rows, cols, out, init, plan.grid, stream);
  }
  switch (plan.width) {
    case 1:
      row_reduce_group_kernel<B, 1, P, T, Acc, Op>
          <<<plan.grid, B, 0, stream>>>(in, rows, cols, out, init);
      break;
    case 2:
      row_reduce_group_kernel<B, 2, P, T, Acc, Op>
          <<<plan.grid, B, 0, stream>>>(in, rows, cols, out, init);
      break;
    case 4:
      row_reduce_group_kernel<B, 4, P, T, Acc, Op>
          <<<plan.grid, B, 0, stream>>>(in, rows, cols, out, init);
      break;
    case 8:
      row_reduce_group_kernel<B, 8, P, T, Acc, Op>
          <<<plan.grid, B, 0, stream>>>(in, rows, cols, out, init);
      break;
    case 16:
      row_reduce_group_kernel<B, 16, P, T, Acc, Op>
          <<<plan.grid, B, 0, stream>>>(in, rows, cols, out, init);
      break;
    case 32:
      row_reduce_group_kernel<B, 32, P, T, Acc, Op>
          <<<plan.grid, B, 0, stream>>>(in, rows, cols, out, init);
      break;
    default: {
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(plan.grid);
      config.blockDim = dim3(B);
      config.stream = stream;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = plan.cluster;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      config.attrs = attr;
      config.numAttrs = plan.cluster > 1 ? 1 : 0;
      return cudaLaunchKernelEx(&config, row_reduce_cluster_kernel<B, P, T, Acc, Op>, in, rows,
                                cols, out, init, plan.cluster);
    }
  }
  return cudaGetLastError();
}

template <typename T, typename Acc, typename Op>
cudaError_t row_reduce_op(const T* in, int64_t rows, int64_t cols, Acc* out, Acc init,
                          cudaStream_t stream) {
  constexpr int P = kMaxPackSize<T>;
  DeviceInfo dev;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&dev));
  RowPlan plan =
      choose_row_plan(rows, cols, P, dev.sm_count, dev.max_threads_per_sm, pack_size_for(in) == P);
  if (plan.cluster > 1 && dev.cc_major < 9) plan = RowPlan{0, 0, 1, plan.grid / plan.cluster};
  return launch_row_reduce<P, T, Acc, Op>(in, rows, cols, out, init, plan, stream);
}

// The argument checks every entry point makes before any launch.
template <typename T, typename Acc>
bool row_reduce_args_ok(const T* in, int64_t rows, int64_t cols, const Acc* out) {
  return rows >= 0 && cols >= 0 &&
         (cols == 0 || rows <= std::numeric_limits<int64_t>::max() / cols) &&
         (rows == 0 || out != nullptr) && (rows == 0 || cols == 0 || in != nullptr);
}

// Checks, then launches Op (rows == 0: nothing to do).
template <typename Op, typename T, typename Acc>
cudaError_t row_reduce_checked(const T* in, int64_t rows, int64_t cols, Acc* out, Acc init,
                               cudaStream_t stream) {
  KERNELKIT_REQUIRE(row_reduce_args_ok(in, rows, cols, out));
  if (rows == 0) return cudaSuccess;
  return row_reduce_op<T, Acc, Op>(in, rows, cols, out, init, stream);
}
}  // namespace detail

// out[r] = op(init, reduction of row r) for r in [0, rows). See the top of this file.
// Instantiates all three operators; row_sum / row_max / row_min instantiate one.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_reduce(const T* in, int64_t rows, int64_t cols, Acc* out, ReduceOp op,
                                     Acc init, cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(op == ReduceOp::kSum || op == ReduceOp::kMax || op == ReduceOp::kMin);
  switch (op) {
    case ReduceOp::kSum:
      return detail::row_reduce_checked<Sum>(in, rows, cols, out, init, stream);
    case ReduceOp::kMax:
      return detail::row_reduce_checked<Max>(in, rows, cols, out, init, stream);
    default:
      return detail::row_reduce_checked<Min>(in, rows, cols, out, init, stream);
  }
}

// out[r] = sum of row r (init 0).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_sum(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  cudaStream_t stream = nullptr) {
  return detail::row_reduce_checked<Sum>(in, rows, cols, out, convert<Acc>(0.0), stream);
}

// out[r] = max of row r (NaN if the row holds one; -inf / lowest for an empty row).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_max(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  cudaStream_t stream = nullptr) {
  Acc init;
  if constexpr (std::is_integral_v<Acc>) {
    init = std::numeric_limits<Acc>::lowest();
  } else {
    init = convert<Acc>(-std::numeric_limits<double>::infinity());
  }
  return detail::row_reduce_checked<Max>(in, rows, cols, out, init, stream);
}

// out[r] = min of row r (NaN if the row holds one; +inf / max for an empty row).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t row_min(const T* in, int64_t rows, int64_t cols, Acc* out,
                                  cudaStream_t stream = nullptr) {
  Acc init;
  if constexpr (std::is_integral_v<Acc>) {
    init = std::numeric_limits<Acc>::max();
  } else {
    init = convert<Acc>(std::numeric_limits<double>::infinity());
  }
  return detail::row_reduce_checked<Min>(in, rows, cols, out, init, stream);
}

}  // namespace kernelkit
