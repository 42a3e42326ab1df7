// SPDX-License-Identifier: Apache-2.0
// plan_row_reduce on the host (no GPU): the expected plan for the benchmark's shapes and
// others on every device, the paths by shape, and invariants over many shapes: a legal
// grid, no cluster without DeviceInfo::clusters(), a split only with the workspace for its
// partials and within one wave, shared memory within the device's limits, every element
// covered.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace {

using kernelkit::DeviceInfo;
using kernelkit::RowReducePath;
using kernelkit::RowReducePlan;
using Path = RowReducePath;

const char* path_name(Path p) {
  switch (p) {
    case Path::kShort:
      return "short";
    case Path::kFlat:
      return "flat";
    case Path::kGroup:
      return "group";
    case Path::kBlock:
      return "block";
    case Path::kBlockOnce:
      return "block once";
    case Path::kCluster:
      return "cluster";
    case Path::kSplit:
      return "split";
  }
  return "?";
}

// An input on the 16-byte grid (aligned) or one element of in_bytes past it.
kernelkit::Alignment input_at(bool aligned, int in_bytes) {
  return aligned ? kernelkit::Alignment() : kernelkit::Alignment(in_bytes);
}

// f32 in, f32 sums, aligned input, with or without a workspace
RowReducePlan plan_f32(int64_t rows, int64_t cols, const DeviceInfo& d, bool workspace = true,
                       bool aligned = true) {
  return kernelkit::plan_row_reduce(
      rows, cols, 4, 4, input_at(aligned, 4),
      workspace ? kernelkit::row_reduce_workspace_bytes<float>(rows, cols) : 0, d);
}

TEST(RowReducePlan, BenchmarkShapesOnH100) {
  struct Case {
    int64_t rows, cols;
    int in_bytes;
    Path path;
    int width;  // lanes per row (block paths: 256)
    int split;
    unsigned grid;
  };
  // f32 (ROW_SUM) and f16 with float sums (ROW_SUM_HALF); 16-byte aligned inputs, the
  // workspace of row_reduce_workspace_bytes. One wave of the block kernels: 528 blocks.
  const Case cases[] = {
      {33554432, 1, 4, Path::kShort, 1, 1, 4096},  // 8192 elements a tile
      {16777216, 2, 4, Path::kShort, 1, 1, 4096},
      {11184811, 3, 4, Path::kShort, 1, 1, 4097},  // 33554433 elements: one past 4096 tiles
      {6710886, 5, 4, Path::kShort, 1, 1, 4096},
      {4194304, 8, 4, Path::kFlat, 2, 1, 8192},    // 2 packs a row, 512 rows a tile
      {2097152, 16, 4, Path::kFlat, 4, 1, 8192},   // 256 rows a tile
      {699051, 48, 4, Path::kFlat, 16, 1, 10923},  // 12 packs a row, 64 rows a tile
      {335544, 100, 4, Path::kFlat, 32, 1, 10486},
      {100764, 333, 4, Path::kGroup, 32, 1, 12596},  // a warp per row
      {33554, 1000, 4, Path::kGroup, 32, 1, 4195},
      {8192, 4096, 4, Path::kBlockOnce, 256, 1, 8192},  // 1024 packs: one batch a row
      {3355, 10000, 4, Path::kBlock, 256, 1, 3355},
      {512, 65536, 4, Path::kBlock, 256, 1, 512},  // one wave already: no split
      {32, 1048576, 4, Path::kSplit, 256, 16, 512},
      {1, 33554432, 4, Path::kSplit, 256, 528, 528},
      {2, 16777216, 4, Path::kSplit, 256, 264, 528},
      {5, 6710886, 4, Path::kSplit, 256, 105, 525},
      {1048576, 32, 2, Path::kFlat, 4, 1, 4096},
      {32768, 1024, 2, Path::kGroup, 32, 1, 4096},
      {8192, 4096, 2, Path::kGroup, 32, 1, 1024},
      {4, 8388608, 2, Path::kSplit, 256, 132, 528},
      // rows of 9..128 bytes off the pack grid: the short kernel where its 32 KB tiles fill
      // the device's 528 resident blocks of it once, the group kernel below that
      {17878809, 17, 4, Path::kShort, 1, 1, 37103},
      {2777869, 37, 2, Path::kShort, 1, 1, 6274},
      {85389, 29, 2, Path::kGroup, 2, 1, 334},  // 152 tiles
  };
  const DeviceInfo d = kktest::h100();
  for (const auto& c : cases) {
    const auto p = kernelkit::plan_row_reduce(
        c.rows, c.cols, c.in_bytes, 4, kernelkit::Alignment(),
        c.in_bytes == 4 ? kernelkit::row_reduce_workspace_bytes<float, float>(c.rows, c.cols)
                        : kernelkit::row_reduce_workspace_bytes<__half, float>(c.rows, c.cols),
        d);
    const std::string label = std::to_string(c.rows) + "x" + std::to_string(c.cols) + " in " +
                              std::to_string(c.in_bytes) + " B: " + path_name(p.path);
    EXPECT_EQ(p.path, c.path) << label;
    EXPECT_EQ(p.width, c.width) << label;
    EXPECT_EQ(p.split, c.split) << label;
    EXPECT_EQ(p.shape.grid.x, c.grid) << label;
    EXPECT_EQ(p.pack, 16 / c.in_bytes) << label;
    EXPECT_FALSE(p.shape.is_cluster()) << label;
    if (c.path == Path::kSplit) {  // the H100 has cooperative launches: one launch
      EXPECT_TRUE(p.shape.cooperative) << label;
    }
  }
}

