// SPDX-License-Identifier: Apache-2.0
// The tiled sgemm kernels: C = alpha * op(A) op(B) + beta * C, row-major, fp32 FFMA; the
// combine of split partial tiles; C = beta * C.
//
// Block tile BM x BN x BK (BK = 16), thread tile TM x TN made of 4 x 4 quads (TM / 4 along
// m, 16 apart; TN / 4 along n, 32 apart), so a warp (4 x 8 lanes) covers 4 TM x 8 TN
// (8 x 4: 32 x 32; 8 x 8: 32 x 64; 16 x 8: 64 x 64), a `stages`-deep cp.async pipeline of
// shared-memory tiles, fragments double-buffered in registers. 64-accumulator tiles fit in
// 128 registers (2 blocks of 256 threads per SM); 128-accumulator tiles use up to 255 (one
// block per SM: fewer warps, twice the FFMA per LDS).
//
// Both operands live in shared memory "K-major": tile[k][mn] with a row stride of BMN + 4
// floats, so a thread reads its 4 consecutive m (or n) values of one k with one 16-byte LDS:
// the 8 lanes of a quarter-warp read either one address (A: broadcast) or 128 contiguous
// bytes (B): conflict-free. The global -> shared copy is the only thing a BlasOp changes:
//   - MN-contiguous source (A with BlasOp::T, B with BlasOp::N): 16-byte cp.async when the
//     leading dimension and the base pointer allow it, 4-byte cp.async otherwise;
//   - K-contiguous source (A with BlasOp::N, B with BlasOp::T): 4-byte cp.async that
//     transposes on the way in (16 lanes read 64 contiguous bytes of one row: whole sectors).
// Out-of-range elements are zero-filled by the copy itself (cp.async src-size), so edge
// tiles run the same code as interior ones; only the epilogue checks bounds. Built for
// sm_75 (no cp.async), the copies are plain loads and shared-memory stores, ordered by the
// same barriers (the plan gives that build two stages).
//
// A block computes a whole tile of C (blocks [0, dp_tiles)) or one part of K of a split
// tile (the blocks after them), whose raw sums go to the workspace; sgemm_split_reduce_kernel
// then adds the parts of each split tile in order and applies alpha / beta.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/blas/sgemm_plan.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/epilogue.cuh"
#include "kernelkit/core/pack.cuh"

namespace kernelkit::detail {

template <SgemmTile Tile>
struct SgemmShape {
  static constexpr SgemmTileShape kS = sgemm_tile_shape(Tile);
  static constexpr int BM = kS.bm, BN = kS.bn, TM = kS.tm, TN = kS.tn;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && TM * TN <= 128,
                "thread tiles are whole 4 x 4 quads, at most 128 accumulators");
  static constexpr int kQuadsM = TM / 4, kQuadsN = TN / 4;
  static constexpr int kWarpM = 4 * TM, kWarpN = 8 * TN;  // lanes: 4 along m x 8 along n
  static_assert(BM % kWarpM == 0 && BN % kWarpN == 0, "whole warp tiles per block tile");
  static constexpr int kWarpsM = BM / kWarpM;
  static constexpr int kWarpsN = BN / kWarpN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static_assert(kThreads == kS.threads, "the tile's thread count");
  // the register budget: 64 accumulators in 128 registers (two blocks of 256 threads a SM),
  // 128 accumulators in up to 255 (one); capped by the architecture's threads per SM
  static_assert((TM * TN <= 64) == (kS.reg_blocks == 2), "register budget of the tile");
  static constexpr int kMinBlocks = min_blocks_per_sm(kThreads, kS.reg_blocks);
  static constexpr int kStrideA = BM + kSgemmPad;
  static constexpr int kStrideB = BN + kSgemmPad;
  static constexpr int kStageFloats = kSgemmBK * (kStrideA + kStrideB);
  static_assert(kStageFloats * 4 == sgemm_stage_bytes(Tile), "the plan's stage size");
};

