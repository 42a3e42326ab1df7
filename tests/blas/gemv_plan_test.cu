// SPDX-License-Identifier: Apache-2.0
// plan_gemv on the host (no GPU): the issue's sweep shapes x both ops x every device of
// kktest::all_devices(), with and without a workspace, against the plan invariants (legal
// grid and block, resident on the device, no cluster without d.clusters(), a workspace split
// only within the workspace given and within gemv_workspace_bytes, 16-byte loads only on
// 16-byte aligned addresses), and the same invariants over ~5 million inputs (sizes 0 to
// 2^25 on both sides, padded leading dimensions, misaligned operands, workspaces from none
// to past the bound); a table of expected H100 plans; and, on many small shapes and
// a 2-SM device (so that every split rule fires), a model of each kernel's index mapping
// that checks every element of A is read exactly once, nothing outside it is read, and every
// output (or partial sum) is written exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "blas/gemv_case.cuh"
#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/blas/gemv.cuh"

namespace {

using gemv_test::FloatOffsets;
using kernelkit::BlasOp;
using kernelkit::BlockCombine;
using kernelkit::DeviceInfo;
using kernelkit::GemvConfig;
using kernelkit::GemvPath;
using kernelkit::GemvPlan;
using kernelkit::GemvTile;
namespace kd = kernelkit::detail;

const int64_t kSweep[][2] = {{1, 33554432}, {33554432, 1}, {3, 8388608},  {8388608, 3},
                             {8, 4194304},  {4194304, 8},  {64, 524288},  {524288, 64},
                             {1024, 32768}, {4096, 4096},  {8192, 8192},  {14336, 4096},
                             {4096, 14336}, {32000, 4096}, {50257, 4096}, {151936, 4096}};

// A 2-SM device: small shapes already leave it idle, so every split rule fires on them.
DeviceInfo tiny() {
  DeviceInfo d = kktest::h100();
  d.sm_count = 2;
  return d;
}

std::vector<kktest::NamedDevice> devices_and_tiny() {
  auto v = kktest::all_devices();
  v.push_back({"tiny", tiny()});
  DeviceInfo t = tiny();
  t.code_arch = 80;
  v.push_back({"tiny-compute80", t});
  return v;
}

std::string describe(BlasOp op, int64_t m, int64_t n, int64_t lda, FloatOffsets al, size_t ws,
                     const char* dev) {
  return std::string(dev) + (op == BlasOp::N ? " N " : " T ") + std::to_string(m) + "x" +
         std::to_string(n) + " lda=" + std::to_string(lda) + " al=" + std::to_string(al.a) + "," +
         std::to_string(al.x) + "," + std::to_string(al.y) + " ws=" + std::to_string(ws);
}

// Static shared memory and registers per thread the plan's main kernel is built with.
struct KernelResources {
  int threads, regs, smem;
};

KernelResources resources(const GemvPlan& p) {
  switch (p.path) {
    case GemvPath::kShortRows:
      return {kd::kGemvBlock, 0, kd::kGemvShortRowsSmem};
    case GemvPath::kShortColumns:
      return {kd::kGemvBlock, 0, kd::kGemvShortColsSmem};
    case GemvPath::kRowPairs:
      // 5/8 of the SM's threads (48 registers on sm_90); Unroll 4: 3/8 (80)
      return {kd::kGemvBlock, p.unroll == 4 ? 80 : 48, 1024};
    case GemvPath::kSplitRows:
      // row groups: 5/8 of the SM's threads (48 registers)
      return {kd::kGemvBlock, p.group == 1 ? 0 : 48, 1024};
    case GemvPath::kColumns: {
      // the wide, few-row and strided tiles: 64 registers
      const auto s = kernelkit::gemv_tile_shape(p.tile);
      return {s.tx * s.ty, s.unroll > kd::kGemvColUnroll || s.ty == 1 || s.strided ? 64 : 0,
              kd::gemv_t_smem_bytes(s.pack, s.tx, s.ty)};
    }
    default:
      return {kd::kGemvBlock, 0, 1024};
  }
}

// The invariants every plan keeps.
void check_invariants(const GemvPlan& p, BlasOp op, int64_t m, int64_t n, int64_t lda,
                      FloatOffsets al, size_t ws, const DeviceInfo& d, const std::string& what) {
  SCOPED_TRACE(what);
  // a configuration launch_gemv instantiates
  ASSERT_GE(kernelkit::config_index(kernelkit::kGemvConfigs, kernelkit::gemv_config(p)), 0);
  const int64_t count = op == BlasOp::N ? m : n;
  EXPECT_EQ(p.count, p.path == GemvPath::kSplitRows || p.path == GemvPath::kShortRows
                         ? p.rows  // BlasOp::T with n == 1, lda == 1 is planned as one row
                         : count);
  // a legal launch
  const auto& s = p.shape;
  EXPECT_GE(s.grid.x, 1u);
  EXPECT_LE(s.grid.x, unsigned{INT32_MAX});
  EXPECT_GE(s.grid.y, 1u);
  EXPECT_LE(s.grid.y, 65535u);
  EXPECT_EQ(s.grid.z, 1u);
  const KernelResources r = resources(p);
  EXPECT_EQ(s.block.x * s.block.y * s.block.z, unsigned(r.threads));
  EXPECT_LE(r.threads, d.max_threads_per_block);
  EXPECT_GE(kernelkit::blocks_per_sm(d, r.threads, r.regs, r.smem), 1);
  EXPECT_EQ(s.smem, 0u);
  // clusters only where allowed, of a power of two the device allows that divides the grid
  if (s.is_cluster()) {
    EXPECT_TRUE(d.clusters());
    EXPECT_EQ(p.combine, BlockCombine::kCluster);
    const unsigned c = s.cluster.x * s.cluster.y * s.cluster.z;
    EXPECT_LE(c, unsigned(d.max_cluster()));
    EXPECT_EQ(c & (c - 1), 0u);
    EXPECT_EQ(s.grid.x % s.cluster.x, 0u);
    EXPECT_EQ(s.grid.y % s.cluster.y, 0u);
    EXPECT_EQ(int(c), p.splits);
  } else {
    EXPECT_NE(p.combine, BlockCombine::kCluster);
  }
  if (!d.clusters()) EXPECT_FALSE(s.is_cluster());
  // a workspace split only within the workspace given and the documented bound
  if (p.combine == BlockCombine::kSecondKernel) {
    EXPECT_GT(ws, 0u);
    EXPECT_GT(p.partials, 0);
    EXPECT_LE(size_t(p.partials) * sizeof(float), ws);
    EXPECT_LE(size_t(p.partials) * sizeof(float), kernelkit::gemv_workspace_bytes(op, m, n));
    EXPECT_EQ(p.partials % p.count, 0);
    EXPECT_LE(p.partials / p.count, kernelkit::kGemvMaxPartialRows);
    EXPECT_TRUE(p.combine_cols == 1 || p.combine_cols == 32);
    EXPECT_GE(p.combine_shape.grid.x, 1u);
    EXPECT_EQ(p.combine_shape.block.x, unsigned(kd::kGemvBlock));
    EXPECT_EQ(p.combine_shape.overlap_previous, d.cc_major >= 9 && d.code_arch >= 90);
  } else {
    EXPECT_EQ(p.partials, 0);
  }
  if (ws == 0) EXPECT_NE(p.combine, BlockCombine::kSecondKernel);
  if (p.path == GemvPath::kShortColumns) EXPECT_EQ(p.combine, BlockCombine::kSecondKernel);
  // 16-byte loads only where every address they touch is aligned
  if (p.path == GemvPath::kRowPairs) {
    EXPECT_TRUE(p.aligned);
    EXPECT_EQ(p.combine, BlockCombine::kNone);
  }
  if ((p.path == GemvPath::kRows || p.path == GemvPath::kSplitRows ||
       p.path == GemvPath::kRowPairs) &&
      p.aligned) {
    EXPECT_TRUE(p.rows == 1 || p.ld % 4 == 0);
    EXPECT_EQ(al.a, 0);
    EXPECT_EQ(al.x, 0);
  }
  if (p.path == GemvPath::kCopy && p.aligned) {
    EXPECT_EQ(p.ld, 1);
    EXPECT_EQ(al.a, al.y);
  }
  if (p.path == GemvPath::kColumns) {
    const auto t = kernelkit::gemv_tile_shape(p.tile);
    // 16-byte packs exactly where every row is as far past a boundary as A; else scalar loads
    EXPECT_EQ(t.strided, lda % 4 != 0);
    // a thread over its split's rows: few rows (m <= 64), or a long matrix split through the
    // workspace
    if (t.ty == 1)
      EXPECT_TRUE(m <= 64 ||
                  (p.combine == BlockCombine::kSecondKernel && p.splits >= 2 && m >= 2 * n));
    // every block of a split at least a trip of its loop (few rows: one; tiles: two)
    if (p.splits > 1) EXPECT_GE(m, int64_t{p.splits} * t.ty * t.unroll * (t.ty == 1 ? 1 : 2));
  }
  if (p.path == GemvPath::kRows) {
    EXPECT_TRUE(p.width == 4 || p.width == 8 || p.width == 16 || p.width == 32);
  }
  if (p.path == GemvPath::kShortRows || p.path == GemvPath::kShortColumns) {
    EXPECT_GE(p.tile_rows, 1);
    EXPECT_LE(int64_t{p.tile_rows} * std::max<int64_t>(p.ld, 1), kd::kGemvTileFloats);
    EXPECT_LE(p.cols, kd::kGemvShortMaxCols);
    if (p.path == GemvPath::kShortColumns) {
      EXPECT_LE(p.tile_rows, kd::kGemvShortMaxTileRows);
      EXPECT_EQ(p.tile_rows % (kd::kGemvBlock / p.width), 0);  // whole trips per thread
      EXPECT_GE(p.width, p.cols);
      EXPECT_LT(p.width, 2 * p.cols);
    }
  }
}

GemvPlan plan(BlasOp op, int64_t m, int64_t n, int64_t lda, FloatOffsets al, size_t ws,
              const DeviceInfo& d) {
  return kernelkit::plan_gemv(op, m, n, lda, gemv_test::alignment(al), ws, d);
}

TEST(GemvPlan, SweepShapesOnEveryDevice) {
  for (const auto& dev : devices_and_tiny())
    for (BlasOp op : {BlasOp::N, BlasOp::T})
      for (const auto& sh : kSweep)
        for (bool with_ws : {false, true}) {
          const int64_t m = sh[0], n = sh[1];
          const size_t ws = with_ws ? kernelkit::gemv_workspace_bytes(op, m, n) : 0;
          for (FloatOffsets al : {FloatOffsets{0, 0, 0}, FloatOffsets{1, 2, 3}}) {
            const GemvPlan p = plan(op, m, n, n, al, ws, dev.info);
            check_invariants(p, op, m, n, n, al, ws, dev.info,
                             describe(op, m, n, n, al, ws, dev.name));
          }
        }
}

// What the H100 runs for the sweep shapes with the benchmark's workspace (aligned operands).
TEST(GemvPlan, H100SweepTable) {
  struct Expect {
    BlasOp op;
    int64_t m, n;
    GemvPath path;
    BlockCombine combine;
    int splits;         // blocks per row (N) / per tile and phase (T); kShortColumns: blocks
    int width_or_tile;  // kRows: width; kColumns: static_cast<int>(GemvTile)
  };
  constexpr auto N = BlasOp::N, T = BlasOp::T;
  constexpr auto kNone = BlockCombine::kNone, kWs = BlockCombine::kSecondKernel,
                 kCl = BlockCombine::kCluster;
  const int kWide32 = int(GemvTile::kWide32), kWide64 = int(GemvTile::kWide64),
            kWide128 = int(GemvTile::kWide128), kTile = int(GemvTile::kTile),
            kFat = int(GemvTile::kFat);
  const Expect table[] = {
      {N, 1, 33554432, GemvPath::kSplitRows, kWs, 1056, 0},
      {N, 33554432, 1, GemvPath::kCopy, kNone, 1, 0},
      {N, 3, 8388608, GemvPath::kSplitRows, kWs, 660, 0},  // a group of 3 rows
      {N, 8388608, 3, GemvPath::kShortRows, kNone, 1, 0},
      {N, 8, 4194304, GemvPath::kSplitRows, kWs, 132, 0},
      {N, 4194304, 8, GemvPath::kShortRows, kNone, 1, 0},
      {N, 64, 524288, GemvPath::kSplitRows, kWs, 16, 0},  // a cluster of 16 lost: 52.5 -> 59.7 us
      {N, 524288, 64, GemvPath::kRows, kNone, 1, 8},
      {N, 1024, 32768, GemvPath::kSplitRows, kNone, 1, 0},
      {N, 4096, 4096, GemvPath::kRowPairs, kNone, 1, 0},
      {N, 8192, 8192, GemvPath::kRowPairs, kNone, 1, 0},
      {N, 14336, 4096, GemvPath::kRowPairs, kNone, 1, 0},
      {N, 4096, 14336, GemvPath::kRowPairs, kNone, 1, 0},
      {N, 32000, 4096, GemvPath::kRowPairs, kNone, 1, 0},
      {N, 50257, 4096, GemvPath::kRowPairs, kNone, 1, 0},
      {N, 151936, 4096, GemvPath::kRowPairs, kNone, 1, 0},
      {T, 1, 33554432, GemvPath::kCopy, kNone, 1, 0},
      {T, 33554432, 1, GemvPath::kSplitRows, kWs, 1056, 0},
      {T, 3, 8388608, GemvPath::kColumns, kNone, 1, kFat},
      {T, 8388608, 3, GemvPath::kShortColumns, kWs, 1056, 0},
      {T, 8, 4194304, GemvPath::kColumns, kNone, 1, kFat},
      {T, 4194304, 8, GemvPath::kShortColumns, kWs, 1056, 0},
      {T, 64, 524288, GemvPath::kColumns, kNone, 1, kFat},
      {T, 524288, 64, GemvPath::kShortColumns, kWs, 1056, 0},
      {T, 1024, 32768, GemvPath::kColumns, kCl, 2, kTile},  // 512 tiles: 2 a tile fill the SMs
      {T, 4096, 4096, GemvPath::kColumns, kNone, 1, kWide32},
      {T, 8192, 8192, GemvPath::kColumns, kNone, 1, kWide64},
      {T, 14336, 4096, GemvPath::kColumns, kNone, 1, kWide32},
      {T, 4096, 14336, GemvPath::kColumns, kNone, 1, kWide128},
      {T, 32000, 4096, GemvPath::kColumns, kWs, 132, kFat},
      {T, 50257, 4096, GemvPath::kColumns, kWs, 132, kFat},
      {T, 151936, 4096, GemvPath::kColumns, kWs, 132, kFat},
  };
  const DeviceInfo d = kktest::h100();
  for (const Expect& e : table) {
    const size_t ws = kernelkit::gemv_workspace_bytes(e.op, e.m, e.n);
    const GemvPlan p = plan(e.op, e.m, e.n, e.n, {}, ws, d);
    SCOPED_TRACE(describe(e.op, e.m, e.n, e.n, {}, ws, "H100"));
    EXPECT_EQ(p.path, e.path);
    EXPECT_EQ(p.combine, e.combine);
    EXPECT_EQ(p.splits, e.splits);
    if (p.path == GemvPath::kRows) EXPECT_EQ(p.width, e.width_or_tile);
    if (p.path == GemvPath::kColumns) EXPECT_EQ(int(p.tile), e.width_or_tile);
    EXPECT_TRUE((p.path != GemvPath::kRows && p.path != GemvPath::kSplitRows) || p.aligned);
  }
  // row groups and the pair kernel's loads a trip
  const auto group_of = [&](int64_t m, int64_t n) {
    return plan(BlasOp::N, m, n, n, {}, kernelkit::gemv_workspace_bytes(BlasOp::N, m, n), d).group;
  };
  EXPECT_EQ(group_of(1, 33554432), 1);
  EXPECT_EQ(group_of(3, 8388608), 3);
  EXPECT_EQ(group_of(4, 4194304), 4);
  EXPECT_EQ(group_of(8, 4194304), 1);
  EXPECT_EQ(group_of(64, 524288), 1);
  EXPECT_EQ(group_of(1024, 32768), 1);
  EXPECT_EQ(plan(BlasOp::N, 4096, 4096, 4096, {}, 16384, d).unroll, 4);
  EXPECT_EQ(plan(BlasOp::N, 4096, 14336, 14336, {}, 16384, d).unroll, 2);
  EXPECT_EQ(plan(BlasOp::N, 8192, 8192, 8192, {}, 16384, d).unroll, 4);
  EXPECT_EQ(plan(BlasOp::N, 151936, 4096, 4096, {}, 16384, d).unroll, 4);
  EXPECT_EQ(plan(BlasOp::N, 151936, 4096, 4096, {}, 16384, d).shape.grid.y, 65535u);
  // many rows: misaligned or narrower than 4096 floats stay on lane groups
  EXPECT_EQ(plan(BlasOp::N, 14336, 4096, 4096, {0, 1, 0}, 16384, d).path, GemvPath::kRows);
  EXPECT_EQ(plan(BlasOp::N, 14336, 4092, 4092, {}, 16384, d).path, GemvPath::kRows);
  // long T matrices: kFat split over the rows (>= 128 rows a block), with the workspace only
  const GemvPlan fat = plan(BlasOp::T, 70001, 1024, 1024, {}, size_t{4} << 20, d);
  EXPECT_EQ(fat.tile, GemvTile::kFat);
  EXPECT_EQ(fat.splits, 528);
  EXPECT_EQ(fat.combine, BlockCombine::kSecondKernel);
  EXPECT_EQ(fat.combine_cols, 1);  // 528 parts, 1024 outputs: a block an output
  EXPECT_EQ(plan(BlasOp::T, 151936, 4096, 4096, {}, size_t{4} << 20, d).combine_cols, 32);
  EXPECT_EQ(plan(BlasOp::T, 40001, 1800, 1800, {}, size_t{4} << 20, d).splits, 264);
  // ... only where the 1024-column tiles are 3/4 used: 1500 of 2048 and 192 of 1024 are not
  EXPECT_NE(plan(BlasOp::T, 40001, 1500, 1500, {}, size_t{4} << 20, d).tile, GemvTile::kFat);
  EXPECT_EQ(plan(BlasOp::T, 179861, 192, 192, {}, size_t{4} << 20, d).tile, GemvTile::kTile);
  EXPECT_NE(plan(BlasOp::T, 70001, 1024, 1024, {}, 0, d).tile, GemvTile::kFat);
  EXPECT_NE(plan(BlasOp::T, 60000, 1024, 1024, {}, size_t{4} << 20, d).tile, GemvTile::kFat);
  // without a workspace (or with too little) the rows are not grouped: clusters or one block
  EXPECT_EQ(plan(BlasOp::N, 3, 8388608, 8388608, {}, 0, d).group, 1);
  EXPECT_EQ(plan(BlasOp::N, 3, 8388608, 8388608, {}, 0, kktest::a100()).group, 1);
  // odd lda or misaligned rows: a block per row
  EXPECT_EQ(plan(BlasOp::N, 3, 8388607, 8388607, {}, 16384, d).group, 1);
  EXPECT_EQ(plan(BlasOp::N, 3, 8388608, 8388608, {1, 0, 0}, 16384, d).group, 1);
}

// Without a workspace: thin shapes use clusters on Hopper builds (16 blocks: the non-portable
// size; 8 where plan_and_launch found none of 16 fits), else run unsplit.
TEST(GemvPlan, NoWorkspaceUsesClustersOnlyWhereAllowed) {
  for (const auto& dev : kktest::all_devices()) {
    SCOPED_TRACE(dev.name);
    const GemvPlan n3 = plan(BlasOp::N, 3, 8388608, 8388608, {}, 0, dev.info);
    const GemvPlan t64 = plan(BlasOp::T, 524288, 64, 64, {}, 0, dev.info);
    for (const GemvPlan* p : {&n3, &t64}) {
      if (dev.info.clusters()) {
        EXPECT_EQ(p->combine, BlockCombine::kCluster);
        EXPECT_EQ(p->splits, dev.info.max_cluster());
      } else {
        EXPECT_EQ(p->combine, BlockCombine::kNone);
        EXPECT_EQ(p->splits, 1);
        EXPECT_FALSE(p->shape.is_cluster());
      }
    }
  }
  DeviceInfo portable = kktest::h100();
  portable.nonportable_clusters = false;
  EXPECT_EQ(plan(BlasOp::N, 3, 8388608, 8388608, {}, 0, portable).splits, 8);
  // the compute_80 build on an H100 (issue 16): no cluster
  const GemvPlan p = plan(BlasOp::N, 1, 1 << 22, 1 << 22, {}, 0, kktest::h100_compute80());
  EXPECT_FALSE(p.shape.is_cluster());
  EXPECT_EQ(p.splits, 1);
}

// A workspace too small for the wanted split: fewer splits, or none.
TEST(GemvPlan, SplitsOnlyWithinTheWorkspace) {
  const DeviceInfo d = kktest::a100();  // no clusters
  const GemvPlan full = plan(BlasOp::N, 3, 8388608, 8388608, {}, 1 << 20, d);
  EXPECT_EQ(full.combine, BlockCombine::kSecondKernel);
  const GemvPlan some = plan(BlasOp::N, 3, 8388608, 8388608, {}, 3 * 10 * sizeof(float), d);
  EXPECT_EQ(some.combine, BlockCombine::kSecondKernel);
  EXPECT_EQ(some.splits, 10);
  const GemvPlan none = plan(BlasOp::N, 3, 8388608, 8388608, {}, 3 * sizeof(float), d);
  EXPECT_EQ(none.combine, BlockCombine::kNone);
  EXPECT_EQ(none.splits, 1);
  // odd lda, BlasOp::T: the strided tiles, with a workspace or without (no partial row per
  // class of rows any more)
  for (size_t ws : {size_t{1} << 22, size_t{0}}) {
    EXPECT_EQ(plan(BlasOp::T, 4097, 4095, 4095, {}, ws, d).tile, GemvTile::kStrided);
    EXPECT_EQ(plan(BlasOp::T, 33, 4095, 4095, {}, ws, d).tile, GemvTile::kStridedFat);
  }
  EXPECT_EQ(plan(BlasOp::T, 4097, 4095, 4095, {}, 1 << 22, d).combine, BlockCombine::kSecondKernel);
  EXPECT_EQ(plan(BlasOp::T, 4097, 4095, 4095, {}, 0, d).combine, BlockCombine::kNone);
}

TEST(GemvPlan, WorkspaceBytesBound) {
  EXPECT_EQ(kernelkit::gemv_workspace_bytes(BlasOp::N, 0, 5), 0u);
  EXPECT_EQ(kernelkit::gemv_workspace_bytes(BlasOp::N, 8388608, 3), 0u);   // short rows
  EXPECT_EQ(kernelkit::gemv_workspace_bytes(BlasOp::N, 33554432, 1), 0u);  // a copy
  EXPECT_EQ(kernelkit::gemv_workspace_bytes(BlasOp::T, 1, 33554432), 0u);  // a copy
  EXPECT_EQ(kernelkit::gemv_workspace_bytes(BlasOp::N, 1, 33554432), 16384u);
  EXPECT_EQ(kernelkit::gemv_workspace_bytes(BlasOp::T, 4096, 4096), size_t{4} << 20);
  EXPECT_EQ(kernelkit::gemv_workspace_bytes(BlasOp::T, 8388608, 3), 4096u * 3 * 4);
}

TEST(GemvPlan, EmptyInnerDimensionScales) {
  for (const auto& dev : kktest::all_devices()) {
    const GemvPlan n = plan(BlasOp::N, 100, 0, 1, {}, 0, dev.info);
    EXPECT_EQ(n.path, GemvPath::kScale);
    EXPECT_EQ(n.count, 100);
    const GemvPlan t = plan(BlasOp::T, 0, 77, 77, {}, 0, dev.info);
    EXPECT_EQ(t.path, GemvPath::kScale);
    EXPECT_EQ(t.count, 77);
  }
}

// No outputs (m == 0 for N, n == 0 for T) with a non-empty inner dimension: the empty plan, not
// a division by zero tiles (T 65 x 0 with lda 4 crashed the long-matrix rule), for every
// workspace and device; both ops, short and long inner dimensions.
TEST(GemvPlan, NoOutputsIsTheEmptyPlan) {
  const kernelkit::Alignment odd(4);
  for (const auto& dev : kktest::all_devices()) {
    for (const size_t ws : {size_t{0}, size_t{1} << 22}) {
      for (const int64_t inner : {1, 2, 3, 64, 65, 4096, 179861}) {
        const GemvPlan t =
            kernelkit::plan_gemv(BlasOp::T, inner, 0, 4, {odd, odd, odd}, ws, dev.info);
        EXPECT_EQ(t.path, GemvPath::kScale) << dev.name << " T " << inner;
        EXPECT_EQ(t.count, 0);
        const GemvPlan t2 = kernelkit::plan_gemv(BlasOp::T, inner, 0, 1, {}, ws, dev.info);
        EXPECT_EQ(t2.path, GemvPath::kScale) << dev.name << " T lda 1 " << inner;
        const GemvPlan n = kernelkit::plan_gemv(BlasOp::N, 0, inner, inner, {}, ws, dev.info);
        EXPECT_EQ(n.path, GemvPath::kScale) << dev.name << " N " << inner;
        EXPECT_EQ(n.count, 0);
      }
    }
  }
}

// gemv_args_ok is pure: checked here on made-up addresses (nothing is dereferenced).
TEST(GemvPlan, ArgumentChecks) {
  const auto at = [](std::uintptr_t addr) { return reinterpret_cast<float*>(addr); };
  float* A = at(0x10000);  // 64 x 64 floats: up to 0x14000
  float* x = at(0x20000);
  float* y = at(0x30000);
  void* ws = at(0x40000);
  using kernelkit::gemv_args_ok;
  for (BlasOp op : {BlasOp::N, BlasOp::T}) {
    EXPECT_TRUE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y));
    EXPECT_TRUE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y, ws, 4096));
    EXPECT_TRUE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y, nullptr, 0));
    EXPECT_FALSE(gemv_args_ok(op, -1, 64, 1.f, A, 64, x, y));
    EXPECT_FALSE(gemv_args_ok(op, 64, -1, 1.f, A, 64, x, y));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 63, x, y));  // lda < n
    EXPECT_FALSE(gemv_args_ok(op, 64, 0, 1.f, A, 0, x, y));    // lda < 1
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, nullptr, 64, x, y));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, nullptr, y));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, nullptr));
    EXPECT_TRUE(gemv_args_ok(op, 64, 64, 0.f, nullptr, 64, nullptr, y));  // alpha == 0
    EXPECT_FALSE(gemv_args_ok(op, int64_t{1} << 40, 4, 1.f, A, int64_t{1} << 30, x, y));
    EXPECT_FALSE(gemv_args_ok(op, 1, int64_t{1} << 62, 1.f, A, int64_t{1} << 62, x, y));
    // alignment to float
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, at(0x10002), 64, x, y));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, at(0x20001), y));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, at(0x30003)));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y, at(0x40002), 64));
    // y overlapping A or x; a workspace overlapping any; a null workspace with bytes
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, at(0x13ff0)));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, x));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, at(0x1ff04)));
    EXPECT_TRUE(gemv_args_ok(op, 64, 64, 0.f, A, 64, x, x));  // alpha == 0: x is not read
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y, at(0x300f0), 64));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y, at(0x13000), 64));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y, x, 64));
    EXPECT_FALSE(gemv_args_ok(op, 64, 64, 1.f, A, 64, x, y, nullptr, 64));
    // lda > n: the gaps of the last row are not part of A's span
    EXPECT_TRUE(gemv_args_ok(op, 2, 4, 1.f, A, 100, x, at(0x10000 + 4 * (100 + 4))));
  }
  EXPECT_FALSE(gemv_args_ok(static_cast<BlasOp>(2), 4, 4, 1.f, A, 4, x, y));
  EXPECT_FALSE(gemv_args_ok(static_cast<BlasOp>(-1), 4, 4, 1.f, A, 4, x, y));
}

