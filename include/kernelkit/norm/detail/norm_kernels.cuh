// SPDX-License-Identifier: Apache-2.0
// Norm kernels (internal): the register kernel (a row in the registers of a warp or of a
// block: read once, reduced, written once), the tile kernel (short rows off the grid in
// shared-memory tiles of several rows: read once) and the two-pass fallback (a block per row,
// statistics then a second read that writes). norm_plan.cuh says which one runs; launch_norm
// (norm.cuh) launches it.
//
// Rows at any phase (core pack.cuh): the register and two-pass kernels take 16-byte packs at
// the phase of x's row h (access q: columns [q * Pack - h, q * Pack - h + Pack)), the row's
// partial head and tail element by element, so x is read in whole 16-byte loads whatever its
// alignment. The other operands are read and written at the same columns wherever they sit:
// where one's row is at x's phase (y, residual, sum from the same allocator as x: every call
// we know of) its accesses are whole 16-byte ones too. The weight and bias, whose phase against
// a row of odd stride changes row by row, read each body access off their grid as the two
// aligned 16-byte chunks around it, its bytes shifted into place (load_row_pack_any: loads
// that hit L1, a few funnel shifts and selects). y, residual and sum off x's phase (allocated
// apart by part of 16 bytes: rare) move element by element (the shift's registers spilled in
// add_rms_norm's kernels). Why not stage the weight in shared memory: its phase against the
// row changes with the row, so shared memory would need the same shift (or element-wise reads,
// 4..8-way bank conflicts), and kBlock's up to 16K columns of weight and bias (128 KB of
// floats) would cost occupancy. The two-pass kernel reads a float weight beside 2-byte x
// element by element off its grid (shifted, its chunks spilled 8-24 bytes at 64 registers).
// The split kernel takes 16-byte packs only where every operand and the row stride are on the
// grid, else one element per access (no phase).
// Each register and two-pass kernel also comes aligned (Phased false: every operand and the row
// stride on the grid, h = 0, whole accesses, plain loads and stores; the code before the
// phased rows, SASS identical): the phase code costs on-grid rows 1.1-1.9x on the H200.
//
// Numerics, in float: rms: ms = sum(x^2) / cols, rstd = rsqrt(ms + eps), y = x * rstd * w.
// add_rms: s = x + residual rounded to T (what sum_out holds), then rms of s. layer: mean =
// sum(x) / cols, var = sum((x - mean)^2) / cols over the registers-held row (two
// reductions, not E[x^2] - E[x]^2); the streamed path keeps a Welford triple per thread
// (merged by Chan's formula pack by pack, then across the block in a fixed tree). y = (x -
// mean) * rstd * w + b. Every reduction has a fixed order (warp butterfly / shfl_down tree,
// then the warps' slots): the same bits run after run. A NaN in a row makes the row's
// statistics NaN; an inf makes rms's rstd 0 (y: 0, the inf element NaN) and layer_norm's row
// NaN, as the float64 formulas do.
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/grid.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/norm/norm_plan.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::detail {

// The operands of one call. residual / sum: kAddRms only; weight, bias, mean, rstd may be
// null (no scale, no shift, statistics not saved).
template <typename T, typename W>
struct NormArgs {
  const T* x;
  const T* residual;
  const W* weight;
  const W* bias;
  T* y;
  T* sum;
  float* mean;
  float* rstd;
  int64_t rows;
  int64_t cols;
  float eps;
};

// Columns [c, c + N) of a row of n elements of U (any phase; c may be negative or reach past
// n: 0 outside the row) as floats, in accesses of at most 16 bytes (a float weight beside
// 2-byte x: two of them for 8 elements). Shift: whole accesses off the grid as two aligned
// chunks shifted into place (the weight and bias, off x's phase on every row of an odd
// stride); false: element by element (residual and sum, off x's phase only when allocated
// apart by part of 16 bytes; the shift's registers spilled 4-28 bytes in add_rms_norm's
// kernels on sm_90).
template <int N, bool Shift, typename U>
__device__ __forceinline__ void norm_load(const U* row, int64_t c, int64_t n, float (&out)[N]) {
  constexpr int kChunk = N < kMaxPackBytes / int(sizeof(U)) ? N : kMaxPackBytes / int(sizeof(U));
  const U zero = convert<U>(0.f);
#pragma unroll
  for (int i = 0; i < N; i += kChunk) {
    const ::kernelkit::Pack<U, kChunk> v = load_row_pack_any<kChunk, Shift>(row, c + i, n, zero);
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      out[i + j] = convert<float>(v.elem[j]);
  }
}

// Stores the columns of v inside a row of n elements of T at [c, c + N) (any phase). Wide: the
// whole aligned access through store_pack_global (the register kernels: store_pack's copy of a
// pack built element by element came out of nvcc 13.0 there as one 2-byte store an element:
// kWarp, and the __half kBlock kernels with a float weight); the two-pass and split kernels keep
// store_pack (their SASS as before).
template <int N, bool Wide = false, typename T>
__device__ __forceinline__ void norm_store(T* row, int64_t c, int64_t n, const float (&v)[N]) {
  ::kernelkit::Pack<T, N> raw;
#pragma unroll
  for (int j = 0; j < N; ++j)
    raw.elem[j] = convert<T>(v[j]);
  store_row_pack_any<N, Wide>(row, c, n, raw);
}

// N elements of U at p (aligned to min(16, N x sizeof(U)) bytes) as floats: 16-byte loads
// (the backward kernels, whose operands are on the pack grid or read one element an access).
template <int N, typename U>
__device__ __forceinline__ void norm_load(const U* p, float (&out)[N]) {
  constexpr int kChunk = N < kMaxPackBytes / int(sizeof(U)) ? N : kMaxPackBytes / int(sizeof(U));
#pragma unroll
  for (int i = 0; i < N; i += kChunk) {
    const ::kernelkit::Pack<U, kChunk> v = load_pack<kChunk>(p + i, 0);
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      out[i + j] = convert<float>(v.elem[j]);
  }
}

// Stores N floats as T at p (aligned to N x sizeof(T) bytes; N x sizeof(T) <= 16); Wide:
// through store_pack_global (as the row form above).
template <int N, bool Wide = false, typename T>
__device__ __forceinline__ void norm_store(T* p, const float (&v)[N]) {
  ::kernelkit::Pack<T, N> raw;
#pragma unroll
  for (int j = 0; j < N; ++j)
    raw.elem[j] = convert<T>(v[j]);
  if constexpr (Wide) {
    store_pack_global<N>(p, 0, raw);
  } else {
    store_pack<N>(p, 0, raw);
  }
}

// Whether columns [c, c + Pack) lie wholly inside a row of n.
template <int Pack>
__device__ __forceinline__ bool norm_whole(int64_t c, int64_t n) {
  return c >= 0 && c + Pack <= n;
}

// The row sum over the Threads threads of a row, in every one of them: a warp's butterfly,
// or the block's reduction (fixed order, the same bits in every thread).
template <int Threads, int Block>
__device__ __forceinline__ float norm_row_sum(float v) {
  if constexpr (Threads == kWarpSize) {
    return warp_all_reduce<kWarpSize>(v, Sum{});
  } else {
    static_assert(Threads == Block, "a row is a warp or the whole block");
    return block_all_reduce<Block>(v, Sum{});
  }
}

// As norm_row_sum, over a group of `lanes` lanes of a warp (Threads == 32; lanes a power of
// two 1..32, the same in every lane of the warp: the groups are aligned runs of lanes): a
// segmented butterfly, xor offsets from 16 down, those not below `lanes` skipped (a uniform
// test: every lane takes each shuffle or none), so each shuffle stays inside its group; at 32
// lanes the order and bits of warp_all_reduce. Threads == Block: the block's reduction.
template <int Threads, int Block>
__device__ __forceinline__ float norm_row_sum(float v, int lanes) {
  if constexpr (Threads == kWarpSize) {
#pragma unroll
    for (int o = kWarpSize / 2; o > 0; o /= 2)
      if (o < lanes) v += __shfl_xor_sync(kFullMask, v, o);
    return v;
  } else {
    return norm_row_sum<Threads, Block>(v);
  }
}

// Columns [c, c + N) of a row of n elements of U as floats: at any phase (Phased: norm_load's
// row form, Shift as there), else on the pack grid and whole.
template <int N, bool Phased, bool Shift, typename U>
__device__ __forceinline__ void norm_load_at(const U* row, int64_t c, int64_t n, float (&out)[N]) {
  if constexpr (Phased) {
    norm_load<N, Shift>(row, c, n, out);
  } else {
    norm_load<N>(row + c, out);
  }
}

// Writes y for the elements v of a row's columns [c, c + Pack) inside the row: (v - mean) *
// rstd, times the weight and plus the bias where given. Phased false: every operand on the
// pack grid and the access whole (plain loads and stores). Chunked (a float weight beside
// 2-byte x, in the register kernels): the weight and bias 16 bytes at a time, each chunk's
// columns through an empty asm that takes the previous chunk's result, so at most one chunk of
// each is in registers (the kBlock kernels of 4 packs sit at 64 registers: both whole spilled
// 4-12 bytes on sm_90).
template <int Pack, bool Phased, bool Shift = true, bool Wide = false, bool Chunked = false,
          typename T, typename W>
__device__ __forceinline__ void norm_write(const NormArgs<T, W>& a, int64_t offset, int64_t c,
                                           float (&v)[Pack], float mean, float rstd) {
#pragma unroll
  for (int j = 0; j < Pack; ++j)
    v[j] = (v[j] - mean) * rstd;
  constexpr int kWeights = kMaxPackBytes / int{sizeof(W)};  // weights a 16-byte chunk holds
  constexpr int kChunk = Chunked && kWeights < Pack ? kWeights : Pack;
  int after = 0;
#pragma unroll
  for (int i = 0; i < Pack; i += kChunk) {
    int64_t ci = c + i;
    if constexpr (kChunk < Pack) asm volatile("" : "+l"(ci) : "r"(after));
    if (a.weight != nullptr) {
      float w[kChunk];
      norm_load_at<kChunk, Phased, Shift>(a.weight, ci, a.cols, w);
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        v[i + j] *= w[j];
    }
    if (a.bias != nullptr) {
      float b[kChunk];
      norm_load_at<kChunk, Phased, Shift>(a.bias, ci, a.cols, b);
#pragma unroll
      for (int j = 0; j < kChunk; ++j)
        v[i + j] += b[j];
    }
    after = __float_as_int(v[i + kChunk - 1]);
  }
  if constexpr (Phased) {
    norm_store<Pack, Wide>(a.y + offset, c, a.cols, v);
  } else {
    norm_store<Pack, Wide>(a.y + offset + c, v);
  }
}

// Reads the row's columns [c, c + Pack) as stored (0 outside the row; x + c on the pack grid
// where the access is whole: c is an access of x's row): x, or (kAddRms) x + residual rounded
// to T, which is written to sum right away (the same thread reads nothing of sum later here;
// in place over x or residual is safe: this thread read its columns just now, and an
// off-phase residual is read element by element, no other column's bytes).
template <NormKind Kind, int Pack, bool Phased, bool Wide = false, typename T, typename W>
__device__ __forceinline__ auto norm_read(const NormArgs<T, W>& a, int64_t offset, int64_t c) {
  ::kernelkit::Pack<T, Pack> x;
  if constexpr (!Phased) {  // every operand on the grid, the access whole
    x = load_pack<Pack>(a.x + offset + c, 0);
  } else {
    x = load_row_pack<Pack>(a.x + offset, c, a.cols, convert<T>(0.f));
  }
  if constexpr (Kind == NormKind::kAddRms) {
    float r[Pack];
    norm_load_at<Pack, Phased, false>(a.residual + offset, c, a.cols, r);
#pragma unroll
    for (int j = 0; j < Pack; ++j)
      x.elem[j] = convert<T>(convert<float>(x.elem[j]) + r[j]);
    if constexpr (Phased) {
      store_row_pack_any<Pack, Wide>(a.sum + offset, c, a.cols, x);
    } else if constexpr (Wide) {
      store_pack_global<Pack>(a.sum + offset + c, 0, x);
    } else {
      store_pack<Pack>(a.sum + offset + c, 0, x);
    }
  }
  return x;
}

// As above, as floats in v.
template <NormKind Kind, int Pack, bool Phased, bool Wide = false, typename T, typename W>
__device__ __forceinline__ void norm_read(const NormArgs<T, W>& a, int64_t offset, int64_t c,
                                          float (&v)[Pack]) {
  const ::kernelkit::Pack<T, Pack> x = norm_read<Kind, Pack, Phased, Wide>(a, offset, c);
#pragma unroll
  for (int j = 0; j < Pack; ++j)
    v[j] = convert<float>(x.elem[j]);
}

// ---------------------------------------------------------------------------------------
// A row in registers: a group of threads per row, thread t of it holding accesses p * width +
// t (p < Packs) of the row at x's phase (Pack columns each, the first and last possibly
// partial), as stored (0 outside the row): 2-byte elements two a register, converted to float
// where used (twice: the statistics, the write), so a thread holds 32 of them in the 16
// registers that hold 16 floats (the same bytes in flight a thread as f32). kBlock (Threads ==
// Block): the block holds the row. kWarp (Threads 32): groups of `lanes` lanes (a power of two
// 1..32, the same over the launch: the plan's, from the row's access count), 32 / lanes rows a
// warp, Block / lanes a block, the rows of a warp consecutive; the statistics by a segmented
// butterfly (norm_row_sum with lanes). cols < 2^31.

// The row's registers through an empty asm, which the compiler cannot see through: 2-byte
// elements are converted to float again after it rather than the floats of an earlier
// conversion held (32 floats a thread: ptxas -v spilled 8-124 bytes at 48 registers on sm_90).
// after: a value the asm takes as an input, so the elements' conversions wait for it.
template <typename P>
__device__ __forceinline__ void norm_opaque(P& v, int after = 0) {
  if constexpr (sizeof(v.elem[0]) == 2) {
#pragma unroll
    for (int w = 0; w < int{sizeof(P)} / 4; ++w) {
      uint32_t u;
      memcpy(&u, reinterpret_cast<const char*>(&v) + 4 * w, sizeof(u));
      asm volatile("" : "+r"(u) : "r"(after));
      memcpy(reinterpret_cast<char*>(&v) + 4 * w, &u, sizeof(u));
    }
  }
}
template <typename P, int Packs>
__device__ __forceinline__ void norm_opaque(P (&v)[Packs]) {
#pragma unroll
  for (int p = 0; p < Packs; ++p)
    norm_opaque(v[p]);
}

// One row of norm_registers_kernel: thread t of the row's width threads; live false: a group
// past the last row (kWarp), which reads and writes nothing but takes its warp's shuffles.
template <NormKind Kind, int Pack, int Threads, int Packs, int Block, bool Phased, typename T,
          typename W>
__device__ __forceinline__ void norm_registers_row(const NormArgs<T, W>& a, int64_t row, int t,
                                                   int width, bool live, int cols, float inv_cols) {
  constexpr bool kGroups = Threads == kWarpSize;
  // y and sum stored through store_pack_global (norm_store): kWarp, and 2-byte kBlock (whose
  // __half kernels with a float weight came out of store_pack as 8 2-byte stores a pack; f32
  // kBlock keeps store_pack: layer f32 47993x1164 ran 1.14x slower through it on the H200)
  constexpr bool kWide = kGroups || sizeof(T) == 2;
  // columns of the row this thread reads and writes (0: a group past the last row)
  const int n = live ? cols : 0;
  const int64_t offset = row * a.cols;
  // access q: columns q * Pack - h, ... (aligned: 0)
  const int h = Phased && live ? pack_phase<Pack>(a.x + offset) : 0;
  ::kernelkit::Pack<T, Pack> v[Packs];
#pragma unroll
  for (int p = 0; p < Packs; ++p) {
    const int c = (p * width + t) * Pack - h;
    if (c < n) {
      v[p] = norm_read<Kind, Pack, Phased, kWide>(a, offset, c);
    } else if constexpr (!Phased) {  // zero bits (0.0 in every type) a word at a time: element
                                     // by element the 2-byte ones were merged into their
                                     // registers one by one (PRMT) and kept apart (a 2-byte
                                     // 4-pack layer kernel spilled 4 bytes on sm_90)
      memset(&v[p], 0, sizeof(v[p]));
    } else {  // (phased, a word at a time spilled 4-12 bytes instead: the partial head's and
              // tail's elements come element by element anyway)
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        v[p].elem[j] = convert<T>(0.f);
    }
  }
  // the row's statistics, in every thread of the row
  float mean = 0.f, s = 0.f;
  if constexpr (Kind == NormKind::kLayer) {
#pragma unroll
    for (int p = 0; p < Packs; ++p)
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        s += convert<float>(v[p].elem[j]);
    // rounded once (__fmul_rn: never fused into x - mean), so y uses the mean it saves
    mean = __fmul_rn(norm_row_sum<Threads, Block>(s, width), inv_cols);
    s = 0.f;
    // (kWarp only: a 2-byte kBlock row with a float weight and bias spilled 16 bytes on sm_90
    // with it, kWarp 8 without)
    if constexpr (kGroups) norm_opaque(v);
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int c = (p * width + t) * Pack - h;
      if (!Phased ? c < n : norm_whole<Pack>(c, n)) {
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          const float d = convert<float>(v[p].elem[j]) - mean;
          s += d * d;
        }
      } else if (Phased && c < n) {  // the partial head or tail: its columns inside the row
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          const float d = convert<float>(v[p].elem[j]) - mean;
          if (c + j >= 0 && c + j < n) s += d * d;
        }
      }
    }
  } else {
#pragma unroll
    for (int p = 0; p < Packs; ++p)
#pragma unroll
      for (int j = 0; j < Pack; ++j) {
        const float x = convert<float>(v[p].elem[j]);
        s += x * x;
      }
  }
  const float rstd = rsqrtf(norm_row_sum<Threads, Block>(s, width) * inv_cols + a.eps);
  if (t == 0 && live) {
    if (a.rstd != nullptr) a.rstd[row] = rstd;
    if (Kind == NormKind::kLayer && a.mean != nullptr) a.mean[row] = mean;
  }
  // kWarp: the group's width through an empty asm, which the compiler cannot see through, so
  // the writes recompute their columns (an IMAD an access) instead of holding each access's
  // addresses across the reductions (ptxas -v: up to 104 bytes spilled so at 48 registers)
  if constexpr (kGroups) asm volatile("" : "+r"(width));
  norm_opaque(v);
  // A float weight (and bias) beside 2-byte x: each access's column and elements through an
  // empty asm that takes the previous access's result, so its weight loads and conversions
  // wait for that access (the compiler hoisted the later accesses' float weights and
  // conversions ahead of the earlier stores: 4-16 bytes spilled at kBlock's 64 registers on
  // sm_75 / sm_90 / sm_100)
  constexpr bool kSerial = sizeof(W) > sizeof(T);
  int after = 0;
