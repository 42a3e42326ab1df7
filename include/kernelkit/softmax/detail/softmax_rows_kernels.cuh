// SPDX-License-Identifier: Apache-2.0
// Row-op kernels (internal) of the backward softmax family: softmax_backward /
// log_softmax_backward (contiguous or strided rows; the forward, strided or not, is
// detail/softmax_kernels.cuh's). One row op (SoftmaxRowOp, by SoftmaxKind) says what a row
// reduces and what each element becomes; two kernels walk the rows with it:
//  - softmax_rows_warp_kernel: a row in the registers of a group of Group lanes (Packs packs a
//    lane, at most 16 floats of each input);
//  - softmax_rows_block_kernel: one block per row (or a cluster per row: few wide rows); its
//    first `cached` packs (a block's) kept in shared memory between the reduction pass and the
//    writing pass (one read), the rest read twice.
// Row r of every operand sits at the same offset within its pack (the plan gives packs only
// then: plan_softmax_rows), so a pack index means the same columns in each: a row is a partial
// head, whole packs (one 16-byte access each) and a partial tail, the partial ones moved element
// by element. softmax_rows_plan.cuh plans; launch_softmax_rows launches.
//
// Numerics: s = sum over the row of y * dy (softmax) or of dy (log_softmax) in float; dx = y *
// (dy - s), or dy - exp(y) * s.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernelkit/core/cluster.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/softmax/detail/softmax_kernels.cuh"
#include "kernelkit/softmax/softmax_rows_plan.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::detail {

// One call's operands: x is the softmax (or log_softmax) output y, dy the upstream gradient,
// out the output (dx). Leading dimensions in elements; `cached`: the block kernel's packs of a
// row kept in shared memory.
template <typename T>
struct SoftmaxRowsArgs {
  const T* x;
  int64_t ld_x;
  const T* dy;
  int64_t ld_dy;
  T* out;
  int64_t ld_out;
  int64_t rows, cols;
  int64_t cached;  // the block kernel's packs of a row kept in shared memory, a block
  int split;       // the block kernel's blocks a row (a cluster; 1: one block a row)
};