// ---- the coverage model ---------------------------------------------------------------------
// Restates each kernel's index mapping on the host: counts the reads of every float of A's
// span ((m - 1) * lda + n floats from A), the writes of every output and of every partial.

struct Model {
  int64_t span = 0;
  std::vector<int> a_reads, y_writes, part_writes;
  bool misaligned_load = false;
  bool out_of_range = false;

  void read(int64_t e) {
    if (e < 0 || e >= span) {
      out_of_range = true;
      return;
    }
    ++a_reads[e];
  }
  // a 16-byte load at element e of A (A's offset a_off floats past a boundary)
  void read_pack(int64_t e, int a_off) {
    if ((a_off + e) % 4 != 0) misaligned_load = true;
    for (int k = 0; k < 4; ++k)
      read(e + k);
  }
};

int64_t head_of(int64_t elem_offset, int64_t len) {
  return std::min<int64_t>((4 - elem_offset % 4) % 4, len);
}

// The thread `lane` of `lanes` sharing a row starting at element e0 of A (gemv_row_dot).
void model_row(Model& md, const GemvPlan& p, const FloatOffsets& al, int64_t e0, int64_t lane,
               int64_t lanes) {
  const int64_t n = p.cols;
  const int64_t head = p.aligned ? 0 : head_of(al.a + e0, n);
  const int64_t packs = (n - head) / 4;
  const int64_t tail = head + packs * 4;
  for (int64_t q = lane; q < packs; q += lanes)
    md.read_pack(e0 + head + 4 * q, al.a);
  if (lane < head) md.read(e0 + lane);
  if (lane < n - tail) md.read(e0 + tail + lane);
}