#pragma unroll
  for (int p = 0; p < Packs; ++p) {
    int c = (p * width + t) * Pack - h;
    if constexpr (kSerial) {
      asm volatile("" : "+r"(c) : "r"(after));
      norm_opaque(v[p], after);
    }
    if (c < n) {
      float x[Pack];
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        x[j] = convert<float>(v[p].elem[j]);
      norm_write<Pack, Phased, true, kWide, kSerial>(a, offset, c, x, mean, rstd);
      if constexpr (kSerial) after = __float_as_int(x[Pack - 1]);
    }
  }
}

// Rows: the block's first ones, then by the grid. kWarp: the loop runs while the warp's first
// row is a row (uniform over the warp, whose lanes all take the shuffles). kBlock: main's loop
// (the phased kBlock kernels sit at their 48-register bound: a reshaped loop spilled 8-92
// bytes there).
// inv_cols: 1 / cols, rounded as the other kernels compute it (a parameter, so no register
// holds it across the rows).
template <NormKind Kind, typename T, typename W, int Pack, int Threads, int Packs, int Block,
          bool Phased>
__global__ void __launch_bounds__(Block,
                                  min_blocks_per_sm(Block, norm_min_blocks(Block, Pack, Pack* Packs,
                                                                           Threads == kWarpSize,
                                                                           kCompiledArch, Phased)))
    norm_registers_kernel(const NormArgs<T, W> a, int lanes, float inv_cols) {
  static_assert(Threads == kWarpSize || Threads == Block, "a row is a warp's group or the block");
  static_assert(Pack * Packs * sizeof(T) <= 64, "a thread holds at most 16 registers of a row");
  const int cols = static_cast<int>(a.cols);
  if constexpr (Threads == kWarpSize) {
    __builtin_assume(lanes >= 1 && lanes <= kWarpSize);
    const int t = static_cast<int>(threadIdx.x % kWarpSize) & (lanes - 1);
    const int group = static_cast<int>(threadIdx.x % kWarpSize) / lanes;  // its row in the warp
    const int rows_per_block = Block / lanes;
    for (int64_t row = int64_t{blockIdx.x} * rows_per_block + threadIdx.x / lanes;
         row - group < a.rows;) {
      norm_registers_row<Kind, Pack, Threads, Packs, Block, Phased>(a, row, t, lanes, row < a.rows,
                                                                    cols, inv_cols);
      // the grid's rows a step, from an opaque copy of gridDim.x: recomputed (an IMAD) rather
      // than a 64-bit step held across the row (ptxas spilled its high word at the bound)
      unsigned grid = gridDim.x;
      asm volatile("" : "+r"(grid));
      row += int64_t{grid} * rows_per_block;
    }
  } else {
    for (int64_t row = int64_t{blockIdx.x} + threadIdx.x / Threads; row < a.rows; row += gridDim.x)
      norm_registers_row<Kind, Pack, Threads, Packs, Block, Phased>(
          a, row, static_cast<int>(threadIdx.x) % Threads, Threads, true, cols, inv_cols);
  }
}