// The row op of a backward kind: s = sum of y * dy (softmax) or of dy (log_softmax), then
// y * (dy - s) or dy - exp(y) * s. Elements past the row are 0 (they add nothing).
template <SoftmaxKind Kind, bool Fast>
struct SoftmaxRowOp {
  static_assert(softmax_is_backward(Kind), "the row family runs the backward kinds");
  static constexpr bool kLog = Kind == SoftmaxKind::kLogSoftmaxBackward;
  struct Acc {
    float s;
  };
  struct Coef {
    float s;
  };
  __device__ __forceinline__ static float pad() { return 0.f; }
  __device__ __forceinline__ static Acc empty() { return {0.f}; }
  template <int K>
  __device__ __forceinline__ static void add(Acc& a, const float (&y)[K], const float (&dy)[K]) {
    float t[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
      t[k] = kLog ? dy[k] : y[k] * dy[k];
      // the pack's terms pairwise, then into the running sum
#pragma unroll
    for (int w = 1; w < K; w *= 2)
#pragma unroll
      for (int k = 0; k + w < K; k += 2 * w)
        t[k] += t[k + w];
    a.s += t[0];
  }
  template <int Width>
  __device__ __forceinline__ static Acc all_reduce(Acc a) {
    return {warp_all_reduce<Width>(a.s, Sum{})};
  }
  __device__ __forceinline__ static Coef finish(const Acc& a) {
    return {a.s};
  }
  __device__ __forceinline__ static float out(float y, float dy, const Coef& k) {
    if constexpr (kLog) {
      return dy - softmax_exp<Fast>(y) * k.s;
    } else {
      return y * (dy - k.s);
    }
  }
};

// The block's accumulator, in every thread, after one barrier (the scheme of
// softmax_stats_block_all_reduce: two slot sets alternating by `parity`).
template <typename Op, int Block>
__device__ __forceinline__ typename Op::Acc softmax_rows_block_all_reduce(typename Op::Acc v,
                                                                          typename Op::Acc* slots,
                                                                          int& parity) {
  constexpr int kWarps = Block / kWarpSize;
  v = Op::template all_reduce<kWarpSize>(v);
  if constexpr (kWarps == 1) {
    return v;
  } else {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    typename Op::Acc* set = slots + parity * kWarps;
    parity ^= 1;
    if (lane == 0) set[warp] = v;
    __syncthreads();
    return Op::template all_reduce<kWarps>(set[lane % kWarps]);
  }
}

template <int Pack, typename T>
__device__ __forceinline__ void softmax_rows_to_float(const PackOf<T, Pack>& raw,
                                                      float (&x)[Pack]) {
#pragma unroll
  for (int j = 0; j < Pack; ++j)
    x[j] = convert<float>(raw.elem[j]);
}

// Writes y to the pack of a row starting at column c (only the columns inside the row; core
// store_row_pack).
template <int Pack, typename T>
__device__ __forceinline__ void softmax_rows_store(T* row, int64_t c, int64_t n,
                                                   const float (&y)[Pack]) {
  PackOf<T, Pack> raw;
#pragma unroll
  for (int j = 0; j < Pack; ++j)
    raw.elem[j] = convert<T>(y[j]);
  store_row_pack<Pack>(row, c, n, raw);
}

// ---------------------------------------------------------------------------------------
// Rows in registers (cols <= 32 x 16 elements). Groups of Group lanes own a row each; lane l
// holds packs p * Group + l (p < Packs) of each input (packs of the row's aligned array: the
// first and last may be partial, moved element by element). The warp's rows of one iteration are
// base + group; the loop is uniform over the warp (every lane runs every shuffle); a group
// past the last row computes on padding and stores nothing. In place (out == dy or out == x
// with the same ld): every element is read by the lane that writes it, before the write.
template <typename T, SoftmaxKind Kind, int Pack, int Group, int Packs>
__global__ void __launch_bounds__(kSoftmaxWarpBlock, softmax_rows_warp_min_blocks(kCompiledArch))
    softmax_rows_warp_kernel(SoftmaxRowsArgs<T> a) {
  static_assert(Group >= 1 && Group <= kWarpSize && (Group & (Group - 1)) == 0,
                "a row group is 1, 2, 4, 8, 16 or 32 lanes of one warp");
  static_assert(Pack * Packs <= kSoftmaxRowsLaneFloats, "a lane holds at most 16 floats an input");
  using Op = SoftmaxRowOp<Kind, kSoftmaxFast<T>>;
  constexpr int kGroups = kWarpSize / Group;
  constexpr int kWarps = kSoftmaxWarpBlock / kWarpSize;
  const T pad = convert<T>(Op::pad());
  const int lane = threadIdx.x % Group;
  const int group = (threadIdx.x % kWarpSize) / Group;
  const int64_t warp = int64_t{blockIdx.x} * kWarps + threadIdx.x / kWarpSize;
  const int64_t step = int64_t{gridDim.x} * kWarps * kGroups;
  for (int64_t base = warp * kGroups; base < a.rows; base += step) {
    const int64_t row = base + group;
    const bool live = row < a.rows;
    const int64_t n = live ? a.cols : 0;
    const int64_t r = live ? row : 0;
    const T* xr = a.x + r * a.ld_x;
    // pack v of the row's aligned array holds columns [v * Pack - h, ...)
    const int h = pack_phase<Pack>(xr);
    float x[Packs][Pack], d[Packs][Pack];
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int64_t c = int64_t{p * Group + lane} * Pack - h;
      softmax_rows_to_float<Pack>(load_row_pack<Pack>(xr, c, n, pad), x[p]);
      softmax_rows_to_float<Pack>(load_row_pack<Pack>(a.dy + r * a.ld_dy, c, n, pad), d[p]);
    }
    typename Op::Acc acc = Op::empty();
#pragma unroll
    for (int p = 0; p < Packs; ++p)
      Op::add(acc, x[p], d[p]);
    // every lane of the group holds the row's accumulator
    const typename Op::Coef k = Op::finish(Op::template all_reduce<Group>(acc));
    if (!live) continue;
    T* dst = a.out + row * a.ld_out;
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      float y[Pack];
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        y[j] = Op::out(x[p][j], d[p][j], k);
      softmax_rows_store<Pack>(dst, int64_t{p * Group + lane} * Pack - h, n, y);
    }
  }
}

