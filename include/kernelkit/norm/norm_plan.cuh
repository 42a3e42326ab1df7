// SPDX-License-Identifier: Apache-2.0
/// @file
/// The plan of rms_norm, layer_norm and add_rms_norm: every decision of one call (path,
/// pack, threads per row, packs a thread holds, grid), made by pure host code from the
/// shape, the operands' alignment and the device's facts. Host-tested on shapes x devices
/// (tests/norm/norm_plan_test.cu).
///
/// The paths, by row width in 16-byte packs at the phase of x's rows (access q of a row at
/// phase h: columns q * 16 / elem_bytes - h, ...; a row off the grid spans one access more, its
/// partial head and tail moved element by element; the other operands read and written at the
/// same columns wherever they sit: detail/norm_kernels.cuh says how):
///  - kWarp: a group of `lanes` lanes of a warp per row (a power of two 1..32: 32 / lanes rows
///    a warp, 128 / lanes a block of 128), the row in the group's registers: up to 16 floats or
///    32 2-byte elements a lane (a warp: 512 f32 / 1024 2-byte columns on the grid; off it, 509 /
///    1017). The group is the
///    fewest lanes holding the row's accesses at the entry's packs a lane, the entry the one with
///    the most rows in flight a SM; a launch of few rows keeps enough lanes a row to give every
///    SM a block. The statistics by segmented shuffles (xor offsets below lanes).
///  - kBlock: one block per row, the row in the block's registers: 16 floats or 16 / 32 2-byte
///    elements a thread (blocks of 128..1024: 2048..16384 f32 / 4096..32768 2-byte columns on
///    the grid; off it, up to 16381 / 32761). The entry of the most rows in flight a SM (its
///    resident blocks, at most the launch's rows a SM), then of the fewer packs a thread.
///  - kTile: rows off the grid of <= 128 columns where every block slot gets two tiles:
///    tiles of consecutive rows (at most 8 KB of x) staged in shared memory in 16-byte chunks,
///    each row over the fewest lanes holding it at 4 elements a lane, the tile copied out in
///    16-byte chunks (H200: add_rms bf16 21750407x29 2810 -> 1643 us against the one-element
///    kWarp entries). Fewer rows: the one-element kWarp entries.
///  - kSplit (d.cooperative_launch): rows past the register paths too few to give every
///    block slot a row (rows <= slots / 2): each row over `split` blocks of a cooperative
///    grid of rows x split blocks (chunks of at least 8 accesses); the chunks' statistics
///    parked in y, merged by every block after a grid barrier; then the second read. 16-byte
///    packs where x's rows are on the grid, else one element per access.
///  - kTwoPass: one block of 512 per row, the row streamed twice: statistics (layer_norm:
///    Welford per thread), then a second read that writes. The inputs cross DRAM twice
///    (add_rms_norm: the first pass writes x + residual, the second reads it back).
/// Each 16-byte kWarp, kBlock and kTwoPass kernel comes twice: aligned (every operand and the
/// row stride on the 16-byte grid: plain 16-byte accesses, no phase, no partial access; the
/// code main had) and phased (any other call). The phased code's head / tail checks and
/// shifted reads cost on-grid rows 1.1-1.5x on the H200 (bf16 8192x4096 rms 37.2 -> 47.2 us)
/// and held the two-pass kernel to one block a SM (67 registers). Rows off the grid that the
/// one-element kWarp entries hold (cols <= 128) keep them: a 16-byte access a lane leaves most
/// lanes idle on such rows and the partial head and tail run beside the body (bf16 83 columns
/// layer 2553 -> 7340 us).
/// Pricing in bytes (NormPlan::bytes): the register and tile paths move the fewest bytes
/// (every input read once, every output written once); kTwoPass adds a second read of the row.
/// The plan takes a register path whenever the row fits one, kTwoPass otherwise. Not built
/// yet (issue 34): rows past a block's registers held in a cluster's shared memory, which
/// would move wide rows (16K..~400K 2-byte columns on an H100) at the fewest bytes too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit {

/// Which normalization a call computes (the one run-time choice besides the plan).
enum class NormKind { kRms, kLayer, kAddRms };
/** @var NormKind::kRms
    y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps). */
/** @var NormKind::kLayer
    y = (x - mean) * rstd * w + b, rstd = 1 / sqrt(var + eps) (biased variance). */
/** @var NormKind::kAddRms
    s = x + residual (written), y = rms_norm(s). */

/// The kernel family of a call (see the file comment).
enum class NormPath { kWarp, kBlock, kTwoPass, kSplit, kTile };
/** @var NormPath::kWarp
    One warp per row, the row in the warp's registers. */
/** @var NormPath::kBlock
    One block per row, the row in the block's registers. */
/** @var NormPath::kTwoPass
    One block per row, the row read twice (statistics, then the write). */
/** @var NormPath::kSplit
    Few wide rows, each over `split` blocks of a cooperative grid (BlockCombine::kGrid): the
    chunks' statistics meet through global memory across a grid barrier; read twice. */
/** @var NormPath::kTile
    Short rows off the grid: tiles of consecutive rows staged in shared memory as 16-byte
    chunks, each row over a group of lanes element by element, the tile copied out in chunks. */