// ---------------------------------------------------------------------------------------
// The two-pass fallback.

// A Welford triple: count, mean, sum of squared deviations from the mean.
struct NormWelford {
  float n, mean, m2;
};

// Chan's merge of two triples (a first: the order is fixed by the callers).
__device__ __forceinline__ NormWelford norm_welford_merge(NormWelford a, NormWelford b) {
  const float n = a.n + b.n;
  if (b.n == 0.f) return a;
  if (a.n == 0.f) return b;
  const float delta = b.mean - a.mean;
  const float r = b.n / n;
  return {n, a.mean + delta * r, a.m2 + b.m2 + delta * delta * a.n * r};
}

// The block's triple in every thread: a shfl_down tree in each warp, the warps' triples
// merged by warp 0 in warp order, broadcast through shared memory.
template <int Block>
__device__ __forceinline__ NormWelford norm_welford_block(NormWelford w) {
  constexpr int kWarps = Block / kWarpSize;
  __shared__ NormWelford slots[kWarps];
  __shared__ NormWelford result;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o /= 2) {
    const NormWelford b{__shfl_down_sync(kFullMask, w.n, o), __shfl_down_sync(kFullMask, w.mean, o),
                        __shfl_down_sync(kFullMask, w.m2, o)};
    w = norm_welford_merge(w, b);
  }
  __syncthreads();  // the previous row's readers of result and slots are done
  if (lane == 0) slots[warp] = w;
  __syncthreads();
  if (threadIdx.x == 0) {
    NormWelford r = slots[0];
    for (int i = 1; i < kWarps; ++i)
      r = norm_welford_merge(r, slots[i]);
    result = r;
  }
  __syncthreads();
  return result;
}

