// SPDX-License-Identifier: Apache-2.0
// The skinny sgemm kernels (batched gemv): C' (m' x n') = alpha * A' B' + beta * C' for
// m' <= Rows (8 or 32), where C' is C (m small) or C transposed (n small; the plan swaps the
// operands). B' (k x n') is the big operand: every element is read once, straight from global
// memory into registers, and used there for all Rows rows; A' (m' x k, any strides) is staged
// in shared memory a chunk of 64 k at a time (cp.async, double-buffered; plain copies on
// sm_75), rows past m' as zeros. Each thread keeps up to 8 loads of B' in flight (a ring refilled
// as it is consumed: 32 KiB a block). A grid row of blocks covers n'; grid.y splits K, whose
// parts go to the workspace and are added in part order by sgemm_skinny_reduce_kernel.
//
// kNContig (B' rows contiguous along n'): a lane owns Vec consecutive columns, a warp
// 32 Vec; warp w of a block takes k 8w .. 8w + 7 of every chunk of K, and the 8 warps add
// their sums through shared memory at the end, 4 rows at a time, in warp order.
// kKContig (B' contiguous along k): a lane owns 4 columns and reads Vec consecutive k of
// each (8 lanes cover 8 Vec k of a column: 128 contiguous bytes for Vec 4); a warp owns 16
// columns, a block 128; the 8 lanes of a column group add their sums with xor shuffles.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernelkit/blas/detail/sgemm_kernels.cuh"
#include "kernelkit/blas/sgemm_plan.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/epilogue.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::detail {

// Divides the ring of loads in flight of the 32-row k kernel with 16-byte loads: with the
// full ring it spilled 36 bytes on sm_100 and sm_120 (228-250 registers elsewhere, no spill).
__host__ __device__ constexpr int sgemm_skinny_ring_div() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  return 2;
#else
  return 1;
#endif
}

// Arguments of the skinny kernels (see SgemmSkinnyPlan).
struct SgemmSkinnyParams {
  int64_t m, n, k;  // m', n', k
  float alpha, beta;
  const float* A;  // A'(i, p) = A[i * a_si + p * a_sp]
  int64_t a_si, a_sp;
  const float* B;  // kNContig: B'(p, j) = B[p * ldb + j]; kKContig: B[j * ldb + p]
  int64_t ldb;
  float* C;  // C'(i, j) = C[i * c_si + j * c_sj]
  int64_t c_si, c_sj;
  int64_t k_per_split;  // k of one part (blockIdx.y), a multiple of kSgemmSkinnyChunk
  float* ws;            // gridDim.y > 1: part s of C'(i, j) at ws[(s * m + i) * n + j]
};

// Writes v, the sum of this block's part of K for C'(i, j) (in range).
__device__ __forceinline__ void sgemm_skinny_out(const SgemmSkinnyParams& p, int64_t i, int64_t j,
                                                 float v) {
  if (gridDim.y > 1) {
    p.ws[(int64_t{blockIdx.y} * p.m + i) * p.n + j] = v;
  } else {
    float* const c = p.C + i * p.c_si + j * p.c_sj;
    *c = axpby(p.alpha, v, p.beta, c);
  }
}

// Floats between consecutive staged rows of A': kNContig stages A' as [p][i] (rows of
// Rows + kSgemmPad floats, 16-byte aligned for the float4 broadcasts), kKContig as [i][p]
// (rows of Chunk + kSgemmPad floats).
template <int Rows, SgemmSkinnyMode Mode>
__host__ __device__ constexpr int sgemm_skinny_stage_stride() {
  return Mode == SgemmSkinnyMode::kNContig ? Rows + kSgemmPad : kSgemmSkinnyChunk + kSgemmPad;
}

