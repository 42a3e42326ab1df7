// /work/main/00-HELPERS-READ-FIRST.md). Do NOT git stash/checkout/reset/commit/add in /work/main:
// the other helper has uncommitted files here too. Keep editing only your own files; when done
// (deadline 15:00 UTC), create your worktree (git -C /work/main worktree add /work/wt-<name> -b
// <name> 85c0129), copy ONLY your changed files there, delete this line from them, commit there,
// then `git -C /work/main checkout -- <your files>`. SPDX-License-Identifier: Apache-2.0
/// @file
/// The softmax plan: every decision of one softmax / log_softmax call (path, pack, lanes per
/// row, block size, chunk split, buffers, grid), made by pure host code from the shape, the
/// operands' alignment, their row strides (ld_in, ld_out: cols for contiguous rows) and the
/// device's facts. Host-tested on shapes x devices (tests/softmax/softmax_plan_test.cu). Every
/// kernel takes the row strides (64-bit row offsets), so strided rows that sit on the 16-byte
/// grid as contiguous ones would get the contiguous rows' plan; only kTile needs contiguous rows.
///
/// The paths, by row width (the plan's numbers are read from DeviceInfo, never assumed):
///  - kTile: short contiguous rows off the pack grid (a row spanning at most 16 packs, up to 61
///    f32 / 121 2-byte columns): tiles of
///    consecutive rows copied into shared memory as 16-byte packs of the flat array (no per-row
///    partial packs), each row then in the registers of a group of 1..8 lanes, written back and
///    copied out the same way.
///  - kWarp: the row in registers of a group of 1..32 lanes (several rows per warp when
///    short, two rows per lane group when a lane holds one pack); up to 32 floats a lane.
///  - kBlock: one block per row, the row in shared memory (read once, written once): any row
///    up to what one block may hold (227 KiB on an H100, 163 KiB A100, 99 KiB L4, 64 KiB T4).
///    Two row buffers when they fit without losing resident rows: the next row's loads are
///    in flight while this one is reduced and written. Rows on the pack grid (16-byte
///    aligned, whole packs) up to 16384 2-byte / 8192 f32 columns: the row in the block's
///    registers instead (on_grid; no shared-memory row).
///  - kCluster (d.clusters()): rows too wide for one block (or too few rows to fill the GPU):
///    a cluster of 2, 4 or 8 blocks per row, each holding a chunk in shared memory; the
///    blocks' (max, sum) pairs meet through distributed shared memory.
///  - kGrid (d.cooperative_launch): few rows of any width, or rows too wide for one block: a
///    cooperative grid of resident blocks; each round the grid holds rows_per_round rows,
///    split chunks each, in shared memory; the pairs meet in `out` across a grid barrier.
///    Rows wider than the grid's shared memory (~30 MB on an H100) keep a buffer's worth of
///    each chunk on chip and read the rest twice, every SM busy.
///  - kTwoPass: the fallback where no cooperative grid can be resident: one block per row,
///    an online (max, sum) pass, then a second read that writes.
/// Every chunk path keeps the chunk on chip between its one read and its one write (kGrid:
/// the part of it that fits).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernelkit/core/cluster.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit {

/// The row op: the one run-time choice the kernels take besides the plan. The forward kernels
/// (kSoftmaxConfigs; contiguous or strided rows) take the two forward kinds; the backward row
/// kernels (softmax_rows_plan.cuh, kSoftmaxRowsConfigs) the two backward ones.
enum class SoftmaxKind { kSoftmax, kLogSoftmax, kSoftmaxBackward, kLogSoftmaxBackward };
/** @var SoftmaxKind::kSoftmax
    exp(x - max) / sum of exp(x - max) over the row. */
/** @var SoftmaxKind::kLogSoftmax
    x - max - log(sum of exp(x - max)) over the row. */
/** @var SoftmaxKind::kSoftmaxBackward
    dx = y * (dy - sum of y * dy over the row), y = softmax(x). */
/** @var SoftmaxKind::kLogSoftmaxBackward
    dx = dy - exp(y) * (sum of dy over the row), y = log_softmax(x). */

/// The backward kinds read two inputs (y and dy) a row.
constexpr bool softmax_is_backward(SoftmaxKind k) {
  return k == SoftmaxKind::kSoftmaxBackward || k == SoftmaxKind::kLogSoftmaxBackward;
}

/// The kernel family of a call (see the paths in the file comment).
enum class SoftmaxPath { kWarp, kBlock, kCluster, kGrid, kTwoPass, kTile };
/** @var SoftmaxPath::kWarp
    The row in registers of a group of 1..32 lanes. */
/** @var SoftmaxPath::kBlock
    One block per row, the row in shared memory (or in registers: on_grid). */
/** @var SoftmaxPath::kCluster
    A cluster of 2, 4 or 8 blocks per row (sm_90), pairs meeting through distributed shared
    memory. */
/** @var SoftmaxPath::kGrid
    A cooperative grid of resident blocks, a row split in chunks across blocks. */
/** @var SoftmaxPath::kTwoPass
    The fallback: one block per row, an online (max, sum) pass, then a second read that
    writes. */
/** @var SoftmaxPath::kTile
    Short rows off the pack grid: tiles of rows staged in shared memory through 16-byte copies
    of the flat array, a row in the registers of a group of 1..8 lanes. */

