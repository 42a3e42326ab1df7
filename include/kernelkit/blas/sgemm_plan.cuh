// SPDX-License-Identifier: Apache-2.0
/// @file
/// What one sgemm call will do: plan_sgemm (pure host code, no CUDA call) turns the shape,
/// the operands' layouts and alignments, the workspace the caller gave and the device's facts
/// into an SgemmPlan, which launch_sgemm (sgemm.cuh) launches.
///
/// The paths, in the order the plan tries them:
/// - kNone: m == 0 or n == 0.
/// - kScale: k == 0 (or alpha == 0: the caller passes k = 0): C = beta * C, A and B unread.
/// - kGemv: one row of C (m == 1) or one column (n == 1) whose vectors are contiguous: the
///   public kernelkit::gemv, reading the matrix operand once.
/// - kSkinny: at most 32 rows (or columns) of C: the batched-gemv kernels. Every element of the
///   big operand is read once, straight into registers, and used there for all (up to 32)
///   rows; the small operand is staged in shared memory. Parts of K run in separate blocks
///   when the columns alone do not fill the GPU and the workspace holds their partial sums.
///   The tiled path takes these shapes instead where its model (below) is faster than the
///   skinny kernels' (sgemm_skinny_time) by more than both models' errors.
/// - kTiled: the tiled FFMA kernel (one of five block tiles, a cp.async pipeline of `stages`
///   shared-memory tiles). Tile, stages, the split of K and whether the kernel computes C or
///   C^T = op(B)^T op(A)^T come from a model of the time on the device (sgemm_tiled_time):
///   whole waves of resident blocks, the lone last wave, the prologue/epilogue of each block
///   (4-byte stores to an unaligned C and C^T's stores dearer),
///   the combine pass of split tiles, the 4-byte copies of an operand read along K or not
///   16-byte aligned. Few rows of C (33..256) take the 64-row tiles, few columns the same
///   tiles on C^T (the kernel's rows are C's columns); a small grid splits K until it fills
///   the GPU; unaligned operands (odd k or n, odd ld, offset pointers) keep every tile with
///   4-byte cp.async copies of the unaligned operand. The tiles that do not
///   make whole waves (the first `dp_tiles` do) are each computed in `splits` parts of K by
///   separate blocks, written to the workspace, and combined in a fixed order by a second
///   kernel (deterministic): "data-parallel + split tail", the hybrid of stream-K (Osama et
///   al., PPoPP 2023) with k-split parts instead of fractional ones. dp_tiles == 0 is plain
///   split-K (small M x N, long K); splits == 1 is the plain tiled kernel.
///   When op(B) = B^T, the kernel's copies of B run along K (4-byte copies that transpose on
///   the way in, 16 a thread a k-tile for 128 x 256: NT 2048^3 386.5 us against NN's 357.3).
///   If the workspace holds it and the model says it pays, B is first transposed once into
///   the workspace by kernelkit's transpose (op(B) packed k x n, ld n) and the kernel reads
///   that as an N operand with 16-byte copies (NT runs NN's loads, TT runs TN's), for 8 k n
///   bytes of extra traffic (2048^2: 33.5 MB, ~12 us). TT may instead compute C^T, which
///   reads B along K as NN reads A and A with 16-byte copies, with no pack.
///
/// Numbers the model uses are the H100 measurements of bench/NOTES.md ("sgemm", the plan);
/// only their ratios matter for a choice.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernelkit/blas/blas.cuh"
#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/transpose/transpose.cuh"