// The first pass over accesses [begin, end) of a row at phase h (access v: columns v * Pack -
// h, ...; kU accesses a thread in flight; kAddRms writes the sum here): the thread's Welford
// triple and plain sum (kLayer) or sum of squares (rms) of its accesses begin + t, begin + t +
// Block, ... (a partial head or tail counts its columns inside the row). Phased false: h = 0,
// every access whole.
template <NormKind Kind, int Pack, int Block, bool Phased, typename T, typename W>
__device__ __forceinline__ void norm_stream_stats(const NormArgs<T, W>& a, int64_t offset, int h,
                                                  int64_t begin, int64_t end, NormWelford& w,
                                                  float& ss) {
  constexpr int kU = Pack == 1 ? 8 : 16 / Pack;  // 16 floats in flight a thread
  for (int64_t v0 = begin + threadIdx.x; v0 < end; v0 += int64_t{kU} * Block) {
    float x[kU][Pack];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t v = v0 + int64_t{u} * Block;
      if (v < end) norm_read<Kind, Pack, Phased>(a, offset, v * Pack - h, x[u]);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t v = v0 + int64_t{u} * Block;
      if (v >= end) continue;
      if constexpr (Kind == NormKind::kLayer) {
        // (aligned: every access whole)
        const int64_t c = Phased ? v * Pack - h : 0;
        float m = 0.f;
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          m += x[u][j];  // (0 outside the row)
        float m2 = 0.f;
        if (!Phased || norm_whole<Pack>(c, a.cols)) {
          m *= 1.f / Pack;
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            m2 += (x[u][j] - m) * (x[u][j] - m);
          w = norm_welford_merge(w, {float(Pack), m, m2});
          ss += m * Pack;  // the plain sum: the mean where Welford's is not finite
        } else {
          int k = 0;
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            k += c + j >= 0 && c + j < a.cols ? 1 : 0;
          ss += m;
          m /= static_cast<float>(k);
#pragma unroll
          for (int j = 0; j < Pack; ++j)
            if (c + j >= 0 && c + j < a.cols) m2 += (x[u][j] - m) * (x[u][j] - m);
          w = norm_welford_merge(w, {static_cast<float>(k), m, m2});
        }
      } else {
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          ss += x[u][j] * x[u][j];
      }
    }
  }
}

// One block per row (rows b, b + gridDim.x, ...), any width (cols may pass 2^31), at x's
// phase: the statistics over a first read (kAddRms writes the sum here), then a second read (of x,
// or of the sum just written: each thread reads back only its own accesses) that writes y.
// Phased false: every operand on the grid (h = 0). The phased kernel is held to two blocks a
// SM (64 registers, as the aligned one builds): at 67 registers one block a SM fit, and it ran
// 1.4-1.9x slower than main's on the H200.
template <NormKind Kind, typename T, typename W, int Pack, int Block, bool Phased>
__global__ void __launch_bounds__(Block, Phased ? min_blocks_per_sm(Block, 2) : 1)
    norm_two_pass_kernel(const NormArgs<T, W> a) {
  const float inv_cols = 1.f / static_cast<float>(a.cols);
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const int64_t offset = row * a.cols;
    const int h = Phased ? pack_phase<Pack>(a.x + offset) : 0;
    // accesses the row spans (aligned: cols % Pack == 0)
    const int64_t n = Phased ? (a.cols + h + Pack - 1) / Pack : a.cols / Pack;
    NormWelford w{0.f, 0.f, 0.f};
    float ss = 0.f;
    norm_stream_stats<Kind, Pack, Block, Phased>(a, offset, h, 0, n, w, ss);
    float mean = 0.f, var = 0.f;
    if constexpr (Kind == NormKind::kLayer) {
      w = norm_welford_block<Block>(w);
      // an inf in the row: Welford's mean turns NaN (inf - inf) where the sum's is +-inf
      const float plain = __fmul_rn(block_all_reduce<Block>(ss, Sum{}), inv_cols);
      mean = isfinite(w.mean) ? w.mean : plain;
      var = w.m2 * inv_cols;
    } else {
      var = block_all_reduce<Block>(ss, Sum{}) * inv_cols;
    }
    const float rstd = rsqrtf(var + a.eps);
    if (threadIdx.x == 0) {
      if (a.rstd != nullptr) a.rstd[row] = rstd;
      if (Kind == NormKind::kLayer && a.mean != nullptr) a.mean[row] = mean;
    }
    const T* src = Kind == NormKind::kAddRms ? a.sum : a.x;
    for (int64_t v = threadIdx.x; v < n; v += Block) {
      float x[Pack];
      if constexpr (Phased) {
        norm_load<Pack, false>(src + offset, v * Pack - h, a.cols, x);
      } else {
        norm_load<Pack>(src + offset + v * Pack, x);
      }
      // (a float weight beside 2-byte x: its chunks and the bias's element by element; shifted
      // into place they spilled 8-24 bytes at 64 registers)
      norm_write<Pack, Phased, sizeof(W) == sizeof(T)>(a, offset, v * Pack - h, x, mean, rstd);
    }
  }
}

