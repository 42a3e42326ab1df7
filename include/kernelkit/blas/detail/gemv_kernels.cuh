// SPDX-License-Identifier: Apache-2.0
// GEMV kernels (f32, row-major A with leading dimension lda): y = alpha * op(A) x + beta * y.
// Every choice (which kernel, its template arguments, grid, splits) is made by
// plan_gemv in blas/gemv.cuh; these kernels assume the plan's preconditions.
//
// A kernel either writes y (y = alpha * sum + beta * y, core axpby: y is not read when
// beta == 0), or writes partial sums: to the caller's workspace (partial row z of output k
// at partials[z * count + k]; gemv_combine_kernel then adds the rows in order z = 0, 1, ...),
// or, in a thread-block cluster, to shared memory that the cluster's rank 0 adds in rank
// order. Every sum is formed in an order fixed by the shape, the operands' alignment, the
// workspace size and the device: the same call gives the same bits run after run.
#pragma once

#include <cstdint>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/cluster.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/epilogue.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::detail {

inline constexpr int kGemvPack = 4;          // floats per 16-byte load
inline constexpr int kGemvBlock = 256;       // threads of every kernel but the wide BlasOp::T ones
inline constexpr int kGemvWideBlock = 1024;  // BlasOp::T one-wave kernels: one block per SM
// Independent 16-byte loads of A a thread issues before its FMAs: BlasOp::N loads as many
// of x beside them; BlasOp::T at 32 registers keeps ~2 of its 4 in flight (the SASS issues
// the third load after the first FFMA), the wide BlasOp::T kernels (64 registers) all 8.
inline constexpr int kGemvRowUnroll = 2;
inline constexpr int kGemvColUnroll = 4;
inline constexpr int kGemvWideUnroll = 8;

// Short rows (BlasOp::N) and short columns (BlasOp::T): a tile of up to kGemvTileFloats
// consecutive floats of A (whole rows) is staged in shared memory unpadded, at its own
// distance past a 16-byte boundary (16-byte loads and stores whatever lda is).
inline constexpr int kGemvTileFloats = 4096;
inline constexpr int kGemvShortMaxCols = 64;  // widest row the short kernels take
// BlasOp::T: rows of a tile, whose x is staged beside it (one 16-byte load of x per thread:
// 2048 rows spilled at 32 registers once x was loaded with the tile)
inline constexpr int kGemvShortMaxTileRows = 1024;

// Resident blocks per SM that the full-occupancy 256-thread kernels (gemv_n_split_kernel<true>,
// gemv_t_kernel<Pack, 16, 16, 4>) are built for, in code of architecture code_arch, on an SM
// that holds `blocks` of them: all (32 registers), but 6 (40 registers) in sm_80 code, where
// ptxas spilled both at 32 (28 and 4 bytes; sm_90 and sm_100 code does not). The plan asks
// the same with d.code_arch.
__host__ __device__ constexpr int gemv_full_blocks(int blocks, int code_arch) {
  return code_arch == 80 && blocks > 6 ? 6 : blocks;
}

// __launch_bounds__ minimum blocks of the BlasOp::T tile kernels: the wide (Unroll 8,
// 64-register) kernels run one 1024-thread block per SM; the few-rows kernels (TY == 1, every
// trip predicated: they spill at 32 registers on sm_80/86/89/100) and the strided ones (Pack x
// Unroll scalar loads in flight) half the SM's threads (64 registers); the others fill the SM
// (gemv_full_blocks).
__host__ __device__ constexpr int gemv_t_min_blocks(int threads, int ty, int unroll, bool strided) {
  return unroll > kGemvColUnroll ? 1
         : (ty == 1 || strided)  ? (min_blocks_per_sm(threads) + 1) / 2
                                 : gemv_full_blocks(min_blocks_per_sm(threads), kCompiledArch);
}

// __launch_bounds__ minimum blocks of gemv_n_row_pairs_kernel: 5/8 of the SM's 256-thread
// blocks (48 registers on sm_90: at 32 its 4 + 2 packs in flight spill; at 40 ptxas issues
// the sixth load after the first FFMA, a second round trip). The plan reads the same
// fraction of the device's blocks per SM.
//
// Unroll 4 (rows of at most two trips of 4 packs a thread: 4096 x 4096 is one trip): 8 loads of
// A and 4 of x in flight a thread, 3/8 of the SM's blocks (80 registers on sm_90: at 64 ptxas
// issued two of the 12 loads after the first FFMA).
__host__ __device__ constexpr int gemv_pairs_blocks(int blocks_per_sm, int unroll = 2) {
  return unroll > 2 ? (blocks_per_sm * 3 / 8 < 1 ? 1 : blocks_per_sm * 3 / 8)
                    : (blocks_per_sm * 5 / 8 < 1 ? 1 : blocks_per_sm * 5 / 8);
}

// Rows a block of gemv_n_group_kernel shares x's loads among (few long aligned rows).
inline constexpr int kGemvMaxGroupRows = 4;

// __launch_bounds__ minimum blocks of gemv_n_group_kernel: 5/8 of the SM's 256-thread blocks
// (48 registers on sm_90: Rows + 1 loads in flight; at 40 ptxas issued the third row's load
// after the first FFMA). The plan reads the same fraction.
__host__ __device__ constexpr int gemv_group_blocks(int blocks_per_sm) {
  return blocks_per_sm * 5 / 8 < 1 ? 1 : blocks_per_sm * 5 / 8;
}

// Static shared memory of gemv_t_kernel<Pack, TX, TY, ...> (the plan's occupancy input): the
// combine over TY (red, part, sums), or with TY == 1 the block's column sums for a cluster.
__host__ __device__ constexpr int gemv_t_smem_bytes(int pack, int tx, int ty) {
  return ty == 1 ? static_cast<int>(sizeof(float)) * tx * pack
                 : static_cast<int>(sizeof(float)) *
                       (tx * ty * pack + (tx * ty / (tx * pack)) * tx * pack + tx * pack);
}
inline constexpr int kGemvShortRowsSmem =
    static_cast<int>(sizeof(float)) * (kGemvTileFloats + kGemvPack + kGemvShortMaxCols);
inline constexpr int kGemvShortColsSmem =
    static_cast<int>(sizeof(float)) *
    (kGemvTileFloats + kGemvShortMaxTileRows + 2 * kGemvPack + kGemvBlock);

