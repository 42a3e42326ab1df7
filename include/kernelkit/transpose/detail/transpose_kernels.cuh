// SPDX-License-Identifier: Apache-2.0
// Transpose kernels and their device helpers. Elements are moved as unsigned integers of their
// size (bits_t: f32 and i32 share the 4-byte kernels), so these never look at values; a
// chunk (one global access) is held as 32-bit words. plan_transpose (transpose.cuh)
// picks one kernel per call:
//  - transpose_tile_kernel<U, ChunkBytes>: rows and cols multiples of the chunk's element
//    count, in and out chunk-aligned. A tile of (A kVec) x (B kVec) elements, A x B = 256 threads,
//    A and B powers of two chosen by the plan so that the tile follows the matrix (16 x 16
//    for square shapes; A kVec >= rows for a few rows, B kVec >= cols for a few columns, so
//    that the block's out rows form one contiguous run). Each thread loads kVec chunks from
//    kVec rows, and writes the kVec x kVec block it reads back from shared memory as kVec
//    chunks of out, transposed in registers.
//  - transpose_thin_rows_kernel<U, R> (2 <= R <= 8 rows) and transpose_thin_cols_kernel<U, C>
//    (2 <= C <= 8 columns): 16-byte accesses on both sides for any alignment. A thread holds
//    all R rows x kVec columns (thin rows) or kVec rows x all C columns (thin cols) in
//    registers, which is R (C) whole chunks on each side, permuted at compile time. The side
//    that is one contiguous run per block (out for thin rows, in for thin cols) goes through
//    shared memory, so that a warp's accesses are contiguous there too.
//  - transpose_gather_kernel<U, FlatOut> (detail/transpose_gather_kernels.cuh): any other shape and
//    alignment.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/pack.cuh"