// ---------------------------------------------------------------------------------------
// One block per row, or (Cluster) a cluster of a.split blocks per row (few wide rows: sm_90
// builds only, see the plan), any width. A row: a partial head (the columns before its first
// pack boundary), whole packs, a partial tail. A block's part: whole packs [lo, hi) (the row's,
// or the rank's share), plus the head (thread 0 of rank 0) and the tail (thread Block - 1 of the
// last rank), moved element by element. Pass 1: thread t reads whole packs lo + t, + Block, ...
// of each input, softmax_rows_batch(Pack, Cluster) of them in flight (predicated
// 16-byte loads, all issued before any is used), accumulates, and keeps the first `cached` of the
// block's whole packs in dynamic shared memory (x's, then dy's, after the reduction's slots). One
// block reduction (and, Cluster, the blocks' accumulators combined through distributed shared
// memory, in rank order: the same bits in every block); pass 2: the same thread takes the same
// packs from shared memory (or, past `cached`, and the head and tail, from global memory again) and
// writes. A thread reads back only what it wrote, so the cache needs no barrier; in place, each
// element is read before the same thread writes it. Rows: cluster (or block) blockIdx.x /
// split, + gridDim.x / split, ...
template <typename T, SoftmaxKind Kind, int Pack, int Block, bool Cluster>
__global__ void __launch_bounds__(Block, kSoftmaxWideBlock / Block)
    softmax_rows_block_kernel(SoftmaxRowsArgs<T> a) {
  static_assert(Block % kWarpSize == 0 && Block <= kSoftmaxWideBlock, "32..1024 threads");
  using Op = SoftmaxRowOp<Kind, kSoftmaxFast<T>>;
  using Acc = typename Op::Acc;
  using Raw = PackOf<T, Pack>;
  constexpr int kBatch = softmax_rows_batch(Pack, Cluster);
  static_assert(sizeof(Acc) <= 16, "a slot of the reduction is at most 16 bytes");
  // dynamic shared memory: the reduction's slots (and the cluster's two), then the cache (no
  // static shared memory: the chunk kernels' setup lets the dynamic part take all a block may
  // have)
  extern __shared__ __align__(16) unsigned char softmax_rows_smem[];
  auto* slots = reinterpret_cast<Acc*>(softmax_rows_smem);
  [[maybe_unused]] Acc* part = slots + 2 * (Block / kWarpSize);
  Raw* cx = reinterpret_cast<Raw*>(softmax_rows_smem + softmax_rows_scratch_bytes(Block));
  Raw* cd = cx + a.cached;
  const T pad = convert<T>(Op::pad());
  Raw pads;
#pragma unroll
  for (int j = 0; j < Pack; ++j)
    pads.elem[j] = pad;
  const int split = Cluster ? a.split : 1;
  int rank = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Cluster) rank = cluster_rank();
