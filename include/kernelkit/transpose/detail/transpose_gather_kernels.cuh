// SPDX-License-Identifier: Apache-2.0
// The gather kernel of transpose (transpose_gather_kernel<U, FlatOut>): any shape, any
// element-aligned pointers, 1-, 2-, 4- and 8-byte elements, 16-byte accesses on both sides.
//
// A block owns a tile of out and writes it as 16-byte chunks aligned in out's memory; each
// chunk's elements are gathered one by one from shared memory, where the in rows the tile needs
// were staged as the aligned 16-byte chunks that cover them (cp.async on sm_80+). Out is owned
// in whole 32-byte sectors (no sector is written by two blocks, but the one where an out row
// ends and the next begins in tiles of out rows), so a tile needs a few in rows (or columns)
// past its own. Two ways to cut out into tiles, the template argument FlatOut:
//  - rows (FlatOut = false): tile (R, C) owns out rows c in [C Tc, C Tc + Tc) and, in out row c,
//    the Tr elements r with r + s_c in [R Tr, R Tr + Tr), where s_c is out row c's sector phase
//    (its first element's position in a 32-byte sector). It stages in rows [R Tr - (kSec - 1),
//    R Tr + Tr), columns [C Tc, C Tc + Tc): row by row, or (flat_in: the tile spans all
//    columns, cols <= 64) as the one run of in those rows are.
//  - flat (FlatOut = true; few rows, all of them in every tile): tile C owns the out elements
//    whose flat index o lies in [C Tc rows - s, C Tc rows + Tc rows - s), s the sector phase of
//    out: out rows of a few elements are one run, written as whole chunks whatever the row
//    boundaries. It stages columns [C Tc - h, C Tc + Tc) of every row, h = ceil(s / rows).
// Each staged row keeps its chunks' alignment (its first element at its own byte phase), so an
// element's shared-memory address is no simple function of its row; but every tile stages the
// same pattern (tile origins are multiples of 16 bytes along in rows and of a sector along out),
// so each thread works out the addresses of its first chunk's elements once, and its later
// chunks are a constant offset away (tiles of out rows: cq_threads columns on, a multiple of a
// sector, or kk_threads chunks further down one run; flat: chunk k and k + rows hold the same
// elements kVec columns apart).
//
// The kernel is two phases a tile, stage and store, split by __syncthreads(); both are
// __host__ __device__ member functions of TransposeGatherThread, one object per thread, so that
// the plan tests run the kernel's own code on the host for every thread of every tile.
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/transpose/detail/transpose_kernels.cuh"