void model_tile_load(Model& md, const FloatOffsets& al, int64_t e0, int64_t len) {
  ASSERT_LE(len, kd::kGemvTileFloats);
  const int64_t head = head_of(al.a + e0, len);
  const int64_t packs = (len - head) / 4;
  for (int64_t q = 0; q < packs; ++q)
    md.read_pack(e0 + head + 4 * q, al.a);
  for (int64_t e = 0; e < head; ++e)
    md.read(e0 + e);
  for (int64_t e = head + 4 * packs; e < len; ++e)
    md.read(e0 + e);
}

Model run_model(const GemvPlan& p, const FloatOffsets& al, int64_t span) {
  Model md;
  md.span = span;
  md.a_reads.assign(span, 0);
  md.y_writes.assign(p.count, 0);
  md.part_writes.assign(p.partials, 0);
  const auto out = [&](int64_t slot_row, int64_t k, bool to_partials) {
    if (k < 0 || k >= p.count) {
      md.out_of_range = true;
      return;
    }
    if (to_partials) {
      ++md.part_writes[slot_row * p.count + k];
    } else {
      ++md.y_writes[k];
    }
  };
  const int64_t m = p.rows, n = p.cols, ld = p.ld;
  const unsigned gx = p.shape.grid.x, gy = p.shape.grid.y;
  const bool ws = p.combine == BlockCombine::kSecondKernel;
  switch (p.path) {
    case GemvPath::kScale:
      for (int64_t k = 0; k < p.count; ++k)
        out(0, k, false);
      break;
    case GemvPath::kCopy:
      for (int64_t k = 0; k < p.count; ++k) {
        md.read(k * ld);
        out(0, k, false);
      }
      if (p.aligned) {
        // the packs of the source start where y's do: as aligned as y's
        const int64_t head = head_of(al.y, p.count);
        for (int64_t q = 0; q < (p.count - head) / 4; ++q)
          if ((al.a + head + 4 * q) % 4 != 0) md.misaligned_load = true;
      }
      break;
    case GemvPath::kRows: {
      const int rows_per_warp = 32 / p.width;
      const int64_t warps = int64_t{gx} * 8;
      for (int64_t w = 0; w < warps; ++w)
        for (int64_t base = w * rows_per_warp; base < m; base += warps * rows_per_warp)
          for (int g = 0; g < rows_per_warp; ++g) {
            const int64_t row = base + g;
            if (row >= m) continue;
            for (int lane = 0; lane < p.width; ++lane)
              model_row(md, p, al, row * ld, lane, p.width);
            out(0, row, false);
          }
      break;
    }
    case GemvPath::kSplitRows:
      if (p.group > 1) {
        // gemv_n_group_kernel: block (s, g) owns rows g * group .. and lanes s * 256 + t
        EXPECT_TRUE(p.aligned);
        EXPECT_NE(p.combine, BlockCombine::kCluster);
        const int64_t groups = (m + p.group - 1) / p.group;
        for (unsigned by = 0; by < gy; ++by)
          for (int64_t g = by; g < groups; g += gy)
            for (int64_t row = g * p.group; row < std::min(m, (g + 1) * p.group); ++row)
              for (unsigned s = 0; s < gx; ++s) {
                for (int t = 0; t < kd::kGemvBlock; ++t)
                  model_row(md, p, al, row * ld, int64_t{s} * kd::kGemvBlock + t,
                            int64_t{gx} * kd::kGemvBlock);
                if (gx == 1) out(0, row, false);
                if (gx > 1) out(s, row, true);
              }
        break;
      }
      for (unsigned by = 0; by < gy; ++by)
        for (int64_t row = by; row < m; row += gy)
          for (unsigned s = 0; s < gx; ++s) {
            for (int t = 0; t < kd::kGemvBlock; ++t)
              model_row(md, p, al, row * ld, int64_t{s} * kd::kGemvBlock + t,
                        int64_t{gx} * kd::kGemvBlock);
            if (gx == 1 || (!ws && s == 0)) out(0, row, false);
            if (gx > 1 && ws) out(s, row, true);
          }
      break;
    case GemvPath::kRowPairs:
      // (an odd last row is summed as a pair with itself: read twice, modelled once)
      for (unsigned by = 0; by < gy; ++by)
        for (int64_t r = 2 * int64_t{by}; r < m; r += 2 * int64_t{gy})
          for (int64_t row = r; row < std::min(r + 2, m); ++row) {
            for (int t = 0; t < kd::kGemvBlock; ++t)
              model_row(md, p, al, row * ld, t, kd::kGemvBlock);
            out(0, row, false);
          }
      break;
    case GemvPath::kShortRows:
    case GemvPath::kShortColumns: {
      const int64_t tiles = (m + p.tile_rows - 1) / p.tile_rows;
      for (unsigned b = 0; b < gx; ++b) {
        for (int64_t t = b; t < tiles; t += gx) {
          const int64_t r0 = t * p.tile_rows;
          const int64_t rows = std::min<int64_t>(p.tile_rows, m - r0);
          model_tile_load(md, al, r0 * ld, (rows - 1) * ld + n);
          if (p.path == GemvPath::kShortRows)
            for (int64_t r = 0; r < rows; ++r)
              out(0, r0 + r, false);
        }
        if (p.path == GemvPath::kShortColumns)
          for (int64_t c = 0; c < n; ++c)
            out(b, c, true);
      }
      break;
    }
    case GemvPath::kColumns: {
      const auto s = kernelkit::gemv_tile_shape(p.tile);
      const int kcols = s.tx * s.pack;
      const int splits = int(gy);
      for (unsigned bx = 0; bx < gx; ++bx)
        for (int split = 0; split < splits; ++split) {
          const int shift = s.strided ? 0 : p.a_offset;
          const int64_t col0 = int64_t{bx} * kcols - shift;
          for (int ty = 0; ty < s.ty; ++ty)
            for (int tx = 0; tx < s.tx; ++tx) {
              const int64_t step = int64_t{splits} * s.ty;
              for (int64_t i = int64_t{split} * s.ty + ty; i < m; i += step) {
                if (s.strided) {
                  // columns col0 + tx + k * tx_count, a column past n read as column n - 1
                  // (counted once: the kernel reads it for a column it never writes)
                  for (int k = 0; k < s.pack; ++k) {
                    const int64_t j = col0 + tx + int64_t{k} * s.tx;
                    if (j < n) md.read(i * ld + j);
                    if (j >= n && (i * ld + n - 1 < 0 || i * ld + n - 1 >= md.span))
                      md.out_of_range = true;
                  }
                  continue;
                }
                const int64_t c0 = col0 + int64_t{tx} * s.pack;
                if (c0 >= 0 && c0 + s.pack <= n) {
                  md.read_pack(i * ld + c0, p.a_offset);
                } else {
                  for (int k = 0; k < s.pack; ++k)
                    if (c0 + k >= 0 && c0 + k < n) md.read(i * ld + c0 + k);
                }
              }
            }
          // outputs: the block's columns col0 .. col0 + kcols - 1 inside the matrix
          for (int c = 0; c < kcols; ++c) {
            const int64_t j = col0 + c;
            if (j < 0 || j >= n) continue;
            if (gy == 1)
              out(0, j, false);
            else if (ws)
              out(split, j, true);
            else if (split == 0)
              out(0, j, false);  // cluster rank 0
          }
        }
      break;
    }
  }
  if (ws) {
    // the combine kernel: every output once, from every partial row
    for (int64_t k = 0; k < p.count; ++k)
      out(0, k, false);
  }
  return md;
}

