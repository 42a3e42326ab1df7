// Transpose kernels. Elements are moved as unsigned integers of their size (one kernel per
// element size: f32 and i32 share the 4-byte kernel), so these never look at values.
//
// Picked per call by detail::transpose_chunk_bytes:
//  - transpose_vec_kernel<U, ChunkBytes>: both global sides in chunks of ChunkBytes (16;
//    8 for 1-byte elements; 4 for 1- and 2-byte elements whose rows are only 4-byte
//    aligned). 256 threads as a 16 x 16 grid; each thread owns a kVec x kVec block of the
//    tile (kVec = elements per chunk) and transposes it in registers, so shared memory is
//    only written and read in whole chunks. Tile = 16 kVec x 16 kVec elements.
//  - transpose_shift_kernel<U> (4-byte elements whose rows are not 16-byte aligned): any
//    shape, 16-byte accesses on both sides, each row's chunk grid shifted by its own phase.
//  - transpose_scalar_kernel: 1-, 2- and 8-byte elements of any shape and alignment, one
//    element per access, a 64 x 64 tile with one word of padding per row.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"

namespace kernelkit {
namespace detail {

template <int Bytes>
struct TransposeBits;
template <>
struct TransposeBits<1> {
  using type = uint8_t;
};
template <>
struct TransposeBits<2> {
  using type = uint16_t;
};
template <>
struct TransposeBits<4> {
  using type = uint32_t;
};
template <>
struct TransposeBits<8> {
  using type = uint64_t;
};
template <int Bytes>
using transpose_bits_t = typename TransposeBits<Bytes>::type;

inline constexpr int kTransposeBlock = 256;

// The widest chunk for U: 16 bytes, 8 for 1-byte elements (8 x 8 bytes per thread keeps
// 16 registers of data and a 16 KB tile; 16-byte chunks would need a 64 KB tile).
template <typename U>
inline constexpr int kTransposeWideChunk = sizeof(U) == 1 ? 8 : 16;

// Geometry of the chunked path for elements of type U moved in chunks of ChunkBytes.
template <typename U, int ChunkBytes>
struct TransposeVecGeometry {
  static constexpr int kChunkBytes = ChunkBytes;
  static constexpr int kVec = kChunkBytes / static_cast<int>(sizeof(U));  // elements per chunk
  static constexpr int kSide = 16;                                        // chunks per tile row
  static constexpr int kTile = kSide * kVec;                              // tile side, elements
  static_assert(kVec >= 2, "a chunk holds at least two elements");
  static_assert(kSide * kSide == kTransposeBlock, "one kVec x kVec block per thread");
  // A chunk is held as words: 32-bit words for 1-, 2- and 4-byte elements (so 1- and
  // 2-byte elements are repacked with byte permutes), 64-bit words for 8-byte ones.
  using Word = std::conditional_t<sizeof(U) == 8, uint64_t, uint32_t>;
  static constexpr int kWords = kChunkBytes / static_cast<int>(sizeof(Word));
  using Chunk = Pack<Word, kWords>;
};

// Column m of the kVec x kVec block held in v (v[k] = row k, kVec elements of U each), as
// one chunk: element k of the result is element m of v[k].
template <typename U, typename Chunk>
__device__ __forceinline__ Chunk transpose_block_column(const Chunk* v, int m) {
  Chunk w;
  constexpr int kWords = sizeof(Chunk) / sizeof(w.elem[0]);
  if constexpr (sizeof(U) == sizeof(w.elem[0])) {
    // 4- and 8-byte elements: one element per word.
#pragma unroll
    for (int k = 0; k < kWords; ++k)
      w.elem[k] = v[k].elem[m];
  } else if constexpr (sizeof(U) == 2) {
    // Word j of the result = (row 2j, row 2j+1) at column m; column m is the low (m even)
    // or high half of word m / 2.
    const uint32_t sel = (m & 1) ? 0x7632u : 0x5410u;
#pragma unroll
    for (int j = 0; j < kWords; ++j)
      w.elem[j] = __byte_perm(v[2 * j].elem[m / 2], v[2 * j + 1].elem[m / 2], sel);
  } else {
    static_assert(sizeof(U) == 1, "element of 1, 2, 4 or 8 bytes");
    // Word j = rows 4j .. 4j+3 at column m, which is byte m % 4 of word m / 4 of each.
    const uint32_t b = static_cast<uint32_t>(m & 3);
    const uint32_t pair = b | ((b + 4) << 4);  // bytes 0, 1 = byte b of x, byte b of y
#pragma unroll
    for (int j = 0; j < kWords; ++j) {
      const uint32_t lo = __byte_perm(v[4 * j].elem[m / 4], v[4 * j + 1].elem[m / 4], pair);
      const uint32_t hi = __byte_perm(v[4 * j + 2].elem[m / 4], v[4 * j + 3].elem[m / 4], pair);
      w.elem[j] = __byte_perm(lo, hi, 0x5410u);
    }
  }
  return w;
}

inline constexpr int kTransposeScalarTile = 64;  // scalar path: 64 x 64 elements per tile
// grid cap (waves of resident blocks) high enough for one block per tile at any shape
inline constexpr int kTransposeWaves = INT32_MAX;
inline constexpr int kTransposeScalarWarpRows = kTransposeBlock / 32;

// The chunk size the chunked kernel can use for this call, 0 for the scalar kernel: every
// row of in and of out must start on a chunk boundary (cols and rows multiples of the
// chunk's element count, both pointers chunk-aligned). The wide chunk first; 1- and 2-byte
// elements then fall back to 4-byte chunks, so their accesses stay at least 4 bytes wide
// wherever alignment allows. Host, pure.
template <typename U>
inline int transpose_chunk_bytes(const void* in, const void* out, int64_t rows, int64_t cols) {
  const int pack = pack_size_for(static_cast<const U*>(in), static_cast<const U*>(out));
  for (const int bytes : {kTransposeWideChunk<U>, 4}) {
    const int vec = bytes / static_cast<int>(sizeof(U));
    if (vec >= 2 && rows % vec == 0 && cols % vec == 0 && pack >= vec) return bytes;
  }
  return 0;
}

// Shared-memory slot (in chunks) of chunk j of tile row r; the tile holds kTile x 16
// chunks. Both access patterns must be conflict-free: the stores (a warp writes two
// tile rows r, r + 1, chunks 0..15 each) and the loads (lanes a = 0..15 read rows
// kVec*a + k, chunk b; the other half-warp chunk b + 1).
//  - 8- and 16-byte chunks: a row is 128 or 256 bytes, so only the position in the row
//    matters; XOR by (r / kVec) & 15 gives the 16 rows of a load 16 distinct positions.
//  - 4-byte chunks: a row is 64 bytes, two rows share a 128-byte bank line; the slot in
//    the line ((r & 1) * 16 + j) is XORed by 2 * ((r / kVec) & 15), which is the same for
//    both rows of a line (kVec is even), spreads the 16 rows of a load over even
//    positions and leaves the +1 of the other half-warp's odd chunk to the odd ones.
template <int ChunkBytes, int Vec>
__device__ __forceinline__ int transpose_smem_slot(int r, int j) {
  if constexpr (ChunkBytes >= 8) {
    return r * 16 + (j ^ ((r / Vec) & 15));
  } else {
    static_assert(Vec % 2 == 0, "two rows of a line share the swizzle");
    return (r / 2) * 32 + (((r & 1) * 16 + j) ^ (((r / Vec) & 15) * 2));
  }
}

// in: rows x cols, out: cols x rows, both chunk-aligned with rows, cols multiples of kVec.
// Tiles are numbered row-band major (t / tiles_c = tile row); grid-stride over tiles.
template <typename U, int ChunkBytes>
__global__ void __launch_bounds__(kTransposeBlock)
    transpose_vec_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows, int64_t cols,
                         int64_t tiles_c, int64_t num_tiles) {
  using G = TransposeVecGeometry<U, ChunkBytes>;
  constexpr int kVec = G::kVec, kSide = G::kSide, kTile = G::kTile, kWords = G::kWords;
  using Word = typename G::Word;
  using Chunk = typename G::Chunk;
  const Word* in_w = reinterpret_cast<const Word*>(in);
  Word* out_w = reinterpret_cast<Word*>(out);
  __shared__ Chunk tile[kTile * kSide];

  const int lane = threadIdx.x % kSide;   // load: chunk in row; read back: a (row block)
  const int group = threadIdx.x / kSide;  // load: first row;    read back: b (column block)
  const int64_t cols_v = cols / kVec, rows_v = rows / kVec;  // chunks per in / out row

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const int64_t r0 = (t / tiles_c) * kTile, c0 = (t % tiles_c) * kTile;

    // Load: thread reads chunk `lane` of tile rows group + kSide * i. A warp reads two
    // whole tile rows (2 x 16 chunks), contiguous in memory.
    Chunk v[kVec];
    const int64_t c = c0 + lane * kVec;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const int64_t r = r0 + group + kSide * i;
      if (r < rows && c < cols) v[i] = load_pack<kWords>(in_w, r * cols_v + c / kVec);
    }
    __syncthreads();  // the previous tile's reads of `tile` are done
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const int r = group + kSide * i;
      tile[transpose_smem_slot<ChunkBytes, kVec>(r, lane)] = v[i];
    }
    __syncthreads();

    // Read back: thread (a = lane, b = group) takes the kVec x kVec block of tile rows
    // kVec*a .. kVec*a + kVec-1, chunk b: v[k].elem[m] = in(r0 + kVec*a + k, c0 + kVec*b + m).
    const int a = lane, b = group;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const int r = kVec * a + k;
      v[k] = tile[transpose_smem_slot<ChunkBytes, kVec>(r, b)];
    }
    // Out row c0 + kVec*b + m, chunk a holds column kVec*b + m of those kVec rows. Lanes
    // 0..15 of a warp write 16 consecutive chunks of one out row.
    const int64_t out_chunk = r0 / kVec + a;
    if (r0 + kVec * a < rows) {
#pragma unroll
      for (int m = 0; m < kVec; ++m) {
        const int64_t oc = c0 + kVec * b + m;
        const Chunk w = transpose_block_column<U>(v, m);
        if (oc < cols) store_pack<kWords>(out_w, oc * rows_v + out_chunk, w);
      }
    }
  }
}