namespace kernelkit {

/// The gather kernel's numbers (plan_transpose makes them; the kernel's argument). Element
/// counts unless said otherwise; kSec = 32 / sizeof(T) (elements of a 32-byte sector), kVec =
/// 16 / sizeof(T).
struct TransposeGatherShape {
  int64_t rows = 0;         ///< rows of in
  int64_t cols = 0;         ///< columns of in
  int64_t tiles_minor = 0;  ///< tiles a major step of the tile order (transpose_tile_at)
  int64_t num_tiles = 0;    ///< tiles in all; one block each, grid-stride past the grid
  int tile_r = 0;           ///< rows: owned rows of a tile (Tr, a multiple of kSec); flat: rows
  int tile_c = 0;           ///< owned columns of a tile (Tc; a multiple of kSec, or cols (flat_in))
  int staged_rows = 0;      ///< rows staged a tile (rows: Tr + kSec - 1; flat: rows)
  int pitch = 0;         ///< row by row: bytes of a staged row's slots (transpose_gather_row_slot)
  int pad_shift = 0;     ///< row by row: one spare 16-byte slot every 2^pad_shift staged rows
  int kk_threads = 0;    ///< rows: threads along an out row's owned chunks in a pass
  int cq_threads = 0;    ///< rows: out rows a pass
  bool flat_in = false;  ///< rows: in rows staged as one run (one tile column, cols <= 64)
  bool col_order = false;  ///< tiles numbered down the tile columns (transpose_tile_at)
};

namespace detail {

// ---- host-callable device primitives ---------------------------------------------------------

// Host runs of the kernel's code (the plan tests' emulator) may watch its global accesses:
// called with the address and the bytes of each load of in and of each 16-byte store to out
// (store true) (host only; never set by the library).
inline thread_local void (*transpose_gather_hook)(const void* p, int bytes, bool store) = nullptr;

// __byte_perm (the host form: the plan tests run the gather kernel's code on the host).
__host__ __device__ __forceinline__ uint32_t transpose_prmt(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t xy = (uint64_t{y} << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i)
    r |= static_cast<uint32_t>((xy >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
  return r;
#endif
}

// 16 bytes of global memory to shared memory: cp.async (a plain copy before sm_80 and on the
// host).
__host__ __device__ __forceinline__ void transpose_copy16(void* smem, const void* g) {
#if defined(__CUDA_ARCH__)
  __pipeline_memcpy_async(smem, g, 16);
#else
  memcpy(smem, g, 16);
#endif
}

// One 16-byte global store (st.global.v4: see store_chunk).
__host__ __device__ __forceinline__ void transpose_store16(void* p, const Pack<uint32_t, 4>& w) {
#if defined(__CUDA_ARCH__)
  uint4 x;
  memcpy(&x, &w, sizeof(x));
  __stwb(reinterpret_cast<uint4*>(p), x);
#else
  if (transpose_gather_hook) transpose_gather_hook(p, 16, true);
  memcpy(p, &w, sizeof(w));
#endif
}

// Bytes [a, a + S) of the 16-byte chunk w (S = 1, 2, 4, 8; a a multiple of S) to the same
// bytes of the 16-byte-aligned chunk at c, as one aligned S-byte store.
template <int S>
__host__ __device__ __forceinline__ void transpose_store_piece(unsigned char* c,
                                                               const Pack<uint32_t, 4>& w, int a) {
  bits_t<S> v;
  if constexpr (S == 8) {
    v = a & 8 ? (uint64_t{w.elem[3]} << 32 | w.elem[2]) : (uint64_t{w.elem[1]} << 32 | w.elem[0]);
  } else {
    const uint32_t lo = a & 4 ? w.elem[1] : w.elem[0], hi = a & 4 ? w.elem[3] : w.elem[2];
    v = static_cast<bits_t<S>>((a & 8 ? hi : lo) >> (8 * (a & 3)));
  }
#if !defined(__CUDA_ARCH__)
  if (transpose_gather_hook) transpose_gather_hook(c + a, S, true);
#endif
  *reinterpret_cast<bits_t<S>*>(c + a) = v;
}

// The S-byte stores of transpose_store_part: [lo, 16) is cut from lo upwards into aligned
// pieces of 1, 2, 4, 8 bytes (its piece of S bytes at lo rounded up to S, where that has bit S),
// [0, hi) from 0 into 8, 4, 2, 1 (its piece of S bytes at hi rounded down to 2S, where hi has
// bit S); [lo, hi) is exactly the pieces of either that lie inside it.
template <int S>
__host__ __device__ __forceinline__ void transpose_store_pieces(unsigned char* c,
                                                                const Pack<uint32_t, 4>& w, int lo,
                                                                int hi) {
  const int up = (lo + S - 1) & -S;
  if ((up & S) && up + S <= hi) transpose_store_piece<S>(c, w, up | S);
  const int down = hi & -(2 * S);
  if ((hi & S) && down >= lo) transpose_store_piece<S>(c, w, down);
}

// Bytes [lo, hi) of the 16-byte chunk w (0 <= lo < hi <= 16, multiples of E, the element's
// bytes; not the whole chunk, which is one 16-byte store) to the same bytes of the 16-byte-aligned
// chunk at p, as aligned 8-, 4-, 2- and 1-byte stores (no piece smaller than an element): at most
// one store of each size on each side of an out row boundary, 2 log2(16 / E) predicated stores in
// the code (8 for 1-byte elements, where a store a slot took 30; bench/NOTES.md, transpose).
template <int E>
__host__ __device__ __forceinline__ void transpose_store_part(void* p, const Pack<uint32_t, 4>& w,
                                                              int lo, int hi) {
  unsigned char* c = static_cast<unsigned char*>(p);
  transpose_store_pieces<8>(c, w, lo, hi);
  if constexpr (E <= 4) transpose_store_pieces<4>(c, w, lo, hi);
  if constexpr (E <= 2) transpose_store_pieces<2>(c, w, lo, hi);
  if constexpr (E == 1) transpose_store_pieces<1>(c, w, lo, hi);
}

// One side of a chunk, for a part that holds one end of an out row only (tiles of out rows: a
// chunk holds the first or the last row of the matrix, not both): the fewest aligned stores, the
// pieces of transpose_store_part's side whose places the side's bound fixes. Bytes [lo, 16) of w
// (0 < lo < 16, a multiple of E): 1 at lo, 2 at lo rounded up to 2 where that has bit 2, 4 at 4
// or 12, 8 at 8 (the last two immediates of the address, predicated).
template <int E>
__host__ __device__ __forceinline__ void transpose_store_tail(void* p, const Pack<uint32_t, 4>& w,
                                                              int lo) {
  unsigned char* c = static_cast<unsigned char*>(p);
  if (lo <= 8) transpose_store_piece<8>(c, w, 8);
  if constexpr (E <= 4) {
    if (lo <= 4) transpose_store_piece<4>(c, w, 4);
    if (lo > 8 && lo <= 12) transpose_store_piece<4>(c, w, 12);
  }
  if constexpr (E <= 2) {
    const int up = (lo + 1) & ~1;
    if (up & 2) transpose_store_piece<2>(c, w, up);
  }
  if constexpr (E == 1) {
    if (lo & 1) transpose_store_piece<1>(c, w, lo);
  }
}
// Bytes [0, hi) of w (0 < hi < 16, a multiple of E): 8 at 0, 4 at 0 or 8, 2 at hi rounded down
// to 4, 1 at hi rounded down to 2, each where hi has that bit.
template <int E>
__host__ __device__ __forceinline__ void transpose_store_head(void* p, const Pack<uint32_t, 4>& w,
                                                              int hi) {
  unsigned char* c = static_cast<unsigned char*>(p);
  if (hi & 8) transpose_store_piece<8>(c, w, 0);
  if constexpr (E <= 4) {
    if ((hi & 12) == 4) transpose_store_piece<4>(c, w, 0);
    if ((hi & 12) == 12) transpose_store_piece<4>(c, w, 8);
  }
  if constexpr (E <= 2) {
    if (hi & 2) transpose_store_piece<2>(c, w, hi & 12);
  }
  if constexpr (E == 1) {
    if (hi & 1) transpose_store_piece<1>(c, w, hi & 14);
  }
}

// The element of type U at byte offset a of shared memory (as unsigned bits).
template <typename U>
__host__ __device__ __forceinline__ U transpose_lds(const unsigned char* smem, int a) {
  return *reinterpret_cast<const U*>(smem + a);
}

// One 16-byte chunk of elements gathered from shared memory: element j at byte offset at(j).
// 2-byte elements: one PRMT a word; 1-byte: three.
template <typename U, typename At>
__host__ __device__ __forceinline__ Pack<uint32_t, 4> transpose_gather16(const unsigned char* smem,
                                                                         At at) {
  Pack<uint32_t, 4> w;
  if constexpr (sizeof(U) == 8) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const uint64_t v = transpose_lds<uint64_t>(smem, at(j));
      w.elem[2 * j] = static_cast<uint32_t>(v);
      w.elem[2 * j + 1] = static_cast<uint32_t>(v >> 32);
    }
  } else if constexpr (sizeof(U) == 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      w.elem[j] = transpose_lds<uint32_t>(smem, at(j));
  } else if constexpr (sizeof(U) == 2) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      w.elem[k] = transpose_prmt(transpose_lds<uint16_t>(smem, at(2 * k)),
                                 transpose_lds<uint16_t>(smem, at(2 * k + 1)), 0x5410u);
  } else {
    static_assert(sizeof(U) == 1, "elements of 1, 2, 4 or 8 bytes");
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t lo = transpose_prmt(transpose_lds<uint8_t>(smem, at(4 * k)),
                                         transpose_lds<uint8_t>(smem, at(4 * k + 1)), 0x0040u);
      const uint32_t hi = transpose_prmt(transpose_lds<uint8_t>(smem, at(4 * k + 2)),
                                         transpose_lds<uint8_t>(smem, at(4 * k + 3)), 0x0040u);
      w.elem[k] = transpose_prmt(lo, hi, 0x5410u);
    }
  }
  return w;
}