namespace detail {
inline constexpr int kNormWarpBlock = 128;  // threads of a kWarp block (4 rows)
// threads of a kTwoPass block (__launch_bounds__(512, 1): up to 128 registers; 1024 threads
// at 64 spilled 8-20 bytes on sm_120)
inline constexpr int kNormTwoPassBlock = 512;
// kSplit: the fewest accesses a chunk holds (its first 16 bytes park the block's statistics)
inline constexpr int64_t kNormSplitMinAccesses = 8;

// Registers a thread of a register-path kernel is held to, by its access (pack), the elements
// of a row it holds (x, or x + residual: 16 floats, or 32 2-byte elements two a register),
// whether a warp holds the row (kWarp) and the architecture of the code (kCompiledArch in the
// kernel, d.code_arch in the plan): what the kernels build to without spills (ptxas -v): 32 /
// 48 for up to 4 / 16 elements; on sm_100 / sm_120 code the rows at any phase take more for 16
// (kBlock 56, kWarp 72) and kWarp's 4 elements 48 (at 48 / 64 / 32 they spilled 4-72 bytes
// there: the partial head and tail and the weight's shifted reads; sm_75..sm_90 build them at
// 32 / 48). kWarp's groups of lanes (a run-time width: each access's column an IMAD, no longer
// an immediate offset) take 56 for 16 elements (at 48 the 2-byte entries at any phase and f32 4
// packs spilled 4-16 bytes on sm_90) and 40 for 4 at any phase (at 32 add_rms_norm's f32 entry
// spilled 8 bytes on sm_80). 32 2-byte elements take 72 (kWarp), 64 (kBlock; on sm_100 /
// sm_120 code 80 in blocks of up to 512 threads: at 64 / 72 rms_norm's aligned kernels with a
// float weight spilled 4 bytes on sm_120): at 48 / 56 they spilled 4-140 bytes on sm_90, the
// weight's loads of later accesses hoisted ahead of the row's stores. block: the kernel's
// threads.
__host__ __device__ constexpr int norm_regs(int pack, int elems, bool warp_rows = false,
                                            int code_arch = 0, bool phased = true,
                                            int block = 1024) {
  if (elems > 16) return warp_rows ? 72 : code_arch >= 100 && block <= 512 ? 80 : 64;
  if (pack > 1 && phased && code_arch >= 100)
    return elems <= 4 ? (warp_rows ? 48 : 32) : (warp_rows ? 72 : 56);
  if (pack > 1 && warp_rows && elems > 8) return 56;
  if (pack > 1 && warp_rows && phased && elems <= 4) return 40;
  return pack == 1 ? (elems <= 1 ? 32 : 48) : (elems <= 4 ? 32 : 48);
}
// Blocks per SM the __launch_bounds__ of a kernel of `block` threads ask for (registers per
// SM / (block x norm_regs)), capped by the compiled architecture's threads and blocks per SM
// (min_blocks_per_sm): where fewer threads fit an SM (sm_75, sm_86) the kernels may take more
// registers, and the plan's blocks_per_sm (a grid-stride grid's size) is an upper bound.
__host__ __device__ constexpr int norm_min_blocks(int block, int pack, int elems, bool warp_rows,
                                                  int code_arch, bool phased) {
  const int b = 65536 / (block * norm_regs(pack, elems, warp_rows, code_arch, phased, block));
  return b < 1 ? 1 : b;
}
// kTile: registers a thread is held to (ptxas -v), the bytes of x a tile holds at most, and the
// static shared memory beside the tiles (the weight and bias as floats: 2 x 128 x 4 bytes).
inline constexpr int kNormTileRegs = 40;
inline constexpr int64_t kNormTileBytes = 8192;
inline constexpr int64_t kNormTileStatic = 1152;
// kTile: 16-byte chunks a tile of tile_rows rows of cols elem_bytes-byte elements spans at its
// worst phase.
__host__ __device__ constexpr int64_t norm_tile_chunks(int64_t tile_rows, int64_t cols,
                                                       int elem_bytes) {
  const int64_t pack = kMaxPackBytes / elem_bytes;
  return (tile_rows * cols + 2 * pack - 2) / pack;
}
}  // namespace detail

/// Dynamic shared memory of a kTile block: two tiles of tile_rows rows of cols elem_bytes-byte
/// elements (add_rms_norm: x's and the residual's). Pure.
constexpr int64_t norm_tile_bytes(NormKind kind, int64_t tile_rows, int64_t cols, int elem_bytes) {
  return 2 * (kind == NormKind::kAddRms ? 2 : 1) *
         detail::norm_tile_chunks(tile_rows, cols, elem_bytes) * kMaxPackBytes;
}

/// One kernel configuration of the norm ops: the template arguments launch_norm gives a
/// kernel besides the kind and the element and weight types (an entry of kNormConfigs).
struct NormConfig {
  int elem_bytes = 0;               ///< 4: float; 2: __half, __nv_bfloat16
  NormPath path = NormPath::kWarp;  ///< the kernel family
  int pack = 0;                     ///< elements per access (16 bytes, or 1)
  int block = 0;                    ///< threads per block
  int packs = 0;                    ///< kWarp, kBlock: packs a thread holds; kTwoPass: 0
  bool phased = false;              ///< rows at any phase (else every operand on the grid)
};

/// Same kernel.
constexpr bool operator==(const NormConfig& a, const NormConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.path == b.path && a.pack == b.pack &&
         a.block == b.block && a.packs == b.packs && a.phased == b.phased;
}

