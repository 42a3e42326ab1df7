// SPDX-License-Identifier: Apache-2.0
// Kernels of the row-wise reduction's short and mid-length rows (long rows use
// reduce_split_kernel of reduce_kernels.cuh: a block, a cluster or `split` blocks per row).
//
// Shapes: `in` is rows x cols, row-major, rows start at in + r * ld (ld >= cols; the short
// kernel only ld == cols); only the base pointer's alignment to sizeof(T) is assumed. Accumulation
// is in C = compute_t<Acc>. The order of the operations depends only on (in's alignment, rows,
// cols) and the launch shape the plan chose for them, so the same call gives the same bits every
// run.
//   row_reduce_short_kernel: rows of up to 128 bytes: the matrix as one flat array of 16-byte
//     packs, a tile of them staged in shared memory, a thread per row (a pack spans rows).
//   row_reduce_flat_kernel: rows of whole packs (<= 32) that all start aligned: Width lanes
//     per row, one pack per lane.
//   row_reduce_group_kernel: everything else up to 512 packs: Width lanes per row (1..32),
//     each row read as [scalar head | packs | scalar tail].
//   row_reduce_block_once_kernel: a block per row of <= 1024 packs, each thread's packs of
//     the row loaded in one batch, 5 blocks an SM.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/reduce/detail/reduce_kernels.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::detail {

inline constexpr int kRowBlock = 256;  // threads per block of every row kernel here

// ---- short rows (up to 128 bytes) --------------------------------------------------------

// Longest row of the short kernel, bytes: 8 packs, so that a tile (kRowBlock x 8 packs) holds
// at least a row per thread.
inline constexpr int kRowShortMaxBytes = 128;
// Packs each thread loads per tile (all issued before the first reduction): a tile is
// kRowBlock x 8 packs = 32 KB of input.
inline constexpr int kRowShortPacks = 8;
inline constexpr int kRowShortTilePacks = kRowBlock * kRowShortPacks;
// Resident blocks per SM the short kernel is built for: 4 x 256 threads leave 64 registers
// for 4-byte inputs and sums (8 packs in flight take 32; at 48 ptxas spills), 3 leave 85 for
// 2- and 8-byte inputs or 8-byte sums (which spill at 64 on some architectures: 8-element
// packs, register pairs). 4 x 34 KB of shared memory fit every sm_80+ SM, and 3-4 x 256 x 8
// x 16 B = 96-128 KB of loads are in flight per SM.
constexpr int row_short_min_blocks(int in_bytes, int acc_bytes) {
  return in_bytes == 4 && acc_bytes == 4 ? 4 : 3;
}
template <typename T, typename C>
inline constexpr int kRowShortMinBlocks = row_short_min_blocks(sizeof(T), sizeof(C));
// Rows of at most this many columns take the short kernel whatever the matrix's size.
inline constexpr int kRowShortAlwaysCols = 8;
// Packs past a tile that a row starting inside it may reach (a row of 128 bytes starting at
// the tile's last element ends 127 bytes on): 8.
inline constexpr int kRowShortHalo = kRowShortMaxBytes / 16;
inline constexpr int kRowShortStagePacks = kRowShortTilePacks + kRowShortHalo;
// Whether the stage is padded: one spare 4-byte word after every 128 bytes, so that the
// threads of a warp, reading one element each of rows cols elements apart, hit distinct
// banks (a row of whole 16-byte packs is a multiple of 4 words: without the spare word, 4 to
// 32 of a warp's rows would start in the same bank). Rows of other lengths read conflict-free
// (at most two words a bank) unpadded; 8-byte elements are never padded (their loads need
// 8-byte alignment), and take up to 16-way conflicts for 4..16 columns.
template <typename T>
__host__ __device__ constexpr bool row_short_padded(int cols) {
  return sizeof(T) <= 4 && (cols * static_cast<int>(sizeof(T))) % 16 == 0;
}
// Blocks of the short kernel an SM holds on d: its register budget, within d's threads and
// shared memory.
inline int row_short_blocks(const DeviceInfo& d, int in_bytes, int acc_bytes) {
  const int64_t smem = int64_t{kRowShortStagePacks} * 16 + 4 * (kRowShortStagePacks / 8 + 1);
  return std::max(
      1, std::min(blocks_per_sm(d, kRowBlock, 0, smem), row_short_min_blocks(in_bytes, acc_bytes)));
}
// Byte of stage element i (padded: the spare words before it).
template <typename T>
__device__ __forceinline__ int row_short_at(int i, bool padded) {
  const int b = i * static_cast<int>(sizeof(T));
  return padded ? b + 4 * (b >> 7) : b;
}

