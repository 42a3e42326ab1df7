// Kernels of the row-wise reduction (see ../row_reduce.cuh for the public launchers).
//
// Shapes: `in` is rows x cols, row-major, rows start at in + r * cols. Every kernel reads
// each row as [head | packs | tail]: `head` scalars up to the first address aligned to a
// pack of P elements, then whole packs (16-byte loads), then the scalar tail. Rows whose
// start is misaligned (cols not a multiple of P, or an offset base pointer) therefore still
// take the wide loads; only the base pointer's alignment to sizeof(T) is assumed.
//
// Accumulation is in C = compute_t<Acc> (float for half/bf16 outputs). The order of the
// operations depends only on (in, rows, cols) and the launch shape chosen for them, so the
// same call gives the same bits on every run.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>
#include <type_traits>

#include "../../block/block_reduce.cuh"
#include "../../core/launch.cuh"
#include "../../core/pack.cuh"
#include "../../core/types.cuh"
#include "../../warp/warp.cuh"

namespace kernelkit {
namespace detail {

// Identity element of Op in the compute type C: 0 for Sum, -inf / lowest for Max,
// +inf / max for Min. Max(-inf, NaN) is NaN, so NaN still propagates.
// Resident 256-thread blocks per SM the kernels are compiled for (__launch_bounds__
// minimum). ptxas left alone aims at 32 registers and spills; 4 blocks leave 64 registers
// (warp/block/cluster kernels need 56-64), 3 leave 80 for 8-byte types (64-bit values take
// register pairs). Narrow groups hold 2 rows x 2 packs of loads in flight and get one
// block less (48 KB of loads in flight per SM is still 3x what HBM needs).
template <typename T, typename Acc>
inline constexpr int kRowMinBlocks = (sizeof(T) == 8 || sizeof(compute_t<Acc>) == 8) ? 3 : 4;
template <typename T, typename Acc, int Width>
inline constexpr int kRowGroupMinBlocks =
    Width == 32 ? kRowMinBlocks<T, Acc> : kRowMinBlocks<T, Acc> - 1;

// Packs per lane a narrow group (Width < 32) covers a row with; the plan's group width is
// the next power of two of packs / kRowPrePacks.
inline constexpr int kRowPrePacks = 2;
// Rows a narrow group takes per iteration (loads of all of them issued before reducing).
inline constexpr int kRowGroupRows = 2;

// Largest / lowest value of C, +-inf for floating types. (std::numeric_limits members are
// host-only constexpr without --expt-relaxed-constexpr, which the library does not assume.)
template <typename C>
__device__ __forceinline__ C row_highest() {
  if constexpr (std::is_same_v<C, float>)
    return __int_as_float(0x7f800000);
  else if constexpr (std::is_same_v<C, double>)
    return __longlong_as_double(0x7ff0000000000000LL);
  else if constexpr (std::is_same_v<C, int32_t>)
    return INT32_MAX;
  else {
    static_assert(std::is_same_v<C, int64_t>, "row_reduce: unsupported accumulation type");
    return INT64_MAX;
  }
}
template <typename C>
__device__ __forceinline__ C row_lowest() {
  if constexpr (std::is_same_v<C, float>)
    return __int_as_float(0xff800000u);
  else if constexpr (std::is_same_v<C, double>)
    return __longlong_as_double(0xfff0000000000000ULL);
  else if constexpr (std::is_same_v<C, int32_t>)
    return INT32_MIN;
  else {
    static_assert(std::is_same_v<C, int64_t>, "row_reduce: unsupported accumulation type");
    return INT64_MIN;
  }
}

// Identity element of Op in the compute type C: 0 for Sum, -inf / lowest for Max,
// +inf / max for Min. Max(-inf, NaN) is NaN, so NaN still propagates.
template <typename Op, typename C>
__device__ __forceinline__ C row_identity() {
  if constexpr (std::is_same_v<Op, Sum>) {
    return C(0);
  } else if constexpr (std::is_same_v<Op, Max>) {
    return row_lowest<C>();
  } else {
    static_assert(std::is_same_v<Op, Min>, "row_reduce: Op must be Sum, Max or Min");
    return row_highest<C>();
  }
}

// Elements before the first P-aligned address at or after p (0 <= head < P), at most cols.
template <int P, typename T>
__device__ __forceinline__ int row_head(const T* p, int64_t cols) {
  const auto elem = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p) / sizeof(T));
  const int head = static_cast<int>((P - elem % P) % P);
  return head < cols ? head : static_cast<int>(cols);
}

