// SPDX-License-Identifier: Apache-2.0
/// @file
/// Matrix transpose: out (cols x rows) = transpose of in (rows x cols), both row-major.
///
/// The four layers: TransposePlan / plan_transpose (every decision, pure host code),
/// launch_transpose (the plan becomes template arguments), transpose_args_ok (the argument
/// checks, shared with the ladder), transpose (the public function). Kernels live in
/// detail/transpose_kernels.cuh and detail/transpose_gather_kernels.cuh.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/transpose/detail/transpose_gather_kernels.cuh"
#include "kernelkit/transpose/detail/transpose_kernels.cuh"

namespace kernelkit {

/// How a transpose is carried out (one kernel each; detail/transpose_kernels.cuh,
/// detail/transpose_gather_kernels.cuh).
enum class TransposePath : int {
  kCopy,      ///< one row or one column, large: the same bytes in the same order
              ///< (cudaMemcpyAsync)
  kTile,      ///< rows and cols multiples of the chunk's elements, in and out chunk-aligned:
              ///< tiles of kVec x kVec register blocks whose shape follows the matrix
              ///< (transpose_tile_kernel)
  kThinRows,  ///< 2..8 rows: a thread holds all rows of kVec columns (transpose_thin_rows_kernel)
  kThinCols,  ///< 2..8 columns: a thread holds kVec rows of all columns
              ///< (transpose_thin_cols_kernel)
  kGather,    ///< any other shape and alignment: in staged as the aligned chunks that cover it,
              ///< out written in whole sectors of chunks gathered element by element
              ///< (transpose_gather_kernel)
};

/// Most rows (columns) the thin paths take.
inline constexpr int kTransposeThinMax = 8;

/// Everything one transpose call will do.
struct TransposePlan {
  TransposePath path = TransposePath::kCopy;  ///< the kernel family
  int elem_bytes = 0;                         ///< bytes per element (1, 2, 4, 8)
  int chunk_bytes = 0;       ///< bytes per global access: kTile 16 (8 for 1-byte elements);
                             ///< thin and gather 16; 0 for the copy
  bool out_aligned = false;  ///< kThinCols: every out row starts on a chunk boundary, so chunks
                             ///< are stored straight from registers (else staged)
  int thin = 0;              ///< kThinRows / kThinCols: the short side (2..kTransposeThinMax)
  bool flat_out = false;     ///< kGather: all rows in every tile, out written as one run a tile
                             ///< (few rows; else tiles of out rows; transpose_gather_kernels.cuh)
  int tile_rows = 0;         ///< in rows a tile owns (kTile: A kVec, A a power of two)
  int tile_cols = 0;         ///< in columns a tile owns (kTile: B kVec, A B = 256)
  int64_t tiles_c = 0;       ///< tiles along cols
  int64_t tiles_r = 0;       ///< tiles along rows (num_tiles = tiles_r tiles_c; tiled paths)
  bool col_order = false;    ///< kTile and kGather (tiles of out rows): tiles numbered down the
                             ///< tile columns (tile t: tile row t % tiles_r, tile column
                             ///< t / tiles_r) instead of along the tile rows (row t / tiles_c,
                             ///< column t % tiles_c); transpose_col_order
  int64_t num_tiles = 0;     ///< tiles in all; one block each, grid-stride past INT32_MAX
  int static_smem = 0;       ///< static shared memory of the kernel, bytes
  TransposeGatherShape gather;  ///< kGather: the kernel's numbers (its argument)
  LaunchShape shape;            ///< grid, block, dynamic shared memory (the gather kernel's stage;
                                ///< within the device's no-opt-in limit); no cluster
};

/// One kernel configuration of transpose: the template arguments launch_transpose gives a
/// kernel besides the element type (an entry of kTransposeConfigs). Fields a path does not
/// take are 0 / false.
struct TransposeConfig {
  int elem_bytes = 0;                         ///< 1, 2, 4, 8
  TransposePath path = TransposePath::kCopy;  ///< the kernel family
  int chunk_bytes = 0;                        ///< kTile: bytes per global access (8, 16)
  bool col_order = false;                     ///< kTile: tiles down the columns
  int thin = 0;                               ///< kThinRows, kThinCols: the short side (2..8)
  bool flat_out = false;                      ///< kGather: out written as one run a tile
};

/// Same kernel.
constexpr bool operator==(const TransposeConfig& a, const TransposeConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.path == b.path && a.chunk_bytes == b.chunk_bytes &&
         a.col_order == b.col_order && a.thin == b.thin && a.flat_out == b.flat_out;
}

namespace detail {
constexpr TransposeConfig transpose_tile_config(int elem_bytes, int chunk_bytes, bool col_order) {
  return {elem_bytes, TransposePath::kTile, chunk_bytes, col_order, 0, false};
}
constexpr TransposeConfig transpose_thin_rows_config(int elem_bytes, int thin) {
  return {elem_bytes, TransposePath::kThinRows, 0, false, thin, false};
}
constexpr TransposeConfig transpose_thin_cols_config(int elem_bytes, int thin) {
  return {elem_bytes, TransposePath::kThinCols, 0, false, thin, false};
}
constexpr TransposeConfig transpose_gather_config(int elem_bytes, bool flat_out) {
  return {elem_bytes, TransposePath::kGather, 0, false, 0, flat_out};
}
constexpr TransposeConfig transpose_copy_config(int elem_bytes) {
  return {elem_bytes, TransposePath::kCopy, 0, false, 0, false};
}
}  // namespace detail

/// Every kernel configuration transpose launches, each element size's entries together.
/// plan_transpose returns one of them (transpose_config), launch_transpose instantiates
/// exactly these, and the plan tests check that every plan is one and every one is planned
/// for some shape. Per element size: the copy; tiles of 16-byte chunks (8-byte for 1-byte
/// elements) in row and column order; 2..8 thin rows and thin columns; the gather kernel by
/// tiles of out rows and by runs of flat out.
inline constexpr TransposeConfig kTransposeConfigs[] = {
    // 1-byte elements
    detail::transpose_copy_config(1),
    detail::transpose_tile_config(1, 8, false),
    detail::transpose_tile_config(1, 8, true),
    detail::transpose_thin_rows_config(1, 2),
    detail::transpose_thin_rows_config(1, 3),
    detail::transpose_thin_rows_config(1, 4),
    detail::transpose_thin_rows_config(1, 5),
    detail::transpose_thin_rows_config(1, 6),
    detail::transpose_thin_rows_config(1, 7),
    detail::transpose_thin_rows_config(1, 8),
    detail::transpose_thin_cols_config(1, 2),
    detail::transpose_thin_cols_config(1, 3),
    detail::transpose_thin_cols_config(1, 4),
    detail::transpose_thin_cols_config(1, 5),
    detail::transpose_thin_cols_config(1, 6),
    detail::transpose_thin_cols_config(1, 7),
    detail::transpose_thin_cols_config(1, 8),
    detail::transpose_gather_config(1, false),
    detail::transpose_gather_config(1, true),
    // 2-byte elements
    detail::transpose_copy_config(2),
    detail::transpose_tile_config(2, 16, false),
    detail::transpose_tile_config(2, 16, true),
    detail::transpose_thin_rows_config(2, 2),
    detail::transpose_thin_rows_config(2, 3),
    detail::transpose_thin_rows_config(2, 4),
    detail::transpose_thin_rows_config(2, 5),
    detail::transpose_thin_rows_config(2, 6),
    detail::transpose_thin_rows_config(2, 7),
    detail::transpose_thin_rows_config(2, 8),
    detail::transpose_thin_cols_config(2, 2),
    detail::transpose_thin_cols_config(2, 3),
    detail::transpose_thin_cols_config(2, 4),
    detail::transpose_thin_cols_config(2, 5),
    detail::transpose_thin_cols_config(2, 6),
    detail::transpose_thin_cols_config(2, 7),
    detail::transpose_thin_cols_config(2, 8),
    detail::transpose_gather_config(2, false),
    detail::transpose_gather_config(2, true),
    // 4-byte elements
    detail::transpose_copy_config(4),
    detail::transpose_tile_config(4, 16, false),
    detail::transpose_tile_config(4, 16, true),
    detail::transpose_thin_rows_config(4, 2),
    detail::transpose_thin_rows_config(4, 3),
    detail::transpose_thin_rows_config(4, 4),
    detail::transpose_thin_rows_config(4, 5),
    detail::transpose_thin_rows_config(4, 6),
    detail::transpose_thin_rows_config(4, 7),
    detail::transpose_thin_rows_config(4, 8),
    detail::transpose_thin_cols_config(4, 2),
    detail::transpose_thin_cols_config(4, 3),
    detail::transpose_thin_cols_config(4, 4),
    detail::transpose_thin_cols_config(4, 5),
    detail::transpose_thin_cols_config(4, 6),
    detail::transpose_thin_cols_config(4, 7),
    detail::transpose_thin_cols_config(4, 8),
    detail::transpose_gather_config(4, false),
    detail::transpose_gather_config(4, true),
    // 8-byte elements
    detail::transpose_copy_config(8),
    detail::transpose_tile_config(8, 16, false),
    detail::transpose_tile_config(8, 16, true),
    detail::transpose_thin_rows_config(8, 2),
    detail::transpose_thin_rows_config(8, 3),
    detail::transpose_thin_rows_config(8, 4),
    detail::transpose_thin_rows_config(8, 5),
    detail::transpose_thin_rows_config(8, 6),
    detail::transpose_thin_rows_config(8, 7),
    detail::transpose_thin_rows_config(8, 8),
    detail::transpose_thin_cols_config(8, 2),
    detail::transpose_thin_cols_config(8, 3),
    detail::transpose_thin_cols_config(8, 4),
    detail::transpose_thin_cols_config(8, 5),
    detail::transpose_thin_cols_config(8, 6),
    detail::transpose_thin_cols_config(8, 7),
    detail::transpose_thin_cols_config(8, 8),
    detail::transpose_gather_config(8, false),
    detail::transpose_gather_config(8, true),
};

/// The entries of kTransposeConfigs for elem_bytes-byte elements: [begin, end).
constexpr ConfigRange transpose_configs_of(int elem_bytes) {
  return config_range(kTransposeConfigs, [elem_bytes](const TransposeConfig& c) {
    return c.elem_bytes == elem_bytes;
  });
}
static_assert(transpose_configs_of(1).end - transpose_configs_of(1).begin == 19 &&
                  transpose_configs_of(2).end - transpose_configs_of(2).begin == 19 &&
                  transpose_configs_of(4).end - transpose_configs_of(4).begin == 19 &&
                  transpose_configs_of(8).end - transpose_configs_of(8).begin == 19,
              "each element size's entries together");

/// The configuration plan p launches: p's fields that become template arguments, the others 0
/// / false. An entry of kTransposeConfigs for every plan plan_transpose makes;
/// launch_transpose answers cudaErrorInvalidValue for any other.
inline TransposeConfig transpose_config(const TransposePlan& p) {
  switch (p.path) {
    case TransposePath::kTile:
      return detail::transpose_tile_config(p.elem_bytes, p.chunk_bytes, p.col_order);
    case TransposePath::kThinRows:
      return detail::transpose_thin_rows_config(p.elem_bytes, p.thin);
    case TransposePath::kThinCols:
      return detail::transpose_thin_cols_config(p.elem_bytes, p.thin);
    case TransposePath::kGather:
      return detail::transpose_gather_config(p.elem_bytes, p.flat_out);
    default:
      return detail::transpose_copy_config(p.elem_bytes);
  }
}

namespace detail {

// Tile shape (A row blocks of kVec rows, B chunk columns; A B = 256, powers of two) for
// rows_v = rows / kVec and cols_v = ceil(cols / kVec): all rows in one tile when they fit in
// 32 row blocks (then a tile's out rows are one contiguous run and its in rows are read in
// runs of >= 8 chunks), likewise all columns, else 16 x 16.
inline void transpose_tile_shape(int64_t rows_v, int64_t cols_v, int* a, int* b) {
  if (rows_v <= 32 && rows_v <= cols_v) {
    *a = pow2_ceil(static_cast<int>(rows_v));
    *b = kTransposeBlock / *a;
  } else if (cols_v <= 32) {
    *b = pow2_ceil(static_cast<int>(cols_v));
    *a = kTransposeBlock / *b;
  } else {
    *a = *b = 16;
  }
}

// Tiles the device holds at once: its SMs x the most 256-thread blocks an SM holds (the wave of
// the tiled kernels).
inline int64_t transpose_wave(const DeviceInfo& d) {
  return int64_t{d.sm_count} * std::max(1, d.max_threads_per_sm / kTransposeBlock);
}

// The gather kernel's tiles (kGather; p.flat_out and p.elem_bytes set; p.gather.flat_in asks for
// one staged run in tiles of out rows, taken when cols <= 64). A tile owns about 16 KiB of out
// (four passes of its 256 threads over 16-byte chunks), fewer where the waves of tiles the
// device runs at once (its SMs x the blocks an SM holds of the kernel: registers, threads,
// shared memory of a four-pass tile) would then take less time (a small matrix, or one a little
// past a whole number of waves):
//  - flat (few rows): G = 256 / rows threads' worth of periods (kVec columns of all rows) a pass,
//    tile_c = kVec G passes, G passes even (tile_c a multiple of a sector);
//  - tiles of out rows, one staged run (cols <= 64): kk_threads = 256 / cols chunks along each
//    out row a pass, all cols out rows, tile_r = kVec kk_threads passes (kk_threads passes even);
//  - tiles of out rows, rows staged one by one: tile_r = 64 rows (128 for 1- and 2-byte
//    elements: the sector halo, kSec - 1 rows, stays under an eighth of it for 2-byte ones),
//    kk_threads = tile_r / kVec, cq_threads = 256 / kk_threads out rows a pass, tile_c =
//    cq_threads passes (64 f32, 32 f64, 64 f16, 128 1-byte: a staged row of 128-256 bytes).
inline TransposeGatherShape transpose_gather_geometry(int e, bool flat_out, bool flat_in,
                                                      int64_t rows, int64_t cols, int passes) {
  const int vec = 16 / e, sec = 32 / e;
  TransposeGatherShape g;
  g.rows = rows;
  g.cols = cols;
  if (flat_out) {
    const int r = static_cast<int>(rows);
    g.tile_r = r;
    g.tile_c = vec * (kTransposeBlock / r) * passes;
    g.staged_rows = r;
    const int h_max = ceil_div(sec - 1, r);  // staged columns left of a tile
    g.pitch = transpose_gather_pitch(g.tile_c + h_max, e);
    // A warp's lanes gather from rows kVec apart (mod rows): one spare slot every kVec rows (of
    // simple rules over the row slots, the fewest bank conflicts: 2.3-2.7-way on average over
    // 9..256 rows, 5-way at worst; the plan tests' bank model)
    g.pad_shift = ceil_log2(vec);
  } else if (flat_in) {
    const int c = static_cast<int>(cols);
    g.kk_threads = kTransposeBlock / c;
    g.cq_threads = c;
    g.flat_in = true;
    g.tile_r = vec * g.kk_threads * passes;
    g.tile_c = c;
    g.pitch = 0;  // (one run)
  } else {
    g.tile_r = transpose_gather_row_tile(e);
    g.kk_threads = g.tile_r / vec;
    g.cq_threads = kTransposeBlock / g.kk_threads;
    g.tile_c = g.cq_threads * passes;
    g.pitch = transpose_gather_pitch(g.tile_c, e);
    g.pad_shift = ceil_log2(vec);
  }
  if (!flat_out) g.staged_rows = g.tile_r + sec - 1;
  return g;
}

inline void transpose_gather_tiles(TransposePlan* p, int64_t rows, int64_t cols,
                                   const DeviceInfo& d) {
  const int e = p->elem_bytes, sec = 32 / e;
  const bool flat_out = p->flat_out, flat_in = !flat_out && p->gather.flat_in && cols <= 64;
  auto tiles_of = [&](const TransposeGatherShape& g, int64_t* tr, int64_t* tc) {
    if (flat_out) {
      // tile tc owns flat out [tc tile_c rows - s, ...), s < sec: the last tile ends past it
      *tr = 1;
      *tc = ceil_div<int64_t>(rows * cols + sec - 1, int64_t{g.tile_c} * rows);
    } else {
      *tr = ceil_div<int64_t>(rows + sec - 1, g.tile_r);
      *tc = ceil_div<int64_t>(cols, g.tile_c);
    }
  };
  // a pass count the mode takes: flat runs (one staged run) need G (kk_threads) x passes even,
  // tile_c (tile_r) a multiple of a sector
  const int per = flat_out  ? kTransposeBlock / static_cast<int>(rows)
                  : flat_in ? kTransposeBlock / static_cast<int>(cols)
                            : 2;
  TransposeGatherShape g =
      transpose_gather_geometry(e, flat_out, flat_in, rows, cols, kTransposeGatherMaxPasses);
  const int64_t smem = transpose_gather_smem_bytes(g, e) + d.smem_reserved_per_block;
  const int64_t per_sm = std::max<int64_t>(
      1, std::min<int64_t>({transpose_gather_blocks(e, flat_out),
                            d.max_threads_per_sm / kTransposeBlock, d.smem_per_sm / smem}));
  const int64_t resident = int64_t{d.sm_count} * per_sm;
  // The time of p passes a tile, in passes: the waves of tiles the device runs x (p + 1), the
  // one for a tile's start (its loads' latency, its barriers): four passes for large matrices,
  // fewer where that takes fewer waves' worth of time (ties: the larger tiles).
  int64_t tr = 1, tc = 1, best = INT64_MAX;
  for (int passes = kTransposeGatherMaxPasses; passes >= 1; passes /= 2) {
    if ((per * passes) % 2 != 0) break;
    const TransposeGatherShape q =
        transpose_gather_geometry(e, flat_out, flat_in, rows, cols, passes);
    int64_t qr, qc;
    tiles_of(q, &qr, &qc);
    const int64_t cost = ceil_div<int64_t>(qr * qc, resident) * (passes + 1);
    if (cost < best) {
      best = cost;
      g = q;
      tr = qr;
      tc = qc;
    }
  }
  p->tiles_r = tr;
  p->tiles_c = tc;
  p->tile_rows = g.tile_r;
  p->tile_cols = g.tile_c;
  p->gather = g;
  p->static_smem = 0;
}

// Fills in tile shape, tile counts, shared memory and launch shape of a plan whose path,
// elem_bytes, chunk_bytes, thin, out_aligned and flat_out (and gather.flat_in) are set; the tile
// order is row order (transpose_set_order sets another). Tests use it to run a path on shapes the
// plan would send elsewhere.
inline TransposePlan finish_transpose_plan(TransposePlan p, int64_t rows, int64_t cols,
                                           const DeviceInfo& d) {
  const int e = p.elem_bytes;
  size_t dynamic_smem = 0;
  p.col_order = false;
  switch (p.path) {
    case TransposePath::kCopy:
      p.tile_rows = p.tile_cols = 0;
      p.tiles_c = p.tiles_r = p.num_tiles = 0;
      p.static_smem = 0;
      p.shape = LaunchShape{};
      return p;
    case TransposePath::kTile: {
      const int vec = p.chunk_bytes / e;
      int a = 16, b = 16;
      transpose_tile_shape(rows / vec, ceil_div<int64_t>(cols, vec), &a, &b);
      p.static_smem = kTransposeBlock * vec * p.chunk_bytes;
      p.tile_rows = a * vec;
      p.tile_cols = b * vec;
      p.tiles_c = ceil_div<int64_t>(cols, p.tile_cols);
      p.tiles_r = ceil_div<int64_t>(rows, p.tile_rows);
      break;
    }
    case TransposePath::kThinRows:
    case TransposePath::kThinCols: {
      const int along = kTransposeBlock * transpose_thin_per_thread(p.thin) * (16 / e);
      p.static_smem = transpose_thin_smem_bytes(p.thin);
      if (p.path == TransposePath::kThinRows) {
        p.tile_rows = p.thin;
        p.tile_cols = along;
        p.tiles_c = ceil_div<int64_t>(cols, along);
        p.tiles_r = 1;
      } else {
        p.tile_rows = along;
        p.tile_cols = p.thin;
        p.tiles_c = 1;
        p.tiles_r = ceil_div<int64_t>(rows, along);
      }
      break;
    }
    case TransposePath::kGather:
      transpose_gather_tiles(&p, rows, cols, d);
      dynamic_smem = static_cast<size_t>(transpose_gather_smem_bytes(p.gather, e));
      break;
  }
  p.num_tiles = p.tiles_r * p.tiles_c;
  p.gather.num_tiles = p.num_tiles;
  p.gather.tiles_minor = p.tiles_c;
  p.gather.col_order = false;
  p.shape.grid = dim3(static_cast<unsigned>(grid_one_block_per_tile(p.num_tiles)));
  p.shape.block = dim3(kTransposeBlock);
  p.shape.smem = dynamic_smem;
  return p;
}

// Numbers plan p's tiles down the tile columns (col_order) or along the tile rows.
inline void transpose_set_order(TransposePlan* p, bool col_order) {
  p->col_order = col_order;
  p->gather.col_order = col_order;
  p->gather.tiles_minor = col_order ? p->tiles_r : p->tiles_c;
}

// Whether a tiled plan numbers its tiles down the tile columns (col_order). Resident blocks run
// about a wave of consecutive tiles at a time (wave: the device's SMs x the most 256-thread
// blocks an SM holds). In row order a wave reads whole in rows but writes each out row in
// pieces of tile_rows elements per tile row it spans; in column order it writes whole out rows
// and reads each in row in pieces of tile_cols per tile column. Row order stays unless the
// shorter of its two runs is under 2 KiB and column order's is longer: wide matrices of few
// tile rows (1000 x 33554: row order writes 256-512 bytes of each out row per wave, scattered
// over all of out; column order writes whole 1-8 KB out rows and reads 8-17 KB runs). Square
// and tall shapes keep row order (8192 x 8192 f32: 2 KiB runs either way).
inline bool transpose_col_order(const TransposePlan& p, int64_t rows, int64_t cols,
                                const DeviceInfo& d) {
  if (p.path != TransposePath::kTile && !(p.path == TransposePath::kGather && !p.flat_out))
    return false;
  if (p.tiles_r <= 1 || p.tiles_c <= 1) return false;  // the same order either way
  const int64_t wave = transpose_wave(d);
  const int64_t e = p.elem_bytes;
  // Contiguous bytes of one row that a wave moves: `tiles` consecutive tiles of `len` elements
  // each along a row of `whole` elements.
  auto run = [&](int64_t tiles, int64_t len, int64_t whole) {
    return std::min(whole, std::max<int64_t>(1, tiles) * len) * e;
  };
  const int64_t row_order = std::min(run(wave / p.tiles_c, p.tile_rows, rows),  // out rows
                                     run(wave, p.tile_cols, cols));             // in rows
  const int64_t col_order = std::min(run(wave / p.tiles_r, p.tile_cols, cols),  // in rows
                                     run(wave, p.tile_rows, rows));             // out rows
  return row_order < 2048 && col_order > row_order;
}

// The gather kernel takes a flat run of out for matrices of few rows: out rows of at most 256
// bytes, or at most 128 rows (tiles of all rows then stage about 16 KiB whatever the element
// size; tiles of out rows would own 64-128 rows and leave most threads of the last tile row
// without work).
inline bool transpose_gather_flat_out(int64_t rows, int elem_bytes) {
  return rows <= 128 || rows * elem_bytes <= 256;
}

}  // namespace detail

/// Bytes of one row or one column (the same bytes in the same order) from which the copy is
/// cudaMemcpyAsync: four times the L2 (H100: 200 MB). Below it the gather kernel copies them
/// (measured on the H100: cudaMemcpyAsync takes ~3 us more than the speed-of-light kernel, f64
/// 1 x 299772 8.7 us against 5.1, f32 1 x 11221078 31.6 against 28.7; 0.99-1.03 of it from
/// 113 MB).
inline int64_t transpose_copy_min_bytes(const DeviceInfo& d) {
  return 4 * int64_t{d.l2_bytes};
}

/// The plan for a rows x cols transpose of elem_bytes elements (1, 2, 4, 8; rows, cols >= 1)
/// whose pointers sit at `in` and `out` on the 16-byte grid (aligned to their elements). Pure
/// host code. Every kernel takes 256 threads and at most 48 KiB of shared memory
/// (d.smem_per_block, no opt-in); the gather kernel's tiles follow the device's wave on small
/// matrices.
inline TransposePlan plan_transpose(int64_t rows, int64_t cols, int elem_bytes, Alignment in,
                                    Alignment out, const DeviceInfo& d) {
  TransposePlan p;
  p.elem_bytes = elem_bytes;
  const int e = elem_bytes;
  // what every in row (cols elements apart) and every out row (rows apart) allows
  const Alignment in_rows = common_alignment(in, Alignment(cols * e));
  const Alignment out_rows = common_alignment(out, Alignment(rows * e));
  if (rows == 1 || cols == 1) {
    p.path = rows * cols * e >= transpose_copy_min_bytes(d) ? TransposePath::kCopy
                                                            : TransposePath::kGather;
  } else if (std::min(rows, cols) <= kTransposeThinMax) {
    // A few rows or columns: 16-byte accesses on both sides whatever the alignment.
    if (rows <= cols) {
      p.path = TransposePath::kThinRows;
      p.thin = static_cast<int>(rows);
    } else {
      p.path = TransposePath::kThinCols;
      p.thin = static_cast<int>(cols);
      p.out_aligned = out_rows.fits(16);
    }
  } else {
    // tiles: every in row and every out row starts on a chunk boundary
    const int wide = e == 1 ? 8 : 16;
    if (in_rows.fits(wide) && out_rows.fits(wide)) {
      p.path = TransposePath::kTile;
      p.chunk_bytes = wide;
    } else {
      p.path = TransposePath::kGather;
    }
  }
  if (p.path == TransposePath::kGather) {
    p.chunk_bytes = 16;
    p.flat_out = detail::transpose_gather_flat_out(rows, e);
    p.gather.flat_in = cols <= 64;
  } else if (p.path != TransposePath::kCopy && p.path != TransposePath::kTile) {
    p.chunk_bytes = 16;
  }
  p = detail::finish_transpose_plan(p, rows, cols, d);
  detail::transpose_set_order(&p, detail::transpose_col_order(p, rows, cols, d));
  return p;
}

/// Launches plan p (made for rows x cols, in and out) on stream; arguments already checked,
/// rows, cols >= 1. Elements move as bits_t of their size. The one place the plan's values
/// become template arguments, those of its entry of kTransposeConfigs (transpose_config; any
/// other plan, or one made for another element size, answers cudaErrorInvalidValue).
template <typename T>
cudaError_t launch_transpose(const TransposePlan& p, const T* in, T* out, int64_t rows,
                             int64_t cols, cudaStream_t stream) {
  using U = bits_t<sizeof(T)>;
  const U* src = reinterpret_cast<const U*>(in);
  U* dst = reinterpret_cast<U*>(out);
  using Path = TransposePath;
  constexpr ConfigRange kEntries = transpose_configs_of(sizeof(T));
  const int64_t minor = p.col_order ? p.tiles_r : p.tiles_c;  // tiles per major step
  // (the tile order is a template argument of the tile kernel: a run-time one cost the
  // register-capped tile kernels 4-36 bytes of spills on sm_100)
  return dispatch_table<kTransposeConfigs, kEntries.begin, kEntries.end>(
      transpose_config(p), [&](auto i) -> cudaError_t {
        constexpr TransposeConfig c = kTransposeConfigs[decltype(i)::value];
        if constexpr (c.path == Path::kCopy) {
          // Same layout on both sides: the copy itself (the benchmark's limit), a memcpy node
          // when captured in a graph.
          return cudaMemcpyAsync(dst, src, static_cast<size_t>(rows * cols) * sizeof(U),
                                 cudaMemcpyDefault, stream);
        } else if constexpr (c.path == Path::kTile) {
          const int a_log2 = ceil_log2(p.tile_rows / (c.chunk_bytes / c.elem_bytes));
          return launch(detail::transpose_tile_kernel<U, c.chunk_bytes, c.col_order>, p.shape,
                        stream, src, dst, rows, cols, a_log2, minor, p.num_tiles);
        } else if constexpr (c.path == Path::kThinRows) {
          return launch(detail::transpose_thin_rows_kernel<U, c.thin>, p.shape, stream, src, dst,
                        cols, p.num_tiles);
        } else if constexpr (c.path == Path::kThinCols) {
          return launch(detail::transpose_thin_cols_kernel<U, c.thin>, p.shape, stream, src, dst,
                        rows, p.out_aligned, p.num_tiles);
        } else {
          if (p.gather.rows != rows || p.gather.cols != cols) return cudaErrorInvalidValue;
          return launch(detail::transpose_gather_kernel<U, c.flat_out>, p.shape, stream, src, dst,
                        p.gather);
        }
      });
}

/// The argument checks of transpose (and its ladder): true when a call may go ahead. Empty
/// matrices (rows == 0 or cols == 0) pass whatever the pointers.
template <typename T>
bool transpose_args_ok(const T* in, const T* out, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return false;
  if (rows == 0 || cols == 0) return true;
  if (rows > INT64_MAX / cols) return false;
  const int64_t n = rows * cols;
  if (n > INT64_MAX / static_cast<int64_t>(sizeof(T))) return false;
  if (in == nullptr || out == nullptr) return false;
  // Aligned to the element's size (the kernels move it as one sizeof(T)-byte integer).
  using U = bits_t<sizeof(T)>;
  if (!is_element_aligned(reinterpret_cast<const U*>(in)) ||
      !is_element_aligned(reinterpret_cast<const U*>(out)))
    return false;
  const int64_t bytes = n * static_cast<int64_t>(sizeof(T));
  return !ranges_overlap(in, bytes, out, bytes);
}

/// out (cols x rows) = in (rows x cols) transposed: out[c * rows + r] = in[r * cols + c].
/// T: any trivially copyable type of 1, 2, 4 or 8 bytes (float, double, __half,
/// __nv_bfloat16, int8..int64, ...); bits are moved unchanged (NaN payloads included).
/// Preconditions, else cudaErrorInvalidValue before anything is launched or written:
/// rows, cols >= 0; rows * cols * sizeof(T) fits in int64_t; in and out non-null and aligned
/// to sizeof(T) when rows * cols > 0; in and out do not overlap (in-place transpose is not
/// offered). rows == 0 or cols == 0 does nothing. Every shape moves 16-byte chunks on both
/// sides at any alignment (8-byte chunks for 1-byte tiles of aligned rows, 4-byte ones for 1-
/// and 2-byte tiles of rows that are only 4-byte aligned): 2..8 rows or columns in registers;
/// rows and cols multiples of the chunk's elements with chunk-aligned pointers through
/// register-transposed tiles; any other shape staged in shared memory and written in whole
/// 32-byte sectors. A large matrix of one row or one column is a copy (cudaMemcpyAsync). No
/// allocation, no synchronization; graph-capturable.
/// @param in device pointer to the rows x cols matrix, row-major, rows contiguous
/// @param out device pointer to cols x rows elements, disjoint from in
/// @param rows rows of in (>= 0)
/// @param cols columns of in (>= 0)
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when transpose_args_ok fails (the preconditions above);
/// otherwise the error of reading the device's facts or of the launch.
template <typename T>
[[nodiscard]] cudaError_t transpose(const T* in, T* out, int64_t rows, int64_t cols,
                                    cudaStream_t stream = nullptr) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "transpose moves elements of 1, 2, 4 or 8 bytes");
  static_assert(std::is_trivially_copyable_v<T>, "transpose copies bits");
  KERNELKIT_REQUIRE(transpose_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const Alignment in_at = alignment_of(in), out_at = alignment_of(out);
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_transpose(rows, cols, sizeof(T), in_at, out_at, dev);
      },
      [&](const TransposePlan& p) { return launch_transpose(p, in, out, rows, cols, stream); });
}

}  // namespace kernelkit