namespace kernelkit {

/// The kernel family of a call.
enum class SgemmPath { kNone, kScale, kGemv, kSkinny, kTiled };
/** @var SgemmPath::kNone
    Nothing to do (m or n is 0). */
/** @var SgemmPath::kScale
    C = beta * C (alpha == 0 or k == 0). */
/** @var SgemmPath::kGemv
    One side is a single row or column: a gemv call (SgemmGemvPlan). */
/** @var SgemmPath::kSkinny
    Few rows (or columns) of C: the skinny kernels (SgemmSkinnyPlan). */
/** @var SgemmPath::kTiled
    The tiled kernel (SgemmTiledPlan). */

/// The block tiles of the tiled kernel (rows x columns of C; thread tile in brackets):
/// - k128x256 [16 x 8]: 256 threads, 128 accumulators a thread (<= 255 registers: one block
///   per SM); the big-shape tile (4096^3 0.953x, 8192^3 0.968x cuBLAS).
/// - k128x128 [8 x 8]: 256 threads, 64 accumulators (<= 128 registers: two blocks per SM):
///   one block's prologue and epilogue hide under the other's FFMAs (short K, many tiles).
/// - k128x64 [8 x 4]: 256 threads, 32 accumulators, two blocks per SM: small grids (1024^3:
///   0.961x against 0.931x for 8 x 8 tiles).
/// - k64x256 [8 x 8]: 256 threads, 64 accumulators, two blocks per SM: few rows of C (33..64,
///   or 129..192 in three tile rows) against a wide op(B): a 128-row tile would compute up to
///   half its rows past C.
/// - k64x128 [8 x 4]: 256 threads, 32 accumulators, two blocks per SM: the same for small
///   grids.
enum class SgemmTile { k128x256, k128x128, k128x64, k64x256, k64x128 };
/** @var SgemmTile::k128x256
    128 x 256 block tile, 16 x 8 thread tile (one block per SM). */
/** @var SgemmTile::k128x128
    128 x 128 block tile, 8 x 8 thread tile (two blocks per SM). */
/** @var SgemmTile::k128x64
    128 x 64 block tile, 8 x 4 thread tile (two blocks per SM). */
/** @var SgemmTile::k64x256
    64 x 256 block tile, 8 x 8 thread tile (two blocks per SM). */
/** @var SgemmTile::k64x128
    64 x 128 block tile, 8 x 4 thread tile (two blocks per SM). */

/// How the tiled kernel copies one operand's tiles into shared memory (detail/sgemm_kernels):
/// kKContig: the operand's rows run along K (A with BlasOp::N, B with BlasOp::T), 4-byte
/// copies that transpose on the way in; kMnVec4 / kMnScalar: its rows run along M (or N),
/// 16-byte copies when the leading dimension and the base pointer allow it, else 4-byte.
enum class SgemmLoad { kKContig, kMnVec4, kMnScalar };
/** @var SgemmLoad::kKContig
    The operand's rows run along K: 4-byte copies that transpose on the way in. */
/** @var SgemmLoad::kMnVec4
    The operand's rows run along M (or N): 16-byte copies. */
/** @var SgemmLoad::kMnScalar
    The operand's rows run along M (or N): 4-byte copies. */

/// How the skinny kernels read the big operand B' (k x n'): kNContig: B'(p, j) = B'[p * ldb +
/// j] (a warp reads along a row); kKContig: B'(p, j) = B'[j * ldb + p] (lanes read along k).
enum class SgemmSkinnyMode { kNContig, kKContig };
/** @var SgemmSkinnyMode::kNContig
    B'(p, j) = B'[p * ldb + j]: a warp reads along a row. */
/** @var SgemmSkinnyMode::kKContig
    B'(p, j) = B'[j * ldb + p]: lanes read along k. */

inline constexpr int kSgemmBK = 16;        ///< k of one shared-memory tile
inline constexpr int kSgemmPad = 4;        ///< floats added to each shared-memory row
inline constexpr int kSgemmMaxStages = 4;  ///< most shared-memory pipeline stages
/// A part of plain split-K (no whole tiles beside it: grids smaller than the GPU) covers at
/// least this many k-tiles: a block's pipeline fill (4 stages) and epilogue are then under half
/// its time, and a small grid's few long blocks become more, shorter ones.
inline constexpr int64_t kSgemmMinSplitKTiles = 4;
/// A part of the split tail behind whole waves covers at least this many k-tiles (the tail's
/// measured splits: 3000^3 0.78x -> 1.08x cuBLAS with parts of 8 or more; shorter ones only add
/// partial tiles to the workspace traffic of these big products).
inline constexpr int64_t kSgemmMinTailSplitKTiles = 8;
/// The parts of the split tail behind whole waves fill at most this many waves of resident
/// blocks (the measured tails, 3000^3 .. 8192^3, ran in 1.5..2 waves).
inline constexpr int64_t kSgemmMaxTailWaves = 2;
inline constexpr int kSgemmMaxSplits = 128;  ///< most parts K of a split tile is cut into
/// Most bytes of partial tiles of a split (bounds the workspace).
inline constexpr int64_t kSgemmMaxSplitBytes = int64_t{64} << 20;
inline constexpr int kSgemmReduceBlock = 256;  ///< threads per block of the split-partials combine
/// Most bytes of op(B) packed into the workspace (bounds the workspace: sgemm_workspace_bytes).
inline constexpr int64_t kSgemmMaxPackBytes = int64_t{64} << 20;

inline constexpr int kSgemmSkinnyMaxRows = 32;    ///< rows of C (or columns) of the skinny path
inline constexpr int kSgemmSkinnyThreads = 256;   ///< threads per block of the skinny kernels
inline constexpr int kSgemmSkinnyChunk = 64;      ///< k staged in shared memory at a time
inline constexpr int kSgemmSkinnyMaxSplits = 64;  ///< most parts K of the skinny path is cut into
inline constexpr int64_t kSgemmSkinnyMinSplitChunks = 2;  ///< fewest k chunks of a skinny part

/// Compile-time facts of a tile (the kernel's template arguments come from these).
struct SgemmTileShape {
  /// @{
  int bm = 0, bn = 0;  ///< block tile of C
  /// @}
  /// @{
  int tm = 0, tn = 0;  ///< thread tile: whole 4 x 4 quads
  /// @}
  int threads = 0;       ///< threads per block
  int reg_blocks = 0;    ///< blocks per SM the register budget is built for (__launch_bounds__)
  bool overlap = false;  ///< the k-tile boundary overlap loop (128-accumulator tiles)
};

/// The compile-time facts of tile t.
constexpr SgemmTileShape sgemm_tile_shape(SgemmTile t) {
  switch (t) {
    case SgemmTile::k128x256:
      return {128, 256, 16, 8, 256, 1, true};
    case SgemmTile::k128x128:
      return {128, 128, 8, 8, 256, 2, false};
    case SgemmTile::k64x256:
      return {64, 256, 8, 8, 256, 2, false};
    case SgemmTile::k64x128:
      return {64, 128, 8, 4, 256, 2, false};
    default:
      return {128, 64, 8, 4, 256, 2, false};
  }
}

/// Registers a thread may use under the tile's launch bounds (64 K registers per SM on every
/// architecture from sm_75 up).
constexpr int sgemm_tile_regs(SgemmTile t) {
  return sgemm_tile_shape(t).reg_blocks == 1 ? 255 : 128;
}

/// Bytes of one pipeline stage (a BK-deep tile of each operand, padded rows).
constexpr int64_t sgemm_stage_bytes(SgemmTile t) {
  const SgemmTileShape s = sgemm_tile_shape(t);
  return int64_t{kSgemmBK} * (s.bm + kSgemmPad + s.bn + kSgemmPad) * 4;
}

/// One kernel configuration of sgemm: the template arguments launch_sgemm gives the path's
/// kernel (an entry of kSgemmConfigs). Fields a path's kernel does not take keep their
/// defaults. kNone launches nothing, kGemv calls gemv (whose kernels are gemv's table); the
/// pack of op(B) (transpose's table) and the combine of split partials (no template
/// arguments) are run-time choices of a plan, not part of its entry.
struct SgemmConfig {
  SgemmPath path = SgemmPath::kNone;       ///< the kernel family
  SgemmTile tile = SgemmTile::k128x64;     ///< kTiled: the block tile
  SgemmLoad load_a = SgemmLoad::kKContig;  ///< kTiled: how A's tiles are copied
  SgemmLoad load_b = SgemmLoad::kKContig;  ///< kTiled: how B's tiles are copied
  bool trans_c = false;  ///< kTiled: the kernel computes C^T (SgemmTiledPlan::trans_c)
  int rows = 0;          ///< kSkinny: rows of C' a block holds (8 or 32)
  int vec = 0;           ///< kSkinny: elements of B' per access (4 or 1)
  SgemmSkinnyMode mode = SgemmSkinnyMode::kNContig;  ///< kSkinny: how B' is read
  bool a_along_k = false;  ///< kSkinny with kNContig: A' rows contiguous along k
};

/// Same kernel.
constexpr bool operator==(const SgemmConfig& a, const SgemmConfig& b) {
  return a.path == b.path && a.tile == b.tile && a.load_a == b.load_a && a.load_b == b.load_b &&
         a.trans_c == b.trans_c && a.rows == b.rows && a.vec == b.vec && a.mode == b.mode &&
         a.a_along_k == b.a_along_k;
}

namespace detail {
constexpr SgemmConfig sgemm_path_config(SgemmPath path) {
  SgemmConfig c;
  c.path = path;
  return c;
}
constexpr SgemmConfig sgemm_skinny_config(int rows, int vec, SgemmSkinnyMode mode, bool a_along_k) {
  SgemmConfig c;
  c.path = SgemmPath::kSkinny;
  c.rows = rows, c.vec = vec, c.mode = mode, c.a_along_k = a_along_k;
  return c;
}
constexpr SgemmConfig sgemm_tiled_config(SgemmTile tile, SgemmLoad load_a, SgemmLoad load_b,
                                         bool trans_c) {
  SgemmConfig c;
  c.path = SgemmPath::kTiled;
  c.tile = tile, c.load_a = load_a, c.load_b = load_b, c.trans_c = trans_c;
  return c;
}
}  // namespace detail

/// Every kernel configuration sgemm launches. plan_sgemm's plans are entries of it
/// (sgemm_config), launch_sgemm instantiates exactly these, and the plan tests check that every
/// plan is one and every one is planned for some shape. The skinny kernels: 8 or 32 rows, 4 or
/// 1 elements of B' an access, B' read along a row (A' staged along k or not) or along k. The
/// tiled kernel: a tile with the copies (the kernel's A's, B's) it is built for, computing C or
/// C^T (an instantiation each: C^T is a template argument). Any call can run on C or on C^T
/// with the two copies swapped, so each tile keeps the pairs whose use the time model shows
/// (over the generated shapes of bench/shapes.h, H100: an entry stays where the next-best plan
/// is >= 3 % slower on the calls that take it): 128 x 256 and 128 x 64 without the 16-byte A /
/// along-K B pair (C^T covers it) or the 16-byte A / 4-byte B pair, 128 x 128 with A along K
/// or 4-byte, 64 x 256 with every pair (few rows and few columns of C, every op combination,
/// aligned or not), 64 x 128 for NN only. Each pair is listed with C and with C^T, the C^T
/// entry being the one some plan takes (plan_sgemm over the plan tests' shapes and devices),
/// save three 128 x 128 pairs built for C only (both copies along K; A along K with 4-byte B;
/// 4-byte A with B along K): their C^T is never chosen (C^T of a pair is C of the swapped
/// pair with the dearer transposed stores). A along K with 4-byte B on 128 x 256 and
/// 128 x 128 (NN with odd n or a padded ldb, TT's C^T) since 2026-11-28: C with 4-byte stores
/// costs half of C^T's (sgemm_tiled_time), 3-10 % of the modeled time on 184 of the 496
/// generated calls that take them (40 seeds, H100).
inline constexpr SgemmConfig kSgemmConfigs[] = {
    detail::sgemm_path_config(SgemmPath::kNone),
    detail::sgemm_path_config(SgemmPath::kScale),
    detail::sgemm_path_config(SgemmPath::kGemv),
    detail::sgemm_skinny_config(8, 4, SgemmSkinnyMode::kNContig, false),
    detail::sgemm_skinny_config(8, 4, SgemmSkinnyMode::kNContig, true),
    detail::sgemm_skinny_config(8, 1, SgemmSkinnyMode::kNContig, false),
    detail::sgemm_skinny_config(8, 1, SgemmSkinnyMode::kNContig, true),
    detail::sgemm_skinny_config(kSgemmSkinnyMaxRows, 4, SgemmSkinnyMode::kNContig, false),
    detail::sgemm_skinny_config(kSgemmSkinnyMaxRows, 4, SgemmSkinnyMode::kNContig, true),
    detail::sgemm_skinny_config(kSgemmSkinnyMaxRows, 1, SgemmSkinnyMode::kNContig, false),
    detail::sgemm_skinny_config(kSgemmSkinnyMaxRows, 1, SgemmSkinnyMode::kNContig, true),
    detail::sgemm_skinny_config(8, 4, SgemmSkinnyMode::kKContig, false),
    detail::sgemm_skinny_config(8, 1, SgemmSkinnyMode::kKContig, false),
    detail::sgemm_skinny_config(kSgemmSkinnyMaxRows, 4, SgemmSkinnyMode::kKContig, false),
    detail::sgemm_skinny_config(kSgemmSkinnyMaxRows, 1, SgemmSkinnyMode::kKContig, false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kKContig, SgemmLoad::kKContig,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kKContig, SgemmLoad::kKContig, true),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kKContig, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kKContig, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kKContig, SgemmLoad::kMnScalar,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kKContig, SgemmLoad::kMnScalar,
                               true),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnVec4, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnVec4, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnScalar, SgemmLoad::kKContig,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnScalar, SgemmLoad::kKContig,
                               true),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnScalar, SgemmLoad::kMnScalar,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x256, SgemmLoad::kMnScalar, SgemmLoad::kMnScalar,
                               true),
    detail::sgemm_tiled_config(SgemmTile::k128x128, SgemmLoad::kKContig, SgemmLoad::kKContig,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x128, SgemmLoad::kKContig, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k128x128, SgemmLoad::kKContig, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x128, SgemmLoad::kKContig, SgemmLoad::kMnScalar,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x128, SgemmLoad::kMnScalar, SgemmLoad::kKContig,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x128, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x128, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kKContig, SgemmLoad::kKContig, false),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kKContig, SgemmLoad::kKContig, true),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kKContig, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kKContig, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kKContig, SgemmLoad::kMnScalar,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kKContig, SgemmLoad::kMnScalar, true),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnVec4, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnVec4, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnScalar, SgemmLoad::kKContig,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnScalar, SgemmLoad::kKContig, true),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnScalar, SgemmLoad::kMnScalar,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k128x64, SgemmLoad::kMnScalar, SgemmLoad::kMnScalar,
                               true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kKContig, SgemmLoad::kKContig, false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kKContig, SgemmLoad::kKContig, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kKContig, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kKContig, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kKContig, SgemmLoad::kMnScalar,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kKContig, SgemmLoad::kMnScalar, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnVec4, SgemmLoad::kKContig, false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnVec4, SgemmLoad::kKContig, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnVec4, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnVec4, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnVec4, SgemmLoad::kMnScalar, false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnVec4, SgemmLoad::kMnScalar, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnScalar, SgemmLoad::kKContig,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnScalar, SgemmLoad::kKContig, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnScalar, SgemmLoad::kMnVec4, true),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnScalar, SgemmLoad::kMnScalar,
                               false),
    detail::sgemm_tiled_config(SgemmTile::k64x256, SgemmLoad::kMnScalar, SgemmLoad::kMnScalar,
                               true),
    detail::sgemm_tiled_config(SgemmTile::k64x128, SgemmLoad::kKContig, SgemmLoad::kMnVec4, false),
    detail::sgemm_tiled_config(SgemmTile::k64x128, SgemmLoad::kKContig, SgemmLoad::kMnVec4, true),
};