#endif
  int parity = 0;
  [[maybe_unused]] int row_parity = 0;  // the cluster's slot pair a row writes
  for (int64_t row = blockIdx.x / split; row < a.rows; row += gridDim.x / split) {
    const T* xr = a.x + row * a.ld_x;
    const T* dr = a.dy + row * a.ld_dy;
    T* dst = a.out + row * a.ld_out;
    // columns [0, first) are the partial head, whole packs start at `first`
    const int h = pack_phase<Pack>(xr);
    const int64_t first = h == 0 ? 0 : Pack - h;
    const int64_t whole = a.cols > first ? (a.cols - first) / Pack : 0;
    const int64_t end = first + whole * Pack;  // the partial tail: [end, cols)
    const bool head = first > 0 && rank == 0 && threadIdx.x == 0;
    const bool tail =
        end < a.cols && first < a.cols && rank == split - 1 && threadIdx.x == Block - 1;
    const int64_t lo = whole * rank / split, hi = whole * (rank + 1) / split;
    const T* xw = xr + first;  // whole pack v: xw[v * Pack, ...), on a pack boundary
    const T* dw = dr + first;
    T* ow = dst + first;
    Acc acc = Op::empty();
    const auto add = [&](const Raw& rx, const Raw& rd) {
      float x[Pack], d[Pack];
      softmax_rows_to_float<Pack>(rx, x);
      softmax_rows_to_float<Pack>(rd, d);
      Op::add(acc, x, d);
    };
    // the partial packs (pass 1 and 2 read them from global memory)
    const auto load_partial = [&](int64_t c, Raw& rx, Raw& rd) {
      rx = load_row_pack<Pack>(xr, c, a.cols, pad);
      rd = load_row_pack<Pack>(dr, c, a.cols, pad);
    };
    for (int64_t v0 = lo + threadIdx.x; v0 < hi; v0 += int64_t{kBatch} * Block) {
      Raw rx[kBatch], rd[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t v = v0 + int64_t{u} * Block;
        rx[u] = v < hi ? load_pack<Pack>(xw, v) : pads;
        rd[u] = v < hi ? load_pack<Pack>(dw, v) : pads;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t v = v0 + int64_t{u} * Block;
        if (v >= hi) continue;
        if (v - lo < a.cached) {
          cx[v - lo] = rx[u];
          cd[v - lo] = rd[u];
        }
        add(rx[u], rd[u]);
      }
    }
    if (head || tail) {
      Raw rx, rd;
      if (head) {
        load_partial(first - Pack, rx, rd);
        add(rx, rd);
      }
      if (tail) {
        load_partial(end, rx, rd);
        add(rx, rd);
      }
    }
    acc = softmax_rows_block_all_reduce<Op, Block>(acc, slots, parity);
    if constexpr (Cluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      // part[p] is written again two rows later, after this block passed the next cluster
      // barrier, i.e. after every block has read this row's accumulators
      const int p = row_parity;
      row_parity ^= 1;
      if (threadIdx.x == 0) part[p] = acc;
      cluster_sync();
      const Acc q = *cluster_map(&part[p], threadIdx.x % kWarpSize % split);
      switch (split) {
        case 2:
          acc = Op::template all_reduce<2>(q);
          break;
        case 4:
          acc = Op::template all_reduce<4>(q);
          break;
        case 8:
          acc = Op::template all_reduce<8>(q);
          break;
        default:
          acc = Op::template all_reduce<16>(q);
          break;
      }
#endif
    }
    const typename Op::Coef k = Op::finish(acc);
    const auto out = [&](const Raw& rx, const Raw& rd, float(&y)[Pack]) {
      float x[Pack], d[Pack];
      softmax_rows_to_float<Pack>(rx, x);
      softmax_rows_to_float<Pack>(rd, d);
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        y[j] = Op::out(x[j], d[j], k);
    };
    for (int64_t v0 = lo + threadIdx.x; v0 < hi; v0 += int64_t{kBatch} * Block) {
      Raw rx[kBatch], rd[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t v = v0 + int64_t{u} * Block;
        rx[u] = rd[u] = pads;
        if (v < hi && v - lo < a.cached) {
          rx[u] = cx[v - lo];
          rd[u] = cd[v - lo];
        } else if (v < hi) {
          rx[u] = load_pack<Pack>(xw, v);
          rd[u] = load_pack<Pack>(dw, v);
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t v = v0 + int64_t{u} * Block;
        if (v >= hi) continue;
        float y[Pack];
        out(rx[u], rd[u], y);
        Raw o;
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          o.elem[j] = convert<T>(y[j]);
        store_pack<Pack>(ow, v, o);
      }
    }
    if (head || tail) {
      Raw rx, rd;
      float y[Pack];
      if (head) {
        load_partial(first - Pack, rx, rd);
        out(rx, rd, y);
        softmax_rows_store<Pack>(dst, first - Pack, a.cols, y);
      }
      if (tail) {
        load_partial(end, rx, rd);
        out(rx, rd, y);
        softmax_rows_store<Pack>(dst, end, a.cols, y);
      }
    }
  }
  if constexpr (Cluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cluster_sync();  // no block exits while another still reads its accumulators
#endif
  }
}

}  // namespace kernelkit::detail