// ---- geometry ---------------------------------------------------------------------------------

// Passes of a tile over its owned chunks, at most (the plan takes 4, 2 or 1).
inline constexpr int kTransposeGatherMaxPasses = 4;
// Tiles of out rows staged row by row own this many rows (Tr): 128 for 1- and 2-byte
// elements (the sector halo, kSec - 1 rows, stays under an eighth of it for 2-byte ones), 64
// else. Their passes are then kTransposeBlock / (Tr / kVec) out rows apart: 32 bytes of a
// staged row for 1- and 2-byte elements, 64 for 4- and 8-byte ones, a constant of the kernel.
__host__ __device__ constexpr int transpose_gather_row_tile(int e) {
  return e <= 2 ? 128 : 64;
}
__host__ __device__ constexpr int transpose_gather_pass_bytes(int e) {
  return kTransposeBlock / (transpose_gather_row_tile(e) / (16 / e)) * e;
}

// Staging, row by row: a staged row takes pitch / 16 chunk slots (at least its aligned chunks:
// the columns' bytes plus one for the phase), its first element at its byte phase of its first
// slot, row rho from slot rho pitch / 16 + (rho >> pad_shift): one spare slot every 2^pad_shift
// rows, so that the rows a warp's lanes gather from at once (tiles of out rows: kVec rows apart;
// flat: gcd(kVec, rows) rows apart) start in distinct 16-byte bank groups.
constexpr int transpose_gather_pitch(int width, int e) {
  return 16 * ((width * e + 15) / 16 + 1);
}
__host__ __device__ constexpr int transpose_gather_row_slot(int rho,
                                                            const TransposeGatherShape& g) {
  return rho * (g.pitch / 16) + (rho >> g.pad_shift);
}
// Staging one run (flat_in): staged byte b of the run at b + 16 floor(b / (16 cols)) when cols is
// even (one spare chunk a kVec rows: rows kVec apart are 16 cols bytes apart, the same bank
// group without it), at b when cols is odd.
__host__ __device__ constexpr int transpose_gather_run_at(int b, int64_t cols) {
  return (cols & 1) ? b : b + 16 * (b / (16 * static_cast<int>(cols)));
}