// ---------------------------------------------------------------------------------------
// kSplit (BlockCombine::kGrid; every operand on the grid, or one element per access): few
// rows wider than a block's registers, each split over
// `split` blocks of a cooperative grid (grid = rows x split, all resident; block b: row b /
// split, chunk b % split of balanced chunks of at least 8 accesses). The first pass as the
// two-pass kernel's over the chunk; the block's partial (4 floats: Welford's triple and the
// plain sum, or the sum of squares) parked in the first 16 bytes of its chunk of y; a grid
// barrier; every block of the row merges the row's partials in chunk order (the same bits in
// each), then re-reads its chunk (x, or the sum) and writes y, except the parked elements,
// written after a second barrier (when every block has read every partial) from a copy taken
// before parking (in place y == x: the parking overwrites x there).
template <NormKind Kind, typename T, typename W, int Pack, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, 2))
    norm_split_kernel(const NormArgs<T, W> a, int split) {
  using Bits = bits_t<sizeof(T)>;
  constexpr int kSlot = 16 / static_cast<int>(sizeof(T));  // elements of a parked partial
  __shared__ T saved[kSlot];
  const int64_t row = blockIdx.x / split;
  const int chunk = static_cast<int>(blockIdx.x % split);
  const int64_t n = a.cols / Pack;
  const auto chunk_begin = [&](int64_t j) { return n / split * j + (n % split) * j / split; };
  const int64_t begin = chunk_begin(chunk), end = chunk_begin(chunk + 1);
  const int64_t offset = row * a.cols;
  const float inv_cols = 1.f / static_cast<float>(a.cols);
  const T* src = Kind == NormKind::kAddRms ? a.sum : a.x;
  NormWelford w{0.f, 0.f, 0.f};
  float ss = 0.f;
  norm_stream_stats<Kind, Pack, Block, false>(a, offset, 0, begin, end, w, ss);
  if constexpr (Kind == NormKind::kLayer) w = norm_welford_block<Block>(w);
  ss = block_all_reduce<Block>(ss, Sum{});  // a barrier: the block's sums written and seen
  // park: the block's 4 floats over the chunk's first kSlot elements of y, after a copy of
  // the source elements there
  Bits* slot = reinterpret_cast<Bits*>(a.y + offset + begin * Pack);
  if (threadIdx.x < kSlot) saved[threadIdx.x] = src[offset + begin * Pack + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    const float mine[4] = {w.n, w.mean, w.m2, ss};
    Bits bits[kSlot];
    memcpy(bits, mine, sizeof(bits));
#pragma unroll
    for (int k = 0; k < kSlot; ++k)
      slot[k] = bits[k];
  }
  grid_sync();
  // the row's partials, merged in chunk order: threads take chunks t, t + Block, ..., then
  // the block's fixed tree
  NormWelford rw{0.f, 0.f, 0.f};
  float rss = 0.f;
  for (int j = threadIdx.x; j < split; j += Block) {
    const Bits* pj = reinterpret_cast<const Bits*>(a.y + offset + chunk_begin(j) * Pack);
    Bits bits[kSlot];
#pragma unroll
    for (int k = 0; k < kSlot; ++k)
      bits[k] = __ldcg(pj + k);
    float q[4];
    memcpy(q, bits, sizeof(q));
    rw = norm_welford_merge(rw, {q[0], q[1], q[2]});
    rss += q[3];
  }
  float mean = 0.f, var = 0.f;
  if constexpr (Kind == NormKind::kLayer) {
    rw = norm_welford_block<Block>(rw);
    const float plain = __fmul_rn(block_all_reduce<Block>(rss, Sum{}), inv_cols);
    mean = isfinite(rw.mean) ? rw.mean : plain;
    var = rw.m2 * inv_cols;
  } else {
    var = block_all_reduce<Block>(rss, Sum{}) * inv_cols;
  }
  const float rstd = rsqrtf(var + a.eps);
  if (threadIdx.x == 0 && chunk == 0) {
    if (a.rstd != nullptr) a.rstd[row] = rstd;
    if (Kind == NormKind::kLayer && a.mean != nullptr) a.mean[row] = mean;
  }
  // the chunk but its parked accesses (the first kSlot elements)
  constexpr int kParked = (kSlot + Pack - 1) / Pack;
  for (int64_t v = begin + kParked + threadIdx.x; v < end; v += Block) {
    float x[Pack];
    norm_load<Pack>(src + offset + v * Pack, x);
    norm_write<Pack, false>(a, offset, v * Pack, x, mean, rstd);
  }
  grid_sync();  // every block has read every partial
  static_assert(kParked * Pack == kSlot, "the parked accesses are the slot's elements");
  if (threadIdx.x < kSlot) {
    float x[1] = {convert<float>(saved[threadIdx.x])};
    norm_write<1, false>(a, offset, begin * Pack + threadIdx.x, x, mean, rstd);
  }
}