// Rows of at most kRowShortMaxBytes (any alignment; ld == cols): the matrix is one flat array
// of n = rows * cols elements, read as the 16-byte packs of base = in - shift (the aligned
// address at or below in; matrix element e is base[e + shift]). Tile k is base packs
// g0 = k * kRowShortTilePacks, ... plus a halo of kRowShortHalo packs (rows that start in
// the tile may end past it); thread t loads packs g0 + t, g0 + t + kRowBlock, ... (8 loads
// in flight, coalesced) into shared memory (padded: row_short_padded), and after a barrier
// reduces the rows that start inside the tile: rows row_begin + t, row_begin + t + kRowBlock,
// ..., each from its cols elements in shared memory (consecutive threads, consecutive rows),
// writing out coalesced.
// Only whole packs inside the matrix are loaded: indices past them are clamped to the last
// one (a duplicate no row reads), and the two packs the matrix covers only in part (its
// first when shift > 0, its last when n + shift is not a multiple of Pack) are completed
// element by element after a barrier, in the (first, last) tiles that hold them.
template <int Pack, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kRowBlock,
                                  min_blocks_per_sm(kRowBlock,
                                                    kRowShortMinBlocks<T, compute_t<Acc>>))
    row_reduce_short_kernel(const T* __restrict__ in, int64_t rows, int cols, Acc* __restrict__ out,
                            Acc init) {
  using C = compute_t<Acc>;
  constexpr int64_t kTileElems = int64_t{kRowShortTilePacks} * Pack;
  static_assert(kRowShortHalo <= kRowBlock, "the halo is loaded by the first threads");
  // the stage, with room for the spare words of the padded layout
  __shared__ uint32_t stage_words[kRowShortStagePacks * 4 + kRowShortStagePacks / 8 + 1];
  unsigned char* const stage = reinterpret_cast<unsigned char*>(stage_words);
  const bool padded = row_short_padded<T>(cols);
  // pack j of the stage: 16 bytes at row_short_at(j Pack), one store, or four word stores
  // around the spare words
  const auto put = [&](int j, const kernelkit::Pack<T, Pack>& v) {
    if (padded) {
      uint32_t w[4];
      memcpy(w, &v, 16);
      uint32_t* dst = stage_words + 4 * j + j / 8;
#pragma unroll
      for (int q = 0; q < 4; ++q)
        dst[q] = w[q];
    } else {
      *reinterpret_cast<kernelkit::Pack<T, Pack>*>(stage + 16 * j) = v;
    }
  };
  const Op op;
  const int shift = static_cast<int>((reinterpret_cast<std::uintptr_t>(in) / sizeof(T)) % Pack);
  const T* __restrict__ base = in - shift;  // aligned to a whole pack
  const int64_t n = rows * cols;
  const int64_t tiles = ceil_div<int64_t>(n + shift, kTileElems);
  // whole packs inside the matrix: [g_lo, g_hi); the partial ones: 0 (if shift > 0) and
  // g_hi (if n + shift is not a multiple of Pack)
  const int64_t g_lo = shift > 0 ? 1 : 0;
  const int64_t g_hi = (n + shift) / Pack;
  const int64_t g_last = g_hi > g_lo ? g_hi - 1 : -1;  // -1: no whole pack at all
  const bool tail_pack = (n + shift) % Pack != 0;
  for (int64_t k = blockIdx.x; k < tiles; k += gridDim.x) {
    const int64_t g0 = k * kRowShortTilePacks;
    const int64_t lo = g0 * Pack - shift;  // matrix index of stage element 0
    kernelkit::Pack<T, Pack> v[kRowShortPacks];
    kernelkit::Pack<T, Pack> halo;
    if (g_last >= 0) {
#pragma unroll
      for (int q = 0; q < kRowShortPacks; ++q) {
        const int64_t g = g0 + q * kRowBlock + threadIdx.x;
        v[q] = load_pack<Pack>(base, g < g_lo ? g_lo : (g > g_last ? g_last : g));
      }
      if (threadIdx.x < kRowShortHalo) {
        const int64_t g = g0 + kRowShortTilePacks + threadIdx.x;
        halo = load_pack<Pack>(base, g > g_last ? g_last : g);
      }
    }
    __syncthreads();  // the previous tile's rows have been read from shared memory
#pragma unroll
    for (int q = 0; q < kRowShortPacks; ++q)
      put(q * kRowBlock + threadIdx.x, v[q]);
    if (threadIdx.x < kRowShortHalo) put(kRowShortTilePacks + threadIdx.x, halo);
    // the partial packs in this stage (the same for the whole block): after the stores
    // above, their elements inside the matrix one by one
    const bool head_here = shift > 0 && k == 0;
    const bool tail_here = tail_pack && g_hi >= g0 && g_hi < g0 + kRowShortStagePacks;
    if (head_here || tail_here) {
      __syncthreads();
      if (threadIdx.x < 2 * Pack) {
        // (when the matrix is within one pack, head and tail are the same pack: once)
        const bool tail_once = tail_here && !(head_here && g_hi == 0);
        const int64_t g = threadIdx.x < Pack ? (head_here ? 0 : -1) : (tail_once ? g_hi : -1);
        const int j = static_cast<int>(threadIdx.x % Pack);
        const int64_t e = g * Pack + j - shift;  // matrix index
        if (g >= 0 && e >= 0 && e < n)
          *reinterpret_cast<T*>(
              stage + row_short_at<T>(static_cast<int>((g - g0) * Pack + j), padded)) = in[e];
      }
    }
    __syncthreads();
    // rows whose first element (matrix index r * cols) lies in [lo, lo + kTileElems)
    const int64_t row_begin = lo <= 0 ? 0 : ceil_div<int64_t>(lo, cols);
    const int64_t ends = ceil_div<int64_t>(lo + kTileElems, cols);
    const int64_t row_end = ends < rows ? ends : rows;
    for (int64_t r = row_begin + threadIdx.x; r < row_end; r += kRowBlock) {
      const int i0 = static_cast<int>(r * cols - lo);  // stage element of the row's first
      C acc = identity<Op, C>();
      if (padded) {
        for (int c = 0; c < cols; ++c)
          acc = op(acc,
                   convert<C>(*reinterpret_cast<const T*>(stage + row_short_at<T>(i0 + c, true))));
      } else {
        const T* x = reinterpret_cast<const T*>(stage) + i0;
#pragma unroll 4
        for (int c = 0; c < cols; ++c)
          acc = op(acc, convert<C>(x[c]));
      }
      out[r] = convert<Acc>(op(convert<C>(init), acc));
    }
  }
}