// ---- device helpers ------------------------------------------------------------------------

// Four floats of x beside a 16-byte pack of A: one aligned load (XVec: x + 4p is 16-byte
// aligned), else four (x is aligned differently from the rows of A; they hit L1).
template <bool XVec>
__device__ __forceinline__ Pack<float, kGemvPack> gemv_load_x(const float* __restrict__ x,
                                                              int64_t p) {
  if constexpr (XVec) {
    return load_pack<kGemvPack>(x, p);
  } else {
    Pack<float, kGemvPack> v;
#pragma unroll
    for (int k = 0; k < kGemvPack; ++k)
      v.elem[k] = x[p * kGemvPack + k];
    return v;
  }
}

// Sum over packs first, first + step, ... < packs of a's 16-byte packs times x's, Unroll
// independent loads of each in flight. a is 16-byte aligned (x too when XVec).
template <bool XVec, int Unroll>
__device__ __forceinline__ float gemv_dot_packs(const float* __restrict__ a,
                                                const float* __restrict__ x, int64_t first,
                                                int64_t packs, int64_t step) {
  float acc[Unroll] = {};
  int64_t p = first;
  // no further unrolling by the compiler: Unroll sets the loads in flight and the registers
#pragma unroll 1
  for (; p + (Unroll - 1) * step < packs; p += Unroll * step) {
    Pack<float, kGemvPack> av[Unroll], xv[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      av[u] = load_pack<kGemvPack>(a, p + u * step);
      xv[u] = gemv_load_x<XVec>(x, p + u * step);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
#pragma unroll
      for (int k = 0; k < kGemvPack; ++k)
        acc[u] = fmaf(av[u].elem[k], xv[u].elem[k], acc[u]);
    }
  }
#pragma unroll 1
  for (; p < packs; p += step) {
    const Pack<float, kGemvPack> av = load_pack<kGemvPack>(a, p);
    const Pack<float, kGemvPack> xv = gemv_load_x<XVec>(x, p);
#pragma unroll
    for (int k = 0; k < kGemvPack; ++k)
      acc[0] = fmaf(av.elem[k], xv.elem[k], acc[0]);
  }
  float sum = 0.f;
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    sum += acc[u];
  return sum;
}

// Thread `lane` of the `lanes` threads sharing the row a[0, n): its part of dot(a, x), the
// 16-byte packs lane, lane + lanes, ... and the scalar tail (to lanes 0..3). Aligned: a and x
// are 16-byte aligned. Else the row may start anywhere (rows of an odd lda): its scalar head
// up to its first 16-byte boundary (core pack_head) also goes to lanes 0..3, and x, aligned
// differently, is read four floats at a time.
template <bool Aligned, int Unroll>
__device__ __forceinline__ float gemv_row_dot(const float* __restrict__ a,
                                              const float* __restrict__ x, int64_t n, int64_t lane,
                                              int64_t lanes) {
  const int64_t head = Aligned ? 0 : pack_head<kGemvPack>(a, n);
  const int64_t packs = (n - head) / kGemvPack;
  const int64_t tail = head + packs * kGemvPack;
  float dot = gemv_dot_packs<Aligned, Unroll>(a + head, x + head, lane, packs, lanes);
  if (!Aligned && lane < head) dot = fmaf(a[lane], x[lane], dot);
  if (lane < n - tail) dot = fmaf(a[tail + lane], x[tail + lane], dot);
  return dot;
}

// Floats of p past its 16-byte boundary (0..3).
__device__ __forceinline__ int gemv_phase(const float* p) {
  return static_cast<int>((reinterpret_cast<std::uintptr_t>(p) / sizeof(float)) % kGemvPack);
}

// Stages src[0, len) (len <= kGemvTileFloats) at dst[phase + w] with the whole block and
// returns phase, src's distance past a 16-byte boundary (0..3): its 16-byte packs land on
// 16-byte words of dst (16-byte aligned, len + 3 floats) and are stored whole. The scalar
// head and tail first (threads 0..3), then each thread issues all of its 16-byte loads
// before its stores: one memory round trip.
__device__ __forceinline__ int gemv_stage_span(float* dst, const float* __restrict__ src, int len) {
  constexpr int kLoads = kGemvTileFloats / kGemvPack / kGemvBlock;
  const int t = static_cast<int>(threadIdx.x);
  const int ap = gemv_phase(src);
  const int head = ::min((kGemvPack - ap) % kGemvPack, len);
  const int packs = (len - head) / kGemvPack;
  const int tail = head + packs * kGemvPack;
  if (t < head) dst[ap + t] = src[t];
  if (t < len - tail) dst[ap + tail + t] = src[tail + t];
  Pack<float, kGemvPack> v[kLoads] = {};
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    if (t + u * kGemvBlock < packs) v[u] = load_pack<kGemvPack>(src + head, t + u * kGemvBlock);
  }
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    if (t + u * kGemvBlock < packs)
      store_pack<kGemvPack>(dst + ap + head, t + u * kGemvBlock, v[u]);
  }
  return ap;
}

