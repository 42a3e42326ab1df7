// /work/main/00-HELPERS-READ-FIRST.md). Do NOT git stash/checkout/reset/commit/add in /work/main:
// the other helper has uncommitted files here too. Keep editing only your own files; when done
// (deadline 15:00 UTC), create your worktree (git -C /work/main worktree add /work/wt-<name> -b
// <name> 85c0129), copy ONLY your changed files there, delete this line from them, commit there,
// then `git -C /work/main checkout -- <your files>`. SPDX-License-Identifier: Apache-2.0 Softmax
// kernels (internal): the warp kernel (rows in registers), the block-register kernel (a 2-byte row
// on the pack grid of up to 16384 columns in one block's registers), the chunk kernel (a row, or a
// chunk of one, in shared memory: one block per row, a cluster per row, or a cooperative grid per
// round of rows) and the two-pass fallback. softmax_plan.cuh says which one runs; launch_softmax
// (softmax.cuh) launches it. Row r of the input starts at in + r * ld_in, of the output at out + r
// * ld_out (64-bit offsets; ld = cols for contiguous rows): every kernel but the tile kernel
// (contiguous rows only) takes the strides, and where the plan gives packs, row r of in and of out
// sit alike on the 16-byte grid, so a pack index means the same columns in both.
//
// Rows that do not start on a 16-byte boundary and widths that are not a multiple of the
// pack: a run of `len` elements at `p` is seen as the packs of the aligned array around it
// (SoftmaxSpan): pack v holds columns [v * Pack - head, ...), head = p's offset within its
// pack. Whole packs move as one 16-byte access; the partial packs at the two ends move
// element by element, in the same loop (no scalar fallback kernel).
//
// Numerics in every path: m = max of the row, s = sum of exp(x - m) in float; softmax =
// exp(x - m) / s, log_softmax = (x - m) - log(s). The max is fmaxf (one instruction; it
// skips NaN): a NaN still reaches s through exp(NaN - m) (the exponent's base is 0 while m
// is -inf, so nothing is skipped), and a NaN s makes the whole row NaN. A row of all -inf
// has m = -inf and x - m = NaN: the row becomes NaN (as PyTorch); a single -inf gives 0.
// exp is expf for float and __expf for the 2-byte types (x - m is formed first, so the
// relative error stays near 2^-21 for the |x - m| < 20 that reach a 2-byte output).
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernelkit/core/cluster.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/grid.cuh"
#include "kernelkit/core/math.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/softmax/softmax_plan.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::detail {

template <typename T>
inline constexpr bool kSoftmaxFast = is_half_like_v<T>;

// core's Pack<T, N>, named where a template parameter called Pack hides it.
template <typename T, int N>
using PackOf = ::kernelkit::Pack<T, N>;

// exp(d): expf for float; for the 2-byte types ex2.approx.ftz.f32 of d * log2(e) (FMUL +
// MUFU.EX2). Inline PTX because __expf is ex2.approx.f32 without ftz, which ptxas wraps in
// a subnormal-result rescale (FSETP, two predicated FMULs: 6 instructions an exp, read in
// the sm_90 SASS); Nsight Compute showed the 2-byte mid-row kernels issue-bound (f16
// 22370x1500: 74 % of issue slots, DRAM 42 %), two exps an element. Results below 2^-126
// flush to 0: below every f16 output, and within the bf16 tolerance (1e-37 absolute).
// -inf gives 0, NaN gives NaN.
template <bool Fast>
__device__ __forceinline__ float softmax_exp(float d) {
  if constexpr (Fast) {
    return ex2_approx_ftz(d * 1.4426950408889634f);
  } else {
    return expf(d);
  }
}

// 1 / s and log(s) of a row's (or a column's, softmax_inner) sum (s >= 1, 0 for an all -inf row, or
// NaN): IEEE for float; for the 2-byte types rcp.approx.ftz / lg2.approx.ftz x ln 2 (one MUFU each,
// relative error near 2^-22 / absolute 2^-21, under the 2-byte outputs' rounding; 1 / 0 = inf,
// log(0) = -inf).
template <bool Fast>
__device__ __forceinline__ float softmax_rcp(float s) {
  if constexpr (Fast) {
    return rcp_approx_ftz(s);
  } else {
    return 1.f / s;
  }
}
template <bool Fast>
__device__ __forceinline__ float softmax_log(float s) {
  if constexpr (Fast) {
    return lg2_approx_ftz(s) * 0.6931471805599453f;
  } else {
    return logf(s);
  }
}

// (max, sum of exp(x - max)) of a set of values; (-inf, 0) is the empty set. s may be NaN
// (the set held a NaN); m never is.
struct SoftmaxStats {
  float m;
  float s;
};

__device__ __forceinline__ SoftmaxStats softmax_stats_empty() {
  return {-INFINITY, 0.f};
}

// The statistics of the union of two sets. Commutative bit for bit (fmaxf and one float
// addition of two products), so every lane of a butterfly ends with the same bits.
template <bool Fast>
__device__ __forceinline__ SoftmaxStats softmax_stats_combine(SoftmaxStats a, SoftmaxStats b) {
  const float m = fmaxf(a.m, b.m);
  const float base = m == -INFINITY ? 0.f : m;
  return {m, a.s * softmax_exp<Fast>(a.m - base) + b.s * softmax_exp<Fast>(b.m - base)};
}