/// Every kernel configuration the norm ops launch, each element size's entries together
/// (float, then the 2-byte types). plan_norm returns one of them (norm_config),
/// launch_norm instantiates exactly these, the plan tests check every plan is one and
/// every one is planned.
/// - kWarp (128 threads, a group of 1..32 lanes per row: NormPlan::lanes, a run-time value of
///   the same kernel): 16-byte packs, 1 / 2 / 4 packs a lane (at most 16 registers of the row:
///   32 floats spilled 4-28 bytes at 64 registers on sm_90; 2-byte elements are held two a
///   register, so 4 packs of them hold 32, on groups of 8 lanes or more), each aligned and
///   phased; one element per access, 1 / 4 a lane (rows off the grid of at most 128 columns).
/// - kBlock (a block per row): 4 packs a thread (16 floats), 2-byte 2 or 4 (16 or 32 elements,
///   48 or 64 registers: 4 where rows are many, twice the bytes in flight a SM; 2 where the same
///   block holds the row at 2, or the launch has few rows), on 128 / 256 / 512 / 1024 threads,
///   aligned and phased. (2-byte rows were held as floats, 2 packs a thread: H200 bf16
///   4096x16384 rms 0.66 of SOL against f32 0.91.)
/// - kTwoPass: 512 threads, aligned and phased. kSplit: 512 threads, 16-byte packs (every
///   operand on the grid) or one element per access.
/// (Before issue 34's phased rows an operand or row stride off the grid took one element per
/// access on every path: kWarp 1 / 4 a lane, kBlock 4 a thread on 256 / 1024, kTwoPass; they
/// measured 0.12-0.35 of SOL, bench/NOTES.md. Phased 16-byte entries alone, without the
/// aligned ones: on-grid rows 1.1-1.5x slower, bench/NOTES.md.)
inline constexpr NormConfig kNormConfigs[] = {
    // float
    {4, NormPath::kWarp, 4, detail::kNormWarpBlock, 1},
    {4, NormPath::kWarp, 4, detail::kNormWarpBlock, 2},
    {4, NormPath::kWarp, 4, detail::kNormWarpBlock, 4},
    {4, NormPath::kWarp, 4, detail::kNormWarpBlock, 1, true},
    {4, NormPath::kWarp, 4, detail::kNormWarpBlock, 2, true},
    {4, NormPath::kWarp, 4, detail::kNormWarpBlock, 4, true},
    {4, NormPath::kWarp, 1, detail::kNormWarpBlock, 1},
    {4, NormPath::kWarp, 1, detail::kNormWarpBlock, 4},
    {4, NormPath::kBlock, 4, 128, 4},
    {4, NormPath::kBlock, 4, 256, 4},
    {4, NormPath::kBlock, 4, 512, 4},
    {4, NormPath::kBlock, 4, 1024, 4},
    {4, NormPath::kBlock, 4, 128, 4, true},
    {4, NormPath::kBlock, 4, 256, 4, true},
    {4, NormPath::kBlock, 4, 512, 4, true},
    {4, NormPath::kBlock, 4, 1024, 4, true},
    {4, NormPath::kTwoPass, 4, detail::kNormTwoPassBlock, 0},
    {4, NormPath::kTwoPass, 4, detail::kNormTwoPassBlock, 0, true},
    {4, NormPath::kSplit, 4, detail::kNormTwoPassBlock, 0},
    {4, NormPath::kSplit, 1, detail::kNormTwoPassBlock, 0},
    {4, NormPath::kTile, 1, detail::kNormWarpBlock, 4},
    // __half, __nv_bfloat16
    {2, NormPath::kWarp, 8, detail::kNormWarpBlock, 1},
    {2, NormPath::kWarp, 8, detail::kNormWarpBlock, 2},
    {2, NormPath::kWarp, 8, detail::kNormWarpBlock, 4},
    {2, NormPath::kWarp, 8, detail::kNormWarpBlock, 1, true},
    {2, NormPath::kWarp, 8, detail::kNormWarpBlock, 2, true},
    {2, NormPath::kWarp, 8, detail::kNormWarpBlock, 4, true},
    {2, NormPath::kWarp, 1, detail::kNormWarpBlock, 1},
    {2, NormPath::kWarp, 1, detail::kNormWarpBlock, 4},
    {2, NormPath::kBlock, 8, 128, 2},
    {2, NormPath::kBlock, 8, 256, 2},
    {2, NormPath::kBlock, 8, 512, 2},
    {2, NormPath::kBlock, 8, 1024, 2},
    {2, NormPath::kBlock, 8, 128, 4},
    {2, NormPath::kBlock, 8, 256, 4},
    {2, NormPath::kBlock, 8, 512, 4},
    {2, NormPath::kBlock, 8, 1024, 4},
    {2, NormPath::kBlock, 8, 128, 2, true},
    {2, NormPath::kBlock, 8, 256, 2, true},
    {2, NormPath::kBlock, 8, 512, 2, true},
    {2, NormPath::kBlock, 8, 1024, 2, true},
    {2, NormPath::kBlock, 8, 128, 4, true},
    {2, NormPath::kBlock, 8, 256, 4, true},
    {2, NormPath::kBlock, 8, 512, 4, true},
    {2, NormPath::kBlock, 8, 1024, 4, true},
    {2, NormPath::kTwoPass, 8, detail::kNormTwoPassBlock, 0},
    {2, NormPath::kTwoPass, 8, detail::kNormTwoPassBlock, 0, true},
    {2, NormPath::kSplit, 8, detail::kNormTwoPassBlock, 0},
    {2, NormPath::kSplit, 1, detail::kNormTwoPassBlock, 0},
    {2, NormPath::kTile, 1, detail::kNormWarpBlock, 4},
};