// Dynamic shared memory of a gather tile.
constexpr int transpose_gather_smem_bytes(const TransposeGatherShape& g, int e) {
  if (g.flat_in) {
    const int run = 16 * (static_cast<int>(g.staged_rows * g.cols * e) / 16 + 2);  // >= its chunks
    return transpose_gather_run_at(run, g.cols) + 16;
  }
  return 16 * transpose_gather_row_slot(g.staged_rows, g) + 16;
}

// A tile: its owned origin and where its staged elements come from.
struct TransposeGatherTile {
  int64_t r0 = 0;    // rows: first owned row (R Tr; before the sector shift); flat: 0
  int64_t c0 = 0;    // first owned column (C Tc)
  int64_t rb = 0;    // staged row 0 is in row rb (rows: r0 - (kSec - 1); flat: 0)
  int64_t c_lo = 0;  // staged column 0 is in column c_lo (rows: c0; flat: c0 - h)
  int width = 0;     // staged columns a row (rows: Tc; flat: Tc + h)
};

// Register budget (blocks per SM) of the gather kernel: its loads are cp.async (no registers),
// so registers hold a chunk's element offsets and elements. 6 blocks (40 registers) for flat
// runs of 2-, 4- and 8-byte elements (5 for 2-byte ones on sm_80..sm_89: 4 bytes of spills at
// 40), 5 (48) for tiles of out rows and 1-byte flat runs (which spilled 4-72 bytes at 40 on
// sm_80..sm_100), 4 (64) for 1-byte tiles of out rows (24-40 bytes at 48); 1-byte elements on
// sm_100..sm_11x: 3 (80; 12-24 bytes at 48 and 64).
inline constexpr bool kTransposeGatherBlackwell = kCompiledArch >= 100 && kCompiledArch < 120;
// The budget on sm_90 (and the plan's estimate of the blocks an SM holds).
constexpr int transpose_gather_blocks(int elem_bytes, bool flat_out) {
  return elem_bytes == 1 ? (flat_out ? 5 : 4) : !flat_out ? 5 : 6;
}
template <typename U, bool FlatOut>
inline constexpr int kTransposeGatherMinBlocks = sizeof(U) == 1 && kTransposeGatherBlackwell ? 3
                                                 : sizeof(U) == 2 && FlatOut
                                                     ? transpose_arch_blocks(6, 5, 6)
                                                     : transpose_gather_blocks(sizeof(U), FlatOut);

// One thread of the gather kernel: its place in the block's layouts and the shared-memory
// addresses of its first chunk's elements (made once: every tile stages the same pattern,
// tile origins being multiples of 16 bytes along in rows and of a sector along out), and the two
// phases of a tile.
template <typename U, bool FlatOut>
class TransposeGatherThread {
 public:
  static constexpr int kE = static_cast<int>(sizeof(U));
  static constexpr int kVec = 16 / kE;  // elements a chunk
  static constexpr int kSec = 32 / kE;  // elements a sector
  using Chunk = Pack<uint32_t, 4>;