/// Whether the tiled kernel is compiled for tile t with these copies of its A and B, computing
/// C (trans_c false) or C^T: an entry of kSgemmConfigs (the plan chooses among these).
constexpr bool sgemm_tile_allowed(SgemmTile t, SgemmLoad a, SgemmLoad b, bool trans_c) {
  return config_index(kSgemmConfigs, detail::sgemm_tiled_config(t, a, b, trans_c)) >= 0;
}

/// Where the operands sit on the 16-byte grid: the core Alignment of A, B and C (a 16-byte
/// aligned base with ld % 4 == 0 allows 16-byte access along a row).
struct SgemmAlignment {
  /// The alignment of A, B and C.
  /// @{
  Alignment a, b, c;
  /// @}
};

/// The tiled path of a plan.
struct SgemmTiledPlan {
  SgemmTile tile = SgemmTile::k128x64;  ///< the block tile
  /// How the tiles of A and of B are copied into shared memory.
  /// @{
  SgemmLoad load_a = SgemmLoad::kKContig, load_b = SgemmLoad::kKContig;
  /// @}
  int stages = 2;         ///< shared-memory pipeline depth (2..kSgemmMaxStages)
  int blocks_per_sm = 1;  ///< resident blocks per SM at this tile and stage count
  bool c_vec4 = false;    ///< 16-byte access to C (ldc % 4 == 0, C 16-byte aligned)
  /// @{
  int64_t tiles_m = 0, tiles_n = 0;  ///< tiles of C (ordered in groups of 8 tile-rows)
  /// @}
  int64_t dp_tiles = 0;       ///< tiles [0, dp_tiles) are computed whole, one block each
  int64_t split_tiles = 0;    ///< tiles [dp_tiles, tiles) are computed in `splits` parts each
  int splits = 1;             ///< parts of K per split tile (1: no split, no workspace)
  int64_t split_k_tiles = 0;  ///< k-tiles per part (part s: [s, s + 1) * split_k_tiles)
  int smem_optin = 0;         ///< dynamic shared memory the kernel opts into (same per device)
  /// op(B) = B^T (B n x k, ldb == k) is first transposed into the workspace's first pack_bytes
  /// bytes (op(B) k x n, ld n, 16-byte aligned; `pack` is the transpose's plan for B as an
  /// n x k matrix) and the kernel reads that copy as an N operand (load_b kMnVec4, n % 4 == 0);
  /// the split parts follow it in the workspace.
  bool pack_b = false;
  size_t pack_bytes = 0;  ///< 4 k n rounded up to 16 (0: no pack)
  TransposePlan pack;     ///< the transpose of B into the workspace (pack_b)
  /// The kernel computes C^T (n x m) = op(B)^T op(A)^T: its A is op(B)^T, its B op(A)^T
  /// (load_a is B's copy mode, load_b A's), tiles_m x tiles_n tile C^T, and the results go
  /// to C transposed. Few columns of C then take the tiles made for few rows.
  bool trans_c = false;
};