// Stages src[0, len) (len <= kGemvTileFloats) at dst[*phase + w] and xsrc[0, xlen) (xlen <=
// kGemvShortMaxTileRows) at xdst[*xphase + w] with the whole block, unpadded: *phase (0..3)
// is src's distance past a 16-byte boundary, so its 16-byte packs land on 16-byte words of
// dst (16-byte aligned, len + 3 floats) and are stored whole; the same for x. The scalar
// head / tail (threads 0..3; none where the spans start and end 16-byte aligned) first, then
// each thread issues its 16-byte loads of both spans before its stores: one memory round
// trip per tile.
__device__ __forceinline__ void gemv_stage_spans(float* dst, const float* __restrict__ src, int len,
                                                 int* phase, float* xdst,
                                                 const float* __restrict__ xsrc, int xlen,
                                                 int* xphase) {
  constexpr int kLoads = kGemvTileFloats / kGemvPack / kGemvBlock;
  constexpr int kXLoads = kGemvShortMaxTileRows / kGemvPack / kGemvBlock;
  static_assert(kXLoads == 1, "x of a tile is one 16-byte load a thread");
  const int t = static_cast<int>(threadIdx.x);
  const int ap = gemv_phase(src), xp = gemv_phase(xsrc);
  const int head = ::min((kGemvPack - ap) % kGemvPack, len);
  const int xhead = ::min((kGemvPack - xp) % kGemvPack, xlen);
  const int packs = (len - head) / kGemvPack, xpacks = (xlen - xhead) / kGemvPack;
  const int tail = head + packs * kGemvPack, xtail = xhead + xpacks * kGemvPack;
  // scalar edges: at most 3 floats before the first pack and after the last, per span (before
  // the 16-byte loads: issued after them, their addresses spill at 32 registers); a uniform
  // branch, so that spans aligned at both ends (the usual tile) skip their address arithmetic
  if ((head | (len - tail) | xhead | (xlen - xtail)) != 0) {
    if (t < head) dst[ap + t] = src[t];
    if (t < len - tail) dst[ap + tail + t] = src[tail + t];
    if (t < xhead) xdst[xp + t] = xsrc[t];
    if (t < xlen - xtail) xdst[xp + xtail + t] = xsrc[xtail + t];
  }
  Pack<float, kGemvPack> v[kLoads] = {}, xv = {};
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    if (t + u * kGemvBlock < packs) v[u] = load_pack<kGemvPack>(src + head, t + u * kGemvBlock);
  }
  if (t < xpacks) xv = load_pack<kGemvPack>(xsrc + xhead, t);
    // ap + head is 0 or 4 (or packs == 0): 16-byte aligned stores
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    if (t + u * kGemvBlock < packs)
      store_pack<kGemvPack>(dst + ap + head, t + u * kGemvBlock, v[u]);
  }
  if (t < xpacks) store_pack<kGemvPack>(xdst + xp + xhead, t, xv);
  *phase = ap;
  *xphase = xp;
}

// Lets the combine kernel (a programmatic dependent launch) be scheduled once every block of
// this grid got here; it waits for the whole grid before it reads a partial.
__device__ __forceinline__ void gemv_allow_combine() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// ---- kernels -------------------------------------------------------------------------------
// (Templates, so that the header can be included by several translation units.)

// y[k] = beta * y[k] for k < count (beta == 0: zeros, y unread): alpha == 0 or an empty
// inner dimension; A and x are never touched.
template <int = 0>
__global__ void __launch_bounds__(kGemvBlock, min_blocks_per_sm(kGemvBlock))
    gemv_scale_kernel(int64_t count, float beta, float* __restrict__ y) {
  for (int64_t k = blockIdx.x * int64_t{kGemvBlock} + threadIdx.x; k < count;
       k += int64_t{gridDim.x} * kGemvBlock)
    y[k] = beta == 0.f ? 0.f : beta * y[k];
}

// The scaled copy: y[k] = alpha * x[0] * src[k * stride] + beta * y[k], k < count
// (BlasOp::N with n == 1: src is A's column, stride lda; BlasOp::T with m == 1: src is A's
// row, stride 1). Vec: stride 1 and src, y equally far from a 16-byte boundary: scalar head
// to y's first boundary, then 16-byte packs of both, scalar tail; else scalar loads. Each
// thread keeps kUnroll loads in flight.
template <bool Vec>
__global__ void __launch_bounds__(kGemvBlock, min_blocks_per_sm(kGemvBlock))
    gemv_copy_kernel(int64_t count, float alpha, const float* __restrict__ src, int64_t stride,
                     const float* __restrict__ x, float beta, float* __restrict__ y) {
  constexpr int kUnroll = 4;
  const float scale = alpha * x[0];
  const int64_t tid = blockIdx.x * int64_t{kGemvBlock} + threadIdx.x;
  const int64_t threads = int64_t{gridDim.x} * kGemvBlock;
  if constexpr (Vec) {
    const int64_t head = pack_head<kGemvPack>(y, count);
    const int64_t packs = (count - head) / kGemvPack;
    const int64_t tail = head + packs * kGemvPack;
    if (tid < head) y[tid] = axpby(scale, src[tid], beta, y + tid);
    if (tid < count - tail) y[tail + tid] = axpby(scale, src[tail + tid], beta, y + tail + tid);
    const float* s = src + head;
    float* out = y + head;
    for (int64_t p0 = tid; p0 < packs; p0 += threads * kUnroll) {
      Pack<float, kGemvPack> v[kUnroll] = {};
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (p0 + u * threads < packs) v[u] = load_pack<kGemvPack>(s, p0 + u * threads);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t p = p0 + u * threads;
        if (p < packs) store_pack<kGemvPack>(out, p, axpby(scale, v[u], beta, out + p * kGemvPack));
      }
    }
  } else {
    for (int64_t k0 = tid; k0 < count; k0 += threads * kUnroll) {
      float v[kUnroll] = {};
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (k0 + u * threads < count) v[u] = src[(k0 + u * threads) * stride];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t k = k0 + u * threads;
        if (k < count) y[k] = axpby(scale, v[u], beta, y + k);
      }
    }
  }
}

// BlasOp::N, many rows: a group of Width consecutive lanes per row, grid-stride over rows
// (each warp owns 32 / Width consecutive rows per step; the loop condition is warp-uniform,
// so the group shuffles always see the whole warp). Aligned: A, lda and x are 16-byte
// aligned; else rows start anywhere (gemv_row_dot). Registers: 32 at full occupancy for the
// aligned warp-per-row form; the narrower groups and the unaligned form's head spill there,
// so they run at half the SM's threads (64 registers).
template <int Width, bool Aligned>
__global__ void __launch_bounds__(kGemvBlock, min_blocks_per_sm(kGemvBlock) /
                                                  (Width < kWarpSize || !Aligned ? 2 : 1))
    gemv_n_rows_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                       const float* __restrict__ x, float beta, float* __restrict__ y) {
  static_assert(kGemvBlock % kWarpSize == 0, "whole warps: the group shuffles use the full mask");
  constexpr int kRowsPerWarp = kWarpSize / Width;
  constexpr int kWarpsPerBlock = kGemvBlock / kWarpSize;
  const int lane = threadIdx.x % Width;
  const int group = (threadIdx.x % kWarpSize) / Width;
  const int64_t warp = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarpSize;
  const int64_t warp_stride = int64_t{gridDim.x} * kWarpsPerBlock;
  for (int64_t base = warp * kRowsPerWarp; base < m; base += warp_stride * kRowsPerWarp) {
    const int64_t row = base + group;
    float dot = 0.f;
    if (row < m) dot = gemv_row_dot<Aligned, kGemvRowUnroll>(A + row * lda, x, n, lane, Width);
    dot = warp_reduce<Width>(dot, Sum{});
    // lane 0 of each group holds its row's dot product
    if (lane == 0 && row < m) y[row] = axpby(alpha, dot, beta, y + row);
  }
}