namespace kernelkit::detail {

inline constexpr int kTransposeBlock = 256;  // threads of every transpose kernel

// The register budgets below (__launch_bounds__ minimum blocks) were measured on sm_90 and
// hold there and on sm_100. For the same code ptxas needs a few more registers on sm_75..sm_89
// and, for other kernels, on sm_120: a kernel that would spill there (-Xptxas -warn-spills)
// states one block fewer for those architectures, through transpose_arch_blocks.
// Minimum blocks per SM for the architecture being compiled: `hopper` on sm_90 / sm_100 (and
// the host pass), `ampere` on sm_75..sm_89, `consumer_blackwell` on sm_120 / sm_121.
constexpr int transpose_arch_blocks(int hopper, int ampere, int consumer_blackwell) {
  return kCompiledArch == 0     ? hopper
         : kCompiledArch < 90   ? ampere
         : kCompiledArch >= 120 ? consumer_blackwell
                                : hopper;
}

// ---- chunks ----------------------------------------------------------------------------------

template <int ChunkBytes>
using TransposeChunk = Pack<uint32_t, ChunkBytes / 4>;

// Element phase of p: its element index modulo Vec (a power of two).
template <typename U>
__device__ __forceinline__ int element_phase(const void* p, int vec) {
  return static_cast<int>((reinterpret_cast<uintptr_t>(p) / sizeof(U)) & (vec - 1));
}

// Elements [s, s + kVec) of the 2 kVec elements lo ++ hi (0 <= s < kVec), as one chunk: whole
// words are selected, then sub-word elements are funnel-shifted into place.
template <typename U, int W>
__device__ __forceinline__ Pack<uint32_t, W> chunk_window(const Pack<uint32_t, W>& lo,
                                                          const Pack<uint32_t, W>& hi, int s) {
  const int bytes = s * static_cast<int>(sizeof(U));
  const int ws = bytes >> 2;
  uint32_t both[2 * W];
#pragma unroll
  for (int j = 0; j < W; ++j) {
    both[j] = lo.elem[j];
    both[W + j] = hi.elem[j];
  }
  uint32_t x[W + 1];  // words ws .. ws + W of lo ++ hi
#pragma unroll
  for (int j = 0; j <= W; ++j) {
    uint32_t v = both[j];
#pragma unroll
    for (int k = 1; k < W; ++k)
      if (ws == k) v = both[j + k];
    x[j] = v;
  }
  Pack<uint32_t, W> w;
  if constexpr (sizeof(U) >= 4) {
#pragma unroll
    for (int j = 0; j < W; ++j)
      w.elem[j] = x[j];
  } else {
    const unsigned shift = static_cast<unsigned>(bytes & 3) * 8u;
#pragma unroll
    for (int j = 0; j < W; ++j)
      w.elem[j] = __funnelshift_r(x[j], x[j + 1], shift);
  }
  return w;
}

// Elements [g, g + kVec) of src that lie in [0, n), as one chunk (the others zero). g is the
// index of an aligned chunk (it may start before src or end past n: the ends of the matrix).
template <typename U, int W>
__device__ __forceinline__ Pack<uint32_t, W> load_chunk_clamped(const U* src, int64_t g,
                                                                int64_t n) {
  constexpr int kVec = 4 * W / static_cast<int>(sizeof(U));
  using Chunk = Pack<uint32_t, W>;
  if (g >= 0 && g + kVec <= n) return *reinterpret_cast<const Chunk*>(src + g);
  U e[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    e[j] = g + j >= 0 && g + j < n ? src[g + j] : U(0);
  Chunk w;
  memcpy(&w, e, sizeof(w));
  return w;
}

// Elements [g, g + valid) of src (0 < valid <= kVec, all in [0, n)) as one chunk, the rest
// zero. p: element phase of src + g. A whole window at p == 0 is one aligned load; at p > 0
// it is the window over the two aligned chunks it straddles, when both lie in [0, n);
// anything else is read element by element.
template <typename U, int W>
__device__ __forceinline__ Pack<uint32_t, W> load_window(const U* src, int64_t g, int valid, int p,
                                                         int64_t n) {
  constexpr int kVec = 4 * W / static_cast<int>(sizeof(U));
  using Chunk = Pack<uint32_t, W>;
  const int64_t base = g - p;  // the aligned chunk holding element g
  if (valid == kVec && base >= 0 && base + (p != 0 ? 2 * kVec : kVec) <= n) {
    const Chunk* c = reinterpret_cast<const Chunk*>(src + base);
    if (p == 0) return c[0];
    return chunk_window<U>(c[0], c[1], p);
  }
  U e[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    e[j] = j < valid ? src[g + j] : U(0);
  Chunk w;
  memcpy(&w, e, sizeof(w));
  return w;
}

// One global store of a chunk of W 4-byte words (16 bytes: one st.global.v4 through
// store_pack_global; a plain Pack store next to an element-wise edge path was split into 4-byte
// stores, seen in the PTX of the shifted kernel).
template <int W>
__device__ __forceinline__ void store_chunk(void* p, const Pack<uint32_t, W>& w) {
  store_pack_global<W>(static_cast<uint32_t*>(p), 0, w);
}

// Writes chunk w's first `valid` elements to dst element by element.
template <typename U, int W>
__device__ __forceinline__ void store_partial(U* dst, const Pack<uint32_t, W>& w, int valid) {
  constexpr int kVec = 4 * W / static_cast<int>(sizeof(U));
  U e[kVec];
  memcpy(e, &w, sizeof(w));
#pragma unroll
  for (int j = 0; j < kVec; ++j)
    if (j < valid) dst[j] = e[j];
}

// Tile t's tile row and tile column. Tiles are numbered along the tile rows (row order:
// tiles_minor = tiles per tile row, t / tiles_minor is the tile row) or down the tile columns
// (col_order: tiles_minor = tiles per tile column, t / tiles_minor is the tile column).
__host__ __device__ __forceinline__ void transpose_tile_at(int64_t t, int64_t tiles_minor,
                                                           bool col_order, int64_t* tr,
                                                           int64_t* tc) {
  if (col_order) {
    *tc = t / tiles_minor;
    *tr = t - *tc * tiles_minor;
  } else {  // (the form the row-order kernels were measured with)
    *tr = t / tiles_minor;
    *tc = t % tiles_minor;
  }
}

// ---- tile kernel -----------------------------------------------------------------------------

// The chunk of the tile kernel: 16 bytes; 8 for 1-byte elements (a 16-byte chunk would hold a
// 16 x 16-byte register block per thread and a 64 KiB tile).
template <typename U>
inline constexpr int kTransposeWideChunk = sizeof(U) == 1 ? 8 : 16;

template <typename U, int ChunkBytes>
struct TransposeTileGeometry {
  static constexpr int kVec = ChunkBytes / static_cast<int>(sizeof(U));  // elements per chunk
  static constexpr int kVecLog2 = kVec == 2 ? 1 : kVec == 4 ? 2 : kVec == 8 ? 3 : 4;
  static constexpr int kWords = ChunkBytes / 4;
  static constexpr int kTileChunks = kTransposeBlock * kVec;  // A kVec x B chunks, A B = 256
  static constexpr int kSmemBytes = kTileChunks * ChunkBytes;
  static_assert(ChunkBytes >= 8 && kVec >= 2, "a chunk holds at least two elements");
  using Chunk = TransposeChunk<ChunkBytes>;
};

// Column m of the kVec x kVec block held in v (v[k] = row k, kVec elements of U each), as one
// chunk: element k of the result is element m of v[k].
template <typename U, int W>
__device__ __forceinline__ Pack<uint32_t, W> transpose_block_column(const Pack<uint32_t, W>* v,
                                                                    int m) {
  Pack<uint32_t, W> w;
  if constexpr (sizeof(U) == 8) {
    // 2 x 2 block of 8-byte elements: two words each.
#pragma unroll
    for (int k = 0; k < W / 2; ++k) {
      w.elem[2 * k] = v[k].elem[2 * m];
      w.elem[2 * k + 1] = v[k].elem[2 * m + 1];
    }
  } else if constexpr (sizeof(U) == 4) {
#pragma unroll
    for (int k = 0; k < W; ++k)
      w.elem[k] = v[k].elem[m];
  } else if constexpr (sizeof(U) == 2) {
    // Word j of the result = (row 2j, row 2j+1) at column m; column m is the low (m even)
    // or high half of word m / 2.
    const uint32_t sel = (m & 1) ? 0x7632u : 0x5410u;
#pragma unroll
    for (int j = 0; j < W; ++j)
      w.elem[j] = __byte_perm(v[2 * j].elem[m / 2], v[2 * j + 1].elem[m / 2], sel);
  } else {
    static_assert(sizeof(U) == 1, "element of 1, 2, 4 or 8 bytes");
    // Word j = rows 4j .. 4j+3 at column m, which is byte m % 4 of word m / 4 of each.
    const uint32_t b = static_cast<uint32_t>(m & 3);
    const uint32_t pair = b | ((b + 4) << 4);  // bytes 0, 1 = byte b of x, byte b of y
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const uint32_t lo = __byte_perm(v[4 * j].elem[m / 4], v[4 * j + 1].elem[m / 4], pair);
      const uint32_t hi = __byte_perm(v[4 * j + 2].elem[m / 4], v[4 * j + 3].elem[m / 4], pair);
      w.elem[j] = __byte_perm(lo, hi, 0x5410u);
    }
  }
  return w;
}

// Shared-memory slot (in chunks) of chunk j of tile row r; a tile row holds B chunks. Both
// access patterns must be conflict-free: the stores (consecutive threads write consecutive
// chunks of a row) and the loads (consecutive threads a read rows kVec a + k, chunk b). XOR
// the chunk by (r / kVec) mod B: the rows kVec a + k of 8 (16) consecutive a land on 8 (16)
// distinct positions (for B >= 8; B = 4 or 2, a few columns, allows 2-way conflicts).
template <int ChunkBytes, int Vec>
__device__ __forceinline__ int transpose_tile_slot(int r, int j, int b_chunks) {
  return r * b_chunks + (j ^ ((r / Vec) & (b_chunks - 1)));
}

// Register budget of the tile kernel (blocks per SM): the registers the kernel had before its
// tile shape became a run-time choice, which the square shapes were measured with (sm_90: f32
// 40 registers, 6 blocks; f16 64, 4; 1-byte 48, 5; 8-byte 32, 8); without a cap ptxas gave the
// run-time tile shape 47 (f32) and 57 (1-byte) registers, one block per SM less. One block
// fewer where these spilled 16 bytes (f16 sm_75..89, 1-byte sm_80..89; sm_80 then takes 78
// and 64 registers) and 8 bytes (f32 sm_120).
template <typename U, int ChunkBytes>
inline constexpr int kTransposeTileMinBlocks = sizeof(U) == 8   ? 8
                                               : sizeof(U) == 4 ? transpose_arch_blocks(6, 6, 5)
                                               : sizeof(U) == 2 ? transpose_arch_blocks(4, 3, 4)
                                                                : transpose_arch_blocks(5, 4, 5);

// in: rows x cols, out: cols x rows; rows and cols multiples of kVec, in and out
// chunk-aligned (every row of both starts on a chunk boundary). Tiles of (A kVec) x (B kVec)
// elements, A = 2^a_log2, B = 256 / A, numbered as transpose_tile_at says; one block per tile,
// grid-stride past the grid.
template <typename U, int ChunkBytes, bool ColOrder>
__global__ void __launch_bounds__(kTransposeBlock,
                                  min_blocks_per_sm(kTransposeBlock,
                                                    kTransposeTileMinBlocks<U, ChunkBytes>))
    transpose_tile_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows, int64_t cols,
                          int a_log2, int64_t tiles_minor, int64_t num_tiles) {
  using G = TransposeTileGeometry<U, ChunkBytes>;
  constexpr int kVec = G::kVec, kWords = G::kWords;
  using Chunk = typename G::Chunk;
  __shared__ Chunk tile[G::kTileChunks];

  const int b_log2 = 8 - a_log2;
  const int a_blocks = 1 << a_log2, b_chunks = 1 << b_log2;
  const int tile_r = a_blocks * kVec, tile_c = b_chunks * kVec;
  const int ld_j = threadIdx.x & (b_chunks - 1);  // load: chunk in the tile row
  const int ld_r = threadIdx.x >> b_log2;         // load: first tile row (then + A each)
  const int a = threadIdx.x & (a_blocks - 1);     // read back: row block (kVec rows)
  const int b = threadIdx.x >> a_log2;            // read back: chunk column
  const int64_t rows_v = rows / kVec;             // chunks per out row
  const Chunk* in_c = reinterpret_cast<const Chunk*>(in);
  Chunk* out_c = reinterpret_cast<Chunk*>(out);

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    int64_t tr, tc;
    transpose_tile_at(t, tiles_minor, ColOrder, &tr, &tc);
    const int64_t r0 = tr * tile_r, c0 = tc * tile_c;

    // Load: thread reads chunk ld_j of tile rows ld_r + A i; a warp reads 32 consecutive
    // chunks of one tile row (B >= 32) or whole tile rows (B < 32), contiguous in memory.
    Chunk v[kVec];
    const int64_t c = c0 + ld_j * kVec;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const int64_t r = r0 + ld_r + a_blocks * i;
      if (r < rows && c < cols) v[i] = in_c[(r * cols + c) / kVec];
    }
    __syncthreads();  // the previous tile's reads of `tile` are done
#pragma unroll
    for (int i = 0; i < kVec; ++i)
      tile[transpose_tile_slot<ChunkBytes, kVec>(ld_r + a_blocks * i, ld_j, b_chunks)] = v[i];
    __syncthreads();

