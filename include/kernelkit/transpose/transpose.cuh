// SPDX-License-Identifier: Apache-2.0
/// @file
/// Matrix transpose: out (cols x rows) = transpose of in (rows x cols), both row-major.
///
/// The four layers: TransposePlan / plan_transpose (every decision, pure host code),
/// launch_transpose (the plan becomes template arguments), transpose_args_ok (the argument
/// checks, shared with the ladder), transpose (the public function). Kernels live in
/// detail/transpose_kernels.cuh.
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
#include "kernelkit/transpose/detail/transpose_kernels.cuh"

namespace kernelkit {

/// How a transpose is carried out (one kernel each; detail/transpose_kernels.cuh).
enum class TransposePath : int {
  kCopy,      ///< one row or one column: the same bytes in the same order (cudaMemcpyAsync)
  kTile,      ///< rows a multiple of the chunk's elements and out chunk-aligned: tiles of kVec x
              ///< kVec register blocks whose shape follows the matrix (transpose_tile_kernel)
  kThinRows,  ///< 2..8 rows: a thread holds all rows of kVec columns (transpose_thin_rows_kernel)
  kThinCols,  ///< 2..8 columns: a thread holds kVec rows of all columns
              ///< (transpose_thin_cols_kernel)
  kShift,     ///< 4-byte elements, out rows chunk-aligned, in rows not: shifted 16-byte chunk grids
              ///< (transpose_shift_kernel)
  kSector,    ///< 4-byte elements, out rows not chunk-aligned: aligned in chunks staged, out rows
              ///< written in whole 32-byte sectors (transpose_sector_kernel)
  kScalar,    ///< 1-, 2- and 8-byte elements, any other shape: one element per access
};

/// Most rows (columns) the thin paths take.
inline constexpr int kTransposeThinMax = 8;

/// Everything one transpose call will do.
struct TransposePlan {
  TransposePath path = TransposePath::kCopy;  ///< the kernel family
  int elem_bytes = 0;                         ///< bytes per element (1, 2, 4, 8)
  int chunk_bytes = 0;       ///< bytes per global access of the chunked paths (16; 8 for the 1-byte
                             ///< tile; 4 for 1-/2-byte tiles of 4-byte aligned rows); 0 otherwise
  bool in_windows = false;   ///< kTile, 1-, 2- and 8-byte elements: in rows do not all start on a
                             ///< chunk boundary; the tile's rows are staged in shared memory as
                             ///< the aligned 16-byte chunks that cover them, each chunk read back
                             ///< as a window (transpose_staged_kernel)
  bool out_aligned = false;  ///< kThinCols: every out row starts on a chunk boundary, so chunks
                             ///< are stored straight from registers (else staged)
  int thin = 0;              ///< kThinRows / kThinCols: the short side (2..kTransposeThinMax)
  int tile_rows = 0;         ///< in rows of a tile (kTile: A kVec, A a power of two)
  int tile_cols = 0;         ///< in columns of a tile (kTile: B kVec, A B = 256)
  int64_t tiles_c = 0;       ///< tiles along cols
  int64_t tiles_r = 0;       ///< tiles along rows (num_tiles = tiles_r tiles_c; tiled paths)
  bool col_order = false;    ///< kTile, kShift and kSector: tiles numbered down the
                             ///< tile columns (tile t: tile row t % tiles_r, tile column
                             ///< t / tiles_r) instead of along the tile rows (row t / tiles_c,
                             ///< column t % tiles_c); transpose_col_order
  int64_t num_tiles = 0;     ///< tiles in all; one block each, grid-stride past INT32_MAX
  int static_smem = 0;       ///< static shared memory of the kernel, bytes
  LaunchShape shape;         ///< grid, block, dynamic shared memory (the staged kernel's rows;
                             ///< within the device's no-opt-in limit); no cluster
};

/// One kernel configuration of transpose: the template arguments launch_transpose gives a
/// kernel besides the element type (an entry of kTransposeConfigs). Fields a path does not
/// take are 0 / false.
struct TransposeConfig {
  int elem_bytes = 0;                         ///< 1, 2, 4, 8
  TransposePath path = TransposePath::kCopy;  ///< the kernel family
  int chunk_bytes = 0;                        ///< kTile: bytes per global access (4, 8, 16)
  bool in_windows = false;                    ///< kTile: in rows staged as windows
  bool col_order = false;                     ///< kTile, kShift, kSector: tiles down the columns
  int thin = 0;                               ///< kThinRows, kThinCols: the short side (2..8)
};

/// Same kernel.
constexpr bool operator==(const TransposeConfig& a, const TransposeConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.path == b.path && a.chunk_bytes == b.chunk_bytes &&
         a.in_windows == b.in_windows && a.col_order == b.col_order && a.thin == b.thin;
}

namespace detail {
constexpr TransposeConfig transpose_tile_config(int elem_bytes, int chunk_bytes, bool in_windows,
                                                bool col_order) {
  return {elem_bytes, TransposePath::kTile, chunk_bytes, in_windows, col_order, 0};
}
constexpr TransposeConfig transpose_thin_rows_config(int elem_bytes, int thin) {
  return {elem_bytes, TransposePath::kThinRows, 0, false, false, thin};
}
constexpr TransposeConfig transpose_thin_cols_config(int elem_bytes, int thin) {
  return {elem_bytes, TransposePath::kThinCols, 0, false, false, thin};
}
constexpr TransposeConfig transpose_path_config(int elem_bytes, TransposePath path,
                                                bool col_order = false) {
  return {elem_bytes, path, 0, false, col_order, 0};
}
}  // namespace detail

/// Every kernel configuration transpose launches, each element size's entries together.
/// plan_transpose returns one of them (transpose_config), launch_transpose instantiates
/// exactly these, and the plan tests check that every plan is one and every one is planned
/// for some shape. Per element size: the copy; tiles of the widest chunk (8 bytes for 1-byte
/// elements, else 16) with aligned in rows, and with in rows staged as windows (not 4-byte
/// elements: they take the shifted kernel); tiles of 4-byte chunks (1- and 2-byte elements);
/// each in row and column order; 2..8 thin rows and thin columns; 4-byte elements: the
/// shifted and sector kernels in row and column order; the others: the scalar kernel (row
/// order).
inline constexpr TransposeConfig kTransposeConfigs[] = {
    // 1-byte elements
    detail::transpose_path_config(1, TransposePath::kCopy),
    detail::transpose_tile_config(1, 8, false, false),
    detail::transpose_tile_config(1, 8, false, true),
    detail::transpose_tile_config(1, 8, true, false),
    detail::transpose_tile_config(1, 8, true, true),
    detail::transpose_tile_config(1, 4, false, false),
    detail::transpose_tile_config(1, 4, false, true),
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
    detail::transpose_path_config(1, TransposePath::kScalar),
    // 2-byte elements
    detail::transpose_path_config(2, TransposePath::kCopy),
    detail::transpose_tile_config(2, 16, false, false),
    detail::transpose_tile_config(2, 16, false, true),
    detail::transpose_tile_config(2, 16, true, false),
    detail::transpose_tile_config(2, 16, true, true),
    detail::transpose_tile_config(2, 4, false, false),
    detail::transpose_tile_config(2, 4, false, true),
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
    detail::transpose_path_config(2, TransposePath::kScalar),
    // 4-byte elements
    detail::transpose_path_config(4, TransposePath::kCopy),
    detail::transpose_tile_config(4, 16, false, false),
    detail::transpose_tile_config(4, 16, false, true),
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
    detail::transpose_path_config(4, TransposePath::kShift, false),
    detail::transpose_path_config(4, TransposePath::kShift, true),
    detail::transpose_path_config(4, TransposePath::kSector, false),
    detail::transpose_path_config(4, TransposePath::kSector, true),
    // 8-byte elements
    detail::transpose_path_config(8, TransposePath::kCopy),
    detail::transpose_tile_config(8, 16, false, false),
    detail::transpose_tile_config(8, 16, false, true),
    detail::transpose_tile_config(8, 16, true, false),
    detail::transpose_tile_config(8, 16, true, true),
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
    detail::transpose_path_config(8, TransposePath::kScalar),
};

/// The entries of kTransposeConfigs for elem_bytes-byte elements: [begin, end).
constexpr ConfigRange transpose_configs_of(int elem_bytes) {
  return config_range(kTransposeConfigs, [elem_bytes](const TransposeConfig& c) {
    return c.elem_bytes == elem_bytes;
  });
}
static_assert(transpose_configs_of(1).end - transpose_configs_of(1).begin == 22 &&
                  transpose_configs_of(2).end - transpose_configs_of(2).begin == 22 &&
                  transpose_configs_of(4).end - transpose_configs_of(4).begin == 21 &&
                  transpose_configs_of(8).end - transpose_configs_of(8).begin == 20,
              "each element size's entries together");

/// The configuration plan p launches: p's fields that become template arguments, the others 0
/// / false. An entry of kTransposeConfigs for every plan plan_transpose makes;
/// launch_transpose answers cudaErrorInvalidValue for any other.
inline TransposeConfig transpose_config(const TransposePlan& p) {
  switch (p.path) {
    case TransposePath::kTile:
      return detail::transpose_tile_config(p.elem_bytes, p.chunk_bytes, p.in_windows, p.col_order);
    case TransposePath::kThinRows:
      return detail::transpose_thin_rows_config(p.elem_bytes, p.thin);
    case TransposePath::kThinCols:
      return detail::transpose_thin_cols_config(p.elem_bytes, p.thin);
    default:
      return detail::transpose_path_config(p.elem_bytes, p.path, p.col_order);
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

// Fills in tile shape, tile counts, shared memory and launch shape of a plan whose path,
// elem_bytes, chunk_bytes, thin, in_windows and out_aligned are set; smem_limit: the shared
// memory a block gets without opting in (DeviceInfo::smem_per_block). Tests use it to run a
// path on shapes the plan would send elsewhere.
inline TransposePlan finish_transpose_plan(TransposePlan p, int64_t rows, int64_t cols,
                                           int smem_limit) {
  const int e = p.elem_bytes;
  size_t dynamic_smem = 0;
  switch (p.path) {
    case TransposePath::kCopy:
      p.tile_rows = p.tile_cols = 0;
      p.tiles_c = p.tiles_r = p.num_tiles = 0;
      p.col_order = false;
      p.static_smem = 0;
      p.shape = LaunchShape{};
      return p;
    case TransposePath::kTile: {
      const int vec = p.chunk_bytes / e;
      int a = 16, b = 16;
      if (p.chunk_bytes >= 8)
        transpose_tile_shape(rows / vec, ceil_div<int64_t>(cols, vec), &a, &b);
      if (p.in_windows) {
        // Staged rows: one 16-byte chunk more per tile row (ceil(b chunk / 16) + 1 a row);
        // fewer, longer rows where a tall tile would not fit (f16 128 x 2: 50 KiB).
        while (a > 1 && transpose_staged_smem_bytes(e, p.chunk_bytes, a, b) > smem_limit) {
          a /= 2;
          b *= 2;
        }
        p.static_smem = 0;
        dynamic_smem = static_cast<size_t>(transpose_staged_smem_bytes(e, p.chunk_bytes, a, b));
      } else {
        p.static_smem = kTransposeBlock * vec * p.chunk_bytes;
      }
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
      p.col_order = false;  // (one tile row or column: the same order either way)
      break;
    }
    case TransposePath::kShift: {
      // Tile rows cover the shifted positions r + p_c < rows + kVec - 1.
      using G = TransposeShiftGeometry<uint32_t>;
      p.tile_rows = p.tile_cols = G::kTile;
      p.tiles_c = ceil_div<int64_t>(cols, G::kTile);
      p.tiles_r = ceil_div<int64_t>(rows + G::kVec - 1, G::kTile);
      p.static_smem = G::kSmemBytes;
      break;
    }
    case TransposePath::kSector: {
      // Tile rows cover the sector-shifted positions r + s_c < rows + kSector - 1.
      using G = TransposeSectorGeometry;
      p.tile_rows = p.tile_cols = G::kTile;
      p.tiles_c = ceil_div<int64_t>(cols, G::kTile);
      p.tiles_r = ceil_div<int64_t>(rows + G::kSector - 1, G::kTile);
      p.static_smem = G::kSmemBytes;
      break;
    }
    case TransposePath::kScalar:
      p.tile_rows = p.tile_cols = kTransposeScalarTile;
      p.tiles_c = ceil_div<int64_t>(cols, kTransposeScalarTile);
      p.tiles_r = ceil_div<int64_t>(rows, kTransposeScalarTile);
      p.col_order = false;  // (row order only: transpose_col_order)
      p.static_smem = transpose_scalar_smem_bytes(e);
      break;
  }
  p.num_tiles = p.tiles_r * p.tiles_c;
  p.shape.grid = dim3(static_cast<unsigned>(grid_one_block_per_tile(p.num_tiles)));
  p.shape.block = dim3(kTransposeBlock);
  p.shape.smem = dynamic_smem;
  return p;
}

// Whether a tiled plan numbers its tiles down the tile columns (col_order). Resident blocks run
// about a wave of consecutive tiles at a time (wave: the device's SMs x the most 256-thread
// blocks an SM holds). In row order a wave reads whole in rows but writes each out row in
// pieces of tile_rows elements per tile row it spans; in column order it writes whole out rows
// and reads each in row in pieces of tile_cols per tile column. Row order stays unless the
// shorter of its two runs is under 2 KiB and column order's is longer: wide matrices of few
// tile rows (1000 x 33554: row order writes 256-512 bytes of each out row per wave, scattered
// over all of out; column order writes whole 1-8 KB out rows and reads 8-17 KB runs). Square
// and tall shapes keep row order (8192 x 8192 f32: 2 KiB runs either way). The scalar kernel
// keeps row order (with the other tile index math its register-capped 1- and 2-byte variants
// spilled on sm_100).
inline bool transpose_col_order(const TransposePlan& p, int64_t rows, int64_t cols,
                                const DeviceInfo& d) {
  if (p.path != TransposePath::kTile && p.path != TransposePath::kShift &&
      p.path != TransposePath::kSector)
    return false;
  if (p.tiles_r <= 1 || p.tiles_c <= 1) return false;  // the same order either way
  const int64_t wave = int64_t{d.sm_count} * std::max(1, d.max_threads_per_sm / kTransposeBlock);
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

}  // namespace detail

/// The plan for a rows x cols transpose of elem_bytes elements (1, 2, 4, 8; rows, cols >= 1)
/// whose pointers sit at `in` and `out` on the 16-byte grid (aligned to their elements). Pure
/// host code. Every kernel takes 256 threads; the staged kernel's tile fits d.smem_per_block
/// (48 KiB on every supported GPU, so the plan is the same on all of them today); the others
/// take at most 36.9 KiB of static shared memory.
inline TransposePlan plan_transpose(int64_t rows, int64_t cols, int elem_bytes, Alignment in,
                                    Alignment out, const DeviceInfo& d) {
  TransposePlan p;
  p.elem_bytes = elem_bytes;
  const int e = elem_bytes;
  // what every in row (cols elements apart) and every out row (rows apart) allows
  const Alignment in_rows = common_alignment(in, Alignment(cols * e));
  const Alignment out_rows = common_alignment(out, Alignment(rows * e));
  if (rows == 1 || cols == 1) {
    p.path = TransposePath::kCopy;
    return detail::finish_transpose_plan(p, rows, cols, d.smem_per_block);
  }
  if (std::min(rows, cols) <= kTransposeThinMax) {
    // A few rows or columns: 16-byte accesses on both sides whatever the alignment.
    p.chunk_bytes = 16;
    if (rows <= cols) {
      p.path = TransposePath::kThinRows;
      p.thin = static_cast<int>(rows);
    } else {
      p.path = TransposePath::kThinCols;
      p.thin = static_cast<int>(cols);
      p.out_aligned = out_rows.fits(16);
    }
    return detail::finish_transpose_plan(p, rows, cols, d.smem_per_block);
  }
  const int wide = e == 1 ? 8 : 16;
  const bool in_chunks = in_rows.fits(wide), out_chunks = out_rows.fits(wide);
  if (out_chunks && (in_chunks || e != 4)) {
    // Every out row starts on a chunk boundary; in rows may not (staged windows). 4-byte
    // elements with misaligned in rows take the shifted kernel instead: f32 1000 x 33554 ran
    // 100.2 us there against 108.8 us with windows read from global memory.
    p.path = TransposePath::kTile;
    p.chunk_bytes = wide;
    p.in_windows = !in_chunks;
  } else if (e == 4) {
    // Out rows chunk-aligned (only the in rows are not): the shifted kernel, measured there
    // (f32 1000 x 33554: 95.1 us, 0.945 of the copy). Out rows not chunk-aligned: the sector
    // kernel, whose stores fill whole 32-byte sectors (the shifted kernel split a sector between
    // two blocks at half of its tile edges: f32 16385 x 4097 ran 209 us, 0.85 of the copy).
    p.path = out_chunks ? TransposePath::kShift : TransposePath::kSector;
    p.chunk_bytes = 16;
  } else if (e <= 2 && common_alignment(in_rows, out_rows).fits(4)) {
    p.path = TransposePath::kTile;
    p.chunk_bytes = 4;
  } else {
    p.path = TransposePath::kScalar;
  }
  p = detail::finish_transpose_plan(p, rows, cols, d.smem_per_block);
  p.col_order = detail::transpose_col_order(p, rows, cols, d);
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
  // (the tile order is a template argument of every tiled kernel: a run-time one cost the
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
          if constexpr (c.in_windows) {
            return launch(detail::transpose_staged_kernel<U, c.chunk_bytes, c.col_order>, p.shape,
                          stream, src, dst, rows, cols, a_log2, minor, p.num_tiles);
          } else {
            return launch(detail::transpose_tile_kernel<U, c.chunk_bytes, c.col_order>, p.shape,
                          stream, src, dst, rows, cols, a_log2, minor, p.num_tiles);
          }
        } else if constexpr (c.path == Path::kThinRows) {
          return launch(detail::transpose_thin_rows_kernel<U, c.thin>, p.shape, stream, src, dst,
                        cols, p.num_tiles);
        } else if constexpr (c.path == Path::kThinCols) {
          return launch(detail::transpose_thin_cols_kernel<U, c.thin>, p.shape, stream, src, dst,
                        rows, p.out_aligned, p.num_tiles);
        } else if constexpr (c.path == Path::kShift) {
          return launch(detail::transpose_shift_kernel<U, c.col_order>, p.shape, stream, src, dst,
                        rows, cols, minor, p.num_tiles);
        } else if constexpr (c.path == Path::kSector) {
          return launch(detail::transpose_sector_kernel<U, c.col_order>, p.shape, stream, src, dst,
                        rows, cols, minor, p.num_tiles);
        } else {
          return launch(detail::transpose_scalar_kernel<U>, p.shape, stream, src, dst, rows, cols,
                        p.tiles_c, p.num_tiles);
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
/// offered). rows == 0 or cols == 0 does nothing. Any shape runs with wide accesses where the
/// alignment allows: a few (2..8) rows or columns move 16-byte chunks on both sides at any
/// alignment; rows a multiple of 16 / sizeof(T) (8 for 1-byte types) with a 16-byte-aligned
/// out (8-byte for 1-byte types) move 16-byte (8-byte) chunks, in rows at any alignment;
/// other 4-byte shapes move 16-byte chunks on shifted grids (out rows chunk-aligned) or on
/// each out row's 32-byte sector grid (out rows not chunk-aligned); other 1- and 2-byte shapes move
/// 4-byte chunks when rows, cols and pointers allow, single elements otherwise. A matrix with
/// one row or one column is a copy. No allocation, no synchronization; graph-capturable.
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
