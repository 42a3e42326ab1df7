// SPDX-License-Identifier: Apache-2.0
// Transpose kernels and their device helpers. Elements are moved as unsigned integers of their
// size (bits_t: f32 and i32 share the 4-byte kernels), so these never look at values; a
// chunk (one global access) is held as 32-bit words. plan_transpose (transpose_plan.cuh)
// picks one kernel per call:
//  - transpose_tile_kernel<U, ChunkBytes>: rows and cols multiples of the chunk's element
//    count, in and out chunk-aligned. A tile of (A kVec) x (B kVec) elements, A x B = 256 threads,
//    A and B powers of two chosen by the plan so that the tile follows the matrix (16 x 16
//    for square shapes; A kVec >= rows for a few rows, B kVec >= cols for a few columns, so
//    that the block's out rows form one contiguous run). Each thread loads kVec chunks from
//    kVec rows, and writes the kVec x kVec block it reads back from shared memory as kVec
//    chunks of out, transposed in registers.
//  - transpose_staged_kernel<U, ChunkBytes> (1-, 2- and 8-byte elements): the same tiles and
//    stores when only the in rows are not chunk-aligned (cols not a multiple of kVec, or in
//    offset): the tile's in rows are copied to shared memory as the aligned 16-byte chunks
//    that cover them (cp.async), and each chunk of the read back is a window over two units of
//    its staged row.
//  - transpose_thin_rows_kernel<U, R> (2 <= R <= 8 rows) and transpose_thin_cols_kernel<U, C>
//    (2 <= C <= 8 columns): 16-byte accesses on both sides for any alignment. A thread holds
//    all R rows x kVec columns (thin rows) or kVec rows x all C columns (thin cols) in
//    registers, which is R (C) whole chunks on each side, permuted at compile time. The side
//    that is one contiguous run per block (out for thin rows, in for thin cols) goes through
//    shared memory, so that a warp's accesses are contiguous there too.
//  - transpose_shift_kernel<U> (4-byte elements, out rows chunk-aligned, in rows not): 16-byte
//    accesses on both sides, each row's chunk grid shifted by its own phase.
//  - transpose_sector_kernel<U> (4-byte elements, out rows not chunk-aligned): 16-byte accesses
//    on both sides, each out row written in whole 32-byte sectors of its own grid.
//  - transpose_scalar_kernel<U> (1-, 2-, 8-byte elements whose shape fits none of the above):
//    one element per access.
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

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