namespace detail {

inline constexpr int kSoftmaxWarpBlock = 128;  // threads per block of the warp kernel
inline constexpr int kSoftmaxTileBlock = 128;  // threads per block of the tile kernel
// Bytes of rows one tile of the tile kernel holds (two tiles a block: the next one loads while
// this one is worked on): ~8 KB, 100+ KB in flight a SM at 12+ resident blocks.
inline constexpr int64_t kSoftmaxTileBytes = 8 * 1024;
inline constexpr int kSoftmaxWarpFloats = 32;  // most floats of one row a lane holds
// Registers per thread the two-pass kernel and the 1024-thread chunk blocks are held to by
// their __launch_bounds__ (min blocks = 1024 / Block): 1024 threads per SM.
inline constexpr int kSoftmaxChunkRegs = 64;
// Threads per SM the chunk kernel's __launch_bounds__ ask for (min blocks = this / Block):
// 40 registers for blocks of 128..512 threads (12 / 6 / 3 blocks a SM: while one block
// reduces or waits at a barrier the others keep loads in flight; the old kernels ran
// 1536-2048 threads a SM and reached the copy's rate on 2-64 KB rows), 64 for 1024.
inline constexpr int kSoftmaxChunkThreadsPerSm = 1536;
// Threads of the cluster path's blocks when several fit on an SM (3 at 40 registers).
inline constexpr int kSoftmaxClusterBlock = 512;
// kBlock with one row per SM loads nothing while its block reduces and meets the next
// row only during the write: below this many rows per SM a cluster split with several
// blocks per SM is preferred (the old cluster kernel's 64 KiB chunks x 3 blocks a SM beat
// one 128-200 KB row per SM by 8-15 % at 2.5-8 rows per SM).
inline constexpr int64_t kSoftmaxOneBlockMinRowsPerSm = 16;
// Few rows (too few to fill the SMs): the plan compares the bytes the busiest SM works
// through (softmax_sm_work x element bytes), at ~11 KB a us an SM (one block a SM, H100
// seed-2 run of issue 30: f32 clusters of 8-20K elements a block 7.8 us + 1 us per 11.2 KB,
// the grid 9.5 us + 1 us per 10.8 KB), with what a combine costs in that unit: a cluster
// barrier and DSMEM exchange 8 KB (~1 us), a grid round 16 KB (~1.5 us) more than that
// (fitted: 19 KB; f32 2x129193 grid 10.24 us against a cluster of 16 10.66, 3x189229 10.91
// against 11.87, f16 13x201037 a cluster of 8 11.90 against the grid's 12.86).
inline constexpr int64_t kSoftmaxClusterSyncBytes = 8 * 1024;
inline constexpr int64_t kSoftmaxGridRoundBytes = 24 * 1024;
// kTile, rows wider than two packs (softmax_tile_rows_kernel): its lane shapes, (lanes a row,
// 16-byte packs a lane), by lanes x packs; the plan takes the first whose lanes hold the most
// packs a row spans at the operands' alignment. Packs a lane: 3 or 4 (24 / 32 2-byte, 12 / 16 f32
// elements in registers). Wider rows (more than 48 packs: 2-byte from ~370 columns, f32 from
// ~186) take the warp path; narrower ones the narrow kernel (softmax_tile_narrow_kernel).
struct SoftmaxTileShape {
  int group, packs;
};
inline constexpr SoftmaxTileShape kSoftmaxTileShapes[] = {{1, 3}, {1, 4}, {2, 3}, {2, 4}, {4, 3},
                                                          {4, 4}, {8, 3}, {8, 4}, {16, 3}};
inline constexpr int64_t kSoftmaxTileMaxPacks = 48;
inline constexpr int kSoftmaxWideBlock = 1024;  // threads of the cluster, grid, two-pass blocks
// Dynamic shared memory the chunk kernel keeps before its buffers, by block size and how
// its blocks combine: the block reduction's slots (two sets of one pair a warp), the grid
// path's deferred 8 bytes, the cluster's pair exchange (core ClusterPush: kCluster only) and
// the deferred bytes' address (see softmax_chunk_kernel); a multiple of 32, so the buffers
// start on a 32-byte boundary: at 16 bytes past one the same kernels ran 4-11 % slower on the
// H200 (kBlock f32 3355x10000 +8.4 %, cluster f32 512x65536 +9.5 %, bench/NOTES.md).
__host__ __device__ constexpr int softmax_scratch_bytes(int block, BlockCombine combine) {
  const int push = combine == BlockCombine::kCluster ? static_cast<int>(sizeof(ClusterPush)) : 0;
  return (push + (2 * (block / kWarpSize) + 3) * 8 + 31) / 32 * 32;
}
// Packs per thread the kBlock block size aims for (the smallest block giving at most this,
// among those keeping half the SM's threads resident). Every row costs each thread a fixed
// amount (its span, the pipeline wait, the (max, sum) reduction, a barrier from 64 threads
// on): few packs a thread let that cost dominate (f16 22370x1500 on 128 threads, 1.5 packs
// a thread: 60 instructions an element, issue-bound at 0.55 of the copy).
inline constexpr int kSoftmaxPacksPerThread = 8;
// Bytes of a (max, sum) pair parked in `out` by the grid path.
inline constexpr int kSoftmaxPairBytes = 8;
// What one kGrid round costs beyond its bytes, in bytes the GPU would move meanwhile, per
// SM: the plan's price of one more round (it decides the split and rows per round, and
// kGrid against kCluster / kBlock). Measured on an H100 (s3, 02:42): ~6 us a round (f32
// 16x2097152: 16 rounds of 16 MiB, 11.7 us each against 5.6 at the copy's rate; f16: 6
// rounds of 24 MiB, 14.1 against 8.4; one round of 8 / 16 MiB: 12.8 / 15.1 us against 2.8 /
// 5.6): the statistics pass, the grid barrier, the pairs' round trip through L2, the
// pipeline's drain and ramp. 6 us x 23 GB/s a SM = 136 KiB (was priced 16 KiB, ~0.7 us).
inline constexpr int64_t kSoftmaxBarrierBytesPerSm = 136 * 1024;
// kGrid: the fewest packs a block's buffer holds (the chunk's head, its parked pair's
// elements included, is always on chip).
inline constexpr int64_t kSoftmaxGridMinPacks = 8;
// Total bytes (in + out) from which splitting rows that fit one block each over several
// blocks is worth its combine: 64 KiB per SM.
inline constexpr int64_t kSoftmaxSplitMinBytesPerSm = 64 * 1024;

// Blocks per SM that the warp kernel's __launch_bounds__ ask for, so that registers <=
// 65536 / (blocks x 128), by the floats a lane holds (packs x pack, twice when a lane holds
// one pack and so two rows): f32 16-byte packs up to 16 floats 12 blocks (40 registers),
// the others up to 16 floats 10 (48), 32 floats 8 (64): the most blocks that build
// without spills on sm_90 and sm_100 (2-byte one-pack and two-pack kernels spill 8 bytes
// at 40 on sm_100). Rows on the pack grid with one pack a lane (no element-wise code):
// f32 16 blocks (32 registers), 2-byte 12 (40), what they take unbounded on sm_90 / sm_100
// (0.95-0.99 of the copy at 349525x96).
// In sm_100 code (code_arch, the architecture the kernels were compiled for: __CUDA_ARCH__ / 10
// in the device pass, d.code_arch in the plan) 2-byte rows off the pack grid with one pack a
// lane in groups of 16 or 32 lanes take 9 blocks (56 registers): at 10 (48) f16 softmax with
// 32-lane groups spilled 4 bytes there and bf16 with 16-lane groups 8 bytes (the narrower
// groups and sm_90 code hold 10 without spills and are unchanged).
__host__ __device__ constexpr int softmax_warp_min_blocks(int pack, int group, int packs,
                                                          bool on_grid, int code_arch) {
  if (on_grid && packs == 1) return pack == 4 ? 16 : 12;
  if (code_arch == 100 && pack == 8 && packs == 1 && group >= 16) return 9;
  const int floats = pack * packs * (packs == 1 ? 2 : 1);
  return floats > 16 ? 8 : (pack == 4 ? 12 : 10);
}

// Blocks per SM that the pack-lane tile kernel's __launch_bounds__ ask for, by the elements of a
// row a lane holds (Per) and the architecture the kernel was compiled for (code_arch, as in
// softmax_warp_min_blocks): 12, 16 or 24 elements 8 blocks of 128 threads (64 registers; at 48,
// f32 8 x 4 spilled 32 bytes on sm_89), 32 7 (72: at 64, bf16 8 x 4 spilled 48 bytes on sm_80),
// 6 in code before sm_90 (80: at 72, 2-byte log_softmax 4 x 4 spilled 4-16 bytes on sm_80..89,
// bf16 8 x 4 on sm_75).
__host__ __device__ constexpr int softmax_tile_min_blocks(int per, int code_arch) {
  return per > 24 ? (code_arch < 90 ? 6 : 7) : (per > 8 ? 8 : 12);
}
// The narrow tile kernel's (rows of at most two packs, every width in one kernel: 7 2-byte columns
// hold 56 elements a lane): 7 blocks (72 registers: at 64, bf16 log_softmax spilled 8 bytes on
// sm_120), 6 in sm_80..sm_89 code (80: at 72, f16 log_softmax spilled 8-16 bytes there; sm_75
// code spilled 4 bytes at 80, none at 72).
__host__ __device__ constexpr int softmax_tile_narrow_min_blocks(int code_arch) {
  return code_arch >= 80 && code_arch < 90 ? 6 : 7;
}
// The widest rows of the narrow tile kernel: two packs (16 2-byte / 8 f32 columns).
template <typename T>
inline constexpr int kSoftmaxTileNarrowMax = 2 * kMaxPackSize<T>;
// Rows a lane of the narrow tile kernel holds at width cols (packs of `pack` elements): where the
// tile's span starts on a pack boundary (aligned), the fewest whose elements are whole packs
// (pack / gcd(cols, pack)) if those are at most 64 elements; else one.
__host__ __device__ constexpr int softmax_narrow_rows_per_lane(int cols, int pack, bool aligned) {
  int g = pack;
  while (cols % g != 0)
    g /= 2;
  const int r = pack / g;
  return aligned && r * cols <= 64 ? r : 1;
}

// kBlock on the pack grid (SoftmaxPlan.on_grid): the row in the registers of one block,
// Block threads x Packs 16-byte packs a thread (softmax_block_registers_kernel), the old
// library's block-register kernel for aligned rows only (0.93-0.99 of the copy on f16 rows
// of 3000..16384). Its shapes are the kBlock on_grid entries of kSoftmaxConfigs, by capacity
// (block x packs x 8 columns of a 2-byte type: 2048, 4096, 8192, 16384; x 4 f32 columns: 1024
// .. 8192); the plan takes the one holding the row with the most resident blocks (rows in
// flight) a SM.
// Blocks per SM the register kernel's __launch_bounds__ ask for (capped by the compiled
// architecture's threads and blocks per SM): 2 packs a thread all the SM's threads (32
// registers on sm_80 / 90 / 100, what the old kernel took), 4 packs 1536 threads (40: at
// 32, log_softmax 512 x 4 spills 4 bytes on sm_80; sm_90 takes 32 unbounded).
__host__ __device__ constexpr int softmax_registers_min_blocks(int block, int packs) {
  return (packs <= 2 ? 2048 : 1536) / block;
}
// Static shared memory of the register kernel: the block reduction's two slot sets.
constexpr int softmax_registers_smem(int block) {
  return 2 * (block / kWarpSize) * 8;
}

// Registers per thread that __launch_bounds__(block, min_blocks_per_sm(block, cap))
// guarantee on device d (the same rule min_blocks_per_sm applies to the compiled
// architecture's threads and blocks per SM), in the allocation unit of 8.
constexpr int softmax_regs_bound(const DeviceInfo& d, int block, int cap) {
  int min_blocks = std::min(d.max_threads_per_sm / block, d.max_blocks_per_sm);
  min_blocks = min_blocks < 1 ? 1 : (min_blocks > cap ? cap : min_blocks);
  const int regs = d.regs_per_sm / (min_blocks * block) / 8 * 8;
  return regs > 255 ? 255 : regs;
}

// The shared memory of one of `blocks` blocks that share an SM equally (128-byte units, at
// most what a block may ask for): a block asking for it leaves no room for another block on
// its SM, so at most `blocks` are resident whatever registers the compiler gave the kernel.
constexpr int64_t softmax_sm_share(const DeviceInfo& d, int blocks) {
  const int64_t cap = d.smem_per_sm / blocks - d.smem_reserved_per_block;
  return std::min<int64_t>(cap / 128 * 128, d.smem_per_block_optin);
}

// First column of chunk j of a row split into `split` chunks (j = split gives cols):
// balanced (lengths differ by at most 2 packs), and for 0 < j < split aligned in memory to
// a whole pack (`lead` = elements of the row before its first aligned address), so only
// the first chunk has a partial head pack and only the last a partial tail. Requires
// cols / split >= pack. Host and device.
KERNELKIT_HD int64_t softmax_chunk_begin(int64_t j, int split, int64_t cols, int pack,
                                         int64_t lead) {
  if (j == 0) return 0;
  if (j >= split) return cols;
  const int64_t q = cols / split, r = cols % split;
  const int64_t x = j * q + (j < r ? j : r);
  // round x down to a column whose address is a pack boundary (x >= pack > lead)
  return x - ((x - lead) % pack + pack) % pack;
}

// Capacity in packs a buffer needs for any chunk of a row of `cols` split `split` ways
// (any alignment of the row).
constexpr int64_t softmax_chunk_packs(int64_t cols, int split, int pack) {
  return split == 1 ? (cols + 2 * pack - 2) / pack : (cols / split + 1) / pack + 3;
}

}  // namespace detail