// BlasOp::N, few long rows (m == 1: a dot product): the gridDim.x blocks with the same
// blockIdx.y share a row (block s reads the row's packs s * 256 + t, stepping by
// gridDim.x * 256), grid-stride over rows by gridDim.y. gridDim.x == 1: the block writes
// y; partials: block s writes partials[s * m + row]; else the gridDim.x blocks are one
// cluster (sm_90+) and rank 0 adds their sums in rank order through distributed shared
// memory. Aligned as gemv_n_rows_kernel (the unaligned form at half the SM's threads; the
// aligned one at gemv_full_blocks).
template <bool Aligned>
__global__ void __launch_bounds__(kGemvBlock, Aligned
                                                  ? gemv_full_blocks(min_blocks_per_sm(kGemvBlock),
                                                                     kCompiledArch)
                                                  : min_blocks_per_sm(kGemvBlock) / 2)
    gemv_n_split_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                        const float* __restrict__ x, float beta, float* __restrict__ y,
                        float* __restrict__ partials) {
  const int splits = gridDim.x;
  const int split = blockIdx.x;
  const int64_t lane = int64_t{split} * kGemvBlock + threadIdx.x;
  const int64_t lanes = int64_t{splits} * kGemvBlock;
  for (int64_t row = blockIdx.y; row < m; row += gridDim.y) {
    float dot = gemv_row_dot<Aligned, kGemvRowUnroll>(A + row * lda, x, n, lane, lanes);
    if (row + gridDim.y >= m && partials != nullptr) gemv_allow_combine();
    dot = block_reduce<kGemvBlock>(dot, Sum{});
    // thread 0 holds this block's part of row `row`
    if (splits == 1) {
      if (threadIdx.x == 0) y[row] = axpby(alpha, dot, beta, y + row);
    } else if (partials != nullptr) {
      if (threadIdx.x == 0) partials[split * m + row] = dot;
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      __shared__ float part;
      if (threadIdx.x == 0) part = dot;
      cluster_sync();  // every rank's part is visible cluster-wide
      if (split == 0 && threadIdx.x == 0) {
        float sum = 0.f;
        for (int q = 0; q < splits; ++q)
          sum += *cluster_map(&part, q);
        y[row] = axpby(alpha, sum, beta, y + row);
      }
      cluster_sync();  // rank 0 is done reading before `part` is rewritten or freed
#endif
      // (below sm_90 the plan never launches a cluster: DeviceInfo::clusters())
    }
  }
}

// BlasOp::N, many long aligned rows (a block per row would fill the device more than twice):
// a block per pair of rows r, r + 1 (r = 2 * blockIdx.y, grid-stride by 2 * gridDim.y). Each
// thread loads 16-byte packs p, p + 256, ... (Unroll of them) of both rows and the Unroll
// packs of x they share: 2 * Unroll loads of A in flight (the block-per-row kernel: 2), one
// round trip per Unroll x 256 packs of a pair. Unroll 2: 48 registers on sm_90 (5/8 of the
// SM's threads: 80 KiB of A in flight an SM); Unroll 4: 80 registers, 3/8 of the SM's
// threads (96 KiB; rows of 4096 floats are one trip). A, lda and x are
// 16-byte aligned; n < 2^33 (int pack indices). An odd last row is summed as a pair with
// itself, written once.
template <int Unroll>
__global__ void __launch_bounds__(kGemvBlock,
                                  gemv_pairs_blocks(min_blocks_per_sm(kGemvBlock), Unroll))
    gemv_n_row_pairs_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A,
                            int64_t lda, const float* __restrict__ x, float beta,
                            float* __restrict__ y) {
  static_assert(Unroll == 2 || Unroll == 4, "the plan's two forms");
  using F4 = Pack<float, kGemvPack>;
  const int packs = static_cast<int>(n / kGemvPack);  // plan: n < 2^33
  const int tail = packs * kGemvPack;
  const int t = static_cast<int>(threadIdx.x);
  const F4* xp = reinterpret_cast<const F4*>(x);
  for (int64_t r = 2 * int64_t{blockIdx.y}; r < m; r += 2 * int64_t{gridDim.y}) {
    const float* a0 = A + r * lda;
    const float* a1 = r + 1 < m ? a0 + lda : a0;
    const F4* p0 = reinterpret_cast<const F4*>(a0);
    const F4* p1 = reinterpret_cast<const F4*>(a1);
    float acc0[Unroll] = {}, acc1[Unroll] = {};
    int p = t;
#pragma unroll 1
    for (; p + (Unroll - 1) * kGemvBlock < packs; p += Unroll * kGemvBlock) {
      F4 v0[Unroll], v1[Unroll], xv[Unroll];
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        v0[u] = p0[p + u * kGemvBlock];
        v1[u] = p1[p + u * kGemvBlock];
        xv[u] = xp[p + u * kGemvBlock];
      }
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
#pragma unroll
        for (int k = 0; k < kGemvPack; ++k) {
          acc0[u] = fmaf(v0[u].elem[k], xv[u].elem[k], acc0[u]);
          acc1[u] = fmaf(v1[u].elem[k], xv[u].elem[k], acc1[u]);
        }
      }
    }
    // the last packs (fewer than Unroll a thread)