// Adds K values to st: one rescale of the running sum (and of c) when the max grows.
// f32 (!Fast): the K terms summed pairwise, then added with Neumaier's compensation: c gathers
// each addition's rounding error (exact in float), softmax_stats_settle adds it back. A
// thread's sum of thousands of terms (rows of 10^7..10^9 over the grid; a whole row on the
// two-pass path) otherwise loses small terms once it is large (issue 30: an f32 row of 60 M
// 5.3e-5 off on one block). 2-byte types (outputs within 2^-8..2^-11): added one by one, c
// unused. Compensated = false: added one by one also for f32, where a thread sums a few dozen
// terms (a chunk held in shared memory: at most one block's shared memory over its threads,
// <= ~60 floats); c is still rescaled with the sum, since terms added before may have left
// it non-zero.
template <bool Fast, int K, bool Compensated = !Fast>
__device__ __forceinline__ void softmax_stats_add(SoftmaxStats& st, float& c, const float (&x)[K]) {
  float pm = x[0];
#pragma unroll
  for (int k = 1; k < K; ++k)
    pm = fmaxf(pm, x[k]);
  const float m = fmaxf(st.m, pm);
  if (m != st.m) {
    const float r = softmax_exp<Fast>(st.m - m);  // st.m = -inf: 0 (a NaN sum stays NaN)
    st.s *= r;
    if constexpr (!Fast) c *= r;
    st.m = m;
  }
  const float base = m == -INFINITY ? 0.f : m;
  if constexpr (!Compensated) {
#pragma unroll
    for (int k = 0; k < K; ++k)
      st.s += softmax_exp<Fast>(x[k] - base);
  } else {
    float e[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
      e[k] = softmax_exp<Fast>(x[k] - base);
#pragma unroll
    for (int w = 1; w < K; w *= 2)
#pragma unroll
      for (int k = 0; k + w < K; k += 2 * w)
        e[k] += e[k + w];
    // terms and sums are >= 0 (or NaN): the larger of the two is the one whose low bits
    // the addition keeps
    const float t = st.s + e[0];
    c += st.s >= e[0] ? (st.s - t) + e[0] : (e[0] - t) + st.s;
    st.s = t;
  }
}

// The thread's sum with its compensation added back (see softmax_stats_add).
template <bool Fast>
__device__ __forceinline__ void softmax_stats_settle(SoftmaxStats& st, float c) {
  if constexpr (!Fast) st.s += c;
}

// The max of the rows' values: fmaxf (one FMNMX; it skips NaN, see the file comment).
struct FMax {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Butterfly over groups of Width lanes: every lane ends with its group's statistics (the
// same bits in every lane: each step's partners add / max the same two values). The max
// first (a shuffle and an FMNMX a step), one rescale of the lane's sum, then the sum: one
// exp a lane instead of two a step.
template <int Width, bool Fast>
__device__ __forceinline__ SoftmaxStats softmax_stats_warp_all_reduce(SoftmaxStats v) {
  const float m = warp_all_reduce<Width>(v.m, FMax{});
  // m = -inf: every lane's set is empty or NaN-only; exp(-inf - 0) = 0 keeps a NaN sum NaN
  const float s = v.s * softmax_exp<Fast>(v.m - (m == -INFINITY ? 0.f : m));
  return {m, warp_all_reduce<Width>(s, Sum{})};
}

// The block's statistics, in every thread, after one barrier. slots: 2 x Block / 32 entries
// of shared memory, `parity` (0 at the first call, then left to this function) picks the
// set a call writes: a set is written again two calls later, after the next call's barrier,
// which every warp passes only once it has read this call's set. Every warp combines the
// warps' pairs in the same order (the same bits in every thread).
template <int Block, bool Fast>
__device__ __forceinline__ SoftmaxStats softmax_stats_block_all_reduce(SoftmaxStats v,
                                                                       SoftmaxStats* slots,
                                                                       int& parity) {
  constexpr int kWarps = Block / kWarpSize;
  v = softmax_stats_warp_all_reduce<kWarpSize, Fast>(v);
  if constexpr (kWarps == 1) {
    return v;
  } else {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    SoftmaxStats* set = slots + parity * kWarps;
    parity ^= 1;
    if (lane == 0) set[warp] = v;
    __syncthreads();
    // each kWarps-lane segment of the warp holds every warp's pair
    return softmax_stats_warp_all_reduce<kWarps, Fast>(set[lane % kWarps]);
  }
}

// `len` elements at src (read) / dst (written; same offset within 16 bytes as src) seen as
// the packs of the aligned array around them.
// Packs are counted in int (a span's packs: at most 2^31 - 1, i.e. rows of up to 2^31 x
// Pack elements on the two-pass path; chunks are bounded by shared memory).
template <typename T, int Pack>
struct SoftmaxSpan {
  const T* src;
  T* dst;
  int64_t len;
  int head;  // src's offset in elements within its pack
  int n;     // packs the span touches
  // packs lo..hi-1 are whole: every pack but a partial head (pack 0) and a partial tail
  // (pack n - 1), so the per-pack test is one 32-bit compare
  int lo, hi;

  __device__ __forceinline__ SoftmaxSpan(const T* s, T* d, int64_t len_)
      : src(s), dst(d), len(len_) {
    head = (Pack - static_cast<int>(pack_head<Pack>(s, Pack))) % Pack;
    n = len > 0 ? static_cast<int>((head + len + Pack - 1) / Pack) : 0;
    lo = head == 0 && len >= Pack ? 0 : 1;
    hi = (head + len) % Pack == 0 ? n : n - 1;
    if (hi < lo) hi = lo;
  }
  __device__ __forceinline__ int packs() const { return n; }
  // column (relative to src) of pack v's first element; negative in a partial head pack
  __device__ __forceinline__ int64_t first(int v) const { return int64_t{v} * Pack - head; }
  __device__ __forceinline__ bool whole(int v) const {
    return static_cast<unsigned>(v - lo) < static_cast<unsigned>(hi - lo);
  }
};

// Pack v of a span as floats; elements outside the span (and packs past its end) are -inf.
template <typename T, int Pack>
__device__ __forceinline__ void softmax_load(const SoftmaxSpan<T, Pack>& sp, int v,
                                             float (&x)[Pack]) {
  const int64_t c = sp.first(v);
  if (sp.whole(v)) {
    const PackOf<T, Pack> raw = load_pack<Pack>(sp.src + c, 0);
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      x[k] = convert<float>(raw.elem[k]);
  } else {
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      x[k] = (c + k >= 0 && c + k < sp.len) ? convert<float>(sp.src[c + k]) : -INFINITY;
  }
}

// Writes y to pack v of a span (only its elements inside the span).
template <typename T, int Pack>
__device__ __forceinline__ void softmax_store(const SoftmaxSpan<T, Pack>& sp, int v,
                                              const float (&y)[Pack]) {
  const int64_t c = sp.first(v);
  if (sp.whole(v)) {
    PackOf<T, Pack> raw;
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      raw.elem[k] = convert<T>(y[k]);
    store_pack<Pack>(sp.dst + c, 0, raw);
  } else {
#pragma unroll
    for (int k = 0; k < Pack; ++k) {
      if (c + k >= 0 && c + k < sp.len) sp.dst[c + k] = convert<T>(y[k]);
    }
  }
}

// The output of one element from x, the row max m and 1 / s or log(s).
template <SoftmaxKind Kind, bool Fast>
__device__ __forceinline__ float softmax_out(float x, float m, float inv_s, float log_s) {
  if constexpr (Kind == SoftmaxKind::kSoftmax) {
    return softmax_exp<Fast>(x - m) * inv_s;
  } else {
    return (x - m) - log_s;
  }
}

// ---------------------------------------------------------------------------------------
// Rows in registers (cols < 2^15: column arithmetic in int). Groups of Group lanes own a row
// each; lane l holds packs p * Group + l (p < Packs) of it, as floats (-inf outside the
// row). When a lane holds one pack, each group takes two rows per iteration (two
// independent 16-byte loads in flight a lane). The warp's rows of one iteration are
// base + k * (32 / Group) + group (k < rows a group): consecutive groups read consecutive
// rows. The loop is uniform over the warp (every lane runs every shuffle); a group past the
// last row computes on -inf and stores nothing.
// OnGrid (the plan's on_grid): every row starts on a 16-byte boundary and is a whole number
// of packs, so a lane's pack is wholly in the row or wholly past it: one predicated 16-byte
// load over -inf bits and one predicated 16-byte store, no head offset, no element-wise
// code (such rows measured at 0.95-0.99 of the copy, e.g. 349525x96, with 32 registers for
// f32, 40 for f16). Otherwise rows may start anywhere in a pack: the partial
// end packs move element by element.
template <typename T, SoftmaxKind Kind, int Pack, int Group, int Packs, bool OnGrid>
__global__ void __launch_bounds__(kSoftmaxWarpBlock,
                                  min_blocks_per_sm(kSoftmaxWarpBlock,
                                                    softmax_warp_min_blocks(Pack, Group, Packs,
                                                                            OnGrid, kCompiledArch)))
    softmax_warp_kernel(const T* in, int64_t ld_in, T* out, int64_t ld_out, int64_t rows,
                        int cols) {
  static_assert(Group >= 1 && Group <= kWarpSize && (Group & (Group - 1)) == 0,
                "a row group is 1, 2, 4, 8, 16 or 32 lanes of one warp");
  static_assert(Pack * Packs <= kSoftmaxWarpFloats, "a lane holds at most 32 floats of a row");
  static_assert(!OnGrid || Pack > 1, "rows on the pack grid use 16-byte packs");
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr int kRows = Packs == 1 ? 2 : 1;
  constexpr int kGroups = kWarpSize / Group;
  constexpr int kWarps = kSoftmaxWarpBlock / kWarpSize;
  const int lane = threadIdx.x % Group;
  const int group = (threadIdx.x % kWarpSize) / Group;
  const int64_t warp = int64_t{blockIdx.x} * kWarps + threadIdx.x / kWarpSize;
  const int64_t step = int64_t{gridDim.x} * kWarps * kGroups * kRows;

  for (int64_t base = warp * kGroups * kRows; base < rows; base += step) {
    float x[kRows][Packs][Pack];
    int head[kRows];  // the row's offset in elements within its first pack
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t row = base + k * kGroups + group;
      const T* src = in + (row < rows ? row : 0) * ld_in;
      const int n = row < rows ? cols : 0;
      if constexpr (OnGrid) {
        head[k] = 0;
#pragma unroll
        for (int p = 0; p < Packs; ++p) {
          const int c = (p * Group + lane) * Pack;
          PackOf<T, Pack> raw;  // -inf where the pack is past the row (or the row past rows)
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            raw.elem[j] = lowest<T>();
          if (c < n) raw = load_pack<Pack>(src + c, 0);
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            x[k][p][j] = convert<float>(raw.elem[j]);
        }
        continue;
      }
      head[k] = (Pack - static_cast<int>(pack_head<Pack>(src, Pack))) % Pack;
#pragma unroll
      for (int p = 0; p < Packs; ++p) {
        const int c = (p * Group + lane) * Pack - head[k];
        const bool whole = c >= 0 && c + Pack <= n;
        if (Packs == 1 && (whole || c >= n || c + Pack <= 0)) {
          // one pack a lane: a whole pack, or a lane past the row (96 f16 columns on 16
          // lanes) in one path with a predicated load, so the warp does not also run the
          // element-wise code below for its idle lanes every row (more packs a lane: no
          // registers to spare for it)
          PackOf<T, Pack> raw{};
          if (whole) raw = load_pack<Pack>(src + c, 0);
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            x[k][p][j] = whole ? convert<float>(raw.elem[j]) : -INFINITY;
        } else if (whole) {
          const PackOf<T, Pack> raw = load_pack<Pack>(src + c, 0);
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            x[k][p][j] = convert<float>(raw.elem[j]);
        } else {
          // a partial end pack, or (more packs a lane) a pack past the row
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            x[k][p][j] = (c + j >= 0 && c + j < n) ? convert<float>(src[c + j]) : -INFINITY;
        }
      }
    }
    float m[kRows], s[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      m[k] = -INFINITY;
#pragma unroll
      for (int p = 0; p < Packs; ++p)
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          m[k] = fmaxf(m[k], x[k][p][j]);
      m[k] = warp_all_reduce<Group>(m[k], FMax{});
    }
    // every lane of a group holds its rows' max
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const float base_k = m[k] == -INFINITY ? 0.f : m[k];
      s[k] = 0.f;
#pragma unroll
      for (int p = 0; p < Packs; ++p)
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          const float e = softmax_exp<kFast>(x[k][p][j] - base_k);  // -inf padding: 0
          if constexpr (Kind == SoftmaxKind::kSoftmax) x[k][p][j] = e;
          s[k] += e;
        }
      s[k] = warp_all_reduce<Group>(s[k], Sum{});
    }
    // every lane of a group holds its rows' sum of exp(x - max)
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      // on the grid, the row made afresh here (an opaque copy): else the compiler forms the
      // output row's address (row x ld_out, 64-bit) before the reductions and keeps it live
      // through them (2-byte rows spilled 2-8 bytes on sm_100 / sm_120 so; off the grid the
      // copy costs more than it saves: f32 32 x 8 spilled 36 bytes there with it)
      int64_t row = base + k * kGroups + group;
      if constexpr (OnGrid) asm volatile("" : "+l"(row));
      if (row >= rows) continue;
      T* dst = out + row * ld_out;
      const float inv = 1.f / s[k];
      const float log_s = logf(s[k]);
#pragma unroll
      for (int p = 0; p < Packs; ++p) {
        float y[Pack];
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          // softmax: x holds e = exp(x - base); e / s is NaN for an all -inf row (0 / 0)
          y[j] = Kind == SoftmaxKind::kSoftmax ? x[k][p][j] * inv : (x[k][p][j] - m[k]) - log_s;
        }
        const int c = (p * Group + lane) * Pack - head[k];
        if (OnGrid ? c < cols : (c >= 0 && c + Pack <= cols)) {
          PackOf<T, Pack> o;
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            o.elem[j] = convert<T>(y[j]);
          store_pack<Pack>(dst + c, 0, o);
        } else if (!OnGrid && c + Pack > 0 && c < cols) {  // a partial end pack; idle lanes skip
#pragma unroll
          for (int j = 0; j < Pack; ++j) {
            if (c + j >= 0 && c + j < cols) dst[c + j] = convert<T>(y[j]);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Rows on the pack grid in the registers of one block (kBlock with on_grid): every row
// starts on a 16-byte boundary and is a whole number of packs, at most Block x Packs of
// them. Thread t holds packs t + p * Block (p < Packs) of its row as loaded (4 registers a
// pack), all its 16-byte loads issued before any is used; a pack past the row is skipped in
// every pass (no element-wise code). Per row, 2-byte types and log_softmax: the thread's
// max and sum of exp(x - max), one block reduction of the (max, sum) pairs (one barrier),
// the row written from registers (exp again). f32 softmax: the shared-memory kBlock's order
// and arithmetic (the row max, exp(x - max) once an element kept over the element, the sum,
// the output e / s; two barriers). No shared-memory row: while a block reduces, the other
// resident blocks' loads are in flight (measured at 0.93-0.99 of the copy with 32-40
// registers). Rows b, b + gridDim.x, ...
template <typename T, SoftmaxKind Kind, int Block, int Packs>
__global__ void __launch_bounds__(Block,
                                  min_blocks_per_sm(Block,
                                                    softmax_registers_min_blocks(Block, Packs)))
    softmax_block_registers_kernel(const T* in, int64_t ld_in, T* out, int64_t ld_out, int64_t rows,
                                   int cols) {
  static_assert(Block % kWarpSize == 0 && Block <= kSoftmaxWideBlock, "32..1024 threads");
  constexpr int kPack = kMaxPackSize<T>;
  constexpr bool kFast = kSoftmaxFast<T>;
  // f32 softmax: exp once an element (a float pack holds its exps in place)
  constexpr bool kExpOnce = std::is_same_v<T, float> && Kind == SoftmaxKind::kSoftmax;
  __shared__ SoftmaxStats slots[2 * (Block / kWarpSize)];
  int reduce_parity = 0;  // softmax_stats_block_all_reduce's slot set
  const int packs = cols / kPack;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* src = in + row * ld_in;
    T* dst = out + row * ld_out;
    PackOf<T, kPack> raw[Packs];  // read only where loaded (v < packs)
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int v = static_cast<int>(threadIdx.x) + p * Block;
      if (v < packs) raw[p] = load_pack<kPack>(src, v);
    }
    float m = -INFINITY;
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      if (static_cast<int>(threadIdx.x) + p * Block < packs) {
#pragma unroll
        for (int j = 0; j < kPack; ++j)
          m = fmaxf(m, convert<float>(raw[p].elem[j]));
      }
    }
    if constexpr (kExpOnce) {
      m = softmax_stats_block_all_reduce<Block, kFast>({m, 0.f}, slots, reduce_parity).m;
      const float base = m == -INFINITY ? 0.f : m;  // all -inf: every e is 0, s is 0
      float s = 0.f;
#pragma unroll
      for (int p = 0; p < Packs; ++p) {
        if (static_cast<int>(threadIdx.x) + p * Block < packs) {
#pragma unroll
          for (int j = 0; j < kPack; ++j) {
            raw[p].elem[j] = softmax_exp<kFast>(raw[p].elem[j] - base);
            s += raw[p].elem[j];
          }
        }
      }
      const SoftmaxStats st =
          softmax_stats_block_all_reduce<Block, kFast>({m, s}, slots, reduce_parity);
      const float inv = 1.f / st.s;  // all -inf: 0 x inf = NaN, as the shared-memory kBlock
#pragma unroll
      for (int p = 0; p < Packs; ++p) {
        const int v = static_cast<int>(threadIdx.x) + p * Block;
        if (v < packs) {
#pragma unroll
          for (int j = 0; j < kPack; ++j)
            raw[p].elem[j] *= inv;
          store_pack<kPack>(dst, v, raw[p]);
        }
      }
    } else {
      const float base = m == -INFINITY ? 0.f : m;  // no pack, or all -inf: every exp is 0
      float s = 0.f;
#pragma unroll
      for (int p = 0; p < Packs; ++p) {
        if (static_cast<int>(threadIdx.x) + p * Block < packs) {
#pragma unroll
          for (int j = 0; j < kPack; ++j)
            s += softmax_exp<kFast>(convert<float>(raw[p].elem[j]) - base);
        }
      }
      const SoftmaxStats st =
          softmax_stats_block_all_reduce<Block, kFast>({m, s}, slots, reduce_parity);
      // every thread holds the row's max st.m and sum st.s. The output converts the packs
      // afresh: an empty asm makes their words opaque, else the compiler keeps the sum
      // pass's floats live through the reduction (bf16 512 x 4: 32 floats, spilled 24 bytes
      // at 40 registers on sm_90; no instruction is emitted for it)
#pragma unroll
      for (int p = 0; p < Packs; ++p) {
        uint32_t w[sizeof(raw[p]) / sizeof(uint32_t)];
        memcpy(w, &raw[p], sizeof(w));
#pragma unroll
        for (int k = 0; k < static_cast<int>(sizeof(w) / sizeof(uint32_t)); ++k)
          asm("" : "+r"(w[k]));
        memcpy(&raw[p], w, sizeof(w));
      }
      const float inv = 1.f / st.s;
      const float log_s = logf(st.s);
#pragma unroll
      for (int p = 0; p < Packs; ++p) {
        const int v = static_cast<int>(threadIdx.x) + p * Block;
        if (v < packs) {
          PackOf<T, kPack> o;
#pragma unroll
          for (int j = 0; j < kPack; ++j)
            o.elem[j] = convert<T>(
                softmax_out<Kind, kFast>(convert<float>(raw[p].elem[j]), st.m, inv, log_s));
          store_pack<kPack>(dst, v, o);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Chunks in shared memory.
// (the chunk kernel's Combine: core BlockCombine kNone, kCluster or kGrid)

template <typename T>
struct SoftmaxChunkArgs {
  const T* in;
  T* out;
  int64_t ld_in, ld_out;  // row r of in at in + r * ld_in, of out at out + r * ld_out
  int64_t rows, cols;
  int split;                       // blocks per row (cluster size, grid chunks per row)
  int buffers;                     // 1 or 2
  int64_t buffer_bytes;            // one buffer, a multiple of 16
  int64_t rows_per_round, rounds;  // kGrid
};

// Issues the copy of pack v of a span into buf[v]: a whole pack as cp.async where the
// hardware has it (sm_80+; __pipeline_memcpy_async copies synchronously below that), a
// partial end pack element by element. Thread t copies packs t, t + Block, ...: the packs it
// alone reads and writes in every phase, so no block barrier guards the buffers. The caller
// commits the group (__pipeline_commit).
template <typename T, int Pack>
__device__ __forceinline__ void softmax_issue_pack(const SoftmaxSpan<T, Pack>& sp,
                                                   PackOf<T, Pack>* buf, int v) {
  const int64_t c = sp.first(v);
  if (sp.whole(v)) {
    if constexpr (Pack * sizeof(T) >= 4) {
      __pipeline_memcpy_async(&buf[v], sp.src + c, Pack * sizeof(T));
    } else {
      buf[v] = load_pack<Pack>(sp.src + c, 0);
    }
  } else {
    T* e = buf[v].elem;
#pragma unroll
    for (int k = 0; k < Pack; ++k) {
      if (c + k >= 0 && c + k < sp.len) e[k] = sp.src[c + k];
    }
  }
}

// Pack v of a span from shared memory as floats (elements outside the span: -inf).
template <typename T, int Pack>
__device__ __forceinline__ void softmax_from_smem(const SoftmaxSpan<T, Pack>& sp,
                                                  const PackOf<T, Pack>* buf, int v,
                                                  float (&x)[Pack]) {
  const PackOf<T, Pack> raw = buf[v];
  if (sp.whole(v)) {
    // whole packs (all but the two ends of a span): a warp-uniform branch, no selects
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      x[k] = convert<float>(raw.elem[k]);
  } else {
    const int64_t c = sp.first(v);
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      x[k] = (c + k >= 0 && c + k < sp.len) ? convert<float>(raw.elem[k]) : -INFINITY;
  }
}

// A tile's span into buf as one commit group: the whole packs [lo, hi) by cp.async, the partial
// end packs element by element, pack v always by thread v % Block (a loop of a copy and three
// additions a pack: the element-wise end-pack code in the loop cost ~19 instructions a pack).
// Thread v % Block also copies pack v out (softmax_tile_out), so the next copy into a buffer
// needs no barrier after its copy-out: each thread overwrites only the packs it read itself.
template <int Block, typename T, int Pack>
__device__ __forceinline__ void softmax_tile_in(const SoftmaxSpan<T, Pack>& sp,
                                                PackOf<T, Pack>* buf) {
  const int t = static_cast<int>(threadIdx.x);
  const T* const src = sp.src - sp.head;  // pack 0 of the span
  for (int v = t < sp.lo ? t + Block : t; v < sp.hi; v += Block)
    __pipeline_memcpy_async(&buf[v], src + int64_t{v} * Pack, Pack * sizeof(T));
  const int n = sp.packs();
  if (t == 0 && sp.lo == 1 && n >= 1) softmax_issue_pack(sp, buf, 0);
  if (sp.hi == n - 1 && n >= 2 && t == (n - 1) % Block) softmax_issue_pack(sp, buf, n - 1);
  __pipeline_commit();
}
// The tile's outputs in buf to the span's destination the same way.
template <int Block, typename T, int Pack>
__device__ __forceinline__ void softmax_tile_out(const SoftmaxSpan<T, Pack>& sp,
                                                 const PackOf<T, Pack>* buf) {
  const int t = static_cast<int>(threadIdx.x);
  T* const dst = sp.dst - sp.head;  // pack 0 of the span
  for (int v = t < sp.lo ? t + Block : t; v < sp.hi; v += Block)
    store_pack<Pack>(dst + int64_t{v} * Pack, 0, buf[v]);
  const int n = sp.packs();
  // the partial end packs element by element, as softmax_tile_in issues them: pack 0 by thread
  // 0, pack n - 1 by thread (n - 1) % Block, so thread 0 both where n - 1 is a multiple of Block
  // (one pack a thread lost the tail's elements there, e.g. 128 f32 rows of 4 from element 1:
  // 129 packs). A loop, not two copies of the element-wise store (2-byte pack-lane kernels
  // spilled 4 bytes at 64 registers with two).
  const bool tail = sp.hi == n - 1 && n >= 2 && t == (n - 1) % Block;
  int v = t == 0 && sp.lo == 1 && n >= 1 ? 0 : tail ? n - 1 : -1;
  while (v >= 0) {
    const PackOf<T, Pack> o = buf[v];
    const int64_t c = sp.first(v);
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      if (c + k >= 0 && c + k < sp.len) sp.dst[c + k] = o.elem[k];
    v = tail && v < n - 1 ? n - 1 : -1;
  }
}

// 16 bytes of T as 4 floats (float) or 8 (2-byte types), word by word: one instruction an
// element (f16: HADD2.F32 of a half, bf16: a shift or a mask), and back, two 2-byte outputs a
// conversion (F2FP.PACK_AB).
template <typename T>
__device__ __forceinline__ void softmax_unpack(const uint4& raw, float (&x)[16 / sizeof(T)]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if constexpr (std::is_same_v<T, float>) {
      x[k] = __uint_as_float(w[k]);
    } else if constexpr (std::is_same_v<T, __half>) {
      __half2 h;
      memcpy(&h, &w[k], 4);
      const float2 f = __half22float2(h);
      x[2 * k] = f.x;
      x[2 * k + 1] = f.y;
    } else {
      x[2 * k] = __uint_as_float(w[k] << 16);
      x[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
    }
  }
}
template <typename T>
__device__ __forceinline__ uint4 softmax_pack(const float (&y)[16 / sizeof(T)]) {
  uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if constexpr (std::is_same_v<T, float>) {
      w[k] = __float_as_uint(y[k]);
    } else if constexpr (std::is_same_v<T, __half>) {
      const __half2 h = __floats2half2_rn(y[2 * k], y[2 * k + 1]);
      memcpy(&w[k], &h, 4);
    } else {
      const __nv_bfloat162 h = __floats2bfloat162_rn(y[2 * k], y[2 * k + 1]);
      memcpy(&w[k], &h, 4);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// 16 bytes of shared memory at a shared-window address (`st`: only where `pred`), as
// predicated instructions (a C++ store under a condition became a branch that formed the
// shared window's base again, ~17 instructions a store).
__device__ __forceinline__ uint4 softmax_lds(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
// (only where `pred`, else zeros: no access at all, so a slot past the row reads nothing that
// another thread writes)
__device__ __forceinline__ uint4 softmax_lds_if(uint32_t addr, bool pred) {
  uint4 v;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n mov.b32 %0, 0;\n mov.b32 %1, 0;\n"
      " mov.b32 %2, 0;\n mov.b32 %3, 0;\n @p ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n}"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "r"(addr), "r"(static_cast<int>(pred))
      : "memory");
  return v;
}
__device__ __forceinline__ void softmax_sts(uint32_t addr, const uint4& v, bool pred) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n @p st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n}"
      :
      : "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(static_cast<int>(pred))
      : "memory");
}

// ---------------------------------------------------------------------------------------
// Short contiguous rows off the pack grid (kTile). Both tile kernels stage tiles of tile_rows
// consecutive rows, each tile one span of the flat array, in shared memory as whole 16-byte packs
// (cp.async; the span's two end packs element by element), two buffers a block (the next tile
// loads while this one is worked on), and copy the tile out the same way; they differ in how a
// row is read and written in shared memory. Tiles b, b + gridDim.x, ...
//
// Rows wider than two packs (softmax_tile_rows_kernel): each row in the registers of a group of
// Group lanes as whole 16-byte packs of the buffer (one LDS.128 a pack: a row's packs are read as
// the buffer holds them, the neighbouring rows' elements in its end packs masked to -inf), lane l
// holding the row's packs l + Group * q (q < Packs, rotated by the group's place in its quarter
// warp, so that the rows of a quarter warp read different banks where their starts fall on the
// same bank, e.g. 64 2-byte columns from an odd offset). The outputs go back as whole packs too: a
// row's last pack, when it holds the next row's first elements, goes to a side slot (tails)
// instead, and after the pass's barrier the next row merges that slot's elements below its start
// into its own first pack (kept in heads meanwhile) and stores it: the only pack two rows write.
// The tile's first row's first pack and its last row's last pack hold elements outside the tile's
// span, which the copy-out leaves alone: stored whole. A pass is kSoftmaxTileBlock / Group rows;
// every load of a pass precedes its barrier, every store of a shared pack follows it.
// (The element-wise kernel this replaces -- a row's elements in lanes as 2-byte loads at rotated
// positions, a predicate an element, a branch around each store -- took ~35 instructions an
// element slot on sm_90 and ran issue-bound at 0.31-0.54 of the speed of light on rows of 13-65
// columns, e.g. f16 10130157x33 0.31; this one ~12-15.)
template <typename T, SoftmaxKind Kind, int Group, int Packs>
__global__ void __launch_bounds__(kSoftmaxTileBlock,
                                  min_blocks_per_sm(kSoftmaxTileBlock,
                                                    softmax_tile_min_blocks(Packs* kMaxPackSize<T>,
                                                                            kCompiledArch)))
    softmax_tile_rows_kernel(const T* in, T* out, int64_t rows, int cols, int tile_rows,
                             int64_t buffer_bytes) {
  static_assert(Group >= 1 && Group <= kWarpSize && (Group & (Group - 1)) == 0, "lane groups");
  static_assert(Packs >= 1, "packs a lane");
  constexpr int kPack = kMaxPackSize<T>;
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr int kRows = kSoftmaxTileBlock / Group;  // rows of a pass
  using Span = SoftmaxSpan<T, kPack>;
  using P = PackOf<T, kPack>;
  extern __shared__ float4 softmax_smem[];
  // the buffers and the tails as 16-byte words of one shared array (indices, not pointers: the
  // compiler keeps them in the shared window)
  uint4* const sm = reinterpret_cast<uint4*>(softmax_smem);
  const uint32_t sbase = static_cast<uint32_t>(__cvta_generic_to_shared(softmax_smem));
  const int buf_packs = static_cast<int>(buffer_bytes / 16);
  // past the buffers: the tails of a pass (two sets of kRows packs, by the pass's parity), the
  // last row's tail for the next pass (three slots, by the pass modulo 3: the next pass reads
  // its slot after its own barrier, the pass after next writes another before its barrier) and
  // each thread's head pack (kRows packs, written and read by the row's lane 0 only)
  const int tails = 2 * buf_packs;
  const int carry = tails + 2 * kRows;
  const int heads = carry + 3;
  const int lane = threadIdx.x % Group;
  const int rix = threadIdx.x / Group;  // the thread's row in a pass
  // the group's place in its quarter warp (8 lanes read 128 bytes a wavefront), modulo Packs
  const int rot = Group >= 8 ? 0 : ((threadIdx.x % 8) / Group) % Packs;
  const int64_t tiles = ceil_div<int64_t>(rows, tile_rows);
  const auto span_of = [&](int64_t tile) {
    if (tile >= tiles) return Span(in, out, 0);
    const int64_t r0 = tile * tile_rows;
    const int64_t n = rows - r0 < tile_rows ? rows - r0 : tile_rows;
    return Span(in + r0 * cols, out + r0 * cols, n * cols);
  };
  const auto issue = [&](const Span& sp, int boff) {
    softmax_tile_in<kSoftmaxTileBlock>(sp, reinterpret_cast<P*>(sm + boff));
  };
  const unsigned ucols = static_cast<unsigned>(cols);

  Span sp = span_of(blockIdx.x);
  issue(sp, 0);
  for (int64_t tile = blockIdx.x, it = 0; tile < tiles; tile += gridDim.x, ++it) {
    const int boff = (it & 1) ? buf_packs : 0;
    issue(span_of(tile + gridDim.x), (it & 1) ? 0 : buf_packs);
    __pipeline_wait_prior(1);
    __syncthreads();  // every thread's copies of this tile have landed
    const int n_rows = static_cast<int>(sp.len / cols);
    const unsigned head0 = static_cast<unsigned>(sp.head);
    int pass = 0, set = 0;  // the pass, its carry slot (pass modulo 3)
    for (int r0 = 0; r0 < n_rows; r0 += kRows, ++pass) {
      const int r = r0 + rix;
      const bool active = r < n_rows;
      const unsigned s = head0 + static_cast<unsigned>(r) * ucols;  // the row's first element
      const int at = boff + static_cast<int>(s / kPack) + lane;     // its pack `lane`
      const int h = static_cast<int>(s % kPack);
      const int np = active ? static_cast<int>((h + ucols + kPack - 1) / kPack) : 0;
      float x[Packs][kPack];
#pragma unroll
      for (int i = 0; i < Packs; ++i) {
        const int q = i + rot >= Packs ? i + rot - Packs : i + rot;
        const int j = lane + Group * q;  // the row's pack held in slot i
        // its elements [lo, lo + cols) are the row's (a pack past the row: none, not read)
        const int lo = h - j * kPack;
        // (::min / ::max: kernelkit::min and max are the reductions)
        const int hi = ::min(::max(lo + cols, 0), kPack);
        const unsigned bits = ((1u << hi) - 1) >> ::max(lo, 0) << ::max(lo, 0);
        float v[kPack];
        softmax_unpack<T>(
            softmax_lds_if(sbase + 16u * static_cast<uint32_t>(at + Group * q), j < np), v);
#pragma unroll
        for (int e = 0; e < kPack; ++e)
          x[i][e] = (bits >> e) & 1 ? v[e] : -INFINITY;
      }
      float m = -INFINITY;
#pragma unroll
      for (int i = 0; i < Packs; ++i)
#pragma unroll
        for (int e = 0; e < kPack; ++e)
          m = fmaxf(m, x[i][e]);
      m = warp_all_reduce<Group>(m, FMax{});
      const float base = m == -INFINITY ? 0.f : m;
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < Packs; ++i)
#pragma unroll
        for (int e = 0; e < kPack; ++e) {
          const float ek = softmax_exp<kFast>(x[i][e] - base);  // -inf padding: 0
          if constexpr (Kind == SoftmaxKind::kSoftmax) x[i][e] = ek;
          sum += ek;
        }
      sum = warp_all_reduce<Group>(sum, Sum{});
      const float inv = softmax_rcp<kFast>(sum);
      const float log_s = softmax_log<kFast>(sum);
      // the row's last pack holds the next row's first elements: its slot in tails
      const bool tail_shared = (h + ucols) % kPack != 0 && r + 1 < n_rows;
      const int tail_at = rix == kRows - 1 ? carry + set : tails + (pass & 1) * kRows + rix;
      // the first pack is shared with the previous row: into its slot in heads, merged below
      const bool merge = h > 0 && r > 0;
      const int head_at = heads + rix;
#pragma unroll
      for (int i = 0; i < Packs; ++i) {
        const int q = i + rot >= Packs ? i + rot - Packs : i + rot;
        const int j = lane + Group * q;
        float y[kPack];
#pragma unroll
        for (int e = 0; e < kPack; ++e)
          // softmax: x holds e = exp(x - base); e / s is NaN for an all -inf row (0 x inf)
          y[e] = Kind == SoftmaxKind::kSoftmax ? x[i][e] * inv : (x[i][e] - m) - log_s;
        const int to = j == 0 && merge              ? head_at
                       : j == np - 1 && tail_shared ? tail_at
                                                    : at + Group * q;
        softmax_sts(sbase + 16u * static_cast<uint32_t>(to), softmax_pack<T>(y), j < np);
      }
      __syncthreads();  // every row's packs loaded, every shared end pack in heads / tails
      if (lane == 0 && active && merge) {
        // the previous row's tail pack below h, this row's first pack from h on: h x 16 / 8
        // bits of the 128 (kPack elements of 16 / kPack bytes) from the tail
        const uint4 t = softmax_lds(
            sbase + 16u * static_cast<uint32_t>(rix > 0 ? tails + (pass & 1) * kRows + rix - 1
                                                        : carry + (set == 0 ? 2 : set - 1)));
        const uint4 o = softmax_lds(sbase + 16u * static_cast<uint32_t>(head_at));
        const int bits = h * (128 / kPack);
        const auto mix = [&](uint32_t tw, uint32_t ow, int k) {
          // the low min(max(bits - 32k, 0), 32) bits of the word from the tail
          const uint32_t low = __funnelshift_lc(0xffffffffu, 0u, ::max(bits - 32 * k, 0));
          return (tw & low) | (ow & ~low);
        };
        softmax_sts(
            sbase + 16u * static_cast<uint32_t>(at),
            make_uint4(mix(t.x, o.x, 0), mix(t.y, o.y, 1), mix(t.z, o.z, 2), mix(t.w, o.w, 3)),
            true);
      }
      set = set == 2 ? 0 : set + 1;
    }
    __syncthreads();  // the tile's outputs are in the buffer
    softmax_tile_out<kSoftmaxTileBlock>(sp, reinterpret_cast<const P*>(sm + boff));
    sp = span_of(tile + gridDim.x);
  }
}

// ---------------------------------------------------------------------------------------
// Rows of at most two packs (kTile, the narrow kernel: 16 2-byte / 8 f32 columns): tiles staged as
// above, and the width a compile-time constant C (a uniform switch over 1..2 x kPack), so a lane's
// rows are fully unrolled, with no masks and no per-element predicates. Where the tile's span
// starts on a pack boundary and kPack / gcd(C, kPack) rows are whole packs of at most 64
// elements, a lane holds that many rows and reads and writes them as whole packs (LDS.128 /
// STS.128; every tile a whole number of such groups keeps every span aligned when the input is).
// Otherwise a lane holds one row, read and written as 32-bit words from wherever it starts (2-byte
// rows starting at an odd element funnel-shifted by one; a word two rows share written by the
// later one with the earlier one's last output from the previous lane, lane 0 of each warp
// computing the row before the warp's for that). (On the element-wise kernel these rows ran at
// 0.41-0.64 of the speed of light: bf16 2682433x2, f16 8758671x7, f32 24678721x3.)
template <typename T>
__device__ __forceinline__ float softmax_word_elem(const uint32_t* a, int g) {
  // element g of range-aligned words (compile-time g)
  if constexpr (std::is_same_v<T, float>) {
    return __uint_as_float(a[g]);
  } else if constexpr (std::is_same_v<T, __half>) {
    __half2 h;
    memcpy(&h, &a[g / 2], 4);
    return g % 2 == 0 ? __low2float(h) : __high2float(h);
  } else {
    return __uint_as_float(g % 2 == 0 ? a[g / 2] << 16 : a[g / 2] & 0xffff0000u);
  }
}
template <typename T>
__device__ __forceinline__ uint32_t softmax_pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    uint32_t w;
    memcpy(&w, &h, 4);
    return w;
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    uint32_t w;
    memcpy(&w, &h, 4);
    return w;
  }
}

// f(std::integral_constant<int, v>) for the runtime v in [0, N) (a uniform value: one branch).
template <int N, typename F, int... Is>
__device__ __forceinline__ void softmax_switch(int v, F&& f, std::integer_sequence<int, Is...>) {
  ((v == Is ? (f(std::integral_constant<int, Is>{}), 0) : 0), ...);
}
template <int N, typename F>
__device__ __forceinline__ void softmax_switch(int v, F&& f) {
  softmax_switch<N>(v, f, std::make_integer_sequence<int, N>{});
}

// 4 bytes of shared memory at a shared-window address (`st`: only where `pred`).
__device__ __forceinline__ uint32_t softmax_lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t softmax_lds32_if(uint32_t addr, bool pred) {
  uint32_t v;
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n mov.b32 %0, 0;\n @p ld.shared.b32 %0, [%1];\n}"
      : "=r"(v)
      : "r"(addr), "r"(static_cast<int>(pred))
      : "memory");
  return v;
}
__device__ __forceinline__ void softmax_sts32(uint32_t addr, uint32_t v, bool pred) {
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p st.shared.b32 [%0], %1;\n}"
               :
               : "r"(addr), "r"(v), "r"(static_cast<int>(pred))
               : "memory");
}