// Without a workspace few long rows are split over a cluster on Hopper builds and run a
// block per row elsewhere (H100 running compute_80 code, A100, L4, T4).
TEST(RowReducePlan, NoWorkspace) {
  for (const auto& [name, d] : kktest::all_devices()) {
    const auto one = plan_f32(1, 1 << 24, d, false);
    const auto few = plan_f32(64, 4194304, d, false);
    if (d.clusters()) {
      EXPECT_EQ(one.path, Path::kCluster) << name;
      EXPECT_EQ(one.split, 8) << name;
      EXPECT_EQ(one.shape.cluster.x, 8u) << name;
      EXPECT_EQ(few.path, Path::kCluster) << name;
      EXPECT_EQ(few.split, 5) << name;  // ceil(2 * 132 / 64)
      EXPECT_EQ(few.shape.grid.x, 64u * 5) << name;
    } else {
      EXPECT_EQ(one.path, Path::kBlock) << name;
      EXPECT_EQ(few.path, Path::kBlock) << name;
      EXPECT_FALSE(few.shape.is_cluster()) << name;
    }
  }
  // a workspace too small for two partials a row: no split
  const auto d = kktest::h100();
  EXPECT_EQ(kernelkit::plan_row_reduce(32, 1 << 20, 4, 4, kernelkit::Alignment(), 32 * 4, d).path,
            Path::kCluster);
  EXPECT_EQ(
      kernelkit::plan_row_reduce(32, 1 << 20, 4, 4, kernelkit::Alignment(), 32 * 4 * 3, d).split,
      3);
  EXPECT_EQ(
      kernelkit::plan_row_reduce(32, 1 << 20, 4, 4, kernelkit::Alignment(), 32 * 4 * 3, d).path,
      Path::kSplit);
}