void check_coverage(const GemvPlan& p, BlasOp op, int64_t m, int64_t n, int64_t lda,
                    FloatOffsets al, const std::string& what) {
  SCOPED_TRACE(what);
  const bool reads = p.path != GemvPath::kScale;
  const int64_t span = reads ? (m - 1) * lda + n : 0;
  const Model md = run_model(p, al, span);
  EXPECT_FALSE(md.out_of_range);
  EXPECT_FALSE(md.misaligned_load);
  // every element of A read exactly once; the gaps between rows (lda > n) at most once
  int64_t bad = 0;
  for (int64_t e = 0; e < span; ++e) {
    const bool in_matrix = e % lda < n;
    const int reads_e = md.a_reads[e];
    if (in_matrix ? reads_e != 1 : reads_e > 1) ++bad;
  }
  EXPECT_EQ(bad, 0) << "elements of A read other than once";
  const int64_t count = op == BlasOp::N ? m : n;
  EXPECT_EQ(int64_t(md.y_writes.size()), count);
  EXPECT_EQ(std::count(md.y_writes.begin(), md.y_writes.end(), 1), count)
      << "outputs written other than once";
  EXPECT_EQ(std::count(md.part_writes.begin(), md.part_writes.end(), 1),
            int64_t(md.part_writes.size()))
      << "partials written other than once";
}