// Shared-memory word for the scalar path: 1-, 2- and 4-byte elements each take a 32-bit
// word, so a padded row (65 words) shifts each row by one bank and a column read is
// conflict-free; 8-byte elements take two words (a column read of 16 lanes is then
// conflict-free per half-warp).
template <typename U>
using transpose_scalar_smem_t = std::conditional_t<sizeof(U) == 8, uint64_t, uint32_t>;

// Any shape, any alignment (the library sends 1-, 2- and 8-byte elements here). 256
// threads as 32 x 8; each thread moves 2 x 8 elements of a 64 x 64 tile; lanes run along
// in rows on the load and along out rows on the store. Register budget: 6 resident blocks
// (40 registers), 4 (64) for 8-byte elements, which spill at 40; capping 4-byte elements
// at 32 registers (8 blocks) spilled and took 1.3x as long (bench/notes/transpose.md).
template <typename U>
__global__ void __launch_bounds__(kTransposeBlock, sizeof(U) == 8 ? 4 : 6)
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
  static constexpr int kSmem = kLdRows * kRowElems + kVec * ((kLdRows + kVec - 1) / kVec);
  static constexpr int kLoadItems = kLdRows * kChunks;
  static constexpr int kLoads = (kLoadItems + kTransposeBlock - 1) / kTransposeBlock;
  static constexpr int kOutChunks = kTile / kVec;  // chunks per owned out row
  static constexpr int kOutRowsPerPass = kTransposeBlock / kOutChunks;
  static constexpr int kStores = kTile / kOutRowsPerPass;
  static_assert(kVec >= 2 && (kVec & (kVec - 1)) == 0, "chunk holds a power of two >= 2");
  static_assert(kTransposeBlock % kOutChunks == 0 && kTile % kOutRowsPerPass == 0,
                "every owned out chunk has one thread");
  __device__ static __forceinline__ int slot(int rho, int s) {
    return rho * kRowElems + kVec * (rho / kVec) + s;
  }
};