// The paths by shape (these were RowReducePlan.PathsByShape of the old choose_row_plan).
TEST(RowReducePlan, PathsByShape) {
  const DeviceInfo d = kktest::h100();
  // aligned input, whole packs, <= 32 packs per row: the flat kernel, one tile per block
  const auto flat = plan_f32(1 << 20, 32, d);
  EXPECT_EQ(flat.path, Path::kFlat);
  EXPECT_EQ(flat.width, 8);
  EXPECT_EQ(flat.shape.grid.x, (1u << 20) / (256 / 8 * kernelkit::detail::kRowFlatSteps));
  const auto flat128 = plan_f32(1 << 18, 128, d);
  EXPECT_EQ(flat128.width, 32);
  EXPECT_EQ(flat128.shape.grid.x, (1u << 18) / (256 / 32 * kernelkit::detail::kRowFlatSteps));
  EXPECT_EQ(plan_f32(1000, 12, d).path, Path::kFlat);  // 3 packs per row
  EXPECT_EQ(plan_f32(1000, 12, d).width, 4);
  EXPECT_EQ(plan_f32(1000, 4, d).path, Path::kFlat);
  EXPECT_EQ(plan_f32(1000, 4, d).width, 1);
  EXPECT_NE(plan_f32(1000, 33, d).path, Path::kFlat);   // not whole packs
  EXPECT_NE(plan_f32(1000, 132, d).path, Path::kFlat);  // 33 packs
  EXPECT_EQ(plan_f32(1000, 132, d).width, 32);
  EXPECT_NE(plan_f32(1000, 0, d).path, Path::kFlat);  // cols 0: writes init
  EXPECT_NE(plan_f32(1 << 20, 32, d, true, false).path, Path::kFlat);
  // the narrow group kernel (short strided rows): 2 packs per lane, 2 rows per group
  const auto narrow = kernelkit::plan_row_reduce(1 << 20, 32, 33, 4, 4, input_at(true, 4), 0, d);
  EXPECT_EQ(narrow.path, Path::kGroup);
  EXPECT_EQ(narrow.width, 4);
  EXPECT_EQ(narrow.shape.grid.x, (1u << 20) / 2 * 4 / 256);
  EXPECT_EQ(narrow.rows_per_group, 2);
  EXPECT_EQ(plan_f32(1 << 16, 1024, d).shape.grid.x, (1u << 16) * 32 / 256);
  EXPECT_EQ(plan_f32(1 << 20, 33, d, true, false).width, 8);
  EXPECT_EQ(plan_f32(1 << 20, 1, d, true, false).width, 1);
  EXPECT_EQ(plan_f32(1 << 20, 0, d).width, 1);
  EXPECT_EQ(plan_f32(1 << 18, 128, d, true, false).width, 16);
  EXPECT_EQ(plan_f32(1 << 18, 129, d).width, 32);
  EXPECT_EQ(plan_f32(1 << 16, 1024, d).width, 32);
  // rows of up to 128 bytes that are not whole aligned packs: the short kernel, any alignment
  // (past 8 columns where its tiles fill the device: 528 tiles of 8192 floats)
  for (int64_t cols : {1, 2, 3, 5, 6, 7})
    EXPECT_EQ(plan_f32(1000, cols, d).path, Path::kShort);
  for (int64_t cols : {9, 17, 31}) {
    EXPECT_EQ(plan_f32(528 * 8192 / cols + 1, cols, d).path, Path::kShort);
    EXPECT_NE(plan_f32(527 * 8192 / cols, cols, d).path, Path::kShort);
  }
  for (int64_t cols : {4, 8, 16, 32}) {
    const int64_t rows = cols <= 8 ? 1000 : 528 * 8192 / cols;
    EXPECT_EQ(plan_f32(rows, cols, d, true, false).path, Path::kShort);
    EXPECT_EQ(plan_f32(rows, cols, d, true, true).path, Path::kFlat);
  }
  EXPECT_NE(plan_f32(1 << 20, 33, d, true, false).path, Path::kShort);
  // rows of up to 512 packs: a warp per row with a wave of rows or more, else a block per row
  EXPECT_EQ(plan_f32(528, 2048, d).path, Path::kGroup);
  EXPECT_EQ(plan_f32(527, 2048, d).path, Path::kBlockOnce);
  // a block per row: rows of <= 1024 packs in one batch of loads (any alignment), longer
  // rows on the split kernel
  EXPECT_EQ(plan_f32(8192, 4096, d, true, false).path, Path::kBlockOnce);
  EXPECT_EQ(plan_f32(8192, 4097, d).path, Path::kBlock);
  EXPECT_EQ(kernelkit::plan_row_reduce(8192, 8192, 2, 4, kernelkit::Alignment(), 0, d).path,
            Path::kBlockOnce);
  EXPECT_EQ(kernelkit::plan_row_reduce(8192, 8193, 2, 4, kernelkit::Alignment(), 0, d).path,
            Path::kBlock);
  // long rows
  const auto block = plan_f32(4096, 16384, d);
  EXPECT_EQ(block.path, Path::kBlock);
  EXPECT_FALSE(block.shape.is_cluster());
  const auto cluster = plan_f32(64, 4194304, d, false);
  EXPECT_EQ(cluster.path, Path::kCluster);
  EXPECT_EQ(cluster.shape.cluster.x, 5u);  // ceil(2 * 132 / 64)
  EXPECT_EQ(cluster.shape.grid.x, 64u * 5);
  EXPECT_EQ(plan_f32(1, 1 << 24, d, false).shape.cluster.x, 8u);
  EXPECT_EQ(plan_f32(300, 1 << 20, d, false).shape.cluster.x, 1u);
  EXPECT_EQ(plan_f32(300, 1 << 20, d, true).path, Path::kBlock);  // one wave: no split
  EXPECT_EQ(plan_f32(200, 1 << 20, d, true).split, 2);
}