// ---- rows of whole aligned packs (flat) ---------------------------------------------------

// Steps (rows per group) a flat-kernel thread loads before reducing any: 4 16-byte loads in
// flight per thread.
inline constexpr int kRowFlatSteps = 4;

// For short rows that all start on a pack boundary (base pointer aligned to Pack elements,
// cols and ld multiples of Pack) and hold k <= Width packs, Width the next power of two of k,
// row r starting at pack r * ldk (ldk = ld / Pack >= k; ldk == k: rows * k consecutive packs). A
// group of Width lanes owns a row, lane l reading pack l of it (lanes >= k read nothing). A block
// covers kRowBlock / Width consecutive rows per step and kRowFlatSteps steps per tile; every thread
// issues its loads before reducing any. With k == Width, each step of a warp reads 32 / Width whole
// consecutive rows: 512 contiguous bytes per load instruction.
template <int Width, int Pack, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kRowBlock)
    row_reduce_flat_kernel(const T* __restrict__ in, int64_t rows, int k, int64_t ldk,
                           Acc* __restrict__ out, Acc init) {
  KERNELKIT_CHECK_WIDTH(Width);
  using C = compute_t<Acc>;
  const Op op;
  constexpr int kSteps = kRowFlatSteps;
  constexpr int kStepRows = kRowBlock / Width;
  constexpr int kTileRows = kStepRows * kSteps;
  const int lane = threadIdx.x % Width;
  const int64_t tiles = ceil_div<int64_t>(rows, kTileRows);
  const int64_t last = (rows - 1) * ldk + k - 1;  // the matrix's last pack
  // The tile loop is uniform over the block, so every lane reaches the full-mask shuffles.
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    // row of step s: first + s * kStepRows
    const int64_t first = tile * kTileRows + threadIdx.x / Width;
    // Unpredicated loads, so that all kSteps issue before the first reduction: a lane past
    // its row's packs, or in a row past the end, reads pack min(index, last) instead (a
    // pack of the matrix, fetched by a neighbour lane anyway); e[s] below drops it.
    const int64_t at = first * ldk + (lane < k ? lane : k - 1);
    kernelkit::Pack<T, Pack> v[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int64_t i = at + int64_t{s} * kStepRows * ldk;
      v[s] = load_pack<Pack>(in, i < last ? i : last);
    }
    // each step's pack as a fixed pairwise tree; e[s] is the identity where unused
    C e[kSteps];
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      C x[Pack];
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        x[j] = convert<C>(v[s].elem[j]);
#pragma unroll
      for (int h = Pack / 2; h > 0; h /= 2) {
#pragma unroll
        for (int j = 0; j < h; ++j)
          x[j] = op(x[j], x[j + h]);
      }
      e[s] = lane < k && first + s * kStepRows < rows ? x[0] : identity<Op, C>();
    }
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      C acc = e[s];
      acc = warp_reduce<Width>(acc, op);
      // lane 0 of the group holds the row's reduction
      const int64_t r = first + s * kStepRows;
      if (lane == 0 && r < rows) out[r] = convert<Acc>(op(convert<C>(init), acc));
    }
  }
}

