// SPDX-License-Identifier: Apache-2.0
// plan_col_reduce on the host (no GPU): the plans of the benchmark's listed shapes on an H100,
// invariants over many shapes x the four test devices (a legal grid, every column pack in one
// tile, every row in one split, a split only with room for its partials, within a wave and
// of >= 32 rows), every plan an entry of kColReduceConfigs and every entry planned; the
// workspace bound; the argument checks; and the strided-row plans of row_reduce.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/reduce/col_reduce.cuh"

namespace {

using kernelkit::BlockCombine;
using kernelkit::ColReduceConfig;
using kernelkit::ColReducePlan;

std::string describe(const ColReduceConfig& c) {
  return "{elem " + std::to_string(c.elem_bytes) + ", pack " + std::to_string(c.pack) +
         (c.combine == BlockCombine::kSecondKernel ? ", split}" : ", none}");
}

kernelkit::Alignment input_at(bool aligned, int in_bytes) {
  return aligned ? kernelkit::Alignment() : kernelkit::Alignment(in_bytes);
}

TEST(ColReducePlan, TableEntriesDistinctAndGrouped) {
  kktest::expect_distinct_entries(kernelkit::kColReduceConfigs, describe);
  kktest::expect_ranges_tile(
      std::size(kernelkit::kColReduceConfigs),
      {kernelkit::col_reduce_configs_of(2), kernelkit::col_reduce_configs_of(4),
       kernelkit::col_reduce_configs_of(8)});
}

// The listed benchmark shapes on an H100 (132 SMs: a wave of 528 blocks).
TEST(ColReducePlan, BenchmarkShapesOnH100) {
  const kernelkit::DeviceInfo d = kktest::h100();
  auto plan = [&](int64_t outer, int64_t n, int64_t inner, int bytes) {
    return kernelkit::plan_col_reduce(
        outer, n, inner, bytes, 4, kernelkit::Alignment(),
        kernelkit::col_reduce_workspace_bytes<float, float>(outer, n, inner), d);
  };
  // x.sum(0) of 8192 x 4096 f32: 1024 packs in tiles of 8 (a 128-byte line), 128 tiles, 4
  // splits of 2048 rows
  ColReducePlan p = plan(1, 8192, 4096, 4);
  EXPECT_EQ(p.pack, 4);
  EXPECT_EQ(p.width, 8);
  EXPECT_EQ(p.tiles_per_outer, 128);
  EXPECT_EQ(p.split, 4);
  EXPECT_EQ(p.rows_per_split, 2048);
  EXPECT_EQ(p.combine, BlockCombine::kSecondKernel);
  // 65536 x 1024: 32 tiles of 8 packs, 16 splits
  p = plan(1, 65536, 1024, 4);
  EXPECT_EQ(p.width, 8);
  EXPECT_EQ(p.split, 16);
  // 4096 x 16384: 512 tiles of 8 packs fill the wave: no split
  p = plan(1, 4096, 16384, 4);
  EXPECT_EQ(p.width, 8);
  EXPECT_EQ(p.split, 1);
  EXPECT_EQ(p.combine, BlockCombine::kNone);
  // NCHW 32 x 256 x 3136 over C: 32 x 25 tiles of 32 packs, no split
  p = plan(32, 256, 3136, 4);
  EXPECT_EQ(p.width, 32);
  EXPECT_EQ(p.tiles_per_outer, 25);
  EXPECT_EQ(p.split, 1);
  // bf16 x.sum(0) of 8192 x 4096: 512 packs of 8, tiles of 8 packs (128 bytes)
  p = plan(1, 8192, 4096, 2);
  EXPECT_EQ(p.pack, 8);
  EXPECT_EQ(p.width, 8);
  EXPECT_EQ(p.split, 8);
  // narrow: (1, 2^20, 4) f32 is one pack a row: a tile of one pack, 256 row lanes, 528 splits
  p = plan(1, 1 << 20, 4, 4);
  EXPECT_EQ(p.width, 1);
  EXPECT_EQ(p.split, 528);
  // odd inner: single elements, whole rows per tile
  p = plan(1, 1 << 20, 17, 4);
  EXPECT_EQ(p.pack, 1);
  EXPECT_EQ(p.width, 17);
  // two rows of 2^26 floats: one row lane, tiles of 256 packs (2^16 of them)
  p = plan(1, 2, 1 << 26, 4);
  EXPECT_EQ(p.width, 256);
  EXPECT_EQ(p.tiles_per_outer, 1 << 16);
  EXPECT_EQ(p.split, 1);
  // 9 rows: 2 row lanes of 128 packs
  EXPECT_EQ(plan(1, 9, 1 << 24, 4).width, 128);
}

TEST(ColReducePlan, InvariantsAndEveryEntryPlanned) {
  const std::vector<int64_t> sizes = {1,   2,    3,    4,    8,    31,   33,    64,     127,
                                      256, 1000, 1024, 3136, 4096, 8191, 65536, 1 << 20};
  kktest::PlannedEntries planned(kernelkit::kColReduceConfigs);
  for (const auto& [name, d] : kktest::all_devices()) {
    const int64_t wave = kernelkit::detail::reduce_wave(d);
    for (int bytes : {2, 4, 8}) {
      const kernelkit::ConfigRange r = kernelkit::col_reduce_configs_of(bytes);
      const int acc = bytes == 8 ? 8 : 4;
      for (bool aligned : {true, false}) {
        for (int64_t outer : {1, 2, 31, 33, 257}) {
          for (int64_t n : sizes) {
            for (int64_t inner : sizes) {
              if (inner < 2 || outer * n * inner > (int64_t{1} << 36)) continue;
              const int64_t bound = kernelkit::detail::col_split_bound(outer, n, inner);
              for (size_t ws : {size_t{0}, size_t(bound * outer * inner) * acc, SIZE_MAX}) {
                const ColReducePlan p = kernelkit::plan_col_reduce(outer, n, inner, bytes, acc,
                                                                   input_at(aligned, bytes), ws, d);
                const std::string label = std::string(name) + " " + std::to_string(outer) + "x" +
                                          std::to_string(n) + "x" + std::to_string(inner) +
                                          " elem " + std::to_string(bytes) +
                                          (aligned ? "" : " offset") + " ws " + std::to_string(ws);
                ASSERT_GE(planned.count(kernelkit::col_reduce_config(p), r.begin, r.end), 0)
                    << label;
                const int full = 16 / bytes;
                EXPECT_EQ(p.pack, aligned && inner % full == 0 ? full : 1) << label;
                const int64_t cp = inner / p.pack;
                EXPECT_EQ(cp * p.pack, inner) << label;
                EXPECT_GE(p.width, 1) << label;
                EXPECT_LE(p.width, 256) << label;
                if (cp <= 32) EXPECT_EQ(p.width, cp) << label;
                // a row lane of a wide tile has >= 4 rows, or the tile is at its widest
                if (cp > 32 && p.width < std::min<int64_t>(cp, 256))
                  EXPECT_GE(n, int64_t{256 / p.width} * 4) << label;
                EXPECT_LE(p.width, cp) << label;
                // the tiles cover every column pack once
                EXPECT_EQ(p.tiles_per_outer, (cp + p.width - 1) / p.width) << label;
                EXPECT_EQ(p.shape.block.x, 256u) << label;
                EXPECT_GE(p.shape.grid.x, 1u) << label;
                EXPECT_LE(p.shape.grid.x, static_cast<unsigned>(outer * p.tiles_per_outer))
                    << label;
                EXPECT_EQ(p.shape.grid.y, static_cast<unsigned>(p.split)) << label;
                EXPECT_FALSE(p.shape.is_cluster()) << label;
                // every row in one split
                EXPECT_GE(int64_t{p.split} * p.rows_per_split, n) << label;
                EXPECT_LT(int64_t{p.split - 1} * p.rows_per_split, std::max<int64_t>(n, 1))
                    << label;
                if (p.split > 1) {
                  EXPECT_EQ(p.combine, BlockCombine::kSecondKernel) << label;
                  EXPECT_LE(static_cast<size_t>(p.split) * outer * inner * acc, ws) << label;
                  EXPECT_LE(int64_t{p.split} * outer * p.tiles_per_outer, wave) << label;
                  EXPECT_GE(p.rows_per_split, 32) << label;
                  EXPECT_LE(p.split, bound) << label;
                  // the combine covers outer * inner outputs, one element a lane
                  EXPECT_EQ(p.combine_width, static_cast<int>(std::min<int64_t>(outer * inner, 32)))
                      << label;
                  EXPECT_EQ(p.combine_tiles,
                            (outer * inner + p.combine_width - 1) / p.combine_width)
                      << label;
                  EXPECT_GE(p.combine_shape.grid.x, 1u) << label;
                  EXPECT_EQ(p.combine_shape.block.x, 256u) << label;
                  EXPECT_EQ(p.combine_shape.overlap_previous, d.cc_major >= 9 && d.code_arch >= 90)
                      << label;
                } else {
                  EXPECT_EQ(p.combine, BlockCombine::kNone) << label;
                  EXPECT_EQ(p.rows_per_split, n) << label;
                }
              }
            }
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe, "no call plans");
  EXPECT_GT(planned.plans(), 10000);
}

TEST(ColReducePlan, WorkspaceBytes) {
  EXPECT_EQ((kernelkit::col_reduce_workspace_bytes<float, float>(0, 100, 100)), 0u);
  EXPECT_EQ((kernelkit::col_reduce_workspace_bytes<float, float>(1, 0, 100)), 0u);
  EXPECT_EQ((kernelkit::col_reduce_workspace_bytes<float, float>(1, 31, 100)), 0u);
  // inner == 1 is row_reduce's
  EXPECT_EQ((kernelkit::col_reduce_workspace_bytes<float, float>(1, 1 << 25, 1)),
            (kernelkit::row_reduce_workspace_bytes<float, float>(1, 1 << 25)));
  // 8192 x 4096: ceil(2048 / 16) = 128 splits of 4096 floats
  EXPECT_EQ((kernelkit::col_reduce_workspace_bytes<float, float>(1, 8192, 4096)), 128u * 4096 * 4);
}

TEST(ColReducePlan, ArgsOk) {
  alignas(16) static float buf[8192];
  const float* in = buf;
  float* out = buf + 4096;
  EXPECT_TRUE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, out));  // 2048 in, 128 out
  EXPECT_TRUE((kernelkit::col_reduce_args_ok<float, float>(nullptr, 0, 5, 5, nullptr)));
  EXPECT_TRUE((kernelkit::col_reduce_args_ok<float, float>(nullptr, 5, 5, 0, nullptr)));
  EXPECT_TRUE((kernelkit::col_reduce_args_ok<float, float>(nullptr, 5, 0, 5, out)));  // init
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, -1, 5, 5, out));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 5, -1, 5, out));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 5, 5, -1, out));
  EXPECT_FALSE((kernelkit::col_reduce_args_ok<float, float>(nullptr, 5, 5, 5, out)));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 5, 5, 5, static_cast<float*>(nullptr)));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, int64_t{1} << 40, int64_t{1} << 22, 2, out));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, INT64_MAX / 2, 1, 3, out));
  const float* in_odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(buf) + 1);
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in_odd, 2, 2, 2, out));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, buf + 100));  // out inside in
  EXPECT_TRUE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, buf + 2048));  // right after in
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, buf + 2047));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, out, nullptr, 64));
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, out, buf + 6001, 64));  // 4-aligned
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, out, buf + 16, 64));    // over in
  EXPECT_FALSE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, out, out + 64, 64));    // over out
  EXPECT_TRUE(kernelkit::col_reduce_args_ok(in, 2, 16, 64, out, buf + 6000, 64));
}