// A copy of Bytes (4 or 16) bytes into shared memory, of which the first src_bytes come from
// src and the rest are zero-filled (src is not read when src_bytes == 0). cp.async with the
// zero-fill size in a register (inline PTX: __pipeline_memcpy_async takes it as a runtime
// value and expands every call into a 17-way switch; the 128 x 128 kernel had 416 branches
// for its 10 copies per k-tile); below sm_80 a plain load and store.
template <int Bytes>
__device__ __forceinline__ void sgemm_cp_async(float* dst, const float* src, int src_bytes) {
  static_assert(Bytes == 4 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes; we use 4 or 16");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src),
                 "r"(src_bytes)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes)
                 : "memory");
  }
#else
  if constexpr (Bytes == 16) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (src_bytes == 16) {
      v = *reinterpret_cast<const float4*>(src);
    } else {
      if (src_bytes > 0) v.x = src[0];
      if (src_bytes > 4) v.y = src[1];
      if (src_bytes > 8) v.z = src[2];
    }
    *reinterpret_cast<float4*>(dst) = v;
  } else {
    *dst = src_bytes > 0 ? *src : 0.f;
  }
#endif
}

// A copy of Bytes bytes that all come from src (no zero fill).
template <int Bytes>
__device__ __forceinline__ void sgemm_cp_async_full(float* dst, const float* src) {
  static_assert(Bytes == 4 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes; we use 4 or 16");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src) : "memory");
  }
#else
  if constexpr (Bytes == 16) {
    *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
  } else {
    *dst = *src;
  }
#endif
}

// Closes this thread's group of copies issued since the last commit.
__device__ __forceinline__ void sgemm_cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `pending` (0, 1 or 2: stages - 2) of this thread's committed groups
// are still in flight (the wait count is an immediate; stages is a run-time value).
__device__ __forceinline__ void sgemm_cp_async_wait(int pending) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (pending <= 0) {
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  } else if (pending == 1) {
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
  } else {
    asm volatile("cp.async.wait_group 2;\n" ::: "memory");
  }
#else
  (void)pending;
#endif
}

// Copies k-tiles [k0, k0 + BK) x [mn0, mn0 + BMN) of one operand into dst[k][mn] (row stride
// BMN + kSgemmPad), zero-filling what lies outside [0, K) x [0, MN). Element (kk, mn) is at
// X[mn * ld + kk] for kKContig, at X[kk * ld + mn] otherwise. Each thread owns a fixed set
// of "slots" (elements or 16-byte chunks) of the tile: slot i sits `i * kSlotStep` rows
// (kKContig: mn rows; otherwise k rows) after the thread's first one, so the per-tile work
// is one pointer bump and a few compares. (For kKContig, runs of 2-8 consecutive k per
// thread, whose copies differ only by immediate offsets, were 3-13 % slower: more L1
// wavefronts per copy.)
template <int BMN, int Threads, SgemmLoad Mode>
struct SgemmTileLoader {
  static constexpr int kBK = kSgemmBK;
  static constexpr int kStride = BMN + kSgemmPad;
  static constexpr int kVec = Mode == SgemmLoad::kMnVec4 ? 4 : 1;
  // threads along the contiguous direction of one slot row
  static constexpr int kAlong = Mode == SgemmLoad::kKContig ? kBK : BMN / kVec;
  static_assert(Threads % kAlong == 0, "a slot row is covered by whole threads");
  static constexpr int kSlotStep = Threads / kAlong;  // rows between a thread's slots
  static constexpr int kSlots = kBK * BMN / kVec / Threads;
  static_assert(kSlots * Threads * kVec == kBK * BMN, "whole slots per thread");

  const float* ptr;  // this thread's slot 0 in the current k-tile (may point past the end)
  int64_t k_rem;     // K - (k0 + this thread's first k): k offsets below it are in range
  int mn_bytes;      // kMnVec4 / kMnScalar: bytes of a slot inside [0, MN) (the same for all)
  unsigned mn_mask;  // kKContig: bit i set when slot i's row is inside [0, MN)
  int smem;          // this thread's slot 0 in a stage
  static_assert(kSlots <= 32, "one mask bit per slot");