// The narrow kernel's rows of C columns of one tile (see above): buffer packs [boff, last] hold
// the tile's span, which starts at element h0 of pack boff; n_rows rows. Aligned (h0 = 0, R rows
// a lane making whole packs): each lane reads and writes its own packs. Otherwise a lane holds
// one row, read and written as 32-bit words from wherever it starts (2-byte rows starting at an
// odd element funnel-shifted by one). A lane writes only words that no other lane reads: 2-byte
// rows starting at an odd element leave their first word (the previous row's last element and
// their first) to softmax_tile_narrow_firsts, after the tile's barrier, from `side` (a word a
// row: its first output in the high half, its last in the low one).
template <typename T, SoftmaxKind Kind, int C, bool Aligned>
__device__ __forceinline__ void softmax_tile_narrow_rows(uint32_t sbase, int boff, int last,
                                                         int n_rows, int h0, uint32_t side) {
  constexpr int kPack = kMaxPackSize<T>;
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));
  constexpr int R = softmax_narrow_rows_per_lane(C, kPack, Aligned);  // rows a lane
  constexpr int L = R * C;                                            // elements a lane
  constexpr int N = (L + kPerWord - 1) / kPerWord;                    // words a lane
  constexpr int M = L / kPack;                                        // packs a lane (aligned)
  constexpr bool kShare = !Aligned && kPerWord == 2;                  // words shared by two rows
  static_assert(!Aligned || L % kPack == 0, "whole packs a lane");
  const int n_ranges = (n_rows + R - 1) / R;
  const int w_hi = 4 * last + 3;  // the buffer's last word
  for (int q = static_cast<int>(threadIdx.x); q < n_ranges; q += kSoftmaxTileBlock) {
    const bool active = true;  // (each load and store below is predicated by its bounds too)
    // (off the packs) the lane's first element, word and shift
    const int e0 = h0 + q * L;
    const int w0 = 4 * boff + e0 / kPerWord;
    const bool odd = kShare && (e0 & 1);
    const uint32_t sh = odd ? 16u : 0u;
    // the lane's elements, kPerWord a word, read a pack (or a word) ahead of the row that needs
    // it (all at once, 7 2-byte columns held 28 words of input and spilled): before row k, words
    // [want(k - 1), want(k)) (want(-1) = 0)
    uint32_t a[N];
    [[maybe_unused]] uint32_t w = 0;  // off the packs: the buffer's word last read
    const auto want = [](int k) {     // words read before row k: its words and 4 more, whole packs
      const int n = ((k + 1) * C + kPerWord - 1) / kPerWord + 4;
      const int p = (n + 3) / 4 * 4;
      return k < 0 ? 0 : (p > N ? N : p);
    };
    // off the packs, word N (the next row's first word) holds the lane's last element only
    // where it starts at an odd element and holds an even number
    [[maybe_unused]] const bool word_n = odd && L % 2 == 0;
    // the outputs leave as soon as they are made. Aligned: a pack's four words together.
    // Otherwise word i of the lane's words from w0 (2-byte types: elements 2i - 1 and 2i of the
    // row where it starts at an odd element); a last word holding the next row's first element
    // is the next row's
    [[maybe_unused]] const int count = kShare && L % 2 == 1 ? (odd ? N : N - 1) : N;
    uint32_t quad[4];
    [[maybe_unused]] uint32_t first = 0, before = 0;  // the lane's words 0 and i - 1
    const auto emit = [&](int i, uint32_t v) {
      if constexpr (Aligned) {
        quad[i % 4] = v;
        if (i % 4 == 3) {
          const int at = boff + q * M + i / 4;
          softmax_sts(sbase + 16u * static_cast<uint32_t>(at),
                      make_uint4(quad[0], quad[1], quad[2], quad[3]), active && at <= last);
        }
      } else if constexpr (!kShare) {
        softmax_sts32(sbase + 4u * static_cast<uint32_t>(w0 + i), v, active && w0 + i <= w_hi);
      } else {
        if (i == 0) first = v;
        // word 0 where the row starts at an odd element: softmax_tile_narrow_firsts
        softmax_sts32(sbase + 4u * static_cast<uint32_t>(w0 + i), __funnelshift_l(before, v, sh),
                      active && !(i == 0 && odd) && i < count && w0 + i <= w_hi);
        before = v;
      }
    };
    [[maybe_unused]] float pending = 0.f;  // a 2-byte output whose word's other half is next
#pragma unroll
    for (int k = 0; k < R; ++k) {
      // (loops of a constant count, their steps guarded: bounds that depend on k left them
      // rolled, a[] in local memory)
      constexpr int kStep = (C + kPerWord - 1) / kPerWord + 8;  // > want(k) - want(k - 1)
      if constexpr (Aligned) {
#pragma unroll
        for (int d = 0; d < kStep; d += 4) {
          const int i = want(k - 1) + d;
          if (i < want(k)) {
            const int at = boff + q * M + i / 4;
            const uint4 v =
                softmax_lds_if(sbase + 16u * static_cast<uint32_t>(at), active && at <= last);
            a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
          }
        }
      } else {
        const auto word = [&](int i) {
          const bool in = active && w0 + i <= w_hi && (i < N || (kShare && word_n));
          return softmax_lds32_if(sbase + 4u * static_cast<uint32_t>(w0 + i), in);
        };
        if (k == 0) w = word(0);
#pragma unroll
        for (int d = 0; d < kStep; ++d) {
          const int i = want(k - 1) + d;
          if (i < want(k)) {
            if constexpr (kShare) {
              const uint32_t next = word(i + 1);
              a[i] = __funnelshift_r(w, next, sh);
              w = next;
            } else {
              a[i] = w;
              if (i + 1 < N) w = word(i + 1);
            }
          }
        }
      }
      float x[C];
#pragma unroll
      for (int c = 0; c < C; ++c)
        x[c] = softmax_word_elem<T>(a, k * C + c);
      float m = x[0];
#pragma unroll
      for (int c = 1; c < C; ++c)
        m = fmaxf(m, x[c]);
      const float base = m == -INFINITY ? 0.f : m;
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const float ek = softmax_exp<kFast>(x[c] - base);
        if constexpr (Kind == SoftmaxKind::kSoftmax) x[c] = ek;
        sum += ek;
      }
      const float inv = softmax_rcp<kFast>(sum);
      const float log_s = softmax_log<kFast>(sum);
#pragma unroll
      for (int c = 0; c < C; ++c) {
        // softmax: x holds e = exp(x - base); e / s is NaN for an all -inf row (0 x inf)
        const float y = Kind == SoftmaxKind::kSoftmax ? x[c] * inv : (x[c] - m) - log_s;
        const int g = k * C + c;
        if constexpr (std::is_same_v<T, float>) {
          emit(g, __float_as_uint(y));
        } else if (g % 2 == 0) {
          pending = y;
          if (g == L - 1) emit(g / 2, softmax_pack2<T>(y, 0.f));  // an odd L's last word
        } else {
          emit(g / 2, softmax_pack2<T>(pending, y));
        }
      }
    }
    if constexpr (kShare) {
      // the row's first output (high half) and last (low half) for softmax_tile_narrow_firsts;
      // `before` is word N - 1
      const uint32_t last16 = L % 2 == 0 ? before >> 16 : before & 0xffffu;
      softmax_sts32(side + 4u * static_cast<uint32_t>(q), (first << 16) | last16, active);
    }
  }
}