/// The skinny path of a plan: C' (m' x n') = A' (m' x k) B' (k x n') with m' <= rows; C' is
/// C, or C transposed (computes C^T = op(B)^T op(A)^T when n is the small side).
struct SgemmSkinnyPlan {
  int rows = 8;  ///< compile-time row capacity: 8 or 32
  int vec = 1;   ///< elements of B' per access along its contiguous direction: 4 or 1
  SgemmSkinnyMode mode = SgemmSkinnyMode::kNContig;  ///< how B' is read
  bool transposed = false;                           ///< A' = op(B)^T, B' = op(A)^T, C' = C^T
  /// @{
  int64_t m = 0, n = 0;  ///< m' (<= rows), n'
  /// @}
  /// @{
  int64_t a_si = 0, a_sp = 0;  ///< A'(i, p) = A'[i * a_si + p * a_sp]
  /// @}
  int64_t ldb = 0;  ///< B' leading dimension (see SgemmSkinnyMode)
  /// @{
  int64_t c_si = 0, c_sj = 0;  ///< C'(i, j) = C[i * c_si + j * c_sj]
  /// @}
  /// kNContig with A' rows contiguous along k (a_sp == 1): the kernel stages A' with the
  /// index math of its copies done once a chunk (sgemm_skinny_stage_a_along_k)
  bool a_along_k = false;
  int64_t cols_per_block = 0;  ///< columns of C' a block computes
  int splits = 1;              ///< grid.y: parts of K (partials in the workspace when > 1)
  int64_t k_per_split = 0;     ///< k of one part, a multiple of kSgemmSkinnyChunk
};

/// The gemv path of a plan: kernelkit::gemv(op, rows, cols, alpha, M, ld, x, beta, y,
/// workspace, workspace_bytes) with M = A (x = B) or M = B (x = A), y = C.
struct SgemmGemvPlan {
  BlasOp op = BlasOp::N;  ///< gemv's op
  /// gemv's m x n: the matrix operand's shape
  /// @{
  int64_t rows = 0, cols = 0;
  /// @}
  bool matrix_is_a = false;    ///< the matrix is A and x is B (else the matrix is B and x is A)
  size_t workspace_bytes = 0;  ///< of the caller's workspace, what gemv may use (gemv plans)
};

/// Everything one call does.
struct SgemmPlan {
  SgemmPath path = SgemmPath::kNone;  ///< the kernel family
  SgemmTiledPlan tiled;               ///< kTiled (its pack of op(B) included)
  SgemmSkinnyPlan skinny;             ///< kSkinny
  SgemmGemvPlan gemv;                 ///< kGemv
  size_t workspace_used = 0;          ///< bytes of the workspace the plan writes (0: none)
  LaunchShape shape;                  ///< the main kernel (kScale, kSkinny, kTiled)
  LaunchShape reduce_shape;           ///< the combine of split partials (when splits > 1)
};

/// The configuration plan p launches: p's fields that become template arguments, the others
/// their defaults. An entry of kSgemmConfigs for every plan plan_sgemm makes; launch_sgemm
/// answers cudaErrorInvalidValue for any other.
inline SgemmConfig sgemm_config(const SgemmPlan& p) {
  switch (p.path) {
    case SgemmPath::kSkinny:
      return detail::sgemm_skinny_config(p.skinny.rows, p.skinny.vec, p.skinny.mode,
                                         p.skinny.a_along_k);
    case SgemmPath::kTiled:
      return detail::sgemm_tiled_config(p.tiled.tile, p.tiled.load_a, p.tiled.load_b,
                                        p.tiled.trans_c);
    default:
      return detail::sgemm_path_config(p.path);
  }
}

