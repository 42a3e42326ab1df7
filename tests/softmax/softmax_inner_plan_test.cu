// SPDX-License-Identifier: Apache-2.0
// plan_softmax_inner on the host (no GPU): softmax over the middle axis of (outer, n, inner),
// forward and backward. The path of listed shapes on an H100, packs only where the operands
// allow them, invariants (tiles covering every column once, shared memory within the device's,
// splits covering n, the workspace holding the partials) over shapes x alignments x element
// sizes x directions x the test devices, every plan an entry of kSoftmaxInnerConfigs and every
// entry planned; the argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/softmax/softmax_inner.cuh"

namespace kk = kernelkit;
using kk::SoftmaxInnerConfig;
using kk::SoftmaxInnerPath;
using kk::SoftmaxInnerPlan;

namespace {

const char* path_name(SoftmaxInnerPath path) {
  return path == SoftmaxInnerPath::kTile ? "tile"
                                         : (path == SoftmaxInnerPath::kSplit ? "split" : "regs");
}

std::string describe(const SoftmaxInnerPlan& p) {
  return std::string(path_name(p.path)) + " pack=" + std::to_string(p.pack) +
         " rows=" + std::to_string(p.rows) + " units=" + std::to_string(p.units) +
         " run=" + std::to_string(p.run) + " slices=" + std::to_string(p.slices) +
         " cols=" + std::to_string(p.cols) + " tiles=" + std::to_string(p.tiles) +
         " tile_elems=" + std::to_string(p.tile_elems) + " width=" + std::to_string(p.width) +
         " split=" + std::to_string(p.split) + " rps=" + std::to_string(p.rows_per_split) +
         " bps=" + std::to_string(p.blocks_per_sm) + " grid=" + std::to_string(p.shape.grid.x) +
         "x" + std::to_string(p.shape.grid.y) + " smem=" + std::to_string(p.shape.smem);
}

std::string describe_config(const SoftmaxInnerConfig& c) {
  return std::string(path_name(c.path)) + " elem=" + std::to_string(c.elem_bytes) +
         " pack=" + std::to_string(c.pack) + " rows=" + std::to_string(c.rows);
}

// Operands on the 16-byte grid (or all at `off`; mismatched: at different offsets).
kk::SoftmaxInnerLayout layout(int off, bool mismatched) {
  const kk::Alignment a(off), b(mismatched ? off + 4 : off);
  return kk::softmax_inner_layout(a, b);
}

SoftmaxInnerPlan plan(int64_t outer, int64_t n, int64_t inner, int elem, bool backward,
                      const kk::DeviceInfo& d, size_t ws = ~size_t{0},
                      kk::SoftmaxInnerLayout at = kk::SoftmaxInnerLayout()) {
  return kk::plan_softmax_inner(outer, n, inner, elem, backward, at, ws, d);
}

TEST(SoftmaxInnerPlan, PathsOnAnH100) {
  const kk::DeviceInfo d = kktest::h100();
  struct Want {
    int elem;
    bool backward;
    int64_t outer, n, inner;
    SoftmaxInnerPath path;
    int64_t slices, cols;  // kTile (0: not checked)
  };
  const Want table[] = {
      // NCHW channel softmax: 128 columns of 64 rows (32 KB a tile), 25 tiles a slice; 2-byte
      // 256 columns, 13 tiles
      {4, false, 32, 64, 56 * 56, SoftmaxInnerPath::kTile, 1, 128},
      {2, false, 32, 64, 56 * 56, SoftmaxInnerPath::kTile, 1, 256},
      // tall columns: a sector of each of 1000 rows (32 KB)
      {4, false, 8, 1000, 4096, SoftmaxInnerPath::kTile, 1, 8},
      {4, true, 8, 1000, 4096, SoftmaxInnerPath::kTile, 1, 8},
      // short slices: several whole ones a tile
      {4, false, 65536, 17, 7, SoftmaxInnerPath::kTile, 68, 7},
      {2, false, 4096, 1000, 3, SoftmaxInnerPath::kTile, 5, 3},
      // short columns (n <= 16, 8 backward): in registers
      {4, false, 1 << 20, 2, 2, SoftmaxInnerPath::kRegs, 0, 0},
      {4, false, 256, 8, 65536, SoftmaxInnerPath::kRegs, 0, 0},
      {2, false, 1, 1, 36836729, SoftmaxInnerPath::kRegs, 0, 0},
      {2, true, 256, 8, 65536, SoftmaxInnerPath::kRegs, 0, 0},
      {4, false, 64, 16, 4096, SoftmaxInnerPath::kRegs, 0, 0},
      {4, true, 64, 9, 4096, SoftmaxInnerPath::kTile, 0, 0},
      // columns too tall for a tile: streamed, n split
      {4, false, 1, 50000, 64, SoftmaxInnerPath::kSplit, 0, 0},
      {2, true, 1, 50000, 64, SoftmaxInnerPath::kSplit, 0, 0},
      {4, false, 64, 100000, 256, SoftmaxInnerPath::kSplit, 0, 0},
  };
  for (const Want& w : table) {
    const SoftmaxInnerPlan p = plan(w.outer, w.n, w.inner, w.elem, w.backward, d);
    const std::string what = std::to_string(w.elem) + "-byte " + std::to_string(w.outer) + "x" +
                             std::to_string(w.n) + "x" + std::to_string(w.inner) +
                             (w.backward ? " backward: " : ": ") + describe(p);
    EXPECT_EQ(p.path, w.path) << what;
    if (w.path == SoftmaxInnerPath::kTile) {
      EXPECT_EQ(p.pack, 16 / w.elem) << what;
      if (w.slices) EXPECT_EQ(p.slices, w.slices) << what;
      if (w.cols) EXPECT_EQ(p.cols, w.cols) << what;
    } else if (w.path == SoftmaxInnerPath::kRegs) {
      // packs only where the rows are on the grid (inner x elem a multiple of 16)
      if (p.pack > 1) EXPECT_EQ(w.inner * w.elem % 16, 0) << what;
      EXPECT_GE(p.rows, w.n) << what;
    } else {
      EXPECT_EQ(p.pack, 4) << what;
    }
  }
  // 1 x 50000 x 64 f32: one column tile of 16 packs x 16 row lanes, n split over blocks
  const SoftmaxInnerPlan s = plan(1, 50000, 64, 4, false, d);
  EXPECT_EQ(s.width, 16) << describe(s);
  EXPECT_GE(s.split, 64) << describe(s);
  EXPECT_EQ(static_cast<int>(s.shape.grid.y), s.split) << describe(s);
  // without a workspace: unsplit, one kernel
  const SoftmaxInnerPlan u = plan(1, 50000, 64, 4, false, d, 0);
  EXPECT_EQ(u.split, 1) << describe(u);
  // many column tiles fill the GPU: no split
  const SoftmaxInnerPlan m = plan(64, 100000, 256, 4, false, d);
  EXPECT_EQ(m.split, 1) << describe(m);
  // one row of 36836729 bf16 columns (inner odd: one element a load): tiles of 16 units a
  // thread, 4096 columns, more than a wave
  const SoftmaxInnerPlan r1 = plan(1, 1, 36836729, 2, false, d);
  EXPECT_EQ(r1.pack, 1) << describe(r1);
  EXPECT_EQ(r1.rows, 1) << describe(r1);
  EXPECT_EQ(r1.units, 16) << describe(r1);
  EXPECT_EQ(r1.cols, 4096) << describe(r1);
  EXPECT_EQ(r1.tiles, (36836729 + 4095) / 4096) << describe(r1);
  EXPECT_EQ(r1.shape.smem, 0u) << describe(r1);
  // 256 x 8 x 65536 bf16 on the grid: 8-byte packs of 8 rows forward, single elements backward
  EXPECT_EQ(plan(256, 8, 65536, 2, false, d).pack, 4);
  EXPECT_EQ(plan(256, 8, 65536, 2, true, d).pack, 1);
  EXPECT_EQ(plan(256, 2, 65536, 2, false, d).pack, 8);
  EXPECT_EQ(plan(256, 1, 65536, 2, true, d).pack, 8);
  // 1 x 8 x 104864 off the grid: tiles halved to fill a wave (4 blocks of 256 a SM)
  const kk::SoftmaxInnerPlan sm = plan(1, 8, 104864, 2, false, d, 0, layout(14, false));
  EXPECT_EQ(sm.pack, 1) << describe(sm);
  EXPECT_EQ(sm.run, 256) << describe(sm);
  // narrow slices: tiles of whole slices (1 << 20 x 2 x 2: 128 slices a step)
  const SoftmaxInnerPlan f = plan(1 << 20, 2, 2, 2, false, d);
  EXPECT_EQ(f.cols, 0) << describe(f);
  EXPECT_EQ(f.tiles, (int64_t{1} << 20) / (f.run / 256 * 128)) << describe(f);
}

// The kRegs kernel's unit walk (SoftmaxInnerColumnsOfSlice / _OfSlices) emulated on the host:
// every element of the call is loaded and written by exactly one (tile, thread, unit, row).
TEST(SoftmaxInnerPlan, RegsTilesCoverEveryElementOnce) {
  const kk::DeviceInfo d = kktest::h100();
  struct Case {
    int elem;
    bool backward;
    int64_t outer, n, inner;
    int off;
  };
  const Case cases[] = {
      {2, false, 1, 1, 100003, 0}, {2, false, 3, 2, 40000, 2}, {4, false, 5, 3, 257, 0},
      {4, false, 7, 5, 1024, 0},   {2, true, 9, 7, 300, 2},    {4, true, 4, 8, 4096, 0},
      {2, false, 1000, 2, 2, 0},   {4, false, 777, 16, 3, 4},  {2, false, 333, 1, 255, 2},
      {4, true, 100, 4, 8, 0},     {2, false, 50, 9, 64, 0},   {4, false, 3, 1, 256, 0}};
  for (const Case& c : cases) {
    const SoftmaxInnerPlan p =
        plan(c.outer, c.n, c.inner, c.elem, c.backward, d, 0, layout(c.off, false));
    const std::string what = std::to_string(c.outer) + "x" + std::to_string(c.n) + "x" +
                             std::to_string(c.inner) + ": " + describe(p);
    ASSERT_EQ(p.path, SoftmaxInnerPath::kRegs) << what;
    const int64_t total = c.outer * c.n * c.inner;
    std::vector<int> seen(static_cast<size_t>(total), 0);
    const int units = static_cast<int>(p.run / 256);
    const int64_t cu = c.inner / p.pack, slice = c.n * c.inner;
    for (int64_t tile = 0; tile < p.tiles; ++tile) {
      for (int t = 0; t < 256; ++t) {
        int64_t base;
        int64_t step;
        int count;
        if (p.cols > 0) {
          const int64_t o = tile / p.tiles_per_outer;
          const int64_t c0 = (tile - o * p.tiles_per_outer) * (p.cols / p.pack) + t;
          base = o * slice + c0 * p.pack;
          step = 256 * p.pack;
          const int64_t left = cu - c0;
          count = static_cast<int>(std::clamp<int64_t>((left + 255) / 256, 0, units));
        } else {
          const int64_t per = 256 / cu, s = t / cu;
          const int64_t first = tile * units * per + s;
          base = first * slice + (t - s * cu) * p.pack;
          step = per * slice;
          const int64_t left = s < per ? c.outer - first : 0;
          count = static_cast<int>(std::clamp<int64_t>((left + per - 1) / per, 0, units));
        }
        for (int u = 0; u < count; ++u)
          for (int64_t k = 0; k < c.n; ++k)
            for (int j = 0; j < p.pack; ++j) {
              const int64_t e = base + u * step + k * c.inner + j;
              ASSERT_GE(e, 0) << what;
              ASSERT_LT(e, total) << what;
              ++seen[static_cast<size_t>(e)];
            }
      }
    }
    for (int64_t e = 0; e < total; ++e)
      ASSERT_EQ(seen[static_cast<size_t>(e)], 1) << what << " element " << e;
  }
}

TEST(SoftmaxInnerPlan, PacksOnlyWhereTheOperandsAllowThem) {
  const kk::DeviceInfo d = kktest::h100();
  // whole slices (one run): packs when every operand sits alike, whatever the offset
  EXPECT_EQ(plan(65536, 17, 7, 4, false, d, 0, layout(4, false)).pack, 4);
  EXPECT_EQ(plan(65536, 17, 7, 4, false, d, 0, layout(4, true)).pack, 1);
  // columns of a slice (rows inner apart): packs only when every row is on the 16-byte grid
  EXPECT_EQ(plan(32, 64, 3136, 4, false, d, 0, layout(0, false)).pack, 4);
  EXPECT_EQ(plan(32, 64, 3136, 4, false, d, 0, layout(4, false)).pack, 1);
  EXPECT_EQ(plan(32, 64, 3137, 4, false, d, 0, layout(0, false)).pack, 1);
  EXPECT_EQ(plan(1, 50000, 66, 4, false, d, 0, layout(0, false)).pack, 1);
}

TEST(SoftmaxInnerPlan, InvariantsAndEveryPlanIsAnEntry) {
  const int64_t outers[] = {1, 2, 3, 32, 133, 4096, 1 << 20};
  const int64_t ns[] = {1, 2, 3, 5, 9, 17, 64, 255, 1000, 4097, 50000, 1 << 20};
  const int64_t inners[] = {2, 3, 7, 8, 16, 32, 33, 64, 100, 1000, 3136, 4096, 65536};
  const int offsets[] = {0, 4, 2};
  kktest::PlannedEntries planned(kk::kSoftmaxInnerConfigs);
  for (const auto& dev : kktest::all_devices()) {
    const kk::DeviceInfo& d = dev.info;
    for (const int elem : {4, 2}) {
      const kk::ConfigRange range = kk::softmax_inner_configs_of(elem);
      for (const bool backward : {false, true}) {
        const int inputs = backward ? 2 : 1;
        for (const int64_t outer : outers) {
          for (const int64_t n : ns) {
            for (const int64_t inner : inners) {
              if (outer * n * inner > (int64_t{1} << 40)) continue;
              for (const int off : offsets) {
                if (off % elem) continue;
                for (const bool mismatched : {false, true}) {
                  for (const bool ws : {false, true}) {
                    const size_t bound = kk::softmax_inner_workspace_bytes(outer, n, inner, elem);
                    const SoftmaxInnerPlan p = plan(outer, n, inner, elem, backward, d,
                                                    ws ? bound : 0, layout(off, mismatched));
                    const std::string what =
                        std::string(dev.name) + " " + std::to_string(outer) + "x" +
                        std::to_string(n) + "x" + std::to_string(inner) +
                        " elem=" + std::to_string(elem) + (backward ? " bwd" : " fwd") +
                        " off=" + std::to_string(off) + (mismatched ? " mismatched" : "") +
                        (ws ? " ws" : "") + ": " + describe(p);
                    ASSERT_GE(
                        planned.count(kk::softmax_inner_config(p, elem), range.begin, range.end), 0)
                        << what;
                    ASSERT_GE(p.shape.grid.x, 1u) << what;
                    ASSERT_EQ(p.shape.block.x, 256u) << what;
                    ASSERT_GE(p.blocks_per_sm, 1) << what;
                    ASSERT_LE(p.shape.smem, static_cast<size_t>(d.smem_per_block_optin)) << what;
                    if (p.path == SoftmaxInnerPath::kRegs) {
                      // short columns: n within the register bound, packs on the grid only
                      ASSERT_LE(n, backward ? 8 : 16) << what;
                      ASSERT_GE(p.rows, n) << what;
                      ASSERT_LT(p.rows / 2, n) << what;
                      ASSERT_EQ(p.shape.smem, 0u) << what;
                      if (p.pack > 1) {
                        ASSERT_TRUE(off == 0 && !mismatched && (inner * elem) % 16 == 0) << what;
                      }
                      ASSERT_EQ(inner % p.pack, 0) << what;
                      ASSERT_GE(p.units, 1) << what;
                      ASSERT_EQ(p.run % 256, 0) << what;
                      ASSERT_GE(p.run, 256) << what;
                      ASSERT_LE(p.run, 256 * p.units) << what;
                      const int64_t cu = inner / p.pack;
                      if (p.cols > 0) {
                        ASSERT_GE(cu, 256) << what;
                        ASSERT_EQ(p.cols, p.run * p.pack) << what;
                        ASSERT_EQ(p.tiles_per_outer, (inner + p.cols - 1) / p.cols) << what;
                        ASSERT_EQ(p.tiles, outer * p.tiles_per_outer) << what;
                      } else {
                        ASSERT_LT(cu, 256) << what;
                        const int64_t slices = p.run / 256 * (256 / cu);
                        ASSERT_EQ(p.tiles, (outer + slices - 1) / slices) << what;
                        // offsets within a tile fit int
                        ASSERT_LE(slices * n * inner, int64_t{INT32_MAX}) << what;
                      }
                    } else if (p.path == SoftmaxInnerPath::kTile) {
                      // tiles: whole slices (cols == inner) or columns of one slice
                      ASSERT_GE(p.cols, 1) << what;
                      ASSERT_LE(p.cols, inner) << what;
                      ASSERT_TRUE(p.slices == 1 || p.cols == inner) << what;
                      ASSERT_EQ(p.tiles_per_outer, (inner + p.cols - 1) / p.cols) << what;
                      ASSERT_EQ(p.tiles, (outer + p.slices - 1) / p.slices * p.tiles_per_outer)
                          << what;
                      // a tile and a pack's slack, per input, in shared memory
                      ASSERT_GE(p.tile_elems, p.slices * n * p.cols + p.pack - 1) << what;
                      ASSERT_EQ(p.tile_elems % (16 / elem), 0) << what;
                      ASSERT_EQ(static_cast<int64_t>(p.shape.smem), p.tile_elems * elem * inputs)
                          << what;
                      // two blocks a SM at least
                      ASSERT_LE(2 * (static_cast<int64_t>(p.shape.smem) + 2048 +
                                     d.smem_reserved_per_block),
                                d.smem_per_sm)
                          << what;
                      if (p.pack > 1) {
                        if (p.cols == inner) {
                          ASSERT_FALSE(mismatched) << what;
                        } else {
                          ASSERT_TRUE(off == 0 && (inner * elem) % 16 == 0) << what;
                          ASSERT_EQ(p.cols % p.pack, 0) << what;
                        }
                      }
                    } else {
                      ASSERT_GE(p.width, 1) << what;
                      ASSERT_LE(p.width, 256) << what;
                      const int64_t cp = inner / p.pack;
                      ASSERT_EQ(p.tiles_per_outer, (cp + p.width - 1) / p.width) << what;
                      ASSERT_EQ(p.tiles, outer * p.tiles_per_outer) << what;
                      if (p.pack > 1) ASSERT_TRUE(off == 0 && (inner * elem) % 16 == 0) << what;
                      // the splits cover n, none empty
                      ASSERT_GE(int64_t{p.split} * p.rows_per_split, n) << what;
                      ASSERT_LT(int64_t{p.split - 1} * p.rows_per_split, n) << what;
                      if (p.split > 1) {
                        ASSERT_TRUE(ws) << what;
                        ASSERT_LE(static_cast<size_t>(p.split) * outer * inner * 8, bound) << what;
                        ASSERT_EQ(static_cast<int>(p.shape.grid.y), p.split) << what;
                        ASSERT_EQ(p.stats_shape.grid.x, p.shape.grid.x) << what;
                        ASSERT_EQ(p.stats_shape.grid.y, p.shape.grid.y) << what;
                        ASSERT_EQ(static_cast<int64_t>(p.shape.grid.x), p.tiles) << what;
                      } else {
                        ASSERT_EQ(p.shape.grid.y, 1u) << what;
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe_config, "no shape plans");
  EXPECT_GT(planned.plans(), 10000);
}

TEST(SoftmaxInnerConfigs, EachElementSizeTogetherNoDuplicates) {
  kktest::expect_ranges_tile(std::size(kk::kSoftmaxInnerConfigs),
                             {kk::softmax_inner_configs_of(4), kk::softmax_inner_configs_of(2)});
  kktest::expect_distinct_entries(kk::kSoftmaxInnerConfigs, describe_config);
}

// ---------------------------------------------------------------------------------------
// Argument checks (pure: the pointers are never dereferenced).

TEST(SoftmaxInnerArgs, Forward) {
  alignas(16) static float buf[512];
  const float* in = buf;
  float* out = buf + 128;
  void* ws = buf + 256;
  EXPECT_TRUE(kk::softmax_inner_args_ok(in, out, 2, 4, 8));
  EXPECT_TRUE(kk::softmax_inner_args_ok(in, buf + 0, 2, 4, 8));   // in place
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, buf + 4, 2, 4, 8));  // partial overlap
  EXPECT_TRUE(kk::softmax_inner_args_ok(in, out, 2, 4, 8, ws, 64));
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, out, 2, 4, 8, buf + 130, 64));  // ws over out
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, out, 2, 4, 8, buf + 257, 64));  // ws misaligned
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, out, 2, 4, 8, nullptr, 64));    // null ws
  EXPECT_TRUE(kk::softmax_inner_args_ok(in, out, 2, 4, 8, nullptr, 0));
  EXPECT_TRUE(kk::softmax_inner_args_ok<float>(nullptr, nullptr, 0, 4, 8));  // empty
  EXPECT_TRUE(kk::softmax_inner_args_ok<float>(nullptr, nullptr, 3, 0, 8));
  EXPECT_FALSE(kk::softmax_inner_args_ok<float>(nullptr, out, 2, 4, 8));
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, out, -1, 4, 8));
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, out, 2, -4, 8));
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, out, 2, 4, -8));
  EXPECT_FALSE(kk::softmax_inner_args_ok(in, out, int64_t{1} << 31, int64_t{1} << 31, 4));
  const auto* bytes = reinterpret_cast<const char*>(buf);
  EXPECT_FALSE(kk::softmax_inner_args_ok(reinterpret_cast<const float*>(bytes + 2), out, 2, 4, 8));
}