    // Read back: thread (a, b) takes the kVec x kVec block of tile rows kVec a .. kVec a +
    // kVec - 1, chunk b: v[k].elem[m] = in(r0 + kVec a + k, c0 + kVec b + m).
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      v[k] = tile[transpose_tile_slot<ChunkBytes, kVec>(kVec * a + k, b, b_chunks)];
    // Out row c0 + kVec b + m, chunk r0 / kVec + a holds column kVec b + m of those rows.
    // Consecutive threads write consecutive chunks of one out row; when A < 32 a warp goes on
    // into the next out rows, which follow in memory when the tile spans all rows.
    const int64_t out_chunk = r0 / kVec + a;
    if (r0 + kVec * a < rows) {
#pragma unroll
      for (int m = 0; m < kVec; ++m) {
        const int64_t oc = c0 + kVec * b + m;
        const Chunk w = transpose_block_column<U, kWords>(v, m);
        if (oc < cols) out_c[oc * rows_v + out_chunk] = w;
      }
    }
  }
}

// ---- thin kernels ----------------------------------------------------------------------------

// Geometry of the thin kernels for element type U and short side S (2..8): a thread holds S x
// kPer chunks (kPer column (row) chunks of the long side: 2 when S < 4, so that a thread keeps
// at least 4 loads in flight), a tile spans kLong elements of the long side.
//
// Staging slot of chunk s: odd S packs them (a thread's S chunks, S apart between lanes, hit
// distinct banks); even S adds one chunk of padding per 8 (at most 2-way conflicts for S = 6,
// none for 2, 4, 8). Consecutive chunks stay conflict-free either way.
__host__ __device__ constexpr int transpose_thin_slot(int s_side, int s) {
  return s_side % 2 ? s : s + (s >> 3);
}
constexpr int transpose_thin_per_thread(int s_side) {
  return s_side < 4 ? 2 : 1;
}
// Static shared memory of a thin kernel: the staged chunks, + the window's second chunk.
constexpr int transpose_thin_smem_bytes(int s_side) {
  return (transpose_thin_slot(s_side,
                              kTransposeBlock * transpose_thin_per_thread(s_side) * s_side) +
          1) *
         16;
}