  // g: the plan's numbers; in_ph: byte phase of in (mod 16); out_sec: element phase of out
  // mod kSec; tid: thread index.
  __host__ __device__ TransposeGatherThread(const TransposeGatherShape& g, int in_ph, int out_sec,
                                            int tid)
      : tid_(tid), in_ph_(in_ph), out_sec_(out_sec) {
    if constexpr (FlatOut) {
      // Chunk k = p rows + u of a tile (p: period of kVec columns, u < rows) holds the
      // elements of chunk u, kVec columns on (16 bytes further in every staged row): thread
      // tid takes u = tid % rows and periods p0, p0 + G, ... (G = 256 / rows a pass).
      const int r_n = static_cast<int>(g.rows);
      u_ = tid % r_n;
      p0_ = tid / r_n;
      active_ = p0_ < kTransposeBlock / r_n;
      h_ = out_sec == 0 ? 0 : ceil_div(out_sec, r_n);
      key_ = static_cast<int>((in_ph - int64_t{h_} * kE) & 15);  // phase of in(0, c0 - h)
      // Element j of chunk u: flat index kVec u + j - s of the tile's run, i.e. staged column
      // x and row r with x rows + r = kVec u + j - s + h rows (>= 0).
      const int o = kVec * u_ - out_sec + h_ * r_n;
      int x = o / r_n, r = o - x * r_n;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        set_at(j, row_at(g, r) + x * kE);
        if (++r == r_n) {
          r = 0;
          ++x;
        }
      }
    } else {
      kk0_ = tid % g.kk_threads;
      cq0_ = tid / g.kk_threads;
      active_ = cq0_ < g.cq_threads;
      // phase of in(-(kSec - 1), 0), staged element (0, 0) of every tile
      key_ = static_cast<int>((in_ph - int64_t{kSec - 1} * g.cols * kE) & 15);
      // Out row c0 + cq0 (sector phase s, the same for cq0 + cq_threads b: cq_threads is a
      // multiple of kSec, or all columns), chunk kk0: staged rows kSec - 1 - s + kVec kk0 + j.
      s_ = (out_sec + (cq0_ & (kSec - 1)) * static_cast<int>(g.rows & (kSec - 1))) & (kSec - 1);
      const int rho0 = kSec - 1 - s_ + kVec * kk0_;
      if (g.flat_in) {
        // run byte b_j = key + ((rho0 + j) cols + cq0) e, and its spare chunks (even cols:
        // one per 16 cols bytes, counted once and then stepped)
        const int cols = static_cast<int>(g.cols);
        const int group = (cols & 1) ? 0x40000000 : 16 * cols;
        int b = key_ + (rho0 * cols + cq0_) * kE;
        int q = b / group, next = (q + 1) * group;
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          set_at(j, b + 16 * q);
          b += cols * kE;
          if (b >= next) {
            ++q;
            next += group;
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          set_at(j, row_at(g, rho0 + j) + cq0_ * kE);
      }
    }
  }

  // Tile t's origin and staged origin.
  __host__ __device__ TransposeGatherTile tile(const TransposeGatherShape& g, int64_t t) const {
    int64_t tr, tc;
    transpose_tile_at(t, g.tiles_minor, g.col_order, &tr, &tc);
    TransposeGatherTile T;
    T.c0 = tc * g.tile_c;
    if constexpr (FlatOut) {
      T.r0 = T.rb = 0;
      T.c_lo = T.c0 - h_;
      T.width = g.tile_c + h_;
    } else {
      T.r0 = tr * g.tile_r;
      T.rb = T.r0 - (kSec - 1);
      T.c_lo = T.c0;
      T.width = g.tile_c;
    }
    return T;
  }

