// SPDX-License-Identifier: Apache-2.0
// Kernels (internal) of softmax over the middle axis of an (outer, n, inner) row-major layout:
// column (o, i) is x[(o * n + k) * inner + i], k < n. softmax_inner_plan.cuh says which runs;
// launch_softmax_inner (softmax_inner.cuh) launches it. Every kernel takes the four kinds:
// forward (x -> y) and backward (y, dy -> dx).
//  - softmax_inner_regs_kernel (kRegs): short columns (n <= Rows) read straight into registers,
//    a thread's column units all in flight, reduced and written there: one read, one write.
//  - softmax_inner_tile_kernel (kTile): a tile of whole columns moved into shared memory
//    (cp.async 16-byte packs where the plan gives them), each unit of adjacent columns (two
//    for 2-byte types on packs, else one) reduced there by one thread (or by `lanes` threads
//    meeting in shared memory, when the tile has fewer units than threads), the result written
//    in place in shared memory, then the tile copied out: one read and one write of every
//    element.
//  - softmax_inner_stream_kernel (kSplit): column tiles of `width` packs x 256 / width row lanes
//    read straight from global memory (coalesced along inner), kSoftmaxInnerStreamUnroll loads in
//    flight a thread; the row lanes meet in shared memory in a fixed tree. Write = false: the
//    statistics of split blockIdx.y to the workspace. Write = true: the column statistics (the
//    split partials combined in split order, or its own pass over the column when split == 1),
//    then the rows of its split read again and written.
// Numerics as the row softmax (detail/softmax_kernels.cuh): m = max (fmaxf, skipping NaN), s =
// sum of exp(x - m) in float, NaN anywhere in a column makes it NaN, an all -inf column is NaN;
// backward: s = sum of y * dy (softmax) or of dy (log_softmax), dx = y * (dy - s) or dy -
// exp(y) * s. f32 sums and every backward sum are compensated (Neumaier). The order of every
// operation depends only on the plan: the same call gives the same bits every run.
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/math.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/softmax/detail/softmax_kernels.cuh"
#include "kernelkit/softmax/softmax_inner_plan.cuh"