TEST(GemvPlan, EveryElementReadOnceEveryOutputWrittenOnce) {
  const int64_t dims[][2] = {
      {1, 1},     {1, 7},     {1, 64},    {1, 65},    {1, 5000},   {1, 70000}, {7, 1},
      {70000, 1}, {2, 4100},  {3, 9000},  {5, 3},     {1000, 3},   {4099, 8},  {300, 64},
      {301, 65},  {33, 1000}, {100, 130}, {3, 300},   {64, 2000},  {65, 33},   {2100, 40},
      {600, 96},  {2500, 64}, {9000, 2},  {40, 4096}, {1500, 100}, {7, 0},     {41, 4099},
      {7, 5000},  {12, 4100}, {5, 4097},  {500, 130}};
  std::set<std::string> seen;
  for (const auto& dev :
       {kktest::NamedDevice{"tiny", tiny()}, kktest::NamedDevice{"T4", kktest::t4()}}) {
    for (BlasOp op : {BlasOp::N, BlasOp::T})
      for (const auto& dm : dims) {
        const int64_t m = dm[0], n = dm[1];
        if ((op == BlasOp::N ? m : n) == 0) continue;  // no outputs: gemv plans nothing
        for (int64_t lda : {std::max<int64_t>(n, 1), n + 1, n + 2, n + 4})
          for (FloatOffsets al :
               {FloatOffsets{0, 0, 0}, FloatOffsets{1, 0, 2}, FloatOffsets{3, 3, 0}})
            for (size_t ws : {size_t{0}, kernelkit::gemv_workspace_bytes(op, m, n),
                              size_t{5 * sizeof(float)}}) {
              const GemvPlan p = plan(op, m, n, lda, al, ws, dev.info);
              const std::string what = describe(op, m, n, lda, al, ws, dev.name);
              check_invariants(p, op, m, n, lda, al, ws, dev.info, what);
              check_coverage(p, op, m, n, lda, al, what);
              seen.insert(std::to_string(int(p.path)) + "/" + std::to_string(int(p.combine)) +
                          (p.path == GemvPath::kColumns ? "/" + std::to_string(int(p.tile)) : "") +
                          (p.group > 1 ? "/g" : ""));
            }
      }
  }
  // the sweep reaches every path, combine and tile kernel
  for (const char* want :
       {"0/0",   "1/0",   "2/0",   "3/0",   "3/1",   "3/3",   "4/0",   "5/0/1", "5/1/1",
        "5/3/1", "5/0/2", "5/0/3", "5/0/4", "5/0/0", "5/1/0", "5/3/0", "5/0/5", "5/1/5",
        "5/3/5", "5/0/6", "5/1/6", "5/3/6", "6/3",   "7/0",   "3/3/g"})
    EXPECT_TRUE(seen.count(want)) << "no plan took " << want;
}

