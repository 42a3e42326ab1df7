// SPDX-License-Identifier: Apache-2.0
// plan_softmax on the host (no GPU): the expected path for the benchmark's shapes and the
// awkward ones on an H100, an H100 running a compute_80 build, an A100, an L4 and a T4,
// then invariants over a grid of shapes x alignments x types x devices: every plan is one
// launch_softmax can dispatch, launches a legal grid, fits the device's shared memory and
// registers, uses a cluster only with d.clusters() and a cooperative grid only with every
// block resident, and covers every column of every row exactly once. Also the argument
// checks (softmax_args_ok), which are pure as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "softmax/softmax_case.cuh"

namespace kk = kernelkit;
using kk::SoftmaxPath;
using kk::SoftmaxPlan;

namespace {

// How the chunk kernel's blocks of a plan's path combine (its scratch depends on it).
kk::BlockCombine combine_of(SoftmaxPath path) {
  return path == SoftmaxPath::kCluster ? kk::BlockCombine::kCluster
         : path == SoftmaxPath::kGrid  ? kk::BlockCombine::kGrid
                                       : kk::BlockCombine::kNone;
}

const char* path_name(SoftmaxPath p) {
  switch (p) {
    case SoftmaxPath::kTile:
      return "tile";
    case SoftmaxPath::kWarp:
      return "warp";
    case SoftmaxPath::kBlock:
      return "block";
    case SoftmaxPath::kCluster:
      return "cluster";
    case SoftmaxPath::kGrid:
      return "grid";
    default:
      return "two_pass";
  }
}

std::string describe(const SoftmaxPlan& p) {
  return std::string(path_name(p.path)) + " pack=" + std::to_string(p.pack) +
         " group=" + std::to_string(p.group) + " packs=" + std::to_string(p.packs) +
         " split=" + std::to_string(p.split) + " buffers=" + std::to_string(p.buffers) +
         " buffer_bytes=" + std::to_string(p.buffer_bytes) +
         " rows_per_round=" + std::to_string(p.rows_per_round) +
         " rounds=" + std::to_string(p.rounds) + " bps=" + std::to_string(p.blocks_per_sm) +
         " grid=" + std::to_string(p.shape.grid.x) + " block=" + std::to_string(p.shape.block.x) +
         " smem=" + std::to_string(p.shape.smem) + " cluster=" + std::to_string(p.shape.cluster.x) +
         " coop=" + std::to_string(p.shape.cooperative) + " fill=" + std::to_string(p.fill);
}

SoftmaxPlan plan(int64_t rows, int64_t cols, int elem, const kk::DeviceInfo& d, int in_off = 0,
                 int out_off = 0) {
  return kk::plan_softmax(rows, cols, elem, kk::Alignment(in_off), kk::Alignment(out_off), d);
}

// ---------------------------------------------------------------------------------------
// Expected paths.

struct Expect {
  int64_t rows, cols;
  int elem;
  SoftmaxPath h100, h100_c80, a100, l4, t4;
};

TEST(SoftmaxPlan, PathsOfTheSweepAndAwkwardShapes) {
  using P = SoftmaxPath;
  const Expect table[] = {
      // short rows: a lane group of a warp
      {1048576, 32, 4, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      {1048576, 32, 2, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      {349525, 96, 2, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      {67109, 500, 4, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      {32768, 1024, 4, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      {32768, 1024, 2, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      // one block per row, the row in shared memory
      {32767, 1025, 4, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kBlock},
      {22370, 1500, 4, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kBlock},
      {22370, 1500, 2, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kBlock},
      {16384, 2048, 2, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kBlock},
      {2048, 16384, 2, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kBlock},
      {8192, 4096, 4, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kBlock},
      {2048, 16384, 4, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kGrid},  // T4: 64 KiB
      // 128 KB rows, 8 a SM: a cluster of 2 x 64 KB chunks, 3 blocks a SM, where the build
      // has clusters (one block a SM idles its loads through each reduce)
      {1049, 32000, 4, P::kCluster, P::kBlock, P::kBlock, P::kGrid, P::kGrid},
      // GPT-2: a 196 KiB f32 row fits an H100 block, not an A100's (163 KiB)
      {4096, 50257, 4, P::kBlock, P::kBlock, P::kGrid, P::kGrid, P::kGrid},
      {4096, 50257, 2, P::kBlock, P::kBlock, P::kBlock, P::kBlock, P::kGrid},
      // rows wider than a block: clusters where the build has them, else the grid
      {512, 65536, 4, P::kCluster, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {221, 151936, 2, P::kCluster, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {128, 262144, 4, P::kCluster, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      // 336 rows of 200 KB: clusters of 4 x 50 KB (3 blocks a SM) on an H100; without
      // clusters 2.5 rounds of one block per SM (72 SMs busy in the last one still pull the
      // copy's rate)
      {336, 100000, 2, P::kCluster, P::kBlock, P::kGrid, P::kGrid, P::kGrid},
      // 32 rows of 200 KB: one block per row would leave 100 SMs idle; split each row over
      // a cluster; without clusters one block per row (a grid round costs ~6 us: 32x50000 f32
      // is 12.8 MB, ~4 us at the copy's rate)
      {32, 50000, 4, P::kCluster, P::kBlock, P::kGrid, P::kGrid, P::kGrid},
      // few rows of any width (on a T4 a 4 MiB row is wider than all its shared memory: the
      // grid keeps what fits and reads the rest twice)
      {1, 1048576, 4, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      // (a cluster of 16 holds them, but on a few SMs: 16 / 64 of 132)
      {1, 1048576, 2, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {4, 500000, 4, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {4, 500000, 2, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {32, 250000, 4, P::kCluster, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {16, 2097152, 4, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {16, 2097152, 2, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      // rows wider than every device's shared memory (an H100 holds ~30 MB): the grid, every
      // SM on the rows, never one block per row (issue 30: 1x26413760 f32 took 5.8 ms)
      {1, 26413760, 4, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {3, 149601689, 4, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {2, 67084672, 2, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      {9, 24720211, 2, P::kGrid, P::kGrid, P::kGrid, P::kGrid, P::kGrid},
      // a few short rows stay one block (or lane group) per row where there are no clusters:
      // a grid round costs more than the row; with clusters, a cluster of 16 a row (512
      // elements a block and a cluster barrier against 8192 on one SM)
      {4, 8192, 4, P::kCluster, P::kBlock, P::kBlock, P::kBlock, P::kBlock},
      {1, 4, 4, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      // short rows off the pack grid (a width that is not a multiple of the pack): tiles of
      // rows through shared memory (issue 30: bf16 2682433x2 0.15 of the speed of light on
      // the warp path, every row's packs partial)
      {1, 1, 4, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      {2682433, 2, 2, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      {3858350, 3, 2, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      {15798023, 5, 2, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      // (up to 48 packs: f32 343264x65 0.46 of the speed of light on the warp path, bf16
      // 142857x210 0.49)
      {343264, 65, 4, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      {142857, 210, 2, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      {566593, 137, 4, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      {100000, 250, 2, P::kTile, P::kTile, P::kTile, P::kTile, P::kTile},
      // (wider: the warp path, 32 lanes of several packs)
      {100000, 253, 4, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
      {100000, 505, 2, P::kWarp, P::kWarp, P::kWarp, P::kWarp, P::kWarp},
  };
  for (const auto& e : table) {
    const SoftmaxPath want[] = {e.h100, e.h100_c80, e.a100, e.l4, e.t4};
    const auto devices = kktest::all_devices();
    for (size_t i = 0; i < devices.size(); ++i) {
      const SoftmaxPlan p = plan(e.rows, e.cols, e.elem, devices[i].info);
      EXPECT_EQ(p.path, want[i]) << devices[i].name << " " << e.rows << "x" << e.cols
                                 << " elem=" << e.elem << ": " << describe(p);
    }
  }
}

TEST(SoftmaxPlan, WarpGroupsAndPacks) {
  const kk::DeviceInfo d = kktest::h100();
  // f32, 16-byte packs: 32 columns = 8 packs -> 8 lanes with one pack, two rows a group
  SoftmaxPlan p = plan(1048576, 32, 4, d);
  EXPECT_EQ(p.pack, 4);
  EXPECT_EQ(p.group, 8);
  EXPECT_EQ(p.packs, 1);
  EXPECT_TRUE(p.on_grid);
  // a row starting one element past a boundary spans one more pack, partial at both ends:
  // the tile path, 4 lanes of 3 packs a row (9 packs)
  p = plan(1048576, 32, 4, d, 4, 4);
  EXPECT_EQ(p.path, SoftmaxPath::kTile);
  EXPECT_EQ(p.pack, 4);
  EXPECT_EQ(p.group, 4);
  EXPECT_EQ(p.packs, 12);
  EXPECT_FALSE(p.on_grid);
  // 500 f16 columns: rows start at 8-byte offsets, off the 16-byte grid but on the 8-byte
  // one: 8-byte packs on the grid, 125 packs -> 32 lanes x 4 packs; offset by 8 bytes too;
  // not by 2 bytes (the general kernel, 16-byte packs)
  p = plan(67109, 500, 2, d);
  EXPECT_EQ(p.path, SoftmaxPath::kWarp);
  EXPECT_EQ(p.pack, 4);
  EXPECT_TRUE(p.on_grid);
  EXPECT_EQ(p.group, 32);
  EXPECT_EQ(p.packs, 4);
  EXPECT_EQ(plan(67109, 500, 2, d, 8, 8).pack, 4);
  EXPECT_EQ(plan(1000, 504, 2, d, 8, 8).pack, 4);
  p = plan(67109, 500, 2, d, 2, 2);
  EXPECT_EQ(p.pack, 8);
  EXPECT_FALSE(p.on_grid);
  EXPECT_EQ(plan(67109, 500, 2, d, 8, 0).pack, 1);  // in / out offsets differ
  EXPECT_EQ(plan(1000, 502, 2, d).pack, 8);         // not a multiple of 4
  EXPECT_EQ(plan(100, 1028, 2, d).pack, 8);         // too wide for the warp at 8 bytes
  EXPECT_TRUE(plan(67109, 500, 4, d).on_grid);
  EXPECT_TRUE(plan(349525, 96, 2, d).on_grid);
  // 1000 f32 columns = 250 packs -> 32 lanes x 8 packs; 1024 f16 = 128 packs -> 32 x 4
  p = plan(33554, 1000, 4, d);
  EXPECT_EQ(p.group, 32);
  EXPECT_EQ(p.packs, 8);
  p = plan(32768, 1024, 2, d);
  EXPECT_EQ(p.group, 32);
  EXPECT_EQ(p.packs, 4);
  // in and out at different offsets within 16 bytes: elements one at a time
  p = plan(1000, 100, 4, d, 0, 4);
  EXPECT_EQ(p.pack, 1);
  EXPECT_EQ(p.path, SoftmaxPath::kWarp);
  EXPECT_EQ(p.packs, 8);
  // f32 rows up to 16 floats a lane keep 12 blocks of 128 threads a SM (40 registers), f16
  // 10 (48), 32 floats a lane 8 (64)
  // (rows on the pack grid with one pack a lane: f32 16 blocks (32 registers), 2-byte 12)
  EXPECT_EQ(plan(1048576, 32, 4, d).blocks_per_sm, 16);
  EXPECT_EQ(plan(67109, 500, 4, d).blocks_per_sm, 12);
  EXPECT_EQ(plan(67109, 500, 2, d).blocks_per_sm, 12);  // 8-byte packs: 16 floats a lane
  EXPECT_EQ(plan(67109, 500, 2, d, 2, 2).blocks_per_sm, 10);
  EXPECT_EQ(plan(1048576, 32, 2, d).blocks_per_sm, 12);
  EXPECT_EQ(plan(349525, 96, 2, d).blocks_per_sm, 12);
  EXPECT_EQ(plan(349525, 96, 4, d).blocks_per_sm, 16);
  EXPECT_EQ(plan(100000, 401, 2, d).blocks_per_sm, 10);  // off the grid: 51 packs, 2 a lane
  EXPECT_EQ(plan(33554, 1000, 4, d).blocks_per_sm, 8);
  EXPECT_EQ(plan(32768, 1024, 2, d).blocks_per_sm, 8);
}

// The packs a row of `cols` elements spans at most when the rows start at offset `off` (elements)
// of a pack and every multiple of gcd(cols, pack) past it: the tile plan's rule.
int64_t tile_span(int64_t cols, int64_t off, int pack) {
  int64_t g = pack;
  while (cols % g != 0)
    g /= 2;
  return (cols + off % g + pack - g + pack - 1) / pack;
}

// Short rows off the pack grid (contiguous rows spanning at most 48 packs: up to ~186 f32 / ~370
// 2-byte columns): the tile path. Rows of at most two packs (16 2-byte / 8 f32 columns): the narrow
// kernel (packs 1), a lane holding pack / gcd(cols, pack) rows (whole packs) where in is on the
// 16-byte grid and that is at most 64 elements, else a row; the block's 128 lanes a unit of rows
// (2-byte: a word a row past the buffers). Wider: the first (lanes, packs) of kSoftmaxTileShapes
// holding the most packs a row spans (offset + multiples of gcd(cols, pack)), packs = elements a
// lane holds, a unit of 128 / group rows. Tiles of ~8 KB, a whole number of units; two buffers;
// the pack-lane kernel's tails and heads past them. Rows on the grid, wider rows, and in / out
// at different offsets keep the warp path.
TEST(SoftmaxPlan, TileRows) {
  const kk::DeviceInfo d = kktest::h100();
  for (const int elem : {4, 2}) {
    const int pack = 16 / elem;
    for (int64_t cols = 1; cols <= 400; ++cols) {
      for (int off = 0; off < pack; ++off) {
        if (off == 0 && cols % pack == 0) continue;  // on the pack grid: the warp path
        // (2-byte rows all on the 8-byte grid: the warp path's 8-byte packs)
        if (elem == 2 && off % (pack / 2) == 0 && cols % (pack / 2) == 0) continue;
        const SoftmaxPlan p = plan(2000000, cols, elem, d, off * elem, off * elem);
        SCOPED_TRACE(std::to_string(cols) + " x " + std::to_string(elem) + " B +" +
                     std::to_string(off) + ": " + describe(p));
        const int64_t span = tile_span(cols, off, pack);
        if (cols > 2 * pack && span > kk::detail::kSoftmaxTileMaxPacks) {
          EXPECT_EQ(p.path, SoftmaxPath::kWarp);
          continue;
        }
        ASSERT_EQ(p.path, SoftmaxPath::kTile);
        EXPECT_EQ(p.pack, pack);
        EXPECT_EQ(p.buffers, 2);
        int64_t unit = 0, side = 0;
        if (cols <= 2 * pack) {
          EXPECT_EQ(p.group, 1);
          EXPECT_EQ(p.packs, 1);
          const int r = kk::detail::softmax_narrow_rows_per_lane(int(cols), pack, off == 0);
          int64_t g = pack;
          while (cols % g != 0)
            g /= 2;
          EXPECT_EQ(r, off == 0 && (pack / g) * cols <= 64 ? pack / g : 1);
          unit = r * 128;
          if (elem == 2) side = (p.rows_per_round * 4 + 15) / 16 * 16;
        } else {
          int want = -1;
          for (const auto& t : kk::detail::kSoftmaxTileShapes) {
            if (int64_t{t.group} * t.packs >= span) {
              want = t.group * 100 + t.packs;
              break;
            }
          }
          EXPECT_EQ(p.group * 100 + p.packs / pack, want);
          EXPECT_EQ(p.packs % pack, 0);
          unit = 128 / p.group;
          side = (3 * unit + 3) * 16;
        }
        EXPECT_EQ(p.rows_per_round % unit, 0);
        const int64_t unit_bytes = unit * cols * elem;
        EXPECT_TRUE(p.rows_per_round * cols * elem <=
                        kk::detail::kSoftmaxTileBytes + unit_bytes / 2 ||
                    p.rows_per_round == unit);
        EXPECT_EQ(int64_t(p.shape.smem), 2 * p.buffer_bytes + side);
        const int regs = kk::detail::softmax_regs_bound(
            d, 128,
            p.packs == 1 ? kk::detail::softmax_tile_narrow_min_blocks(d.code_arch)
                         : kk::detail::softmax_tile_min_blocks(p.packs, d.code_arch));
        EXPECT_EQ(p.blocks_per_sm, kk::blocks_per_sm(d, 128, regs, int64_t(p.shape.smem)));
      }
    }
  }
  // few rows: one block per tile, tiles of one unit when they would not give every resident
  // block one
  SoftmaxPlan p = plan(1000, 5, 2, d, 2, 2);
  EXPECT_EQ(p.path, SoftmaxPath::kTile);
  EXPECT_EQ(p.rows_per_round, 128);
  EXPECT_EQ(int64_t{p.shape.grid.x}, kk::ceil_div<int64_t>(1000, p.rows_per_round));
  p = plan(29518, 35, 2, d);  // 6 packs: 2 lanes of 3, 64 rows a pass (11.5 KB at 8 a SM)
  EXPECT_EQ(p.group, 2);
  EXPECT_EQ(p.packs, 24);
  EXPECT_EQ(p.rows_per_round, 64);
  // rows on the grid; in and out at different offsets within 16 bytes
  EXPECT_EQ(plan(100000, 32, 4, d).path, SoftmaxPath::kWarp);
  EXPECT_EQ(plan(100000, 5, 4, d, 0, 4).path, SoftmaxPath::kWarp);
}

TEST(SoftmaxPlan, SharedMemoryRowsAndBuffers) {
  const kk::DeviceInfo d = kktest::h100();
  // 8 KB rows in shared memory (f32 2048 on the pack grid is planned in registers:
  // BlockRegisterRows): 64 threads (8 packs each), 24 blocks a SM (40 registers, smem),
  // one buffer (two would cost resident blocks)
  SoftmaxPlan p = plan(16384, 2048, 4, d);
  EXPECT_TRUE(p.on_grid);
  ASSERT_TRUE(kk::detail::softmax_plan_block(16384, 512, 16, d, &p));
  EXPECT_EQ(p.path, SoftmaxPath::kBlock);
  EXPECT_EQ(p.shape.block.x, 64u);
  EXPECT_EQ(p.blocks_per_sm, 24);
  EXPECT_EQ(p.buffers, 1);
  // 3 KB rows (f16 1500, every other row off the 16-byte grid: 189 packs): one warp a row
  // (6 packs a lane, no barrier), 32 blocks a SM, two buffers
  p = plan(22370, 1500, 2, d);
  EXPECT_EQ(p.path, SoftmaxPath::kBlock);
  EXPECT_EQ(p.shape.block.x, 32u);
  EXPECT_EQ(p.blocks_per_sm, 32);
  EXPECT_EQ(p.buffers, 2);
  // 8 KB f16 rows off the pack grid (2 bytes past a boundary: 513 packs): 128 threads (on
  // the grid they are held in registers: BlockRegisterRows)
  p = plan(8192, 4096, 2, d, 2, 2);
  EXPECT_EQ(p.path, SoftmaxPath::kBlock);
  EXPECT_FALSE(p.on_grid);
  EXPECT_EQ(p.shape.block.x, 128u);
  // a T4 (1024 threads, 16 blocks a SM): 32-thread blocks still fill half of it
  p = plan(22370, 1500, 2, kktest::t4());
  EXPECT_EQ(p.shape.block.x, 32u);
  EXPECT_EQ(p.blocks_per_sm, 16);
  // 64 KB rows: 512 threads, 3 blocks a SM
  p = plan(2048, 16384, 4, d);
  EXPECT_EQ(p.path, SoftmaxPath::kBlock);
  EXPECT_EQ(p.shape.block.x, 512u);
  EXPECT_EQ(p.blocks_per_sm, 3);
  // 256 KB rows: a cluster of 4 x 64 KB chunks, 3 blocks of 512 a SM, one buffer each
  p = plan(512, 65536, 4, d);
  EXPECT_EQ(p.path, SoftmaxPath::kCluster);
  EXPECT_EQ(p.split, 4);
  EXPECT_EQ(p.shape.block.x, 512u);
  EXPECT_EQ(p.blocks_per_sm, 3);
  EXPECT_EQ(p.buffers, 1);
  // 1 MiB rows: a cluster of 16 x 64 KiB, 3 blocks of 512 a SM;
  // with clusters of at most 8 (a 16 the runtime could not place) 8 x 128 KiB, one block
  // of 1024 a SM
  p = plan(128, 262144, 4, d);
  EXPECT_EQ(p.path, SoftmaxPath::kCluster);
  EXPECT_EQ(p.split, 16);
  EXPECT_EQ(p.shape.block.x, 512u);
  EXPECT_EQ(p.blocks_per_sm, 3);
  kk::DeviceInfo portable = d;  // as plan_and_launch plans again
  portable.nonportable_clusters = false;
  EXPECT_EQ(portable.max_cluster(), 8);
  p = kk::plan_softmax(128, 262144, 4, kk::Alignment(), kk::Alignment(), portable);
  EXPECT_EQ(p.path, SoftmaxPath::kCluster);
  EXPECT_EQ(p.split, 8);
  EXPECT_EQ(p.shape.block.x, 1024u);
  EXPECT_EQ(p.blocks_per_sm, 1);
  // no cluster of 16 where the architecture has none (sm_120 code: 8 at most)
  kk::DeviceInfo sm120 = d;
  sm120.cc_major = 12;
  sm120.code_arch = 120;
  EXPECT_EQ(sm120.max_cluster(), 8);
  EXPECT_EQ(plan(128, 262144, 4, sm120).split, 8);
  EXPECT_EQ(kktest::h100_compute80().max_cluster(), 1);
  // the GPT-2 f32 row (196 KiB): one buffer, one block of 1024 threads per SM
  p = plan(4096, 50257, 4, d);
  EXPECT_EQ(p.path, SoftmaxPath::kBlock);
  EXPECT_EQ(p.shape.block.x, 1024u);
  EXPECT_EQ(p.buffers, 1);
  EXPECT_EQ(p.blocks_per_sm, 1);
  EXPECT_GE(p.buffer_bytes, 50257 * 4);
  EXPECT_LE(p.shape.smem, size_t(d.smem_per_block_optin));
}

// Rows on the pack grid up to 16384 2-byte / 8192 f32 columns: one block per row, the row
// in registers, the register shape holding the row with the most resident blocks (on an
// H100 32 registers, 2048 threads a SM for 2 packs a thread; 40 registers for 4), one block
// per row up to 32 waves. Rows off the grid and wider rows keep shared memory.
TEST(SoftmaxPlan, BlockRegisterRows) {
  const kk::DeviceInfo d = kktest::h100();
  struct Want {
    int64_t rows, cols;
    int elem_bytes;
    unsigned block;
    int packs, bps;
  };
  for (const Want w : {Want{16384, 2048, 2, 128, 2, 16}, Want{32767, 1032, 2, 128, 2, 16},
                       Want{11185, 3000, 2, 256, 2, 8}, Want{8192, 4096, 2, 256, 2, 8},
                       Want{6711, 5000, 2, 512, 2, 4}, Want{4096, 8192, 2, 512, 2, 4},
                       Want{3355, 10000, 2, 512, 4, 3}, Want{2048, 16384, 2, 512, 4, 3},
                       // f32: 4 columns a pack, each shape holds half the columns
                       Want{22370, 1500, 4, 256, 2, 8}, Want{16384, 2048, 4, 256, 2, 8},
                       Want{11185, 3000, 4, 512, 2, 4}, Want{8192, 4096, 4, 512, 2, 4},
                       Want{6711, 5000, 4, 512, 4, 3}, Want{4096, 8192, 4, 512, 4, 3}}) {
    for (const int off : {0, 16 * 7}) {
      const SoftmaxPlan p = plan(w.rows, w.cols, w.elem_bytes, d, off, off);
      SCOPED_TRACE(std::to_string(w.rows) + "x" + std::to_string(w.cols) + " x " +
                   std::to_string(w.elem_bytes) + " B: " + describe(p));
      EXPECT_EQ(p.path, SoftmaxPath::kBlock);
      EXPECT_TRUE(p.on_grid);
      EXPECT_EQ(p.shape.block.x, w.block);
      EXPECT_EQ(p.packs, w.packs);
      EXPECT_EQ(p.blocks_per_sm, w.bps);
      EXPECT_EQ(p.buffers, 0);
      EXPECT_EQ(p.shape.smem, 0u);
      EXPECT_EQ(int64_t{p.shape.grid.x}, w.rows);  // one block per row (< 32 waves)
    }
  }
  // f32 past 8192 columns (and f32 rows of <= 1024 on the grid: kWarp)
  EXPECT_FALSE(plan(3355, 10000, 4, d).on_grid);
  EXPECT_FALSE(plan(8192, 8196, 4, d).on_grid);
  EXPECT_EQ(plan(8192, 8196, 4, d).path, SoftmaxPath::kBlock);
  EXPECT_EQ(plan(8192, 1024, 4, d).path, SoftmaxPath::kWarp);
  EXPECT_FALSE(plan(8192, 4098, 4, d).on_grid);        // not a multiple of 4
  EXPECT_FALSE(plan(8192, 4096, 4, d, 4, 4).on_grid);  // rows start 4 bytes past a boundary
  // 2-byte rows off the grid (row start, width), past 16384 columns: shared memory
  EXPECT_FALSE(plan(8192, 4096, 2, d, 2, 2).on_grid);
  EXPECT_FALSE(plan(8192, 4100, 2, d).on_grid);
  EXPECT_FALSE(plan(8192, 4096, 2, d, 0, 16 + 8).on_grid);  // out at another offset: pack 1
  SoftmaxPlan p = plan(1024, 16392, 2, d);
  EXPECT_EQ(p.path, SoftmaxPath::kBlock);
  EXPECT_FALSE(p.on_grid);
  // many rows: 32 waves of resident blocks, the blocks loop over the rest
  p = plan(1000000, 2048, 2, d);
  EXPECT_TRUE(p.on_grid);
  EXPECT_EQ(int64_t{p.shape.grid.x}, int64_t{16} * d.sm_count * 32);
  // a T4 (1024 threads a SM, 64 registers at 8 blocks of 128): 128 x 2 still
  p = plan(16384, 2048, 2, kktest::t4());
  EXPECT_TRUE(p.on_grid);
  EXPECT_EQ(p.shape.block.x, 128u);
  EXPECT_EQ(p.blocks_per_sm, 8);
}

TEST(SoftmaxPlan, GridRounds) {
  const kk::DeviceInfo d = kktest::h100();
  // one row of 2^20 floats: one round over every SM, one buffer
  SoftmaxPlan p = plan(1, 1048576, 4, d);
  EXPECT_EQ(p.path, SoftmaxPath::kGrid);
  EXPECT_EQ(p.rounds, 1);
  EXPECT_EQ(p.buffers, 1);
  EXPECT_EQ(p.split, d.sm_count);
  EXPECT_TRUE(p.shape.cooperative);
  // 16 rows of 8 MiB: chunks that fit take 16 rounds of a row (two buffers), ~6 us each;
  // chunks of 33 a row, a little past one buffer (1/8 of each read twice), take 4 rounds of 4
  // rows: fewer rounds win
  p = plan(16, 2097152, 4, d);
  EXPECT_EQ(p.path, SoftmaxPath::kGrid);
  EXPECT_EQ(p.rows_per_round, 4);
  EXPECT_EQ(p.rounds, 4);
  EXPECT_EQ(p.split, 33);
  EXPECT_EQ(p.buffers, 1);
  EXPECT_GT(kk::detail::softmax_chunk_packs(2097152, p.split, 4) * 16, p.buffer_bytes);
  EXPECT_GT(p.fill, 0.7);
  // f16: 8 rows of 4 MiB a round, 2 rounds
  p = plan(16, 2097152, 2, d);
  EXPECT_EQ(p.path, SoftmaxPath::kGrid);
  EXPECT_EQ(p.rows_per_round, 8);
  EXPECT_EQ(p.rounds, 2);
  EXPECT_EQ(p.buffers, 1);
  // rows that fit the grid in one round stay wholly on chip: 4 x 1048576 f32
  p = plan(4, 1048576, 4, d);
  EXPECT_EQ(p.path, SoftmaxPath::kGrid);
  EXPECT_EQ(p.rounds, 1);
  EXPECT_GE(p.buffer_bytes, kk::detail::softmax_chunk_packs(1048576, p.split, 4) * 16);
  // without cooperative launches, rows too wide for a block are read twice
  kk::DeviceInfo no_coop = kktest::a100();
  no_coop.cooperative_launch = false;
  EXPECT_EQ(plan(1, 1048576, 4, no_coop).path, SoftmaxPath::kTwoPass);
  EXPECT_EQ(plan(4096, 50257, 4, no_coop).path, SoftmaxPath::kTwoPass);
}

// The shared memory of one kGrid block (its SM's share, as softmax_plan_grid gives it):
// a chunk past its buffer has one buffer of all of it.
int64_t grid_share(const kk::DeviceInfo& d, int blocks_per_sm) {
  const int64_t cap = d.smem_per_sm / blocks_per_sm - d.smem_reserved_per_block;
  return std::min<int64_t>(cap / 128 * 128, d.smem_per_block_optin);
}

// Rows wider than the grid's shared memory (issue 30; an H100 holds ~30 MB): every SM on
// them, each chunk keeping one buffer of its block's whole share on chip and reading the rest
// twice, on every device with cooperative launches; the estimate near the 2/3 of the copy's
// rate that reading most of a row twice leaves. They were planned one block per row
// (kTwoPass: f32 1x26413760 5.8 ms on an H100, 0.01 of the speed of light).
TEST(SoftmaxPlan, RowsPastTheGridsSharedMemory) {
  struct Shape {
    int64_t rows, cols;
    int elem;
  };
  const Shape shapes[] = {{1, 26413760, 4}, {3, 149601689, 4}, {2, 67084672, 2}, {5, 20051951, 2},
                          {7, 55327529, 2}, {9, 24720211, 2},  {1, 223858069, 2}};
  for (const auto& dev : kktest::all_devices()) {
    const kk::DeviceInfo& d = dev.info;
    for (const Shape& sh : shapes) {
      for (const int off : {0, sh.elem}) {
        const SoftmaxPlan p = plan(sh.rows, sh.cols, sh.elem, d, off, off);
        SCOPED_TRACE(std::string(dev.name) + " " + std::to_string(sh.rows) + "x" +
                     std::to_string(sh.cols) + " elem=" + std::to_string(sh.elem) +
                     " offset=" + std::to_string(off) + ": " + describe(p));
        ASSERT_EQ(p.path, SoftmaxPath::kGrid);
        EXPECT_EQ(p.buffers, 1);
        EXPECT_EQ(int64_t(p.shape.smem),
                  kk::detail::softmax_scratch_bytes(1024, kk::BlockCombine::kGrid) +
                      (grid_share(d, p.blocks_per_sm) -
                       kk::detail::softmax_scratch_bytes(1024, kk::BlockCombine::kGrid)) /
                          16 * 16);
        EXPECT_GT(kk::detail::softmax_chunk_packs(sh.cols, p.split, p.pack) * p.pack * sh.elem,
                  p.buffer_bytes);
        // (nearly) every SM busy: at least 3 in 4 block slots (a T4 runs 7 rows on 7 x 5 of
        // its 40 SMs in one round rather than 7 rounds)
        EXPECT_GE(4 * int64_t{p.shape.grid.x}, 3 * int64_t{p.blocks_per_sm} * d.sm_count);
        EXPECT_GT(p.fill, 0.6);
        EXPECT_LT(p.fill, 0.8);
      }
    }
  }
  // without cooperative launches: read twice, one block per row
  kk::DeviceInfo no_coop = kktest::h100();
  no_coop.cooperative_launch = false;
  EXPECT_EQ(plan(1, 26413760, 4, no_coop).path, SoftmaxPath::kTwoPass);
}

// The kGrid chunk kernel's index walk on the host, for rows whose chunks are longer than their
// buffer: every column of a row is read exactly once for the statistics and written exactly
// once, over the chunks (softmax_chunk_begin) and, within each, the packs held in shared memory
// ([0, held): issue / softmax_from_smem / the write loop) and the packs past them, read through
// registers (softmax_stream_stats: whole packs [held, max(hi, held)) by thread t from held + t
// in steps of kU x Block, then the partial last pack by one thread) and again at the write
// (softmax_stream_write: the partial last pack, then whole packs from the end, kU in flight a
// thread). A whole-pack access must touch a whole pack (lo <= v < hi), and each chunk's parked
// pair (its first 8 bytes) sits in the part held on chip. This mirrors SoftmaxSpan and the two
// stream loops of softmax_kernels.cuh; a change there must change it here.
struct ChunkWalk {
  // per pack of one row (of the aligned array around it: pack 0 holds its first column):
  // times its columns were read for the statistics / written (a chunk past the first starts
  // on a pack boundary, so every pack is one chunk's)
  std::vector<uint8_t> stats, write;
  std::string error;  // the first inconsistency
};
void walk_grid_row(const SoftmaxPlan& p, int64_t cols, int elem, int64_t row_start_mod_pack,
                   ChunkWalk* w) {
  const int P = p.pack;
  const int block = static_cast<int>(p.shape.block.x);
  // packs in flight a thread (kSoftmaxStreamU, kSoftmaxStreamWriteU) for pack 1, 4, 8
  const int ku_stats = P == 1   ? kk::detail::kSoftmaxStreamU<1>
                       : P == 4 ? kk::detail::kSoftmaxStreamU<4>
                                : kk::detail::kSoftmaxStreamU<8>;
  const int ku_write = P == 1   ? kk::detail::kSoftmaxStreamWriteU<1>
                       : P == 4 ? kk::detail::kSoftmaxStreamWriteU<4>
                                : kk::detail::kSoftmaxStreamWriteU<8>;
  const int64_t slot = kk::detail::kSoftmaxPairBytes / elem;
  const int cap = static_cast<int>(p.buffer_bytes / (int64_t{P} * elem));
  const int64_t row_packs = (row_start_mod_pack + cols + P - 1) / P;
  w->stats.assign(row_packs, 0);
  w->write.assign(row_packs, 0);
  const int64_t lead = (P - row_start_mod_pack % P) % P;
  for (int j = 0; j < p.split && w->error.empty(); ++j) {
    const int64_t begin = kk::detail::softmax_chunk_begin(j, p.split, cols, P, lead);
    const int64_t end = kk::detail::softmax_chunk_begin(j + 1, p.split, cols, P, lead);
    const int64_t len = end - begin;
    const int head = static_cast<int>((row_start_mod_pack + begin) % P);
    const int64_t pack0 = (row_start_mod_pack + begin) / P;  // the row's pack of the span's 0
    const int n = len > 0 ? static_cast<int>((head + len + P - 1) / P) : 0;
    const int lo = head == 0 && len >= P ? 0 : 1;
    int hi = (head + len) % P == 0 ? n : n - 1;
    if (hi < lo) hi = lo;
    const int held = std::min(n, cap);
    const std::string at = "chunk " + std::to_string(j) + " [" + std::to_string(begin) + ", " +
                           std::to_string(end) + ") head " + std::to_string(head) + ": ";
    if (j > 0 && head != 0) w->error = at + "a chunk past the first starts mid-pack";
    if (int64_t{held} * P - head < slot) w->error = at + "its pair is not in the held packs";
    // pack v: `whole` accesses all P elements, which must be the chunk's (lo <= v < hi)
    const auto touch = [&](std::vector<uint8_t>& mark, int v, bool whole) {
      if (v < 0 || v >= n) {
        if (w->error.empty()) w->error = at + "pack " + std::to_string(v) + " outside the span";
        return;
      }
      if (whole && (v < lo || v >= hi) && w->error.empty())
        w->error = at + "whole-pack access to pack " + std::to_string(v);
      ++mark[pack0 + v];
    };
    for (int v = 0; v < held; ++v) {
      touch(w->stats, v, false);
      touch(w->write, v, false);
    }
    const int whole_end = std::max(hi, held);
    for (int t = 0; t < block; ++t) {
      for (int v0 = held + t; v0 < whole_end; v0 += ku_stats * block)
        for (int u = 0; u < ku_stats; ++u)
          if (v0 + u * block < whole_end) touch(w->stats, v0 + u * block, true);
      for (int v0 = whole_end - 1 - t; v0 >= held; v0 -= ku_write * block)
        for (int u = 0; u < ku_write; ++u)
          if (u == 0 || v0 - u * block >= held) touch(w->write, v0 - u * block, true);
    }
    if (held < n && whole_end < n) {
      touch(w->stats, whole_end, false);
      touch(w->write, whole_end, false);
    }
  }
  for (int64_t g = 0; g < row_packs && w->error.empty(); ++g)
    if (w->stats[g] != 1 || w->write[g] != 1)
      w->error = "pack " + std::to_string(g) + " of the row read " + std::to_string(w->stats[g]) +
                 " times for the statistics, written " + std::to_string(w->write[g]) + " times";
}

TEST(SoftmaxPlan, GridChunksPastTheBufferCoverEveryColumnOnce) {
  struct Shape {
    int64_t rows, cols;
    int elem, in_off, out_off;  // bytes within 16
  };
  // issue 30's f32 / f16 1 x 26413760 (the f16 GPU case's row sum, 0.966, is its outputs'
  // rounding: every one is subnormal in f16), the GPU test's 2 x 20051951 off the grid (rows
  // at two offsets), and in / out at different offsets (one element per access)
  const Shape shapes[] = {{1, 26413760, 4, 0, 0},
                          {1, 26413760, 2, 0, 0},
                          {2, 20051951, 4, 12, 12},
                          {2, 20051951, 2, 6, 6},
                          {1, 26413760, 2, 2, 4}};
  int walked = 0;
  for (const auto& dev : kktest::all_devices()) {
    if (std::string(dev.name) == "H100-compute80") continue;  // the H100's grid plans
    for (const Shape& sh : shapes) {
      const SoftmaxPlan p = plan(sh.rows, sh.cols, sh.elem, dev.info, sh.in_off, sh.out_off);
      SCOPED_TRACE(std::string(dev.name) + " " + std::to_string(sh.rows) + "x" +
                   std::to_string(sh.cols) + " elem=" + std::to_string(sh.elem) + " in+" +
                   std::to_string(sh.in_off) + " out+" + std::to_string(sh.out_off) + ": " +
                   describe(p));
      ASSERT_EQ(p.path, SoftmaxPath::kGrid);
      ASSERT_GT(kk::detail::softmax_chunk_packs(sh.cols, p.split, p.pack) * p.pack * sh.elem,
                p.buffer_bytes);  // chunks past their buffer
      for (int64_t r = 0; r < sh.rows; ++r) {
        ChunkWalk w;
        walk_grid_row(p, sh.cols, sh.elem, (sh.in_off / sh.elem + r * sh.cols) % p.pack, &w);
        EXPECT_EQ(w.error, "") << "row " << r;
        ++walked;
      }
    }
  }
  EXPECT_EQ(walked, 4 * 7);
}

// Few rows, too few to fill the SMs, however few their bytes (issue 30's decode widths: f32
// 13x57751 took 18 us on 13 SMs, 0.30 of the speed of light): a cluster a row, as large as
// takes work off the busiest SM (every SM a block where the rows allow), where the busiest
// SM's elements and the cluster barrier are fewer than one block's row or the grid round's.
// (The cluster size: the smallest that fits 3 blocks a SM, then larger ones that take work off
// the busiest SM while every block of the rows still has an SM of its own.)
TEST(SoftmaxPlan, FewRowsSpreadOverTheSMs) {
  const kk::DeviceInfo d = kktest::h100();
  struct Want {
    int64_t rows, cols;
    int elem, offset, split;
  };
  for (const Want w :
       {Want{13, 57751, 4, 0, 8}, Want{12, 52101, 4, 5, 8}, Want{2, 51840, 4, 7, 16},
        Want{11, 50773, 4, 5, 8}, Want{9, 84011, 2, 0, 8}, Want{3, 79939, 2, 7, 16},
        Want{1, 53299, 2, 4, 16}, Want{7, 160381, 4, 0, 16}, Want{13, 201037, 2, 0, 8},
        Want{23, 93047, 2, 3, 4}, Want{23, 119296, 2, 1, 4}}) {
    const SoftmaxPlan p =
        plan(w.rows, w.cols, w.elem, d, w.offset * w.elem % 16, w.offset * w.elem % 16);
    SCOPED_TRACE(std::to_string(w.rows) + "x" + std::to_string(w.cols) + ": " + describe(p));
    EXPECT_EQ(p.path, SoftmaxPath::kCluster);
    EXPECT_EQ(p.split, w.split);
    // (13 x 8 blocks leave 28 SMs idle, but 13 x 16 put two half chunks on 76 SMs: no less
    // work on the busiest)
    if (p.split < d.max_cluster())
      EXPECT_LE(kk::detail::softmax_sm_work(w.rows, p.split, kk::ceil_div<int64_t>(w.cols, p.split),
                                            d.sm_count),
                kk::detail::softmax_sm_work(
                    w.rows, 2 * p.split, kk::ceil_div<int64_t>(w.cols, 2 * p.split), d.sm_count));
    // without clusters: one block a row (fits) or the grid (not)
    const SoftmaxPlan q = plan(w.rows, w.cols, w.elem, kktest::h100_compute80(),
                               w.offset * w.elem % 16, w.offset * w.elem % 16);
    EXPECT_TRUE(q.path == SoftmaxPath::kBlock || q.path == SoftmaxPath::kGrid) << describe(q);
  }
  // a row of 1M on one cluster would leave its 16 SMs 65K elements each: one grid round (f16
  // 1x1048576 measured 18.0 us on a cluster, 11.3 on the grid); 4 rows of 500000 likewise
  // (f32 20.3 / 15.1 us)
  EXPECT_EQ(plan(1, 1048576, 2, d).path, SoftmaxPath::kGrid);
  EXPECT_EQ(plan(4, 500000, 4, d).path, SoftmaxPath::kGrid);
  EXPECT_EQ(plan(4, 500000, 2, d).path, SoftmaxPath::kGrid);
  // rows of bytes that a grid round (16 KB more than a cluster barrier) pays for, and rows
  // whose clusters would share SMs: the grid (H100 f32 2x129193 10.24 us against a cluster of
  // 16 10.66, 3x189229+3 10.91 against 11.87, log 5x320759 14.14 against 14.98, f16
  // 22x116416+3 12.77 against 18.46 on 352 blocks in clusters of 16)
  EXPECT_EQ(plan(2, 129193, 4, d).path, SoftmaxPath::kGrid);
  EXPECT_EQ(plan(3, 189229, 4, d, 12, 12).path, SoftmaxPath::kGrid);
  EXPECT_EQ(plan(5, 320759, 4, d).path, SoftmaxPath::kGrid);
  EXPECT_EQ(plan(22, 116416, 2, d, 6, 6).path, SoftmaxPath::kGrid);
  // rows enough to fill the SMs keep the smallest cluster that fits (3 blocks a SM)
  EXPECT_EQ(plan(512, 65536, 4, d).split, 4);
  EXPECT_EQ(plan(336, 100000, 2, d).split, 4);
  // short rows stay one block: 1 x 2000 f32 (2000 elements against 125 and the barrier)
  EXPECT_EQ(plan(1, 2000, 4, d, 4, 4).path, SoftmaxPath::kBlock);
}

TEST(SoftmaxPlan, NoClusterWithoutClusterCode) {
  // the device can launch clusters but the kernels were built for compute_80
  const kk::DeviceInfo d = kktest::h100_compute80();
  for (const int64_t cols : {65536, 151936, 262144, 1000000}) {
    for (const int elem : {2, 4}) {
      const SoftmaxPlan p = plan(512, cols, elem, d);
      EXPECT_NE(p.path, SoftmaxPath::kCluster) << cols << " " << describe(p);
      EXPECT_FALSE(p.shape.is_cluster());
    }
  }
}

// ---------------------------------------------------------------------------------------
// Invariants.

// Packs a run of len elements starting `mis` elements past a pack boundary spans.
int64_t span_packs(int64_t mis, int64_t len, int pack) {
  return len == 0 ? 0 : (mis + len + pack - 1) / pack;
}

void check_invariants(const SoftmaxPlan& p, int64_t rows, int64_t cols, int elem, int in_off,
                      int out_off, const kk::DeviceInfo& d, const std::string& what) {
  SCOPED_TRACE(what + ": " + describe(p));
  // a kernel launch_softmax instantiates
  ASSERT_GE(kk::config_index(kk::kSoftmaxConfigs, kk::softmax_config(p, elem)), 0);
  const int max_pack = 16 / elem;
  // 8-byte packs: 2-byte rows of the warp path all starting on an 8-byte boundary, not all
  // on a 16-byte one
  const bool half = elem == 2 && in_off % 16 == out_off % 16 && in_off % 8 == 0 &&
                    cols % (max_pack / 2) == 0 && !(in_off % 16 == 0 && cols % max_pack == 0) &&
                    cols <= 1024;
  ASSERT_TRUE(p.pack == max_pack || p.pack == 1 || (half && p.pack == max_pack / 2));
  if (half)
    EXPECT_EQ(p.pack, max_pack / 2);
  else if (in_off % 16 == out_off % 16)
    EXPECT_EQ(p.pack, max_pack);
  else
    EXPECT_EQ(p.pack, 1);
  if (p.pack == max_pack / 2) {
    EXPECT_EQ(p.path, SoftmaxPath::kWarp);
    EXPECT_TRUE(p.on_grid);
  }
  const auto& s = p.shape;
  // a legal launch
  ASSERT_GE(s.grid.x, 1u);
  ASSERT_LE(s.grid.x, unsigned(INT32_MAX));
  EXPECT_EQ(s.grid.y * s.grid.z, 1u);
  EXPECT_GE(s.block.x, 32u);
  EXPECT_LE(int(s.block.x), d.max_threads_per_block);
  EXPECT_EQ(s.block.x % 32, 0u);
  EXPECT_LE(int64_t(s.smem), int64_t{d.smem_per_block_optin});
  EXPECT_GE(p.blocks_per_sm, 1);
  EXPECT_EQ(s.smem % 16, 0u);
  if (s.is_cluster()) {
    EXPECT_TRUE(d.clusters());
    EXPECT_EQ(p.path, SoftmaxPath::kCluster);
    EXPECT_TRUE(s.cluster.x == 2 || s.cluster.x == 4 || s.cluster.x == 8 ||
                (s.cluster.x == 16 && d.max_cluster() == 16));
    EXPECT_EQ(s.grid.x % s.cluster.x, 0u);
  }
  if (p.path == SoftmaxPath::kCluster) EXPECT_TRUE(s.is_cluster());
  EXPECT_EQ(s.cooperative, p.path == SoftmaxPath::kGrid);
  // rows on the pack grid (every row 16-byte aligned) up to 16384 2-byte / 8192 f32
  // columns: kBlock in registers, unless a split was preferred
  const bool grid_rows = in_off % 16 == 0 && out_off % 16 == 0 && cols % (16 / elem) == 0;
  if (p.path == SoftmaxPath::kBlock)
    EXPECT_EQ(p.on_grid, grid_rows && cols <= (elem == 2 ? 16384 : 8192));
  if (p.path != SoftmaxPath::kWarp && p.path != SoftmaxPath::kBlock) EXPECT_FALSE(p.on_grid);
  if (p.path == SoftmaxPath::kBlock && p.on_grid) {
    // a register shape (an entry of the table: below), holding the row, at the residency its
    // bound gives
    EXPECT_EQ(p.pack, 16 / elem);
    EXPECT_LE(cols / p.pack, int64_t{s.block.x} * p.packs);
    EXPECT_EQ(p.split, 1);
    EXPECT_EQ(p.buffers, 0);
    EXPECT_EQ(s.smem, 0u);
    EXPECT_LE(int64_t{s.grid.x}, rows);
    const int block = int(s.block.x);
    const int regs = kk::detail::softmax_regs_bound(
        d, block, kk::detail::softmax_registers_min_blocks(block, p.packs));
    EXPECT_EQ(regs, d.max_threads_per_sm >= 2048 ? (p.packs == 2 ? 32 : 40) : regs);
    EXPECT_EQ(p.blocks_per_sm,
              kk::blocks_per_sm(d, block, regs, kk::detail::softmax_registers_smem(block)));
    return;
  }
  if (p.path == SoftmaxPath::kTile) {
    // short contiguous rows off the pack grid: the narrow kernel up to two packs a row (packs 1),
    // else a shape of kSoftmaxTileShapes whose lanes hold every row's packs at most 48; tiles
    // of whole numbers of the block's rows; the pack-lane kernel's tails and heads past the
    // two buffers
    EXPECT_EQ(p.pack, max_pack);
    EXPECT_FALSE(p.on_grid);
    EXPECT_FALSE(in_off % 16 == 0 && cols % max_pack == 0);
    EXPECT_EQ(in_off % 16, out_off % 16);
    EXPECT_EQ(s.block.x, 128u);
    int64_t unit = 128 / p.group, side = 0;
    if (p.packs == 1) {
      EXPECT_EQ(p.group, 1);
      EXPECT_LE(cols, 2 * max_pack);
      const int r = kk::detail::softmax_narrow_rows_per_lane(int(cols), max_pack, in_off % 16 == 0);
      unit = r * 128;
      if (elem == 2) side = (p.rows_per_round * 4 + 15) / 16 * 16;
    } else {
      EXPECT_GT(cols, 2 * max_pack);
      EXPECT_EQ(p.packs % max_pack, 0);
      bool shape = false;
      for (const auto& t : kk::detail::kSoftmaxTileShapes)
        shape = shape || (t.group == p.group && t.packs * max_pack == p.packs);
      EXPECT_TRUE(shape);
      for (int64_t r = 0; r < std::min<int64_t>(rows, p.pack); ++r) {
        const int64_t mis = ((in_off / elem) + r * cols) % p.pack;
        EXPECT_LE(span_packs(mis, cols, p.pack), int64_t{p.group} * (p.packs / max_pack))
            << "row " << r;
      }
      side = (3 * unit + 3) * 16;
    }
    EXPECT_GE(p.rows_per_round, unit);
    EXPECT_EQ(p.rows_per_round % unit, 0);
    EXPECT_EQ(p.buffers, 2);
    EXPECT_EQ(int64_t(s.smem), 2 * p.buffer_bytes + side);
    EXPECT_EQ(p.buffer_bytes % 16, 0);
    // a tile's span, any alignment, fits a buffer
    EXPECT_LE(span_packs(p.pack - 1, p.rows_per_round * cols, p.pack) * 16, p.buffer_bytes);
    EXPECT_LE(int64_t{s.grid.x}, kk::ceil_div(rows, p.rows_per_round));
    const int regs = kk::detail::softmax_regs_bound(
        d, 128,
        p.packs == 1 ? kk::detail::softmax_tile_narrow_min_blocks(d.code_arch)
                     : kk::detail::softmax_tile_min_blocks(p.packs, d.code_arch));
    EXPECT_EQ(p.blocks_per_sm, kk::blocks_per_sm(d, 128, regs, int64_t(s.smem)));
    return;
  }
  // rows beyond the element limits of the pair slots etc.: the dispatchable templates
  const int slot = 8 / elem;
  const int64_t pack_bytes = int64_t{p.pack} * elem;
  switch (p.path) {
    case SoftmaxPath::kWarp: {
      EXPECT_EQ(s.block.x, 128u);
      EXPECT_EQ(s.smem, 0u);
      // contiguous rows off the pack grid of at most 48 packs: the tile path
      if (p.pack > 1 && !p.on_grid) EXPECT_EQ(p.group, 32);
      if (p.pack > 1 && !p.on_grid && in_off % 16 == out_off % 16)
        EXPECT_TRUE(cols > 2 * max_pack && tile_span(cols, (in_off / elem) % max_pack, max_pack) >
                                               kk::detail::kSoftmaxTileMaxPacks);
      if (p.group < 32) {
        EXPECT_GT(p.pack, 1);
        EXPECT_EQ(p.packs, 1);
        EXPECT_TRUE(p.group == 1 || p.group == 2 || p.group == 4 || p.group == 8 || p.group == 16);
      } else if (p.pack > 1) {
        EXPECT_TRUE(p.packs == 1 || p.packs == 2 || p.packs == 4 || p.packs == 8);
        EXPECT_LE(p.packs * p.pack, 32);
      } else {
        EXPECT_TRUE(p.packs == 1 || p.packs == 8 || p.packs == 32);
      }
      // every row start (rows of cols elements from in_off): its packs fit the lanes
      for (int64_t r = 0; r < std::min<int64_t>(rows, 2 * p.pack); ++r) {
        const int64_t mis = ((in_off / elem) + r * cols) % p.pack;
        EXPECT_LE(span_packs(mis, cols, p.pack), int64_t{p.group} * p.packs) << "row " << r;
      }
      const int rows_per_block = (128 / p.group) * (p.packs == 1 ? 2 : 1);
      EXPECT_LE(int64_t{s.grid.x}, kk::ceil_div<int64_t>(rows, rows_per_block));
      // the kernel's register bound gives the planned residency
      const int regs = kk::detail::softmax_regs_bound(
          d, 128,
          kk::detail::softmax_warp_min_blocks(p.pack, p.group, p.packs, p.on_grid, d.code_arch));
      // on the pack grid exactly when every row starts on a pack boundary
      EXPECT_EQ(p.on_grid, p.pack > 1 && in_off % (p.pack * elem) == 0 && cols % p.pack == 0);
      EXPECT_EQ(p.blocks_per_sm, kk::blocks_per_sm(d, 128, regs, 0));
      break;
    }
    case SoftmaxPath::kBlock:
    case SoftmaxPath::kCluster:
    case SoftmaxPath::kGrid: {
      const int block = int(s.block.x);
      if (p.path == SoftmaxPath::kBlock) {
        EXPECT_TRUE(block == 32 || block == 64 || block == 128 || block == 256 || block == 512 ||
                    block == 1024);
        if (p.pack == 1) EXPECT_TRUE(block == 256 || block == 1024);
        // at most kSoftmaxPacksPerThread packs a thread where a block size allows it
        const int64_t vp = int64_t(p.buffer_bytes) / (int64_t{p.pack} * elem);
        if (vp <= 1024 * kk::detail::kSoftmaxPacksPerThread && p.pack > 1)
          EXPECT_LE(vp, int64_t{block} * kk::detail::kSoftmaxPacksPerThread);
        EXPECT_EQ(p.split, 1);
        EXPECT_LE(int64_t{s.grid.x}, rows);
      } else if (p.path == SoftmaxPath::kCluster) {
        EXPECT_TRUE(block == 512 || block == 1024);
        if (block == 512) EXPECT_GE(p.blocks_per_sm, 2);
      } else {
        EXPECT_EQ(block, 1024);
      }
      if (p.path == SoftmaxPath::kCluster) {
        EXPECT_EQ(p.pack, max_pack);
        EXPECT_EQ(p.split, int(s.cluster.x));
        EXPECT_LE(int64_t{s.grid.x} / p.split, rows);
      }
      EXPECT_TRUE(p.buffers == 1 || p.buffers == 2);
      EXPECT_EQ(p.buffer_bytes % 16, 0);
      const int64_t held = kk::detail::softmax_scratch_bytes(int(s.block.x), combine_of(p.path)) +
                           p.buffers * p.buffer_bytes;
      if (p.path == SoftmaxPath::kCluster) {
        // each block asks for its SM's share: no more than the planned blocks are resident,
        // whatever registers the kernel was compiled to (a block more, packed into the
        // GPCs, left SMs idle)
        EXPECT_EQ(int64_t(s.smem),
                  std::max(held, kk::detail::softmax_sm_share(d, p.blocks_per_sm)));
        EXPECT_EQ(kk::blocks_per_sm(d, block, 0, int64_t(s.smem)), p.blocks_per_sm);
      } else {
        EXPECT_EQ(int64_t(s.smem), held);
      }
      // the planned residency holds with the kernel's register bound and this smem
      const int regs =
          kk::detail::softmax_regs_bound(d, block, kk::detail::kSoftmaxChunkThreadsPerSm / block);
      if (block >= 64) {
        EXPECT_EQ(regs, block == 1024 ? 64 : (d.max_threads_per_sm >= 1536 ? 40 : 64));
      } else {
        // one warp: the SM's resident blocks bound the registers (H100 32 blocks: 64)
        EXPECT_EQ(regs, std::min(255, d.regs_per_sm / (d.max_blocks_per_sm * 32) / 8 * 8));
      }
      EXPECT_GE(kk::blocks_per_sm(d, block, regs, int64_t(s.smem)), p.blocks_per_sm);
      if (p.path == SoftmaxPath::kGrid) {
        // every block resident at once
        EXPECT_LE(int64_t{s.grid.x}, int64_t{p.blocks_per_sm} * d.sm_count);
        EXPECT_EQ(int64_t{s.grid.x}, p.rows_per_round * p.split);
        EXPECT_GE(p.rows_per_round * p.rounds, rows);
        EXPECT_LT(p.rows_per_round * (p.rounds - 1), rows);
      }
      // every column of every row alignment covered once, each chunk within a buffer
      const int64_t capacity = p.buffer_bytes / pack_bytes;
      // the offsets within a pack that rows actually start at
      for (int64_t r = 0; r < std::min<int64_t>(rows, p.pack); ++r) {
        const int64_t mis = ((in_off / elem) + r * cols) % p.pack;
        const int64_t lead = (p.pack - mis) % p.pack;
        int64_t prev = 0;
        ASSERT_EQ(kk::detail::softmax_chunk_begin(0, p.split, cols, p.pack, lead), 0);
        for (int j = 0; j < p.split; ++j) {
          const int64_t b = kk::detail::softmax_chunk_begin(j, p.split, cols, p.pack, lead);
          const int64_t e = kk::detail::softmax_chunk_begin(j + 1, p.split, cols, p.pack, lead);
          ASSERT_EQ(b, prev);
          ASSERT_GE(e, b) << "chunk " << j;
          if (j > 0 && p.pack > 1) EXPECT_EQ((mis + b) % p.pack, 0) << "chunk " << j;
          const int64_t packs = span_packs((mis + b) % p.pack, e - b, p.pack);
          if (p.path == SoftmaxPath::kGrid && packs > capacity) {
            // a chunk past its buffer (a row wider than the grid's shared memory, or fewer
            // rounds): one buffer of the block's whole share, holding the chunk's head (its
            // parked pair's elements) and enough packs that the rest is whole packs but one
            EXPECT_EQ(p.buffers, 1) << "chunk " << j;
            EXPECT_EQ(int64_t(s.smem),
                      kk::detail::softmax_scratch_bytes(block, kk::BlockCombine::kGrid) +
                          (grid_share(d, p.blocks_per_sm) -
                           kk::detail::softmax_scratch_bytes(block, kk::BlockCombine::kGrid)) /
                              16 * 16)
                << "chunk " << j;
            EXPECT_GE(capacity, kk::detail::kSoftmaxGridMinPacks) << "chunk " << j;
          } else {
            EXPECT_LE(packs, capacity) << "chunk " << j;
          }
          if (p.path == SoftmaxPath::kGrid) EXPECT_GE(e - b, slot) << "chunk " << j;
          prev = e;
        }
        ASSERT_EQ(prev, cols);
      }
      break;
    }
    case SoftmaxPath::kTwoPass:
      EXPECT_EQ(s.block.x, 1024u);
      EXPECT_EQ(s.smem, 0u);
      EXPECT_LE(int64_t{s.grid.x}, rows);
      break;
    case SoftmaxPath::kTile:
      break;
  }
}

TEST(SoftmaxPlan, InvariantsOverShapesAlignmentsAndDevices) {
  const int64_t widths[] = {
      1,      2,      3,      5,      7,      8,      9,      31,      32,      33,     63,
      64,     65,     96,     127,    128,    129,    255,    256,     257,     500,    1000,
      1023,   1024,   1025,   1500,   2047,   2048,   2049,   3000,    4097,    5000,   8191,
      10007,  16383,  16384,  16385,  32000,  32768,  50257,  65535,   65537,   100000, 100003,
      131071, 151936, 250000, 262144, 262147, 300000, 500000, 1048576, 2097152, 8388609};
  const int64_t row_counts[] = {1, 2, 3, 4, 16, 32, 37, 128, 221, 336, 1000, 4096, 100000, 1000000};
  const int offsets[][2] = {{0, 0}, {4, 4}, {2, 2}, {8, 8}, {0, 4}, {2, 6}, {12, 0}};
  auto devices = kktest::all_devices();
  kk::DeviceInfo no_coop = kktest::a100();
  no_coop.cooperative_launch = false;
  devices.push_back({"A100-no-cooperative", no_coop});
  kk::DeviceInfo h100_no_coop = kktest::h100();
  h100_no_coop.cooperative_launch = false;
  devices.push_back({"H100-no-cooperative", h100_no_coop});
  for (const auto& dev : devices) {
    for (const int elem : {4, 2}) {
      for (const int64_t cols : widths) {
        for (const int64_t rows : row_counts) {
          if (rows * cols > (int64_t{1} << 34)) continue;
          for (const auto& off : offsets) {
            if (off[0] % elem || off[1] % elem) continue;
            const SoftmaxPlan p = kk::plan_softmax(rows, cols, elem, kk::Alignment(off[0]),
                                                   kk::Alignment(off[1]), dev.info);
            check_invariants(p, rows, cols, elem, off[0], off[1], dev.info,
                             std::string(dev.name) + " " + std::to_string(rows) + "x" +
                                 std::to_string(cols) + " elem=" + std::to_string(elem) +
                                 " offsets=" + std::to_string(off[0]) + "," +
                                 std::to_string(off[1]));
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// The table of kernel configurations.

// The devices the table is planned for: the four GPUs (and an H100 running a compute_80
// build), each also without cooperative launches, and an H100 with the portable clusters only
// (as plan_and_launch plans again after a cluster of 16 did not fit).
std::vector<kktest::NamedDevice> table_devices() {
  auto devices = kktest::all_devices();
  for (const auto& d : kktest::all_devices()) {
    kk::DeviceInfo no_coop = d.info;
    no_coop.cooperative_launch = false;
    devices.push_back({d.name, no_coop});
  }
  kk::DeviceInfo portable = kktest::h100();
  portable.nonportable_clusters = false;
  devices.push_back({"H100-portable-clusters", portable});
  return devices;
}

std::string describe(const kk::SoftmaxConfig& c) {
  return std::string(path_name(c.path)) + " elem_bytes=" + std::to_string(c.elem_bytes) +
         " pack=" + std::to_string(c.pack) + " block=" + std::to_string(c.block) +
         " group=" + std::to_string(c.group) + " packs=" + std::to_string(c.packs) +
         " on_grid=" + std::to_string(c.on_grid);
}

TEST(SoftmaxConfigs, EachElementSizeTogetherNoDuplicates) {
  kktest::expect_ranges_tile(std::size(kk::kSoftmaxConfigs),
                             {kk::softmax_configs_of(4), kk::softmax_configs_of(2)});
  kktest::expect_distinct_entries(kk::kSoftmaxConfigs, describe);
}

// Plans over shapes (odd, prime, tiny, few rows of any width, past 2^31 elements) x devices x
// alignments x element sizes: each is an entry of kSoftmaxConfigs (what launch_softmax can
// launch), and every entry is some shape's plan (no kernel is built that no call runs).
TEST(SoftmaxConfigs, EveryPlanIsAnEntryAndEveryEntryIsPlanned) {
  const int64_t sizes[] = {
      1,      2,      3,      4,      5,       7,       8,       9,       12,       16,
      17,     24,     26,     31,     32,      33,      48,      63,      64,       65,
      96,     127,    128,    129,    131,     200,     255,     256,     257,      500,
      502,    509,    512,    1000,   1021,    1024,    1025,    1028,    1500,     2047,
      2048,   2049,   3000,   4093,   4096,    4097,    5000,    8191,    8192,     8193,
      10007,  16383,  16384,  16385,  32000,   32749,   50257,   65536,   65537,    100003,
      151936, 262144, 262147, 500000, 1048576, 1048583, 2097152, 8388609, 33554432, 2147483659LL};
  const int offsets[][2] = {{0, 0}, {4, 4}, {2, 2}, {8, 8}, {0, 4}, {2, 6}, {12, 0}, {6, 6}};
  kktest::PlannedEntries planned(kk::kSoftmaxConfigs);
  for (const auto& dev : table_devices()) {
    for (const int elem : {4, 2}) {
      for (const int64_t rows : sizes) {
        for (const int64_t cols : sizes) {
          if (rows > (int64_t{1} << 40) / cols) continue;
          for (const auto& off : offsets) {
            if (off[0] % elem || off[1] % elem) continue;
            // contiguous rows, and (several rows) rows one element further apart: the warp
            // path's off-grid entries below 48 packs are strided rows' only (contiguous ones
            // are the tiles')
            for (const int64_t pad : {0, 1}) {
              if (pad == 1 && (rows == 1 || rows > (int64_t{1} << 40) / (cols + 1))) continue;
              const SoftmaxPlan p =
                  kk::plan_softmax(rows, cols, elem, kk::Alignment(off[0]), cols + pad,
                                   kk::Alignment(off[1]), cols + pad, dev.info);
              const kk::ConfigRange r = kk::softmax_configs_of(elem);
              const int i = planned.count(kk::softmax_config(p, elem), r.begin, r.end);
              ASSERT_GE(i, 0) << dev.name << " " << rows << "x" << cols << " elem=" << elem
                              << " offsets=" << off[0] << "," << off[1] << " pad=" << pad << ": "
                              << describe(p);
            }
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe, "no shape plans");
  EXPECT_GT(planned.plans(), 100000);
}

// Every entry has a small case that the GPU tests run (softmax_case.cuh: config_cases), on an
// H100.
TEST(SoftmaxConfigs, EveryEntryHasASmallCase) {
  const auto check = [](const auto& cases, int elem) {
    const kk::ConfigRange range = kk::softmax_configs_of(elem);
    ASSERT_EQ(cases.size(), range.end - range.begin);
    for (size_t i = 0; i < cases.size(); ++i)
      EXPECT_TRUE(cases[i].found) << describe(kk::kSoftmaxConfigs[range.begin + i]);
  };
  check(softmax_test::config_cases<float>(kktest::h100()), 4);
  check(softmax_test::config_cases<__half>(kktest::h100()), 2);
  // strided rows: every entry but the tiles' (contiguous rows only)
  const auto check_strided = [](const auto& cases, int elem) {
    const kk::ConfigRange range = kk::softmax_configs_of(elem);
    ASSERT_EQ(cases.size(), range.end - range.begin);
    for (size_t i = 0; i < cases.size(); ++i) {
      const kk::SoftmaxConfig& c = kk::kSoftmaxConfigs[range.begin + i];
      EXPECT_EQ(cases[i].found, c.path != SoftmaxPath::kTile) << describe(c);
      if (cases[i].found) EXPECT_NE(cases[i].layout.ld_in(cases[i].cols), cases[i].cols);
    }
  };
  check_strided(softmax_test::config_cases<float>(kktest::h100(), true), 4);
  check_strided(softmax_test::config_cases<__half>(kktest::h100(), true), 2);
}

// ---------------------------------------------------------------------------------------
// Strided rows (ld_in, ld_out > cols).

// Where every row of in and of out sits on the 16-byte grid as the contiguous rows' would (the
// strides' bytes alike modulo 16 to cols'), the plan is the contiguous rows' plan, field for
// field, except kTile's (contiguous rows only), which strided rows run on the warp path; any
// strided plan is an entry of kSoftmaxConfigs, 16-byte packs exactly where row r of in and out
// sit alike for every r; over shapes x offsets x strides x element sizes x the devices.
TEST(SoftmaxPlan, StridedRowsTakeTheContiguousRowsPlan) {
  const int64_t widths[] = {1,     2,     3,     4,     7,     8,      9,      16,     17,
                            31,    32,    33,    61,    64,    65,     96,     121,    128,
                            129,   255,   256,   257,   500,   512,    1000,   1021,   1024,
                            1025,  2048,  4093,  4096,  4097,  8192,   8193,   10007,  16384,
                            16385, 32000, 50257, 65536, 65537, 128256, 151936, 262144, 1048576};
  const int64_t row_counts[] = {2, 3, 16, 37, 132, 1000, 4096, 65536, 1000000};
  const int offsets[][2] = {{0, 0}, {4, 4}, {2, 2}, {8, 8}, {0, 4}, {6, 6}};
  // ld = cols + pad: 16-byte multiples (rows sit as contiguous ones), one element, 8 bytes, and
  // ld_out alike to ld_in or not
  const int64_t pads[][2] = {{16, 16}, {16, 0},     {0, 32}, {4096, 0}, {1, 1},
                             {1, 0},   {3, 3 + 16}, {8, 8},  {2, 2}};
  int64_t same = 0, tiles = 0;
  for (const auto& dev : table_devices()) {
    for (const int elem : {4, 2}) {
      const kk::ConfigRange range = kk::softmax_configs_of(elem);
      for (const int64_t cols : widths) {
        for (const int64_t rows : row_counts) {
          if (rows * cols > (int64_t{1} << 34)) continue;
          for (const auto& off : offsets) {
            if (off[0] % elem || off[1] % elem) continue;
            const kk::Alignment in(off[0]), out(off[1]);
            const SoftmaxPlan c = kk::plan_softmax(rows, cols, elem, in, out, dev.info);
            for (const auto& pad : pads) {
              // pads in bytes, whole elements
              if (pad[0] % elem || pad[1] % elem) continue;
              const int64_t ld_in = cols + pad[0] / elem, ld_out = cols + pad[1] / elem;
              const SoftmaxPlan p =
                  kk::plan_softmax(rows, cols, elem, in, ld_in, out, ld_out, dev.info);
              const std::string what = std::string(dev.name) + " " + std::to_string(rows) + "x" +
                                       std::to_string(cols) + " elem=" + std::to_string(elem) +
                                       " offsets=" + std::to_string(off[0]) + "," +
                                       std::to_string(off[1]) + " ld=" + std::to_string(ld_in) +
                                       "," + std::to_string(ld_out) + ": " + describe(p);
              ASSERT_GE(kk::config_index(kk::kSoftmaxConfigs, kk::softmax_config(p, elem),
                                         range.begin, range.end),
                        0)
                  << what;
              ASSERT_NE(int(p.path), int(SoftmaxPath::kTile)) << what;
              const kk::Alignment s_in(ld_in * elem), s_out(ld_out * elem);
              // (2-byte rows on the 8-byte grid: the warp path's 8-byte packs)
              const bool alike = in == out && s_in == s_out;
              ASSERT_EQ(p.pack > 1, alike) << what;
              if (p.pack != 16 / elem && alike)
                ASSERT_TRUE(elem == 2 && p.pack == 4 && p.on_grid && p.path == SoftmaxPath::kWarp)
                    << what;
              const kk::Alignment s(cols * elem);
              if (s_in != s || s_out != s) continue;
              if (c.path == SoftmaxPath::kTile) {
                ASSERT_EQ(int(p.path), int(SoftmaxPath::kWarp)) << what;
                ++tiles;
                continue;
              }
              ASSERT_EQ(describe(p), describe(c)) << what;
              ASSERT_EQ(kk::softmax_config(p, elem), kk::softmax_config(c, elem)) << what;
              ASSERT_EQ(p.on_grid, c.on_grid) << what;
              ++same;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(same, 10000);
  EXPECT_GT(tiles, 100);
}

// One row: its stride is never read, so any ld plans as contiguous (the tiles included).
TEST(SoftmaxPlan, OneStridedRowIsContiguous) {
  for (const auto& dev : table_devices())
    for (const int64_t cols : {int64_t{9}, int64_t{1000}, int64_t{50257}, int64_t{1048576}})
      for (const int off : {0, 4})
        EXPECT_EQ(describe(kk::plan_softmax(1, cols, 4, kk::Alignment(off), cols + 3,
                                            kk::Alignment(off), cols + 1, dev.info)),
                  describe(plan(1, cols, 4, dev.info, off, off)))
            << dev.name << " " << cols;
}

// The bench's strided shapes on an H100 (logits[:, -1, :] rows; padded rows): the plan of the
// contiguous shape.
TEST(SoftmaxPlan, BenchStridedShapesOnAnH100) {
  const kk::DeviceInfo d = kktest::h100();
  struct Case {
    int64_t rows, cols, ld;
  };
  for (const int elem : {4, 2})
    for (const Case c :
         {Case{64, 128256, 4 * 128256}, Case{64, 32000, 4 * 32000}, Case{4096, 4096, 4160},
          Case{65536, 1000, 1024}, Case{32768, 1024, 1040}}) {
      const SoftmaxPlan p =
          kk::plan_softmax(c.rows, c.cols, elem, kk::Alignment(), c.ld, kk::Alignment(), c.cols, d);
      EXPECT_EQ(describe(p), describe(plan(c.rows, c.cols, elem, d))) << c.rows << "x" << c.cols;
      EXPECT_TRUE(p.on_grid || p.path != SoftmaxPath::kWarp) << c.rows << "x" << c.cols;
    }
  // f32 1000 and 1024 columns: the warp path, 8 packs a lane (not the row family's block a row)
  EXPECT_EQ(
      int(kk::plan_softmax(65536, 1000, 4, kk::Alignment(), 1024, kk::Alignment(), 1000, d).path),
      int(SoftmaxPath::kWarp));
}

// ---------------------------------------------------------------------------------------
// Argument checks (pure: the pointers are never dereferenced).

TEST(SoftmaxArgs, AcceptsAndRejects) {
  alignas(16) static float buf[64];
  const float* in = buf;
  float* out = buf + 32;
  EXPECT_TRUE(kk::softmax_args_ok(in, out, 4, 8));
  EXPECT_TRUE(kk::softmax_args_ok(in, const_cast<const float*>(buf), 4, 8));  // in place
  EXPECT_TRUE(kk::softmax_args_ok<float>(nullptr, nullptr, 0, 8));            // empty
  EXPECT_TRUE(kk::softmax_args_ok<float>(nullptr, nullptr, 8, 0));
  EXPECT_FALSE(kk::softmax_args_ok(in, out, -1, 8));
  EXPECT_FALSE(kk::softmax_args_ok(in, out, 8, -1));
  EXPECT_FALSE(kk::softmax_args_ok<float>(nullptr, out, 4, 8));
  EXPECT_FALSE(kk::softmax_args_ok<float>(in, nullptr, 4, 8));
  EXPECT_FALSE(kk::softmax_args_ok(in, out, int64_t{1} << 40, int64_t{1} << 40));
  EXPECT_FALSE(kk::softmax_args_ok(in, out, int64_t{1} << 31, int64_t{1} << 31));  // bytes
  // partial overlap: out one element past in, or in one element past out
  EXPECT_FALSE(kk::softmax_args_ok(in, buf + 1, 4, 8));
  EXPECT_FALSE(kk::softmax_args_ok(in + 1, buf, 4, 8));
  EXPECT_TRUE(kk::softmax_args_ok(in, buf + 32, 4, 8));  // adjacent, no overlap
  // pointers not aligned to the element
  const auto* bytes = reinterpret_cast<const char*>(buf);
  EXPECT_FALSE(kk::softmax_args_ok(reinterpret_cast<const float*>(bytes + 2), out, 4, 8));
  EXPECT_FALSE(kk::softmax_args_ok(in, reinterpret_cast<const float*>(bytes + 130), 4, 8));
  EXPECT_FALSE(kk::softmax_args_ok(reinterpret_cast<const __half*>(bytes + 1),
                                   reinterpret_cast<const __half*>(bytes + 128), 2, 2));
  EXPECT_TRUE(kk::softmax_args_ok(reinterpret_cast<const __half*>(bytes + 2),
                                  reinterpret_cast<const __half*>(bytes + 130), 2, 2));
}

}  // namespace