// After the tile's barrier, from `side` (softmax_tile_narrow_rows): the first word of each
// 2-byte row starting at an odd element (the previous row's last output and the row's first), and
// the tile's last row's last word where the next row would start in it (the next tile's: past the
// span, which the copy-out leaves alone).
template <int C>
__device__ __forceinline__ void softmax_tile_narrow_firsts(uint32_t sbase, int boff, int last,
                                                           int n_rows, int h0, uint32_t side) {
  for (int q = static_cast<int>(threadIdx.x); q < n_rows; q += kSoftmaxTileBlock) {
    const int e0 = h0 + q * C;
    const uint32_t own = softmax_lds32(side + 4u * static_cast<uint32_t>(q));
    if (e0 & 1) {
      const uint32_t prev = q > 0 ? softmax_lds32(side + 4u * static_cast<uint32_t>(q - 1)) : 0u;
      const int w0 = 4 * boff + e0 / 2;
      softmax_sts32(sbase + 4u * static_cast<uint32_t>(w0), (prev & 0xffffu) | (own & 0xffff0000u),
                    w0 <= 4 * last + 3);
    }
    if (q == n_rows - 1 && ((e0 + C) & 1)) {
      const int wl = 4 * boff + (e0 + C - 1) / 2;
      softmax_sts32(sbase + 4u * static_cast<uint32_t>(wl), own & 0xffffu, wl <= 4 * last + 3);
    }
  }
}

