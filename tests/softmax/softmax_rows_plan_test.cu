// SPDX-License-Identifier: Apache-2.0
// plan_softmax_rows on the host (no GPU): the backward row family (softmax_backward /
// log_softmax_backward, contiguous or strided rows). The path of chosen shapes on an H100, the
// pack respecting pointers and row strides, invariants (legal grid, a row held whole by the warp
// path's lanes, shared memory within the device's, bytes priced with three streams) over shapes
// x alignments x element sizes x the test devices, every plan an entry of kSoftmaxRowsConfigs
// and every entry planned; the argument checks (the forward's with leading dimensions too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/softmax/softmax.cuh"

namespace kk = kernelkit;
using kk::SoftmaxRowsConfig;
using kk::SoftmaxRowsPath;
using kk::SoftmaxRowsPlan;

namespace {

std::string describe(const SoftmaxRowsPlan& p) {
  return std::string(p.path == SoftmaxRowsPath::kWarp ? "warp" : "block") +
         " pack=" + std::to_string(p.pack) + " split=" + std::to_string(p.split) +
         " group=" + std::to_string(p.group) + " packs=" + std::to_string(p.packs) +
         " cached=" + std::to_string(p.cached) + " bps=" + std::to_string(p.blocks_per_sm) +
         " grid=" + std::to_string(p.shape.grid.x) + " block=" + std::to_string(p.shape.block.x) +
         " smem=" + std::to_string(p.shape.smem) + " bytes=" + std::to_string(p.bytes);
}

std::string describe_config(const SoftmaxRowsConfig& c) {
  return std::string(c.path == SoftmaxRowsPath::kWarp
                         ? "warp"
                         : (c.path == SoftmaxRowsPath::kBlock ? "block" : "cluster")) +
         " elem=" + std::to_string(c.elem_bytes) + " pack=" + std::to_string(c.pack) +
         " block=" + std::to_string(c.block) + " group=" + std::to_string(c.group) +
         " packs=" + std::to_string(c.packs);
}

SoftmaxRowsPlan plan(int64_t rows, int64_t cols, int elem, const kk::DeviceInfo& d,
                     kk::SoftmaxRowsLayout at = kk::SoftmaxRowsLayout()) {
  return kk::plan_softmax_rows(rows, cols, elem, at, d);
}

// the inputs a row reads (y and dy)
constexpr int kInputs = 2;

TEST(SoftmaxRowsPlan, PathsOnAnH100) {
  const kk::DeviceInfo d = kktest::h100();
  struct Want {
    int elem;
    int64_t rows, cols;
    SoftmaxRowsPath path;
    int group, packs, block;
    bool whole;  // kBlock: the row kept whole in shared memory
  };
  const Want table[] = {
      {4, 65536, 1, SoftmaxRowsPath::kWarp, 4, 1, 128, true},
      {4, 65536, 16, SoftmaxRowsPath::kWarp, 4, 1, 128, true},
      {4, 65536, 17, SoftmaxRowsPath::kWarp, 8, 1, 128, true},
      {4, 65536, 128, SoftmaxRowsPath::kWarp, 32, 1, 128, true},
      {4, 65536, 129, SoftmaxRowsPath::kWarp, 32, 2, 128, true},
      {4, 65536, 512, SoftmaxRowsPath::kWarp, 32, 4, 128, true},
      {4, 65536, 513, SoftmaxRowsPath::kBlock, 0, 0, 256, true},
      {4, 4096, 4096, SoftmaxRowsPath::kBlock, 0, 0, 256, true},
      {4, 1024, 8192, SoftmaxRowsPath::kBlock, 0, 0, 256, true},
      {4, 1024, 8193, SoftmaxRowsPath::kBlock, 0, 0, 1024, true},
      {4, 1049, 32000, SoftmaxRowsPath::kBlock, 0, 0, 1024, false},  // 2 x 128 KB
      {4, 128, 262144, SoftmaxRowsPath::kBlock, 0, 0, 1024, false},
      {2, 65536, 256, SoftmaxRowsPath::kWarp, 32, 1, 128, true},
      {2, 65536, 512, SoftmaxRowsPath::kWarp, 32, 2, 128, true},
      {2, 8192, 4096, SoftmaxRowsPath::kBlock, 0, 0, 256, true},
      {2, 4096, 50257, SoftmaxRowsPath::kBlock, 0, 0, 1024, true},  // 2 x 100.5 KB
      {2, 512, 65536, SoftmaxRowsPath::kBlock, 0, 0, 1024, false},
  };
  for (const Want& w : table) {
    const SoftmaxRowsPlan p = plan(w.rows, w.cols, w.elem, d);
    const std::string what = std::to_string(w.elem) + "-byte " + std::to_string(w.rows) + "x" +
                             std::to_string(w.cols) + ": " + describe(p);
    EXPECT_EQ(p.path, w.path) << what;
    EXPECT_EQ(p.pack, 16 / w.elem) << what;
    EXPECT_EQ(static_cast<int>(p.shape.block.x), w.block) << what;
    if (w.path == SoftmaxRowsPath::kWarp) {
      EXPECT_EQ(p.group, w.group) << what;
      EXPECT_EQ(p.packs, w.packs) << what;
    } else {
      EXPECT_EQ(p.cached == w.cols / p.pack, w.whole) << what;  // every whole pack
    }
  }
}

// Few wide rows: a cluster a row where the build has clusters (the largest that keeps rows x
// cluster within the SMs and 1024 packs a block), one block a row otherwise.
TEST(SoftmaxRowsPlan, ClustersForFewWideRows) {
  struct Want {
    int elem;
    int64_t rows, cols;
    int split;
  };
  for (const Want w : {Want{4, 1, 151936, 16}, Want{4, 8, 128256, 16}, Want{4, 32, 250000, 4},
                       Want{4, 66, 65536, 2}, Want{4, 67, 65536, 1}, Want{4, 1, 8191, 1},
                       Want{4, 1, 8188, 1}, Want{4, 1, 8192, 2}, Want{2, 64, 50256, 2},
                       Want{2, 2, 16384, 2}, Want{2, 2, 16383, 1}, Want{2, 1, 262144, 16}}) {
    const SoftmaxRowsPlan p = plan(w.rows, w.cols, w.elem, kktest::h100());
    const std::string what =
        std::to_string(w.rows) + "x" + std::to_string(w.cols) + ": " + describe(p);
    EXPECT_EQ(p.split, w.split) << what;
    EXPECT_EQ(p.path, w.split > 1 ? SoftmaxRowsPath::kCluster : SoftmaxRowsPath::kBlock) << what;
    // without cluster code (a compute_80 build, an A100, a T4): one block a row
    for (const kk::DeviceInfo& d : {kktest::h100_compute80(), kktest::a100(), kktest::t4()}) {
      const SoftmaxRowsPlan q = plan(w.rows, w.cols, w.elem, d);
      EXPECT_EQ(q.path, SoftmaxRowsPath::kBlock) << what;
      EXPECT_EQ(q.split, 1) << what;
    }
  }
  // portable clusters only (plan_and_launch's second plan): at most 8
  kk::DeviceInfo d = kktest::h100();
  d.nonportable_clusters = false;
  EXPECT_EQ(plan(1, 151936, 4, d).split, 8);
}

// Packs only where every operand's row r sits at the same offset within 16 bytes (the same
// pointer offset and row-stride offset): then any offset and any width. (The forward's rule,
// plan_softmax's: softmax_plan_test.)
TEST(SoftmaxRowsPlan, PacksWhereEveryOperandsRowsSitAlike) {
  const kk::DeviceInfo d = kktest::h100();
  using kk::Alignment;
  const auto bwd = [](int e, int y_off, int64_t ld_y, int dy_off, int64_t ld_dy, int dx_off,
                      int64_t ld_dx) {
    return kk::softmax_rows_layout(e, Alignment(y_off), ld_y, Alignment(dx_off), ld_dx,
                                   Alignment(dy_off), ld_dy);
  };
  const auto pack = [&](int e, kk::SoftmaxRowsLayout at) { return plan(64, 1000, e, d, at).pack; };
  EXPECT_EQ(pack(2, bwd(2, 6, 1000, 6, 1000, 6, 1000)), 8);
  EXPECT_EQ(pack(2, bwd(2, 6, 1000, 6, 1008, 6, 1000)), 8);
  EXPECT_EQ(pack(2, bwd(2, 0, 1000, 2, 1000, 0, 1000)), 1);
  EXPECT_EQ(pack(2, bwd(2, 0, 1000, 0, 1004, 0, 1000)), 1);
  EXPECT_EQ(pack(4, bwd(4, 0, 1024, 0, 1000, 0, 1028)), 4);
  EXPECT_EQ(pack(4, bwd(4, 0, 1001, 0, 1001, 0, 1001)), 4);  // rows at 4 offsets
  EXPECT_EQ(pack(4, bwd(4, 8, 1001, 8, 1005, 8, 1009)), 4);
  EXPECT_EQ(pack(4, bwd(4, 0, 1001, 0, 1001, 0, 1000)), 1);  // strides differ
  EXPECT_EQ(pack(4, bwd(4, 4, 1024, 4, 1024, 0, 1024)), 1);  // pointers differ
}

// A row that fits shared memory is read once (bytes = 3 streams: y, dy, dx); a wider one's
// uncached part is read twice and priced so.
TEST(SoftmaxRowsPlan, BytesArePricedByStreams) {
  const kk::DeviceInfo d = kktest::h100();
  for (const int elem : {4, 2}) {
    for (const int64_t cols : {int64_t{100}, int64_t{4096}, int64_t{32000}, int64_t{262144}}) {
      const int64_t rows = 64;
      const double elems = double(rows) * double(cols) * elem;
      const SoftmaxRowsPlan p = plan(rows, cols, elem, d);
      const int64_t vp = cols / p.pack;
      const int64_t past = p.path == SoftmaxRowsPath::kWarp
                               ? 0
                               : std::max<int64_t>(0, cols - int64_t{p.split} * p.cached * p.pack);
      EXPECT_DOUBLE_EQ(p.bytes,
                       elems * (kInputs + 1) + double(rows) * double(past) * elem * kInputs)
          << cols << ": " << describe(p);
      if (p.path == SoftmaxRowsPath::kBlock && p.cached < vp)
        EXPECT_GT(p.bytes, elems * (kInputs + 1));
    }
  }
}

// Invariants over shapes x alignments x element sizes x devices, and the table: every plan an
// entry, every entry planned.
TEST(SoftmaxRowsPlan, InvariantsAndEveryPlanIsAnEntry) {
  const int64_t sizes[] = {
      1,     2,     3,     4,     5,     7,      8,      9,      15,      16,          17,   31,
      32,    33,    63,    64,    65,    127,    128,    129,    255,     256,         257,  509,
      512,   513,   1000,  1024,  1025,  2048,   2049,   4096,   4097,    8191,        8192, 8193,
      10007, 16384, 32000, 50257, 65536, 100003, 151936, 262144, 1048576, 2147483659LL};
  const int offsets[] = {0, 2, 4, 8, 12, 6};
  kktest::PlannedEntries planned(kk::kSoftmaxRowsConfigs);
  for (const auto& dev : kktest::all_devices()) {
    const kk::DeviceInfo& d = dev.info;
    for (const int elem : {4, 2}) {
      const kk::ConfigRange range = kk::softmax_rows_configs_of(elem);
      for (const int64_t rows : sizes) {
        for (const int64_t cols : sizes) {
          if (rows > (int64_t{1} << 40) / cols) continue;
          for (const int off : offsets) {
            for (const bool mismatched : {false, true}) {
              if (off % elem) continue;
              // contiguous rows at offset `off`, or operands at different offsets
              const kk::SoftmaxRowsLayout at{kk::Alignment(off), kk::Alignment(cols * elem),
                                             !mismatched};
              const SoftmaxRowsPlan p = plan(rows, cols, elem, d, at);
              const std::string what = std::string(dev.name) + " " + std::to_string(rows) + "x" +
                                       std::to_string(cols) + " elem=" + std::to_string(elem) +
                                       " off=" + std::to_string(off) + ": " + describe(p);
              ASSERT_GE(planned.count(kk::softmax_rows_config(p, elem), range.begin, range.end), 0)
                  << what;
              ASSERT_EQ(p.pack, mismatched ? 1 : 16 / elem) << what;
              ASSERT_GE(p.shape.grid.x, 1u) << what;
              ASSERT_LE(p.shape.block.x, static_cast<unsigned>(d.max_threads_per_block)) << what;
              ASSERT_LE(p.shape.smem, static_cast<size_t>(d.smem_per_block_optin)) << what;
              ASSERT_GE(p.blocks_per_sm, 1) << what;
              // packs a row spans (its partial head and tail included; rows off the 16-byte
              // grid: any offset), whole packs at least and at most
              const bool on_grid = off == 0 && (cols * elem) % 16 == 0;
              const int64_t vp =
                  on_grid ? (cols + p.pack - 1) / p.pack : (cols + 2 * p.pack - 2) / p.pack;
              const int64_t whole_min =
                  on_grid ? cols / p.pack : std::max<int64_t>(0, cols - p.pack + 1) / p.pack;
              const int64_t whole_max = cols / p.pack;
              if (p.path == SoftmaxRowsPath::kWarp) {
                // the group's lanes hold the row; a lane at most 16 floats of an input
                ASSERT_GE(int64_t{p.group} * p.packs, vp) << what;
                ASSERT_LE(p.pack * p.packs, 16) << what;
                ASSERT_EQ(p.shape.smem, 0u) << what;
              } else if (p.path == SoftmaxRowsPath::kCluster) {
                // a cluster of 2..max_cluster blocks a row, every block resident, its share
                // of the whole packs cached where it fits
                ASSERT_TRUE(d.clusters()) << what;
                ASSERT_GE(p.split, 2) << what;
                ASSERT_LE(p.split, d.max_cluster()) << what;
                ASSERT_EQ(static_cast<int>(p.shape.cluster.x), p.split) << what;
                ASSERT_EQ(int64_t{p.shape.grid.x}, rows * p.split) << what;
                ASSERT_LE(rows * p.split, d.sm_count) << what;
                ASSERT_GE(whole_min / p.split, 1024) << what;
                const int64_t share = (whole_max + p.split - 1) / p.split;
                ASSERT_LE(p.cached, share) << what;
                ASSERT_EQ(static_cast<int64_t>(p.shape.smem),
                          kk::detail::softmax_rows_scratch_bytes(p.shape.block.x) +
                              p.cached * kInputs * p.pack * elem)
                    << what;
                if (kk::detail::softmax_rows_scratch_bytes(p.shape.block.x) +
                        share * kInputs * p.pack * elem <=
                    d.smem_per_block_optin)
                  ASSERT_EQ(p.cached, share) << what;
              } else {
                ASSERT_EQ(p.split, 1) << what;
                ASSERT_EQ(p.shape.cluster.x, 1u) << what;
                ASSERT_LE(p.cached, whole_max) << what;
                ASSERT_GE(p.cached, 0) << what;
                ASSERT_LE(int64_t{p.shape.grid.x}, rows) << what;
                ASSERT_EQ(static_cast<int64_t>(p.shape.smem),
                          kk::detail::softmax_rows_scratch_bytes(p.shape.block.x) +
                              p.cached * kInputs * p.pack * elem)
                    << what;
                // a row that fits one block's shared memory is held whole
                if (kk::detail::softmax_rows_scratch_bytes(p.shape.block.x) +
                        whole_max * kInputs * p.pack * elem <=
                    d.smem_per_block_optin)
                  ASSERT_EQ(p.cached, whole_max) << what;
              }
            }
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe_config, "no shape plans");
  EXPECT_GT(planned.plans(), 100000);
}

TEST(SoftmaxRowsConfigs, EachElementSizeTogetherNoDuplicates) {
  kktest::expect_ranges_tile(std::size(kk::kSoftmaxRowsConfigs),
                             {kk::softmax_rows_configs_of(4), kk::softmax_rows_configs_of(2)});
  kktest::expect_distinct_entries(kk::kSoftmaxRowsConfigs, describe_config);
}

// ---------------------------------------------------------------------------------------
// Argument checks (pure: the pointers are never dereferenced).

TEST(SoftmaxRowsArgs, LeadingDimensionForward) {
  alignas(16) static float buf[256];
  const float* in = buf;
  float* out = buf + 128;
  EXPECT_TRUE(kk::softmax_args_ok(in, 10, out, 8, 4, 8));       // 3 x 10 + 8 = 38 <= 128
  EXPECT_TRUE(kk::softmax_args_ok(in, 10, buf + 0, 10, 4, 8));  // in place, same ld
  EXPECT_FALSE(kk::softmax_args_ok(in, 10, buf + 0, 8, 4, 8));  // same pointer, other ld
  EXPECT_FALSE(kk::softmax_args_ok(in, 7, out, 8, 4, 8));       // ld < cols
  EXPECT_FALSE(kk::softmax_args_ok(in, 8, out, 7, 4, 8));
  EXPECT_FALSE(kk::softmax_args_ok(in, 40, buf + 100, 8, 4, 8));  // spans overlap (0..128)
  EXPECT_TRUE(kk::softmax_args_ok(in, 40, buf + 128, 8, 4, 8));
  EXPECT_TRUE(kk::softmax_args_ok<float>(nullptr, 0, nullptr, 0, 0, 8));  // empty
  EXPECT_FALSE(kk::softmax_args_ok<float>(nullptr, 8, out, 8, 4, 8));
  EXPECT_FALSE(kk::softmax_args_ok(in, int64_t{1} << 62, out, 8, 4, 8));  // span overflows
  EXPECT_FALSE(kk::softmax_args_ok(in, 8, out, 8, -1, 8));
  const auto* bytes = reinterpret_cast<const char*>(buf);
  EXPECT_FALSE(kk::softmax_args_ok(reinterpret_cast<const float*>(bytes + 2), 8, out, 8, 4, 8));
}

TEST(SoftmaxRowsArgs, Backward) {
  alignas(16) static float buf[512];
  const float* y = buf;
  const float* dy = buf + 128;
  float* dx = buf + 256;
  EXPECT_TRUE(kk::softmax_backward_args_ok(y, 8, dy, 8, dx, 8, 4, 8));
  EXPECT_TRUE(kk::softmax_backward_args_ok(y, 8, dy, 8, buf + 128, 8, 4, 8));   // dx == dy
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 8, buf + 128, 9, 4, 8));  // other ld
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 8, buf + 0, 8, 4, 8));    // dx == y
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 8, buf + 20, 8, 4, 8));   // overlaps y
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 8, buf + 129, 8, 4, 8));  // part of dy
  EXPECT_TRUE(kk::softmax_backward_args_ok(y, 8, y, 8, dx, 8, 4, 8));  // y and dy may overlap
  EXPECT_TRUE(kk::softmax_backward_args_ok(y, 30, dy, 30, dx, 60, 4, 8));
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 7, dy, 8, dx, 8, 4, 8));  // ld < cols
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 7, dx, 8, 4, 8));
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 8, dx, 7, 4, 8));
  EXPECT_FALSE(kk::softmax_backward_args_ok<float>(nullptr, 8, dy, 8, dx, 8, 4, 8));
  EXPECT_FALSE(kk::softmax_backward_args_ok<float>(y, 8, nullptr, 8, dx, 8, 4, 8));
  EXPECT_FALSE(kk::softmax_backward_args_ok<float>(y, 8, dy, 8, nullptr, 8, 4, 8));
  EXPECT_TRUE(kk::softmax_backward_args_ok<float>(nullptr, 0, nullptr, 0, nullptr, 0, 0, 0));
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 8, dx, 8, -1, 8));
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, dy, 8, dx, 8, 4, -1));
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, int64_t{1} << 40, dy, int64_t{1} << 40, dx,
                                            int64_t{1} << 40, int64_t{1} << 40, 8));
  const auto* bytes = reinterpret_cast<const char*>(buf);
  EXPECT_FALSE(kk::softmax_backward_args_ok(y, 8, reinterpret_cast<const float*>(bytes + 514), 8,
                                            dx, 8, 4, 8));
  EXPECT_FALSE(kk::softmax_backward_args_ok(
      reinterpret_cast<const __half*>(bytes + 1), 8, reinterpret_cast<const __half*>(bytes + 512),
      8, reinterpret_cast<const __half*>(bytes + 1024), 8, 4, 8));
}

}  // namespace