// Stages A'(0..Rows, k0..k0 + Chunk) into dst (layout: sgemm_skinny_stage_stride); zeros where
// i >= m or p >= k_end. The 32 lanes of a warp take G consecutive elements along A's contiguous
// direction (p when a_sp == 1, else i: whole 32-byte sectors or more) times 32 / G along the
// other: G = 32 where dst is contiguous the same way, G = 8 where dst is transposed to it
// (the padded rows then spread the 32 lanes over 32 banks; with 32 lanes along p into the
// [p][i] layout of 32 rows, every lane hit one bank: 32-way conflicts on 8 copies a thread a
// chunk, as many shared-memory cycles as the chunk's FFMAs).
template <int Rows, SgemmSkinnyMode Mode>
__device__ __forceinline__ void sgemm_skinny_stage_a(float* dst, const SgemmSkinnyParams& p,
                                                     int64_t k0, int64_t k_end, int tid) {
  constexpr int kChunk = kSgemmSkinnyChunk;
  constexpr int kPerThread = Rows * kChunk / kSgemmSkinnyThreads;
  constexpr int kStride = sgemm_skinny_stage_stride<Rows, Mode>();
  const bool p_fast = p.a_sp == 1;
  // e -> (f, s): f along the contiguous direction (extent F), s along the other
  const auto split = [](int e, int g, int f_extent, int& f, int& s) {
    const int lanes_s = 32 / g, rest = e / 32;
    f = (rest % (f_extent / g)) * g + e % g;
    s = (rest / (f_extent / g)) * lanes_s + (e / g) % lanes_s;
  };
  const auto copy = [&](int t) {
    const int e = tid + t * kSgemmSkinnyThreads;
    int i, pp;
    if (p_fast)
      split(e, Mode == SgemmSkinnyMode::kNContig ? 8 : 32, kChunk, pp, i);
    else
      split(e, Mode == SgemmSkinnyMode::kNContig ? (Rows < 32 ? Rows : 32) : 8, Rows, i, pp);
    const bool ok = i < p.m && k0 + pp < k_end;
    const float* src = ok ? p.A + i * p.a_si + (k0 + pp) * p.a_sp : p.A;
    float* const d =
        Mode == SgemmSkinnyMode::kNContig ? dst + pp * kStride + i : dst + i * kStride + pp;
    sgemm_cp_async<4>(d, src, ok ? 4 : 0);
  };
  // a rolled loop: unrolled, the copies' addresses (and below sm_80 their values) beside the
  // accumulators and the ring spilled 8-208 bytes on sm_75 / sm_100 / sm_120; it runs once a
  // chunk (8 copies against 1024 FFMA a thread for 32 rows)
#pragma unroll 1
  for (int t = 0; t < kPerThread; ++t)
    copy(t);
}

// sgemm_skinny_stage_a for kNContig when A' rows run along p (a_sp == 1): the same copies
// (lanes 8 along p, 4 along i; warp w takes p 8w .. 8w + 7, rows lane / 8 + 4 t) with the
// index math done once: one pointer step a copy instead of the general split of each copy.
template <int Rows>
__device__ __forceinline__ void sgemm_skinny_stage_a_along_k(float* dst, const SgemmSkinnyParams& p,
                                                             int64_t k0, int64_t k_end, int tid) {
  constexpr int kStride = sgemm_skinny_stage_stride<Rows, SgemmSkinnyMode::kNContig>();
  static_assert(kSgemmSkinnyThreads / 32 * 8 == kSgemmSkinnyChunk, "8 p a warp");
  const int pp = tid / 32 * 8 + tid % 8, i0 = tid % 32 / 8;
  const bool p_ok = k0 + pp < k_end;
  const float* const src = p.A + i0 * p.a_si + k0 + pp;
  float* const d = dst + pp * kStride + i0;
#pragma unroll
  for (int t = 0; t < Rows / 4; ++t) {
    const bool ok = p_ok && i0 + 4 * t < p.m;
    sgemm_cp_async<4>(d + 4 * t, ok ? src + 4 * t * p.a_si : p.A, ok ? 4 : 0);
  }
}

// Vec consecutive elements of B' from src, the first `valid` of them (0..Vec) read, the rest 0.
template <int Vec>
__device__ __forceinline__ Pack<float, Vec> sgemm_skinny_load(const float* src, int valid) {
  Pack<float, Vec> v;
  if (valid == Vec) {
    v = load_pack<Vec>(src, 0);
  } else {
#pragma unroll
    for (int j = 0; j < Vec; ++j)
      v.elem[j] = j < valid ? src[j] : 0.f;
  }
  return v;
}