// ---------------------------------------------------------------------------------------
// kTile: short rows off the grid (at most 32 x Per columns), tiles of tile_rows consecutive
// rows. A tile is one span of the matrix (rows are contiguous), staged in shared memory as the
// aligned 16-byte chunks around it (cp.async; chunks before or past the matrix element by
// element; the chunks shared with the neighbouring tiles copied whole, their other elements
// unused), two tiles a block (the next one's copy issued before this one's work). Each row of
// the tile in the registers of a group of `lanes` lanes (a power of two, 32 / lanes rows a
// warp): lane l holds elements l, l + lanes, ... (Per at most), read element by element from
// shared memory, its statistics by segmented shuffles; y (add_rms_norm: and the sum) written
// back to shared memory, then the tile copied out in 16-byte stores (the chunks shared with a
// neighbouring tile, and operands off x's phase, element by element). The weight and bias as
// floats in shared memory once a block. A barrier after the copy lands (other threads' chunks
// are read) and one before the copy-out; thread t copies chunks t, t + Block, ... in and out, so
// a buffer's next copy needs no barrier. add_rms_norm: the residual staged in a second buffer
// where it sits at x's phase (else read from global memory), the sum written over x's slots,
// y over the residual's.
template <NormKind Kind, typename T, typename W, int Per>
__global__ void __launch_bounds__(kNormWarpBlock,
                                  min_blocks_per_sm(kNormWarpBlock,
                                                    65536 / (kNormWarpBlock * kNormTileRegs)))
    norm_tile_kernel(const NormArgs<T, W> a, int lanes, int tile_rows) {
  constexpr int kBlock = kNormWarpBlock;
  constexpr int kP = kMaxPackBytes / static_cast<int>(sizeof(T));
  using P = ::kernelkit::Pack<T, kP>;
  constexpr bool kAdd = Kind == NormKind::kAddRms;
  extern __shared__ float4 norm_tiles[];
  __shared__ float wsm[kWarpSize * Per], bsm[kWarpSize * Per];
  __builtin_assume(lanes >= 1 && lanes <= kWarpSize);
  const int cols = static_cast<int>(a.cols);
  const float inv_cols = 1.f / static_cast<float>(a.cols);
  const int64_t total = a.rows * a.cols;
  const int64_t tiles = (a.rows + tile_rows - 1) / tile_rows;
  const int chunks = static_cast<int>(norm_tile_chunks(tile_rows, a.cols, sizeof(T)));
  const int stage = chunks * (kAdd ? 2 : 1);  // chunks of a tile's buffers
  P* const buffers = reinterpret_cast<P*>(norm_tiles);
  const T zero = convert<T>(0.f);
  for (int c = threadIdx.x; c < cols; c += kBlock) {
    wsm[c] = a.weight != nullptr ? convert<float>(a.weight[c]) : 1.f;
    bsm[c] = a.bias != nullptr ? convert<float>(a.bias[c]) : 0.f;
  }
  const int h0 = pack_phase<kP>(a.x);
  const bool res = kAdd && pack_phase<kP>(a.residual) == h0;  // the residual staged
  // the copies of tile t into stage k (nothing past the last tile)
  const auto issue = [&](int64_t t, int k) {
    if (t >= tiles) return;
    const int64_t e0 = t * tile_rows * a.cols;
    const int64_t e1 = e0 + tile_rows * a.cols < total ? e0 + tile_rows * a.cols : total;
    const int h = static_cast<int>((h0 + e0) % kP);
    const int n = static_cast<int>((e1 - e0 + h + kP - 1) / kP);
    P* const xb = buffers + int64_t{k} * stage;
    for (int v = threadIdx.x; v < n; v += kBlock) {
      const int64_t e = e0 - h + int64_t{v} * kP;  // the chunk's first element
      if (e < 0 || e + kP > total) {
#pragma unroll
        for (int j = 0; j < kP; ++j) {
          const bool in = e + j >= 0 && e + j < total;
          xb[v].elem[j] = in ? a.x[e + j] : zero;
          if (res) xb[chunks + v].elem[j] = in ? a.residual[e + j] : zero;
        }
      } else {
        __pipeline_memcpy_async(&xb[v], a.x + e, kMaxPackBytes);
        if (res) __pipeline_memcpy_async(&xb[chunks + v], a.residual + e, kMaxPackBytes);
      }
    }
  };
  const int group = static_cast<int>(threadIdx.x) / lanes;  // its row in the block's pass
  const int lane = static_cast<int>(threadIdx.x) & (lanes - 1);
  const int groups = kBlock / lanes;
  issue(blockIdx.x, 0);
  __pipeline_commit();
  int k = 0;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    issue(t + gridDim.x, k ^ 1);
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();  // every thread's copies of this tile have landed (and wsm, bsm)
    P* const xb = buffers + int64_t{k} * stage;
    T* const xe = xb[0].elem;       // x, then the sum (add_rms_norm) or y
    T* const ye = xb[chunks].elem;  // add_rms_norm: the residual, then y
    const int64_t r_first = t * tile_rows;
    const int n_rows =
        static_cast<int>(a.rows - r_first < tile_rows ? a.rows - r_first : tile_rows);
    const int64_t e0 = r_first * a.cols;
    const int h = static_cast<int>((h0 + e0) % kP);
    for (int r0 = 0; r0 < n_rows; r0 += groups) {  // uniform over the block
      const int r = r0 + group;
      const int n = r < n_rows ? cols : 0;  // past the tile's rows: no element
      const int base = h + r * cols;        // the row's first element in the buffer
      float x[Per];
#pragma unroll
      for (int j = 0; j < Per; ++j) {
        const int q = lane + j * lanes;
        x[j] = q < n ? convert<float>(xe[base + q]) : 0.f;
      }
      if constexpr (kAdd) {
#pragma unroll
        for (int j = 0; j < Per; ++j) {
          const int q = lane + j * lanes;
          if (q < n) {
            const T rv = res ? ye[base + q] : a.residual[e0 + int64_t{r} * cols + q];
            const T sum = convert<T>(x[j] + convert<float>(rv));
            xe[base + q] = sum;
            x[j] = convert<float>(sum);
          }
        }
      }
      float s = 0.f, mean = 0.f;
      if constexpr (Kind == NormKind::kLayer) {
#pragma unroll
        for (int j = 0; j < Per; ++j)
          s += x[j];
        // rounded once (__fmul_rn: never fused into x - mean), so y uses the mean it saves
        mean = __fmul_rn(norm_row_sum<kWarpSize, kBlock>(s, lanes), inv_cols);
        s = 0.f;
#pragma unroll
        for (int j = 0; j < Per; ++j)
          if (lane + j * lanes < n) s += (x[j] - mean) * (x[j] - mean);
      } else {
#pragma unroll
        for (int j = 0; j < Per; ++j)
          s += x[j] * x[j];
      }
      const float rstd = rsqrtf(norm_row_sum<kWarpSize, kBlock>(s, lanes) * inv_cols + a.eps);
      if (lane == 0 && n > 0) {
        if (a.rstd != nullptr) a.rstd[r_first + r] = rstd;
        if (Kind == NormKind::kLayer && a.mean != nullptr) a.mean[r_first + r] = mean;
      }
#pragma unroll
      for (int j = 0; j < Per; ++j) {
        const int q = lane + j * lanes;
        if (q < n) (kAdd ? ye : xe)[base + q] = convert<T>((x[j] - mean) * rstd * wsm[q] + bsm[q]);
      }
    }
    __syncthreads();  // the tile's outputs are in the buffers
    const int64_t e1 = e0 + int64_t{n_rows} * cols;
    const int n = static_cast<int>((e1 - e0 + h + kP - 1) / kP);
    for (int v = threadIdx.x; v < n; v += kBlock) {
      const int64_t c = int64_t{v} * kP - h;  // the chunk's first element in the tile
      store_row_pack_any<kP, true>(a.y + e0, c, e1 - e0, kAdd ? xb[chunks + v] : xb[v]);
      if constexpr (kAdd) store_row_pack_any<kP, true>(a.sum + e0, c, e1 - e0, xb[v]);
    }
    k ^= 1;
  }
}

// ---------------------------------------------------------------------------------------
// The backward passes, with xhat = (x - mean) * rstd (rms kinds: mean = 0) and g = dy * w:
// dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)), mean_c(g) only for layer_norm (for
// rms that is rstd * g - x * rstd^3 * mean_c(g * x)); add_rms_norm: x is the saved sum, and
// the gradient arriving on the sum (dsum) is added to dx. dweight = sum over the rows of dy *
// xhat, dbias (layer_norm) = sum over the rows of dy.

// The operands of one backward call. weight, dweight, dbias, dsum may be null (no scale; a
// gradient not wanted; no gradient on the sum); mean: kLayer only, dsum: kAddRms only, dbias:
// kLayer only. partial_w / partial_b: `parts` x cols floats of workspace each, where dweight /
// dbias is wanted.
template <typename T, typename W>
struct NormBackwardArgs {
  const T* dy;
  const T* x;  // x; kAddRms: the sum x + residual the forward saved
  const W* weight;
  const float* mean;
  const float* rstd;
  const T* dsum;
  T* dx;
  W* dweight;
  W* dbias;
  float* partial_w;
  float* partial_b;
  int64_t rows;
  int64_t cols;
};

// Loads Pack elements of dy, x at element o of the row's matrix and of the weight at column
// c: g = dy * w (dy where there is no weight), xhat = (x - mean) * rstd; dy kept as read.
template <int Pack, typename T, typename W>
__device__ __forceinline__ void norm_backward_load(const NormBackwardArgs<T, W>& a, int64_t o,
                                                   int64_t c, float mean, float rstd,
                                                   float (&dy)[Pack], float (&g)[Pack],
                                                   float (&xhat)[Pack]) {
  norm_load<Pack>(a.dy + o, dy);
  norm_load<Pack>(a.x + o, xhat);
#pragma unroll
  for (int j = 0; j < Pack; ++j) {
    xhat[j] = (xhat[j] - mean) * rstd;
    g[j] = dy[j];
  }
  if (a.weight != nullptr) {
    float w[Pack];
    norm_load<Pack>(a.weight + c, w);
#pragma unroll
    for (int j = 0; j < Pack; ++j)
      g[j] *= w[j];
  }
}