// One 16-byte global store. A plain Pack store next to an element-wise edge path was split
// into 4-byte stores (seen in the PTX of the shifted kernel); __stwb keeps st.global.v4.
template <int W>
__device__ __forceinline__ void store_chunk(void* p, const Pack<uint32_t, W>& w) {
  if constexpr (W == 4) {
    uint4 x;
    memcpy(&x, &w, sizeof(x));
    __stwb(reinterpret_cast<uint4*>(p), x);
  } else {
    *reinterpret_cast<Pack<uint32_t, W>*>(p) = w;
  }
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
// 16 x 16-byte register block per thread and a 64 KiB tile); 4 for 1- and 2-byte elements
// whose rows are only 4-byte aligned.
template <typename U>
inline constexpr int kTransposeWideChunk = sizeof(U) == 1 ? 8 : 16;

template <typename U, int ChunkBytes>
struct TransposeTileGeometry {
  static constexpr int kVec = ChunkBytes / static_cast<int>(sizeof(U));  // elements per chunk
  static constexpr int kVecLog2 = kVec == 2 ? 1 : kVec == 4 ? 2 : kVec == 8 ? 3 : 4;
  static constexpr int kWords = ChunkBytes / 4;
  static constexpr int kTileChunks = kTransposeBlock * kVec;  // A kVec x B chunks, A B = 256
  static constexpr int kSmemBytes = kTileChunks * ChunkBytes;
  static_assert(ChunkBytes >= 4 && kVec >= 2, "a chunk holds at least two elements");
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
// chunks of a row) and the loads (consecutive threads a read rows kVec a + k, chunk b).
//  - 8- and 16-byte chunks: XOR the chunk by (r / kVec) mod B: the rows kVec a + k of 8 (16)
//    consecutive a land on 8 (16) distinct positions (for B >= 8; B = 4 or 2, a few columns,
//    allows 2-way conflicts).
//  - 4-byte chunks (B = 16 only): a row is 64 bytes, two rows share a 128-byte bank line; the
//    slot in the line ((r & 1) * 16 + j) is XORed by 2 * ((r / kVec) & 15), which is the same
//    for both rows of a line (kVec is even), spreads the 16 rows of a load over even positions
//    and leaves the +1 of the other half-warp's odd chunk to the odd ones.
template <int ChunkBytes, int Vec>
__device__ __forceinline__ int transpose_tile_slot(int r, int j, int b_chunks) {
  if constexpr (ChunkBytes >= 8) {
    return r * b_chunks + (j ^ ((r / Vec) & (b_chunks - 1)));
  } else {
    static_assert(Vec % 2 == 0, "two rows of a line share the swizzle");
    return (r / 2) * 32 + (((r & 1) * 16 + j) ^ (((r / Vec) & 15) * 2));
  }
}

// Register budget of the tile kernel (blocks per SM): the registers the kernel had before its
// tile shape became a run-time choice, which the square shapes were measured with (sm_90: f32
// 40 registers, 6 blocks; f16 64, 4; 1-byte 48, 5; 8-byte 32, 8); without a cap ptxas gave the
// run-time tile shape 47 (f32) and 57 (1-byte) registers, one block per SM less. One block
// fewer where these spilled 16 bytes (f16 sm_75..89, 1-byte sm_80..89; sm_80 then takes 78
// and 64 registers) and 8 bytes (f32 sm_120).
template <typename U, int ChunkBytes>
inline constexpr int kTransposeTileMinBlocks = ChunkBytes == 4  ? 6
                                               : sizeof(U) == 8 ? 8
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

// ---- staged tile kernel (in rows not chunk-aligned) -------------------------------------------

// Shared memory of the staged tile kernel. Tile row R (of A kVec rows, B kVec columns) is held
// as the aligned 16-byte chunks of in that cover its B ChunkBytes bytes: row_chunks =
// ceil(B ChunkBytes / 16) + 1 (the bytes start anywhere in the first one), at chunk
// R row_chunks + R / kVec: one chunk of padding per kVec rows, so that the rows kVec a + k of
// consecutive a (read back together) start in consecutive bank groups.
constexpr int transpose_staged_row_chunks(int chunk_bytes, int b_chunks) {
  return ceil_div(b_chunks * chunk_bytes, 16) + 1;
}
constexpr int transpose_staged_smem_bytes(int elem_bytes, int chunk_bytes, int a_blocks,
                                          int b_chunks) {
  return 16 * (a_blocks * (chunk_bytes / elem_bytes) *
                   transpose_staged_row_chunks(chunk_bytes, b_chunks) +
               a_blocks);
}

// Register budget of the staged kernel (blocks per SM): its loads go straight to shared memory
// (cp.async on sm_80+), so registers hold only the kVec x kVec block of the read back.
template <typename U>
inline constexpr int kTransposeStagedMinBlocks = sizeof(U) == 2 ? 4 : 6;

// in: rows x cols, out: cols x rows; rows a multiple of kVec and out chunk-aligned (every out
// row starts on a chunk boundary); in rows start anywhere (cols not a multiple of kVec, or in
// not chunk-aligned). Tiles and out stores as transpose_tile_kernel (A = 2^a_log2 row blocks, B
// = 256 / A chunks, row-band major, one block per tile). The tile's in rows are copied to shared
// memory as the aligned 16-byte chunks that cover them (one global access per 16 bytes, no
// register staging; chunks that cross the start or end of the matrix are read element by
// element), and each kVec-element chunk of the read back is the window at the row's byte phase
// over two ChunkBytes units of its staged row. Dynamic shared memory:
// transpose_staged_smem_bytes.
template <typename U, int ChunkBytes, bool ColOrder>
__global__ void __launch_bounds__(kTransposeBlock,
                                  min_blocks_per_sm(kTransposeBlock, kTransposeStagedMinBlocks<U>))
    transpose_staged_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows,
                            int64_t cols, int a_log2, int64_t tiles_minor, int64_t num_tiles) {
  using G = TransposeTileGeometry<U, ChunkBytes>;
  constexpr int kVec = G::kVec, kWords = G::kWords, kE = static_cast<int>(sizeof(U));
  using Chunk = typename G::Chunk;
  using Raw = TransposeChunk<16>;
  extern __shared__ Raw transpose_stage[];

  const int b_log2 = 8 - a_log2;
  const int a_blocks = 1 << a_log2, b_chunks = 1 << b_log2;
  const int tile_r = a_blocks * kVec, tile_c = b_chunks * kVec;
  static_assert(ChunkBytes == 8 || ChunkBytes == 16, "staged windows of 8 or 16 bytes");
  // Per tile row: m_chunks = ceil(B ChunkBytes / 16) aligned chunks (a power of two), then one
  // more.
  const int m_log2 = ChunkBytes == 16 ? b_log2 : (b_log2 > 0 ? b_log2 - 1 : 0);
  const int m_chunks = 1 << m_log2;
  const int row_chunks = m_chunks + 1;
  const int items = tile_r * row_chunks;
  // Read back: thread (a, b). 8-byte windows (1-byte elements) at A = 16 swap bits 3 and 4 of
  // the thread index: a half-warp then reads row blocks a = 0..7 (or 8..15) of two chunk
  // columns instead of a = 0..15 of one. Consecutive row blocks start 146 units of 8 bytes
  // apart, so row blocks a and a + 8 share banks (2-way conflicts when the rows' byte phases
  // step by an even count, as for 33554 columns); two columns are one unit apart. A warp still
  // holds the same 16 row blocks x 2 columns (the same stores).
  const int x = static_cast<int>(threadIdx.x);
  const int swap = ChunkBytes == 8 && a_log2 == 4 ? ((x >> 3) ^ (x >> 4)) & 1 : 0;
  const int tid = x ^ (swap << 3) ^ (swap << 4);
  const int a = tid & (a_blocks - 1);  // read back: row block (kVec rows)
  const int b = tid >> a_log2;         // read back: chunk column
  const int64_t rows_v = rows / kVec;  // chunks per out row
  const uintptr_t in_lo = reinterpret_cast<uintptr_t>(in);
  const uintptr_t in_hi = in_lo + static_cast<uintptr_t>(rows * cols) * kE;
  const int row_step = static_cast<int>((cols * kE) & 15);  // byte phase step per row
  Chunk* out_c = reinterpret_cast<Chunk*>(out);

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    int64_t tr, tc;
    transpose_tile_at(t, tiles_minor, ColOrder, &tr, &tc);
    const int64_t r0 = tr * tile_r, c0 = tc * tile_c;
    const int vc = cols - c0 < tile_c ? static_cast<int>(cols - c0) : tile_c;  // columns here
    __syncthreads();  // the previous tile's reads of the stage are done

    // Copy: item f < tile_r m_chunks is chunk f % m_chunks of tile row f / m_chunks, the others
    // the last chunk of row f - tile_r m_chunks; consecutive threads copy consecutive chunks.
    for (int f = threadIdx.x; f < items; f += kTransposeBlock) {
      const bool main = f < tile_r * m_chunks;
      const int row = main ? f >> m_log2 : f - tile_r * m_chunks;
      const int j = main ? f & (m_chunks - 1) : m_chunks;
      const int64_t r = r0 + row;
      if (r >= rows) continue;
      const uintptr_t first = in_lo + static_cast<uintptr_t>(r * cols + c0) * kE;
      const int phase = static_cast<int>(first & 15);
      if (16 * j >= phase + vc * kE) continue;  // past the row's columns in this tile
      const uintptr_t g = (first & ~uintptr_t{15}) + 16 * j;
      Raw* dst = &transpose_stage[row * row_chunks + (row >> G::kVecLog2) + j];
      if (g >= in_lo && g + 16 <= in_hi) {
        __pipeline_memcpy_async(dst, reinterpret_cast<const void*>(g), 16);
      } else {  // the chunk crosses the start or the end of the matrix
        U e[16 / kE];
#pragma unroll
        for (int i = 0; i < 16 / kE; ++i) {
          const uintptr_t x = g + static_cast<uintptr_t>(i) * kE;
          e[i] = x >= in_lo && x < in_hi ? *reinterpret_cast<const U*>(x) : U(0);
        }
        memcpy(dst, e, sizeof(e));
      }
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);  // this thread's copies have landed
    __syncthreads();           // and every other thread's

    // Read back: thread (a, b) takes the kVec x kVec block of tile rows kVec a .. kVec a + kVec
    // - 1, columns kVec b ..: v[k].elem[m] = in(r0 + kVec a + k, c0 + kVec b + m), the window at
    // byte x = phase + ChunkBytes b of the staged row over its ChunkBytes units x / ChunkBytes
    // and the next. (Columns past cols are read and never stored.)
    const int64_t rf = r0 + kVec * a;
    if (rf < rows) {
      Chunk v[kVec];
      int phase = static_cast<int>((in_lo + static_cast<uintptr_t>(rf * cols + c0) * kE) & 15);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const int row = kVec * a + k;
        const Chunk* units = reinterpret_cast<const Chunk*>(
            &transpose_stage[row * row_chunks + (row >> G::kVecLog2)]);
        const int x = phase + ChunkBytes * b;
        const int u = x / ChunkBytes;
        v[k] = chunk_window<U>(units[u], units[u + 1], (x & (ChunkBytes - 1)) / kE);
        phase = (phase + row_step) & 15;
      }
      // Out row c0 + kVec b + m, chunk r0 / kVec + a: as transpose_tile_kernel.
      const int64_t out_chunk = r0 / kVec + a;
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

// ---- any shape -------------------------------------------------------------------------------

// Shared-memory word for the scalar path: 1-, 2- and 4-byte elements each take a 32-bit
// word, so a padded row (65 words) shifts each row by one bank and a column read is
// conflict-free; 8-byte elements take two words (a column read of 16 lanes is then
// conflict-free per half-warp).
template <typename U>
using transpose_scalar_smem_t = std::conditional_t<sizeof(U) == 8, uint64_t, uint32_t>;

inline constexpr int kTransposeScalarTile = 64;  // scalar path: 64 x 64 elements per tile
inline constexpr int kTransposeScalarWarpRows = kTransposeBlock / 32;

// Static shared memory of the scalar kernel for elem_bytes-byte elements.
constexpr int transpose_scalar_smem_bytes(int elem_bytes) {
  return kTransposeScalarTile * (kTransposeScalarTile + 1) * (elem_bytes == 8 ? 8 : 4);
}

// Any shape (the plan sends 1-, 2- and 8-byte elements here that no chunked kernel takes).
// 256 threads as 32 x 8; each thread moves 2 x 8 elements of a 64 x 64 tile; lanes run along
// in rows on the load and along out rows on the store. Register budget: 6 resident blocks
// (40 registers), 4 (64) for 8-byte elements, which spill at 40; capping 4-byte elements at 32
// registers (8 blocks) spilled and took 1.3x as long (bench/NOTES.md "transpose", tried and
// lost). 2-byte elements on sm_80 and sm_120: 5 (48; they spilled 44-48 bytes at 40).
template <typename U>
inline constexpr int kTransposeScalarMinBlocks = sizeof(U) == 8 ? 4
                                                 : sizeof(U) == 2
                                                     ? (kCompiledArch == 80
                                                            ? 5
                                                            : transpose_arch_blocks(6, 6, 5))
                                                     : 6;

template <typename U>
__global__ void __launch_bounds__(kTransposeBlock,
                                  min_blocks_per_sm(kTransposeBlock, kTransposeScalarMinBlocks<U>))
    transpose_scalar_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows,
                            int64_t cols, int64_t tiles_c, int64_t num_tiles) {
  constexpr int kTile = kTransposeScalarTile, kRowStep = kTransposeScalarWarpRows;
  using S = transpose_scalar_smem_t<U>;
  __shared__ S tile[kTile][kTile + 1];

  const int x = threadIdx.x % 32, y = threadIdx.x / 32;
  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const int64_t r0 = (t / tiles_c) * kTile, c0 = (t % tiles_c) * kTile;

    U v[kTile / kRowStep][2];
#pragma unroll
    for (int i = 0; i < kTile / kRowStep; ++i) {
      const int64_t r = r0 + y + kRowStep * i;
      const U* row = in + r * cols;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int64_t c = c0 + x + 32 * j;
        if (r < rows && c < cols) v[i][j] = row[c];
      }
    }
    __syncthreads();  // the previous tile's reads of `tile` are done
#pragma unroll
    for (int i = 0; i < kTile / kRowStep; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        tile[y + kRowStep * i][x + 32 * j] = static_cast<S>(v[i][j]);
    __syncthreads();

    // out(c0 + y + 8i, r0 + x + 32j) = tile[x + 32j][y + 8i]
#pragma unroll
    for (int i = 0; i < kTile / kRowStep; ++i) {
      const int64_t oc = c0 + y + kRowStep * i;
      U* orow = out + oc * rows;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int64_t orr = r0 + x + 32 * j;
        if (oc < cols && orr < rows) orow[orr] = static_cast<U>(tile[x + 32 * j][y + kRowStep * i]);
      }
    }
  }
}