namespace kernelkit::detail {

// The backward kinds (softmax_is_backward, as a constant the device code can read).
template <SoftmaxKind K>
inline constexpr bool kSoftmaxInnerBackward =
    K == SoftmaxKind::kSoftmaxBackward || K == SoftmaxKind::kLogSoftmaxBackward;

// Loads a thread has in flight on the tile kernel's element-wise copies of 2-byte elements
// (4-byte ones go through cp.async, every one in flight; the copy out stores as many): 16 (8
// kept 4 KB in flight a block, 16 KB an SM at 4 blocks, under the ~25 KB an SM needs).
inline constexpr int kSoftmaxInnerUnroll = 8;
// Elements of a column the tile kernel loads from shared memory at once before reducing them
// (independent loads in flight; one at a time, each behind the previous one's branch, left
// every load's latency exposed): 8 forward, 4 backward (two loads an element; 8 spilled 16
// bytes at 64 registers, f32 log_softmax backward off the grid, sm_90).
inline constexpr int kSoftmaxInnerColBatch = 4;
inline constexpr int kSoftmaxInnerColBatchBackward = 4;

// (row, column) of element q = q0, q0 + step, ... of rows of len elements, advanced without
// a division (one at the start; a division an element cost ~25 instructions).
struct SoftmaxInnerWalk {
  int r, c, dr, dc, len;
  __device__ __forceinline__ SoftmaxInnerWalk(int q0, int len_, int step)
      : r(q0 / len_), c(q0 % len_), dr(step / len_), dc(step % len_), len(len_) {}
  __device__ __forceinline__ void next() {
    c += dc;
    r += dr;
    if (c >= len) {
      c -= len;
      ++r;
    }
  }
};
// Rows a thread of the streaming kernel has in flight (of each input), by what a load moves:
// single elements 8 forward, 4 backward (two inputs); f32 packs of 4 (16 bytes) 2; 2-byte packs
// of 4 (8 bytes) 4 forward, 1 backward. Within 80 registers: at 4 f32 packs the writing kernels
// spilled 4 bytes (sm_90), at 2 2-byte packs the bf16 backward writing kernel 4 bytes (sm_100).
// (col_reduce measured too few bytes in flight as its weak spot: 0.2-0.4 of SOL.)
template <typename T, int Pack, bool Back>
inline constexpr int kSoftmaxInnerStreamUnroll =
    Pack == 1 ? (Back ? 4 : 8)
              : (Back && sizeof(T) == 2 ? 1 : (Back || Pack * sizeof(T) == 16 ? 2 : 4));

// One call's operands and the plan's sizes.
template <typename T>
struct SoftmaxInnerArgs {
  const T* x;   // forward: the input; backward: y (the forward's output)
  const T* dy;  // backward: the gradient with respect to y; forward: null
  T* out;       // y (forward) or dx (backward)
  int64_t outer, n, inner;
  int64_t slices, cols, tiles_per_outer, tiles, tile_elems;  // kTile (tiles: also kSplit)
  int width, split;                                          // kSplit
  int64_t rows_per_split;                                    // kSplit
  SoftmaxStats* partials;                                    // kSplit, split > 1
  int64_t run;                                               // kRegs: 256 x units a thread
};

// A float sum, compensated (Neumaier) when Compensated.
template <bool Compensated>
struct SoftmaxInnerSum {
  float s = 0.f, c = 0.f;
  __device__ __forceinline__ void add(float v) {
    if constexpr (Compensated) {
      const float t = s + v;
      c += fabsf(s) >= fabsf(v) ? (s - t) + v : (v - t) + s;
      s = t;
    } else {
      s += v;
    }
  }
  __device__ __forceinline__ float get() const { return Compensated ? s + c : s; }
};

// The statistic a backward column reduces, of one element.
template <SoftmaxKind Kind>
__device__ __forceinline__ float softmax_inner_term(float y, float dy) {
  return Kind == SoftmaxKind::kLogSoftmaxBackward ? dy : y * dy;
}

// One element of dx from y, dy and the column's statistic.
template <SoftmaxKind Kind, bool Fast>
__device__ __forceinline__ float softmax_inner_grad(float y, float dy, float s) {
  if constexpr (Kind == SoftmaxKind::kLogSoftmaxBackward) {
    return dy - softmax_exp<Fast>(y) * s;
  } else {
    return y * (dy - s);
  }
}

// ---------------------------------------------------------------------------------------
// kTile

// Where a tile sits: a run of `len` elements from base (rows == 1: whole slices, contiguous),
// or `rows` rows of len (= cw) elements `stride` apart. cw: the columns of a slice it holds;
// slices: the slices it holds. In shared memory element (s, k, i) of the tile is at
// sh + (s * n + k) * cw + i.
struct SoftmaxInnerTile {
  int64_t base;
  int64_t stride;
  int rows, len, cw, slices;
};

template <typename T>
__device__ __forceinline__ SoftmaxInnerTile softmax_inner_tile_at(const SoftmaxInnerArgs<T>& a,
                                                                  int64_t tile) {
  SoftmaxInnerTile tl;
  if (a.cols == a.inner) {
    const int64_t o0 = tile * a.slices;
    const int64_t s = a.outer - o0 < a.slices ? a.outer - o0 : a.slices;
    tl.base = o0 * a.n * a.inner;
    tl.stride = 0;
    tl.rows = 1;
    tl.len = static_cast<int>(s * a.n * a.inner);
    tl.cw = static_cast<int>(a.inner);
    tl.slices = static_cast<int>(s);
  } else {
    const int64_t o = tile / a.tiles_per_outer;
    const int64_t c0 = (tile - o * a.tiles_per_outer) * a.cols;
    tl.base = o * a.n * a.inner + c0;
    tl.stride = a.inner;
    tl.rows = static_cast<int>(a.n);
    tl.len = static_cast<int>(a.inner - c0 < a.cols ? a.inner - c0 : a.cols);
    tl.cw = tl.len;
    tl.slices = 1;
  }
  return tl;
}

// Moves one operand's tile between global memory (g + tl.base) and shared memory (s): ToShared
// as cp.async 16-byte packs where Pack > 1, else cp.async of single 4-byte elements (both
// committed by the caller) or element-wise copies of 2-byte ones `Loads` loads at a
// time; the other way with 16-byte stores (Pack > 1) or element-wise. A run
// (rows == 1) starts `head` elements before its first pack boundary (Pack > 1) and sits at
// s + sh, sh making the packs' shared-memory addresses 16-byte aligned; rows (Pack > 1) start
// on pack boundaries (head 0, sh 0) and are whole packs.
template <bool ToShared, int Pack, int Loads, typename T>
__device__ __forceinline__ void softmax_inner_move(T* g, T* s, const SoftmaxInnerTile& tl, int sh,
                                                   int head) {
  constexpr int kBlock = kSoftmaxInnerBlock;
  const int t = static_cast<int>(threadIdx.x);
  T* const gb = g + tl.base;
  auto one = [&](int64_t gi, int si) {
    if constexpr (ToShared) {
      s[si] = gb[gi];
    } else {
      gb[gi] = s[si];
    }
  };
  if constexpr (Pack > 1) {
    if (tl.rows == 1) {
      const int packs = (tl.len - head) / Pack;
      const int tail = tl.len - head - packs * Pack;
      if (t < head) one(t, sh + t);
      const int body = head + packs * Pack;
      if (t < tail) one(body + t, sh + body + t);
      for (int q = t; q < packs; q += kBlock) {
        const int e = head + q * Pack;
        if constexpr (ToShared) {
          __pipeline_memcpy_async(s + sh + e, gb + e, Pack * sizeof(T));
        } else {
          store_pack<Pack>(gb + e, 0, *reinterpret_cast<const PackOf<T, Pack>*>(s + sh + e));
        }
      }
    } else {
      const int ppr = tl.len / Pack;  // packs a row
      const int total = tl.rows * ppr;
      SoftmaxInnerWalk w(t, ppr, kBlock);
      for (int q = t; q < total; q += kBlock, w.next()) {
        const int c = w.c * Pack;
        const int64_t gi = int64_t{w.r} * tl.stride + c;
        const int si = w.r * tl.len + c;
        if constexpr (ToShared) {
          __pipeline_memcpy_async(s + si, gb + gi, Pack * sizeof(T));
        } else {
          store_pack<Pack>(gb + gi, 0, *reinterpret_cast<const PackOf<T, Pack>*>(s + si));
        }
      }
    }
  } else if constexpr (ToShared && sizeof(T) == 4) {
    // 4-byte elements: cp.async of one element each, all of the tile's in flight at once
    const int total = tl.rows * tl.len;
    SoftmaxInnerWalk w(t, tl.len, kBlock);
    for (int q = t; q < total; q += kBlock, w.next())
      __pipeline_memcpy_async(s + q, gb + int64_t{w.r} * tl.stride + w.c, sizeof(T));
  } else {
    // element (r, c) of the tile is s[q], q = r * len + c (a run: r 0, c = q)
    constexpr int kU = ToShared ? Loads : kSoftmaxInnerColBatch;
    const int total = tl.rows * tl.len;
    SoftmaxInnerWalk w(t, tl.len, kBlock);
    for (int q0 = t; q0 < total; q0 += kBlock * kU) {
      T v[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int q = q0 + u * kBlock;
        if constexpr (ToShared) {
          if (q < total) v[u] = gb[int64_t{w.r} * tl.stride + w.c];
          w.next();
        } else {
          if (q < total) v[u] = s[q];
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int q = q0 + u * kBlock;
        if constexpr (ToShared) {
          if (q < total) s[q] = v[u];
        } else {
          if (q < total) gb[int64_t{w.r} * tl.stride + w.c] = v[u];
          w.next();
        }
      }
    }
  }
}

// Rows k = k0, k0 + step, ... below n of a tile's column, kB at a time:
// load(k) of a whole batch first (its loads all in flight before the first is used), then
// use(k, value) in row order (the order, so the bits, of one element at a time). Whole
// batches unguarded; the last partial one guarded.
template <typename V, int kB, typename Load, typename Use>
__device__ __forceinline__ void softmax_inner_walk(int k0, int step, int n, Load load, Use use) {
  int k = k0;
  for (; k + (kB - 1) * step < n; k += kB * step) {
    V v[kB];
#pragma unroll
    for (int u = 0; u < kB; ++u)
      v[u] = load(k + u * step);
#pragma unroll
    for (int u = 0; u < kB; ++u)
      use(k + u * step, v[u]);
  }
  if (k < n) {
    V v[kB];
#pragma unroll
    for (int u = 0; u < kB; ++u)
      if (k + u * step < n) v[u] = load(k + u * step);
#pragma unroll
    for (int u = 0; u < kB; ++u)
      if (k + u * step < n) use(k + u * step, v[u]);
  }
}

// V adjacent columns of a tile (a unit): c is the first one's element of row 0, at a multiple
// of V elements (V > 1: the V elements of a row are one 2V-byte shared-memory access).
template <int V>
struct SoftmaxInnerVals {
  float v[V];
};

template <typename T, int V>
__device__ __forceinline__ SoftmaxInnerVals<V> softmax_inner_load(const T* p) {
  SoftmaxInnerVals<V> r;
  if constexpr (V == 1) {
    r.v[0] = convert<float>(*p);
  } else {
    const PackOf<T, V> q = *reinterpret_cast<const PackOf<T, V>*>(p);
#pragma unroll
    for (int j = 0; j < V; ++j)
      r.v[j] = convert<float>(q.elem[j]);
  }
  return r;
}

template <typename T, int V>
__device__ __forceinline__ void softmax_inner_store(T* p, const float (&y)[V]) {
  if constexpr (V == 1) {
    *p = convert<T>(y[0]);
  } else {
    PackOf<T, V> q;
#pragma unroll
    for (int j = 0; j < V; ++j)
      q.elem[j] = convert<T>(y[j]);
    *reinterpret_cast<PackOf<T, V>*>(p) = q;
  }
}

// Forward, a unit of the tile (elements c + k * cw + j, rows k = k0, k0 + step, ... below n):
// each column's max.
template <typename T, int V>
__device__ __forceinline__ void softmax_inner_col_max(const T* tx, int c, int cw, int k0, int step,
                                                      int n, float (&m)[V]) {
#pragma unroll
  for (int j = 0; j < V; ++j)
    m[j] = -INFINITY;
  softmax_inner_walk<SoftmaxInnerVals<V>, kSoftmaxInnerColBatch / V>(
      k0, step, n, [&](int k) { return softmax_inner_load<T, V>(tx + c + k * cw); },
      [&](int, const SoftmaxInnerVals<V>& x) {
#pragma unroll
        for (int j = 0; j < V; ++j)
          m[j] = fmaxf(m[j], x.v[j]);
      });
}

// Forward: each column's sum of exp(x - m) (f32 softmax: each exp stored in place of x, for the
// write pass to scale).
template <typename T, SoftmaxKind Kind, int V>
__device__ __forceinline__ void softmax_inner_col_sum(T* tx, int c, int cw, int k0, int step, int n,
                                                      const float (&m)[V], float (&s)[V]) {
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr bool kKeep = std::is_same_v<T, float> && Kind == SoftmaxKind::kSoftmax;
  float base[V];
  SoftmaxInnerSum<!kFast> sum[V];
#pragma unroll
  for (int j = 0; j < V; ++j)
    base[j] = m[j] == -INFINITY ? 0.f : m[j];
  softmax_inner_walk<SoftmaxInnerVals<V>, kSoftmaxInnerColBatch / V>(
      k0, step, n, [&](int k) { return softmax_inner_load<T, V>(tx + c + k * cw); },
      [&](int k, const SoftmaxInnerVals<V>& x) {
        float e[V];
#pragma unroll
        for (int j = 0; j < V; ++j) {
          e[j] = softmax_exp<kFast>(x.v[j] - base[j]);
          sum[j].add(e[j]);
        }
        if constexpr (kKeep) softmax_inner_store<T, V>(tx + c + k * cw, e);
      });
#pragma unroll
  for (int j = 0; j < V; ++j)
    s[j] = sum[j].get();
}

// Forward: the unit's outputs in place.
template <typename T, SoftmaxKind Kind, int V>
__device__ __forceinline__ void softmax_inner_col_write(T* tx, int c, int cw, int k0, int step,
                                                        int n, const float (&m)[V],
                                                        const float (&s)[V]) {
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr bool kKept = std::is_same_v<T, float> && Kind == SoftmaxKind::kSoftmax;
  float inv_s[V], log_s[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    inv_s[j] = 1.f / s[j];
    log_s[j] = logf(s[j]);
  }
  softmax_inner_walk<SoftmaxInnerVals<V>, kSoftmaxInnerColBatch / V>(
      k0, step, n, [&](int k) { return softmax_inner_load<T, V>(tx + c + k * cw); },
      [&](int k, const SoftmaxInnerVals<V>& x) {
        float y[V];
#pragma unroll
        for (int j = 0; j < V; ++j) {
          if constexpr (kKept) {
            y[j] = x.v[j] * inv_s[j];  // x holds exp(x - m) (an all -inf column: 0 x inf, NaN)
          } else {
            y[j] = softmax_out<Kind, kFast>(x.v[j], m[j], inv_s[j], log_s[j]);
          }
        }
        softmax_inner_store<T, V>(tx + c + k * cw, y);
      });
}

// Backward: each column's sum of y * dy (or dy).
template <typename T, SoftmaxKind Kind, int V>
__device__ __forceinline__ void softmax_inner_col_dot(const T* ty, const T* tdy, int c, int cw,
                                                      int k0, int step, int n, float (&s)[V]) {
  SoftmaxInnerSum<true> sum[V];
  softmax_inner_walk<SoftmaxInnerVals<V>, kSoftmaxInnerColBatchBackward / V>(
      k0, step, n,
      [&](int k) {
        const SoftmaxInnerVals<V> y = softmax_inner_load<T, V>(ty + c + k * cw);
        const SoftmaxInnerVals<V> g = softmax_inner_load<T, V>(tdy + c + k * cw);
        SoftmaxInnerVals<V> r;
#pragma unroll
        for (int j = 0; j < V; ++j)
          r.v[j] = softmax_inner_term<Kind>(y.v[j], g.v[j]);
        return r;
      },
      [&](int, const SoftmaxInnerVals<V>& x) {
#pragma unroll
        for (int j = 0; j < V; ++j)
          sum[j].add(x.v[j]);
      });
#pragma unroll
  for (int j = 0; j < V; ++j)
    s[j] = sum[j].get();
}

// Backward: the unit's dx in place of dy.
template <typename T, SoftmaxKind Kind, int V>
__device__ __forceinline__ void softmax_inner_col_grad(const T* ty, T* tdy, int c, int cw, int k0,
                                                       int step, int n, const float (&s)[V]) {
  struct YG {
    SoftmaxInnerVals<V> y, g;
  };
  softmax_inner_walk<YG, kSoftmaxInnerColBatchBackward / V>(
      k0, step, n,
      [&](int k) {
        return YG{softmax_inner_load<T, V>(ty + c + k * cw),
                  softmax_inner_load<T, V>(tdy + c + k * cw)};
      },
      [&](int k, const YG& x) {
        float d[V];
#pragma unroll
        for (int j = 0; j < V; ++j)
          d[j] = softmax_inner_grad<Kind, kSoftmaxFast<T>>(x.y.v[j], x.g.v[j], s[j]);
        softmax_inner_store<T, V>(tdy + c + k * cw, d);
      });
}

// Lanes a first-round group of the lanes' meet (lanes > this: two rounds; the one-round
// serial combine of 32 lanes in lane 0 was ~1000 cycles of dependent shared loads a meet).
inline constexpr int kSoftmaxInnerMeetGroup = 8;

// The tile's columns reduced and written in place, V adjacent columns (a unit) a thread: a
// thread a unit (walking units t, t + block, ...), or, with fewer units than threads, `lanes`
// threads a unit (thread t is unit t % units, lane t / units: rows lane, lane + lanes, ...),
// the lanes' values combined in a fixed order through red_a / red_b (alternately: a meet's
// slots are rewritten only after the next meet's barriers). Unit j is slice j / (cw /
// V), columns V x (j % (cw / V)) + [0, V); V divides cw and sh.
template <typename T, SoftmaxKind Kind, int V>
__device__ __forceinline__ void softmax_inner_reduce(T* tx, T* tdy, float* red_a, float* red_b,
                                                     int sh, int cw, int slices, int n) {
  constexpr int kBlock = kSoftmaxInnerBlock;
  constexpr bool kBack = kSoftmaxInnerBackward<Kind>;
  const int t = static_cast<int>(threadIdx.x);
  const int ucw = cw / V;  // units a slice
  const int units = slices * ucw;
  if (units >= kBlock) {
    SoftmaxInnerWalk w(t, ucw, kBlock);
    for (int j = t; j < units; j += kBlock, w.next()) {
      const int c = sh + w.r * n * cw + w.c * V;
      float s[V];
      if constexpr (kBack) {
        softmax_inner_col_dot<T, Kind, V>(tx, tdy, c, cw, 0, 1, n, s);
        softmax_inner_col_grad<T, Kind, V>(tx, tdy, c, cw, 0, 1, n, s);
      } else {
        float m[V];
        softmax_inner_col_max<T, V>(tx, c, cw, 0, 1, n, m);
        softmax_inner_col_sum<T, Kind, V>(tx, c, cw, 0, 1, n, m, s);
        softmax_inner_col_write<T, Kind, V>(tx, c, cw, 0, 1, n, m, s);
      }
    }
  } else {
    const int lanes = kBlock / units < n ? kBlock / units : n;
    const int j = t % units, l = t / units;
    const bool on = l < lanes;
    const int sl = j / ucw;
    const int c = sh + sl * n * cw + (j - sl * ucw) * V;
    int parity = 0;
    // two rounds: each group of kSoftmaxInnerMeetGroup lanes into its first lane (in lane
    // order), then the groups into lane 0 (in group order); a fixed order, so the same bits
    // every run
    constexpr int kG = kSoftmaxInnerMeetGroup;
    auto meet = [&](float v, bool is_max) {
      float* const red = parity++ % 2 ? red_b : red_a;
      if (on) red[t] = v;
      __syncthreads();
      if (on && l % kG == 0 && lanes > kG) {
        float r = v;
        for (int q = l + 1; q < l + kG && q < lanes; ++q)
          r = is_max ? fmaxf(r, red[q * units + j]) : r + red[q * units + j];
        red[t] = r;
      }
      if (lanes > kG) __syncthreads();
      if (on && l == 0) {
        const int step = lanes > kG ? kG : 1;
        float r = red[j];
        for (int q = step; q < lanes; q += step)
          r = is_max ? fmaxf(r, red[q * units + j]) : r + red[q * units + j];
        red[j] = r;
      }
      __syncthreads();
      return on ? red[j] : 0.f;
    };
    float s[V];
    if constexpr (kBack) {
      float part[V];
#pragma unroll
      for (int i = 0; i < V; ++i)
        part[i] = 0.f;
      if (on) softmax_inner_col_dot<T, Kind, V>(tx, tdy, c, cw, l, lanes, n, part);
#pragma unroll
      for (int i = 0; i < V; ++i)
        s[i] = meet(part[i], false);
      if (on) softmax_inner_col_grad<T, Kind, V>(tx, tdy, c, cw, l, lanes, n, s);
    } else {
      float pm[V], m[V], ps[V];
#pragma unroll
      for (int i = 0; i < V; ++i)
        pm[i] = -INFINITY, ps[i] = 0.f;
      if (on) softmax_inner_col_max<T, V>(tx, c, cw, l, lanes, n, pm);
#pragma unroll
      for (int i = 0; i < V; ++i)
        m[i] = meet(pm[i], true);
      if (on) softmax_inner_col_sum<T, Kind, V>(tx, c, cw, l, lanes, n, m, ps);
#pragma unroll
      for (int i = 0; i < V; ++i)
        s[i] = meet(ps[i], false);
      if (on) softmax_inner_col_write<T, Kind, V>(tx, c, cw, l, lanes, n, m, s);
    }
  }
}

// Columns a unit where they allow it: 2 for 2-byte types on 16-byte packs (one 4-byte
// shared-memory access per row of a unit: the 2-byte forms were issue-bound at ~23
// instructions an element), else 1 (f32; 2-byte off the grid, whose element-wise copies left
// no room: 12-20 bytes spilled at 64 registers on sm_100 with both widths).
template <typename T, int Pack>
inline constexpr int kSoftmaxInnerUnitCols = sizeof(T) == 2 && Pack > 1 ? 2 : 1;

// See the top of this file. Dynamic shared memory: one tile of tile_elems elements an input.
template <typename T, SoftmaxKind Kind, int Pack>
__global__ void __launch_bounds__(kSoftmaxInnerBlock,
                                  min_blocks_per_sm(kSoftmaxInnerBlock, kSoftmaxInnerMinBlocks))
    softmax_inner_tile_kernel(SoftmaxInnerArgs<T> a) {
  constexpr bool kBack = kSoftmaxInnerBackward<Kind>;
  constexpr int kV = kSoftmaxInnerUnitCols<T, Pack>;
  extern __shared__ __align__(16) unsigned char softmax_inner_smem[];
  __shared__ float red_a[kSoftmaxInnerBlock], red_b[kSoftmaxInnerBlock];
  T* const tx = reinterpret_cast<T*>(softmax_inner_smem);
  T* const tdy = tx + a.tile_elems;  // backward; tile_elems is a whole number of packs
  const int n = static_cast<int>(a.n);
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const SoftmaxInnerTile tl = softmax_inner_tile_at(a, tile);
    // a run's elements before its first pack boundary, and the shift that puts that boundary
    // on a 16-byte shared-memory address (every operand sits alike: the plan's packs)
    const int head =
        Pack > 1 && tl.rows == 1 ? static_cast<int>(pack_head<Pack>(a.x + tl.base, tl.len)) : 0;
    const int sh = (Pack - head) % Pack;
    __syncthreads();  // the previous tile is copied out
    constexpr int kLoads = kBack ? kSoftmaxInnerUnroll / 2 : kSoftmaxInnerUnroll;
    softmax_inner_move<true, Pack, kLoads>(const_cast<T*>(a.x), tx, tl, sh, head);
    if constexpr (kBack)
      softmax_inner_move<true, Pack, kLoads>(const_cast<T*>(a.dy), tdy, tl, sh, head);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    if (kV > 1 && tl.cw % kV == 0 && sh % kV == 0) {
      softmax_inner_reduce<T, Kind, kV>(tx, tdy, red_a, red_b, sh, tl.cw, tl.slices, n);
    } else {
      softmax_inner_reduce<T, Kind, 1>(tx, tdy, red_a, red_b, sh, tl.cw, tl.slices, n);
    }
    __syncthreads();  // the tile's results are in shared memory
    softmax_inner_move<false, Pack, 1>(a.out, kBack ? tdy : tx, tl, sh, head);
  }
}

// ---------------------------------------------------------------------------------------
// kSplit

// (max, sum) of a column's rows (backward: m unused, s the sum of the terms); combine: the
// union of two sets.
template <SoftmaxKind Kind, bool Fast>
__device__ __forceinline__ SoftmaxStats softmax_inner_combine(SoftmaxStats a, SoftmaxStats b) {
  if constexpr (kSoftmaxInnerBackward<Kind>) {
    return {0.f, a.s + b.s};
  } else {
    return softmax_stats_combine<Fast>(a, b);
  }
}

// See the top of this file. Grid: (tiles or fewer, split); blockIdx.y is the split.
template <typename T, SoftmaxKind Kind, int Pack, bool Write>
__global__ void __launch_bounds__(kSoftmaxInnerBlock,
                                  min_blocks_per_sm(kSoftmaxInnerBlock,
                                                    kSoftmaxInnerStreamMinBlocks))
    softmax_inner_stream_kernel(SoftmaxInnerArgs<T> a) {
  constexpr int kBlock = kSoftmaxInnerBlock;
  constexpr bool kBack = kSoftmaxInnerBackward<Kind>;
  constexpr int kU = kSoftmaxInnerStreamUnroll<T, Pack, kBack>;
  constexpr bool kFast = kSoftmaxFast<T>;
  __shared__ SoftmaxStats red[kBlock * Pack];
  const int t = static_cast<int>(threadIdx.x);
  const int width = a.width;
  const int lanes = kBlock / width;
  const int c = t % width, l = t / width;
  const int64_t cp = a.inner / Pack;
  const int64_t columns = a.outer * a.inner;
  const int64_t split = blockIdx.y;
  const int64_t k0 = split * a.rows_per_split;
  const int64_t k1 = k0 + a.rows_per_split < a.n ? k0 + a.rows_per_split : a.n;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // the writing kernel after a split may be a programmatic dependent launch of the statistics
  // kernel: nothing is read before that grid is complete (a no-op otherwise)
  if constexpr (Write) cudaGridDependencySynchronize();
#endif
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const int64_t o = tile / a.tiles_per_outer;
    const int64_t cb = (tile - o * a.tiles_per_outer) * width;
    const bool on = l < lanes && cb + c < cp;
    const int64_t col = o * a.inner + (cb + c) * Pack;        // this thread's first column
    const int64_t off = o * a.n * a.inner + (cb + c) * Pack;  // its element of row 0
    SoftmaxStats st[Pack];
#pragma unroll
    for (int j = 0; j < Pack; ++j)
      st[j] = {kBack ? 0.f : -INFINITY, 0.f};
    if (on && Write && a.split > 1) {
      // the split partials of the thread's columns, splits l, l + lanes, ...
      for (int q = l; q < a.split; q += lanes) {
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          st[j] = softmax_inner_combine<Kind, kFast>(st[j], a.partials[q * columns + col + j]);
      }
    } else if (on) {
      // the statistics of rows [r0, r1): this split's, or the whole column (Write, split 1)
      const int64_t r0 = Write ? 0 : k0, r1 = Write ? a.n : k1;
      float comp[Pack];
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        comp[j] = 0.f;
      for (int64_t k = r0 + l; k < r1; k += int64_t{kU} * lanes) {
        PackOf<T, Pack> v[kU], w[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int64_t kk = k + int64_t{u} * lanes;
          if (kk < r1) {
            v[u] = load_pack<Pack>(a.x + off + kk * a.inner, 0);
            if constexpr (kBack) w[u] = load_pack<Pack>(a.dy + off + kk * a.inner, 0);
          }
        }
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          float xs[kU];
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            const bool in = k + int64_t{u} * lanes < r1;
            if constexpr (kBack) {
              xs[u] = in ? softmax_inner_term<Kind>(convert<float>(v[u].elem[j]),
                                                    convert<float>(w[u].elem[j]))
                         : 0.f;
            } else {
              xs[u] = in ? convert<float>(v[u].elem[j]) : -INFINITY;
            }
          }
          if constexpr (kBack) {
            SoftmaxInnerSum<true> sum{st[j].s, comp[j]};
#pragma unroll
            for (int u = 0; u < kU; ++u)
              sum.add(xs[u]);
            st[j].s = sum.s;
            comp[j] = sum.c;
          } else {
            softmax_stats_add<kFast, kU>(st[j], comp[j], xs);
          }
        }
      }
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        st[j].s += kFast && !kBack ? 0.f : comp[j];
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (!Write) {
      if (tile + gridDim.x >= a.tiles) cudaTriggerProgrammaticLaunchCompletion();
    }
#endif
    // the row lanes meet: lanes [0, 2h) -> [0, h), a fixed tree
    __syncthreads();  // the previous tile's tree is read
    if (l < lanes) {
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        red[t * Pack + j] = st[j];
    }
    __syncthreads();
    for (int h = static_cast<int>(pow2_ceil(static_cast<unsigned>(lanes))) / 2; h >= 1; h /= 2) {
      if (l < h && l + h < lanes) {
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          red[t * Pack + j] = softmax_inner_combine<Kind, kFast>(red[t * Pack + j],
                                                                 red[(t + h * width) * Pack + j]);
      }
      __syncthreads();
    }
    if constexpr (!Write) {
      if (on && l == 0) {
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          a.partials[split * columns + col + j] = red[t * Pack + j];
      }
    } else {
      if (!on) continue;
      // the column statistics, in row lane 0's slots; then this split's rows again
      // backward: (unused, s); softmax: (m, 1 / s); log_softmax: (m, log s)
      float m[Pack], q[Pack];
#pragma unroll
      for (int j = 0; j < Pack; ++j) {
        const SoftmaxStats f = red[c * Pack + j];
        m[j] = f.m;
        q[j] = kBack ? f.s : (Kind == SoftmaxKind::kSoftmax ? 1.f / f.s : logf(f.s));
      }
      for (int64_t k = k0 + l; k < k1; k += int64_t{kU} * lanes) {
        PackOf<T, Pack> v[kU], w[kU];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int64_t kk = k + int64_t{u} * lanes;
          if (kk < k1) {
            v[u] = load_pack<Pack>(a.x + off + kk * a.inner, 0);
            if constexpr (kBack) w[u] = load_pack<Pack>(a.dy + off + kk * a.inner, 0);
          }
        }
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int64_t kk = k + int64_t{u} * lanes;
          if (kk < k1) {
            PackOf<T, Pack> y;
#pragma unroll
            for (int j = 0; j < Pack; ++j) {
              const float x = convert<float>(v[u].elem[j]);
              float out;
              if constexpr (kBack) {
                out = softmax_inner_grad<Kind, kFast>(x, convert<float>(w[u].elem[j]), q[j]);
              } else {
                out = softmax_out<Kind, kFast>(x, m[j], q[j], q[j]);
              }
              y.elem[j] = convert<T>(out);
            }
            store_pack<Pack>(a.out + off + kk * a.inner, 0, y);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// kRegs

// Where a thread's column units sit (kRegs): units u < count of the current tile, unit u's
// row 0 at element base + rel(u). Tiles of one slice's columns (a.cols > 0): units c0 + t +
// 256 u of slice o, rel(u) a constant (the loads' immediate offsets).
template <typename T, int Pack>
struct SoftmaxInnerColumnsOfSlice {
  int64_t base;  // element of (o, row 0, the tile's first column + t x Pack)
  int count;     // units of the tile this thread has
  __device__ __forceinline__ SoftmaxInnerColumnsOfSlice(const SoftmaxInnerArgs<T>& a, int64_t tile,
                                                        int t, int units) {
    const int64_t o = tile / a.tiles_per_outer;
    const int64_t c0 = (tile - o * a.tiles_per_outer) * (a.cols / Pack) + t;
    base = o * a.n * a.inner + c0 * Pack;
    // units of the slice from this thread's first one, of the tile's
    const int64_t left = a.inner / Pack - c0;
    const int64_t mine = left <= 0 ? 0 : (left + kSoftmaxInnerBlock - 1) / kSoftmaxInnerBlock;
    count = static_cast<int>(mine < units ? mine : units);
  }
  __device__ __forceinline__ int rel(int u) const { return u * kSoftmaxInnerBlock * Pack; }
};

// Whole slices (a.cols == 0, fewer than 256 units a slice): `per` = 256 / cu slices a step,
// thread t < per x cu is unit t % cu of slice t / cu of the step; a tile is `units` steps, unit
// u of a thread the same unit of the slice u steps on (rel linear in u; threads past per x cu
// idle). Offsets within a tile fit int (units x 256 units x 16 rows x pack elements).
template <typename T, int Pack>
struct SoftmaxInnerColumnsOfSlices {
  int64_t base;  // element of (the thread's first slice, row 0, its unit)
  int step;      // elements a step: per slices
  int count;     // units of the tile this thread has
  __device__ __forceinline__ SoftmaxInnerColumnsOfSlices(const SoftmaxInnerArgs<T>& a, int64_t tile,
                                                         int t, int units) {
    const int cu = static_cast<int>(a.inner / Pack);
    const int per = kSoftmaxInnerBlock / cu;
    const int s = t / cu;
    const int64_t slice = a.n * a.inner;
    const int64_t first = tile * units * per + s;  // the thread's first slice
    base = first * slice + int64_t{t - s * cu} * Pack;
    step = static_cast<int>(per * slice);
    const int64_t left = s < per ? a.outer - first : 0;  // slices from the thread's first one
    const int64_t mine = left <= 0 ? 0 : (left + per - 1) / per;
    count = static_cast<int>(mine < units ? mine : units);
  }
  __device__ __forceinline__ int rel(int u) const { return u * step; }
};

// Row k of a unit of n rows, n <= Rows = pow2_ceil(n): rows up to Rows / 2 always exist.
template <int Rows>
__device__ __forceinline__ bool softmax_inner_has_row(int k, int n) {
  return k <= Rows / 2 || k < n;
}

// One column unit (Pack adjacent columns, n <= Rows rows in x, and dy backward) reduced in
// registers and its outputs written over x (forward) or dy (backward), in row order: the
// operations, so the bits, of the tile path's thread-a-column loops (softmax_inner_col_*), but
// 1 / s and log s MUFU approximations for the 2-byte types (softmax_rcp / softmax_log).
template <typename T, SoftmaxKind Kind, int Pack, int Rows>
__device__ __forceinline__ void softmax_inner_regs_unit(PackOf<T, Pack> (&x)[Rows],
                                                        PackOf<T, Pack> (&g)[Rows], int n) {
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr bool kBack = kSoftmaxInnerBackward<Kind>;
#pragma unroll
  for (int j = 0; j < Pack; ++j) {
    if constexpr (kBack) {
      SoftmaxInnerSum<true> sum;
#pragma unroll
      for (int k = 0; k < Rows; ++k)
        if (softmax_inner_has_row<Rows>(k, n))
          sum.add(
              softmax_inner_term<Kind>(convert<float>(x[k].elem[j]), convert<float>(g[k].elem[j])));
      const float s = sum.get();
#pragma unroll
      for (int k = 0; k < Rows; ++k)
        if (softmax_inner_has_row<Rows>(k, n))
          g[k].elem[j] = convert<T>(softmax_inner_grad<Kind, kFast>(
              convert<float>(x[k].elem[j]), convert<float>(g[k].elem[j]), s));
    } else {
      float m = -INFINITY;
#pragma unroll
      for (int k = 0; k < Rows; ++k)
        if (softmax_inner_has_row<Rows>(k, n)) m = fmaxf(m, convert<float>(x[k].elem[j]));
      const float base = m == -INFINITY ? 0.f : m;
      float e[Rows];
      SoftmaxInnerSum<!kFast> sum;
#pragma unroll
      for (int k = 0; k < Rows; ++k) {
        if (softmax_inner_has_row<Rows>(k, n)) {
          e[k] = softmax_exp<kFast>(convert<float>(x[k].elem[j]) - base);
          sum.add(e[k]);
        }
      }
      const float s = sum.get();
      if constexpr (Kind == SoftmaxKind::kSoftmax) {
        // exp(x - m) / s (an all -inf column: 0 x inf, NaN)
        const float inv_s = softmax_rcp<kFast>(s);
#pragma unroll
        for (int k = 0; k < Rows; ++k)
          if (softmax_inner_has_row<Rows>(k, n)) x[k].elem[j] = convert<T>(e[k] * inv_s);
      } else {
        // (x - m) - log s (an all -inf column: -inf - -inf, NaN)
        const float log_s = softmax_log<kFast>(s);
#pragma unroll
        for (int k = 0; k < Rows; ++k)
          if (softmax_inner_has_row<Rows>(k, n))
            x[k].elem[j] = convert<T>((convert<float>(x[k].elem[j]) - m) - log_s);
      }
    }
  }
}

// v, opaque to the compiler: an address computed from it is computed where it is used (the
// stores' addresses, else kept in registers from the loads over the reduction: 64-bit pointers
// a row and unit spilled 4-72 bytes at 64 registers on sm_100 / sm_120).
__device__ __forceinline__ int64_t softmax_inner_opaque(int64_t v) {
  int64_t r;
  asm volatile("mov.b64 %0, %1;" : "=l"(r) : "l"(v));
  return r;
}

// See the top of this file: a thread loads its column units' rows (all in flight), then
// reduces and writes each unit.
template <typename T, SoftmaxKind Kind, int Pack, int Rows, typename Where>
__device__ __forceinline__ void softmax_inner_regs_tile(const SoftmaxInnerArgs<T>& a,
                                                        const Where& w) {
  constexpr bool kBack = kSoftmaxInnerBackward<Kind>;
  constexpr int kU = softmax_inner_regs_units(sizeof(T), Pack, kBack, Rows);
  const int n = static_cast<int>(a.n);
  if (w.count <= 0) return;
  PackOf<T, Pack> x[kU][Rows], g[kU][kBack ? Rows : 1];
  // units past the thread's count load (and reduce) its first one again, unguarded: no
  // predicate a unit held over the reduction
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    const int64_t e = softmax_inner_opaque(w.base + (u < w.count ? w.rel(u) : 0));
    const int64_t inner = softmax_inner_opaque(a.inner);
#pragma unroll
    for (int k = 0; k < Rows; ++k) {
      if (softmax_inner_has_row<Rows>(k, n)) {
        x[u][k] = load_pack<Pack>(a.x + e + k * inner, 0);
        if constexpr (kBack) g[u][k] = load_pack<Pack>(a.dy + e + k * inner, 0);
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    if constexpr (kBack) {
      softmax_inner_regs_unit<T, Kind, Pack, Rows>(x[u], g[u], n);
    } else {
      softmax_inner_regs_unit<T, Kind, Pack, Rows>(x[u], x[u], n);
    }
    if (u < w.count) {
      const int64_t e = softmax_inner_opaque(w.base + w.rel(u));
      const int64_t inner = softmax_inner_opaque(a.inner);
#pragma unroll
      for (int k = 0; k < Rows; ++k)
        if (softmax_inner_has_row<Rows>(k, n))
          store_pack_global<Pack>(a.out + e + k * inner, 0, kBack ? g[u][k] : x[u][k]);
    }
  }
}

template <typename T, SoftmaxKind Kind, int Pack, int Rows>
__global__ void __launch_bounds__(kSoftmaxInnerBlock,
                                  min_blocks_per_sm(kSoftmaxInnerBlock, kSoftmaxInnerMinBlocks))
    softmax_inner_regs_kernel(SoftmaxInnerArgs<T> a) {
  const int t = static_cast<int>(threadIdx.x);
  const int units = static_cast<int>(a.run / kSoftmaxInnerBlock);  // units a thread a tile
  if (a.cols > 0) {
    for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x)
      softmax_inner_regs_tile<T, Kind, Pack, Rows>(
          a, SoftmaxInnerColumnsOfSlice<T, Pack>(a, tile, t, units));
  } else {
    for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x)
      softmax_inner_regs_tile<T, Kind, Pack, Rows>(
          a, SoftmaxInnerColumnsOfSlices<T, Pack>(a, tile, t, units));
  }
}

}  // namespace kernelkit::detail