namespace detail {

// ---- the time model of the tiled path (units: clock cycles of one SM) ----------------------
// Fraction of the SM's FFMA peak each tile reaches, all its resident blocks busy (full) or
// alone on the SM (one): from the H100 runs (128 x 256: 49.4-50.1 TFLOP/s of 66.9 at 4096^3 and
// 8192^3; 128 x 128 8 x 8: 44.2 at two a SM; 128 x 64 8 x 4: 36.7 over two waves at 2048^3,
// 29.6 at one block a SM at 1024^3). The 64-row tiles run the same warp tiles and fragment
// loads as the 128-row tile of their thread tile, with a few more copies a k-tile (64 x 256:
// 5120 floats a block for the 4096 of 128 x 128): a little below it.
struct SgemmTileModel {
  double eff_full, eff_one;
};
constexpr SgemmTileModel sgemm_tile_model(SgemmTile t) {
  switch (t) {
    case SgemmTile::k128x256:
      return {0.75, 0.75};
    case SgemmTile::k128x128:
      return {0.68, 0.55};
    case SgemmTile::k64x256:
      return {0.66, 0.54};
    case SgemmTile::k64x128:
      return {0.56, 0.45};
    default:
      return {0.57, 0.46};
  }
}
inline constexpr double kSgemmFlopsPerByte = 20.0;      // FFMA peak over DRAM bandwidth (H100 ~20)
inline constexpr double kSgemmBlockLatency = 1500;      // cycles: a block's pipeline fill
inline constexpr double kSgemmStoreBytesPerCycle = 32;  // an SM's epilogue, 16-byte stores
// The epilogue's 4-byte stores (C not 16-byte aligned along its rows: c_vec4 false) take this
// many times the 16-byte ones' cycles a byte (4 times the instructions), and C^T's this many
// times more (a warp's store touches 8 rows of C, not 4). Fitted on the H100, 128 x 256, 11
// k-tiles, 4-byte copies of both operands: TT 17963x22165x163 (C, 4-byte stores) 86 k cycles a
// wave, NN 14274x490x176 on C^T (4-byte stores) 114 k: 4 x and 2 x (16-byte stores at 32
// bytes a cycle: 4 k of a 128 x 256 tile, 82 and 98 k modeled).
inline constexpr double kSgemmScalarStoreCost = 4;
inline constexpr double kSgemmTransStoreCost = 2;
inline constexpr double kSgemmLaunchGap = 2000;  // cycles: the combine kernel's start
// What one 4-byte copy of op(B) costs beyond the 16-byte copies of the same bytes, in FFMA
// issue slots of its thread: B read along K (op(B) = B^T, not packed) against 16-byte copies,
// 128 x 256 (12 more copies a thread a k-tile, 2048 FFMA): NT / NN 2048^3 386.5 / 357.3 us
// (1.082), 3000^3 1262 / 1195 (1.056); TT / TN 375.5 / 353.7 (1.062), 1220 / 1141.5 (1.069):
// 1.065 = 1 + 12 * 11 / 2048. The 4-byte copies of an unaligned op(B) row (kMnScalar) are as
// many. A's copies count nothing: along K (the NN baseline of the efficiencies) and 4-byte
// along M are as many, 16-byte ones fewer.
inline constexpr double kSgemmCopyCost = 11;
// The transpose that packs op(B) moves its bytes at this fraction of the device's DRAM rate
// (kernelkit transpose f32 4096 x 8192: 0.96 of the copy).
inline constexpr double kSgemmPackEfficiency = 0.9;

// FP32 FMA lanes per SM: 64 on sm_70, sm_75 and sm_80; 128 on sm_86, sm_89, sm_90, sm_100,
// sm_120.
constexpr int sgemm_fma_lanes(const DeviceInfo& d) {
  const int a = d.arch();
  return (a == 70 || a == 72 || a == 75 || a == 80) ? 64 : 128;
}
// DRAM bytes per cycle of the whole device (the assumed balance).
inline double sgemm_device_bytes_per_cycle(const DeviceInfo& d) {
  return double(d.sm_count) * sgemm_fma_lanes(d) * 2.0 / kSgemmFlopsPerByte;
}

// The time of a k-tile with op(B) copied in `lb` over the same with 16-byte copies.
constexpr double sgemm_copy_factor(SgemmTile t, SgemmLoad lb) {
  if (lb == SgemmLoad::kMnVec4) return 1.0;
  const SgemmTileShape s = sgemm_tile_shape(t);
  const double copies = double(kSgemmBK) * s.bn / s.threads;  // 4-byte copies a thread
  const double ffma = double(kSgemmBK) * s.tm * s.tn;
  return 1.0 + kSgemmCopyCost * copies * 3 / 4 / ffma;
}

// Stages and resident blocks of a tile on d: the most blocks per SM up to what its register
// budget allows, then the most stages (up to kSgemmMaxStages; 2 when the kernels were built
// without cp.async, sm_75, whose copies are synchronous) that keep them resident. blocks 0:
// the tile does not fit.
struct SgemmTileFit {
  int stages = 0, blocks_per_sm = 0;
};
inline SgemmTileFit sgemm_fit_tile(SgemmTile t, const DeviceInfo& d) {
  const SgemmTileShape s = sgemm_tile_shape(t);
  const int max_stages = d.code_arch >= 80 ? kSgemmMaxStages : 2;
  for (int want = s.reg_blocks; want >= 1; --want)
    for (int st = max_stages; st >= 2; --st) {
      const int bps = blocks_per_sm(d, s.threads, sgemm_tile_regs(t), st * sgemm_stage_bytes(t));
      if (bps >= want) return {st, want};
    }
  return {};
}

// Cycles of `blocks` equal blocks on the device: whole waves of `bps` blocks a SM (each
// t_full), then a last partial wave that takes t_one when no SM holds two of its blocks.
inline double sgemm_waves_time(int64_t blocks, double t_full, double t_one, int bps, int sms) {
  const int64_t slots = int64_t{bps} * sms;
  const int64_t full = blocks / slots, rem = blocks % slots;
  double t = double(full) * t_full;
  if (rem > 0) t += rem <= sms ? t_one : t_full;
  return t;
}

// One candidate of the tiled path: tile, the whole waves kept data-parallel, the split, how
// A and B are copied, and whether it computes C^T.
struct SgemmTiledChoice {
  SgemmTile tile = SgemmTile::k128x64;
  SgemmTileFit fit;
  int64_t dp_tiles = 0, split_tiles = 0;
  int splits = 1;
  int64_t split_k_tiles = 0;
  SgemmLoad load_b = SgemmLoad::kMnVec4;  // how the kernel copies its B (op(B), or op(A)^T)
  bool pack_b = false;   // op(B) = B^T is packed into the workspace first (SgemmTiledPlan)
  bool trans_c = false;  // the kernel computes C^T = op(B)^T op(A)^T (SgemmTiledPlan)
  bool c_vec4 = true;    // 16-byte stores to C (SgemmTiledPlan::c_vec4)
  double time = 0;
};

// Workspace bytes of op(B) packed k x n (16-byte multiple, so that what follows is aligned).
inline int64_t sgemm_pack_bytes(int64_t n, int64_t k) {
  return round_up<int64_t>(4 * n * k, 16);
}

// op(B) can be packed: B^T stored n x k without padding (the transpose reads whole rows), n a
// multiple of 4 (the packed rows take 16-byte copies), at most kSgemmMaxPackBytes.
inline bool sgemm_can_pack_b(BlasOp op_b, int64_t n, int64_t k, int64_t ldb) {
  return op_b == BlasOp::T && ldb == k && n % 4 == 0 && n > 0 && k > 0 &&
         k <= kSgemmMaxPackBytes / 4 / n;
}

// Modeled cycles of a candidate on d for the kernel's m x n x k (n x m x k when it computes
// C^T).
inline double sgemm_tiled_time(const SgemmTiledChoice& c, int64_t m, int64_t n, int64_t k,
                               const DeviceInfo& d) {
  const SgemmTileShape s = sgemm_tile_shape(c.tile);
  const SgemmTileModel e = sgemm_tile_model(c.tile);
  const int lanes = sgemm_fma_lanes(d);
  const int bps = c.fit.blocks_per_sm;
  const double tile_bytes = 4.0 * s.bm * s.bn;
  // a block's fill and stores: a whole tile's to C, a split part's to the workspace (16-byte)
  const double trans_cost = c.trans_c ? kSgemmTransStoreCost : 1.0;
  const double store = tile_bytes / kSgemmStoreBytesPerCycle * trans_cost;
  const double overhead_c = kSgemmBlockLatency + store * (c.c_vec4 ? 1.0 : kSgemmScalarStoreCost);
  const double overhead_ws = kSgemmBlockLatency + store;
  // cycles of one block of kt k-tiles with bps blocks sharing its SM, and alone
  const double copies = sgemm_copy_factor(c.tile, c.load_b);
  const auto block_full = [&](int64_t kt, double overhead) {
    const double c1 = double(s.bm) * s.bn * kSgemmBK * double(kt) / lanes * copies;
    return c1 * bps / e.eff_full + (bps > 1 ? 0.25 * overhead : overhead);
  };
  const auto block_one = [&](int64_t kt, double overhead) {
    return double(s.bm) * s.bn * kSgemmBK * double(kt) / lanes * copies / e.eff_one + overhead;
  };
  const int64_t k_tiles = ceil_div<int64_t>(k, kSgemmBK);
  const int64_t slots = int64_t{bps} * d.sm_count;
  double t = 0;
  if (c.dp_tiles > 0) {
    t += c.dp_tiles % slots == 0 && c.split_tiles > 0
             ? double(c.dp_tiles / slots) * block_full(k_tiles, overhead_c)
             : sgemm_waves_time(c.dp_tiles, block_full(k_tiles, overhead_c),
                                block_one(k_tiles, overhead_c), bps, d.sm_count);
  }
  if (c.split_tiles > 0) {
    const int64_t blocks = c.split_tiles * c.splits;
    t += sgemm_waves_time(blocks, block_full(c.split_k_tiles, overhead_ws),
                          block_one(c.split_k_tiles, overhead_ws), bps, d.sm_count);
    const double bytes = tile_bytes * double(blocks + c.split_tiles);
    t += bytes / sgemm_device_bytes_per_cycle(d) + kSgemmLaunchGap;
  }
  // nothing beats reading A and B once and writing C once
  const double floor_bytes = 4.0 * (double(m) * k + double(k) * n + double(m) * n);
  t = std::max(t, floor_bytes / sgemm_device_bytes_per_cycle(d));
  // the pack of op(B): B read and written once, and one more kernel start
  if (c.pack_b)
    t += 8.0 * double(n) * double(k) / (sgemm_device_bytes_per_cycle(d) * kSgemmPackEfficiency) +
         kSgemmLaunchGap;
  return t;
}

inline SgemmLoad sgemm_load_mode(bool k_contiguous, int64_t ld, bool aligned16) {
  if (k_contiguous) return SgemmLoad::kKContig;
  return ld % 4 == 0 && aligned16 ? SgemmLoad::kMnVec4 : SgemmLoad::kMnScalar;
}

// How the tiled kernel copies its A and B: op(A) and op(B) as they sit in memory (op(B)
// packed k x n into the workspace: pack), swapped when it computes C^T = op(B)^T op(A)^T
// (trans: its A is op(B)^T, read as op(B) was, its B op(A)^T). The one rule the plan's search
// prices and sgemm_tiled_plan sets.
struct SgemmKernelLoads {
  SgemmLoad a, b;
};
inline SgemmKernelLoads sgemm_kernel_loads(BlasOp op_a, BlasOp op_b, int64_t n, int64_t lda,
                                           int64_t ldb, SgemmAlignment al, bool pack, bool trans) {
  SgemmLoad la = sgemm_load_mode(op_a == BlasOp::N, lda, al.a.fits(16));
  SgemmLoad lb = pack ? sgemm_load_mode(false, n, true)
                      : sgemm_load_mode(op_b == BlasOp::T, ldb, al.b.fits(16));
  if (trans) std::swap(la, lb);
  return {la, lb};
}

// 16-byte stores to C: ldc a multiple of 4 and C 16-byte aligned.
inline bool sgemm_c_vec4(int64_t ldc, SgemmAlignment al) {
  return ldc % 4 == 0 && al.c.fits(16);
}

// Fills a tiled plan for the given choice (also used by the ladder's v7 and by tests that
// force a tile, split, stage count, pack or C^T). choice.fit must be the tile's fit on d, or
// smaller stages with the same or fewer blocks per SM; choice.pack_b only where
// sgemm_can_pack_b holds, and not with trans_c. The choice's split counts tiles of the
// kernel's C (C^T with trans_c).
inline SgemmPlan sgemm_tiled_plan(const SgemmTiledChoice& c, BlasOp op_a, BlasOp op_b, int64_t m,
                                  int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                  SgemmAlignment al, const DeviceInfo& d) {
  const SgemmTileShape s = sgemm_tile_shape(c.tile);
  SgemmPlan p;
  p.path = SgemmPath::kTiled;
  SgemmTiledPlan& t = p.tiled;
  t.tile = c.tile;
  const bool pack = c.pack_b && !c.trans_c;
  const SgemmKernelLoads loads = sgemm_kernel_loads(op_a, op_b, n, lda, ldb, al, pack, c.trans_c);
  t.load_a = loads.a;
  t.load_b = loads.b;
  if (pack) {
    // B (n x k) -> the workspace (k x n, 16-byte aligned)
    t.pack_b = true;
    t.pack_bytes = static_cast<size_t>(sgemm_pack_bytes(n, k));
    t.pack = plan_transpose(n, k, 4, al.b, Alignment(), d);
  }
  if (c.trans_c) {
    // C^T (n x m) = op(B)^T op(A)^T
    t.trans_c = true;
    std::swap(m, n);
  }
  t.stages = c.fit.stages;
  t.blocks_per_sm = c.fit.blocks_per_sm;
  t.c_vec4 = sgemm_c_vec4(ldc, al);
  t.tiles_m = ceil_div<int64_t>(m, s.bm);
  t.tiles_n = ceil_div<int64_t>(n, s.bn);
  t.dp_tiles = c.dp_tiles;
  t.split_tiles = c.split_tiles;
  t.splits = c.split_tiles > 0 ? c.splits : 1;
  t.split_k_tiles = c.split_tiles > 0 ? c.split_k_tiles : 0;
  const int64_t max_smem = kSgemmMaxStages * sgemm_stage_bytes(c.tile);
  t.smem_optin = static_cast<int>(std::min<int64_t>(max_smem, d.smem_per_block_optin));
  p.shape.grid = dim3(grid_one_block_per_tile(t.dp_tiles + t.split_tiles * t.splits));
  p.shape.block = dim3(s.threads);
  p.shape.smem = static_cast<size_t>(t.stages * sgemm_stage_bytes(c.tile));
  if (t.split_tiles > 0) {
    const int64_t per_tile = int64_t{s.bm} * s.bn;
    p.workspace_used = static_cast<size_t>(4 * per_tile * t.split_tiles * t.splits);
    p.reduce_shape.grid =
        dim3(grid_one_block_per_tile(t.split_tiles * per_tile / 4 / kSgemmReduceBlock));
    p.reduce_shape.block = dim3(kSgemmReduceBlock);
    p.reduce_shape.overlap_previous = d.cc_major >= 9 && d.code_arch >= 90;
  }
  p.workspace_used += t.pack_bytes;
  return p;
}

// The tiled plan with the least modeled time: for every tile the load modes allow, no split;
// and for every number w of whole data-parallel waves (0: plain split-K; the most there are,
// and one fewer), the split counts that fill whole waves of the remaining blocks, if the
// workspace holds their partial tiles. All of it once with B as it is, where op(B) can be
// packed and the workspace holds the pack, once more with the pack (its partial tiles in
// what the pack leaves of the workspace), and once computing C^T = op(B)^T op(A)^T (the
// kernel's rows are C's columns: few columns take the 64-row tiles).
// time: where not null, receives the chosen plan's modeled cycles.
inline SgemmPlan sgemm_plan_tiled(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                  int64_t lda, int64_t ldb, int64_t ldc, SgemmAlignment al,
                                  size_t workspace_bytes, const DeviceInfo& d,
                                  double* time = nullptr) {
  const int64_t k_tiles = ceil_div<int64_t>(k, kSgemmBK);
  const bool c_vec4 = sgemm_c_vec4(ldc, al);
  const bool can_pack = sgemm_can_pack_b(op_b, n, k, ldb) &&
                        static_cast<uint64_t>(sgemm_pack_bytes(n, k)) <= workspace_bytes;
  SgemmTiledChoice best;
  bool have = false;
  for (int variant = 0; variant < 3; ++variant) {
    const bool pack = variant == 1, trans = variant == 2;
    if (pack && !can_pack) continue;
    // the kernel's m x n and copies of its A and B
    const int64_t km = trans ? n : m, kn = trans ? m : n;
    const SgemmKernelLoads loads = sgemm_kernel_loads(op_a, op_b, n, lda, ldb, al, pack, trans);
    const SgemmLoad ka = loads.a, kb = loads.b;
    const uint64_t ws = workspace_bytes - (pack ? uint64_t(sgemm_pack_bytes(n, k)) : 0);
    const auto consider = [&](SgemmTiledChoice c) {
      c.time = sgemm_tiled_time(c, km, kn, k, d);
      if (!have || c.time < best.time) best = c, have = true;
    };
    for (SgemmTile t : {SgemmTile::k128x256, SgemmTile::k128x128, SgemmTile::k128x64,
                        SgemmTile::k64x256, SgemmTile::k64x128}) {
      if (!sgemm_tile_allowed(t, ka, kb, trans)) continue;
      const SgemmTileFit fit = sgemm_fit_tile(t, d);
      if (fit.blocks_per_sm < 1) continue;
      const SgemmTileShape s = sgemm_tile_shape(t);
      const int64_t tiles = ceil_div<int64_t>(km, s.bm) * ceil_div<int64_t>(kn, s.bn);
      SgemmTiledChoice c;
      c.tile = t;
      c.fit = fit;
      c.dp_tiles = tiles;
      c.load_b = kb;
      c.pack_b = pack;
      c.trans_c = trans;
      c.c_vec4 = c_vec4;
      consider(c);
      const int64_t max_splits = std::min<int64_t>(kSgemmMaxSplits, k_tiles / kSgemmMinSplitKTiles);
      const int64_t max_tail_splits =
          std::min<int64_t>(kSgemmMaxSplits, k_tiles / kSgemmMinTailSplitKTiles);
      if (max_splits < 2) continue;
      const int64_t slots = int64_t{fit.blocks_per_sm} * d.sm_count;
      const int64_t waves = tiles / slots;
      const int64_t tile_bytes = 4 * int64_t{s.bm} * s.bn;
      const uint64_t ws_split = std::min<uint64_t>(ws, uint64_t(kSgemmMaxSplitBytes));
      for (int64_t w : {int64_t{0}, waves - 1, waves}) {
        if (w < 0) continue;
        const int64_t dp = w * slots, rest = tiles - dp;
        if (rest <= 0) continue;
        // the most parts the workspace holds, and the counts that fill 1..4 waves
        const int64_t by_ws = static_cast<int64_t>(ws_split / uint64_t(rest * tile_bytes));
        for (int64_t fill = 0; fill <= 4; ++fill) {
          const int64_t lo = fill == 0 ? by_ws : fill * slots / rest;
          const int64_t hi = fill == 0 ? by_ws : ceil_div(fill * slots, rest);
          for (int64_t want : {lo, hi}) {
            int64_t splits = std::min({want, dp > 0 ? max_tail_splits : max_splits, by_ws});
            if (splits < 2) continue;
            const int64_t per = ceil_div<int64_t>(k_tiles, splits);
            splits = ceil_div<int64_t>(k_tiles, per);  // no empty part
            if (splits < 2 || (dp > 0 && rest * splits > kSgemmMaxTailWaves * slots)) continue;
            if (static_cast<uint64_t>(rest * splits * tile_bytes) > ws_split) continue;
            c.dp_tiles = dp;
            c.split_tiles = rest;
            c.splits = static_cast<int>(splits);
            c.split_k_tiles = per;
            consider(c);
          }
        }
      }
    }
  }
  if (time != nullptr) *time = best.time;
  return sgemm_tiled_plan(best, op_a, op_b, m, n, k, lda, ldb, ldc, al, d);
}

// Resident blocks per SM of the skinny kernels: 32 rows keep 128 accumulators a thread (one
// block of 256), 8 rows fit two.
constexpr int sgemm_skinny_reg_blocks(int rows) {
  return rows > 8 ? 1 : 2;
}

inline int64_t sgemm_skinny_smem(int rows, int vec, SgemmSkinnyMode mode) {
  if (mode == SgemmSkinnyMode::kKContig)
    return int64_t{2} * rows * (kSgemmSkinnyChunk + kSgemmPad) * 4;
  // the staged A' (two chunks of [p][i], rows of `rows` + kSgemmPad floats), reused by the
  // cross-warp sum: 8 warps x 4 rows x 32 vec columns
  const int64_t stage = int64_t{2} * kSgemmSkinnyChunk * (rows + kSgemmPad);
  const int64_t sum = int64_t{8} * 4 * 32 * vec;
  return 4 * std::max(stage, sum);
}

inline SgemmPlan sgemm_plan_skinny(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                   int64_t lda, int64_t ldb, int64_t ldc, SgemmAlignment al,
                                   size_t workspace_bytes, const DeviceInfo& d) {
  SgemmPlan p;
  p.path = SgemmPath::kSkinny;
  SgemmSkinnyPlan& s = p.skinny;
  s.transposed = n < m;
  if (!s.transposed) {  // A' = op(A), B' = op(B), C' = C
    s.m = m, s.n = n;
    s.a_si = op_a == BlasOp::N ? lda : 1;
    s.a_sp = op_a == BlasOp::N ? 1 : lda;
    s.mode = op_b == BlasOp::N ? SgemmSkinnyMode::kNContig : SgemmSkinnyMode::kKContig;
    s.ldb = ldb;
    s.vec = ldb % 4 == 0 && al.b.fits(16) ? 4 : 1;
    s.c_si = ldc, s.c_sj = 1;
  } else {  // A' = op(B)^T (n x k), B' = op(A)^T (k x m), C' = C^T
    s.m = n, s.n = m;
    s.a_si = op_b == BlasOp::N ? 1 : ldb;
    s.a_sp = op_b == BlasOp::N ? ldb : 1;
    s.mode = op_a == BlasOp::N ? SgemmSkinnyMode::kKContig : SgemmSkinnyMode::kNContig;
    s.ldb = lda;
    s.vec = lda % 4 == 0 && al.a.fits(16) ? 4 : 1;
    s.c_si = 1, s.c_sj = ldc;
  }
  s.rows = s.m <= 8 ? 8 : kSgemmSkinnyMaxRows;
  s.a_along_k = s.mode == SgemmSkinnyMode::kNContig && s.a_sp == 1;
  s.cols_per_block = s.mode == SgemmSkinnyMode::kNContig ? 32 * s.vec : 8 * 16;
  const int64_t col_blocks = ceil_div<int64_t>(s.n, s.cols_per_block);
  // parts of K: the count with the least waves of resident blocks per part (time ~ waves /
  // parts), a little less for every part (its partials' traffic), each part at least two
  // chunks, the partials within the workspace
  const int64_t chunks = ceil_div<int64_t>(k, kSgemmSkinnyChunk);
  const int64_t slots = int64_t{sgemm_skinny_reg_blocks(s.rows)} * d.sm_count;
  const int64_t part_bytes = 4 * s.m * s.n;
  const int64_t max_splits =
      std::min({int64_t{kSgemmSkinnyMaxSplits}, chunks / kSgemmSkinnyMinSplitChunks,
                static_cast<int64_t>(workspace_bytes / part_bytes)});
  int64_t splits = 1;
  double best = 0;
  for (int64_t sp = 1; sp <= std::max<int64_t>(1, max_splits); ++sp) {
    const double cost = double(ceil_div<int64_t>(sp * col_blocks, slots)) / double(sp) + 0.002 * sp;
    if (sp == 1 || cost < best) best = cost, splits = sp;
  }
  const int64_t per = ceil_div<int64_t>(chunks, splits);
  s.splits = static_cast<int>(ceil_div<int64_t>(chunks, per));
  s.k_per_split = per * kSgemmSkinnyChunk;
  p.shape.grid = dim3(grid_one_block_per_tile(col_blocks), static_cast<unsigned>(s.splits));
  p.shape.block = dim3(kSgemmSkinnyThreads);
  p.shape.smem = static_cast<size_t>(sgemm_skinny_smem(s.rows, s.vec, s.mode));
  if (s.splits > 1) {
    p.workspace_used = static_cast<size_t>(part_bytes * s.splits);
    p.reduce_shape.grid = dim3(grid_size_for(s.m * s.n, kSgemmReduceBlock, d));
    p.reduce_shape.block = dim3(kSgemmReduceBlock);
    p.reduce_shape.overlap_previous = d.cc_major >= 9 && d.code_arch >= 90;
  }
  return p;
}

// ---- the time model of the skinny path (cycles of one SM, as sgemm_tiled_time) -------------
// Fitted on the H100 (both seeds' generated skinny shapes and the listed 8 and 32 x 4096 x
// 4096, 13 calls): a block of `rows` x cols_per_block columns x its part of K runs at this
// fraction of the SM's FFMA peak (the blocks an SM holds sharing it): 16-byte loads of B' 0.42
// (32 x 4096 x 4096: 0.47), 4-byte loads 0.32 (B' rows not 16-byte aligned: a quarter of the
// bytes in flight a thread); a wave of blocks 5500 cycles more (a block's fill and cross-warp
// sum: one block of 8 warps an SM waits on its loads). Measured / modeled 0.79..1.33 on the
// 10 calls that compute C and on NN 28649x17x2367 (C^T, 0.97), but 1.45..1.80 on the three
// small ones computing C^T (TN 25504x32x96 31.3 us, NT 5165x31x265 22.9, NN 1728x32x416 21.5:
// 7-14 us past the model, cause not measured): the model leaves that out, a lower bound for
// C^T, so the plan switches only where the tiled path beats even that.
inline constexpr double kSgemmSkinnyEffVec4 = 0.42;
inline constexpr double kSgemmSkinnyEffVec1 = 0.32;
inline constexpr double kSgemmSkinnyBlockCycles = 5500;
// The tiled path replaces the skinny one only where its modeled time is below the skinny
// model's by more than both models' errors (each within ~15-30 % of the measured times).
inline constexpr double kSgemmSkinnyToTiledMargin = 1.25;
// What a call costs beyond either model, added to both before the margin: the launch and the
// first loads from a cold L2 (the tiled calls of a few blocks measure 1.8-4 us past their
// model: NT 96x96x96 1.8, TT 117x169x133 3.1), so that calls of a few microseconds, whose time
// neither model holds, keep the skinny kernels.
inline constexpr double kSgemmCallCycles = 5000;

// Workspace bytes the skinny path's split can use for C (m x n, min(m, n) <= 32), k deep:
// the most parts times C (sgemm_workspace_bytes' bound for these shapes, without its 16).
inline size_t sgemm_skinny_workspace_bound(int64_t m, int64_t n, int64_t k) {
  const int64_t chunks = ceil_div<int64_t>(k, kSgemmSkinnyChunk);
  const int64_t splits =
      std::min<int64_t>(kSgemmSkinnyMaxSplits, chunks / kSgemmSkinnyMinSplitChunks);
  return splits >= 2 ? static_cast<size_t>(4 * splits * m * n) : 0;
}

// Modeled cycles of a skinny plan p (k: the call's inner size) on d.
inline double sgemm_skinny_time(const SgemmPlan& p, int64_t k, const DeviceInfo& d) {
  const SgemmSkinnyPlan& s = p.skinny;
  const int bps = sgemm_skinny_reg_blocks(s.rows);
  const int64_t slots = int64_t{bps} * d.sm_count;
  const int64_t blocks = ceil_div<int64_t>(s.n, s.cols_per_block) * s.splits;
  const int64_t waves = ceil_div<int64_t>(blocks, slots);
  const double eff = s.vec == 4 ? kSgemmSkinnyEffVec4 : kSgemmSkinnyEffVec1;
  const double block = double(s.rows) * double(s.cols_per_block) * double(s.k_per_split) /
                       sgemm_fma_lanes(d) / eff * bps;
  double t = double(waves) * (block + kSgemmSkinnyBlockCycles);
  const double bw = sgemm_device_bytes_per_cycle(d);
  if (s.splits > 1) t += 4.0 * double(s.m) * double(s.n) * (s.splits + 1) / bw + kSgemmLaunchGap;
  const double floor_bytes = 4.0 * (double(k) * s.n + double(s.m) * k + double(s.m) * s.n);
  return std::max(t, floor_bytes / bw);
}

}  // namespace detail