// row_reduce with a row stride: the pack needs ld * sizeof(T) on the 16-byte grid too (the
// flat kernel), the short kernel only ld == cols; ld == cols plans exactly as before.
TEST(RowReducePlanStrided, LdAlignmentAndShortRows) {
  using kernelkit::RowReducePath;
  for (const auto& [name, d] : kktest::all_devices()) {
    for (int64_t rows : {1, 7, 1000, 100000}) {
      for (int64_t cols : {1, 2, 3, 4, 5, 6, 7, 8, 16, 33, 128, 1024, 5000, 1 << 20}) {
        for (int64_t pad : {0, 1, 2, 4, 5}) {
          const int64_t ld = cols + pad;
          for (int bytes : {2, 4, 8}) {
            for (bool aligned : {true, false}) {
              const int pack = 16 / bytes;
              const auto at = input_at(aligned, bytes);
              const auto p =
                  kernelkit::plan_row_reduce(rows, cols, ld, bytes, bytes == 8 ? 8 : 4, at, 0, d);
              const std::string label = std::string(name) + " " + std::to_string(rows) + "x" +
                                        std::to_string(cols) + " ld " + std::to_string(ld) +
                                        " elem " + std::to_string(bytes);
              EXPECT_GE(kernelkit::config_index(kernelkit::kRowReduceConfigs,
                                                kernelkit::row_reduce_config(p)),
                        0)
                  << label;
              if (p.path == RowReducePath::kShort) EXPECT_EQ(ld, cols) << label;
              if (p.path == RowReducePath::kFlat) {
                EXPECT_TRUE(aligned) << label;
                EXPECT_EQ(ld % pack, 0) << label;
                EXPECT_EQ(cols % pack, 0) << label;
              }
              if (pad == 0) {
                const auto q =
                    kernelkit::plan_row_reduce(rows, cols, bytes, bytes == 8 ? 8 : 4, at, 0, d);
                EXPECT_EQ(p.path, q.path) << label;
                EXPECT_EQ(p.width, q.width) << label;
                EXPECT_EQ(p.shape.grid.x, q.shape.grid.x) << label;
              }
            }
          }
        }
      }
    }
  }
  // 1000 x 8 floats, ld 10: rows off the pack grid, so not flat and not short: a group
  const auto p =
      kernelkit::plan_row_reduce(1000, 8, 10, 4, 4, kernelkit::Alignment(), 0, kktest::h100());
  EXPECT_EQ(p.path, RowReducePath::kGroup);
  // ld 12: every row on the grid: flat
  EXPECT_EQ(
      kernelkit::plan_row_reduce(1000, 8, 12, 4, 4, kernelkit::Alignment(), 0, kktest::h100()).path,
      RowReducePath::kFlat);
}

TEST(RowReducePlanStrided, ArgsOk) {
  alignas(16) static float buf[8192];
  const float* in = buf;
  float* out = buf + 4096;
  EXPECT_TRUE(kernelkit::row_reduce_args_ok(in, 64, 32, 64, out, nullptr, 0));   // 63*64+32
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 32, 31, out, nullptr, 0));  // ld < cols
  EXPECT_TRUE(kernelkit::row_reduce_args_ok(in, 64, 32, 64, buf + 63 * 64 + 32, nullptr, 0));
  EXPECT_FALSE(kernelkit::row_reduce_args_ok(in, 64, 32, 64, buf + 63 * 64 + 31, nullptr, 0));
  EXPECT_FALSE(
      kernelkit::row_reduce_args_ok(in, int64_t{1} << 40, 2, int64_t{1} << 30, out, nullptr, 0));
  EXPECT_TRUE((kernelkit::row_reduce_args_ok<float, float>(nullptr, 5, 0, 7, out, nullptr, 0)));
}

}  // namespace