#pragma unroll 1
    for (; p < packs; p += kGemvBlock) {
      const F4 v0 = p0[p], v1 = p1[p], xv = xp[p];
#pragma unroll
      for (int k = 0; k < kGemvPack; ++k) {
        acc0[0] = fmaf(v0.elem[k], xv.elem[k], acc0[0]);
        acc1[0] = fmaf(v1.elem[k], xv.elem[k], acc1[0]);
      }
    }
    float d0 = 0.f, d1 = 0.f;
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      d0 += acc0[u];
      d1 += acc1[u];
    }
    if (t < static_cast<int>(n) - tail) {
      d0 = fmaf(a0[tail + t], x[tail + t], d0);
      d1 = fmaf(a1[tail + t], x[tail + t], d1);
    }
    d0 = block_reduce<kGemvBlock>(d0, Sum{});
    d1 = block_reduce<kGemvBlock>(d1, Sum{});
    // thread 0 holds the dot products of rows r and r + 1
    if (t == 0) {
      y[r] = axpby(alpha, d0, beta, y + r);
      if (r + 1 < m) y[r + 1] = axpby(alpha, d1, beta, y + r + 1);
    }
  }
}

// BlasOp::N, few long aligned rows (2 <= m, a split over the columns wanted): a block per
// group of Rows consecutive rows and a share of their columns. Block (s, g) reads the
// 16-byte packs s * 256 + t, stepping by gridDim.x * 256 (as gemv_n_split_kernel), of rows
// g * Rows .. g * Rows + Rows - 1 (those past m are not loaded), and loads each pack of x once
// for all of them: Rows loads of A and one of x in flight a thread, and Rows times fewer
// loads of x than a block per row (x comes from L2 when it does not fit L1: 3 x 8388608
// read it three times). Grid-stride over groups by gridDim.y. gridDim.x == 1: the block
// writes y; else partials[s * m + row] (gemv_combine_kernel adds them). A, lda and x are
// 16-byte aligned.
template <int Rows>
__global__ void __launch_bounds__(kGemvBlock, gemv_group_blocks(min_blocks_per_sm(kGemvBlock)))
    gemv_n_group_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                        const float* __restrict__ x, float beta, float* __restrict__ y,
                        float* __restrict__ partials) {
  static_assert(Rows >= 2 && Rows <= kGemvMaxGroupRows, "the plan's group sizes");
  using F4 = Pack<float, kGemvPack>;
  const int64_t packs = n / kGemvPack;
  const int64_t tail = packs * kGemvPack;
  const int64_t lane = int64_t{blockIdx.x} * kGemvBlock + threadIdx.x;
  const int64_t lanes = int64_t{gridDim.x} * kGemvBlock;
  const int64_t groups = ceil_div<int64_t>(m, Rows);
  const F4* xp = reinterpret_cast<const F4*>(x);
  for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
    const int64_t r0 = g * Rows;
    const int valid = m - r0 < Rows ? static_cast<int>(m - r0) : Rows;
    const float* a = A + r0 * lda;
    float acc[Rows] = {};
#pragma unroll 1
    for (int64_t p = lane; p < packs; p += lanes) {
      F4 av[Rows] = {};
#pragma unroll
      for (int i = 0; i < Rows; ++i) {
        if (i < valid) av[i] = load_pack<kGemvPack>(a + i * lda, p);
      }
      const F4 xv = xp[p];
#pragma unroll
      for (int i = 0; i < Rows; ++i) {
#pragma unroll
        for (int k = 0; k < kGemvPack; ++k)
          acc[i] = fmaf(av[i].elem[k], xv.elem[k], acc[i]);
      }
    }
    if (lane < n - tail) {
      const float xt = x[tail + lane];
#pragma unroll
      for (int i = 0; i < Rows; ++i) {
        if (i < valid) acc[i] = fmaf(a[i * lda + tail + lane], xt, acc[i]);
      }
    }
    if (g + gridDim.y >= groups && partials != nullptr) gemv_allow_combine();
#pragma unroll
    for (int i = 0; i < Rows; ++i)
      acc[i] = block_reduce<kGemvBlock>(acc[i], Sum{});
    // thread 0 holds this block's part of rows r0 .. r0 + valid - 1
    if (threadIdx.x == 0) {
#pragma unroll
      for (int i = 0; i < Rows; ++i) {
        if (i >= valid) continue;
        const int64_t row = r0 + i;
        if (gridDim.x == 1) {
          y[row] = axpby(alpha, acc[i], beta, y + row);
        } else {
          partials[blockIdx.x * m + row] = acc[i];
        }
      }
    }
  }
}

// BlasOp::N, rows of at most kGemvShortMaxCols floats (lda <= kGemvShortMaxCols): tiles of
// tile_rows whole rows (tile_rows * lda <= kGemvTileFloats) are staged in shared memory as
// one unpadded span (gemv_stage_span: 16-byte loads and stores whatever lda is), then thread r
// of the block computes row r, r + 256, ... of the tile and writes y (coalesced). The 32
// threads of a warp read rows lda floats apart: with an even lda (g = gcd(lda, 32) > 1) the
// rows r, r + 32 / g, ... would meet in one bank, so thread r starts its row at column
// (r / (32 / g)) mod n and wraps around: at most 2 addresses a bank (ld 31, 33, 35 ... and the
// even ones; the tile padded one float in 32 met 31 rows in a bank at lda = 31: 226851 x 29,
// lda 31, 0.38 of the speed of light). Grid-stride over tiles.
template <int = 0>
__global__ void __launch_bounds__(kGemvBlock, min_blocks_per_sm(kGemvBlock))
    gemv_n_short_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                        const float* __restrict__ x, float beta, float* __restrict__ y,
                        int tile_rows) {
  __shared__ __align__(16) float tile[kGemvTileFloats + kGemvPack];
  __shared__ float xs[kGemvShortMaxCols];
  const int cols = static_cast<int>(n);
  const int ld = static_cast<int>(lda);
  if (static_cast<int>(threadIdx.x) < cols) xs[threadIdx.x] = x[threadIdx.x];
  // rows r and r + (1 << rot_shift) start lda * 2^rot_shift floats apart, a multiple of 32
  const int rot_shift = 5 - ::min(__ffs(ld) - 1, 5);
  const int64_t tiles = ceil_div<int64_t>(m, tile_rows);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = t * tile_rows;
    const int rows = static_cast<int>(m - r0 < tile_rows ? m - r0 : tile_rows);
    __syncthreads();  // the previous tile is read (and xs written)
    const int phase = gemv_stage_span(tile, A + r0 * lda, (rows - 1) * ld + cols);
    __syncthreads();
    for (int r = threadIdx.x; r < rows; r += kGemvBlock) {
      const float* row = tile + phase + r * ld;
      int c = (r >> rot_shift) % cols;
      float dot = 0.f;
#pragma unroll 4
      for (int k = 0; k < cols; ++k) {
        dot = fmaf(row[c], xs[c], dot);
        c = c + 1 == cols ? 0 : c + 1;
      }
      y[r0 + r] = axpby(alpha, dot, beta, y + r0 + r);
    }
  }
}