// The invariants over many shapes x leading dimensions x both ops x every test device (and
// the 2-SM ones, where every split rule fires) x operand alignments x workspace sizes; and
// the row-group rule: a group of 2..4 aligned rows (all of the matrix's) only where its split
// goes through the workspace, and a cluster only over single rows.
TEST(GemvPlan, InvariantsOverShapesAlignmentsAndWorkspaces) {
  const int64_t sizes[] = {0,    1,     2,     3,     4,      5,      7,       8,       16,
                           31,   32,    33,    63,    64,     65,     100,     127,     128,
                           255,  256,   1000,  1023,  1024,   1025,   4095,    4096,    4097,
                           8192, 14336, 32768, 70001, 151936, 524288, 4194304, 8388608, 33554432};
  const FloatOffsets aligns[] = {{0, 0, 0}, {1, 2, 3}, {0, 0, 1}, {0, 1, 0},
                                 {1, 0, 0}, {2, 2, 2}, {3, 0, 3}};
  for (const auto& dev : devices_and_tiny())
    for (BlasOp op : {BlasOp::N, BlasOp::T})
      for (int64_t m : sizes)
        for (int64_t n : sizes) {
          if ((op == BlasOp::N ? m : n) == 0) continue;  // no output
          const size_t bound = kernelkit::gemv_workspace_bytes(op, m, n);
          const size_t workspaces[] = {0, 4, 64, 4096, 16384, bound, bound / 3, size_t{4} << 20};
          for (int64_t pad : {0, 1, 2, 3, 5})
            for (const FloatOffsets& al : aligns)
              for (size_t ws : workspaces) {
                const int64_t lda = std::max<int64_t>(1, n) + pad;
                const GemvPlan p = plan(op, m, n, lda, al, ws, dev.info);
                const std::string what = describe(op, m, n, lda, al, ws, dev.name);
                check_invariants(p, op, m, n, lda, al, ws, dev.info, what);
                if (p.path == GemvPath::kSplitRows && p.group > 1) {
                  EXPECT_EQ(p.group, p.rows) << what;
                  EXPECT_LE(p.group, 4) << what;
                  EXPECT_TRUE(p.aligned) << what;
                  EXPECT_EQ(p.combine, BlockCombine::kSecondKernel) << what;
                }
                if (::testing::Test::HasFailure()) return;  // one input's failures, not millions
              }
        }
}