/// The entries of kNormConfigs for elem_bytes-byte elements: [begin, end).
constexpr ConfigRange norm_configs_of(int elem_bytes) {
  return config_range(kNormConfigs,
                      [elem_bytes](const NormConfig& c) { return c.elem_bytes == elem_bytes; });
}
static_assert(norm_configs_of(4).end - norm_configs_of(4).begin == 21 &&
                  norm_configs_of(2).end - norm_configs_of(2).begin == 29,
              "each element size's entries together");

/// Every decision of one norm call.
struct NormPlan {
  NormPath path = NormPath::kWarp;  ///< the kernel family
  int pack = 1;                     ///< elements per access: 16 bytes (at the phase of x's
                                    ///< rows), or 1 (kWarp: rows of at most 128 columns off
                                    ///< the grid; kSplit: an operand off the grid)
  bool phased = false;              ///< 16-byte rows at any phase (else every operand and
                                    ///< the row stride on the grid)
  int packs = 0;                    ///< kWarp, kBlock: packs (accesses) a thread holds
  int lanes = kWarpSize;            ///< threads of a row: kWarp a group of 1, 2, 4, ..., 32
                                    ///< lanes (32 / lanes rows a warp); kBlock the block;
                                    ///< kTwoPass, kSplit: unused
  int split = 1;                    ///< kSplit: blocks a row is split over
  int tile_rows = 0;                ///< kTile: rows a tile holds (a multiple of 128 / lanes)
  int blocks_per_sm = 0;            ///< resident blocks per SM the plan counts on
  int64_t bytes = 0;                ///< bytes the plan moves through DRAM (re-reads included;
                                    ///< the weight counted once)
  LaunchShape shape;                ///< grid and block of the one launch
};

/// The configuration plan p launches with elem_bytes-byte elements.
inline NormConfig norm_config(const NormPlan& p, int elem_bytes) {
  return {elem_bytes, p.path, p.pack, static_cast<int>(p.shape.block.x), p.packs, p.phased};
}

/// The fewest bytes a call moves: every input read once (x, residual, weight, bias),
/// every output written once (y, x + residual, mean, rstd as floats).
/// weight_bytes / bias_bytes: 0 where absent.
inline int64_t norm_fewest_bytes(NormKind kind, int64_t rows, int64_t cols, int elem_bytes,
                                 int weight_bytes, int bias_bytes, bool save_mean, bool save_rstd) {
  const int64_t matrix = rows * cols * elem_bytes;
  const int64_t matrices = kind == NormKind::kAddRms ? 4 : 2;  // x, y (+ residual, sum)
  return matrices * matrix + cols * (weight_bytes + bias_bytes) +
         rows * 4 * ((save_mean ? 1 : 0) + (save_rstd ? 1 : 0));
}