// BlasOp::T, at most kGemvShortMaxCols columns (lda <= kGemvShortMaxCols): tiles of
// tile_rows whole rows and their x staged in shared memory unpadded (gemv_stage_spans: one
// memory round trip, 16-byte loads and stores); thread (c, g) = (t % ColLanes, t / ColLanes)
// adds rows g, g + kGroups, ... of column c (ColLanes: the power of two >= n, a template
// parameter so that x's offsets are immediates). kGroups divides tile_rows: over a whole tile
// every thread makes tile_rows / kGroups trips. A warp reads rows g .. g + 32 / ColLanes - 1
// of columns 0 .. ColLanes - 1: with lda == n, at most 32 consecutive floats (no bank
// conflict). Grid-stride over tiles; at the end the block's column sums (a fixed pairwise
// tree over the groups) go to partials[blockIdx.x * n + c].
template <int ColLanes>
__global__ void __launch_bounds__(kGemvBlock, min_blocks_per_sm(kGemvBlock))
    gemv_t_short_kernel(int64_t m, int64_t n, const float* __restrict__ A, int64_t lda,
                        const float* __restrict__ x, float* __restrict__ partials, int tile_rows) {
  static_assert(ColLanes >= 1 && ColLanes <= kGemvShortMaxCols && kGemvBlock % ColLanes == 0,
                "a power of two up to the widest short row");
  constexpr int kGroups = kGemvBlock / ColLanes;
  __shared__ __align__(16) float tile[kGemvTileFloats + kGemvPack];
  __shared__ __align__(16) float xs[kGemvShortMaxTileRows + kGemvPack];
  __shared__ float red[kGemvBlock];
  const int cols = static_cast<int>(n);
  const int ld = static_cast<int>(lda);
  const int c = static_cast<int>(threadIdx.x) % ColLanes;
  const int g = static_cast<int>(threadIdx.x) / ColLanes;
  const int full_trips = tile_rows / kGroups;
  const int a_step = kGroups * ld;
  float acc = 0.f;
  const int64_t tiles = ceil_div<int64_t>(m, tile_rows);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = t * tile_rows;
    const int rows = static_cast<int>(m - r0 < tile_rows ? m - r0 : tile_rows);
    __syncthreads();  // the previous tile is read
    int a_phase, x_phase;
    gemv_stage_spans(tile, A + r0 * lda, (rows - 1) * ld + cols, &a_phase, xs, x + r0, rows,
                     &x_phase);
    __syncthreads();
    if (c < cols) {
      const float* pa = tile + a_phase + g * ld + c;
      const float* px = xs + x_phase + g;
      if (rows == tile_rows) {
#pragma unroll 4
        for (int k = 0; k < full_trips; ++k, pa += a_step)
          acc = fmaf(*pa, px[k * kGroups], acc);
      } else {
        // the last, partial tile (no trip count: no division)
        for (int r = g; r < rows; r += kGroups, pa += a_step, px += kGroups)
          acc = fmaf(*pa, *px, acc);
      }
    }
  }
  gemv_allow_combine();
  red[threadIdx.x] = acc;
  // red[g * ColLanes + c]: group g's sum of column c; pairwise tree over the groups
#pragma unroll
  for (int half = kGroups / 2; half > 0; half /= 2) {
    __syncthreads();
    if (g < half) red[threadIdx.x] += red[threadIdx.x + half * ColLanes];
  }
  if (static_cast<int>(threadIdx.x) < cols)
    partials[blockIdx.x * n + threadIdx.x] = red[threadIdx.x];
}

// One trip of gemv_t_kernel's packed loop in two steps, every load issued before the first
// FMA: gemv_t_load reads this thread's pack (columns c0 ..) of rows i + u * step, u < Unroll,
// and their x (Predicated: rows at or past m are not read, their av[u], xv[u] keep the
// caller's zeros); gemv_t_fma adds them into acc row by row. The caller declares av and xv
// (declared inside one helper, they changed the sm_90 code). FloatPack: kernelkit::Pack under
// a name that the template parameter Pack does not hide (cudafe's host declarations need it).
template <int N>
using FloatPack = Pack<float, N>;
template <int Pack, int Unroll, bool Predicated>
__device__ __forceinline__ void gemv_t_load(const float* __restrict__ A, int64_t lda,
                                            const float* __restrict__ x, int64_t i, int64_t step,
                                            int64_t m, int64_t c0, FloatPack<Pack> (&av)[Unroll],
                                            float (&xv)[Unroll]) {
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    if (!Predicated || i + u * step < m) {
      av[u] = load_pack<Pack>(A + (i + u * step) * lda + c0, 0);
      xv[u] = x[i + u * step];
    }
  }
}
template <int Pack, int Unroll>
__device__ __forceinline__ void gemv_t_fma(const FloatPack<Pack> (&av)[Unroll],
                                           const float (&xv)[Unroll], float (&acc)[Pack]) {
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      acc[k] = fmaf(av[u].elem[k], xv[u], acc[k]);
  }
}

// One trip of gemv_t_kernel's strided loop: the Cols scalar loads of each of the rows
// i + u * step, u < Unroll, at row + cbase + off[k] (the thread's columns, clamped into the
// matrix), and their x, all issued before the FMAs (Predicated as gemv_t_load).
template <int Cols, int Unroll, bool Predicated>
__device__ __forceinline__ void gemv_t_strided_trip(const float* __restrict__ A, int64_t lda,
                                                    const float* __restrict__ x, int64_t i,
                                                    int64_t step, int64_t m, int64_t cbase,
                                                    const int (&off)[Cols], float (&acc)[Cols]) {
  float av[Unroll][Cols] = {};
  float xv[Unroll] = {};
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    if (!Predicated || i + u * step < m) {
      const float* row = A + (i + u * step) * lda + cbase;
#pragma unroll
      for (int k = 0; k < Cols; ++k)
        av[u][k] = row[off[k]];
      xv[u] = x[i + u * step];
    }
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
#pragma unroll
    for (int k = 0; k < Cols; ++k)
      acc[k] = fmaf(av[u][k], xv[u], acc[k]);
  }
}