// Shifted-tile kernel: 16-byte accesses on both global sides for any shape, as long as the
// pointers are element-aligned. Rows of in and out start at arbitrary offsets within a
// 16-byte chunk, so the chunk grid of each row is shifted by its own phase:
//   in  row r:  column c lies in chunk (c + q_r) / kVec, q_r = (in / sizeof(U) + r * cols) % kVec
//   out row c:  element r lies in chunk (r + p_c) / kVec, p_c = (out / sizeof(U) + c * rows) % kVec
// A block owns out rows [64C, 64C + 64) and, in each, the 16 chunks whose shifted position
// (r + p_c) falls in [64R, 64R + 64), so every out chunk is written whole by one thread
// (tiles_r = ceil((rows + kVec - 1) / 64)). It needs in rows [64R - kVec + 1, 64R + 64) and
// columns [64C, 64C + 64): it reads the kTile / kVec + 1 aligned chunks of each of those rows
// that cover the columns (the halo is read again by the neighbouring tiles, from L2).
// Chunks that cross the start or end of a row are moved element by element.
template <typename U>
struct TransposeShiftGeometry {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(U));  // elements per chunk
  static constexpr int kTile = 64;                               // owned tile side
  static constexpr int kLdRows = kTile + kVec - 1;               // in rows read per tile
  static constexpr int kChunks = kTile / kVec + 1;               // chunks read per in row
  static constexpr int kRowElems = kChunks * kVec;               // smem row, elements
  // Smem row rho starts at rho * kRowElems + kVec * (rho / kVec): one chunk of padding per
  // kVec rows puts the 16 rows 4a + j of a half-warp's column read in 8 bank groups.
  static constexpr int kSmem = kLdRows * kRowElems + round_up(kLdRows, kVec);
  static constexpr int kSmemBytes = kSmem * static_cast<int>(sizeof(U));
  static constexpr int kLoadItems = kLdRows * kChunks;
  static constexpr int kLoads = ceil_div(kLoadItems, kTransposeBlock);
  static constexpr int kOutChunks = kTile / kVec;  // chunks per owned out row
  static constexpr int kOutRowsPerPass = kTransposeBlock / kOutChunks;
  static constexpr int kStores = kTile / kOutRowsPerPass;
  static_assert(kVec >= 2 && is_pow2(kVec), "chunk holds a power of two >= 2");
  static_assert(kTransposeBlock % kOutChunks == 0 && kTile % kOutRowsPerPass == 0,
                "every owned out chunk has one thread");
  __device__ static __forceinline__ int slot(int rho, int s) {
    return rho * kRowElems + kVec * (rho / kVec) + s;
  }
};