template <typename T, SoftmaxKind Kind>
__global__ void __launch_bounds__(kSoftmaxTileBlock,
                                  min_blocks_per_sm(kSoftmaxTileBlock,
                                                    softmax_tile_narrow_min_blocks(kCompiledArch)))
    softmax_tile_narrow_kernel(const T* in, T* out, int64_t rows, int cols, int tile_rows,
                               int64_t buffer_bytes) {
  constexpr int kPack = kMaxPackSize<T>;
  using Span = SoftmaxSpan<T, kPack>;
  using P = PackOf<T, kPack>;
  extern __shared__ float4 softmax_smem[];
  uint4* const sm = reinterpret_cast<uint4*>(softmax_smem);
  const uint32_t sbase = static_cast<uint32_t>(__cvta_generic_to_shared(softmax_smem));
  const int buf_packs = static_cast<int>(buffer_bytes / 16);
  const int64_t tiles = ceil_div<int64_t>(rows, tile_rows);
  const auto span_of = [&](int64_t tile) {
    if (tile >= tiles) return Span(in, out, 0);
    const int64_t r0 = tile * tile_rows;
    const int64_t n = rows - r0 < tile_rows ? rows - r0 : tile_rows;
    return Span(in + r0 * cols, out + r0 * cols, n * cols);
  };
  const auto issue = [&](const Span& sp, int boff) {
    softmax_tile_in<kSoftmaxTileBlock>(sp, reinterpret_cast<P*>(sm + boff));
  };

  issue(span_of(blockIdx.x), 0);
  for (int64_t tile = blockIdx.x, it = 0; tile < tiles; tile += gridDim.x, ++it) {
    const int boff = (it & 1) ? buf_packs : 0;
    issue(span_of(tile + gridDim.x), (it & 1) ? 0 : buf_packs);
    __pipeline_wait_prior(1);
    __syncthreads();  // every thread's copies of this tile have landed
    {
      // (the span made again for the copy-out: not live through the rows)
      const Span sp = span_of(tile);
      const int n_rows = static_cast<int>(sp.len / cols);
      const int last = boff + sp.packs() - 1;
      const int h0 = sp.head;
      const uint32_t side = sbase + 2u * static_cast<uint32_t>(buffer_bytes);
      softmax_switch<kSoftmaxTileNarrowMax<T> + 1>(cols, [&](auto cc) {
        constexpr int C = decltype(cc)::value;
        constexpr bool kCanAlign = softmax_narrow_rows_per_lane(C, kPack, true) * C % kPack == 0;
        if constexpr (C >= 1) {
          if (kCanAlign && h0 == 0) {
            if constexpr (kCanAlign)
              softmax_tile_narrow_rows<T, Kind, C, true>(sbase, boff, last, n_rows, 0, side);
          } else {
            softmax_tile_narrow_rows<T, Kind, C, false>(sbase, boff, last, n_rows, h0, side);
            if constexpr (sizeof(T) == 2) {
              __syncthreads();  // every row's side word written, every row's words read
              softmax_tile_narrow_firsts<C>(sbase, boff, last, n_rows, h0, side);
            }
          }
        }
      });
    }
    __syncthreads();  // the tile's outputs are in the buffer
    int64_t t = tile;
    asm volatile("" : "+l"(t));
    const Span sp = span_of(t);
    softmax_tile_out<kSoftmaxTileBlock>(sp, reinterpret_cast<const P*>(sm + boff));
  }
}