// AlongK: A' rows run along p (a_sp == 1; plan: a_along_k): its staging takes
// sgemm_skinny_stage_a_along_k (same copies, cheaper index math). Chunks whose next chunk is
// whole (and whose block's columns all lie inside n') refill the ring of B' rows with plain
// 16-byte loads, no per-row bounds.
template <int Rows, int Vec, bool AlongK>
__global__ void __launch_bounds__(kSgemmSkinnyThreads,
                                  min_blocks_per_sm(kSgemmSkinnyThreads,
                                                    sgemm_skinny_reg_blocks(Rows)))
    sgemm_skinny_n_kernel(const SgemmSkinnyParams p) {
  constexpr int kChunk = kSgemmSkinnyChunk;
  constexpr int kWarps = kSgemmSkinnyThreads / 32;
  constexpr int kPerWarp = kChunk / kWarps;  // k of a chunk each warp takes (the ring depth)
  constexpr int kCols = 32 * Vec;            // columns of a block
  static_assert(Rows % 4 == 0 && kPerWarp == 8, "rows in quads, 8 loads in flight a thread");
  constexpr int kStride = sgemm_skinny_stage_stride<Rows, SgemmSkinnyMode::kNContig>();
  constexpr int kStageFloats = kChunk * kStride;
  extern __shared__ float4 skinny_smem_raw[];
  float* const smem = reinterpret_cast<float*>(skinny_smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  const int64_t j0 = int64_t{blockIdx.x} * kCols + lane * Vec;  // this thread's first column
  const int valid_cols = p.n - j0 >= Vec ? Vec : (p.n - j0 > 0 ? int(p.n - j0) : 0);
  const bool cols_full = (int64_t{blockIdx.x} + 1) * kCols <= p.n;  // the whole block's
  const int64_t k_begin = int64_t{blockIdx.y} * p.k_per_split;
  const int64_t k_end = p.k - k_begin < p.k_per_split ? p.k : k_begin + p.k_per_split;
  // chunks of this part (32-bit: k_per_split / 64 chunks), the whole ones first
  const int chunks = static_cast<int>((k_end - k_begin + kChunk - 1) / kChunk);
  const int whole_chunks = static_cast<int>((k_end - k_begin) / kChunk);
  // this thread's columns in this warp's first row of the current chunk
  const float* brow = p.B + j0 + (k_begin + warp * kPerWarp) * p.ldb;
  // rows of this part from this warp's first row of chunk c on
  const auto left = [&](int c) { return k_end - k_begin - warp * kPerWarp - int64_t{c} * kChunk; };
  const auto stage = [&](float* dst, int64_t k0) {
    if constexpr (AlongK) {
      sgemm_skinny_stage_a_along_k<Rows>(dst, p, k0, k_end, tid);
    } else {
      sgemm_skinny_stage_a<Rows, SgemmSkinnyMode::kNContig>(dst, p, k0, k_end, tid);
    }
  };

  float acc[Rows][Vec];
  sgemm_zero(acc);

  // The ring: b[u] holds row u of this warp's eighth of the current chunk until it is used,
  // then row u of the next chunk (zeros past k_end or n').
  Pack<float, Vec> b[kPerWarp];
  stage(smem, k_begin);
  sgemm_cp_async_commit();
#pragma unroll
  for (int u = 0; u < kPerWarp; ++u)
    b[u] = sgemm_skinny_load<Vec>(brow + u * p.ldb, u < left(0) ? valid_cols : 0);

  // one chunk's FFMAs and the ring's refill with the next chunk's rows (Full: all in range)
  const auto chunk = [&](const float* as, int c, auto full) {
    const float* const next = brow + kChunk * p.ldb;
    const auto refill = [&](int u) {
      if constexpr (decltype(full)::value)
        b[u] = load_pack<Vec>(next + u * p.ldb, 0);
      else
        b[u] = sgemm_skinny_load<Vec>(next + u * p.ldb, u < left(c + 1) ? valid_cols : 0);
    };
#pragma unroll
    for (int u = 0; u < kPerWarp; ++u) {
#pragma unroll
      for (int q = 0; q < Rows / 4; ++q) {
        const float4 a4 = *reinterpret_cast<const float4*>(as + u * kStride + 4 * q);  // broadcast
        const float a[4] = {a4.x, a4.y, a4.z, a4.w};
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int v = 0; v < Vec; ++v)
            acc[4 * q + r][v] = fmaf(a[r], b[u].elem[v], acc[4 * q + r][v]);
      }
      refill(u);
    }
  };

  for (int c = 0; c < chunks; ++c) {
    // chunk c of A' has landed, and every thread is done with the buffer chunk c + 1 takes
    sgemm_cp_async_wait(0);
    __syncthreads();
    if (c + 1 < chunks)
      stage(smem + ((c + 1) & 1) * kStageFloats, k_begin + int64_t{c + 1} * kChunk);
    sgemm_cp_async_commit();
    // this warp's k of the chunk: rows 8 warp .. 8 warp + 7 of [p][i]
    const float* const as = smem + (c & 1) * kStageFloats + warp * kPerWarp * kStride;
    if (cols_full && c + 1 < whole_chunks)  // block-uniform
      chunk(as, c, std::true_type{});
    else
      chunk(as, c, std::false_type{});
    brow += kChunk * p.ldb;
  }

  // the 8 warps' sums of the same columns, 4 rows at a time: red[warp][row][column]
  float* const red = smem;
#pragma unroll
  for (int g = 0; g < Rows / 4; ++g) {
    if (4 * g >= p.m) break;
    __syncthreads();  // the staged A' (or the previous group) is no longer read
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int v = 0; v < Vec; ++v)
        red[(warp * 4 + r) * kCols + lane * Vec + v] = acc[4 * g + r][v];
    __syncthreads();
    for (int e = tid; e < 4 * kCols; e += kSgemmSkinnyThreads) {
      const int r = e / kCols, col = e % kCols;
      float sum = red[r * kCols + col];
#pragma unroll
      for (int w = 1; w < kWarps; ++w)
        sum += red[(w * 4 + r) * kCols + col];
      const int64_t i = 4 * g + r, j = int64_t{blockIdx.x} * kCols + col;
      if (i < p.m && j < p.n) sgemm_skinny_out(p, i, j, sum);
    }
  }
}