// No minimum blocks: as measured (54 registers on sm_90, 4 blocks per SM; a 4-block cap made
// ptxas take 59, the same residency). Copying the in chunks to shared memory with cp.async
// instead (40 registers, 6 blocks) made 16385 x 4097 f32 slower on the H100: 209.0 -> 218.5 us.
template <typename U, bool ColOrder>
__global__ void __launch_bounds__(kTransposeBlock)
    transpose_shift_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows,
                           int64_t cols, int64_t tiles_minor, int64_t num_tiles) {
  using G = TransposeShiftGeometry<U>;
  constexpr int kVec = G::kVec, kTile = G::kTile, kChunks = G::kChunks;
  using P = Pack<U, kVec>;
  __shared__ P tile_p[G::kSmem / kVec];
  U* tile = reinterpret_cast<U*>(tile_p);

  const int in_ph = element_phase<U>(in, kVec);
  const int out_ph = element_phase<U>(out, kVec);
  const int cols_m = static_cast<int>(cols % kVec), rows_m = static_cast<int>(rows % kVec);
  const int kk = threadIdx.x % G::kOutChunks;  // store: chunk within the owned out row
  const int cq = threadIdx.x / G::kOutChunks;  // store: first owned out row

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    int64_t tr, tc;
    transpose_tile_at(t, tiles_minor, ColOrder, &tr, &tc);
    const int64_t rb = tr * kTile - (kVec - 1);  // in row of smem row 0
    const int64_t c0 = tc * kTile;

    // Load: item f = (smem row f / kChunks, chunk f % kChunks); consecutive threads read
    // consecutive chunks of a row.
    P v[G::kLoads];
#pragma unroll
    for (int m = 0; m < G::kLoads; ++m) {
      const int f = threadIdx.x + kTransposeBlock * m;
      const int rho = f / kChunks, k = f % kChunks;
      const int64_t r = rb + rho;
      if (f < G::kLoadItems && r >= 0 && r < rows) {
        const int q = (in_ph + static_cast<int>(r & (kVec - 1)) * cols_m) % kVec;
        const int64_t cs = c0 - q + int64_t{kVec} * k;  // first column of the chunk
        const U* p = in + r * cols + cs;
        if (kVec * k >= q + kTile) {
          // q == 0: the last chunk lies wholly in the next tile.
        } else if (cs >= 0 && cs + kVec <= cols) {
          v[m] = *reinterpret_cast<const P*>(p);
        } else {
#pragma unroll
          for (int i = 0; i < kVec; ++i)
            if (cs + i >= 0 && cs + i < cols) v[m].elem[i] = p[i];
        }
      }
    }
    __syncthreads();  // the previous tile's reads of `tile` are done
#pragma unroll
    for (int m = 0; m < G::kLoads; ++m) {
      const int f = threadIdx.x + kTransposeBlock * m;
      if (f < G::kLoadItems) {
        const int rho = f / kChunks, k = f % kChunks;
        tile_p[G::slot(rho, kVec * k) / kVec] = v[m];
      }
    }
    __syncthreads();

    // Store: out row c = c0 + cq + kOutRowsPerPass * i, chunk kk: elements r = rs + j, from
    // smem row r - rb, column (c - c0) + q_r.
#pragma unroll
    for (int i = 0; i < G::kStores; ++i) {
      const int cc = cq + G::kOutRowsPerPass * i;
      const int64_t c = c0 + cc;
      if (c < cols) {
        const int po = (out_ph + static_cast<int>(c & (kVec - 1)) * rows_m) % kVec;
        const int64_t rs = tr * kTile + int64_t{kVec} * kk - po;
        P w;
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int rho = kVec * kk + j + (kVec - 1) - po;
          const int q = (in_ph + ((j - po + kVec) % kVec) * cols_m) % kVec;  // r % kVec = j - po
          w.elem[j] = tile[G::slot(rho, cc + q)];
        }
        U* p = out + c * rows + rs;
        if (rs >= 0 && rs + kVec <= rows) {
          uint4 x;
          memcpy(&x, &w, sizeof(x));
          __stwb(reinterpret_cast<uint4*>(p), x);
        } else {
#pragma unroll
          for (int j = 0; j < kVec; ++j)
            if (rs + j >= 0 && rs + j < rows) p[j] = w.elem[j];
        }
      }
    }
  }
}