  // Stage: copies the aligned 16-byte chunks of in that hold the tile's needed elements to
  // shared memory (cp.async; chunks that cross the start or the end of in element by element).
  __host__ __device__ void stage(const U* in, const TransposeGatherShape& g,
                                 const TransposeGatherTile& T, unsigned char* smem) const {
    const int64_t in_bytes = g.rows * g.cols * kE;
    if (!FlatOut && g.flat_in) {
      // Rows [rb, rb + staged_rows) of in are one run: staged byte b of the run is in's byte
      // rb cols e - key + b.
      const int64_t r_lo = T.rb > 0 ? T.rb : 0;
      const int64_t r_hi = T.rb + g.staged_rows < g.rows ? T.rb + g.staged_rows : g.rows;
      const int64_t origin = T.rb * g.cols * kE - key_;
      const int b_lo = key_ + static_cast<int>((r_lo - T.rb) * g.cols * kE);
      const int b_hi = key_ + static_cast<int>((r_hi - T.rb) * g.cols * kE);
      // chunks [j_lo, j_hi): inside in but at the ends of the matrix (then element by element);
      // chunk j at slot j + q, q = j / cols its spare chunks before it (even cols), stepped
      const int j_lo = b_lo >> 4, j_hi = (b_hi + 15) >> 4;
      const int group = (g.cols & 1) ? 1 << 30 : static_cast<int>(g.cols);
      int j = j_lo + tid_, q = j / group, rem = j - q * group;
      const int dq = kTransposeBlock / group, dr = kTransposeBlock - dq * group;
      const bool inside = origin + 16 * j_lo >= 0 && origin + 16 * int64_t{j_hi} <= in_bytes;
      for (; j < j_hi; j += kTransposeBlock) {
        if (inside) {
          copy16(in, origin + 16 * j, smem + 16 * (j + q));
        } else {
          copy_chunk(in, in_bytes, origin + 16 * j, smem + 16 * (j + q));
        }
        q += dq;
        rem += dr;
        if (rem >= group) {
          rem -= group;
          ++q;
        }
      }
      return;
    }
    // Row by row, 2^lanes threads a row (the fewest power of two >= half its chunks, 4 to 32:
    // each lane copies about two chunks, so that the row's offset arithmetic, which every lane
    // of the row does, is paid once for two copies): the rows whose chunks lie inside in, then
    // (tiles at the ends of the matrix) the others, element by element where a chunk crosses
    // the start or the end of in.
    const int chunks = (T.width * kE + 15) / 16 + 1;
    const int lanes = chunks > 32 ? 5 : chunks > 16 ? 4 : chunks > 8 ? 3 : 2;
    const int lane = tid_ & ((1 << lanes) - 1);
    const int x_lo = T.c_lo < 0 ? static_cast<int>(-T.c_lo) : 0;  // first column in in
    const int x_hi = g.cols - T.c_lo < T.width ? static_cast<int>(g.cols - T.c_lo) : T.width;
    bool edges = false;  // some row's chunks cross the start or the end of in
    for (int rho = tid_ >> lanes; rho < g.staged_rows; rho += kTransposeBlock >> lanes) {
      const int64_t r = T.rb + rho;
      if (r < 0 || r >= g.rows) continue;
      const int64_t first = (r * g.cols + T.c_lo) * kE;  // in's byte of staged (rho, 0)
      const int ph = static_cast<int>((in_ph_ + first) & 15);
      const int j_lo = (ph + x_lo * kE) >> 4, j_hi = (ph + x_hi * kE + 15) >> 4;
      const int64_t origin = first - ph;
      if (origin + 16 * j_lo < 0 || origin + 16 * j_hi > in_bytes) {
        edges = true;
        continue;
      }
      unsigned char* row = smem + 16 * transpose_gather_row_slot(rho, g);
      for (int j = j_lo + lane; j < j_hi; j += 1 << lanes)
        copy16(in, origin + 16 * j, row + 16 * j);
    }
    if (!edges) return;
    for (int rho = tid_ >> lanes; rho < g.staged_rows; rho += kTransposeBlock >> lanes) {
      const int64_t r = T.rb + rho;
      if (r < 0 || r >= g.rows) continue;
      const int64_t first = (r * g.cols + T.c_lo) * kE;
      const int ph = static_cast<int>((in_ph_ + first) & 15);
      const int j_lo = (ph + x_lo * kE) >> 4, j_hi = (ph + x_hi * kE + 15) >> 4;
      const int64_t origin = first - ph;
      if (origin + 16 * j_lo >= 0 && origin + 16 * j_hi <= in_bytes) continue;  // done above
      unsigned char* row = smem + 16 * transpose_gather_row_slot(rho, g);
      for (int j = j_lo + lane; j < j_hi; j += 1 << lanes)
        copy_chunk(in, in_bytes, origin + 16 * j, row + 16 * j);
    }
  }

  // Store: writes the tile's owned chunks of out, each gathered from the staged elements.
  __host__ __device__ void store(U* out, const TransposeGatherShape& g,
                                 const TransposeGatherTile& T, const unsigned char* smem) const {
    if (!active_) return;
    if constexpr (FlatOut) {
      store_flat(out, g, T, smem);
    } else {
      store_rows(out, g, T, smem);
    }
  }

  __host__ __device__ bool active() const {
    return active_;
  }
  // The shared-memory byte of element j of the thread's first chunk (the plan tests' bank model).
  __host__ __device__ int at(int j) const {
    if constexpr (kPacked) {
      return static_cast<int>((at_[j / 2] >> (16 * (j % 2))) & 0xFFFF);
    } else {
      return static_cast<int>(at_[j]);
    }
  }

 private:
  // Byte of staged element (rho, 0) (row by row): the row's slot and its phase.
  __host__ __device__ int row_at(const TransposeGatherShape& g, int rho) const {
    return 16 * transpose_gather_row_slot(rho, g) +
           static_cast<int>((key_ + rho * g.cols * kE) & 15);
  }

  // The aligned 16-byte chunk at byte offset off of in, which lies inside in, to dst.
  __host__ __device__ static void copy16(const U* in, int64_t off, unsigned char* dst) {
    const unsigned char* src = reinterpret_cast<const unsigned char*>(in) + off;
#if !defined(__CUDA_ARCH__)
    if (transpose_gather_hook) transpose_gather_hook(src, 16, false);
#endif
    transpose_copy16(dst, src);
  }