template <typename U, int S>
struct TransposeThinGeometry {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(U));
  static constexpr int kPer = transpose_thin_per_thread(S);
  static constexpr int kLong = kTransposeBlock * kPer * kVec;
  static constexpr int kSegChunks = kTransposeBlock * kPer * S;  // chunks a tile moves
  static constexpr __host__ __device__ int slot(int s) { return transpose_thin_slot(S, s); }
  static constexpr int kStageChunks = transpose_thin_smem_bytes(S) / 16;
  static_assert(S >= 2 && S <= 8, "thin kernels take 2 to 8 rows (columns)");
};

// Register budget of the thin kernels (blocks per SM): 4 (64 registers; the window loads of
// unaligned rows hold twice the chunks of aligned ones), 3 (85) for 1- and 2-byte thin cols of
// 6 to 8 columns, which spilled at 64. 3-4 blocks of 256 threads keep >= 60 KiB of loads in
// flight per SM. One block fewer where these spilled: thin cols of 8 2-byte columns on sm_75..89
// and of 8 1-byte columns on sm_75 (4-8 bytes at 80 registers; 2 blocks still keep 72 KiB of
// loads in flight), thin rows of 8 1-byte rows on sm_120 (8 bytes at 64).
template <typename U, int R>
inline constexpr int kTransposeThinRowsMinBlocks = sizeof(U) == 1 && R == 8
                                                       ? transpose_arch_blocks(4, 4, 3)
                                                       : 4;