TEST(SoftmaxInnerArgs, Backward) {
  alignas(16) static float buf[512];
  const float* y = buf;
  const float* dy = buf + 128;
  float* dx = buf + 256;
  EXPECT_TRUE(kk::softmax_inner_backward_args_ok(y, dy, dx, 2, 4, 8));
  EXPECT_TRUE(kk::softmax_inner_backward_args_ok(y, dy, buf + 128, 2, 4, 8));   // dx == dy
  EXPECT_FALSE(kk::softmax_inner_backward_args_ok(y, dy, buf + 0, 2, 4, 8));    // dx == y
  EXPECT_FALSE(kk::softmax_inner_backward_args_ok(y, dy, buf + 130, 2, 4, 8));  // over dy
  EXPECT_TRUE(kk::softmax_inner_backward_args_ok(y, buf + 4, dx, 2, 4, 8));     // y, dy overlap
  EXPECT_FALSE(kk::softmax_inner_backward_args_ok<float>(y, nullptr, dx, 2, 4, 8));
  EXPECT_FALSE(kk::softmax_inner_backward_args_ok(y, dy, dx, 2, 4, 8, buf + 288, 256));  // over dx
  EXPECT_TRUE(kk::softmax_inner_backward_args_ok(y, dy, dx, 2, 4, 8, buf + 384, 256));
}

TEST(SoftmaxInnerWorkspace, BoundsEveryDevicesSplit) {
  EXPECT_EQ(kk::softmax_inner_workspace_bytes<float>(4, 1000, 1), 0u);  // rows: none
  EXPECT_EQ(kk::softmax_inner_workspace_bytes<float>(4096, 64, 3136), 0u);
  EXPECT_GT(kk::softmax_inner_workspace_bytes<float>(1, 50000, 64), 0u);
}

}  // namespace