/// The plan of C = alpha * op(A) op(B) + beta * C on device d. k is the inner size the call
/// computes: 0 when alpha == 0 (A and B are then not read). Arguments as sgemm_args_ok
/// accepts them; workspace_bytes: usable bytes of a 16-byte aligned workspace (0: none). Pure.
inline SgemmPlan plan_sgemm(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k, int64_t lda,
                            int64_t ldb, int64_t ldc, SgemmAlignment al, size_t workspace_bytes,
                            const DeviceInfo& d) {
  SgemmPlan p;
  if (m == 0 || n == 0) return p;
  if (k == 0) {
    p.path = SgemmPath::kScale;
    p.shape.grid = dim3(grid_size_for(m * n, kSgemmReduceBlock, d));
    p.shape.block = dim3(kSgemmReduceBlock);
    return p;
  }
  // one row of C: y (n) = op(B)^T x with x = the row of op(A), when x is contiguous; one
  // column of C (contiguous: ldc == 1): y (m) = op(A) x with x = the column of op(B)
  const bool row = m == 1 && (op_a == BlasOp::N || lda == 1);
  if (row || (n == 1 && ldc == 1 && (op_b == BlasOp::T || ldb == 1))) {
    p.path = SgemmPath::kGemv;
    if (row) {
      p.gemv = op_b == BlasOp::N ? SgemmGemvPlan{BlasOp::T, k, n, false}
                                 : SgemmGemvPlan{BlasOp::N, n, k, false};
    } else {
      p.gemv = op_a == BlasOp::N ? SgemmGemvPlan{BlasOp::N, m, k, true}
                                 : SgemmGemvPlan{BlasOp::T, k, m, true};
    }
    p.gemv.workspace_bytes =
        std::min(workspace_bytes, gemv_workspace_bytes(p.gemv.op, p.gemv.rows, p.gemv.cols));
    p.workspace_used = p.gemv.workspace_bytes;
    return p;
  }
  if (std::min(m, n) <= kSgemmSkinnyMaxRows) {
    // the skinny kernels, unless the tiled kernel (its 64- or 128-row tiles mostly past C) is
    // modeled faster by more than the models' errors: short K with C^T written by the skinny
    // kernel 4 bytes at a stride, or B' rows read 4 bytes at a time against a wide op(B); its
    // split and pack within the skinny path's workspace bound (sgemm_workspace_bytes)
    const SgemmPlan skinny =
        detail::sgemm_plan_skinny(op_a, op_b, m, n, k, lda, ldb, ldc, al, workspace_bytes, d);
    double tiled_time = 0;
    const SgemmPlan tiled = detail::sgemm_plan_tiled(
        op_a, op_b, m, n, k, lda, ldb, ldc, al,
        std::min(workspace_bytes, detail::sgemm_skinny_workspace_bound(m, n, k)), d, &tiled_time);
    const double fixed = detail::kSgemmCallCycles;
    return (tiled_time + fixed) * detail::kSgemmSkinnyToTiledMargin <
                   detail::sgemm_skinny_time(skinny, k, d) + fixed
               ? tiled
               : skinny;
  }
  return detail::sgemm_plan_tiled(op_a, op_b, m, n, k, lda, ldb, ldc, al, workspace_bytes, d);
}