template <typename U, int C>
inline constexpr int kTransposeThinColsMinBlocks = C == 8 &&
                                                           (sizeof(U) == 2 ||
                                                            (sizeof(U) == 1 && kCompiledArch == 75))
                                                       ? transpose_arch_blocks(3, 2, 3)
                                                   : sizeof(U) <= 2 && C >= 6 ? 3
                                                                              : 4;

// Output element y of a thread's block comes from source element src(y) of its chunks v
// (source element x is element x % kVec of v[x / kVec]).
//  - thin rows: v[b] = row b, kVec columns; out (a run of kVec out rows of R) y = j R + b.
//  - thin cols: v holds kVec in rows of C as one run; out chunk c = column c of those rows.
template <int R, int Vec>
struct ThinRowsMap {
  __host__ __device__ static constexpr int src(int y) { return (y % R) * Vec + y / R; }
};
template <int C, int Vec>
struct ThinColsMap {
  __host__ __device__ static constexpr int src(int y) { return (y % Vec) * C + y / Vec; }
};

// Chunk m of the permuted block: output elements [m kVec, m kVec + kVec) gathered from v by
// Map (m and every index below are compile-time constants once the callers' loops unroll:
// 4- and 8-byte elements are register renames, 2-byte ones one PRMT a word, 1-byte ones
// three).
template <typename U, typename Map, int N>
__device__ __forceinline__ Pack<uint32_t, 4> gather_chunk(const Pack<uint32_t, 4> (&v)[N], int m) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(U));
  Pack<uint32_t, 4> w;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if constexpr (sizeof(U) == 8) {
      const int x = Map::src(m * kVec + k / 2);
      w.elem[k] = v[x / kVec].elem[(x % kVec) * 2 + k % 2];
    } else if constexpr (sizeof(U) == 4) {
      const int x = Map::src(m * kVec + k);
      w.elem[k] = v[x / kVec].elem[x % kVec];
    } else if constexpr (sizeof(U) == 2) {
      const int x0 = Map::src(m * kVec + 2 * k), x1 = Map::src(m * kVec + 2 * k + 1);
      const uint32_t sel = ((x0 & 1) ? 0x32u : 0x10u) | ((x1 & 1) ? 0x7600u : 0x5400u);
      w.elem[k] =
          __byte_perm(v[x0 / kVec].elem[(x0 % kVec) / 2], v[x1 / kVec].elem[(x1 % kVec) / 2], sel);
    } else {
      int x[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        x[i] = Map::src(m * kVec + 4 * k + i);
      const uint32_t lo = __byte_perm(v[x[0] / kVec].elem[(x[0] % kVec) / 4],
                                      v[x[1] / kVec].elem[(x[1] % kVec) / 4],
                                      static_cast<uint32_t>((x[0] & 3) | (((x[1] & 3) + 4) << 4)));
      const uint32_t hi = __byte_perm(v[x[2] / kVec].elem[(x[2] % kVec) / 4],
                                      v[x[3] / kVec].elem[(x[3] % kVec) / 4],
                                      static_cast<uint32_t>((x[2] & 3) | (((x[3] & 3) + 4) << 4)));
      w.elem[k] = __byte_perm(lo, hi, 0x5410u);
    }
  }
  return w;
}