// Every shape x device x element size x alignment x workspace gives a launchable plan that
// covers the matrix.
TEST(RowReducePlan, Invariants) {
  const std::vector<int64_t> rows_list = {1,
                                          2,
                                          3,
                                          5,
                                          31,
                                          100,
                                          527,
                                          528,
                                          529,
                                          1000,
                                          4099,
                                          100003,
                                          int64_t{1} << 25,
                                          (int64_t{1} << 31) + 3};
  const std::vector<int64_t> cols_list = {0,   1,    2,    3,    4,     5,       7,
                                          8,   9,    16,   33,   128,   129,     333,
                                          513, 2048, 2049, 4097, 65536, 1 << 20, (1 << 24) + 3};
  for (const auto& [name, d] : kktest::all_devices()) {
    const int64_t wave = kernelkit::detail::reduce_wave(d);
    for (int in_bytes : {2, 4, 8}) {
      const int pack = 16 / in_bytes;
      for (bool aligned : {true, false}) {
        for (bool with_ws : {false, true}) {
          for (int64_t rows : rows_list) {
            for (int64_t cols : cols_list) {
              if (cols > 0 && rows > (int64_t{1} << 40) / cols) continue;
              const size_t ws =
                  with_ws
                      ? (in_bytes == 2
                             ? kernelkit::row_reduce_workspace_bytes<__half, float>(rows, cols)
                         : in_bytes == 4
                             ? kernelkit::row_reduce_workspace_bytes<float, float>(rows, cols)
                             : kernelkit::row_reduce_workspace_bytes<double, double>(rows, cols))
                      : 0;
              const int acc_bytes = in_bytes == 8 ? 8 : 4;
              const auto p = kernelkit::plan_row_reduce(rows, cols, in_bytes, acc_bytes,
                                                        input_at(aligned, in_bytes), ws, d);
              const std::string label = std::string(name) + " " + std::to_string(rows) + "x" +
                                        std::to_string(cols) + " in " + std::to_string(in_bytes) +
                                        (aligned ? " aligned" : " offset") +
                                        (with_ws ? " ws" : "") + ": " + path_name(p.path);
              const int64_t packs = (cols + pack - 1) / pack;
              // a kernel launch_row_reduce instantiates
              EXPECT_GE(kernelkit::config_index(kernelkit::kRowReduceConfigs,
                                                kernelkit::row_reduce_config(p)),
                        0)
                  << label;
              EXPECT_EQ(p.pack, pack) << label;
              // a legal launch
              EXPECT_GE(p.shape.grid.x, 1u) << label;
              EXPECT_LE(p.shape.grid.x, static_cast<unsigned>(INT32_MAX)) << label;
              EXPECT_EQ(p.shape.block.x, 256u) << label;
              EXPECT_LE(static_cast<int>(p.shape.block.x), d.max_threads_per_block) << label;
              EXPECT_EQ(p.shape.grid.x % p.shape.cluster.x, 0u) << label;
              // clusters only when the device and the build have them; at most 8
              EXPECT_EQ(p.shape.is_cluster(), p.path == Path::kCluster) << label;
              if (p.path == Path::kCluster) {
                EXPECT_TRUE(d.clusters()) << label;
                EXPECT_LE(p.shape.cluster.x, 8u) << label;
                EXPECT_EQ(p.shape.grid.x, rows * p.split) << label;
              }
              // a split only with room for its partials, within one wave of blocks
              if (p.path == Path::kSplit) {
                EXPECT_GE(p.split, 2) << label;
                EXPECT_LE(static_cast<size_t>(rows * p.split * acc_bytes), ws) << label;
                EXPECT_LE(rows * p.split, wave) << label;
                EXPECT_EQ(p.shape.grid.x, rows * p.split) << label;
                // combined after a grid sync where the device has cooperative launches,
                // else by a second kernel (overlapping the first on sm_90 builds)
                EXPECT_EQ(p.shape.cooperative, d.cooperative_launch) << label;
                if (!d.cooperative_launch) EXPECT_EQ(p.combine_shape.grid.x, rows) << label;
                EXPECT_EQ(p.combine_shape.overlap_previous,
                          !d.cooperative_launch && d.cc_major >= 9 && d.code_arch >= 90)
                    << label;
                EXPECT_GT(packs, kernelkit::kReduceTilePacks) << label;
              } else {
                EXPECT_FALSE(p.combine_shape.overlap_previous) << label;
                EXPECT_FALSE(p.shape.cooperative) << label;
              }
              if (p.path != Path::kSplit && p.path != Path::kCluster)
                EXPECT_EQ(p.split, 1) << label;
              // each path only on the shapes it covers
              switch (p.path) {
                case Path::kShort: {
                  EXPECT_GE(cols, 1) << label;
                  EXPECT_LE(cols * in_bytes, 128) << label;
                  EXPECT_FALSE(aligned && cols % pack == 0) << label;
                  // tiles of 2048 packs cover the matrix and its misaligned start
                  const int64_t tile = int64_t{kernelkit::detail::kRowShortTilePacks} * pack;
                  EXPECT_GE(int64_t{p.shape.grid.x} * tile, rows * cols + (aligned ? 0 : pack - 1))
                      << label;
                  // past 8 columns, its tiles fill the device's resident blocks of it
                  if (cols > 8)
                    EXPECT_GE(int64_t{p.shape.grid.x},
                              int64_t{d.sm_count} *
                                  kernelkit::detail::row_short_blocks(d, in_bytes, acc_bytes))
                        << label;
                  // its shared memory fits a block without opting in, and a block fits an SM
                  const int smem = kernelkit::detail::kRowShortStagePacks * 16 +
                                   4 * (kernelkit::detail::kRowShortStagePacks / 8 + 1);
                  EXPECT_LE(smem, d.smem_per_block) << label;
                  EXPECT_GE(kernelkit::blocks_per_sm(d, 256, in_bytes == 8 ? 80 : 64, smem), 1)
                      << label;
                  break;
                }
                case Path::kFlat:
                  EXPECT_TRUE(aligned) << label;
                  EXPECT_EQ(cols % pack, 0) << label;
                  EXPECT_GE(p.width, packs) << label;
                  EXPECT_LT(p.width / 2, packs) << label;
                  EXPECT_LE(p.width, 32) << label;
                  break;
                case Path::kGroup:
                  EXPECT_LE(packs, 512) << label;
                  EXPECT_GE(p.width, 1) << label;
                  EXPECT_LE(p.width, 32) << label;
                  if (p.width < 32) {
                    EXPECT_GE(p.width * 2, std::min<int64_t>(packs, 32))
                        << label;  // <= 2 packs a lane
                  } else {
                    EXPECT_GE(rows, wave) << label;
                  }
                  break;
                case Path::kBlockOnce:
                  EXPECT_LE(packs, kernelkit::detail::kRowBlockOncePacks) << label;
                  EXPECT_EQ(p.width, 256) << label;
                  EXPECT_EQ(p.shape.block.x, 256u) << label;
                  EXPECT_TRUE(packs > 512 || rows < wave) << label;
                  break;
                case Path::kBlock:
                  EXPECT_GT(packs, kernelkit::detail::kRowBlockOncePacks) << label;
                  [[fallthrough]];
                case Path::kCluster:
                case Path::kSplit:
                  EXPECT_EQ(p.width, 256) << label;
                  EXPECT_TRUE(packs > 512 || rows < wave) << label;
                  break;
              }
              // block kernels: every row has its blocks (one block per row, or split each)
              if (p.path == Path::kBlock || p.path == Path::kBlockOnce) {
                EXPECT_EQ(int64_t{p.shape.grid.x}, std::min<int64_t>(rows, INT32_MAX)) << label;
              }
            }
          }
        }
      }
    }
  }
}