template <int Rows, int Vec>
__global__ void __launch_bounds__(kSgemmSkinnyThreads,
                                  min_blocks_per_sm(kSgemmSkinnyThreads,
                                                    sgemm_skinny_reg_blocks(Rows)))
    sgemm_skinny_k_kernel(const SgemmSkinnyParams p) {
  constexpr int kChunk = kSgemmSkinnyChunk;
  constexpr int kStride = kChunk + kSgemmPad;  // staged A' row: lanes 16 bytes apart
  constexpr int kStep = 8 * Vec;               // k of one step of a warp (8 lanes along k)
  constexpr int kSteps = kChunk / kStep;       // steps of a chunk
  constexpr int kCols = 4;                     // columns of a lane
  static_assert(kSteps * kCols * Vec == 32, "a chunk is 8 loads of 16 bytes (or 32 of 4) a lane");
  extern __shared__ float4 skinny_smem_raw[];
  float* const smem = reinterpret_cast<float*>(skinny_smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int kl = lane % 8, cg = lane / 8;  // k lane, column group

  const int64_t j0 = int64_t{blockIdx.x} * 128 + warp * 16 + cg * kCols;  // first column
  const int64_t k_begin = int64_t{blockIdx.y} * p.k_per_split;
  const int64_t k_end = p.k - k_begin < p.k_per_split ? p.k : k_begin + p.k_per_split;
  const int64_t chunks = (k_end - k_begin + kChunk - 1) / kChunk;
  // Vec consecutive k of column j0 + col from k on (zeros past k_end or n')
  auto load_b = [&](int col, int64_t k) {
    const int valid =
        j0 + col < p.n ? (k_end - k >= Vec ? Vec : (k_end > k ? int(k_end - k) : 0)) : 0;
    return sgemm_skinny_load<Vec>(p.B + (j0 + col) * p.ldb + k, valid);
  };

  float acc[Rows][kCols];
  sgemm_zero(acc);

  // The ring: b[t % kRing] holds step t of the current chunk until it is used, then step
  // t + kRing (of this chunk or the next). 4-byte loads keep 4 steps (16 loads) in flight
  // instead of 8: with all 8 the 8-row kernel spilled 8 bytes on sm_80 / sm_86.
  constexpr int kRing = Vec == 1 ? 4 : (Rows > 8 ? kSteps / sgemm_skinny_ring_div() : kSteps);
  Pack<float, Vec> b[kRing][kCols];
  sgemm_skinny_stage_a<Rows, SgemmSkinnyMode::kKContig>(smem, p, k_begin, k_end, tid);
  sgemm_cp_async_commit();
#pragma unroll
  for (int t = 0; t < kRing; ++t)
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      b[t][c] = load_b(c, k_begin + t * kStep + kl * Vec);

  for (int64_t ch = 0; ch < chunks; ++ch) {
    sgemm_cp_async_wait(0);
    __syncthreads();
    const int64_t cur = k_begin + ch * kChunk, next = cur + kChunk;
    if (ch + 1 < chunks)
      sgemm_skinny_stage_a<Rows, SgemmSkinnyMode::kKContig>(smem + ((ch + 1) & 1) * Rows * kStride,
                                                            p, next, k_end, tid);
    sgemm_cp_async_commit();
    const float* const as = smem + (ch & 1) * Rows * kStride + kl * Vec;
#pragma unroll
    for (int t = 0; t < kSteps; ++t) {
      const int slot = t % kRing;
#pragma unroll
      for (int i = 0; i < Rows; ++i) {
        // A'(i, step k .. + Vec): the 8 k lanes read 8 Vec contiguous floats, the 4 column
        // groups the same ones (broadcast)
        const Pack<float, Vec> a = load_pack<Vec>(as + i * kStride + t * kStep, 0);
#pragma unroll
        for (int c = 0; c < kCols; ++c)
#pragma unroll
          for (int v = 0; v < Vec; ++v)
            acc[i][c] = fmaf(a.elem[v], b[slot][c].elem[v], acc[i][c]);
      }
      const int t_next = t + kRing;
      const int64_t k_next =
          t_next < kSteps ? cur + t_next * kStep : next + (t_next - kSteps) * kStep;
#pragma unroll
      for (int c = 0; c < kCols; ++c)
        b[slot][c] = load_b(c, k_next + kl * Vec);  // past k_end: zeros, nothing read
    }
  }

  // the 8 k lanes of a column group (lanes 8 cg .. 8 cg + 7): every lane ends with the
  // group's sum, the same bits in each
#pragma unroll
  for (int i = 0; i < Rows; ++i) {
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      acc[i][c] = warp_all_reduce<8>(acc[i][c], Sum{});
  }
  // k lane kl writes rows kl, kl + 8, ...
#pragma unroll
  for (int i = 0; i < Rows; ++i) {
    if ((i & 7) != kl || i >= p.m) continue;
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      if (j0 + c < p.n) sgemm_skinny_out(p, i, j0 + c, acc[i][c]);
  }
}

// Arguments of sgemm_skinny_reduce_kernel.
struct SgemmSkinnyReduceParams {
  int64_t m, n;  // m', n'
  float alpha, beta;
  float* C;
  int64_t c_si, c_sj;
  const float* ws;  // part s of C'(i, j) at ws[(s * m + i) * n + j]
  int splits;
};

// C'(i, j) = alpha * (sum of the parts, in part order) + beta * C'(i, j).
template <int = 0>
__global__ void __launch_bounds__(kSgemmReduceBlock)
    sgemm_skinny_reduce_kernel(const SgemmSkinnyReduceParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
  const int64_t count = p.m * p.n;
  const int64_t stride = int64_t{gridDim.x} * kSgemmReduceBlock;
  for (int64_t e = int64_t{blockIdx.x} * kSgemmReduceBlock + threadIdx.x; e < count; e += stride) {
    float sum = p.ws[e];
    for (int s = 1; s < p.splits; ++s)
      sum += p.ws[s * count + e];
    float* const c = p.C + (e / p.n) * p.c_si + (e % p.n) * p.c_sj;
    *c = axpby(p.alpha, sum, p.beta, c);
  }
}

}  // namespace kernelkit::detail