// Column of element k of thread tx's Pack columns, from its block's first column: Strided,
// k * TX + tx (a warp reads consecutive floats of a row); else tx * Pack + k (a 16-byte pack).
template <int Pack, int TX, bool Strided>
__device__ __forceinline__ int gemv_t_col(int tx, int k) {
  return Strided ? k * TX + tx : tx * Pack + k;
}

// BlasOp::T: y[j] = alpha * sum_i A[i][j] x[i] + beta * y[j]. Block (TX x TY threads,
// tx = t % TX) owns kCols = TX * Pack columns from col0; thread (tx, ty) owns Pack of them
// (gemv_t_col) and adds rows i = split * TY + ty + k * step (step = splits * TY: the
// gridDim.y = splits blocks of a column tile share its rows), Unroll rows' loads in flight
// before their FMAs. Packed (!Strided): 16-byte loads of the thread's pack; every row starts
// a_offset floats past a 16-byte boundary (the plan takes this form only for lda % 4 == 0),
// so the tiles start a_offset columns before a boundary (the first and last packs of a row
// may be partial: scalar loads). Strided: scalar loads of columns k * TX + tx, whatever the
// rows' alignment (TX >= 32: a warp reads 128 consecutive bytes of a row a load); a column
// past n is read as column n - 1 and never written. Combine: over ty in shared memory in a
// fixed order (TY > 1); then gridDim.y == 1: write y; partials: partials[split * n + j]; else
// a cluster of the gridDim.y blocks (sm_90+) adds its ranks' sums in rank order through
// distributed shared memory.
template <int Pack, int TX, int TY, int Unroll, bool Strided>
__global__ void __launch_bounds__(TX* TY, gemv_t_min_blocks(TX* TY, TY, Unroll, Strided))
    gemv_t_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                  const float* __restrict__ x, float beta, float* __restrict__ y,
                  float* __restrict__ partials, int a_offset) {
  constexpr int kThreads = TX * TY;
  constexpr int kCols = TX * Pack;
  static_assert(kThreads % kWarpSize == 0 && kThreads <= 1024, "whole warps, at most 1024");
  static_assert(TY == 1 || (kThreads % kCols == 0 && TY % Pack == 0),
                "the combine gives every column the same number of threads");
  static_assert(!Strided || TX % kWarpSize == 0, "strided: whole warps across a row");
  using APack = kernelkit::Pack<float, Pack>;
  const int tx = threadIdx.x % TX;
  const int ty = threadIdx.x / TX;
  const int split = blockIdx.y;
  const int shift = Strided || Pack == 1 ? 0 : a_offset;
  const int64_t col0 = blockIdx.x * int64_t{kCols} - shift;  // the block's first column
  const int64_t c0 = col0 + int64_t{tx} * Pack;              // packed: this thread's first
  const int splits = gridDim.y;
  const int64_t step = int64_t{splits} * TY;
  int64_t i = int64_t{split} * TY + ty;

  float acc[Pack] = {};
  if constexpr (Strided) {
    // the thread's columns as offsets from its first one, clamped into the matrix
    const int64_t cbase = col0 + tx < n ? col0 + tx : n - 1;
    int off[Pack];
#pragma unroll
    for (int k = 0; k < Pack; ++k) {
      const int64_t j = col0 + gemv_t_col<Pack, TX, true>(tx, k);
      off[k] = static_cast<int>((j < n ? j : n - 1) - cbase);
    }
    for (; i + (Unroll - 1) * step < m; i += Unroll * step)
      gemv_t_strided_trip<Pack, Unroll, false>(A, lda, x, i, step, m, cbase, off, acc);
    // the last rows (fewer than Unroll a thread): one predicated trip, all loads at once
    if (i < m) gemv_t_strided_trip<Pack, Unroll, true>(A, lda, x, i, step, m, cbase, off, acc);
  } else if (c0 >= 0 && c0 + Pack <= n) {
    // a whole, aligned pack in every row
    if constexpr (TY == 1) {
      // few rows (m <= 64): every trip predicated, so that even a short one issues all of
      // its loads before its FMAs
      for (; i < m; i += Unroll * step) {
        APack av[Unroll] = {};
        float xv[Unroll] = {};
        gemv_t_load<Pack, Unroll, true>(A, lda, x, i, step, m, c0, av, xv);
        // gemv_t_fma written out: called here, it changed this kernel's code on sm_75..sm_89
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
#pragma unroll
          for (int k = 0; k < Pack; ++k)
            acc[k] = fmaf(av[u].elem[k], xv[u], acc[k]);
        }
      }
    } else {
      for (; i + (Unroll - 1) * step < m; i += Unroll * step) {
        APack av[Unroll];
        float xv[Unroll];
        gemv_t_load<Pack, Unroll, false>(A, lda, x, i, step, m, c0, av, xv);
        gemv_t_fma(av, xv, acc);
      }
      if constexpr (Unroll > kGemvColUnroll) {
        // the wide kernels (64 registers): the last rows (fewer than Unroll a thread) in one
        // predicated trip, all of their loads at once (151936 x 4096: 3 rows a thread, which
        // took 3 round trips of one 16-byte load, 1/8 of the bytes in flight, at the end)
        if (i < m) {
          APack av[Unroll] = {};
          float xv[Unroll] = {};
          gemv_t_load<Pack, Unroll, true>(A, lda, x, i, step, m, c0, av, xv);
          gemv_t_fma(av, xv, acc);
        }
      } else {
        for (; i < m; i += step) {
          const APack av = load_pack<Pack>(A + i * lda + c0, 0);
          const float xi = x[i];
#pragma unroll
          for (int k = 0; k < Pack; ++k)
            acc[k] = fmaf(av.elem[k], xi, acc[k]);
        }
      }
    }
  } else if (c0 + Pack > 0 && c0 < n) {
    // a pack cut by the matrix's first or last column: the columns inside, one by one
    for (; i < m; i += step) {
      const float xi = x[i];
#pragma unroll
      for (int k = 0; k < Pack; ++k) {
        const int64_t j = c0 + k;
        if (j >= 0 && j < n) acc[k] = fmaf(A[i * lda + j], xi, acc[k]);
      }
    }
  }
  if (partials != nullptr) gemv_allow_combine();

  if constexpr (TY == 1) {
    // each thread owns its columns over the block's rows
    if (gridDim.y == 1 && !Strided && Pack > 1 && c0 >= 0 && c0 + Pack <= n &&
        reinterpret_cast<std::uintptr_t>(y + c0) % sizeof(APack) == 0) {
      APack sum;
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        sum.elem[k] = acc[k];
      store_pack<Pack>(y + c0, 0, axpby(alpha, sum, beta, y + c0));
    } else if (gridDim.y == 1 || partials != nullptr) {
#pragma unroll
      for (int k = 0; k < Pack; ++k) {
        const int64_t j = col0 + gemv_t_col<Pack, TX, Strided>(tx, k);
        if (j < 0 || j >= n) continue;
        if (gridDim.y == 1) {
          y[j] = axpby(alpha, acc[k], beta, y + j);
        } else {
          partials[split * n + j] = acc[k];
        }
      }
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      __shared__ float sums[kCols];  // this block's column sums over its rows
#pragma unroll
      for (int k = 0; k < Pack; ++k)
        sums[gemv_t_col<Pack, TX, Strided>(tx, k)] = acc[k];
      cluster_sync();  // every rank's column sums are visible cluster-wide
      if (split == 0) {
#pragma unroll
        for (int k = 0; k < Pack; ++k) {
          const int c = gemv_t_col<Pack, TX, Strided>(tx, k);
          const int64_t j = col0 + c;
          if (j < 0 || j >= n) continue;
          float sum = 0.f;
          for (int q = 0; q < static_cast<int>(gridDim.y); ++q)
            sum += cluster_map(sums, q)[c];
          y[j] = axpby(alpha, sum, beta, y + j);
        }
      }
      cluster_sync();  // rank 0 is done reading before any block of the cluster exits
#endif
      // (below sm_90 the plan never launches a cluster: DeviceInfo::clusters())
    }
  } else {
    constexpr int kGroups = kThreads / kCols;  // threads per column in the first combine step
    __shared__ float red[TY][kCols];           // red[ty][c]: thread (tx, ty)'s sum of column c
    __shared__ float part[kGroups][kCols];     // part[g][c]: rows g, g + kGroups, ... of red
    __shared__ float sums[kCols];              // this block's column sums
#pragma unroll
    for (int k = 0; k < Pack; ++k)
      red[ty][gemv_t_col<Pack, TX, Strided>(tx, k)] = acc[k];
    __syncthreads();
    {
      const int c = threadIdx.x % kCols;
      const int g = threadIdx.x / kCols;
      float sum = 0.f;
#pragma unroll
      for (int r = 0; r < Pack; ++r)
        sum += red[g + r * kGroups][c];
      part[g][c] = sum;
    }
    __syncthreads();
    const int64_t j = col0 + threadIdx.x;  // for threads < kCols: column col0 + t
    const bool valid = static_cast<int>(threadIdx.x) < kCols && j >= 0 && j < n;
    if (static_cast<int>(threadIdx.x) < kCols) {
      float sum = 0.f;
#pragma unroll 8
      for (int g = 0; g < kGroups; ++g)
        sum += part[g][threadIdx.x];
      sums[threadIdx.x] = sum;  // the block's sum of column j over its rows
    }
    if (gridDim.y == 1) {
      if (valid) y[j] = axpby(alpha, sums[threadIdx.x], beta, y + j);
    } else if (partials != nullptr) {
      if (valid) partials[split * n + j] = sums[threadIdx.x];
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      cluster_sync();  // every rank's column sums are visible cluster-wide
      if (split == 0 && valid) {
        float sum = 0.f;
        for (int q = 0; q < static_cast<int>(gridDim.y); ++q)
          sum += cluster_map(sums, q)[threadIdx.x];
        y[j] = axpby(alpha, sum, beta, y + j);
      }
      cluster_sync();  // rank 0 is done reading before any block of the cluster exits
#endif
      // (below sm_90 the plan never launches a cluster: DeviceInfo::clusters())
    }
  }
}