// One thread's share of a row: lane `lane` of `lanes` threads reads the head scalars
// lane, lane + lanes, ..., packs lane, lane + lanes, ... and tail scalars the same way.
// Returns the thread's partial in C (the identity when it read nothing). kUnroll packs
// are loaded before any is combined, to keep kUnroll 16-byte loads in flight per thread.
// kPre packs the caller has already loaded: pre.p[q] is pack lane + q * lanes of the row
// (loaded only where that index is below the row's pack count).
template <typename T, int P, int kPre>
struct PrePacks {
  Pack<T, P> p[kPre > 0 ? kPre : 1];
};

template <int P, int kUnroll, int kPre = 0, typename Acc, typename T, typename Op>
__device__ __forceinline__ compute_t<Acc> row_partial(const T* row, int64_t cols, int lane,
                                                      int lanes, Op op,
                                                      const PrePacks<T, P, kPre>& pre = {}) {
  using C = compute_t<Acc>;
  static_assert(kUnroll >= 1, "row_partial: unroll at least 1");
  const int head = row_head<P>(row, cols);
  const int64_t packs = (cols - head) / P;
  const T* body = row + head;
  // acc[j] holds lane j of every pack this thread reads (P independent chains)
  C acc[P];
#pragma unroll
  for (int j = 0; j < P; ++j)
    acc[j] = row_identity<Op, C>();
  int64_t i = lane;
#pragma unroll
  for (int q = 0; q < kPre; ++q) {
    if (i < packs) {
#pragma unroll
      for (int j = 0; j < P; ++j)
        acc[j] = op(acc[j], convert<C>(pre.p[q].elem[j]));
    }
    i += lanes;
  }
  if constexpr (kUnroll > 1) {
    for (; i + (kUnroll - 1) * lanes < packs; i += kUnroll * lanes) {
      Pack<T, P> v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        v[u] = load_pack<P>(body, i + u * lanes);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int j = 0; j < P; ++j)
          acc[j] = op(acc[j], convert<C>(v[u].elem[j]));
      }
    }
  }
  for (; i < packs; i += lanes) {
    const Pack<T, P> v = load_pack<P>(body, i);
#pragma unroll
    for (int j = 0; j < P; ++j)
      acc[j] = op(acc[j], convert<C>(v.elem[j]));
  }
  // head and tail: at most P - 1 scalars each (more than `lanes` when lanes < P)
  const T* tail = body + packs * P;
  const int tail_count = static_cast<int>(cols - head - packs * P);  // < P
#pragma unroll 1
  for (int c = lane; c < head; c += lanes) {
    acc[0] = op(acc[0], convert<C>(row[c]));
  }
#pragma unroll 1
  for (int c = lane; c < tail_count; c += lanes) {
    acc[0] = op(acc[0], convert<C>(tail[c]));
  }
  // combine the P chains pairwise: a fixed tree
#pragma unroll
  for (int s = P / 2; s > 0; s /= 2) {
#pragma unroll
    for (int j = 0; j < s; ++j)
      acc[j] = op(acc[j], acc[j + s]);
  }
  return acc[0];
}