/// The plan of one norm call over a rows x cols matrix (rows, cols >= 1) of elem_bytes-byte
/// elements (4 or 2). x_at: the common alignment (common_alignment) of x and of the row stride
/// Alignment(cols * elem_bytes): where x's rows sit on the 16-byte grid. all_at: the common
/// alignment of every operand (x, y, residual, sum, weight, bias: those given) and the row
/// stride: where it fits 16 bytes, the aligned entries (no phase). fewest: norm_fewest_bytes of
/// the call. Pure: no CUDA call.
inline NormPlan plan_norm(NormKind kind, int64_t rows, int64_t cols, int elem_bytes, Alignment x_at,
                          Alignment all_at, int64_t fewest, const DeviceInfo& d) {
  using namespace detail;
  NormPlan p;
  const int full = kMaxPackBytes / elem_bytes;
  const bool on_grid = x_at.fits(kMaxPackBytes);
  const bool aligned = on_grid && all_at.fits(kMaxPackBytes);
  // rows off the grid that a warp holds one element a lane, four at most: main's one-element
  // kWarp entries (the phased 16-byte access leaves most lanes idle there and its partial head
  // and tail run beside the body: bf16 83 columns 2.9x slower on the H200)
  const bool short_off_grid = !on_grid && cols <= int64_t{kWarpSize} * 4;
  p.pack = short_off_grid ? 1 : full;
  p.phased = p.pack > 1 && !aligned;
  // accesses a row spans at most (off the grid: a partial head and tail)
  const int64_t spans = on_grid ? ceil_div<int64_t>(cols, full) : (cols + 2 * full - 2) / full;
  p.bytes = fewest;
  // the register paths. kWarp where one of its entries holds the row in a warp: the row over
  // a group of `lanes` lanes (a power of two), 32 / lanes rows a warp; each entry at the
  // fewest lanes holding the row (accesses / packs, rounded up to a power of two) but no fewer
  // than `fill`; the entry with the most rows in flight a SM (resident blocks x rows a block),
  // the fewest packs among equals. Short rows on one warp each left most lanes idle and paid a
  // warp's reductions and row bookkeeping a row (bf16 3580361x32: 4 of 32 lanes busy, 0.20 of
  // SOL on the H200).
  const ConfigRange range = norm_configs_of(elem_bytes);
  const int64_t need = p.pack == 1 ? cols : spans;  // accesses of the row
  // kTile: short rows off the grid in tiles of consecutive rows (x and y move in 16-byte
  // chunks), a row over the fewest lanes holding it at Per elements a lane; the tile at most
  // kNormTileBytes of x, smaller so every block slot gets two tiles at least; where even one row
  // a group leaves fewer, the one-element kWarp entries below (a launch of few rows)
  for (std::size_t i = range.begin; i < range.end && short_off_grid; ++i) {
    const NormConfig& c = kNormConfigs[i];
    if (c.path != NormPath::kTile || need > int64_t{kWarpSize} * c.packs) continue;
    const int lanes = static_cast<int>(pow2_ceil(ceil_div<int64_t>(need, c.packs)));
    const int64_t groups = c.block / lanes;  // rows of a pass of the block
    const int64_t most = std::max<int64_t>(1, kNormTileBytes / (groups * cols * elem_bytes));
    const int bps_most =
        blocks_per_sm(d, c.block, kNormTileRegs,
                      norm_tile_bytes(kind, groups * most, cols, elem_bytes) + kNormTileStatic);
    if (bps_most < 1) break;
    const int64_t m = std::min<int64_t>(most, rows / (2 * int64_t{bps_most} * d.sm_count * groups));
    if (m < 1) break;
    p.path = NormPath::kTile;
    p.pack = 1;
    p.phased = false;
    p.packs = c.packs;
    p.lanes = lanes;
    p.tile_rows = static_cast<int>(groups * m);
    p.shape.smem = static_cast<size_t>(norm_tile_bytes(kind, p.tile_rows, cols, elem_bytes));
    p.blocks_per_sm = blocks_per_sm(d, c.block, kNormTileRegs,
                                    static_cast<int64_t>(p.shape.smem) + kNormTileStatic);
    p.shape.block = dim3(static_cast<unsigned>(c.block));
    p.shape.grid = dim3(static_cast<unsigned>(std::min<int64_t>(
        ceil_div<int64_t>(rows, p.tile_rows), int64_t{p.blocks_per_sm} * d.sm_count)));
    return p;
  }
  // rows a SM has in flight at most: a launch of fewer rows than its slots holds fewer
  const int64_t rows_per_sm = ceil_div<int64_t>(rows, d.sm_count);
  // kBlock's entry (a block a row): the most rows in flight a SM (resident blocks, at most
  // rows_per_sm), then the fewest packs a thread (2-byte: 2 before 4), then the smallest block.
  // So many rows take the entry of most bytes in flight a SM (bf16 4096x16384: 512 threads of
  // 4 packs, 2 blocks a SM, against 1024 of 2, one: 0.66 -> 0.95 of SOL on the H200), rows
  // that 2 packs a thread hold on as small a block keep it (10 blocks a SM at 48 registers
  // against 8 at 64: add_rms bf16 1199x1847 1.33x slower on 4 packs), and a launch of few
  // rows spreads each row over the most threads (bf16 1x4096 256 threads of 2 packs, 1.18x
  // faster than 128 of 4).
  std::size_t block_entry = range.end;
  int block_bps = 0;
  int64_t block_rows = 0;  // its rows in flight a SM
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const NormConfig& c = kNormConfigs[i];
    if (c.path != NormPath::kBlock || c.pack != p.pack || c.phased != p.phased ||
        c.block > d.max_threads_per_block || need > int64_t{c.block} * c.packs)
      continue;
    const int bps = blocks_per_sm(
        d, c.block, norm_regs(c.pack, c.pack * c.packs, false, d.code_arch, c.phased, c.block), 0);
    // (the table lists fewer packs first and smaller blocks first: the first of equals stays)
    const int64_t in_flight = std::min<int64_t>(bps, rows_per_sm);
    if (bps < 1 || in_flight <= block_rows) continue;
    block_entry = i;
    block_bps = bps;
    block_rows = in_flight;
  }
  // the fewest lanes that still give every SM a block of rows (rows x lanes >= SMs x block):
  // a launch of few rows stays spread over the SMs (up to 32 lanes a row: main's plan)
  int fill = 1;
  while (fill < kWarpSize && rows < ceil_div<int64_t>(int64_t{d.sm_count} * kNormWarpBlock, fill))
    fill *= 2;
  int64_t best_rows = 0;  // rows in flight a SM of the best kWarp entry so far
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const NormConfig& c = kNormConfigs[i];
    if (c.path != NormPath::kWarp || c.pack != p.pack || c.phased != p.phased ||
        c.block > d.max_threads_per_block || need > int64_t{kWarpSize} * c.packs)
      continue;
    const int lanes = std::max(fill, static_cast<int>(pow2_ceil(ceil_div<int64_t>(need, c.packs))));
    const int bps = blocks_per_sm(
        d, c.block, norm_regs(c.pack, c.pack * c.packs, true, d.code_arch, c.phased, c.block), 0);
    // more than 16 elements a lane (2-byte, 4 packs): only on groups of 8 lanes or more (a
    // group's load moves a whole 128-byte line of its row: on 1 or 2 lanes of 4 packs bf16 x32
    // and x64 rows ran 1.06-1.37x slower than on 2 / 4 lanes of 2 on the H200), and only where
    // they keep more rows in flight a SM than kBlock (a launch of few rows loads a row faster
    // over a block, one access a thread, than over a warp, 4 a lane: add_rms bf16 955x907
    // 1.58x slower on the warp)
    if (c.pack * c.packs > 16 && (lanes < 8 || std::min<int64_t>(int64_t{bps} * (c.block / lanes),
                                                                 rows_per_sm) <= block_rows))
      continue;
    if (int64_t{bps} * (c.block / lanes) <= best_rows) continue;
    best_rows = int64_t{bps} * (c.block / lanes);
    p.path = NormPath::kWarp;
    p.packs = c.packs;
    p.lanes = lanes;
    p.blocks_per_sm = bps;
    p.shape.block = dim3(static_cast<unsigned>(c.block));
    const int64_t blocks = ceil_div<int64_t>(rows, c.block / lanes);
    p.shape.grid = dim3(
        static_cast<unsigned>(grid_size_for(blocks * c.block, c.block, d, kDefaultWaves, bps)));
  }
  if (best_rows > 0) return p;
  if (block_entry < range.end) {
    const NormConfig& c = kNormConfigs[block_entry];
    p.path = c.path;
    p.packs = c.packs;
    p.lanes = c.block;
    p.blocks_per_sm = block_bps;
    p.shape.block = dim3(static_cast<unsigned>(c.block));
    p.shape.grid = dim3(
        static_cast<unsigned>(grid_size_for(rows * c.block, c.block, d, kDefaultWaves, block_bps)));
    return p;
  }
  // kTwoPass / kSplit: the row (x, and residual for add_rms_norm: its sum written then read
  // back) read a second time
  p.packs = 0;
  p.bytes = fewest + rows * cols * elem_bytes;
  const int bps = std::max(1, blocks_per_sm(d, kNormTwoPassBlock, 64, 0));
  const int64_t slots = int64_t{bps} * d.sm_count;
  // kSplit's accesses: 16-byte packs where every operand is on the grid, else one element each
  const int split_pack = aligned ? full : 1;
  const int64_t split =
      std::min<int64_t>(slots / rows, ceil_div<int64_t>(cols, split_pack) / kNormSplitMinAccesses);
  if (d.cooperative_launch && split >= 2) {
    p.pack = split_pack;
    p.phased = false;
    // few rows: every block slot busy (1..16 rows of a two-pass row kept 1..16 SMs busy)
    p.path = NormPath::kSplit;
    p.split = static_cast<int>(split);
    p.blocks_per_sm = bps;
    p.shape.block = dim3(kNormTwoPassBlock);
    p.shape.grid = dim3(static_cast<unsigned>(rows * split));
    p.shape.cooperative = true;
    return p;
  }
  p.path = NormPath::kTwoPass;
  p.pack = full;
  p.phased = !aligned;
  p.blocks_per_sm = std::max(1, blocks_per_sm(d, kNormTwoPassBlock, 128, 0));
  p.shape.block = dim3(kNormTwoPassBlock);
  p.shape.grid = dim3(static_cast<unsigned>(
      std::clamp<int64_t>(rows, 1, int64_t{p.blocks_per_sm} * d.sm_count * kDefaultWaves)));
  return p;
}