// ---- sector kernel (4-byte elements, out rows not chunk-aligned) ------------------------------

// 4-byte elements whose out rows do not all start on a 16-byte boundary (rows not a multiple of
// 4, or out offset), in rows at any alignment. A block owns out rows [64C, 64C + 64) and, in
// out row c, the 64 elements r with r + s_c in [64R, 64R + 64), where s_c = (out / 4 + c rows)
// mod 8 is the row's 32-byte sector phase: its stores are 16 aligned chunks of which every
// 32-byte sector is whole (no sector is written by two blocks). That needs in rows
// [64R - 7, 64R + 64) (kLdRows) and columns [64C, 64C + 64): each of those rows is read as
// the aligned 16-byte chunks that cover its columns (at most kChunks: the windows; halo rows and
// chunks are read again by the neighbouring tiles, from L2) and stored as they are in shared
// memory.
// A thread's 16 out elements are then read back one word each at addresses that are the same
// for every tile (tile origins are multiples of 64, so every phase depends on the thread only),
// one base address per element of its chunks. Register loads, no minimum blocks: the shifted
// kernel's cp.async copy at 6 blocks an SM lost to its register loads at 4 (218.5 against
// 209.0 us).
struct TransposeSectorGeometry {
  static constexpr int kVec = 4;                    // elements per 16-byte chunk
  static constexpr int kSector = 8;                 // elements per 32-byte sector
  static constexpr int kTile = 64;                  // owned tile side
  static constexpr int kHalo = kSector - 1;         // in rows above the tile
  static constexpr int kLdRows = kTile + kHalo;     // in rows read per tile
  static constexpr int kChunks = kTile / kVec + 1;  // chunks read per in row
  static constexpr int kRowWords = kChunks * kVec;  // a staged row, words
  static constexpr int kLoadItems = kLdRows * kChunks;
  static constexpr int kLoads = ceil_div(kLoadItems, kTransposeBlock);
  static constexpr int kOutChunks = kTile / kVec;  // chunks per owned out row
  static constexpr int kOutRowsPerPass = kTransposeBlock / kOutChunks;
  static constexpr int kStores = kTile / kOutRowsPerPass;
  // Staged row rho starts at word slot(rho): one chunk of padding per 4 rows, so the rows
  // 4k + j that a half-warp reads back lie in 8 distinct bank groups (2-way conflicts, the
  // fewest for 16 lanes whose words share a residue mod 4).
  static constexpr int kSmemWords = kLdRows * kRowWords + round_up(kLdRows, kVec);
  static constexpr int kSmemBytes = kSmemWords * 4;
  static_assert(kTransposeBlock % kOutChunks == 0 && kTile % kOutRowsPerPass == 0,
                "every owned out chunk has one thread");
  __host__ __device__ static constexpr int slot(int rho) {
    return rho * kRowWords + kVec * (rho / kVec);
  }
  // Element phase (mod 4) of the first column of a tile in staged row rho: tile rows start at
  // 64R - 7, so in row 64R - 7 + rho is rho + 1 mod 4. in_ph: element phase of in (mod 4),
  // cols_m: cols mod 4. Column c0 + x of the row is word slot(rho) + in_phase(..) + x.
  __host__ __device__ static constexpr int in_phase(int in_ph, int cols_m, int rho) {
    return (in_ph + ((rho + 1) & 3) * cols_m) & 3;
  }
  // Sector phase of out row c (mod 8): out_ph8: element phase of out mod 8, rows_m8: rows mod 8,
  // c_m8: c mod 8 (tile columns start at multiples of 64).
  __host__ __device__ static constexpr int out_phase(int out_ph8, int rows_m8, int c_m8) {
    return (out_ph8 + c_m8 * rows_m8) & 7;
  }
  // Bank residue (word mod 4) of element e of the chunks of the threads of out-row group cq
  // (the same for all their chunks kk and passes i).
  __host__ __device__ static constexpr int residue(int in_ph, int cols_m, int out_ph8, int rows_m8,
                                                   int cq, int e) {
    return (in_phase(in_ph, cols_m, kHalo - out_phase(out_ph8, rows_m8, cq & 7) + e) + cq) & 3;
  }
  // The read back's order: at step j a thread reads element (j + rotation) & 3 of its chunks. A
  // half-warp's 16 lanes (chunks kk = 0..15 of one out row group) read 16 words of one residue
  // mod 4 in 8 bank groups: 2-way conflicts. Odd groups rotate so that their residue at every
  // step differs from the even group's beside them in the warp (which reads in order), else the
  // warp's two halves would share banks: 4-way (f32 16385 x 4097 in order: every step). A
  // rotation exists whenever both halves' residues cover all four values (cols odd), and 0 is
  // right when cols is even (their residues differ by an odd count).
  __host__ __device__ static constexpr int read_rotation(int in_ph, int cols_m, int out_ph8,
                                                         int rows_m8, int cq) {
    int rot = 0;
    if (cq & 1) {
      for (int r = kVec - 1; r >= 0; --r) {
        bool apart = true;
        for (int j = 0; j < kVec; ++j)
          apart = apart && residue(in_ph, cols_m, out_ph8, rows_m8, cq, (j + r) & 3) !=
                               residue(in_ph, cols_m, out_ph8, rows_m8, cq ^ 1, j);
        if (apart) rot = r;
      }
    }
    return rot;
  }
};