// Block-wide: writes elements [0, len) of a run staged in shared memory (run element e is
// element e % kVec of chunk stage[G::slot(base + e / kVec)]) to dst[0, len). The whole
// aligned chunks of dst are written as one 16-byte store each (a window over two staged
// chunks when dst is not chunk-aligned); the partial chunks at both ends, element by element.
template <typename U, typename G>
__device__ __forceinline__ void store_staged_run(U* dst, int len, const Pack<uint32_t, 4>* stage,
                                                 int base) {
  constexpr int kVec = G::kVec;
  const int head_full = (kVec - element_phase<U>(dst, kVec)) & (kVec - 1);
  const int head = head_full < len ? head_full : len;  // elements before dst's first boundary
  const int body = (len - head) / kVec;                // whole aligned chunks
  for (int k = threadIdx.x; k < body; k += kTransposeBlock) {
    const Pack<uint32_t, 4> lo = stage[G::slot(base + k)];
    Pack<uint32_t, 4> w = lo;
    if (head != 0) w = chunk_window<U>(lo, stage[G::slot(base + k + 1)], head);
    store_chunk(dst + head + int64_t{k} * kVec, w);
  }
  const int tail0 = head + body * kVec;
  const int edge = head + (len - tail0);  // elements written one by one
  const U* st = reinterpret_cast<const U*>(stage);
  for (int i = threadIdx.x; i < edge; i += kTransposeBlock) {
    const int e = i < head ? i : tail0 + (i - head);
    dst[e] = st[G::slot(base + e / kVec) * kVec + e % kVec];
  }
}