// Block p (of gridDim.x = parts) takes rows p, p + parts, ...: a first read of the row for
// sum(g * xhat) (and sum(g)), a second (from L2 while the block's row is there) that writes dx
// and adds dy * xhat (and dy) into the block's own rows of partials (each element by the one
// thread that owns its column: written at the block's first row, added to in row order after:
// deterministic, and correct whatever the workspace held). dx may be exactly dy or dsum: each
// thread reads its own elements of them before writing dx there.
template <NormKind Kind, typename T, typename W, int Pack, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, 4))
    norm_backward_kernel(const NormBackwardArgs<T, W> a) {
  constexpr bool kLayer = Kind == NormKind::kLayer;
  const int64_t n = a.cols / Pack;
  const float inv_cols = 1.f / static_cast<float>(a.cols);
  const int64_t part = int64_t{blockIdx.x} * a.cols;
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const int64_t offset = row * a.cols;
    const bool first = row == blockIdx.x;
    const float r = a.rstd[row];
    const float mu = kLayer ? a.mean[row] : 0.f;
    float sgx = 0.f, sg = 0.f;  // this thread's sums of g * xhat and (kLayer) of g
#pragma unroll 1
    for (int64_t v = threadIdx.x; v < n; v += Block) {
      float dy[Pack], g[Pack], xhat[Pack];
      norm_backward_load<Pack>(a, offset + v * Pack, v * Pack, mu, r, dy, g, xhat);
#pragma unroll
      for (int j = 0; j < Pack; ++j) {
        sgx += g[j] * xhat[j];
        if (kLayer) sg += g[j];
      }
    }
    const float mgx = block_all_reduce<Block>(sgx, Sum{}) * inv_cols;
    const float mg = kLayer ? block_all_reduce<Block>(sg, Sum{}) * inv_cols : 0.f;
#pragma unroll 1
    for (int64_t v = threadIdx.x; v < n; v += Block) {
      float dy[Pack], g[Pack], xhat[Pack], dx[Pack];
      norm_backward_load<Pack>(a, offset + v * Pack, v * Pack, mu, r, dy, g, xhat);
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        dx[j] = r * (g[j] - mg - xhat[j] * mgx);
      if (Kind == NormKind::kAddRms && a.dsum != nullptr) {
        float ds[Pack];
        norm_load<Pack>(a.dsum + offset + v * Pack, ds);
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          dx[j] += ds[j];
      }
      norm_store<Pack>(a.dx + offset + v * Pack, dx);
      if (a.partial_w != nullptr) {
        float* pw = a.partial_w + part + v * Pack;
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          pw[j] = first ? dy[j] * xhat[j] : pw[j] + dy[j] * xhat[j];
      }
      if (kLayer && a.partial_b != nullptr) {
        float* pb = a.partial_b + part + v * Pack;
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          pb[j] = first ? dy[j] : pb[j] + dy[j];
      }
    }
  }
}

// A row in registers (Packs > 0): Threads (32: a warp, Block / 32 rows a block at a time;
// Block: the block) threads per row, thread t holding accesses p * Threads + t (p < Packs) of
// Pack elements of dy and xhat (cols <= Threads x Packs x Pack), so dy and x are read once. A
// thread's columns are the same for every row, so it keeps its share of dweight (and dbias) in
// registers across its rows (in row order); at the end a warp-per-row block adds its warps'
// sums in warp order through shared memory, and the block writes its row of partials once
// (every element of it: any workspace content works). Rows: the block's first ones, then by
// the grid. Otherwise as norm_backward_kernel.
template <NormKind Kind, typename T, typename W, int Pack, int Threads, int Packs, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, norm_backward_min_blocks(Block)))
    norm_backward_registers_kernel(const NormBackwardArgs<T, W> a) {
  static_assert(Packs >= 1 && Pack * Packs <= 8, "a thread holds at most 8 floats of dy and x");
  static_assert(Threads == kWarpSize || Threads == Block, "a row is a warp or the block");
  constexpr bool kLayer = Kind == NormKind::kLayer;
  constexpr int kRowsPerBlock = Block / Threads;
  const int t = static_cast<int>(threadIdx.x) % Threads;
  const int cols = static_cast<int>(a.cols);
  const float inv_cols = 1.f / static_cast<float>(a.cols);
  float acc_w[Packs][Pack] = {}, acc_b[Packs][Pack] = {};  // this thread's columns' sums
  const int64_t step = int64_t{gridDim.x} * kRowsPerBlock;
  for (int64_t row = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / Threads; row < a.rows;
       row += step) {
    const int64_t offset = row * a.cols;
    const float r = a.rstd[row];
    const float mu = kLayer ? a.mean[row] : 0.f;
    float dy[Packs][Pack], xhat[Packs][Pack];
    float sgx = 0.f, sg = 0.f;
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int c = (p * Threads + t) * Pack;
      if (c < cols) {
        float g[Pack];
        norm_backward_load<Pack>(a, offset + c, c, mu, r, dy[p], g, xhat[p]);
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          sgx += g[j] * xhat[p][j];
          if (kLayer) sg += g[j];
        }
      }
    }
    const float mgx = norm_row_sum<Threads, Block>(sgx) * inv_cols;
    const float mg = kLayer ? norm_row_sum<Threads, Block>(sg) * inv_cols : 0.f;
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int c = (p * Threads + t) * Pack;
      if (c >= cols) continue;
      float g[Pack], dx[Pack];
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        g[j] = dy[p][j];
      if (a.weight != nullptr) {
        float w[Pack];
        norm_load<Pack>(a.weight + c, w);
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          g[j] *= w[j];
      }
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        dx[j] = r * (g[j] - mg - xhat[p][j] * mgx);
      if (Kind == NormKind::kAddRms && a.dsum != nullptr) {
        float ds[Pack];
        norm_load<Pack>(a.dsum + offset + c, ds);
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          dx[j] += ds[j];
      }
      norm_store<Pack>(a.dx + offset + c, dx);
#pragma unroll
      for (int j = 0; j < Pack; ++j) {
        acc_w[p][j] += dy[p][j] * xhat[p][j];
        if (kLayer) acc_b[p][j] += dy[p][j];
      }
    }
  }
  if constexpr (kRowsPerBlock > 1) {
    // the block's warps' sums, added in warp order by warp 0 (its own first)
    constexpr int kHeld = Threads * Packs * Pack;  // columns a warp holds
    __shared__ float sums[2][kRowsPerBlock - 1][kHeld];
    const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
    if (warp > 0) {
#pragma unroll
      for (int p = 0; p < Packs; ++p)
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          sums[0][warp - 1][(p * Threads + t) * Pack + j] = acc_w[p][j];
          if (kLayer) sums[1][warp - 1][(p * Threads + t) * Pack + j] = acc_b[p][j];
        }
    }
    __syncthreads();
    if (warp > 0) return;
    for (int k = 0; k < kRowsPerBlock - 1; ++k)
#pragma unroll
      for (int p = 0; p < Packs; ++p)
#pragma unroll
        for (int j = 0; j < Pack; ++j) {
          acc_w[p][j] += sums[0][k][(p * Threads + t) * Pack + j];
          if (kLayer) acc_b[p][j] += sums[1][k][(p * Threads + t) * Pack + j];
        }
  }
  const int64_t part = int64_t{blockIdx.x} * a.cols;
#pragma unroll
  for (int p = 0; p < Packs; ++p) {
    const int c = (p * Threads + t) * Pack;
    if (c >= cols) continue;
    if (a.partial_w != nullptr) {
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        a.partial_w[part + c + j] = acc_w[p][j];
    }
    if (kLayer && a.partial_b != nullptr) {
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        a.partial_b[part + c + j] = acc_b[p][j];
    }
  }
}