// kGrid chunks longer than their buffer (rows wider than the grid's shared memory): packs
// [from, n) of a span are read through registers, kU whole packs a thread in flight (loaded
// as 16-byte words, converted where used: the kernel has 64 registers), into the thread's
// statistics; a partial last pack by the block's last thread...
// (the write holds 8 2-byte outputs a pack too: 2 packs in flight there, 4 spill in bf16)
template <int Pack>
inline constexpr int kSoftmaxStreamU = Pack == 1 ? 8 : 4;
template <int Pack>
inline constexpr int kSoftmaxStreamWriteU = Pack == 8 ? 2 : kSoftmaxStreamU<Pack>;

template <bool Fast, int Block, typename T, int Pack>
__device__ __forceinline__ void softmax_stream_stats(const SoftmaxSpan<T, Pack>& sp, int from,
                                                     SoftmaxStats& st, float& c) {
  constexpr int kU = kSoftmaxStreamU<Pack>;
  const int n = sp.packs();
  if (from >= n) return;
  const int whole = sp.hi > from ? sp.hi : from;  // [from, whole): whole packs (from >= lo)
  for (int v0 = from + static_cast<int>(threadIdx.x); v0 < whole; v0 += kU * Block) {
    PackOf<T, Pack> raw[kU];  // all kU loads issued before any is used
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        raw[u].elem[k] = lowest<T>();
      if (v0 + u * Block < whole) raw[u] = load_pack<Pack>(sp.src + sp.first(v0 + u * Block), 0);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      float x[Pack];
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        x[k] = convert<float>(raw[u].elem[k]);
      softmax_stats_add<Fast>(st, c, x);
    }
  }
  if (whole < n && threadIdx.x == Block - 1) {
    float x[Pack];
    softmax_load(sp, whole, x);
    softmax_stats_add<Fast>(st, c, x);
  }
}