// ---------------------------------------------------------------------------------------
// The table of kernel configurations.

std::string describe(const GemvConfig& c) {
  return "path=" + std::to_string(int(c.path)) + " aligned=" + std::to_string(c.aligned) +
         " width=" + std::to_string(c.width) + " group=" + std::to_string(c.group) +
         " unroll=" + std::to_string(c.unroll) + " tile=" + std::to_string(int(c.tile)) +
         " combine_cols=" + std::to_string(c.combine_cols);
}

TEST(GemvConfigs, NoDuplicates) {
  kktest::expect_distinct_entries(kernelkit::kGemvConfigs, describe);
}

// Plans over shapes (odd, prime, tiny, thin, past 2^31 elements) x both ops x leading
// dimensions (padded; 4n + 1: few columns read from long misaligned rows) x the devices (and
// the 2-SM ones, an H100 without clusters) x operand alignments x workspace sizes (none, too
// small for most splits, 200 and 520 bytes: a few partial rows of a few columns, the bound,
// more): each is an entry of kGemvConfigs (what launch_gemv can launch), and every entry is some
// input's plan (no kernel is built that no call runs).
TEST(GemvConfigs, EveryPlanIsAnEntryAndEveryEntryIsPlanned) {
  const int64_t sizes[] = {0,      1,       2,       3,       4,        5,           7,     8,
                           13,     16,      17,      31,      32,       33,          63,    64,
                           65,     100,     127,     200,     256,      1000,        1021,  1024,
                           4095,   4096,    4097,    8192,    14336,    32768,       70001, 151936,
                           524288, 1000003, 4194304, 8388608, 33554432, 2147483659LL};
  const FloatOffsets aligns[] = {{0, 0, 0}, {1, 2, 3}, {0, 1, 0}, {3, 0, 3}, {2, 2, 2}};
  auto devices = devices_and_tiny();
  DeviceInfo no_clusters = kktest::h100();
  no_clusters.cluster_launch = false;
  devices.push_back({"H100-no-clusters", no_clusters});
  kktest::PlannedEntries planned(kernelkit::kGemvConfigs);
  for (const auto& dev : devices)
    for (BlasOp op : {BlasOp::N, BlasOp::T})
      for (int64_t m : sizes)
        for (int64_t n : sizes) {
          if ((op == BlasOp::N ? m : n) == 0) continue;  // no output
          if (m > 0 && n > (int64_t{1} << 40) / m) continue;
          const size_t bound = kernelkit::gemv_workspace_bytes(op, m, n);
          const size_t workspaces[] = {0, 12, 200, 520, 4096, bound, size_t{4} << 20};
          for (int64_t lda : {std::max<int64_t>(1, n), n + 1, n + 2, n + 3, 4 * n + 1})
            for (const FloatOffsets& al : aligns)
              for (size_t ws : workspaces) {
                const GemvPlan p = plan(op, m, n, lda, al, ws, dev.info);
                const int i = planned.count(kernelkit::gemv_config(p));
                ASSERT_GE(i, 0) << describe(op, m, n, lda, al, ws, dev.name) << ": "
                                << describe(kernelkit::gemv_config(p));
              }
        }
  planned.expect_every_entry_planned(describe, "no input plans");
  EXPECT_GT(planned.plans(), 1000000);
}

// Gemv.EveryConfiguration (gemv_test.cu) finds a small input for every entry on each device
// (here: each GPU of the plan tests), whose plan is that entry and keeps the invariants.
TEST(GemvConfigs, EveryEntryHasASmallCase) {
  for (const auto& dev : kktest::all_devices()) {
    const std::vector<gemv_test::ConfigCase> cases = gemv_test::config_cases(dev.info);
    ASSERT_EQ(cases.size(), std::size(kernelkit::kGemvConfigs));
    for (size_t i = 0; i < cases.size(); ++i) {
      const gemv_test::ConfigCase& c = cases[i];
      ASSERT_TRUE(c.found) << dev.name << ": no case plans "
                           << describe(kernelkit::kGemvConfigs[i]);
      EXPECT_EQ(kernelkit::config_index(kernelkit::kGemvConfigs, kernelkit::gemv_config(c.plan)),
                int(i));
      EXPECT_LE(c.m * c.n, gemv_test::kMaxCaseFloats);
      check_invariants(c.plan, c.op, c.m, c.n, c.lda, c.align, c.ws_bytes, c.device,
                       describe(c.op, c.m, c.n, c.lda, c.align, c.ws_bytes, dev.name));
    }
  }
}

}  // namespace
