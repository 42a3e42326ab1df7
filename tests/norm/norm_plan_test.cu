// SPDX-License-Identifier: Apache-2.0
// plan_norm on the host (no GPU): the expected path of the benchmark's listed shapes, then
// invariants over a grid of shapes x alignments x element and weight types x the test devices:
// every plan is an entry of kNormConfigs for its element size, launches a legal grid whose
// blocks fit the device's registers, holds the whole row (register paths), moves the fewest
// bytes except on kTwoPass, and every entry is planned. Also the argument checks
// (norm_args_ok), which are pure as well.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/norm/norm.cuh"

namespace kk = kernelkit;
using kk::NormConfig;
using kk::NormKind;
using kk::NormPath;
using kk::NormPlan;

namespace {

const char* path_name(NormPath p) {
  switch (p) {
    case NormPath::kWarp:
      return "warp";
    case NormPath::kBlock:
      return "block";
    case NormPath::kSplit:
      return "split";
    case NormPath::kTile:
      return "tile";
    default:
      return "two_pass";
  }
}

std::string describe_config(const NormConfig& c) {
  return std::string(path_name(c.path)) + " elem=" + std::to_string(c.elem_bytes) +
         " pack=" + std::to_string(c.pack) + " block=" + std::to_string(c.block) +
         " packs=" + std::to_string(c.packs) + (c.phased ? " phased" : "");
}

std::string describe(const NormPlan& p) {
  return std::string(path_name(p.path)) + " pack=" + std::to_string(p.pack) +
         " packs=" + std::to_string(p.packs) + " lanes=" + std::to_string(p.lanes) +
         " split=" + std::to_string(p.split) + " smem=" + std::to_string(p.shape.smem) +
         " tile=" + std::to_string(p.tile_rows) + " bps=" + std::to_string(p.blocks_per_sm) +
         " grid=" + std::to_string(p.shape.grid.x) + " block=" + std::to_string(p.shape.block.x) +
         " bytes=" + std::to_string(p.bytes);
}

// x_off: bytes x starts past the 16-byte grid; other_off: bytes another operand (y, residual,
// sum, weight or bias) starts past it (only whether every operand is on the grid matters).
NormPlan plan(NormKind kind, int64_t rows, int64_t cols, int elem, int wbytes,
              const kk::DeviceInfo& d, int x_off = 0, int other_off = 0) {
  const kk::Alignment x_at = kk::common_alignment(kk::Alignment(x_off), kk::Alignment(cols * elem));
  const kk::Alignment all_at = kk::common_alignment(x_at, kk::Alignment(other_off));
  const int64_t fewest = kk::norm_fewest_bytes(kind, rows, cols, elem, wbytes, 0, false, true);
  return kk::plan_norm(kind, rows, cols, elem, x_at, all_at, fewest, d);
}

TEST(NormPlan, TableEntriesAreDistinctAndGroupedByElementSize) {
  kktest::expect_distinct_entries(kk::kNormConfigs, describe_config);
  kktest::expect_ranges_tile(std::size(kk::kNormConfigs),
                             {kk::norm_configs_of(4), kk::norm_configs_of(2)});
}

TEST(NormPlan, ListedShapesOnAnH100) {
  struct Expect {
    int64_t rows, cols;
    int elem;
    NormPath path;
    int pack, block;
  };
  const Expect table[] = {
      {8192, 4096, 2, NormPath::kBlock, 8, 128},     {8192, 4096, 4, NormPath::kBlock, 4, 256},
      {32768, 8192, 2, NormPath::kBlock, 8, 256},    {32768, 8192, 4, NormPath::kBlock, 4, 512},
      {4096, 16384, 2, NormPath::kBlock, 8, 512},    {4096, 16384, 4, NormPath::kBlock, 4, 1024},
      {1, 4096, 2, NormPath::kBlock, 8, 256},        {64, 8192, 4, NormPath::kBlock, 4, 512},
      {65536, 768, 2, NormPath::kWarp, 8, 128},      {65536, 768, 4, NormPath::kBlock, 4, 128},
      {65536, 512, 2, NormPath::kWarp, 8, 128},      {65536, 512, 4, NormPath::kWarp, 4, 128},
      {1000, 300000, 2, NormPath::kTwoPass, 8, 512}, {7, 33, 4, NormPath::kWarp, 1, 128},
      {7, 32769, 2, NormPath::kSplit, 1, 512},       {1, 300000, 4, NormPath::kSplit, 4, 512},
      {16, 2097152, 2, NormPath::kSplit, 8, 512},    {264, 65536, 2, NormPath::kTwoPass, 8, 512},
  };
  for (const Expect& e : table) {
    const NormPlan p = plan(NormKind::kRms, e.rows, e.cols, e.elem, e.elem, kktest::h100());
    EXPECT_EQ(p.path, e.path) << e.rows << "x" << e.cols << " " << describe(p);
    EXPECT_EQ(p.pack, e.pack) << e.rows << "x" << e.cols << " " << describe(p);
    EXPECT_EQ(static_cast<int>(p.shape.block.x), e.block) << e.rows << "x" << e.cols;
  }
}

// The odd and off-grid widths the H200 measured at 0.12-0.35 of SOL on one element per access
// (bench/NOTES.md): now 16-byte packs at each row's phase on the register path of their
// width, the partial head and tail counted (one access more than on the grid).
TEST(NormPlan, OffGridRowsTakeSixteenBytePacks) {
  struct Expect {
    int64_t rows, cols;
    int elem;
    NormPath path;
    int block, packs;
  };
  const Expect table[] = {
      {99682, 1227, 4, NormPath::kBlock, 128, 4},   {58677, 239, 4, NormPath::kWarp, 32 * 4, 4},
      {72583, 1787, 2, NormPath::kBlock, 128, 2},   {689929, 613, 2, NormPath::kWarp, 32 * 4, 4},
      {661075, 129, 2, NormPath::kWarp, 32 * 4, 4}, {4096, 16383, 4, NormPath::kTwoPass, 512, 0},
      {4096, 16381, 4, NormPath::kBlock, 1024, 4},  {3, 511, 4, NormPath::kBlock, 128, 4},
      {3, 509, 4, NormPath::kWarp, 128, 4},         {3, 505, 2, NormPath::kWarp, 128, 2},
      {3, 507, 2, NormPath::kBlock, 128, 2},        {4096, 16377, 2, NormPath::kBlock, 512, 4},
      {4096, 32761, 2, NormPath::kBlock, 1024, 4},  {4096, 32762, 2, NormPath::kTwoPass, 512, 0},
  };
  for (const Expect& e : table) {
    const NormPlan p = plan(NormKind::kLayer, e.rows, e.cols, e.elem, e.elem, kktest::h100());
    EXPECT_EQ(p.path, e.path) << e.rows << "x" << e.cols << " " << describe(p);
    EXPECT_EQ(p.pack, 16 / e.elem) << e.rows << "x" << e.cols << " " << describe(p);
    EXPECT_EQ(static_cast<int>(p.shape.block.x), e.block) << e.rows << "x" << e.cols;
    EXPECT_EQ(p.packs, e.packs) << e.rows << "x" << e.cols << " " << describe(p);
    EXPECT_EQ(p.bytes, kk::norm_fewest_bytes(NormKind::kLayer, e.rows, e.cols, e.elem, e.elem, 0,
                                             false, true) +
                           (e.path == NormPath::kTwoPass ? e.rows * e.cols * e.elem : 0))
        << e.rows << "x" << e.cols;
  }
  // x itself off the grid (an on-grid stride): the same widths as an odd stride
  EXPECT_EQ(plan(NormKind::kRms, 100, 512, 4, 4, kktest::h100(), 4).path, NormPath::kBlock);
  EXPECT_EQ(plan(NormKind::kRms, 100, 512, 4, 4, kktest::h100(), 0).path, NormPath::kWarp);
}

TEST(NormPlan, FewWideRowsSplitOnlyWithCooperativeGrids) {
  kk::DeviceInfo d = kktest::h100();
  EXPECT_EQ(plan(NormKind::kLayer, 3, 1 << 20, 4, 4, d).path, NormPath::kSplit);
  d.cooperative_launch = false;
  EXPECT_EQ(plan(NormKind::kLayer, 3, 1 << 20, 4, 4, d).path, NormPath::kTwoPass);
}

// Rows on the grid with every operand on it take the aligned entries (no phase: main's code;
// the phased ones ran these 1.1-1.9x slower on the H200), the same path, block and packs as
// with an operand off the grid (phased).
TEST(NormPlan, AlignedEntriesWhereEveryOperandIsOnTheGrid) {
  struct Expect {
    NormKind kind;
    int64_t rows, cols;
    int elem;
    NormPath path;
    int block, packs;
  };
  const Expect table[] = {
      {NormKind::kRms, 8192, 4096, 2, NormPath::kBlock, 128, 4},
      {NormKind::kRms, 32768, 8192, 2, NormPath::kBlock, 256, 4},
      {NormKind::kLayer, 8192, 4096, 2, NormPath::kBlock, 128, 4},
      {NormKind::kAddRms, 65536, 768, 4, NormPath::kBlock, 128, 4},
      {NormKind::kLayer, 65536, 768, 4, NormPath::kBlock, 128, 4},
      {NormKind::kAddRms, 2156543, 64, 2, NormPath::kWarp, 128, 2},
      {NormKind::kRms, 3580361, 32, 2, NormPath::kWarp, 128, 2},
      {NormKind::kAddRms, 7342, 29600, 2, NormPath::kBlock, 1024, 4},
      {NormKind::kAddRms, 7342, 39600, 2, NormPath::kTwoPass, 512, 0},
      {NormKind::kLayer, 16608, 19616, 4, NormPath::kTwoPass, 512, 0},
  };
  for (const Expect& e : table) {
    for (const int other_off : {0, e.elem, 8}) {
      const NormPlan p = plan(e.kind, e.rows, e.cols, e.elem, e.elem, kktest::h100(), 0, other_off);
      const std::string where = std::to_string(e.rows) + "x" + std::to_string(e.cols) + " other " +
                                std::to_string(other_off) + ": " + describe(p);
      EXPECT_EQ(p.path, e.path) << where;
      EXPECT_EQ(p.pack, 16 / e.elem) << where;
      EXPECT_EQ(p.phased, other_off != 0) << where;
      EXPECT_EQ(static_cast<int>(p.shape.block.x), e.block) << where;
      EXPECT_EQ(p.packs, e.packs) << where;
    }
  }
}

// Rows off the grid of at most 128 columns: in tiles of consecutive rows staged in shared
// memory (kTile: 16-byte chunks in and out, a row over a group of lanes, 4 elements a lane)
// where the rows give every block slot two tiles; fewer rows keep main's one-element kWarp
// entries (1 or 4 a lane, on a group of lanes: ShortRowsShareAWarp). A 16-byte access a lane
// at each row's phase left most lanes idle and ran the partial head and tail beside the body
// (H200: bf16 83 columns 2.9x, 29 columns 3.5x slower than one element); from 129 columns the
// phased 16-byte kWarp entries (f32 239 columns 2.8x faster than one element).
TEST(NormPlan, ShortRowsOffTheGridTakeTilesOrOneElementAWarpLane) {
  struct Expect {
    NormKind kind;
    int64_t rows, cols;
    int elem, x_off;
    NormPath path;
    int pack, packs, lanes, tile_rows;
  };
  const Expect table[] = {
      {NormKind::kLayer, 10432185, 83, 2, 0, NormPath::kTile, 1, 4, 32, 48},
      {NormKind::kLayer, 152388, 61, 2, 0, NormPath::kTile, 1, 4, 16, 48},
      {NormKind::kAddRms, 73007, 29, 2, 0, NormPath::kTile, 1, 4, 8, 32},
      {NormKind::kAddRms, 2337723, 33, 4, 0, NormPath::kTile, 1, 4, 16, 56},
      {NormKind::kRms, 661075, 71, 2, 8, NormPath::kTile, 1, 4, 32, 56},
      {NormKind::kRms, 5004434, 71, 2, 0, NormPath::kTile, 1, 4, 32, 56},
      {NormKind::kAddRms, 305827, 17, 2, 0, NormPath::kTile, 1, 4, 8, 192},
      {NormKind::kRms, 1000, 128, 2, 2, NormPath::kWarp, 1, 4, 32, 0},
      {NormKind::kRms, 1000, 32, 4, 4, NormPath::kWarp, 1, 1, 32, 0},
      {NormKind::kRms, 1000, 129, 2, 0, NormPath::kWarp, 8, 1, 32, 0},
      {NormKind::kRms, 58677, 239, 4, 0, NormPath::kWarp, 4, 4, 16, 0},
  };
  for (const Expect& e : table) {
    const NormPlan p = plan(e.kind, e.rows, e.cols, e.elem, e.elem, kktest::h100(), e.x_off);
    const std::string where =
        std::to_string(e.rows) + "x" + std::to_string(e.cols) + ": " + describe(p);
    EXPECT_EQ(p.path, e.path) << where;
    EXPECT_EQ(p.pack, e.pack) << where;
    EXPECT_EQ(p.packs, e.packs) << where;
    EXPECT_EQ(p.lanes, e.lanes) << where;
    EXPECT_EQ(p.tile_rows, e.tile_rows) << where;
    EXPECT_EQ(p.phased, e.pack > 1) << where;
  }
}

// Short rows share a warp: a group of lanes a row, the smallest power of two holding the
// row's accesses at the entry's packs a lane, the entry with the most rows in flight a SM
// (resident blocks x 128 / lanes; 16-float entries run 9 blocks of 128 a SM, 8-float 10, f32
// 4-float 16, 2-byte 4 packs 7 but only on groups of 8 lanes or more). The H200's short-row classes
// of bench/results/h200/softmax-norm-loss.json (one warp a row there: 0.20-0.70 of SOL), plus
// widths around the group boundaries.
TEST(NormPlan, ShortRowsShareAWarp) {
  struct Expect {
    NormKind kind;
    int64_t rows, cols;
    int elem, x_off, other_off;
    int pack, packs, lanes;
  };
  const Expect table[] = {
      // on the grid, every operand too (aligned): 16-byte packs
      {NormKind::kRms, 3580361, 32, 2, 0, 0, 8, 2, 2},      // 4 accesses: 16 rows a warp
      {NormKind::kLayer, 42437, 32, 2, 0, 0, 8, 2, 2},      //
      {NormKind::kLayer, 369731, 32, 4, 0, 0, 4, 4, 2},     // 8 accesses
      {NormKind::kAddRms, 2156543, 64, 2, 0, 0, 8, 2, 4},   // 8 accesses
      {NormKind::kRms, 2190608, 96, 2, 0, 0, 8, 2, 8},      // 12 accesses: 4 of 16 slots idle
      {NormKind::kLayer, 17062, 96, 2, 0, 0, 8, 2, 8},      //
      {NormKind::kRms, 98572, 160, 4, 0, 0, 4, 4, 16},      // 40 accesses
      {NormKind::kAddRms, 1330657, 224, 2, 0, 0, 8, 4, 8},  // 28: 4 packs from 8 lanes
      {NormKind::kRms, 1 << 20, 4, 4, 0, 0, 4, 1, 1},       // 1 access: a lane a row, 4 floats
      {NormKind::kRms, 1 << 20, 8, 4, 0, 0, 4, 2, 1},       // 2 accesses: a lane a row
      {NormKind::kRms, 1 << 20, 8, 2, 0, 0, 8, 1, 1},       // 1 access
      {NormKind::kRms, 1 << 20, 512, 4, 0, 0, 4, 4, 32},    // 128 accesses: a warp a row
      // a stride on the grid, another operand off it: the phased twins, the same groups
      {NormKind::kRms, 3580361, 32, 2, 0, 2, 8, 2, 2},
      {NormKind::kLayer, 369731, 32, 4, 0, 4, 4, 4, 2},
      // off the grid, > 128 columns: phased 16-byte packs, a partial head and tail counted
      {NormKind::kRms, 58677, 239, 4, 0, 0, 4, 4, 16},    // 61 accesses
      {NormKind::kLayer, 26555, 293, 4, 0, 0, 4, 4, 32},  // 75 accesses
      {NormKind::kAddRms, 486310, 459, 2, 12, 0, 8, 4, 16},
      {NormKind::kRms, 661075, 129, 2, 0, 0, 8, 4, 8},  // 17 accesses
      // off the grid, <= 128 columns: one element an access, 1 or 4 a lane
      {NormKind::kAddRms, 73007, 29, 2, 0, 0, 1, 4, 8},
      {NormKind::kAddRms, 2337723, 33, 4, 0, 0, 1, 4, 16},
      {NormKind::kLayer, 152388, 61, 2, 0, 0, 1, 4, 16},
      {NormKind::kRms, 661075, 71, 2, 8, 0, 1, 4, 32},
      {NormKind::kRms, 1521202, 81, 4, 0, 0, 1, 4, 32},
      {NormKind::kLayer, 10432185, 83, 2, 0, 0, 1, 4, 32},
      {NormKind::kRms, 1 << 20, 1, 4, 0, 0, 1, 1, 1},  // a lane a row, one element
      {NormKind::kRms, 1 << 20, 3, 2, 0, 0, 1, 4, 1},  // a lane a row, 4 elements
      {NormKind::kRms, 1 << 20, 5, 4, 0, 0, 1, 4, 2},
  };
  for (const Expect& e : table) {
    const NormPlan p =
        plan(e.kind, e.rows, e.cols, e.elem, e.elem, kktest::h100(), e.x_off, e.other_off);
    const std::string where =
        std::to_string(e.rows) + "x" + std::to_string(e.cols) + ": " + describe(p);
    EXPECT_EQ(p.pack, e.pack) << where;
    EXPECT_EQ(p.lanes, e.lanes) << where;
    EXPECT_EQ(static_cast<int>(p.shape.block.x), 128) << where;
    if (e.pack == 1) {  // off the grid, these many rows: tiles of rows, 4 elements a lane
      EXPECT_EQ(p.path, NormPath::kTile) << where;
      EXPECT_EQ(p.packs, 4) << where;
      continue;
    }
    EXPECT_EQ(p.path, NormPath::kWarp) << where;
    EXPECT_EQ(p.packs, e.packs) << where;
    // the grid: the rows' blocks (128 / lanes rows each), at most 32 waves of them
    const int64_t blocks = (e.rows + 128 / e.lanes - 1) / (128 / e.lanes);
    EXPECT_EQ(int64_t{p.shape.grid.x},
              std::min<int64_t>(blocks, int64_t{p.blocks_per_sm} * 132 * 32))
        << where;
  }
}

// 2-byte rows are held as stored (two elements a register), so a thread holds 2 or 4 packs:
// kBlock takes the entry of the most rows in flight a SM (its resident blocks, at most the
// launch's rows a SM), then the fewer packs, then the smaller block; the 4-pack kWarp entries
// only on groups of 8 lanes or more and where they keep more rows in flight than kBlock. The
// H200 measurements behind each rule are in bench/NOTES.md (norm, "2-byte rows held as stored").
TEST(NormPlan, TwoByteRowsTakeTheMostRowsInFlight) {
  struct Expect {
    NormKind kind;
    int64_t rows, cols;
    NormPath path;
    int block, packs, lanes;
  };
  const Expect table[] = {
      // many rows: 4 packs on half the threads (twice the blocks a SM)
      {NormKind::kRms, 4096, 16384, NormPath::kBlock, 512, 4, 512},
      {NormKind::kLayer, 10145, 9257, NormPath::kBlock, 512, 4, 512},
      {NormKind::kRms, 413, 5167, NormPath::kBlock, 256, 4, 256},  // 4 rows a SM: 4 blocks
      // the same block at 2 packs holds the row: 10 blocks a SM at 48 registers, not 8
      {NormKind::kAddRms, 1199, 1847, NormPath::kBlock, 128, 2, 128},
      {NormKind::kAddRms, 11150, 1745, NormPath::kBlock, 128, 2, 128},
      // a launch of few rows: each row over the most threads (2 packs)
      {NormKind::kRms, 1, 4096, NormPath::kBlock, 256, 2, 256},
      {NormKind::kLayer, 64, 8192, NormPath::kBlock, 512, 2, 512},
      {NormKind::kAddRms, 3, 12966, NormPath::kBlock, 1024, 2, 1024},
      // only 4 packs hold it: 16K..32K columns read once
      {NormKind::kRms, 74, 26895, NormPath::kBlock, 1024, 4, 1024},
      // a warp of 4 packs a lane where rows are many, a block of one access a thread where few
      {NormKind::kRms, 65536, 768, NormPath::kWarp, 128, 4, 32},
      {NormKind::kAddRms, 955, 907, NormPath::kBlock, 128, 2, 128},
      // 4 packs a lane from 8 lanes; on fewer, 2 packs on twice the lanes
      {NormKind::kAddRms, 18397, 313, NormPath::kWarp, 128, 4, 16},
      {NormKind::kLayer, 385964, 256, NormPath::kWarp, 128, 4, 8},
      {NormKind::kLayer, 4871180, 32, NormPath::kWarp, 128, 2, 2},
      {NormKind::kAddRms, 179108, 64, NormPath::kWarp, 128, 2, 4},
  };
  for (const Expect& e : table) {
    const NormPlan p = plan(e.kind, e.rows, e.cols, 2, 2, kktest::h100());
    const std::string where =
        std::to_string(e.rows) + "x" + std::to_string(e.cols) + ": " + describe(p);
    EXPECT_EQ(p.path, e.path) << where;
    EXPECT_EQ(static_cast<int>(p.shape.block.x), e.block) << where;
    EXPECT_EQ(p.packs, e.packs) << where;
    EXPECT_EQ(p.lanes, e.lanes) << where;
  }
}

// A launch of few rows keeps them spread over the SMs: no fewer lanes a row than give every SM
// a block (rows x lanes >= SMs x 128), up to a warp a row (main's plan) below 528 rows on an
// H100; the same width on many rows shares warps.
TEST(NormPlan, FewShortRowsSpreadOverTheSMs) {
  const kk::DeviceInfo d = kktest::h100();  // 132 SMs: 16896 lanes of blocks of 128
  struct Expect {
    int64_t rows;
    int lanes;
  };
  // bf16 32 columns on the grid: 4 accesses, 2 lanes of 2 packs where rows allow
  const Expect table[] = {{1, 32},   {527, 32}, {528, 32}, {1055, 32}, {1056, 16},  {2112, 8},
                          {4224, 4}, {8447, 4}, {8448, 2}, {16896, 2}, {1 << 20, 2}};
  for (const Expect& e : table) {
    const NormPlan p = plan(NormKind::kRms, e.rows, 32, 2, 2, d);
    EXPECT_EQ(p.path, NormPath::kWarp) << e.rows << " rows: " << describe(p);
    EXPECT_EQ(p.lanes, e.lanes) << e.rows << " rows: " << describe(p);
    // lanes the rows set: the entry of fewer registers (1 pack, 10 blocks a SM, against 9);
    // at 2 lanes, 2 packs a lane hold the row
    EXPECT_EQ(p.packs, e.lanes == 2 ? 2 : 1) << e.rows << " rows: " << describe(p);
  }
}

// Few huge rows split (kSplit) as main did: 16-byte packs only where every operand is on the
// grid (the split kernel is main's: no phase), else one element per access.
TEST(NormPlan, SplitRowsTakeSixteenBytePacksOnlyWithEveryOperandOnTheGrid) {
  const kk::DeviceInfo d = kktest::h100();
  for (const int64_t cols : {17625661, 104565533, 2926309}) {
    const NormPlan p = plan(NormKind::kRms, 9, cols, 2, 2, d);
    EXPECT_EQ(p.path, NormPath::kSplit) << cols;
    EXPECT_EQ(p.pack, 1) << cols;
    EXPECT_FALSE(p.phased) << cols;
  }
  EXPECT_EQ(plan(NormKind::kAddRms, 13, 24470227, 4, 4, d).pack, 1);
  EXPECT_EQ(plan(NormKind::kLayer, 3, 1 << 20, 4, 4, d).pack, 4);
  EXPECT_EQ(plan(NormKind::kLayer, 3, 1 << 20, 4, 4, d, 0, 4).pack, 1);
  EXPECT_FALSE(plan(NormKind::kLayer, 3, 1 << 20, 4, 4, d, 0, 4).phased);
}

TEST(NormPlan, EveryPlanIsALegalTableEntryAndEveryEntryIsPlanned) {
  kktest::PlannedEntries<NormConfig, std::size(kk::kNormConfigs)> planned(kk::kNormConfigs);
  std::vector<int64_t> widths = {
      1,    2,    3,     4,     7,     8,     31,    32,     33,      64,
      96,   127,  128,   129,   255,   256,   257,   500,    512,     513,
      768,  1000, 1024,  1031,  2048,  2049,  3000,  4096,   4099,    5000,
      8192, 8193, 12288, 16384, 16385, 20000, 65536, 300000, 1 << 24, (int64_t{1} << 31) + 8};
  for (int64_t w = 5; w < 20000; w = w * 7 / 5 + 3)
    widths.push_back(w);
  const int64_t rows_list[] = {1, 3, 100, 4096, 1 << 20};
  for (const auto& dev : kktest::all_devices()) {
    const kk::DeviceInfo& d = dev.info;
    for (const int elem : {4, 2}) {
      const kk::ConfigRange range = kk::norm_configs_of(elem);
      for (const int wbytes : {4, elem}) {
        for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
          for (const int64_t cols : widths) {
            for (const int64_t rows : rows_list) {
              if (rows * cols > (int64_t{1} << 34)) continue;
              for (const int x_off : {0, elem, 8}) {
                for (const int other_off : {0, elem}) {
                  const NormPlan p = plan(kind, rows, cols, elem, wbytes, d, x_off, other_off);
                  const std::string where = std::string(dev.name) + " " + std::to_string(rows) +
                                            "x" + std::to_string(cols) + " elem " +
                                            std::to_string(elem) + " w " + std::to_string(wbytes) +
                                            " off " + std::to_string(x_off) + " other " +
                                            std::to_string(other_off) + ": " + describe(p);
                  ASSERT_GE(planned.count(kk::norm_config(p, elem), range.begin, range.end), 0)
                      << where;
                  // 16-byte packs at any phase (aligned where every operand is on the grid),
                  // but one element per access for kSplit with an operand off the grid and
                  // rows off the grid of at most 128 columns (kWarp)
                  const bool on_grid = x_off == 0 && (cols * elem) % 16 == 0;
                  const bool aligned = on_grid && other_off == 0;
                  const bool one = p.path == NormPath::kSplit ? !aligned : !on_grid && cols <= 128;
                  EXPECT_EQ(p.pack, one ? 1 : 16 / elem) << where;
                  EXPECT_EQ(p.phased, p.pack > 1 && !aligned) << where;
                  if (one && p.path != NormPath::kSplit)
                    EXPECT_TRUE(p.path == NormPath::kWarp || p.path == NormPath::kTile) << where;
                  EXPECT_GE(p.shape.grid.x, 1u) << where;
                  EXPECT_LE(p.shape.grid.x, static_cast<unsigned>(INT32_MAX)) << where;
                  EXPECT_LE(static_cast<int>(p.shape.block.x), d.max_threads_per_block) << where;
                  EXPECT_GE(p.blocks_per_sm, 1) << where;
                  EXPECT_FALSE(p.shape.is_cluster()) << where;
                  EXPECT_EQ(p.shape.cooperative, p.path == NormPath::kSplit) << where;
                  const int64_t fewest =
                      kk::norm_fewest_bytes(kind, rows, cols, elem, wbytes, 0, false, true);
                  if (p.path == NormPath::kSplit) {
                    // every block resident (64 registers: launch bounds 512 x 2), chunks of
                    // at least 8 accesses, only where a row a slot leaves half of them idle
                    const int64_t slots = int64_t{kk::blocks_per_sm(d, 512, 64, 0)} * d.sm_count;
                    EXPECT_GE(p.split, 2) << where;
                    EXPECT_EQ(int64_t{p.shape.grid.x}, rows * p.split) << where;
                    EXPECT_LE(int64_t{p.shape.grid.x}, slots) << where;
                    EXPECT_GE(cols / p.pack / p.split, 8) << where;
                    EXPECT_EQ(cols % p.pack, 0) << where;  // whole accesses only
                    EXPECT_LE(rows * 2, slots) << where;
                  }
                  if (p.path == NormPath::kTile) {
                    // tiles of a multiple of 128 / lanes rows, a row over the fewest lanes
                    // holding it at 4 elements a lane; the tile at most 8 KB of x (or one row a
                    // group), two tiles a block slot at least
                    EXPECT_TRUE(!on_grid && cols <= 128) << where;
                    EXPECT_EQ(p.packs, 4) << where;
                    EXPECT_EQ(int64_t{p.lanes}, kk::pow2_ceil((cols + 3) / 4)) << where;
                    const int64_t groups = 128 / p.lanes;
                    EXPECT_EQ(p.tile_rows % groups, 0) << where;
                    EXPECT_LE(p.tile_rows * cols * elem,
                              std::max<int64_t>(8192, groups * cols * elem))
                        << where;
                    EXPECT_EQ(int64_t(p.shape.smem),
                              kk::norm_tile_bytes(kind, p.tile_rows, cols, elem))
                        << where;
                    EXPECT_EQ(kk::blocks_per_sm(d, 128, kk::detail::kNormTileRegs,
                                                p.shape.smem + kk::detail::kNormTileStatic),
                              p.blocks_per_sm)
                        << where;
                    const int64_t tiles = (rows + p.tile_rows - 1) / p.tile_rows;
                    EXPECT_GE(tiles, 2 * int64_t{d.sm_count}) << where;
                    EXPECT_EQ(int64_t{p.shape.grid.x},
                              std::min<int64_t>(tiles, int64_t{p.blocks_per_sm} * d.sm_count))
                        << where;
                    EXPECT_EQ(p.bytes, fewest) << where;
                  } else if (p.path == NormPath::kTwoPass || p.path == NormPath::kSplit) {
                    // only rows no register entry holds are read twice (off the grid: the
                    // partial head and tail take one access more)
                    EXPECT_GT(cols, on_grid ? 16384 : 16384 - (16 / elem - 1)) << where;
                    EXPECT_EQ(p.bytes, fewest + rows * cols * elem) << where;
                  } else {
                    const int threads =
                        p.path == NormPath::kWarp ? p.lanes : static_cast<int>(p.shape.block.x);
                    // the row at its worst phase: a partial head of pack - 1 columns
                    const int64_t spans = on_grid || p.pack == 1 ? (cols + p.pack - 1) / p.pack
                                                                 : (cols + 2 * p.pack - 2) / p.pack;
                    EXPECT_GE(int64_t{threads} * p.packs, spans) << where;
                    if (p.path == NormPath::kWarp) {
                      // a group of a power of two lanes, the fewest holding the row at its
                      // packs, unless a launch of few rows needs more to reach every SM
                      EXPECT_TRUE(p.lanes >= 1 && p.lanes <= 32 && kk::is_pow2(p.lanes)) << where;
                      int fill = 1;
                      while (fill < 32 && rows * fill < int64_t{d.sm_count} * 128)
                        fill *= 2;
                      EXPECT_TRUE(p.lanes == fill || int64_t{p.lanes / 2} * p.packs < spans)
                          << where;
                      EXPECT_GE(p.lanes, fill) << where;
                    } else {
                      EXPECT_EQ(p.lanes, static_cast<int>(p.shape.block.x)) << where;
                    }
                    // at most 16 registers of the row a thread (2-byte elements two a register)
                    EXPECT_LE(p.pack * p.packs * elem, 64) << where;
                    EXPECT_EQ(p.bytes, fewest) << where;
                    // registers of the kernel's bound fit the device at the planned occupancy
                    const int regs = kk::detail::norm_regs(
                        p.pack, p.pack * p.packs, p.path == NormPath::kWarp, d.code_arch, p.phased,
                        static_cast<int>(p.shape.block.x));
                    EXPECT_GE(kk::blocks_per_sm(d, static_cast<int>(p.shape.block.x), regs, 0),
                              p.blocks_per_sm)
                        << where;
                    // the grid covers the rows in whole waves at most kDefaultWaves deep
                    const int64_t per_block = int64_t{p.shape.block.x} / threads;
                    EXPECT_LE(int64_t{p.shape.grid.x},
                              std::max<int64_t>(1, (rows + per_block - 1) / per_block))
                        << where;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(planned.plans(), 0);
  planned.expect_every_entry_planned(describe_config, "never planned:");
}

// Fake device addresses (norm_args_ok reads none of them).
template <typename T>
T* at(uintptr_t a) {
  return reinterpret_cast<T*>(a);
}

TEST(NormArgs, AcceptsValidCallsAndRejectsBadOnes) {
  using A = kk::detail::NormArgs<float, float>;
  const int64_t R = 8, C = 64, M = R * C * 4;
  float* x = at<float>(0x100000);
  float* y = at<float>(0x200000);
  float* r = at<float>(0x300000);
  float* s = at<float>(0x400000);
  float* w = at<float>(0x500000);
  float* b = at<float>(0x600000);
  float* mean = at<float>(0x700000);
  float* rstd = at<float>(0x800000);
  const float eps = 1e-5f;
  const auto rms = [&](A a) { return kk::norm_args_ok(NormKind::kRms, a); };
  const auto ln = [&](A a) { return kk::norm_args_ok(NormKind::kLayer, a); };
  const auto add = [&](A a) { return kk::norm_args_ok(NormKind::kAddRms, a); };
  EXPECT_TRUE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_TRUE(rms({x, nullptr, nullptr, nullptr, y, nullptr, nullptr, nullptr, R, C, 0.f}));
  EXPECT_TRUE(rms({x, nullptr, w, nullptr, x, nullptr, nullptr, rstd, R, C, eps}));  // in place
  EXPECT_TRUE(ln({x, nullptr, w, b, y, nullptr, mean, rstd, R, C, eps}));
  EXPECT_TRUE(add({x, r, w, nullptr, y, s, nullptr, rstd, R, C, eps}));
  EXPECT_TRUE(add({x, r, w, nullptr, x, r, nullptr, rstd, R, C, eps}));  // vLLM's in place
  EXPECT_TRUE(add({x, r, w, nullptr, y, x, nullptr, rstd, R, C, eps}));
  EXPECT_TRUE(rms({nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, C,
                   eps}));  // empty
  // sizes, eps
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, rstd, -1, C, eps}));
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, rstd, R, -1, eps}));
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, rstd, R, C, -1e-6f}));
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, rstd, R, C,
                    std::numeric_limits<float>::quiet_NaN()}));
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, rstd, INT64_MAX / 2, 3, eps}));
  // nulls
  EXPECT_FALSE(rms({nullptr, nullptr, w, nullptr, y, nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, nullptr, nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(add({x, nullptr, w, nullptr, y, s, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(add({x, r, w, nullptr, y, nullptr, nullptr, rstd, R, C, eps}));
  // operands another kind does not take
  EXPECT_FALSE(rms({x, nullptr, w, b, y, nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(rms({x, r, w, nullptr, y, s, nullptr, rstd, R, C, eps}));
  // misaligned
  EXPECT_FALSE(
      rms({at<float>(0x100002), nullptr, w, nullptr, y, nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(
      rms({x, nullptr, at<float>(0x500001), nullptr, y, nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, at<float>(0x800002), R, C, eps}));
  // overlaps
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, at<float>(0x100004), nullptr, nullptr, rstd, R, C,
                    eps}));  // y partly over x
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, y + 5, R, C, eps}));
  EXPECT_FALSE(rms({x, nullptr, w, nullptr, y, nullptr, nullptr, w, R, C, eps}));
  EXPECT_FALSE(rms({x, nullptr, y, nullptr, y, nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(ln({x, nullptr, w, b, y, nullptr, rstd, rstd, R, C, eps}));
  EXPECT_FALSE(add({x, r, w, nullptr, x, x, nullptr, rstd, R, C, eps}));  // y and sum both x
  EXPECT_FALSE(add({x, r, w, nullptr, r, s, nullptr, rstd, R, C, eps}));  // y over residual
  EXPECT_FALSE(add({x, r, w, nullptr, y, at<float>(0x300000 + M / 2), nullptr, rstd, R, C, eps}));
  // same-type weights of 2-byte x
  using H = kk::detail::NormArgs<__nv_bfloat16, __nv_bfloat16>;
  EXPECT_TRUE(kk::norm_args_ok(
      NormKind::kRms, H{at<__nv_bfloat16>(0x100002), nullptr, at<__nv_bfloat16>(0x500002), nullptr,
                        at<__nv_bfloat16>(0x200002), nullptr, nullptr, rstd, R, C, eps}));
  EXPECT_FALSE(kk::norm_args_ok(NormKind::kRms,
                                H{at<__nv_bfloat16>(0x100001), nullptr, nullptr, nullptr,
                                  at<__nv_bfloat16>(0x200002), nullptr, nullptr, rstd, R, C, eps}));
}

}  // namespace