template <typename U>
__global__ void __launch_bounds__(kTransposeBlock)
    transpose_shift_kernel(const U* __restrict__ in, U* __restrict__ out, int64_t rows,
                           int64_t cols, int64_t tiles_c, int64_t num_tiles) {
  using G = TransposeShiftGeometry<U>;
  constexpr int kVec = G::kVec, kTile = G::kTile, kChunks = G::kChunks;
  using P = Pack<U, kVec>;
  __shared__ P tile_p[G::kSmem / kVec];
  U* tile = reinterpret_cast<U*>(tile_p);

  const int in_ph = static_cast<int>((reinterpret_cast<uintptr_t>(in) / sizeof(U)) % kVec);
  const int out_ph = static_cast<int>((reinterpret_cast<uintptr_t>(out) / sizeof(U)) % kVec);
  const int cols_m = static_cast<int>(cols % kVec), rows_m = static_cast<int>(rows % kVec);
  const int kk = threadIdx.x % G::kOutChunks;  // store: chunk within the owned out row
  const int cq = threadIdx.x / G::kOutChunks;  // store: first owned out row

  for (int64_t t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const int64_t tr = t / tiles_c, tc = t % tiles_c;
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
          // A plain 16-byte store here (Pack or uint4) was split into 4-byte stores merged
          // with the edge path below (checked in the PTX); __stwb keeps st.global.v4.
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

// The shifted-tile kernel on any shape (element-aligned pointers, rows, cols > 1).
template <typename U>
cudaError_t launch_transpose_shift(const U* in, U* out, int64_t rows, int64_t cols,
                                   cudaStream_t stream) {
  using G = TransposeShiftGeometry<U>;
  const int64_t tiles_c = ceil_div<int64_t>(cols, G::kTile);
  const int64_t num_tiles = ceil_div<int64_t>(rows + G::kVec - 1, G::kTile) * tiles_c;
  int grid = 0;
  const int64_t work =
      num_tiles > INT64_MAX / kTransposeBlock ? INT64_MAX : num_tiles * kTransposeBlock;
  KERNELKIT_RETURN_IF_ERROR(grid_size(work, kTransposeBlock, &grid, kTransposeWaves));
  transpose_shift_kernel<U>
      <<<grid, kTransposeBlock, 0, stream>>>(in, out, rows, cols, tiles_c, num_tiles);
  return cudaGetLastError();
}

// Launches the kernel for element type U; arguments already checked, rows, cols > 1.
template <typename U>
cudaError_t launch_transpose(const U* in, U* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  const int chunk = transpose_chunk_bytes<U>(in, out, rows, cols);
  if constexpr (sizeof(U) == 4) {
    // Any other 4-byte shape: 16-byte accesses on shifted chunk grids.
    if (chunk == 0) return launch_transpose_shift(in, out, rows, cols, stream);
  }
  const int64_t side = chunk == kTransposeWideChunk<U>
                           ? TransposeVecGeometry<U, kTransposeWideChunk<U>>::kTile
                       : chunk == 4 ? 16 * 4 / static_cast<int64_t>(sizeof(U))
                                    : kTransposeScalarTile;
  const int64_t tiles_c = ceil_div(cols, side);
  const int64_t num_tiles = ceil_div(rows, side) * tiles_c;
  int grid = 0;
  // One block per tile (the block scheduler balances them; capping the grid at 32 waves
  // and striding 2 tiles a block was 0.7 % slower at 16384^2 and 4096 x 65536,
  // bench/NOTES.md); the grid stride covers only grids past the int limit.
  const int64_t work =
      num_tiles > INT64_MAX / kTransposeBlock ? INT64_MAX : num_tiles * kTransposeBlock;
  KERNELKIT_RETURN_IF_ERROR(grid_size(work, kTransposeBlock, &grid, kTransposeWaves));
  if (chunk == kTransposeWideChunk<U>) {
    transpose_vec_kernel<U, kTransposeWideChunk<U>>
        <<<grid, kTransposeBlock, 0, stream>>>(in, out, rows, cols, tiles_c, num_tiles);
  } else if constexpr (sizeof(U) < 4) {
    if (chunk == 4) {
      transpose_vec_kernel<U, 4>
          <<<grid, kTransposeBlock, 0, stream>>>(in, out, rows, cols, tiles_c, num_tiles);
    } else {
      transpose_scalar_kernel<U>
          <<<grid, kTransposeBlock, 0, stream>>>(in, out, rows, cols, tiles_c, num_tiles);
    }
  } else if constexpr (sizeof(U) == 8) {
    transpose_scalar_kernel<U>
        <<<grid, kTransposeBlock, 0, stream>>>(in, out, rows, cols, tiles_c, num_tiles);
  }
  return cudaGetLastError();
}

}  // namespace detail
}  // namespace kernelkit