// row_reduce_workspace_bytes: an upper bound from the shape alone that holds every device's
// split; 0 where no split happens.
// ---------------------------------------------------------------------------------------
// The table of kernel configurations.

std::string describe(const kernelkit::RowReduceConfig& c) {
  return std::string(path_name(c.path)) + " pack=" + std::to_string(c.pack) +
         " width=" + std::to_string(c.width) +
         " combine=" + std::to_string(static_cast<int>(c.combine));
}

TEST(RowReduceConfigs, EachPackTogetherNoDuplicates) {
  kktest::expect_ranges_tile(
      std::size(kernelkit::kRowReduceConfigs),
      {kernelkit::row_reduce_configs_of(8), kernelkit::row_reduce_configs_of(4),
       kernelkit::row_reduce_configs_of(2)});
  kktest::expect_distinct_entries(kernelkit::kRowReduceConfigs, describe);
}

// Plans over sizes as rows and columns (tiny, odd, prime, around the pack, lane, warp, tile
// and wave limits, past 2^31 elements) x devices (the four GPUs and the H100's compute_80
// build, each also without cooperative launches and without clusters, as plan_and_launch
// plans again) x input aligned or not x workspace sizes (none, a few partials, the bound,
// unlimited) x element and accumulator sizes: each is an entry of its pack's range of
// kRowReduceConfigs (what launch_row_reduce can launch), and every entry is some call's plan.
TEST(RowReduceConfigs, EveryPlanIsAnEntryAndEveryEntryIsPlanned) {
  const int64_t sizes[] = {0,
                           1,
                           2,
                           3,
                           4,
                           5,
                           7,
                           8,
                           9,
                           11,
                           16,
                           17,
                           31,
                           32,
                           33,
                           63,
                           64,
                           65,
                           127,
                           128,
                           129,
                           255,
                           256,
                           257,
                           263,
                           512,
                           513,
                           1021,
                           1024,
                           1025,
                           2048,
                           2053,
                           4096,
                           4099,
                           8192,
                           8209,
                           16384,
                           32768,
                           65536,
                           65537,
                           100003,
                           1 << 20,
                           1048583,
                           1 << 24,
                           int64_t{1} << 31,
                           (int64_t{1} << 31) + 11};
  std::vector<kktest::NamedDevice> devices;
  for (const auto& d : kktest::all_devices()) {
    devices.push_back(d);
    kernelkit::DeviceInfo no_coop = d.info, no_cluster = d.info;
    no_coop.cooperative_launch = false;
    no_cluster.cluster_launch = false;
    devices.push_back({d.name, no_coop});
    devices.push_back({d.name, no_cluster});
  }
  kktest::PlannedEntries planned(kernelkit::kRowReduceConfigs);
  for (const auto& dev : devices) {
    for (int in_bytes : {2, 4, 8}) {
      const kernelkit::ConfigRange r = kernelkit::row_reduce_configs_of(16 / in_bytes);
      for (int acc_bytes : {4, 8}) {
        for (bool aligned : {true, false}) {
          for (int64_t rows : sizes) {
            for (int64_t cols : sizes) {
              if (cols > 0 && rows > (int64_t{1} << 40) / cols) continue;
              const int64_t bound =
                  int64_t(kernelkit::detail::row_split_bound(rows, cols, in_bytes)) * rows;
              const size_t workspaces[] = {0, size_t(acc_bytes) * 2,
                                           size_t(std::max<int64_t>(bound, 0)) * acc_bytes,
                                           SIZE_MAX};
              for (size_t ws : workspaces) {
                // contiguous rows, and (short strided ones take the group kernel) rows one
                // element apart
                for (int64_t ld : {cols, cols + 1}) {
                  if (ld != cols && (cols == 0 || cols > 64 || rows > (int64_t{1} << 24))) continue;
                  const RowReducePlan p =
                      kernelkit::plan_row_reduce(rows, cols, ld, in_bytes, acc_bytes,
                                                 input_at(aligned, in_bytes), ws, dev.info);
                  const kernelkit::RowReduceConfig c = kernelkit::row_reduce_config(p);
                  const int i = planned.count(c, r.begin, r.end);
                  ASSERT_GE(i, 0) << dev.name << " " << rows << "x" << cols << " ld=" << ld
                                  << " in=" << in_bytes << " acc=" << acc_bytes
                                  << (aligned ? " aligned" : " offset") << " ws=" << ws << ": "
                                  << describe(c);
                }
              }
            }
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe, "no call plans");
  EXPECT_GT(planned.plans(), 100000);
}

TEST(RowReducePlan, WorkspaceBytes) {
  EXPECT_EQ((kernelkit::row_reduce_workspace_bytes<float, float>(0, 100)), 0u);
  EXPECT_EQ((kernelkit::row_reduce_workspace_bytes<float, float>(100, 0)), 0u);
  EXPECT_EQ((kernelkit::row_reduce_workspace_bytes<float, float>(1 << 20, 32)), 0u);
  EXPECT_EQ((kernelkit::row_reduce_workspace_bytes<float, float>(4096, 1 << 20)), 0u);
  EXPECT_EQ((kernelkit::row_reduce_workspace_bytes<float, float>(1, 1 << 25)), 2048u * 4);
  EXPECT_EQ((kernelkit::row_reduce_workspace_bytes<float, double>(1, 1 << 25)), 2048u * 8);
  EXPECT_EQ((kernelkit::row_reduce_workspace_bytes<__half, __half>(3, 1 << 25)), 3u * 682 * 4);
  for (const auto& [name, d] : kktest::all_devices()) {
    for (int64_t rows : {1, 2, 3, 5, 32, 100, 1000, 2047, 2048}) {
      for (int64_t cols : {1000, 8193, 65536, 1 << 20, (1 << 26) + 1}) {
        const size_t bound = kernelkit::row_reduce_workspace_bytes<float, float>(rows, cols);
        const auto p =
            kernelkit::plan_row_reduce(rows, cols, 4, 4, kernelkit::Alignment(), SIZE_MAX, d);
        const auto q =
            kernelkit::plan_row_reduce(rows, cols, 4, 4, kernelkit::Alignment(), bound, d);
        const std::string label =
            std::string(name) + " " + std::to_string(rows) + "x" + std::to_string(cols);
        if (p.path == Path::kSplit)
          EXPECT_LE(static_cast<size_t>(rows * p.split * 4), bound) << label;
        EXPECT_EQ(p.path, q.path) << label;
        EXPECT_EQ(p.split, q.split) << label;
      }
    }
  }
}

// Argument checks on the host.
TEST(RowReducePlan, ArgsOk) {
  alignas(16) static float buf[8192];
  alignas(16) static unsigned char ws[4096];
  const float* in = buf;
  float* out = buf + 4096;
  EXPECT_TRUE(kernelkit::row_reduce_args_ok(in, 64, 64, out));
  EXPECT_TRUE(kernelkit::row_reduce_args_ok(in, 64, 64, out, ws, sizeof ws));
  EXPECT_TRUE(kernelkit::row_reduce_args_ok(in, 64, 64, out, nullptr, 0));
  EXPECT_TRUE((kernelkit::row_reduce_args_ok<float, float>(nullptr, 0, 5, nullptr)));
  EXPECT_TRUE((kernelkit::row_reduce_args_ok<float, float>(nullptr, 5, 0, out)));  // writes init
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, -1, 8, out));
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 8, -1, out));
  EXPECT_FALSE((kernelkit::row_reduce_args_ok<float, float>(nullptr, 8, 8, out)));
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 8, 8, static_cast<float*>(nullptr)));
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, INT64_MAX / 2, 3, out));
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, int64_t{1} << 40, int64_t{1} << 22, out));
  const auto* in_odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(in) + 2);
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in_odd, 8, 8, out));
  auto* out_odd = reinterpret_cast<float*>(reinterpret_cast<char*>(out) + 1);
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 8, 8, out_odd));
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 64, buf + 100));  // out inside in
  EXPECT_TRUE(kernelkit::row_reduce_args_ok(in, 64, 64, buf + 4096));  // right after in
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 64, buf + 4096 - 1));
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 64, out, nullptr, 64));   // bytes, no pointer
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 64, out, ws + 4, 64));    // not 16-aligned
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 64, out, buf + 16, 64));  // workspace over in
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 64, out, out + 32, 64));  // out over it
  EXPECT_FALSE((kernelkit::row_reduce_args_ok<float, float>(nullptr, 5, 0, out, out, 64)));
}

}  // namespace