  __device__ __forceinline__ SgemmTileLoader(const float* X, int64_t ld, int64_t mn0, int64_t MN,
                                             int64_t K, int tid) {
    const int along = tid % kAlong, row = tid / kAlong;
    int64_t mn_rem;                               // MN - (mn0 + this thread's first mn)
    if constexpr (Mode == SgemmLoad::kKContig) {  // along = k, row = mn
      ptr = X + (mn0 + row) * ld + along;
      k_rem = K - along;
      mn_rem = MN - mn0 - row;
      smem = along * kStride + row;
    } else {  // along = mn (chunks of kVec), row = k
      ptr = X + row * ld + mn0 + along * kVec;
      k_rem = K - row;
      mn_rem = MN - mn0 - along * kVec;
      smem = row * kStride + along * kVec;
    }
    // loop-invariant part of the zero-fill (hoisted: the per-tile copies only test k)
    mn_bytes = mn_rem >= kVec ? 4 * kVec : (mn_rem > 0 ? 4 * int(mn_rem) : 0);
    mn_mask = 0;
#pragma unroll
    for (int i = 0; i < kSlots; ++i)
      mn_mask |= mn_rem > i * kSlotStep ? 1u << i : 0u;
  }

  // Every slot of this thread lies inside [0, MN) (true for all tiles of an interior block).
  __device__ __forceinline__ bool mn_full() const {
    if constexpr (Mode == SgemmLoad::kKContig) {
      return mn_mask == (kSlots == 32 ? ~0u : (1u << kSlots) - 1u);
    } else {
      return mn_bytes == 4 * kVec;
    }
  }

  // load() for a k-tile with every slot in range (mn_full() and the whole tile inside
  // [0, K)): plain copies, no zero-fill selects.
  __device__ __forceinline__ void load_full(float* dst, int64_t ld) {
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      const int so = Mode == SgemmLoad::kKContig ? i * kSlotStep : i * kSlotStep * kStride;
      sgemm_cp_async_full<4 * kVec>(dst + smem + so, ptr + i * kSlotStep * ld);
    }
    advance(ld);
  }

  // Issues the copies of the current k-tile into stage `dst`; then moves to the next k-tile.
  __device__ __forceinline__ void load(float* dst, const float* X, int64_t ld) {
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      if constexpr (Mode == SgemmLoad::kKContig) {
        const bool ok = k_rem > 0 && (mn_mask >> i & 1u);
        const float* src = ok ? ptr + i * kSlotStep * ld : X;
        sgemm_cp_async<4>(dst + smem + i * kSlotStep, src, ok ? 4 : 0);
      } else if constexpr (Mode == SgemmLoad::kMnVec4) {
        const int bytes = k_rem > i * kSlotStep ? mn_bytes : 0;
        const float* src = bytes > 0 ? ptr + i * kSlotStep * ld : X;
        sgemm_cp_async<16>(dst + smem + i * kSlotStep * kStride, src, bytes);
      } else {
        const bool ok = k_rem > i * kSlotStep && mn_bytes != 0;
        const float* src = ok ? ptr + i * kSlotStep * ld : X;
        sgemm_cp_async<4>(dst + smem + i * kSlotStep * kStride, src, ok ? 4 : 0);
      }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
      // without cp.async the copies are loads into registers and stores: at most 4 loads in
      // flight (all of a k-tile's 12-20 hoisted beside 64 accumulators spilled 24-36 bytes
      // in the 128 x 128 and 64 x 256 kernels with 4-byte copies of A and B along K, sm_75)
      if (i % 4 == 3) asm volatile("" ::: "memory");
#endif
    }
    advance(ld);
  }

  __device__ __forceinline__ void advance(int64_t ld) {
    if constexpr (Mode == SgemmLoad::kKContig) {
      ptr += kBK;
    } else {
      ptr += kBK * ld;
    }
    k_rem -= kBK;
  }
};

// Arguments of sgemm_kernel (one struct: the kernel has one launch site, launch_sgemm).
struct SgemmParams {
  int64_t m, n, k;  // k == 0 is never launched (kScale)
  float alpha, beta;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float* C;
  int64_t ldc;
  bool c_vec4;  // 16-byte access to C is legal
  int stages;
  int64_t tiles_m, tiles_n;
  int64_t dp_tiles;       // blocks [0, dp_tiles): whole tiles
  int64_t split_tiles;    // then split_tiles * splits blocks: part s of split tile u is
  int splits;             //   block dp_tiles + s * split_tiles + u
  int64_t split_k_tiles;  // k-tiles per part
  float* ws;              // partial tile of (u, s) at ws + (u * splits + s) * BM * BN
                          // ([r][c], row stride BN; with TransC [c][r], row stride BM)
};