// ---------------------------------------------------------------------------------------
// The backward passes (rms_norm_backward, layer_norm_backward, add_rms_norm_backward), two
// paths, each weight gradient (dweight, layer_norm's dbias) as one row of float partials a
// block in the caller's workspace, added up by a second kernel in part order (deterministic):
//  - registers (packs >= 1): the row's dy and xhat in the registers of a warp (four rows a
//    block of 128: up to 256 columns, 128 one element per access) or of a block (8 floats a
//    thread: 16-byte packs on 128..1024 threads, 1024..8192 columns; one element per access 4
//    a thread on 256 / 1024 threads, 1024 / 4096 columns): dy and x read once; a thread's share
//    of the gradients summed in registers over its rows (a warp-per-row block's warps then
//    added through shared memory), the partials written once; parts = min(rows a block,
//    the resident blocks, norm_backward_parts_cap(cols)).
//  - streamed (packs == 0): 256 threads a row, rows p, p + parts, ... (parts = min(rows,
//    kNormBackwardParts)), the row read twice (the second read from L2 while the block's row
//    is there), the partials added to in global memory row by row. Rows no register entry
//    holds.
//  - split (d.cooperative_launch; the same rows when too few to give every block slot one:
//    rows <= slots / 2): each row over `split` blocks of 512 of a cooperative grid (chunks of
//    at least 8 accesses), the chunks' sums parked in dx across a grid barrier, then a second
//    read of the chunk that writes dx and the partials (parts = rows).

/// Blocks (and rows of partials) of the streamed backward kernel at most.
inline constexpr int64_t kNormBackwardParts = 512;

namespace detail {
// Registers a thread of a backward kernel is held to (dy, xhat and the gradients' sums of 8
// columns: what the register kernels build to without spills on sm_90).
inline constexpr int kNormBackwardRegs = 64;
// Blocks per SM the backward kernels' __launch_bounds__ ask for.
__host__ __device__ constexpr int norm_backward_min_blocks(int block) {
  const int b = 65536 / (block * kNormBackwardRegs);
  return b < 1 ? 1 : b;
}
// Static shared memory of a warp-per-row register kernel (its warps but the first park both
// gradients' sums of the warp's columns); 0 for a block per row.
constexpr int64_t norm_backward_smem(int threads, int block, int pack, int packs) {
  return threads == block ? 0 : int64_t{2} * (block / threads - 1) * threads * pack * packs * 4;
}
}  // namespace detail

/// Rows of partials (blocks) a backward call uses at most for rows of cols columns: 512, up to
/// 2048 for rows narrower than 1024 columns (blocks of 128 threads need that many to fill the
/// SMs), keeping the partials at most 2^21 floats past 512 rows of them. Pure.
constexpr int64_t norm_backward_parts_cap(int64_t cols) {
  const int64_t c = cols < 1 ? 1 : cols;
  const int64_t cap = (int64_t{1} << 21) / c;
  return cap < kNormBackwardParts ? kNormBackwardParts : (cap > 2048 ? 2048 : cap);
}