// Group kernel: each group of Width consecutive lanes (1, 2, ..., 32) reduces one row at a
// time, grid-striding over rows. For rows of up to a few thousand elements; Width is
// chosen so that Width * P roughly covers a row. Block: kBlock threads.
template <int kBlock, int Width, int P, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kBlock, (kRowGroupMinBlocks<T, Acc, Width>))
    row_reduce_group_kernel(const T* __restrict__ in, int64_t rows, int64_t cols,
                            Acc* __restrict__ out, Acc init) {
  static_assert(Width == 1 || Width == 2 || Width == 4 || Width == 8 || Width == 16 || Width == 32,
                "group width must be a power of two up to a warp");
  static_assert(kBlock % kWarpSize == 0, "whole warps only (the shuffles use the full mask)");
  using C = compute_t<Acc>;
  const Op op;
  constexpr int kGroups = kBlock / Width;
  // A warp per row keeps 4 packs in flight per lane inside the row. Narrower groups cover
  // a row with at most kPre packs per lane (the plan picks Width >= packs / kPre), so they
  // take kRows rows per iteration and load all those packs before reducing any: 4 x 16 B
  // in flight per thread.
  constexpr int kUnroll = Width == 32 ? 4 : 1;
  constexpr int kRows = Width == 32 ? 1 : kRowGroupRows;
  constexpr int kPre = Width == 32 ? 0 : kRowPrePacks;
  const int lane = threadIdx.x % Width;
  const int sub = (threadIdx.x % kWarpSize) / Width;  // the group's index in its warp
  const int64_t stride = int64_t{gridDim.x} * kGroups;
  // Every lane of a warp runs the same number of iterations (rows are taken a warp's
  // worth at a time), so the full-mask shuffles below are always convergent.
  const int64_t warp_first =
      int64_t{blockIdx.x} * kGroups + (threadIdx.x / kWarpSize) * (kWarpSize / Width);
  for (int64_t base = warp_first; base < rows; base += stride * kRows) {
    // row k of this iteration: base + k * stride + sub
    PrePacks<T, P, kPre> pre[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t r = base + k * stride + sub;
      if (kPre > 0 && r < rows) {
        const T* row = in + r * cols;
        const int head = row_head<P>(row, cols);
        const int64_t packs = (cols - head) / P;
#pragma unroll
        for (int q = 0; q < kPre; ++q) {
          if (lane + q * Width < packs) pre[k].p[q] = load_pack<P>(row + head, lane + q * Width);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t r = base + k * stride + sub;
      C v = row_identity<Op, C>();
      if (r < rows) {
        v = row_partial<P, kUnroll, kPre, Acc>(in + r * cols, cols, lane, Width, op, pre[k]);
      }
      if constexpr (Width > 1) v = warp_reduce<Width>(v, op);
      // lane 0 of the group holds the row's reduction
      if (lane == 0 && r < rows) out[r] = convert<Acc>(op(convert<C>(init), v));
    }
  }
}

// Steps (rows per group) a flat-kernel thread loads before reducing any: kRowFlatSteps
// 16-byte loads in flight per thread.
inline constexpr int kRowFlatSteps = 4;

// Flat kernel, for short rows that all start on a pack boundary (base pointer aligned to
// P elements, cols a multiple of P) and hold k <= Width packs, Width the next power of two
// of k. The matrix is then rows * k consecutive packs. A group of Width lanes owns a row,
// lane l reading pack l of it (lanes >= k read nothing). A block covers kBlock / Width
// consecutive rows per step and kSteps steps per tile; every thread issues its kSteps
// loads before reducing any. With k == Width, each step of a warp reads 32 / Width whole
// consecutive rows: 512 contiguous bytes per load instruction.
template <int kBlock, int Width, int kSteps, int P, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kBlock)
    row_reduce_flat_kernel(const T* __restrict__ in, int64_t rows, int k, Acc* __restrict__ out,
                           Acc init) {
  static_assert(Width == 1 || Width == 2 || Width == 4 || Width == 8 || Width == 16 || Width == 32,
                "group width must be a power of two up to a warp");
  static_assert(kBlock % kWarpSize == 0, "whole warps only (the shuffles use the full mask)");
  static_assert(kSteps >= 1, "at least one step per tile");
  using C = compute_t<Acc>;
  const Op op;
  constexpr int kStepRows = kBlock / Width;
  constexpr int kTileRows = kStepRows * kSteps;
  const int lane = threadIdx.x % Width;
  const int64_t tiles = ceil_div<int64_t>(rows, kTileRows);
  const int64_t last = rows * k - 1;  // the matrix's last pack
  // The tile loop is uniform over the block, so every lane reaches the full-mask shuffles.
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    // row of step s: first + s * kStepRows
    const int64_t first = tile * kTileRows + threadIdx.x / Width;
    // Unpredicated loads, so that all kSteps issue before the first reduction: a lane past
    // its row's packs, or in a row past the end, reads pack min(index, last) instead (a
    // pack of the matrix, fetched by a neighbour lane anyway); e[s] below drops it.
    const int64_t at = first * k + (lane < k ? lane : k - 1);
    Pack<T, P> v[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int64_t i = at + int64_t{s} * kStepRows * k;
      v[s] = load_pack<P>(in, i < last ? i : last);
    }
    // each step's pack as a fixed pairwise tree; e[s] is the identity where unused
    C e[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      C x[P];
#pragma unroll
      for (int j = 0; j < P; ++j)
        x[j] = convert<C>(v[s].elem[j]);
#pragma unroll
      for (int h = P / 2; h > 0; h /= 2) {
#pragma unroll
        for (int j = 0; j < h; ++j)
          x[j] = op(x[j], x[j + h]);
      }
      e[s] = lane < k && first + s * kStepRows < rows ? x[0] : row_identity<Op, C>();
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      C acc = e[s];
      if constexpr (Width > 1) acc = warp_reduce<Width>(acc, op);
      // lane 0 of the group holds the row's reduction
      const int64_t r = first + s * kStepRows;
      if (lane == 0 && r < rows) out[r] = convert<Acc>(op(convert<C>(init), acc));
    }
  }
}