// Origin of tile `tile` of a tiles_m x tiles_n grid of bm x bn tiles, in the grouped order:
// groups of 8 tile-rows, column by column inside a group, so that blocks resident together
// share rows of A and columns of B in L2.
__host__ __device__ __forceinline__ void sgemm_tile_origin(int64_t tile, int64_t tiles_m,
                                                           int64_t tiles_n, int bm, int bn,
                                                           int64_t* m0, int64_t* n0) {
  constexpr int64_t kGroup = 8;
  const int64_t in_group = kGroup * tiles_n;
  const int64_t first_m = tile / in_group * kGroup;
  const int64_t group_m = tiles_m - first_m < kGroup ? tiles_m - first_m : kGroup;
  *m0 = (first_m + (tile % in_group) % group_m) * bm;
  *n0 = (tile % in_group) / group_m * bn;
}

// Zeros a register tile of accumulators. A loop of its own, not `= {}` at the declaration:
// value-initialized, 9 of the sgemm kernels came out of ptxas differently (sm_90).
template <int M, int N>
__device__ __forceinline__ void sgemm_zero(float (&acc)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int j = 0; j < N; ++j)
      acc[i][j] = 0.f;
}

// TransC: the kernel's C is C^T, its (r, c) goes to C[c * ldc + r] (p.m, p.n: C^T's). A
// template argument, not a field of p: as a run-time flag its epilogue beside the other cost
// the 128 x 256 and 128 x 128 kernels 4-5 % (H100, 4096^3 2779 -> 2908 us; their SASS changed
// beyond the epilogue), and without it they compile to what they were before C^T.
template <SgemmTile Tile, SgemmLoad LoadA, SgemmLoad LoadB, bool TransC>
__global__ void __launch_bounds__(SgemmShape<Tile>::kThreads, SgemmShape<Tile>::kMinBlocks)
    sgemm_kernel(const SgemmParams p) {
  using Shape = SgemmShape<Tile>;
  constexpr int BM = Shape::BM, BN = Shape::BN, TM = Shape::TM, TN = Shape::TN;
  constexpr int kQM = Shape::kQuadsM, kQN = Shape::kQuadsN;
  constexpr int kBK = kSgemmBK;
  constexpr int kThreads = Shape::kThreads;
  extern __shared__ float4 sgemm_smem[];
  float* const smem = reinterpret_cast<float*>(sgemm_smem);
  const int stages = p.stages;

  // this block's tile and range of K
  const int64_t bid = blockIdx.x;
  const bool partial = bid >= p.dp_tiles;
  int64_t tile = bid, k_begin = 0, k_len = p.k;
  if (partial) {
    const int64_t r = bid - p.dp_tiles;
    const int64_t s = r / p.split_tiles;
    tile = p.dp_tiles + r % p.split_tiles;
    k_begin = s * p.split_k_tiles * kBK;
    k_len = p.k - k_begin < p.split_k_tiles * kBK ? p.k - k_begin : p.split_k_tiles * kBK;
  }
  int64_t m0, n0;
  sgemm_tile_origin(tile, p.tiles_m, p.tiles_n, BM, BN, &m0, &n0);

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = (warp / Shape::kWarpsN) * Shape::kWarpM;
  const int wn = (warp % Shape::kWarpsN) * Shape::kWarpN;
  const int lm = lane / 8, ln = lane % 8;
  const int a_off = wm + lm * 4;  // + 16 q for quad q along m
  const int b_off = wn + ln * 4;  // + 32 q for quad q along n

  // k-tile counts and the loop counter in 32 bits (with 64-bit ones ptxas kept them in vector
  // registers instead of uniform ones and dropped the fragment double buffer of the loop on
  // sm_90). Safe: a tiled call has more than 32 rows of op(A) in memory, so k < 2^31 * 16.
  const int k_tiles = static_cast<int>((k_len + kBK - 1) / kBK);
  const int full_k_tiles = static_cast<int>(k_len / kBK);
  auto stage_a = [&](int s) { return smem + s * Shape::kStageFloats; };
  auto stage_b = [&](int s) { return smem + s * Shape::kStageFloats + kBK * Shape::kStrideA; };
  // the operands from k_begin on (a K-contiguous operand moves along its rows, an
  // MN-contiguous one down its rows)
  const float* const A = p.A + (LoadA == SgemmLoad::kKContig ? k_begin : k_begin * p.lda);
  const float* const B = p.B + (LoadB == SgemmLoad::kKContig ? k_begin : k_begin * p.ldb);
  SgemmTileLoader<BM, kThreads, LoadA> load_a(A, p.lda, m0, p.m, k_len, tid);
  SgemmTileLoader<BN, kThreads, LoadB> load_b(B, p.ldb, n0, p.n, k_len, tid);
  // 128-accumulator tiles (one block per SM, up to 255 registers) overlap the start of each
  // k-tile with the end of the previous one, take plain copies for whole interior tiles and
  // issue the next stage's copies three quarters into a tile (4096^3 on the H100: 0.915 ->
  // 0.953x cuBLAS, 8192^3 0.919 -> 0.963x). The 64-accumulator kernels (128 registers, two
  // blocks per SM) keep the plain loop: the overlap spills 20-36 bytes there and gained
  // nothing at 1024^3.
  constexpr bool kOverlap = Shape::kS.overlap;
  // The k step after which a tile issues its copies: 12 of 16 was the fastest of 0, 4, 8,
  // 10, 12, 13, 14 (copies right after the barrier collide with every warp's first fragment
  // loads; at 13 or 14 they delay the barrier of step 15 and cost 3-6 %).
  constexpr int kCopyStep = kBK * 3 / 4;
  // every slot of this thread inside [0, M) x [0, N): whole k-tiles take plain copies
  const bool mn_full = kOverlap && load_a.mn_full() && load_b.mn_full();
  // k-tile kt of both operands into stage s (the loaders walk the k-tiles in order); p.A /
  // p.B are only the never-read source of zero-filled copies (no register for A, B)
  auto load = [&](int s, int kt) {
    if (mn_full && kt < full_k_tiles) {
      load_a.load_full(stage_a(s), p.lda);
      load_b.load_full(stage_b(s), p.ldb);
    } else {
      load_a.load(stage_a(s), p.A, p.lda);
      load_b.load(stage_b(s), p.B, p.ldb);
    }
  };

  float acc[TM][TN];
  sgemm_zero(acc);

  // one 16-byte LDS per quad: A broadcast within each quarter-warp, B 128 contiguous bytes
  float a[2][TM], b[2][TN];
  auto load_frag = [&](int buf, const float* as, const float* bs, int kk) {
#pragma unroll
    for (int q = 0; q < kQM; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(as + kk * Shape::kStrideA + a_off + q * 16);
      a[buf][4 * q] = v.x, a[buf][4 * q + 1] = v.y, a[buf][4 * q + 2] = v.z;
      a[buf][4 * q + 3] = v.w;
    }
#pragma unroll
    for (int q = 0; q < kQN; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(bs + kk * Shape::kStrideB + b_off + q * 32);
      b[buf][4 * q] = v.x, b[buf][4 * q + 1] = v.y, b[buf][4 * q + 2] = v.z;
      b[buf][4 * q + 3] = v.w;
    }
  };
  auto fma_frag = [&](int buf) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j)
        acc[i][j] = fmaf(a[buf][i], b[buf][j], acc[i][j]);
  };

  // prologue: stages - 1 tiles in flight (empty groups keep the group count uniform)
  for (int s = 0; s < stages - 1; ++s) {
    if (s < k_tiles) load(s, s);
    sgemm_cp_async_commit();
  }

  int read_stage = 0;
  int write_stage = stages - 1;
  if constexpr (kOverlap) {
    // The barrier of k-tile kt + 1 sits before the last k step of tile kt, and that step's
    // FFMAs run while the first fragments of tile kt + 1 load: no k-tile starts with its
    // warps waiting on shared memory. The copies of tile kt + stages - 1 are issued at step
    // kCopyStep; they overwrite the stage read in iteration kt - 1, which every thread left
    // behind at that iteration's barrier.
    sgemm_cp_async_wait(stages - 2);  // tile 0 has landed
    __syncthreads();
    load_frag(0, stage_a(0), stage_b(0), 0);
    for (int kt = 0; kt < k_tiles; ++kt) {
      const float* as = stage_a(read_stage);
      const float* bs = stage_b(read_stage);
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        if (kk == kBK - 1) {
          // tile kt + 1 has landed (at most stages - 2 younger groups pending)
          sgemm_cp_async_wait(stages - 2);
          __syncthreads();
          read_stage = read_stage + 1 == stages ? 0 : read_stage + 1;
          as = stage_a(read_stage);
          bs = stage_b(read_stage);
          if (kt + 1 < k_tiles) load_frag(0, as, bs, 0);
        } else {
          load_frag((kk + 1) & 1, as, bs, kk + 1);
        }
        if (kk == kCopyStep) {
          if (kt + stages - 1 < k_tiles) load(write_stage, kt + stages - 1);
          sgemm_cp_async_commit();
          write_stage = write_stage + 1 == stages ? 0 : write_stage + 1;
        }
        fma_frag(kk & 1);
      }
    }
  } else {
    for (int kt = 0; kt < k_tiles; ++kt) {
      // tile kt has landed (at most stages - 2 younger groups still pending) and every
      // thread is done with the stage about to be overwritten (read in iteration kt - 1)
      sgemm_cp_async_wait(stages - 2);
      __syncthreads();
      if (kt + stages - 1 < k_tiles) load(write_stage, kt + stages - 1);
      sgemm_cp_async_commit();
      const float* as = stage_a(read_stage);
      const float* bs = stage_b(read_stage);
      load_frag(0, as, bs, 0);
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        if (kk + 1 < kBK) load_frag((kk + 1) & 1, as, bs, kk + 1);
        fma_frag(kk & 1);
      }
      read_stage = read_stage + 1 == stages ? 0 : read_stage + 1;
      write_stage = write_stage + 1 == stages ? 0 : write_stage + 1;
    }
  }

  // Where the results go: a whole tile to C (alpha, beta, C's bounds); a split part's raw
  // sums to its slot of the workspace (the whole BM x BN tile with a row stride of BN, or
  // transposed with a row stride of BM when C is written transposed; rows and columns past C
  // hold the zeros the copies filled in). One epilogue for both: with a second one for the
  // parts, ptxas single-buffered fragments of the 128 x 256 main loop on sm_90 (an FFMA right
  // after the LDS it needs; 4096^3 3017 us against 2777 before).
  float* out = p.C;
  int64_t ld = p.ldc, row0 = m0, col0 = n0, rows = p.m, cols = p.n;
  float alpha = p.alpha, beta = p.beta;
  bool vec4 = p.c_vec4;
  if (partial) {
    const int64_t r = bid - p.dp_tiles;
    const int64_t slot = (r % p.split_tiles) * p.splits + r / p.split_tiles;
    out = p.ws + slot * (BM * BN);
    ld = TransC ? BM : BN, row0 = 0, col0 = 0, rows = BM, cols = BN;
    alpha = 1.f, beta = 0.f;
    vec4 = true;
  }

  if constexpr (TransC) {
    // C^T: column col0 + b_off + 32 jq + j of the kernel's C is a row of C, and the 4
    // consecutive rows of a quad are 4 consecutive elements of it
#pragma unroll
    for (int q = 0; q < kQM; ++q) {
      const int64_t r = row0 + a_off + q * 16;
      if (r >= rows) continue;
#pragma unroll
      for (int jq = 0; jq < kQN; ++jq) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int64_t c = col0 + b_off + jq * 32 + j;
          if (c >= cols) continue;
          float* ccol = out + c * ld;
          if (vec4 && r + 3 < rows) {
            Pack<float, 4> v;
#pragma unroll
            for (int i = 0; i < 4; ++i)
              v.elem[i] = acc[4 * q + i][jq * 4 + j];
            store_pack<4>(ccol + r, 0, axpby<4>(alpha, v, beta, ccol + r));
          } else {
#pragma unroll
            for (int i = 0; i < 4; ++i)
              if (r + i < rows)
                ccol[r + i] = axpby(alpha, acc[4 * q + i][jq * 4 + j], beta, ccol + r + i);
          }
        }
      }
    }
  } else {
    // epilogue: rows row0 + a_off + 16 q + {0..3}, columns col0 + b_off + 32 q + {0..3}
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int64_t r = row0 + a_off + (i & 3) + (i >> 2) * 16;
      if (r >= rows) continue;
      float* crow = out + r * ld;
#pragma unroll
      for (int jq = 0; jq < kQN; ++jq) {
        const int64_t c = col0 + b_off + jq * 32;
        if (vec4 && c + 3 < cols) {
          Pack<float, 4> v;
#pragma unroll
          for (int j = 0; j < 4; ++j)
            v.elem[j] = acc[i][jq * 4 + j];
          store_pack<4>(crow + c, 0, axpby<4>(alpha, v, beta, crow + c));
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (c + j < cols) crow[c + j] = axpby(alpha, acc[i][jq * 4 + j], beta, crow + c + j);
        }
      }
    }
  }
}