// in: R x cols (2 <= R <= 8), out: cols x R; any element-aligned pointers and any cols. A
// tile is R rows x kLong columns; its out rows are one run of kLong R elements. Thread tid
// takes column chunks q = p * 256 + tid (p < kPer): loads row b's kVec columns as one window
// per row (consecutive threads read consecutive chunks of a row), permutes the R x kVec block
// into the R chunks of its kVec out rows, stages them, and the block writes the run.
template <typename U, int R>
__global__ void __launch_bounds__(kTransposeBlock,
                                  min_blocks_per_sm(kTransposeBlock,
                                                    kTransposeThinRowsMinBlocks<U, R>))
    transpose_thin_rows_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t cols,
                               int64_t num_tiles) {
  using G = TransposeThinGeometry<U, R>;
  using Chunk = Pack<uint32_t, 4>;
  constexpr int kVec = G::kVec, kPer = G::kPer;
  __shared__ Chunk stage[G::kStageChunks];

  const int64_t n = R * cols;
  const int in_ph = element_phase<U>(in, kVec);
  const int cols_m = static_cast<int>(cols & (kVec - 1));

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const int64_t c0 = t * G::kLong;
    Chunk v[kPer][R];
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int64_t c = c0 + int64_t{p * kTransposeBlock + static_cast<int>(threadIdx.x)} * kVec;
      const int valid = c >= cols ? 0 : cols - c < kVec ? static_cast<int>(cols - c) : kVec;
#pragma unroll
      for (int b = 0; b < R; ++b) {
        const int ph = (in_ph + b * cols_m) & (kVec - 1);  // phase of row b
        v[p][b] = valid > 0 ? load_window<U, 4>(in, b * cols + c, valid, ph, n) : Chunk{};
      }
    }
    __syncthreads();  // the previous tile's reads of `stage` are done
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int q = p * kTransposeBlock + static_cast<int>(threadIdx.x);
#pragma unroll
      for (int m = 0; m < R; ++m)
        stage[G::slot(q * R + m)] = gather_chunk<U, ThinRowsMap<R, kVec>>(v[p], m);
    }
    __syncthreads();
    const int64_t cv = cols - c0 < G::kLong ? cols - c0 : G::kLong;  // columns of this tile
    store_staged_run<U, G>(out + c0 * R, static_cast<int>(cv * R), stage, 0);
  }
}