/// What one softmax call does. Fields a path does not use keep their defaults.
struct SoftmaxPlan {
  SoftmaxPath path = SoftmaxPath::kWarp;  ///< the kernel family
  /// Elements per access: 16 / elem_bytes when row r of in and of out have the same offset
  /// within 16 bytes for every r (each row then has one partial pack at its head and one at its
  /// tail, handled inside the vectorized loops), else 1; 8 / elem_bytes (kWarp on the grid,
  /// 2-byte types only) when every row starts on an 8-byte boundary but not every one on a
  /// 16-byte one.
  int pack = 1;
  /// kWarp: lanes that share one row (1, 2, ..., 32) and packs each lane holds; the lanes of
  /// a group hold group x packs packs, at least the row's. kBlock on the grid: packs a thread
  /// holds (group unused). kTile: lanes that share one row (1, 2, 4, 8, 16) and elements of it
  /// each lane holds (4, 8 or 16: group x packs >= cols).
  /// @{
  int group = 32;
  /// @}
  int packs = 1;  ///< see group
  /// kWarp: every row starts on a pack boundary and is a whole number of packs (pack > 1,
  /// in and the row stride aligned to the pack's bytes, cols % pack == 0): a lane's pack is wholly
  /// in its row or past it, so the kernel has no head offset and no element-wise end packs. kBlock
  /// (up to 16384 2-byte / 8192 f32 columns): the same rows held in the registers of the block
  /// (shape.block threads x `packs` packs a thread, no shared-memory row: split 1, buffers 0)
  /// instead of in shared memory.
  bool on_grid = false;
  /// Chunk paths: blocks that share one row (1 for kBlock / kTwoPass, the cluster size for
  /// kCluster, chunks per row for kGrid); chunk j is [softmax_chunk_begin(j), ...(j + 1)).
  int split = 1;
  /// Chunk paths: buffers per block (2: the next task's chunk is loaded while this one is
  /// reduced and written) and the bytes of one (a multiple of 16). kTile: 2 buffers of a tile.
  /// @{
  int buffers = 1;
  /// @}
  int64_t buffer_bytes = 0;  ///< see buffers
  /// kGrid: rows the grid holds at once and rounds (rows_per_round x rounds >= rows); the
  /// grid has rows_per_round x split busy blocks. kTile: rows of one tile (rounds unused).
  int64_t rows_per_round = 0;
  int64_t rounds = 0;  ///< see rows_per_round
  /// Resident blocks per SM the grid is sized for: blocks_per_sm() with the register bound
  /// of the kernel's __launch_bounds__ and the planned shared memory.
  int blocks_per_sm = 0;
  /// How well the chosen path fills the GPU (busy block slots over the slots, over every
  /// round or wave), the figure the choice between the chunk paths compared.
  double fill = 0;
  /// Grid, block, dynamic shared memory, cluster and cooperative flag of the one launch.
  /// kCluster: launch_softmax lowers the grid to the clusters the runtime reports resident
  /// (the plan's estimate does not know how clusters pack into GPCs).
  LaunchShape shape;
};

/// One kernel configuration of softmax: the template arguments launch_softmax gives a kernel
/// besides the element type and the kind (an entry of kSoftmaxConfigs). Fields a path does not
/// take are 0 / false.
struct SoftmaxConfig {
  int elem_bytes = 0;                     ///< 4: float; 2: __half, __nv_bfloat16
  SoftmaxPath path = SoftmaxPath::kWarp;  ///< the kernel family
  int pack = 0;                           ///< elements per access
  int block = 0;                          ///< threads per block
  int group = 0;                          ///< kWarp: lanes that share one row
  int packs = 0;         ///< kWarp: packs a lane holds; kBlock on the grid: packs a thread holds
  bool on_grid = false;  ///< kWarp, kBlock: every row on the pack grid (kBlock: in registers)
};

/// Same kernel.
constexpr bool operator==(const SoftmaxConfig& a, const SoftmaxConfig& b) {
  return a.elem_bytes == b.elem_bytes && a.path == b.path && a.pack == b.pack &&
         a.block == b.block && a.group == b.group && a.packs == b.packs && a.on_grid == b.on_grid;
}

namespace detail {
constexpr SoftmaxConfig softmax_warp_config(int elem_bytes, int pack, int group, int packs,
                                            bool on_grid) {
  return {elem_bytes, SoftmaxPath::kWarp, pack, kSoftmaxWarpBlock, group, packs, on_grid};
}
constexpr SoftmaxConfig softmax_registers_config(int elem_bytes, int block, int packs) {
  return {elem_bytes, SoftmaxPath::kBlock, kMaxPackBytes / elem_bytes, block, 0, packs, true};
}
constexpr SoftmaxConfig softmax_chunk_config(int elem_bytes, SoftmaxPath path, int pack,
                                             int block) {
  return {elem_bytes, path, pack, block, 0, 0, false};
}
constexpr SoftmaxConfig softmax_tile_config(int elem_bytes, int group, int per) {
  return {elem_bytes, SoftmaxPath::kTile, kMaxPackBytes / elem_bytes, kSoftmaxTileBlock, group, per,
          false};
}
}  // namespace detail