// Arguments of sgemm_split_reduce_kernel.
struct SgemmReduceParams {
  int64_t m, n;  // C's
  float alpha, beta;
  float* C;
  int64_t ldc;
  bool c_vec4;
  bool c_trans;     // the tiles are C^T's (sgemm_kernel's TransC): transposed partials
  const float* ws;  // partial tiles, as sgemm_kernel writes them
  int splits;
  int bm, bn;
  int64_t tiles_m, tiles_n, dp_tiles, split_tiles;
};

// C = alpha * (sum of the parts of each split tile, in part order) + beta * C. One thread
// per 4 consecutive columns of a row of C in a tile (a tile of C^T holds bn rows of bm): 16-byte
// reads of the partials, 16-byte access to C where it is legal. With a programmatic dependent
// launch it may start while sgemm_kernel finishes, and waits for it before reading the
// workspace.
template <int = 0>
__global__ void __launch_bounds__(kSgemmReduceBlock)
    sgemm_split_reduce_kernel(const SgemmReduceParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
  // 32-bit index math: the split tiles' partials are at most kSgemmMaxSplitBytes
  const int tile_cols = p.c_trans ? p.bm : p.bn;  // C's columns in a tile
  const int quads = p.bm * p.bn / 4;              // per tile
  const int idx = static_cast<int>(blockIdx.x) * kSgemmReduceBlock + static_cast<int>(threadIdx.x);
  const int u = idx / quads, e = idx % quads;
  if (u >= p.split_tiles) return;
  const int r = e / (tile_cols / 4), c = e % (tile_cols / 4) * 4;
  int64_t m0, n0;
  sgemm_tile_origin(p.dp_tiles + u, p.tiles_m, p.tiles_n, p.bm, p.bn, &m0, &n0);
  const int64_t row = (p.c_trans ? n0 : m0) + r, col = (p.c_trans ? m0 : n0) + c;
  if (row >= p.m || col >= p.n) return;
  const int64_t tile_floats = int64_t{p.bm} * p.bn;
  const float* src = p.ws + int64_t{u} * p.splits * tile_floats + r * tile_cols + c;
  Pack<float, 4> sum = load_pack<4>(src, 0);
  for (int s = 1; s < p.splits; ++s) {
    const Pack<float, 4> v = load_pack<4>(src + s * tile_floats, 0);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      sum.elem[j] += v.elem[j];
  }
  float* const out = p.C + row * p.ldc + col;
  if (p.c_vec4 && col + 3 < p.n) {
    store_pack<4>(out, 0, axpby<4>(p.alpha, sum, p.beta, out));
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (col + j < p.n) out[j] = axpby(p.alpha, sum.elem[j], p.beta, out + j);
  }
}

// C = beta * C (beta == 0: C = 0, not read), for k == 0 or alpha == 0.
template <int = 0>
__global__ void __launch_bounds__(kSgemmReduceBlock)
    sgemm_scale_kernel(int64_t m, int64_t n, float beta, float* C, int64_t ldc) {
  const int64_t stride = int64_t{gridDim.x} * kSgemmReduceBlock;
  for (int64_t e = int64_t{blockIdx.x} * kSgemmReduceBlock + threadIdx.x; e < m * n; e += stride) {
    float* const c = C + (e / n) * ldc + e % n;
    *c = axpby(0.f, 0.f, beta, c);
  }
}

}  // namespace kernelkit::detail