// in: rows x C (2 <= C <= 8), out: C x rows; any element-aligned pointers and any rows. A tile
// is kLong rows x C columns, one run of kLong C elements of in, staged through shared memory
// with 16-byte loads. Thread tid takes row chunks q = p * 256 + tid: kVec rows x C columns
// (C chunks of the run), permuted into one chunk per out row. out_aligned (rows a multiple of
// kVec and out chunk-aligned: every out row starts on a chunk boundary): each chunk is stored
// directly, consecutive threads writing consecutive chunks of an out row; otherwise the C out
// runs of the tile are staged and written like the thin-rows run.
template <typename U, int C>
__global__ void __launch_bounds__(kTransposeBlock,
                                  min_blocks_per_sm(kTransposeBlock,
                                                    kTransposeThinColsMinBlocks<U, C>))
    transpose_thin_cols_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows,
                               bool out_aligned, int64_t num_tiles) {
  using G = TransposeThinGeometry<U, C>;
  using Chunk = Pack<uint32_t, 4>;
  constexpr int kVec = G::kVec, kPer = G::kPer;
  constexpr int kRowChunks = kPer * kTransposeBlock;  // row chunks (kVec rows each) of a tile
  // Aligned chunks a tile's run touches: kSegChunks, one more when in is not chunk-aligned.
  constexpr int kLoads = ceil_div(G::kSegChunks + 1, kTransposeBlock);
  __shared__ Chunk stage[G::kStageChunks];

  const int64_t n = rows * C;
  const int in_ph = element_phase<U>(in, kVec);

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const int64_t r0 = t * G::kLong;
    const int hv = rows - r0 < G::kLong ? static_cast<int>(rows - r0) : G::kLong;  // rows here
    const int len = hv * C;
    // Staged chunk k = the aligned chunk of in at run element k kVec - in_ph (the run starts
    // at r0 C, which has in's phase since r0 is a multiple of kVec).
    const int num_k = ceil_div(len + in_ph, kVec);
    Chunk s[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kTransposeBlock;
      // (zero when unused: a value left undefined here would stay live across the loop)
      s[i] =
          k < num_k ? load_chunk_clamped<U, 4>(in, r0 * C - in_ph + int64_t{k} * kVec, n) : Chunk{};
    }
    __syncthreads();  // the previous tile's reads of `stage` are done
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int k = static_cast<int>(threadIdx.x) + i * kTransposeBlock;
      if (k < num_k) stage[G::slot(k)] = s[i];
    }
    __syncthreads();

    // Thread's chunks: run elements [(q C + m) kVec, + kVec), the window at in_ph over staged
    // chunks q C + m and q C + m + 1.
    Chunk v[kPer][C];
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int q = p * kTransposeBlock + static_cast<int>(threadIdx.x);
      Chunk lo = stage[G::slot(q * C)];
#pragma unroll
      for (int m = 0; m < C; ++m) {
        if (in_ph == 0) {
          v[p][m] = m == 0 ? lo : stage[G::slot(q * C + m)];
        } else {
          const Chunk hi = stage[G::slot(q * C + m + 1)];
          v[p][m] = chunk_window<U>(lo, hi, in_ph);
          lo = hi;
        }
      }
    }
    if (out_aligned) {
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        const int q = p * kTransposeBlock + static_cast<int>(threadIdx.x);
        const int64_t r = r0 + int64_t{q} * kVec;
        if (r + kVec <= rows) {
#pragma unroll
          for (int c = 0; c < C; ++c)
            store_chunk(out + c * rows + r, gather_chunk<U, ThinColsMap<C, kVec>>(v[p], c));
        } else if (r < rows) {  // the last rows of the matrix
#pragma unroll
          for (int c = 0; c < C; ++c)
            store_partial<U>(out + c * rows + r, gather_chunk<U, ThinColsMap<C, kVec>>(v[p], c),
                             static_cast<int>(rows - r));
        }
      }
    } else {
      __syncthreads();  // every thread has read its chunks of the in run
#pragma unroll
      for (int p = 0; p < kPer; ++p) {
        const int q = p * kTransposeBlock + static_cast<int>(threadIdx.x);
#pragma unroll
        for (int c = 0; c < C; ++c)
          stage[G::slot(c * kRowChunks + q)] = gather_chunk<U, ThinColsMap<C, kVec>>(v[p], c);
      }
      __syncthreads();
      for (int c = 0; c < C; ++c)
        store_staged_run<U, G>(out + c * rows + r0, hv, stage, c * kRowChunks);
    }
  }
}

}  // namespace kernelkit::detail