/// Every kernel configuration softmax and log_softmax launch, each element size's entries
/// together (float, then the 2-byte types). plan_softmax returns one of them
/// (softmax_config), launch_softmax instantiates exactly these, and the plan tests check
/// that every plan is one and every one is planned for some shape.
/// - kTile, 128 threads, 16-byte packs: rows of at most two packs, 1 lane holding 1 (the narrow
///   kernel: every width in it, a lane holding a row or whole packs of rows); wider ones in the
///   lanes x packs of kSoftmaxTileShapes (packs: the elements a lane holds, 3 or 4 packs).
/// - kWarp, 128 threads: one element per access (in and out at different offsets within 16
///   bytes): 32 lanes holding 1, 8 or 32 elements; 16-byte packs, rows on the pack grid:
///   groups of 1..32 lanes holding one pack, 32 lanes holding 2..32 floats; off the grid
///   (strided rows, and contiguous rows of more than kSoftmaxTileMaxPacks packs) 32 lanes holding
///   1..32 floats, 32 lanes holding 8..32 floats; 2-byte rows on the 8-byte
///   grid only: 8-byte packs, the same lane shapes, on the grid.
/// - kBlock on the grid, the row in registers: 128 x 2 (2-byte types), 256 x 2, 512 x 2, 512 x
///   4 packs. A float row 128 x 2 packs hold (1024 columns) is the warp path's.
/// - kBlock in shared memory: 32 (2-byte types), 64..1024 threads; one element per access: 256
///   or 1024. Every float row of the kBlock path spans more than 256 packs (fewer are the warp
///   path's): more than kSoftmaxPacksPerThread packs a thread of 32.
/// - kCluster: 512 or 1024 threads, 16-byte packs; kGrid, kTwoPass: 1024 threads, 16-byte
///   packs or one element per access.
inline constexpr SoftmaxConfig kSoftmaxConfigs[] = {
    // float
    detail::softmax_tile_config(4, 1, 1),
    detail::softmax_tile_config(4, 1, 12),
    detail::softmax_tile_config(4, 1, 16),
    detail::softmax_tile_config(4, 2, 12),
    detail::softmax_tile_config(4, 2, 16),
    detail::softmax_tile_config(4, 4, 12),
    detail::softmax_tile_config(4, 4, 16),
    detail::softmax_tile_config(4, 8, 12),
    detail::softmax_tile_config(4, 8, 16),
    detail::softmax_tile_config(4, 16, 12),
    detail::softmax_warp_config(4, 1, 32, 1, false),
    detail::softmax_warp_config(4, 1, 32, 8, false),
    detail::softmax_warp_config(4, 1, 32, 32, false),
    detail::softmax_warp_config(4, 4, 32, 1, false),
    detail::softmax_warp_config(4, 4, 32, 2, false),
    detail::softmax_warp_config(4, 4, 32, 4, false),
    detail::softmax_warp_config(4, 4, 32, 8, false),
    detail::softmax_warp_config(4, 4, 1, 1, true),
    detail::softmax_warp_config(4, 4, 2, 1, true),
    detail::softmax_warp_config(4, 4, 4, 1, true),
    detail::softmax_warp_config(4, 4, 8, 1, true),
    detail::softmax_warp_config(4, 4, 16, 1, true),
    detail::softmax_warp_config(4, 4, 32, 1, true),
    detail::softmax_warp_config(4, 4, 32, 2, true),
    detail::softmax_warp_config(4, 4, 32, 4, true),
    detail::softmax_warp_config(4, 4, 32, 8, true),
    detail::softmax_registers_config(4, 256, 2),
    detail::softmax_registers_config(4, 512, 2),
    detail::softmax_registers_config(4, 512, 4),
    detail::softmax_chunk_config(4, SoftmaxPath::kBlock, 4, 64),
    detail::softmax_chunk_config(4, SoftmaxPath::kBlock, 4, 128),
    detail::softmax_chunk_config(4, SoftmaxPath::kBlock, 4, 256),
    detail::softmax_chunk_config(4, SoftmaxPath::kBlock, 4, 512),
    detail::softmax_chunk_config(4, SoftmaxPath::kBlock, 4, 1024),
    detail::softmax_chunk_config(4, SoftmaxPath::kBlock, 1, 256),
    detail::softmax_chunk_config(4, SoftmaxPath::kBlock, 1, 1024),
    detail::softmax_chunk_config(4, SoftmaxPath::kCluster, 4, 512),
    detail::softmax_chunk_config(4, SoftmaxPath::kCluster, 4, 1024),
    detail::softmax_chunk_config(4, SoftmaxPath::kGrid, 4, 1024),
    detail::softmax_chunk_config(4, SoftmaxPath::kGrid, 1, 1024),
    detail::softmax_chunk_config(4, SoftmaxPath::kTwoPass, 4, 1024),
    detail::softmax_chunk_config(4, SoftmaxPath::kTwoPass, 1, 1024),
    // __half, __nv_bfloat16
    detail::softmax_tile_config(2, 1, 1),
    detail::softmax_tile_config(2, 1, 24),
    detail::softmax_tile_config(2, 1, 32),
    detail::softmax_tile_config(2, 2, 24),
    detail::softmax_tile_config(2, 2, 32),
    detail::softmax_tile_config(2, 4, 24),
    detail::softmax_tile_config(2, 4, 32),
    detail::softmax_tile_config(2, 8, 24),
    detail::softmax_tile_config(2, 8, 32),
    detail::softmax_tile_config(2, 16, 24),
    detail::softmax_warp_config(2, 1, 32, 1, false),
    detail::softmax_warp_config(2, 1, 32, 8, false),
    detail::softmax_warp_config(2, 1, 32, 32, false),
    detail::softmax_warp_config(2, 8, 32, 1, false),
    detail::softmax_warp_config(2, 8, 32, 2, false),
    detail::softmax_warp_config(2, 8, 32, 4, false),
    detail::softmax_warp_config(2, 8, 1, 1, true),
    detail::softmax_warp_config(2, 8, 2, 1, true),
    detail::softmax_warp_config(2, 8, 4, 1, true),
    detail::softmax_warp_config(2, 8, 8, 1, true),
    detail::softmax_warp_config(2, 8, 16, 1, true),
    detail::softmax_warp_config(2, 8, 32, 1, true),
    detail::softmax_warp_config(2, 8, 32, 2, true),
    detail::softmax_warp_config(2, 8, 32, 4, true),
    detail::softmax_warp_config(2, 4, 1, 1, true),
    detail::softmax_warp_config(2, 4, 2, 1, true),
    detail::softmax_warp_config(2, 4, 4, 1, true),
    detail::softmax_warp_config(2, 4, 8, 1, true),
    detail::softmax_warp_config(2, 4, 16, 1, true),
    detail::softmax_warp_config(2, 4, 32, 1, true),
    detail::softmax_warp_config(2, 4, 32, 2, true),
    detail::softmax_warp_config(2, 4, 32, 4, true),
    detail::softmax_warp_config(2, 4, 32, 8, true),
    detail::softmax_registers_config(2, 128, 2),
    detail::softmax_registers_config(2, 256, 2),
    detail::softmax_registers_config(2, 512, 2),
    detail::softmax_registers_config(2, 512, 4),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 8, 32),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 8, 64),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 8, 128),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 8, 256),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 8, 512),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 8, 1024),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 1, 256),
    detail::softmax_chunk_config(2, SoftmaxPath::kBlock, 1, 1024),
    detail::softmax_chunk_config(2, SoftmaxPath::kCluster, 8, 512),
    detail::softmax_chunk_config(2, SoftmaxPath::kCluster, 8, 1024),
    detail::softmax_chunk_config(2, SoftmaxPath::kGrid, 8, 1024),
    detail::softmax_chunk_config(2, SoftmaxPath::kGrid, 1, 1024),
    detail::softmax_chunk_config(2, SoftmaxPath::kTwoPass, 8, 1024),
    detail::softmax_chunk_config(2, SoftmaxPath::kTwoPass, 1, 1024),
};