// ... and read again once the row's (m, s) is known, and written: the last packs first (the
// statistics read them last, so they are the likeliest to still be in L2).
template <SoftmaxKind Kind, bool Fast, int Block, typename T, int Pack>
__device__ __forceinline__ void softmax_stream_write(const SoftmaxSpan<T, Pack>& sp, int from,
                                                     float m, float inv_s, float log_s) {
  constexpr int kU = kSoftmaxStreamWriteU<Pack>;
  const int n = sp.packs();
  if (from >= n) return;
  const int whole = sp.hi > from ? sp.hi : from;
  if (whole < n && threadIdx.x == Block - 1) {
    float x[Pack], y[Pack];
    softmax_load(sp, whole, x);
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      y[k] = softmax_out<Kind, Fast>(x[k], m, inv_s, log_s);
    softmax_store(sp, whole, y);
  }
  for (int v0 = whole - 1 - static_cast<int>(threadIdx.x); v0 >= from; v0 -= kU * Block) {
    PackOf<T, Pack> raw[kU];
    const T* src = sp.src + sp.first(v0);
    T* dst = sp.dst + sp.first(v0);
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (u == 0 || v0 - u * Block >= from) raw[u] = load_pack<Pack>(src, -int64_t{u} * Block);
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (u == 0 || v0 - u * Block >= from) {
        // the output over the input, converted before the store (half the registers of floats)
#pragma unroll
        for (int k = 0; k < Pack; ++k)
          raw[u].elem[k] =
              convert<T>(softmax_out<Kind, Fast>(convert<float>(raw[u].elem[k]), m, inv_s, log_s));
        store_pack<Pack>(dst, -int64_t{u} * Block, raw[u]);
      }
    }
  }
}

// Task of one iteration: which row (and chunk of it) this block holds.
struct SoftmaxTask {
  int64_t row;
  int chunk;
  bool active;
};