// ---- groups of lanes per row (misaligned short rows, and a warp per row) ------------------

// Resident 256-thread blocks per SM the group kernel is compiled for (__launch_bounds__
// minimum). ptxas left alone aims at 32 registers and spills; 4 blocks leave 64 registers
// (the warp-per-row kernel needs 56-64), 3 leave 80 for 8-byte types (64-bit values take
// register pairs). Narrow groups hold 2 rows x 2 packs of loads in flight and get one block
// less (48 KB of loads in flight per SM is still 3x what HBM needs).
template <typename T, typename Acc>
inline constexpr int kRowMinBlocks = (sizeof(T) == 8 || sizeof(compute_t<Acc>) == 8) ? 3 : 4;
template <typename T, typename Acc, int Width>
inline constexpr int kRowGroupMinBlocks =
    Width == kWarpSize ? kRowMinBlocks<T, Acc> : kRowMinBlocks<T, Acc> - 1;

// Packs per lane a narrow group (Width < 32) covers a row with; the plan's group width is
// the next power of two of packs / kRowPrePacks.
inline constexpr int kRowPrePacks = 2;
// Rows a narrow group takes per iteration (loads of all of them issued before reducing).
inline constexpr int kRowGroupRows = 2;
// Packs in flight per lane inside a row of the warp-per-row kernel.
inline constexpr int kRowWarpUnroll = 4;