// Few rows no register entry holds (BlockCombine::kGrid), each split over `split` blocks of a
// cooperative grid (grid = rows x split, all resident; block b: row b / split, chunk b % split
// of balanced chunks of at least 8 accesses), as the forward's norm_split_kernel: the chunk's
// sums of g * xhat and g over a first read, parked (as bits) in the first 16 bytes of the
// chunk's dx after a copy of dy and dsum there (dx may be either); a grid barrier; every block
// of the row adds the row's parked sums in chunk order (the same bits in each), then re-reads
// its chunk and writes dx but the parked elements, and its row of partials (parts = rows: row
// r's partials at row r, each element written once); a second barrier (every block has read
// every parked sum) before the parked elements are written from the copies.
template <NormKind Kind, typename T, typename W, int Pack, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, 2))
    norm_backward_split_kernel(const NormBackwardArgs<T, W> a, int split) {
  using Bits = bits_t<sizeof(T)>;
  constexpr bool kLayer = Kind == NormKind::kLayer;
  constexpr int kSlot = 16 / static_cast<int>(sizeof(T));  // elements of a parked pair of sums
  constexpr int kParked = (kSlot + Pack - 1) / Pack;       // accesses they cover
  static_assert(kParked * Pack == kSlot, "the parked accesses are the slot's elements");
  __shared__ T saved_dy[kSlot], saved_ds[kSlot];
  const int64_t row = blockIdx.x / split;
  const int chunk = static_cast<int>(blockIdx.x % split);
  const int64_t n = a.cols / Pack;
  const auto chunk_begin = [&](int64_t j) { return n / split * j + (n % split) * j / split; };
  const int64_t begin = chunk_begin(chunk), end = chunk_begin(chunk + 1);
  const int64_t offset = row * a.cols;
  const float inv_cols = 1.f / static_cast<float>(a.cols);
  const float r = a.rstd[row];
  const float mu = kLayer ? a.mean[row] : 0.f;
  const bool dsum = Kind == NormKind::kAddRms && a.dsum != nullptr;
  float sgx = 0.f, sg = 0.f;
#pragma unroll 1
  for (int64_t v = begin + threadIdx.x; v < end; v += Block) {
    float dy[Pack], g[Pack], xhat[Pack];
    norm_backward_load<Pack>(a, offset + v * Pack, v * Pack, mu, r, dy, g, xhat);
#pragma unroll
    for (int j = 0; j < Pack; ++j) {
      sgx += g[j] * xhat[j];
      if (kLayer) sg += g[j];
    }
  }
  sgx = block_all_reduce<Block>(sgx, Sum{});
  sg = kLayer ? block_all_reduce<Block>(sg, Sum{}) : 0.f;  // (a barrier either way)
  const int64_t head = offset + begin * Pack;
  if (threadIdx.x < kSlot) {
    saved_dy[threadIdx.x] = a.dy[head + threadIdx.x];
    if (dsum) saved_ds[threadIdx.x] = a.dsum[head + threadIdx.x];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const float mine[kSlot * sizeof(T) / 4] = {sgx, sg};
    Bits bits[kSlot];
    memcpy(bits, mine, sizeof(bits));
    Bits* slot = reinterpret_cast<Bits*>(a.dx + head);
#pragma unroll
    for (int k = 0; k < kSlot; ++k)
      slot[k] = bits[k];
  }
  grid_sync();
  // the row's sums, added in chunk order: threads take chunks t, t + Block, ..., then the
  // block's fixed tree
  float rgx = 0.f, rg = 0.f;
  for (int j = threadIdx.x; j < split; j += Block) {
    const Bits* pj = reinterpret_cast<const Bits*>(a.dx + offset + chunk_begin(j) * Pack);
    Bits bits[kSlot];
#pragma unroll
    for (int k = 0; k < kSlot; ++k)
      bits[k] = __ldcg(pj + k);
    float q[kSlot * sizeof(T) / 4];
    memcpy(q, bits, sizeof(q));
    rgx += q[0];
    rg += q[1];
  }
  const float mgx = block_all_reduce<Block>(rgx, Sum{}) * inv_cols;
  const float mg = kLayer ? block_all_reduce<Block>(rg, Sum{}) * inv_cols : 0.f;
#pragma unroll 1
  for (int64_t v = begin + kParked + threadIdx.x; v < end; v += Block) {
    float dy[Pack], g[Pack], xhat[Pack], dx[Pack];
    norm_backward_load<Pack>(a, offset + v * Pack, v * Pack, mu, r, dy, g, xhat);
#pragma unroll
    for (int j = 0; j < Pack; ++j)
      dx[j] = r * (g[j] - mg - xhat[j] * mgx);
    if (dsum) {
      float ds[Pack];
      norm_load<Pack>(a.dsum + offset + v * Pack, ds);
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        dx[j] += ds[j];
    }
    norm_store<Pack>(a.dx + offset + v * Pack, dx);
    if (a.partial_w != nullptr) {
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        a.partial_w[offset + v * Pack + j] = dy[j] * xhat[j];
    }
    if (kLayer && a.partial_b != nullptr) {
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        a.partial_b[offset + v * Pack + j] = dy[j];
    }
  }
  grid_sync();  // every block has read every parked sum
  if (threadIdx.x < kSlot) {
    const int64_t c = begin * Pack + threadIdx.x;
    const float dy = convert<float>(saved_dy[threadIdx.x]);
    const float xhat = (convert<float>(a.x[offset + c]) - mu) * r;
    const float g = a.weight != nullptr ? dy * convert<float>(a.weight[c]) : dy;
    float dx = r * (g - mg - xhat * mgx);
    if (dsum) dx += convert<float>(saved_ds[threadIdx.x]);
    a.dx[offset + c] = convert<T>(dx);
    if (a.partial_w != nullptr) a.partial_w[offset + c] = dy * xhat;
    if (kLayer && a.partial_b != nullptr) a.partial_b[offset + c] = dy;
  }
}

// The weight gradients' column sums: blockIdx.y picks one (partial[y] -> out[y]).
template <typename W>
struct NormColumnSums {
  const float* partial[2];  // parts x cols floats each
  W* out[2];                // cols each; null where not wanted
};

// out[y][c] = the sum over the parts' rows of partial[y][p][c]: blocks of 32 columns x 8
// slices of the parts (slice s sums parts s, s + 8, ... in order), the 8 slices then added in
// slice order (deterministic).
template <typename W>
__global__ void __launch_bounds__(256)
    norm_backward_reduce_kernel(const NormColumnSums<W> sums, int64_t parts, int64_t cols) {
  __shared__ float slices[8][33];
  // (selected, not indexed: a run-time index into the parameter puts it on the stack)
  const float* partial = blockIdx.y == 0 ? sums.partial[0] : sums.partial[1];
  W* out = blockIdx.y == 0 ? sums.out[0] : sums.out[1];
  if (out == nullptr) return;  // uniform over the block
  const int tx = static_cast<int>(threadIdx.x) % 32, ty = static_cast<int>(threadIdx.x) / 32;
  for (int64_t c0 = int64_t{blockIdx.x} * 32; c0 < cols; c0 += int64_t{gridDim.x} * 32) {
    const int64_t c = c0 + tx;
    float acc = 0.f;
    if (c < cols) {
      for (int64_t p = ty; p < parts; p += 8)
        acc += partial[p * cols + c];
    }
    slices[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && c < cols) {
      float sum = slices[0][tx];
#pragma unroll
      for (int k = 1; k < 8; ++k)
        sum += slices[k][tx];
      out[c] = convert<W>(sum);
    }
    __syncthreads();
  }
}

}  // namespace kernelkit::detail