// Cluster kernel: a cluster of csize blocks (1..8: the launch's cluster dimension, also
// passed as an argument; 1 = a block per row, launched without clusters) reduces one row
// at a time, grid-striding over rows by cluster. Block b of the cluster reads packs
// b * kBlock + t, stepping csize * kBlock. Each block reduces its share to one value in
// its shared slot; after a cluster barrier block 0 combines the slots through distributed
// shared memory in rank order (deterministic, no workspace, no atomics), and a second
// barrier keeps every slot alive until block 0 has read it.
template <int kBlock, int P, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kBlock, kRowMinBlocks<T, Acc>)
    row_reduce_cluster_kernel(const T* __restrict__ in, int64_t rows, int64_t cols,
                              Acc* __restrict__ out, Acc init, int csize) {
  using C = compute_t<Acc>;
  const Op op;
  // csize is the launch's cluster dimension (1: launched without clusters, a block per
  // row); in a 1-D cluster launch block b has rank b % csize.
  const int rank = static_cast<int>(blockIdx.x % csize);
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
  __shared__ C slot;
#endif
  const int64_t clusters = gridDim.x / csize;
  const int lanes = csize * kBlock;
  const int lane = rank * kBlock + static_cast<int>(threadIdx.x);
  for (int64_t r = blockIdx.x / csize; r < rows; r += clusters) {
    C v = row_partial<P, 4, 0, Acc>(in + r * cols, cols, lane, lanes, op);
    v = block_reduce<kBlock>(v, op);  // valid in thread 0
    if (csize == 1) {
      if (threadIdx.x == 0) out[r] = convert<Acc>(op(convert<C>(init), v));
      continue;
    }
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) slot = v;
    cluster.sync();  // every block's slot holds its partial of row r
    if (rank == 0 && threadIdx.x == 0) {
      C total = convert<C>(init);
      for (int b = 0; b < csize; ++b)
        total = op(total, *cluster.map_shared_rank(&slot, b));
      out[r] = convert<Acc>(total);
    }
    cluster.sync();  // block 0 has read every slot; they may be overwritten / freed
#endif
  }
}

}  // namespace detail
}  // namespace kernelkit