// kPre packs the caller has already loaded: pre.p[q] is pack lane + q * lanes of the row
// (loaded only where that index is below the row's pack count).
template <typename T, int Pack, int kPre>
struct PrePacks {
  kernelkit::Pack<T, Pack> p[kPre > 0 ? kPre : 1];
};

// One thread's share of a row: lane `lane` of `lanes` threads reads the head scalars lane,
// lane + lanes, ..., packs lane, lane + lanes, ... and tail scalars the same way. Returns
// the thread's partial in C (the identity when it read nothing). kUnroll packs are loaded
// before any is combined.
template <int Pack, int kUnroll, int kPre = 0, typename C, typename T, typename Op>
__device__ __forceinline__ C row_partial(const T* row, int64_t cols, int lane, int lanes, Op op,
                                         const PrePacks<T, Pack, kPre>& pre = {}) {
  static_assert(kUnroll >= 1, "row_partial: unroll at least 1");
  const int head = static_cast<int>(pack_head<Pack>(row, cols));  // < Pack
  const int64_t packs = (cols - head) / Pack;
  const T* body = row + head;
  // acc[j] holds lane j of every pack this thread reads (Pack independent chains)
  C acc[Pack];
#pragma unroll
  for (int j = 0; j < Pack; ++j)
    acc[j] = identity<Op, C>();
  int64_t i = lane;
#pragma unroll
  for (int q = 0; q < kPre; ++q) {
    if (i < packs) {
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        acc[j] = op(acc[j], convert<C>(pre.p[q].elem[j]));
    }
    i += lanes;
  }
  if constexpr (kUnroll > 1) {
    accumulate_packs<kUnroll>(acc, body, i, packs, lanes, int64_t{kUnroll} * lanes, op);
  } else {
    // narrow groups: the plan's width leaves at most kPre packs a lane, nothing is left
#pragma unroll 1
    for (; i < packs; i += lanes) {
      const kernelkit::Pack<T, Pack> v = load_pack<Pack>(body, i);
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        acc[j] = op(acc[j], convert<C>(v.elem[j]));
    }
  }
  // head and tail: at most Pack - 1 scalars each (more than `lanes` when lanes < Pack)
  const T* tail = body + packs * Pack;
  const int tail_count = static_cast<int>(cols - head - packs * Pack);  // < Pack
#pragma unroll 1
  for (int c = lane; c < head; c += lanes) {
    acc[0] = op(acc[0], convert<C>(row[c]));
  }
#pragma unroll 1
  for (int c = lane; c < tail_count; c += lanes) {
    acc[0] = op(acc[0], convert<C>(tail[c]));
  }
  // combine the Pack chains pairwise: a fixed tree
#pragma unroll
  for (int s = Pack / 2; s > 0; s /= 2) {
#pragma unroll
    for (int j = 0; j < s; ++j)
      acc[j] = op(acc[j], acc[j + s]);
  }
  return acc[0];
}