/// The entries of kSoftmaxConfigs for elem_bytes-byte elements: [begin, end).
constexpr ConfigRange softmax_configs_of(int elem_bytes) {
  return config_range(kSoftmaxConfigs,
                      [elem_bytes](const SoftmaxConfig& c) { return c.elem_bytes == elem_bytes; });
}
static_assert(softmax_configs_of(4).end - softmax_configs_of(4).begin == 42 &&
                  softmax_configs_of(2).end - softmax_configs_of(2).begin == 51,
              "each element size's entries together");

/// The configuration plan p launches with elem_bytes-byte elements: p's fields that become
/// template arguments, the others 0 / false. An entry of kSoftmaxConfigs for every plan
/// plan_softmax makes; launch_softmax answers cudaErrorInvalidValue for any other.
inline SoftmaxConfig softmax_config(const SoftmaxPlan& p, int elem_bytes) {
  const int block = static_cast<int>(p.shape.block.x);
  switch (p.path) {
    case SoftmaxPath::kWarp:
      return detail::softmax_warp_config(elem_bytes, p.pack, p.group, p.packs, p.on_grid);
    case SoftmaxPath::kBlock:
      if (p.on_grid) return {elem_bytes, p.path, p.pack, block, 0, p.packs, true};
      return detail::softmax_chunk_config(elem_bytes, p.path, p.pack, block);
    case SoftmaxPath::kTile:
      return {elem_bytes, p.path, p.pack, block, p.group, p.packs, false};
    default:
      return detail::softmax_chunk_config(elem_bytes, p.path, p.pack, block);
  }
}