/// Workspace bytes with which sgemm (the overload taking a workspace) can take every plan it
/// would take on any device for an op_a, op_b, m x n x k problem; a smaller workspace (or
/// none) is valid and only limits the split of K and the pack of op(B). Device-independent
/// upper bound, from the ops and the shape alone: the tiled path's partial tiles (at most
/// kSgemmMaxSplitBytes, and at most kSgemmMaxSplits parts of every tile)
/// and, for op_b == T, op(B) packed (when at most kSgemmMaxPackBytes); the skinny path's
/// partial rows; plus 16 bytes to align the workspace; for one row or column of C,
/// gemv_workspace_bytes of the gemv calls it may take.
inline size_t sgemm_workspace_bytes(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k) {
  (void)op_a;  // A is never packed
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const int64_t k_tiles = ceil_div<int64_t>(k, kSgemmBK);
  int64_t bytes = 0;
  if (m == 1)  // gemv T over B (k x n) or N over B (n x k)
    bytes = static_cast<int64_t>(
        std::max(gemv_workspace_bytes(BlasOp::T, k, n), gemv_workspace_bytes(BlasOp::N, n, k)));
  if (n == 1)  // gemv N over A (m x k) or T over A (k x m)
    bytes = std::max(bytes, static_cast<int64_t>(std::max(gemv_workspace_bytes(BlasOp::N, m, k),
                                                          gemv_workspace_bytes(BlasOp::T, k, m))));
  if (std::min(m, n) <= kSgemmSkinnyMaxRows) {  // the skinny path (or the tiled one within it)
    bytes = std::max(bytes, static_cast<int64_t>(detail::sgemm_skinny_workspace_bound(m, n, k)));
  } else {
    const int64_t splits = std::min<int64_t>(kSgemmMaxSplits, k_tiles / kSgemmMinSplitKTiles);
    if (splits >= 2) {  // C (or C^T) padded to whole tiles of any shape
      const int64_t area = round_up<int64_t>(m, 256) * round_up<int64_t>(n, 256);
      bytes = std::min(kSgemmMaxSplitBytes, 4 * splits * std::min(area, kSgemmMaxSplitBytes));
    }
    if (detail::sgemm_can_pack_b(op_b, n, k, k)) bytes += detail::sgemm_pack_bytes(n, k);
  }
  return bytes > 0 ? static_cast<size_t>(bytes) + 16 : 0;
}

/// The same for any ops (the largest of the four: op_b == T).
inline size_t sgemm_workspace_bytes(int64_t m, int64_t n, int64_t k) {
  return sgemm_workspace_bytes(BlasOp::N, BlasOp::T, m, n, k);
}

}  // namespace kernelkit