// Each group of Width consecutive lanes (1, 2, ..., 32) reduces one row at a time,
// grid-striding over rows. A warp per row (Width 32) keeps kRowWarpUnroll packs in flight
// per lane inside the row. Narrower groups cover a row with at most kRowPrePacks packs per
// lane (the plan picks Width >= packs / kRowPrePacks), so they take kRowGroupRows rows per
// iteration and load all those packs before reducing any: 4 x 16 B in flight per thread.
template <int Width, int Pack, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kRowBlock,
                                  min_blocks_per_sm(kRowBlock, kRowGroupMinBlocks<T, Acc, Width>))
    row_reduce_group_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, int64_t ld,
                            Acc* __restrict__ out, Acc init) {
  KERNELKIT_CHECK_WIDTH(Width);
  using C = compute_t<Acc>;
  const Op op;
  constexpr int kGroups = kRowBlock / Width;
  constexpr int kUnroll = Width == kWarpSize ? kRowWarpUnroll : 1;
  constexpr int kRows = Width == kWarpSize ? 1 : kRowGroupRows;
  constexpr int kPre = Width == kWarpSize ? 0 : kRowPrePacks;
  const int lane = threadIdx.x % Width;
  const int sub = (threadIdx.x % kWarpSize) / Width;  // the group's index in its warp
  const int64_t stride = int64_t{gridDim.x} * kGroups;
  // Every lane of a warp runs the same number of iterations (rows are taken a warp's worth
  // at a time), so the full-mask shuffles below are always convergent.
  const int64_t warp_first =
      int64_t{blockIdx.x} * kGroups + (threadIdx.x / kWarpSize) * (kWarpSize / Width);
  for (int64_t base = warp_first; base < rows; base += stride * kRows) {
    // row k of this iteration: base + k * stride + sub
    PrePacks<T, Pack, kPre> pre[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t r = base + k * stride + sub;
      if (kPre > 0 && r < rows) {
        const T* row = in + r * ld;
        const int head = static_cast<int>(pack_head<Pack>(row, cols));  // < Pack
        const int64_t packs = (cols - head) / Pack;
#pragma unroll
        for (int q = 0; q < kPre; ++q) {
          if (lane + q * Width < packs) pre[k].p[q] = load_pack<Pack>(row + head, lane + q * Width);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t r = base + k * stride + sub;
      C v = identity<Op, C>();
      if (r < rows)
        v = row_partial<Pack, kUnroll, kPre, C>(in + r * ld, cols, lane, Width, op, pre[k]);
      v = warp_reduce<Width>(v, op);
      // lane 0 of the group holds the row's reduction
      if (lane == 0 && r < rows) out[r] = convert<Acc>(op(convert<C>(init), v));
    }
  }
}

// ---- a block per row, the whole row in one batch of loads --------------------------------

// Packs a thread of kBlockOnce loads per row, all issued before the first add: rows of up
// to kRowBlockOncePacks = 1024 packs (4096 floats, 8192 halves) are one batch a thread.
inline constexpr int kRowBlockOnceUnroll = 4;
inline constexpr int kRowBlockOncePacks = kRowBlock * kRowBlockOnceUnroll;
// Resident blocks per SM the kernel is built for: 5 x 256 threads (48 registers; at 40 the
// f32 max / min and i32 sum spill on sm_90 / sm_120). The split kernel it replaces on these
// rows runs 4 (64 registers for its 8 loads, of which such a row fills at most 4): 64 KB of
// loads in flight an SM there, 80 KB here.
inline constexpr int kRowBlockOnceMinBlocks = 5;

// A block per row (blocks stride over rows) for rows of at most kRowBlockOncePacks packs:
// thread t's share of the row is row_partial's with kRowBlockOnceUnroll loads (the packs t,
// t + kRowBlock, ..., all loaded before any add; longer rows in further batches) and the
// head / tail scalars t (< Pack each, so kRowBlock threads cover them), then the block tree;
// thread 0 writes out[r]. Nothing is carried between rows but the block tree's shared slots.
template <int Pack, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(kRowBlock, min_blocks_per_sm(kRowBlock, kRowBlockOnceMinBlocks))
    row_reduce_block_once_kernel(const T* __restrict__ in, int64_t rows, int64_t cols, int64_t ld,
                                 Acc* __restrict__ out, Acc init) {
  using C = compute_t<Acc>;
  const Op op;
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const C part =
        row_partial<Pack, kRowBlockOnceUnroll, 0, C>(in + r * ld, cols, t, kRowBlock, op);
    const C v = block_reduce<kRowBlock>(part, op);  // thread 0 holds the row's reduction
    if (threadIdx.x == 0) out[r] = convert<Acc>(op(convert<C>(init), v));
  }
}

}  // namespace kernelkit::detail