namespace detail {

// kWarp when the row fits the lanes of one warp: the narrowest group with one pack a lane
// (rows on the grid; off it 32 lanes one pack a lane), else 32 lanes with the fewest packs a lane
// (pack > 1: 2, 4 or 8 up to 32 floats; pack 1: 1, 8 or 32 elements, the rare in / out alignment
// mismatch).
inline bool softmax_plan_warp(int64_t rows, int64_t vp, bool on_grid, const DeviceInfo& d,
                              SoftmaxPlan* p) {
  if (vp > int64_t{kWarpSize} * (kSoftmaxWarpFloats / p->pack)) return false;
  p->path = SoftmaxPath::kWarp;
  p->on_grid = on_grid && p->pack > 1;
  if (p->pack > 1 && vp <= kWarpSize) {
    // off the grid, rows of at most kSoftmaxTileMaxPacks packs are kTile's when contiguous;
    // strided ones take 32 lanes (the narrower off-grid groups have no entry)
    p->group = p->on_grid ? static_cast<int>(pow2_ceil(vp)) : kWarpSize;
    p->packs = 1;
  } else {
    const int64_t need = ceil_div<int64_t>(vp, kWarpSize);
    p->group = kWarpSize;
    p->packs =
        p->pack > 1 ? static_cast<int>(pow2_ceil(need)) : (need <= 1 ? 1 : (need <= 8 ? 8 : 32));
  }
  const int rows_per_group = p->packs == 1 ? 2 : 1;
  const int64_t rows_per_block = int64_t{kSoftmaxWarpBlock / p->group} * rows_per_group;
  const int regs = softmax_regs_bound(
      d, kSoftmaxWarpBlock,
      softmax_warp_min_blocks(p->pack, p->group, p->packs, p->on_grid, d.code_arch));
  p->blocks_per_sm = blocks_per_sm(d, kSoftmaxWarpBlock, regs, 0);
  const int64_t blocks = ceil_div(rows, rows_per_block);
  p->shape.block = dim3(kSoftmaxWarpBlock);
  p->shape.grid = dim3(static_cast<unsigned>(grid_size_for(
      blocks * kSoftmaxWarpBlock, kSoftmaxWarpBlock, d, kDefaultWaves, p->blocks_per_sm)));
  p->fill = 1.0;
  return true;
}

// The share of the copy's rate a path keeps (its `fill`) when `tasks` tasks (rows), each
// on `width` blocks, run at most `per_round` at a time on `slots` block slots of d.sm_count
// SMs: a round with k tasks moves k x width slots' worth of bytes at min(1, kSoftmaxSmShare x
// SMs busy / SMs) of the rate (the blocks spread over the SMs first; an SM with its chunks
// in flight pulls several times its even share, so a partial round only slows the whole
// when few SMs are busy).
inline constexpr double kSoftmaxSmShare = 3.0;

inline double softmax_fill(int64_t tasks, int64_t per_round, int64_t width, int64_t slots,
                           int sm_count) {
  const auto round_time = [&](int64_t k) {
    if (k == 0) return 0.0;
    const double busy = double(std::min<int64_t>(sm_count, k * width));
    const double rate = std::min(1.0, kSoftmaxSmShare * busy / sm_count);
    return double(k * width) / double(slots) / rate;
  };
  const double time =
      double(tasks / per_round) * round_time(per_round) + round_time(tasks % per_round);
  return double(tasks) * double(width) / double(slots) / time;
}

// kTile: contiguous rows off the pack grid (16-byte packs: in and out at the same offset within 16
// bytes) spanning at most kSoftmaxTileMaxPacks packs. On the warp path every such row has partial
// end packs moved element by element, and short rows are mostly those (issue 30: 2-byte 2682433x2
// 0.15 of the speed of light, 3858350x3 0.19, 765422x14 0.32; f32 343264x65 0.46). Tiles of
// consecutive rows, each one span of the flat array (whole 16-byte packs but its two ends), staged
// in shared memory; two buffers a block. Rows of at most two packs: the narrow kernel
// (softmax_tile_narrow_kernel, p->packs 1), softmax_narrow_rows_per_lane rows a lane (whole packs
// where in is on the 16-byte grid), the block's 128 lanes a unit of rows (2-byte: a word a row
// past the buffers). Wider rows: the pack-lane kernel (softmax_tile_rows_kernel), the
// first shape of kSoftmaxTileShapes whose group x packs holds the most packs a row spans (the
// rows' offsets within their pack: in's, plus multiples of gcd(cols, pack)); p->packs is the
// elements a lane holds (packs x pack); a unit is a pass, 128 / group rows. A tile holds about
// kSoftmaxTileBytes of rows, a whole number of units, fewer when that gives the resident blocks a
// tile each. The grid: one block per tile up to the resident blocks, which loop over the rest.
inline bool softmax_plan_tile(int64_t rows, int64_t cols, int elem_bytes, int64_t offset0,
                              const DeviceInfo& d, SoftmaxPlan* p) {
  const int pack = p->pack;
  int group = 1, per = 0;
  int64_t side = 0;  // shared memory past the two buffers: the pack-lane kernel's heads and tails
  int64_t unit = 0;  // rows a block works on at once
  if (cols <= 2 * pack) {
    // the narrow kernel: a lane holds rows_per_lane rows (whole packs, where the span starts on
    // a pack boundary), the block 128 lanes'
    per = 1;
    unit = int64_t{softmax_narrow_rows_per_lane(static_cast<int>(cols), pack, offset0 == 0)} *
           kSoftmaxTileBlock;
  } else {
    int64_t g = pack;  // gcd(cols, pack): pack is a power of two
    while (cols % g != 0)
      g /= 2;
    const int64_t span = ceil_div<int64_t>(cols + offset0 % g + pack - g, pack);
    for (const SoftmaxTileShape& t : kSoftmaxTileShapes) {
      if (int64_t{t.group} * t.packs >= span) {
        group = t.group;
        per = t.packs * pack;
        break;
      }
    }
    if (per == 0) return false;
    // (softmax_tile_rows_kernel: two sets of tails, three carry slots, the heads)
    side = (3 * int64_t{kSoftmaxTileBlock / group} + 3) * kMaxPackBytes;
    unit = kSoftmaxTileBlock / group;  // rows of a pass
  }
  const int64_t unit_bytes = unit * cols * elem_bytes;
  const int64_t most = std::max<int64_t>(1, (kSoftmaxTileBytes + unit_bytes / 2) / unit_bytes);
  const int64_t pack_bytes = int64_t{pack} * elem_bytes;
  const int regs = softmax_regs_bound(d, kSoftmaxTileBlock,
                                      per == 1 ? softmax_tile_narrow_min_blocks(d.code_arch)
                                               : softmax_tile_min_blocks(per, d.code_arch));
  const auto buffer = [&](int64_t units) {
    return round_up<int64_t>(softmax_chunk_packs(units * unit * cols, 1, pack) * pack_bytes, 16);
  };
  // past the two buffers: the pack-lane kernel's tails and heads; the narrow kernel's word a
  // row (2-byte rows off the packs)
  const auto smem = [&](int64_t units) {
    return 2 * buffer(units) +
           (per == 1 ? (elem_bytes == 2 ? round_up<int64_t>(units * unit * 4, 16) : 0) : side);
  };
  int64_t units = most;
  int bps = blocks_per_sm(d, kSoftmaxTileBlock, regs, smem(units));
  if (bps < 1) return false;
  // fewer units a tile where the tiles would not give every resident block one
  const int64_t fit = rows / (unit * int64_t{bps} * d.sm_count);
  if (fit < most) {
    units = std::max<int64_t>(1, fit);
    bps = blocks_per_sm(d, kSoftmaxTileBlock, regs, smem(units));
  }
  const int64_t tile_rows = units * unit;
  p->path = SoftmaxPath::kTile;
  p->on_grid = false;
  p->group = group;
  p->packs = per;
  p->split = 1;
  p->buffers = 2;
  p->buffer_bytes = buffer(units);
  p->rows_per_round = tile_rows;
  p->rounds = 0;
  p->blocks_per_sm = bps;
  const int64_t tiles = ceil_div(rows, tile_rows);
  const int64_t slots = int64_t{bps} * d.sm_count;
  p->fill = softmax_fill(tiles, slots, 1, slots, d.sm_count);
  p->shape.block = dim3(kSoftmaxTileBlock);
  p->shape.grid = dim3(static_cast<unsigned>(std::min(tiles, slots)));
  p->shape.smem = static_cast<size_t>(smem(units));
  return true;
}

// kBlock: one block per row, the row in shared memory. The smallest block (32..1024
// threads) with at most kSoftmaxPacksPerThread packs a thread whose resident blocks (one
// buffer) hold at least half the SM's threads; without one, the smallest with at most
// that many packs a thread (pack 1: 256 or 1024 threads). Two buffers when they cost no
// resident block and each block gets two rows or more (one buffer also loads the next row
// during the write, pack by pack; two start it before the write).
inline bool softmax_plan_block(int64_t rows, int64_t vp, int64_t pack_bytes, const DeviceInfo& d,
                               SoftmaxPlan* p) {
  const int64_t buf = round_up<int64_t>(vp * pack_bytes, 16);
  const auto regs_of = [&](int b) {
    return softmax_regs_bound(d, b, kSoftmaxChunkThreadsPerSm / b);
  };
  int block = 0, fallback = kSoftmaxWideBlock;
  for (const int b : {32, 64, 128, 256, 512, 1024}) {
    if (ceil_div<int64_t>(vp, b) > kSoftmaxPacksPerThread) continue;
    fallback = std::min(fallback, b);
    const int resident =
        blocks_per_sm(d, b, regs_of(b), softmax_scratch_bytes(b, BlockCombine::kNone) + buf);
    if (int64_t{resident} * b >= d.max_threads_per_sm / 2) {
      block = b;
      break;
    }
  }
  if (block == 0) block = fallback;
  if (p->pack == 1) block = block <= 256 ? 256 : 1024;
  const int regs = regs_of(block);
  const int scratch = softmax_scratch_bytes(block, BlockCombine::kNone);
  const int b1 = blocks_per_sm(d, block, regs, scratch + buf);
  if (b1 < 1) return false;
  const int b2 = blocks_per_sm(d, block, regs, scratch + 2 * buf);
  const bool two = b2 >= b1 && rows >= 2 * int64_t{b2} * d.sm_count;
  p->path = SoftmaxPath::kBlock;
  p->split = 1;
  p->buffers = two ? 2 : 1;
  p->buffer_bytes = buf;
  p->blocks_per_sm = two ? b2 : b1;
  const int64_t slots = int64_t{p->blocks_per_sm} * d.sm_count;
  p->fill = softmax_fill(rows, slots, 1, slots, d.sm_count);
  p->shape.block = dim3(block);
  p->shape.grid = dim3(static_cast<unsigned>(std::min(rows, slots)));
  p->shape.smem = static_cast<size_t>(scratch + p->buffers * buf);
  return true;
}

// kBlock for rows on the pack grid (16-byte packs): one block per row, the row in
// registers. Among the register shapes (kSoftmaxConfigs) that hold the row's vp packs, the one with
// the most resident blocks a SM (registers from its __launch_bounds__, threads, blocks per SM); on
// a tie the smaller. The grid: one block per row up to kDefaultWaves waves of resident blocks (a
// block that ends takes the next row: no rows-per-block imbalance), rows looping past that.
inline bool softmax_plan_block_registers(int64_t rows, int64_t vp, const DeviceInfo& d,
                                         SoftmaxPlan* p) {
  int block = 0, packs = 0, best = 0;
  const int elem_bytes = kMaxPackBytes / p->pack;
  for (const SoftmaxConfig& r : kSoftmaxConfigs) {
    if (r.elem_bytes != elem_bytes || r.path != SoftmaxPath::kBlock || !r.on_grid) continue;
    if (vp > int64_t{r.block} * r.packs) continue;
    const int regs = softmax_regs_bound(d, r.block, softmax_registers_min_blocks(r.block, r.packs));
    const int bps = blocks_per_sm(d, r.block, regs, softmax_registers_smem(r.block));
    if (bps > best) {
      block = r.block;
      packs = r.packs;
      best = bps;
    }
  }
  if (best < 1) return false;
  p->path = SoftmaxPath::kBlock;
  p->on_grid = true;
  p->packs = packs;
  p->split = 1;
  p->buffers = 0;
  p->buffer_bytes = 0;
  p->blocks_per_sm = best;
  const int64_t slots = int64_t{best} * d.sm_count;
  p->fill = softmax_fill(rows, slots, 1, slots, d.sm_count);
  p->shape.block = dim3(static_cast<unsigned>(block));
  p->shape.grid =
      dim3(static_cast<unsigned>(grid_size_for(rows * block, block, d, kDefaultWaves, best)));
  p->shape.smem = 0;
  return true;
}

// Elements the busiest SM works through when `tasks` tasks (rows) of `width` blocks each, of
// `chunk` elements a block, spread evenly over the SMs.
inline int64_t softmax_sm_work(int64_t tasks, int64_t width, int64_t chunk, int sm_count) {
  return ceil_div<int64_t>(tasks * width, sm_count) * chunk;
}

// Clusters of up to d.max_cluster() blocks: 16 where the architecture launches the
// non-portable size (sm_90 / sm_100, with cudaFuncAttributeNonPortableClusterSizeAllowed; f32
// 128x262144 / 32x250000 measured 109 / 34 us in 16 x 64 KB chunks against 118 / 43.5 in
// 8 x 128 KB). Whether one cluster of 16 is resident (MIG, MPS) is the runtime's
// answer: launch answers kClusterDoesNotFit and plan_and_launch plans again with 8.
//
// kCluster (d.clusters(), 16-byte packs, clusters of 2 .. d.max_cluster() blocks). First,
// blocks of kSoftmaxClusterBlock threads several to an SM (at least 3, then at least 2:
// one block's reduce and barrier overlap the others' loads; the old cluster kernel's 64 KiB
// chunks x 3 blocks of 512): the smallest cluster whose chunk fits that many times, with
// two buffers where they fit, else one (streamed during the write). Else blocks of 1024
// threads, one to an SM: the smallest cluster whose chunk fits a block twice (two buffers:
// the next row's chunk loads through the cluster barrier), else once. The grid is as many
// clusters as can be resident (at most one per row).
inline bool softmax_plan_cluster(int64_t rows, int64_t cols, int64_t pack_bytes,
                                 const DeviceInfo& d, SoftmaxPlan* p) {
  const int max_cluster = d.max_cluster();
  if (!d.clusters() || pack_bytes != kMaxPackBytes || max_cluster < 2) return false;
  int sizes = 0;  // cluster sizes tried: 2, 4, ..., max_cluster
  while ((2 << sizes) <= max_cluster && sizes < 4)
    ++sizes;
  struct Try {
    int block, min_bps;
  };
  for (const Try t :
       {Try{kSoftmaxClusterBlock, 3}, Try{kSoftmaxClusterBlock, 2}, Try{kSoftmaxWideBlock, 1}}) {
    const int regs = softmax_regs_bound(d, t.block, kSoftmaxChunkThreadsPerSm / t.block);
    const int scratch = softmax_scratch_bytes(t.block, BlockCombine::kCluster);
    int best_c = 0, best_buffers = 0, best_bps = 0;
    int64_t best_buf = 0, best_work = 0;
    for (int i = 0; i < 2 * sizes; ++i) {
      // several blocks a SM: the smallest cluster first (two buffers, else one); one block
      // a SM: two buffers first (the smallest cluster), then one
      const bool by_cluster = t.min_bps > 1;
      const int c = by_cluster ? 2 << (i / 2) : 2 << (i % sizes);
      const int buffers = by_cluster ? 2 - i % 2 : (i < sizes ? 2 : 1);
      if (cols / c < p->pack) continue;
      const int64_t buf = round_up<int64_t>(softmax_chunk_packs(cols, c, p->pack) * pack_bytes, 16);
      const int bps = blocks_per_sm(d, t.block, regs, scratch + buffers * buf);
      if (bps < t.min_bps) continue;
      if (int64_t{bps} * d.sm_count / c < 1) return false;
      // the first that fits; then a larger cluster that takes work off the busiest SM while
      // its rows still give every block an SM of its own (past that the blocks share SMs, and
      // clusters of 16 at several blocks a SM pack into the GPCs short of the slots: f16
      // 22x116416+3 on 352 blocks in clusters of 16 took 18.5 us, the grid 12.8)
      const int64_t work = softmax_sm_work(rows, c, ceil_div<int64_t>(cols, c), d.sm_count);
      if (best_c == 0 || (rows * c <= d.sm_count && work < best_work)) {
        best_c = c, best_buffers = buffers, best_bps = bps, best_buf = buf, best_work = work;
      }
    }
    if (best_c == 0) continue;
    const int64_t clusters = int64_t{best_bps} * d.sm_count / best_c;
    p->path = SoftmaxPath::kCluster;
    p->split = best_c;
    p->buffers = best_buffers;
    p->buffer_bytes = best_buf;
    p->blocks_per_sm = best_bps;
    p->fill = softmax_fill(rows, clusters, best_c, int64_t{best_bps} * d.sm_count, d.sm_count);
    p->shape.block = dim3(static_cast<unsigned>(t.block));
    p->shape.grid = dim3(static_cast<unsigned>(std::min(rows, clusters) * best_c));
    p->shape.cluster = dim3(static_cast<unsigned>(best_c));
    // each block asks for its SM's share of shared memory, not just its buffers: the grid is
    // sized for best_bps blocks a SM from the register bound of __launch_bounds__, and the
    // compiler may use fewer (the 2-byte kernel of 512 threads: 40 -> 30 registers with the
    // row strides) so that one more fits by registers and by its buffers; the clusters may
    // then go 4 blocks to an SM, leaving SMs idle (f16 336x100000, 396 blocks: 45.4 -> 55.4
    // us on an H200, 4445x163680 1004 -> 1141; f32 at 34 registers, still 3 a SM, unchanged).
    p->shape.smem = static_cast<size_t>(
        std::max<int64_t>(scratch + best_buffers * best_buf, softmax_sm_share(d, best_bps)));
    return true;
  }
  return false;
}

// kGrid (d.cooperative_launch): a cooperative grid of resident blocks of 1024 threads, each
// with its SM's share of shared memory in one buffer. Rows run in rounds of rows_per_round
// rows, each row over `split` blocks (chunks); with rounds, the next round's chunk loads into
// the buffer as this one's output leaves. A chunk longer than the buffer keeps its first
// buffer's worth on chip; the rest is read through registers for the statistics and read
// again at the write (softmax_chunk_kernel): rows wider than the grid's shared memory (an
// H100 holds ~30 MB), or fewer rounds for a little more reading. The split is the one with
// the least estimated time (the largest on a tie): the bytes, and the bytes read again, at
// the rounds' rates (softmax_fill; rows spread evenly over the rounds), plus a grid barrier a
// round, priced at what the GPU moves meanwhile (kSoftmaxBarrierBytesPerSm a SM). fill is the
// resulting share of the copy's rate (below 2/3 where most of a row is read twice). Every
// chunk holds a parked pair (at least pack + 8 bytes of elements) within the part kept on
// chip (kSoftmaxGridMinPacks packs).
// (Two buffers, the next round's chunk loading through this one's statistics and barrier,
// were planned for rounds of chunks that fit until chunks past the buffer came, at ~6 us a
// round: f32 16x2097152 16 rounds 159.5 us; no shape of the plan tests' devices got them
// since, every such shape taking fewer rounds of longer chunks.)
inline bool softmax_plan_grid(int64_t rows, int64_t cols, int elem_bytes, int64_t pack_bytes,
                              const DeviceInfo& d, SoftmaxPlan* p) {
  if (!d.cooperative_launch) return false;
  const int regs = softmax_regs_bound(d, kSoftmaxWideBlock, 1);
  const int bps = blocks_per_sm(d, kSoftmaxWideBlock, regs, 0);
  if (bps < 1) return false;
  const int64_t cap = softmax_sm_share(d, bps);
  if (blocks_per_sm(d, kSoftmaxWideBlock, regs, cap) < bps) return false;
  const int64_t grid = int64_t{bps} * d.sm_count;
  const int64_t slot = kSoftmaxPairBytes / elem_bytes;
  const int64_t max_split = std::min<int64_t>(grid, cols / (p->pack + slot));
  const double bytes = 2.0 * double(rows) * double(cols) * elem_bytes;
  const double barrier = double(kSoftmaxBarrierBytesPerSm) * d.sm_count;
  struct Choice {
    int64_t split = 0, per_round = 0, rounds = 0;
    double fill = -1;
  };
  const int64_t room =
      (cap - softmax_scratch_bytes(kSoftmaxWideBlock, BlockCombine::kGrid)) / 16 * 16 / pack_bytes;
  if (room < kSoftmaxGridMinPacks) return false;
  // the best split whose chunks are longer than the buffer (over), or fit it
  const auto best_for = [&](bool over) {
    Choice best;
    for (int64_t split = 1; split <= max_split; ++split) {
      const int64_t past = softmax_chunk_packs(cols, static_cast<int>(split), p->pack) - room;
      if ((past > 0) != over) continue;
      const int64_t most = std::min(rows, grid / split);
      const int64_t rounds = ceil_div(rows, most);
      const int64_t per_round = ceil_div(rows, rounds);
      const double busy = softmax_fill(rows, per_round, split, grid, d.sm_count);
      const double again =
          over ? double(rows) * double(split) * double(past) * double(pack_bytes) : 0.0;
      const double fill = bytes / ((bytes + again) / busy + double(rounds) * barrier);
      // on a tie the larger split: more SMs share the latency of a round
      if (fill > best.fill - 1e-9) best = {split, per_round, rounds, fill};
    }
    return best;
  };
  Choice c = best_for(false);
  const Choice over = best_for(true);
  if (over.fill > c.fill) c = over;
  if (c.fill < 0) return false;
  p->path = SoftmaxPath::kGrid;
  p->split = static_cast<int>(c.split);
  p->buffers = 1;
  p->buffer_bytes = round_up<int64_t>(
      std::min(softmax_chunk_packs(cols, p->split, p->pack), room) * pack_bytes, 16);
  p->rows_per_round = c.per_round;
  p->rounds = c.rounds;
  p->blocks_per_sm = bps;
  p->fill = c.fill;
  p->shape.block = dim3(kSoftmaxWideBlock);
  p->shape.grid = dim3(static_cast<unsigned>(c.per_round * c.split));
  p->shape.smem = static_cast<size_t>(
      softmax_scratch_bytes(kSoftmaxWideBlock, BlockCombine::kGrid) + p->buffer_bytes);
  p->shape.cooperative = true;
  return true;
}

// kTwoPass: one block of 1024 threads per row, the row read twice; always possible.
inline void softmax_plan_two_pass(int64_t rows, const DeviceInfo& d, SoftmaxPlan* p) {
  p->path = SoftmaxPath::kTwoPass;
  p->split = 1;
  p->buffers = 0;
  const int regs = softmax_regs_bound(d, kSoftmaxWideBlock, 1);
  p->blocks_per_sm = std::max(1, blocks_per_sm(d, kSoftmaxWideBlock, regs, 0));
  const int64_t slots = int64_t{p->blocks_per_sm} * d.sm_count;
  p->fill = softmax_fill(rows, slots, 1, slots, d.sm_count) * 2.0 / 3.0;  // three passes of bytes
  p->shape.block = dim3(kSoftmaxWideBlock);
  p->shape.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(rows, 1, slots)));
}

}  // namespace detail