  // The aligned 16-byte chunk at byte offset off of in (off a multiple of 16 past in's own
  // phase; it may start before in or end past it) to dst.
  __host__ __device__ static void copy_chunk(const U* in, int64_t in_bytes, int64_t off,
                                             unsigned char* dst) {
    const unsigned char* src = reinterpret_cast<const unsigned char*>(in);
    if (off >= 0 && off + 16 <= in_bytes) {
      copy16(in, off, dst);
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        const int64_t b = off + int64_t{i} * kE;
        if (b >= 0 && b < in_bytes) {
#if !defined(__CUDA_ARCH__)
          if (transpose_gather_hook) transpose_gather_hook(src + b, kE, false);
#endif
          *reinterpret_cast<U*>(dst + i * kE) = *reinterpret_cast<const U*>(src + b);
        }
      }
    }
  }

  // Rows: out row c = c0 + cq, chunk kk of its owned rows [r0 - s, r0 - s + Tr): rows rs + j, rs
  // = r0 - s + kVec kk, staged rows kSec - 1 - s + kVec kk + j, staged column cq. Passes move
  // cq by cq_threads (16 cq_threads / kVec bytes along staged rows) or, in one run, kk by
  // kk_threads (kVec kk_threads staged rows: 16 kk_threads cols bytes of the run, plus its
  // spare chunks).
  __host__ __device__ void store_rows(U* out, const TransposeGatherShape& g,
                                      const TransposeGatherTile& T,
                                      const unsigned char* smem) const {
    const int vc = g.cols - T.c0 < g.tile_c ? static_cast<int>(g.cols - T.c0) : g.tile_c;
    const int64_t above = -T.r0, below = g.rows - T.r0;  // the matrix's rows, from r0
    const int rr0 = kVec * kk0_ - s_;
    U* dst = out + (T.c0 + cq0_) * g.rows + T.r0 + rr0;
    // (every element of a chunk is gathered, also where it lies past the first or the last row
    // of the matrix: those staged bytes lie inside the tile's stage, and are not stored; a
    // chunk that holds the first or the last row writes only its elements inside the matrix)
    if (!g.flat_in) {
      // Rows staged one by one: the thread's rows are the same in every pass (its out rows move
      // by cq_threads, its staged bytes by a constant, transpose_gather_pass_bytes), so the
      // element offsets are unpacked once, each element's shared-memory address a register
      // plus an immediate: 16 LDS and 12 PRMT a 16-byte chunk of 1-byte elements, no other
      // arithmetic (sm_90 SASS: 32-37 instructions a chunk, passes unrolled). So is its chunks'
      // part inside the matrix, [lo, hi) of kVec elements: a thread whose chunks hold the first
      // (lo > 0) or the last row (hi < kVec) of the matrix runs the same unrolled passes, its
      // part written as at most 4 stores, two of them at fixed places (transpose_store_tail,
      // transpose_store_head): a warp with edge lanes pays ~65 instructions a 1-byte chunk for
      // the gather, the 16-byte store and one side's part (was ~190: the whole lanes' passes and
      // then the edge lanes' passes as a loop with transpose_store_part). Tiles of out rows
      // (over 128 rows) never hold both ends in one chunk; forced plans of fewer rows loop.
      if (rr0 >= below || rr0 + kVec <= above) return;  // no row of the matrix
      const int lo = rr0 < above ? static_cast<int>(above - rr0) : 0;
      const int hi = rr0 + kVec > below ? static_cast<int>(below - rr0) : kVec;
      const int64_t d_dst = g.cq_threads * g.rows;
      constexpr int kPassBytes = transpose_gather_pass_bytes(kE);
      int a[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        a[j] = at(j);
      const auto chunk = [&](int k) {  // pass k's chunk
        return transpose_gather16<U>(smem, [&](int j) { return a[j] + k * kPassBytes; });
      };
      if (lo > 0 && hi < kVec) {  // both ends (a forced plan of few rows; not planned)
        // (a loop: in the unrolled passes below, a third kind of part spilled 2-byte tiles)
#pragma unroll 1
        for (int k = 0; k < kTransposeGatherMaxPasses && cq0_ + k * g.cq_threads < vc; ++k)
          transpose_store_part<kE>(dst + k * d_dst, chunk(k), lo * kE, hi * kE);
        return;
      }
      // the part of an edge chunk: [lo, kVec) (lo > 0) or [0, hi) as a byte bound b
      const int b = lo > 0 ? lo * kE : hi * kE;
#pragma unroll
      for (int k = 0; k < kTransposeGatherMaxPasses && cq0_ + k * g.cq_threads < vc; ++k) {
        const Chunk w = chunk(k);
        U* const p = dst + k * d_dst;
        if (lo == 0 && hi == kVec) {
          transpose_store16(p, w);
        } else if (lo > 0) {
          transpose_store_tail<kE>(p, w, b);
        } else {
          transpose_store_head<kE>(p, w, b);
        }
      }
      return;
    }
    // One run (flat_in: every column in the tile, cq0 < cq_threads = cols): a pass is kVec
    // kk_threads rows on, its staged bytes 16 kk_threads cols bytes of the run on, plus its
    // spare chunks.
    const int d_rr = kVec * g.kk_threads;
    const int d_at = transpose_gather_run_at(16 * g.kk_threads * static_cast<int>(g.cols), g.cols);
    const int rr_end = g.tile_r - s_;
    for (int rr = rr0, base = 0; rr < rr_end; rr += d_rr, base += d_at, dst += d_rr) {
      if (rr >= below || rr + kVec <= above) continue;
      const Chunk w = transpose_gather16<U>(smem, [&](int j) { return at(j) + base; });
      if (rr >= above && rr + kVec <= below) {
        transpose_store16(dst, w);
      } else {
        const int lo = rr < above ? static_cast<int>(above - rr) : 0;
        const int hi = rr + kVec > below ? static_cast<int>(below - rr) : kVec;
        transpose_store_part<kE>(dst, w, lo * kE, hi * kE);
      }
    }
  }

  // Flat: chunk k = p rows + u of the tile's run: out elements o + j, o = c0 rows - s + kVec k,
  // element j at at(j) + 16 p.
  __host__ __device__ void store_flat(U* out, const TransposeGatherShape& g,
                                      const TransposeGatherTile& T,
                                      const unsigned char* smem) const {
    const int64_t n = g.rows * g.cols;
    const int r_n = static_cast<int>(g.rows);
    const int periods = g.tile_c / kVec;
    const int step = kTransposeBlock / r_n;
    for (int p = p0_; p < periods; p += step) {
      const int64_t o = T.c0 * g.rows - out_sec_ + int64_t{kVec} * (int64_t{p} * r_n + u_);
      if (o >= n || o + kVec <= 0) continue;
      const int base = 16 * p;
      if (o >= 0 && o + kVec <= n) {
        transpose_store16(out + o,
                          transpose_gather16<U>(smem, [&](int j) { return at(j) + base; }));
      } else {  // the first or the last elements of out
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          if (o + j >= 0 && o + j < n) out[o + j] = transpose_lds<U>(smem, at(j) + base);
      }
    }
  }

  int tid_ = 0;
  int in_ph_ = 0;    // byte phase of in
  int out_sec_ = 0;  // element phase of out mod kSec (its first element's place in a sector)
  int key_ = 0;      // byte phase of every tile's staged element (0, 0)
  bool active_ = false;
  int kk0_ = 0, cq0_ = 0, s_ = 0;  // rows: first chunk, first out row, its sector phase
  int u_ = 0, p0_ = 0, h_ = 0;     // flat: chunk of a period, first period, staged columns left
  // The shared-memory byte of the first chunk's element j (at(j)); 2-byte elements keep two
  // 16-bit offsets a register. 1-byte elements keep one a register: packed, the rows kernel's
  // unpacked copy for its unrolled passes spilled 8-16 bytes on sm_90 / sm_100 (no spill at
  // 64 / 80 registers unpacked, on sm_80 .. sm_120).
  static constexpr bool kPacked = kE == 2;
  uint32_t at_[kPacked ? kVec / 2 : kVec] = {};
  __host__ __device__ void set_at(int j, int v) {
    if constexpr (kPacked) {
      at_[j / 2] |= static_cast<uint32_t>(v) << (16 * (j % 2));
    } else {
      at_[j] = static_cast<uint32_t>(v);
    }
  }
};