/// One kernel configuration of the backward passes (an entry of kNormBackwardConfigs); the
/// kind is the launcher's other template argument, as in launch_norm.
struct NormBackwardConfig {
  int elem_bytes = 0;  ///< 4: float; 2: __half, __nv_bfloat16
  int pack = 0;        ///< elements per access (16 bytes, or 1)
  int threads = 0;     ///< threads per row: 32 (a warp, block / 32 rows a block) or block
  int block = 0;       ///< threads per block
  int packs = 0;       ///< accesses of the row a thread holds in registers; 0: streamed
  bool split = false;  ///< streamed, each row over several blocks of a cooperative grid
};

/// Same kernel.
constexpr bool operator==(const NormBackwardConfig& a, const NormBackwardConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.pack == b.pack && a.threads == b.threads &&
         a.block == b.block && a.packs == b.packs && a.split == b.split;
}

/// Every configuration the backward passes launch (each for every kind), each element size's
/// entries together, in the order the plan tries them: the register entries, a warp per row
/// (blocks of 128; f32 1 / 2 packs a lane, 2-byte 1; one element per access 4) then a block
/// per row (8 floats of dy and of xhat a thread: f32 2 packs, 2-byte 1, on 128..1024 threads;
/// one element per access 4 on 256 / 1024), then the streamed ones (256 threads) and the split
/// ones (512); 16-byte packs where every operand and the row stride are on the 16-byte grid,
/// else one element per access.
inline constexpr NormBackwardConfig kNormBackwardConfigs[] = {
    // float
    {4, 4, 32, 128, 1},
    {4, 4, 32, 128, 2},
    {4, 1, 32, 128, 4},
    {4, 4, 128, 128, 2},
    {4, 4, 256, 256, 2},
    {4, 4, 512, 512, 2},
    {4, 4, 1024, 1024, 2},
    {4, 1, 256, 256, 4},
    {4, 1, 1024, 1024, 4},
    {4, 4, 256, 256, 0},
    {4, 1, 256, 256, 0},
    {4, 4, 512, 512, 0, true},
    {4, 1, 512, 512, 0, true},
    // __half, __nv_bfloat16
    {2, 8, 32, 128, 1},
    {2, 1, 32, 128, 4},
    {2, 8, 128, 128, 1},
    {2, 8, 256, 256, 1},
    {2, 8, 512, 512, 1},
    {2, 8, 1024, 1024, 1},
    {2, 1, 256, 256, 4},
    {2, 1, 1024, 1024, 4},
    {2, 8, 256, 256, 0},
    {2, 1, 256, 256, 0},
    {2, 8, 512, 512, 0, true},
    {2, 1, 512, 512, 0, true},
};

/// The entries of kNormBackwardConfigs for elem_bytes-byte elements.
constexpr ConfigRange norm_backward_configs_of(int elem_bytes) {
  return config_range(kNormBackwardConfigs, [elem_bytes](const NormBackwardConfig& c) {
    return c.elem_bytes == elem_bytes;
  });
}
static_assert(norm_backward_configs_of(4).end - norm_backward_configs_of(4).begin == 13 &&
                  norm_backward_configs_of(2).end - norm_backward_configs_of(2).begin == 12,
              "each element size's entries together");

/// Every decision of one backward call.
struct NormBackwardPlan {
  int pack = 1;        ///< elements per access
  int threads = 256;   ///< threads per row (32: a warp per row; else the block)
  int packs = 0;       ///< accesses of the row a thread holds (0: the streamed kernel)
  int split = 1;       ///< blocks a row is split over (> 1: the split kernel, cooperative)
  int64_t parts = 0;   ///< blocks of the row kernel, rows of partials
  int gradients = 0;   ///< weight gradients summed over the rows (dweight, dbias): 0..2
  int64_t bytes = 0;   ///< bytes the plan moves through DRAM: the fewest, the partials written
                       ///< and read back, and (streamed) the rows' second read where the rows
                       ///< in flight (parts of them) overflow half the L2
  LaunchShape shape;   ///< the row kernel (grid = parts)
  LaunchShape reduce;  ///< the partials' column sums: blocks of 32 columns x 8 slices, grid.y =
                       ///< gradients (nothing launched at 0)
};

/// The configuration plan p launches with elem_bytes-byte elements.
inline NormBackwardConfig norm_backward_config(const NormBackwardPlan& p, int elem_bytes) {
  return {elem_bytes, p.pack, p.threads, static_cast<int>(p.shape.block.x), p.packs, p.split > 1};
}

/// The fewest bytes a backward call moves: dy, x (add_rms_norm: the saved sum), dsum where
/// given (add_rms_norm), the weight where given, rstd and (layer_norm) mean read once; dx
/// written once, and each weight gradient wanted (`gradients` of them: dweight, dbias) once.
/// w_elem_bytes: the size of the weight's (and the gradients') element.
inline int64_t norm_backward_fewest_bytes(NormKind kind, int64_t rows, int64_t cols, int elem_bytes,
                                          int w_elem_bytes, bool weight, int gradients, bool dsum) {
  const int64_t matrix = rows * cols * elem_bytes;
  const int64_t matrices = 3 + (dsum ? 1 : 0);  // dy, x, dx (+ dsum)
  const int64_t stats = rows * 4 * (kind == NormKind::kLayer ? 2 : 1);
  const int64_t vectors = (weight ? 1 : 0) + gradients;
  return matrices * matrix + cols * w_elem_bytes * vectors + stats;
}