/// The plan of softmax / log_softmax over a rows x cols matrix (rows, cols >= 1) of
/// elem_bytes-byte elements (4 or 2) whose input and output start at `in` and `out` on the
/// 16-byte grid, with rows ld_in and ld_out elements apart (>= cols; the contiguous matrix: both
/// cols), on device d. Pure: no CUDA call. Where row r of in and of out sit alike on the 16-byte
/// grid for every r (in == out and the strides' bytes alike modulo 16), the plan is the one of
/// contiguous rows that sit so: every path takes a row stride, but kTile (tiles of consecutive
/// rows copied as one span) takes only contiguous rows (ld_in = ld_out = cols, or one row).
inline SoftmaxPlan plan_softmax(int64_t rows, int64_t cols, int elem_bytes, Alignment in,
                                int64_t ld_in, Alignment out, int64_t ld_out, const DeviceInfo& d) {
  using namespace detail;
  SoftmaxPlan p;
  const int max_pack = kMaxPackBytes / elem_bytes;
  // one row: its stride is never used
  const bool contiguous = rows == 1 || (ld_in == cols && ld_out == cols);
  const Alignment stride(contiguous ? cols * elem_bytes : ld_in * elem_bytes);
  const bool alike =
      in == out && (contiguous || stride == Alignment(ld_out * elem_bytes));  // row r, every r
  p.pack = alike ? max_pack : 1;
  // packs a row spans: rows start at one offset when the row stride is a multiple of the
  // pack (contiguous: cols is), else at any
  const int64_t offset0 = in.elements(elem_bytes) % p.pack;
  const int64_t vp = stride.fits(p.pack * elem_bytes)
                         ? ceil_div<int64_t>(offset0 + cols, p.pack)
                         : ceil_div<int64_t>(cols + p.pack - 1, p.pack);
  const bool on_grid = in.fits(kMaxPackBytes) && stride.fits(kMaxPackBytes) && cols % p.pack == 0;
  // 2-byte rows on the 8-byte grid but not the 16-byte one (f16 67109x500: every other row
  // starts 8 bytes into a 16-byte pack): the warp path with 8-byte packs on the grid (one
  // predicated 8-byte load and store a pack, no element-wise end packs) instead of 16-byte
  // packs with partial end packs (51.6 us at 67109x500, against 49.5 for a kernel reading
  // these rows on their 8-byte grid)
  const int half_pack = max_pack / 2;
  if (!on_grid && elem_bytes == 2 && alike && in.fits(kMaxPackBytes / 2) &&
      stride.fits(kMaxPackBytes / 2) && cols % half_pack == 0) {
    SoftmaxPlan h = p;
    h.pack = half_pack;
    if (softmax_plan_warp(rows, cols / half_pack, true, d, &h)) return h;
  }
  // short contiguous rows off the pack grid: tiles of rows through shared memory (at most
  // kSoftmaxTileMaxPacks packs)
  if (!on_grid && contiguous && p.pack > 1) {
    SoftmaxPlan t = p;
    if (softmax_plan_tile(rows, cols, elem_bytes, offset0, d, &t)) return t;
  }
  if (softmax_plan_warp(rows, vp, on_grid, d, &p)) return p;
  const int64_t pack_bytes = int64_t{p.pack} * elem_bytes;
  SoftmaxPlan block = p, cluster = p, grid = p;
  // rows on the pack grid in registers (f32 up to 8192 columns, 2-byte up to 16384)
  const bool has_block =
      (on_grid && p.pack > 1 && softmax_plan_block_registers(rows, vp, d, &block)) ||
      softmax_plan_block(rows, vp, pack_bytes, d, &block);
  const bool has_cluster = softmax_plan_cluster(rows, cols, pack_bytes, d, &cluster);
  const bool has_grid = softmax_plan_grid(rows, cols, elem_bytes, pack_bytes, d, &grid);
  if (has_block) {
    // rows that fit a block: one block per row, unless that leaves a tenth of the GPU idle,
    // there are enough bytes to pay for a combine, and splitting rows fills it clearly
    // better
    SoftmaxPlan best = block;
    const bool big = 2.0 * double(rows) * double(cols) * elem_bytes >=
                     double(kSoftmaxSplitMinBytesPerSm) * d.sm_count;
    if (block.fill < 0.9 && big) {
      if (has_cluster && cluster.fill > 1.1 * best.fill) best = cluster;
      if (has_grid && grid.fill > 1.1 * best.fill) best = grid;
    }
    // one row per SM and few rows: a cluster with several blocks per SM keeps loads in
    // flight through each block's reduce
    if (best.path == SoftmaxPath::kBlock && block.blocks_per_sm == 1 && has_cluster &&
        cluster.blocks_per_sm >= 2 && big && rows < kSoftmaxOneBlockMinRowsPerSm * d.sm_count &&
        cluster.fill >= 0.9 * block.fill)
      best = cluster;
    // too few rows to fill the SMs, however few the bytes (decode: 13x57751 f32, 6 MB, took
    // 18 us on 13 SMs, 0.30 of the speed of light): a cluster a row where the busiest SM's
    // elements and the cluster barrier are fewer than one block's row
    if (best.path == SoftmaxPath::kBlock && has_cluster && block.fill < 0.9 &&
        softmax_sm_work(rows, cluster.split, ceil_div<int64_t>(cols, cluster.split), d.sm_count) *
                    elem_bytes +
                kSoftmaxClusterSyncBytes <
            softmax_sm_work(rows, 1, cols, d.sm_count) * elem_bytes)
      best = cluster;
    return best;
  }
  // few rows on clusters leave block slots idle, and each busy SM does all of its chunk's
  // arithmetic (H100: f16 1x1048576 on one cluster of 16, 18.0 us against the grid's 11.3;
  // 4x500000 on four: f32 20.3 / 15.1, f16 13.3 / 12.0): the grid when the clusters hold
  // fewer than half the block slots
  const bool sparse =
      int64_t{cluster.shape.grid.x} * 2 < int64_t{cluster.blocks_per_sm} * d.sm_count;
  if (has_cluster && (!has_grid || (cluster.fill >= grid.fill && !sparse))) return cluster;
  // ... unless the busiest SM's elements and the cluster barrier are fewer than those of the
  // grid's rounds and their barriers (f32 7x160381: clusters of 16 on 112 SMs, 10K elements
  // each, against a round of 8.9K; f16 1x1048576 keeps the grid: 65K against 8K)
  if (has_cluster && has_grid &&
      softmax_sm_work(rows, cluster.split, ceil_div<int64_t>(cols, cluster.split), d.sm_count) *
                  elem_bytes +
              kSoftmaxClusterSyncBytes <
          grid.rounds * (softmax_sm_work(grid.rows_per_round, grid.split,
                                         ceil_div<int64_t>(cols, grid.split), d.sm_count) *
                             elem_bytes +
                         kSoftmaxGridRoundBytes))
    return cluster;
  if (has_grid) return grid;
  softmax_plan_two_pass(rows, d, &p);
  return p;
}

/// The plan of softmax / log_softmax over contiguous rows (ld_in = ld_out = cols).
inline SoftmaxPlan plan_softmax(int64_t rows, int64_t cols, int elem_bytes, Alignment in,
                                Alignment out, const DeviceInfo& d) {
  return plan_softmax(rows, cols, elem_bytes, in, cols, out, cols, d);
}

}  // namespace kernelkit