// One kernel, three ways to combine the (max, sum) pairs of a row's chunks:
//  - kNone (split 1): block b holds rows b, b + gridDim.x, ...; nothing to combine.
//  - kCluster (split = cluster size, sm_90+): cluster c holds rows c, c + clusters, ...,
//    block rank r chunk r; each block parks its pair in its own shared memory and, after one
//    cluster barrier, reads every rank's (lane l reads rank l % split; a butterfly over
//    `split` lanes: the same bits in every warp of every block).
//  - kGrid (cooperative launch, gridDim.x = rows_per_round x split): in round k block b holds
//    row k * rows_per_round + b / split, chunk b % split. Thread 0 parks the block's pair in
//    the first 8 bytes of the block's chunk of `out` (bits, element by element: any
//    alignment), which the block has already read into shared memory (in place works);
//    after one grid barrier every block reads its row's pairs with L2 loads (__ldcg) and
//    combines them in the same order. The 8 bytes of output a pair sat on are written one
//    round later (after the next barrier, when every reader is done): their owners leave
//    them in the scratch, thread 0 writes them; the last ones after a final barrier.
//    A chunk longer than the buffer keeps its first buffer_bytes on chip; the rest is read
//    through registers for the statistics (while the buffer's copies are in flight) and
//    again at the write, before the buffer's part (softmax_stream_stats / _write).
// Per iteration: (two buffers: issue the next task's chunk into the other buffer first, so
// its loads are in flight through this chunk's statistics, the combine and the write); wait
// for the chunk; each thread's online pair over its packs; the block's pair; combine; write
// the chunk from shared memory (one buffer: issuing the next task's chunk into it pack by
// pack as the output leaves).
// Dynamic shared memory: softmax_scratch_bytes(Block, Combine) of scratch, then `buffers` buffers.
template <typename T, SoftmaxKind Kind, int Pack, int Block, BlockCombine Combine>
__global__ void __launch_bounds__(Block,
                                  min_blocks_per_sm(Block, kSoftmaxChunkThreadsPerSm / Block))
    softmax_chunk_kernel(const SoftmaxChunkArgs<T> a) {
  static_assert(Block % kWarpSize == 0 && Block <= kSoftmaxWideBlock, "32..1024 threads");
  constexpr bool kFast = kSoftmaxFast<T>;
  // f32 softmax, one block per row: max, then exp once an element stored over the element,
  // then the output as e / s: one expf an element instead of two
  // (the online pair's and the output's); 2-byte rows cannot hold a float in their slot,
  // log_softmax's output has no exp, split rows would need a second combine
  constexpr bool kExpOnce =
      std::is_same_v<T, float> && Kind == SoftmaxKind::kSoftmax && Combine == BlockCombine::kNone;
  constexpr int kWarps = Block / kWarpSize;
  using Bits = bits_t<sizeof(T)>;
  constexpr int kSlot = kSoftmaxPairBytes / static_cast<int>(sizeof(T));  // elements of a pair
  constexpr int kScratch = softmax_scratch_bytes(Block, Combine);
  static_assert((Combine == BlockCombine::kCluster ? sizeof(ClusterPush) : 0) +
                        2 * kWarps * sizeof(SoftmaxStats) + kSoftmaxPairBytes + sizeof(void*) <=
                    kScratch,
                "scratch layout");
  extern __shared__ float4 softmax_smem[];
  auto* scratch = reinterpret_cast<unsigned char*>(softmax_smem);
  auto* slots = reinterpret_cast<SoftmaxStats*>(scratch);        // 2 x kWarps
  auto* deferred = reinterpret_cast<Bits*>(slots + 2 * kWarps);  // kGrid: kSlot
  [[maybe_unused]] auto* push = reinterpret_cast<ClusterPush*>(slots + 2 * kWarps + 1);  // kCluster
  // kGrid, thread 0: where the last round's 8 bytes go (in shared memory, not in a register
  // kept through every round)
  auto* deferred_dst = reinterpret_cast<Bits**>(scratch + kScratch - sizeof(Bits*));
  auto* buf0 = reinterpret_cast<PackOf<T, Pack>*>(scratch + kScratch);
  auto* buf1 = reinterpret_cast<PackOf<T, Pack>*>(scratch + kScratch + a.buffer_bytes);
  int reduce_parity = 0;  // softmax_stats_block_all_reduce's slot set

  // the task of iteration `it`; iterations: kNone / kCluster while the row exists, kGrid
  // `rounds` (every block runs every round: the grid barrier needs them all)
  int64_t first = 0, step = 1, iters = 0;
  int chunk = 0;
  if constexpr (Combine == BlockCombine::kNone) {
    first = blockIdx.x;
    step = gridDim.x;
  } else if constexpr (Combine == BlockCombine::kCluster) {
    first = blockIdx.x / a.split;
    step = gridDim.x / a.split;
    chunk = static_cast<int>(blockIdx.x % a.split);
  } else {
    first = blockIdx.x / a.split;
    step = a.rows_per_round;
    chunk = static_cast<int>(blockIdx.x % a.split);
  }
  if constexpr (Combine == BlockCombine::kGrid) {
    iters = a.rounds;
  } else {
    iters = first < a.rows ? (a.rows - first + step - 1) / step : 0;
  }
  const auto task = [&](int64_t it) {
    const int64_t row = first + it * step;
    return SoftmaxTask{row, chunk, row < a.rows};
  };
  const auto span = [&](const SoftmaxTask& t) {
    const T* src = a.in + t.row * a.ld_in;
    const int64_t lead = pack_head<Pack>(src, Pack);
    const int64_t begin = softmax_chunk_begin(t.chunk, a.split, a.cols, Pack, lead);
    const int64_t end = softmax_chunk_begin(t.chunk + 1, a.split, a.cols, Pack, lead);
    return SoftmaxSpan<T, Pack>(src + begin, a.out + t.row * a.ld_out + begin, end - begin);
  };
  // the span of iteration it's task (empty when the task is past the last row)
  const auto span_of = [&](int64_t it) {
    const SoftmaxTask t = task(it);
    return t.active ? span(t) : SoftmaxSpan<T, Pack>(a.in, a.out, 0);
  };
  // the packs of a span kept in shared memory: all but a kGrid chunk's past its buffer
  const auto held_of = [&](const SoftmaxSpan<T, Pack>& sp) {
    if constexpr (Combine == BlockCombine::kGrid) {
      const int cap = static_cast<int>(a.buffer_bytes / int64_t{sizeof(PackOf<T, Pack>)});
      return sp.packs() < cap ? sp.packs() : cap;
    } else {
      return sp.packs();
    }
  };
  // issues a span's packs held in shared memory into buf as one commit group
  const auto issue = [&](const SoftmaxSpan<T, Pack>& sp, PackOf<T, Pack>* buf) {
    const int n = held_of(sp);
    for (int v = threadIdx.x; v < n; v += Block)
      softmax_issue_pack(sp, buf, v);
    __pipeline_commit();
  };

  if (Combine == BlockCombine::kGrid && threadIdx.x == 0) *deferred_dst = nullptr;
  // kCluster: rows done, the pair exchange's round (a 32-bit count of its own: the slot
  // picked from the 64-bit row loop's counter made ptxas spill at 40 registers)
  [[maybe_unused]] unsigned round = 0;
  if constexpr (Combine == BlockCombine::kCluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cluster_push_init(push);
#endif
  }
  // each iteration's span is made once, as the previous iteration's `next`
  SoftmaxSpan<T, Pack> sp = span_of(0);
  if (iters > 0) issue(sp, buf0);
  for (int64_t it = 0; it < iters; ++it) {
    PackOf<T, Pack>* buf = (a.buffers == 2 && (it & 1)) ? buf1 : buf0;
    const SoftmaxTask t = task(it);
    const int n = held_of(sp);  // packs in shared memory (kGrid: sp.packs() - n streamed)
    const auto next_span = [&] {
      return it + 1 < iters ? span_of(it + 1) : SoftmaxSpan<T, Pack>(a.in, a.out, 0);
    };
    // the next task's span; kGrid makes it only for the write (not live through the loads
    // of the packs past the buffer)
    const SoftmaxSpan<T, Pack> next_early =
        Combine == BlockCombine::kGrid ? SoftmaxSpan<T, Pack>(a.in, a.out, 0) : next_span();
    // two buffers: the next task's chunk goes into the other buffer before this one is even
    // waited for (its loads then overlap this chunk's statistics too: issued after them, a
    // grid round took ~6 us more than its bytes). The other buffer is free: this thread
    // is done with its own slots there (the only ones it reads, writes or copies into), the
    // previous iteration's write read them.
    const bool early = a.buffers == 2 && it + 1 < iters;
    SoftmaxStats st = softmax_stats_empty();
    float comp = 0.f;  // st.s's compensation (f32; softmax_stats_add)
    if constexpr (Combine == BlockCombine::kGrid) {
      // the packs past the buffer, while the buffer's copies are in flight (one buffer)
      softmax_stream_stats<kFast, Block>(sp, n, st, comp);
    }
    if (early) {
      issue(Combine == BlockCombine::kGrid ? next_span() : next_early, (it & 1) ? buf0 : buf1);
      __pipeline_wait_prior(1);  // this thread's copies of this chunk have landed
    } else {
      __pipeline_wait_prior(0);
    }
    // cp.async.wait_group is no compiler fence: keep the reads of the chunk below it
    __syncwarp();

    if constexpr (kExpOnce) {
      // the row max, then exp(x - max) once an element, kept in the element's slot (the
      // same thread reads it back for the output) and summed
      float m = -INFINITY;
      for (int v = threadIdx.x; v < n; v += Block) {
        float x[Pack];
        softmax_from_smem(sp, buf, v, x);
#pragma unroll
        for (int k = 0; k < Pack; ++k)
          m = fmaxf(m, x[k]);
      }
      m = softmax_stats_block_all_reduce<Block, kFast>({m, 0.f}, slots, reduce_parity).m;
      const float base = m == -INFINITY ? 0.f : m;  // all -inf: every e is 0, s is 0
      float s = 0.f;
      for (int v = threadIdx.x; v < n; v += Block) {
        float x[Pack];
        softmax_from_smem(sp, buf, v, x);
        PackOf<T, Pack> e;  // T is float
#pragma unroll
        for (int k = 0; k < Pack; ++k) {
          e.elem[k] = softmax_exp<kFast>(x[k] - base);  // -inf outside the span: 0
          s += e.elem[k];
        }
        buf[v] = e;
      }
      st = softmax_stats_block_all_reduce<Block, kFast>({m, s}, slots, reduce_parity);
    } else {
      for (int v = threadIdx.x; v < n; v += Block) {
        float x[Pack];
        softmax_from_smem(sp, buf, v, x);
        // a chunk's packs over the block: a few dozen terms a thread, summed plainly (the
        // compensated add cost f32 few-row cluster / grid rows 3-7 %, bench/NOTES.md)
        softmax_stats_add<kFast, Pack, false>(st, comp, x);
      }
      softmax_stats_settle<kFast>(st, comp);
      st = softmax_stats_block_all_reduce<Block, kFast>(st, slots, reduce_parity);
    }
    if constexpr (Combine == BlockCombine::kCluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      // every block's pair to every block (no barrier: the previous row's stores stay off
      // this row's critical path), then lane l takes rank l % split's
      cluster_push_send(
          push, round,
          static_cast<unsigned long long>(__float_as_uint(st.s)) << 32 | __float_as_uint(st.m),
          a.split);
      const unsigned long long bits =
          cluster_push_wait(push, round, threadIdx.x % kWarpSize % a.split);
      const SoftmaxStats q{__uint_as_float(static_cast<unsigned>(bits)),
                           __uint_as_float(static_cast<unsigned>(bits >> 32))};
      switch (a.split) {
        case 2:
          st = softmax_stats_warp_all_reduce<2, kFast>(q);
          break;
        case 4:
          st = softmax_stats_warp_all_reduce<4, kFast>(q);
          break;
        case 8:
          st = softmax_stats_warp_all_reduce<8, kFast>(q);
          break;
        default:
          st = softmax_stats_warp_all_reduce<16, kFast>(q);
          break;
      }
      ++round;
#else
      __trap();  // plans pick clusters only for kernels compiled with them (d.clusters())
#endif
    } else if constexpr (Combine == BlockCombine::kGrid) {
      Bits* slot = reinterpret_cast<Bits*>(sp.dst);
      if (threadIdx.x == 0 && t.active) {
        Bits w[kSlot];
        memcpy(w, &st, sizeof(w));
#pragma unroll
        for (int k = 0; k < kSlot; ++k)
          slot[k] = w[k];
      }
      grid_sync();
      // every block's pair of this round is parked; every read of last round's is done
      if (threadIdx.x == 0 && *deferred_dst != nullptr) {
#pragma unroll
        for (int k = 0; k < kSlot; ++k)
          (*deferred_dst)[k] = deferred[k];
      }
      SoftmaxStats q = softmax_stats_empty();
      if (t.active) {
        const int64_t lead = pack_head<Pack>(a.in + t.row * a.ld_in, Pack);
        // the row's output: this chunk's (sp.dst) less its first column
        const T* dst = sp.dst - softmax_chunk_begin(t.chunk, a.split, a.cols, Pack, lead);
        for (int j = threadIdx.x; j < a.split; j += Block) {
          const auto* p = reinterpret_cast<const Bits*>(
              dst + softmax_chunk_begin(j, a.split, a.cols, Pack, lead));
          Bits w[kSlot];
#pragma unroll
          for (int k = 0; k < kSlot; ++k)
            w[k] = __ldcg(p + k);
          SoftmaxStats pj;
          memcpy(&pj, w, sizeof(pj));
          q = softmax_stats_combine<kFast>(q, pj);
        }
      }
      st = softmax_stats_block_all_reduce<Block, kFast>(q, slots, reduce_parity);
      if (threadIdx.x == 0) *deferred_dst = t.active ? slot : nullptr;
    }
    // every thread holds the row's max st.m and sum st.s. Write the chunk; with one buffer,
    // each pack's slot takes the next task's pack as soon as its output is out (the same
    // thread read the slot for that output), so the next chunk loads during this write.
    const float inv = 1.f / st.s;
    const float log_s = logf(st.s);
    if constexpr (Combine == BlockCombine::kGrid) {
      // the packs past the buffer first (their reads follow the statistics' closest)
      softmax_stream_write<Kind, kFast, Block>(sp, n, st.m, inv, log_s);
    }
    const SoftmaxSpan<T, Pack> next = Combine == BlockCombine::kGrid ? next_span() : next_early;
    const bool stream = a.buffers == 1 && it + 1 < iters;
    const int n_next = stream ? held_of(next) : 0;
    for (int v = threadIdx.x; v < (n > n_next ? n : n_next); v += Block) {
      if (v < n) {
        float x[Pack], y[Pack];
        softmax_from_smem(sp, buf, v, x);
#pragma unroll
        for (int k = 0; k < Pack; ++k)
          y[k] = kExpOnce ? x[k] * inv : softmax_out<Kind, kFast>(x[k], st.m, inv, log_s);
        const int64_t c = sp.first(v);
        if (Combine != BlockCombine::kGrid || c >= kSlot) {
          softmax_store(sp, v, y);
        } else {
          // the pair's 8 bytes: kept in the scratch until the next barrier
#pragma unroll
          for (int k = 0; k < Pack; ++k) {
            if (c + k >= 0 && c + k < sp.len) {
              const T o = convert<T>(y[k]);
              if (c + k < kSlot) {
                memcpy(&deferred[c + k], &o, sizeof(T));
              } else {
                sp.dst[c + k] = o;
              }
            }
          }
        }
      }
      if (v < n_next) softmax_issue_pack(next, buf0, v);
    }
    if (stream) __pipeline_commit();
    sp = next;
  }
  if constexpr (Combine == BlockCombine::kCluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cluster_push_exit();
#endif
  } else if constexpr (Combine == BlockCombine::kGrid) {
    if (iters > 0) {
      grid_sync();  // every read of the last round's pairs is done
      if (threadIdx.x == 0 && *deferred_dst != nullptr) {
#pragma unroll
        for (int k = 0; k < kSlot; ++k)
          (*deferred_dst)[k] = deferred[k];
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// The fallback: one block per row (rows b, b + gridDim.x, ...), any width, no shared-memory
// row: an online pair over the row (kU packs a thread in flight), the block's pair, then a
// second read that writes.
template <typename T, SoftmaxKind Kind, int Pack, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, kSoftmaxWideBlock / Block))
    softmax_two_pass_kernel(const T* in, int64_t ld_in, T* out, int64_t ld_out, int64_t rows,
                            int64_t cols) {
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr int kU = Pack == 1 ? 8 : 4;
  __shared__ SoftmaxStats slots[2 * (Block / kWarpSize)];
  int reduce_parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const SoftmaxSpan<T, Pack> sp(in + row * ld_in, out + row * ld_out, cols);
    const int64_t n = sp.packs();
    SoftmaxStats st = softmax_stats_empty();
    float comp = 0.f;  // st.s's compensation (f32; softmax_stats_add)
    for (int64_t v0 = threadIdx.x; v0 < n; v0 += int64_t{kU} * Block) {
      float x[kU][Pack];  // kU loads issued before any is used
#pragma unroll
      for (int u = 0; u < kU; ++u)
        softmax_load(sp, v0 + int64_t{u} * Block, x[u]);  // past the end: -inf
#pragma unroll
      for (int u = 0; u < kU; ++u)
        softmax_stats_add<kFast>(st, comp, x[u]);
    }
    softmax_stats_settle<kFast>(st, comp);
    st = softmax_stats_block_all_reduce<Block, kFast>(st, slots, reduce_parity);
    const float inv = 1.f / st.s;
    const float log_s = logf(st.s);
    // the whole packs, one load and one 16-byte store each (store_pack_global: store_pack left
    // nvcc's front end as one store an element here), the partial head and tail packs apart
    for (int v = sp.lo + static_cast<int>(threadIdx.x); v < sp.hi; v += Block) {
      const int64_t c = sp.first(v);
      const PackOf<T, Pack> raw = load_pack<Pack>(sp.src + c, 0);
      PackOf<T, Pack> y;
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        y.elem[k] =
            convert<T>(softmax_out<Kind, kFast>(convert<float>(raw.elem[k]), st.m, inv, log_s));
      store_pack_global<Pack>(sp.dst + c, 0, y);
    }
    const int partial = threadIdx.x == 0 && sp.lo == 1 && n >= 1                   ? 0
                        : threadIdx.x == Block - 1 && sp.hi == n - 1 && n - 1 >= 1 ? n - 1
                                                                                   : -1;
    if (partial >= 0) {
      float x[Pack], y[Pack];
      softmax_load(sp, partial, x);
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        y[k] = softmax_out<Kind, kFast>(x[k], st.m, inv, log_s);
      softmax_store(sp, partial, y);
    }
  }
}

}  // namespace kernelkit::detail