/// Bytes of workspace rms_norm_backward (and add_rms_norm_backward) needs to write dweight (a
/// rows x cols problem): one row of cols floats a block, min(rows, norm_backward_parts_cap(cols))
/// rows. 0 for an empty problem. Pure.
inline size_t rms_norm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<size_t>(std::min(rows, norm_backward_parts_cap(cols))) *
         static_cast<size_t>(cols) * 4;
}

/// Bytes of workspace add_rms_norm_backward needs to write dweight: as rms_norm_backward.
inline size_t add_rms_norm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  return rms_norm_backward_workspace_bytes(rows, cols);
}

/// Bytes of workspace layer_norm_backward needs to write dweight and / or dbias: a row of
/// partials a block for each (twice rms_norm_backward's). 0 for an empty problem. Pure.
inline size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  return 2 * rms_norm_backward_workspace_bytes(rows, cols);
}

/// Bytes of workspace the backward pass of `kind` needs for its weight gradients: the
/// function of that kind above. Pure.
inline size_t norm_backward_workspace_bytes(NormKind kind, int64_t rows, int64_t cols) {
  return kind == NormKind::kLayer ? layer_norm_backward_workspace_bytes(rows, cols)
                                  : rms_norm_backward_workspace_bytes(rows, cols);
}

/// The plan of a backward pass over rows x cols (>= 1) elem_bytes-byte elements: x_at the
/// common alignment of dy, x, dx (and dsum) and the row stride; w_at the weight's (Alignment()
/// without one), of weight_bytes-byte elements; gradients: the weight gradients wanted (0..2);
/// fewest: norm_backward_fewest_bytes of the call. The first register entry holding the row (a
/// warp, else the smallest block: the most rows in flight a SM); else the split kernel where
/// the rows are too few for the block slots and cooperative grids launch, else the streamed
/// kernel. Pure.
inline NormBackwardPlan plan_norm_backward(int64_t rows, int64_t cols, int elem_bytes,
                                           int weight_bytes, Alignment x_at, Alignment w_at,
                                           int gradients, int64_t fewest, const DeviceInfo& d) {
  using namespace detail;
  NormBackwardPlan p;
  const int full = kMaxPackBytes / elem_bytes;
  p.pack = x_at.fits(kMaxPackBytes) && w_at.fits(std::min(kMaxPackBytes, full * weight_bytes))
               ? full
               : 1;
  p.gradients = gradients;
  const int64_t vp = ceil_div<int64_t>(cols, p.pack);  // accesses a row needs
  const int64_t partial_rows = std::min(rows, norm_backward_parts_cap(cols));
  const ConfigRange range = norm_backward_configs_of(elem_bytes);
  bool registers = false;
  for (std::size_t i = range.begin; i < range.end && !registers; ++i) {
    const NormBackwardConfig& c = kNormBackwardConfigs[i];
    if (c.pack != p.pack || c.packs == 0 || c.block > d.max_threads_per_block ||
        vp > int64_t{c.threads} * c.packs)
      continue;
    const int bps = blocks_per_sm(d, c.block, kNormBackwardRegs,
                                  norm_backward_smem(c.threads, c.block, c.pack, c.packs));
    if (bps < 1) continue;
    registers = true;
    p.threads = c.threads;
    p.packs = c.packs;
    p.shape.block = dim3(static_cast<unsigned>(c.block));
    // one wave of blocks, each over its rows (block b: rows b, b + parts, ... a row per block;
    // 4b .. 4b + 3, then + 4 parts, ... a warp per row)
    p.parts = std::min(
        {partial_rows, ceil_div<int64_t>(rows, c.block / c.threads), int64_t{bps} * d.sm_count});
  }
  p.shape.grid = dim3(static_cast<unsigned>(p.parts));
  if (!registers) {
    p.threads = 256;
    p.packs = 0;
    p.shape.block = dim3(256);
    p.parts = std::min(rows, kNormBackwardParts);
    p.shape.grid = dim3(static_cast<unsigned>(p.parts));
    // few rows: every block slot busy (a streamed row kept one SM busy)
    const int bps = std::max(1, blocks_per_sm(d, 512, kNormBackwardRegs, 0));
    const int64_t slots = int64_t{bps} * d.sm_count;
    const int64_t split = std::min<int64_t>(slots / rows, vp / 8);
    // (rows <= kNormBackwardParts: the workspace's rows of partials)
    if (d.cooperative_launch && split >= 2 && rows <= kNormBackwardParts) {
      p.threads = 512;
      p.split = static_cast<int>(split);
      p.parts = rows;
      p.shape.block = dim3(512);
      p.shape.grid = dim3(static_cast<unsigned>(rows * split));
      p.shape.cooperative = true;
    }
  }
  p.reduce.block = dim3(256);
  p.reduce.grid =
      dim3(static_cast<unsigned>(grid_size_for(ceil_div<int64_t>(cols, 32) * 256, 256, d)),
           static_cast<unsigned>(std::max(gradients, 1)));
  // the partials: written by the row kernel, read by the column sums
  p.bytes = fewest + int64_t{gradients} * 2 * p.parts * cols * 4;
  // the streamed kernels' second read of dy and x comes from L2 while the rows in flight fit
  // half of it (split: every row is in flight)
  if (!registers && std::min(rows, p.parts) * 2 * cols * elem_bytes > int64_t{d.l2_bytes} / 2)
    p.bytes += 2 * rows * cols * elem_bytes;
  return p;
}

}  // namespace kernelkit