// in: rows x cols, out: cols x rows, 4-byte elements, any element-aligned pointers and shape.
// Tiles as TransposeSectorGeometry says (tiles_r = ceil((rows + 7) / 64), tiles_c =
// ceil(cols / 64)), numbered as transpose_tile_at says; one block per tile, grid-stride past
// the grid.
template <typename U, bool ColOrder>
__global__ void __launch_bounds__(kTransposeBlock)
    transpose_sector_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows,
                            int64_t cols, int64_t tiles_minor, int64_t num_tiles) {
  static_assert(sizeof(U) == 4, "the sector kernel moves 4-byte elements");
  using G = TransposeSectorGeometry;
  using Chunk = Pack<uint32_t, 4>;
  __shared__ Chunk stage[G::kSmemWords / 4];
  const uint32_t* words = reinterpret_cast<const uint32_t*>(stage);

  const int64_t n = rows * cols;
  const int in_ph = element_phase<U>(in, 4);
  const int cols_m = static_cast<int>(cols & 3);
  // Store: thread (kk, cq) writes chunk kk of out rows c0 + cq + 16 i (i < kStores), which
  // share their sector phase `own` (c mod 8 = cq mod 8): elements r = 64R - own + 4 kk + e,
  // staged row rho = 7 - own + 4 kk + e. It reads element e = (j + rot) & 3 at step j, from
  // word rd[j] + 16 i.
  const int kk = static_cast<int>(threadIdx.x) % G::kOutChunks;
  const int cq = static_cast<int>(threadIdx.x) / G::kOutChunks;
  const int out_ph8 = element_phase<U>(out, 8), rows_m8 = static_cast<int>(rows & 7);
  const int own = G::out_phase(out_ph8, rows_m8, cq & 7);
  const int rot = G::read_rotation(in_ph, cols_m, out_ph8, rows_m8, cq);
  int rd[G::kVec];
#pragma unroll
  for (int j = 0; j < G::kVec; ++j) {
    const int rho = G::kHalo - own + G::kVec * kk + ((j + rot) & 3);
    rd[j] = G::slot(rho) + G::in_phase(in_ph, cols_m, rho) + cq;
  }

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    int64_t tr, tc;
    transpose_tile_at(t, tiles_minor, ColOrder, &tr, &tc);
    const int64_t c0 = tc * G::kTile;
    // Element (staged row 0, column c0) of in; it and the chunk starts may lie outside in.
    const int64_t base = (tr * G::kTile - G::kHalo) * cols + c0;

    // Columns of this tile: chunk k of staged row rho is needed when 4 k < vc + its phase (the
    // 17th chunk of a row at phase 0 is not; the last tile column needs 1 + (cols - 1) % 64).
    const int vc = cols - c0 < G::kTile ? static_cast<int>(cols - c0) : G::kTile;
    // Load: item f = chunk f % kChunks of staged row f / kChunks, the aligned chunk at in
    // element item(f); consecutive threads read consecutive chunks of a row.
    auto item = [&](int f) {
      const int rho = f / G::kChunks, k = f - rho * G::kChunks;
      return base + rho * cols - G::in_phase(in_ph, cols_m, rho) + G::kVec * k;
    };
    auto needed = [&](int f) {
      const int rho = f / G::kChunks, k = f - rho * G::kChunks;
      return f < G::kLoadItems && G::kVec * k < vc + G::in_phase(in_ph, cols_m, rho);
    };
    auto slot = [](int f) {
      const int rho = f / G::kChunks;
      return G::slot(rho) / G::kVec + (f - rho * G::kChunks);
    };
    if (base - 3 >= 0 && base + (G::kLdRows - 1) * cols + G::kRowWords <= n) {
      // Every chunk of the tile lies in [0, n): all loads in flight, no checks.
      Chunk v[G::kLoads];
#pragma unroll
      for (int m = 0; m < G::kLoads; ++m) {
        const int f = static_cast<int>(threadIdx.x) + kTransposeBlock * m;
        if (needed(f)) v[m] = *reinterpret_cast<const Chunk*>(in + item(f));
      }
      __syncthreads();  // the previous tile's reads of `stage` are done
#pragma unroll
      for (int m = 0; m < G::kLoads; ++m) {
        const int f = static_cast<int>(threadIdx.x) + kTransposeBlock * m;
        if (needed(f)) stage[slot(f)] = v[m];
      }
    } else {  // the edges of the matrix: chunks that cross its start or end element by element
      __syncthreads();  // the previous tile's reads of `stage` are done
#pragma unroll 1
      for (int f = static_cast<int>(threadIdx.x); f < G::kLoadItems; f += kTransposeBlock)
        if (needed(f)) stage[slot(f)] = load_chunk_clamped<U, 4>(in, item(f), n);
    }
    __syncthreads();

    const int64_t rs = tr * G::kTile - own + G::kVec * kk;  // first element of the chunks
    // (two passes at a time: fully unrolled, the column-order kernel took 74 registers, 3 blocks)
#pragma unroll 2
    for (int i = 0; i < G::kStores; ++i) {
      const int64_t c = c0 + cq + G::kOutRowsPerPass * i;
      if (c < cols) {
        // x[j]: element (j + rot) & 3; w.elem[e] = x[(e - rot) & 3]: rotated by rot & 1 into
        // y, then by rot & 2 into w
        uint32_t x[G::kVec], y[G::kVec];
#pragma unroll
        for (int j = 0; j < G::kVec; ++j)
          x[j] = words[rd[j] + G::kOutRowsPerPass * i];
#pragma unroll
        for (int e = 0; e < G::kVec; ++e)
          y[e] = (rot & 1) ? x[(e + 3) & 3] : x[e];
        Chunk w;
#pragma unroll
        for (int e = 0; e < G::kVec; ++e)
          w.elem[e] = (rot & 2) ? y[(e + 2) & 3] : y[e];
        const int64_t o = c * rows + rs;
        if (rs >= 0 && rs + G::kVec <= rows) {
          store_chunk(out + o, w);
        } else {  // the first or last rows of the matrix
#pragma unroll
          for (int j = 0; j < G::kVec; ++j)
            if (rs + j >= 0 && rs + j < rows) out[o + j] = static_cast<U>(w.elem[j]);
        }
      }
    }
  }
}

}  // namespace kernelkit::detail