// The second kernel of a workspace split: y[k] = alpha * sum_{z < parts} partials[z * count
// + k] + beta * y[k], the partial rows added in a fixed order. Cols outputs per block: 1 (the
// block's threads take z = t, t + 256, ..., then a block reduction) or 32 (8 threads per
// output take z = g, g + 8, ..., then one adds the 8 in order). A programmatic dependent
// launch on sm_90+: it waits for the split kernel's grid before reading anything.
template <int Cols>
__global__ void __launch_bounds__(kGemvBlock)
    gemv_combine_kernel(int64_t count, int parts, const float* __restrict__ partials, float alpha,
                        float beta, float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();  // the split kernel's partials are written and visible
#endif
  if constexpr (Cols == 1) {
    for (int64_t k = blockIdx.x; k < count; k += gridDim.x) {
      float sum = 0.f;
#pragma unroll 4
      for (int z = threadIdx.x; z < parts; z += kGemvBlock)
        sum += partials[z * count + k];
      sum = block_reduce<kGemvBlock>(sum, Sum{});
      if (threadIdx.x == 0) y[k] = axpby(alpha, sum, beta, y + k);
    }
  } else {
    static_assert(kGemvBlock % Cols == 0, "whole groups of Cols threads");
    constexpr int kGroups = kGemvBlock / Cols;
    __shared__ float red[kGroups][Cols];
    const int c = threadIdx.x % Cols;
    const int g = threadIdx.x / Cols;
    for (int64_t k0 = blockIdx.x * int64_t{Cols}; k0 < count; k0 += int64_t{gridDim.x} * Cols) {
      const int64_t k = k0 + c;
      float sum = 0.f;
      if (k < count) {
        // (many parts: 16 loads of a thread in flight at once)
#pragma unroll 16
        for (int z = g; z < parts; z += kGroups)
          sum += partials[z * count + k];
      }
      __syncthreads();  // the previous outputs' sums are read
      red[g][c] = sum;
      __syncthreads();
      if (g == 0 && k < count) {
        float total = 0.f;
#pragma unroll
        for (int q = 0; q < kGroups; ++q)
          total += red[q][c];
        y[k] = axpby(alpha, total, beta, y + k);
      }
    }
  }
}

}  // namespace kernelkit::detail