// in: rows x cols, out: cols x rows, any element-aligned pointers and shape (TransposeGatherShape
// and the file comment). Dynamic shared memory: transpose_gather_smem_bytes.
template <typename U, bool FlatOut>
__global__ void __launch_bounds__(kTransposeBlock,
                                  min_blocks_per_sm(kTransposeBlock,
                                                    kTransposeGatherMinBlocks<U, FlatOut>))
    transpose_gather_kernel(const U* __restrict__ in, U* __restrict__ out,
                            const TransposeGatherShape g) {
  extern __shared__ Pack<uint32_t, 4> transpose_gather_stage[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(transpose_gather_stage);
  constexpr int kSec = 32 / static_cast<int>(sizeof(U));
  const int in_ph = static_cast<int>(reinterpret_cast<uintptr_t>(in) & 15);
  const int out_sec = static_cast<int>((reinterpret_cast<uintptr_t>(out) / sizeof(U)) & (kSec - 1));
  const TransposeGatherThread<U, FlatOut> th(g, in_ph, out_sec, static_cast<int>(threadIdx.x));
  for (int64_t t = blockIdx.x; t < g.num_tiles; t += gridDim.x) {
    const TransposeGatherTile T = th.tile(g, t);
    __syncthreads();  // the previous tile's gathers are done
    th.stage(in, g, T, smem);
    __pipeline_commit();
    __pipeline_wait_prior(0);  // this thread's copies have landed
    __syncthreads();           // and every other thread's
    th.store(out, g, T, smem);
  }
}

}  // namespace detail
}  // namespace kernelkit
