// SPDX-License-Identifier: Apache-2.0
// plan_reduce on the host (no GPU): the expected plan for a table of sizes x devices, and
// invariants over many sizes, types and devices: a legal grid, every pack read exactly once
// (the kernel's loop simulated), one wave at most, the workspace bound covering every plan.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/reduce/reduce.cuh"

namespace {

using kernelkit::BlockCombine;
using kernelkit::DeviceInfo;
using kernelkit::ReducePlan;

kernelkit::DeviceInfo device(const std::string& name) {
  for (const auto& d : kktest::all_devices())
    if (name == d.name) return d.info;
  ADD_FAILURE() << "no device " << name;
  return {};
}

TEST(ReducePlan, ExpectedPlans) {
  constexpr BlockCombine kNone = BlockCombine::kNone, kGrid = BlockCombine::kGrid,
                         kSecondKernel = BlockCombine::kSecondKernel,
                         kCluster = BlockCombine::kCluster;
  struct Case {
    const char* device;
    bool cooperative;  // d.cooperative_launch (false: what plan_and_launch re-plans with)
    int64_t n;
    int in_bytes;
    int split;
    BlockCombine combine;
  };
  // One block when n fits one tile (2048 packs); else one block per tile up to one wave of 4
  // blocks of 256 threads per SM (H100 528, A100 432, L4 232, T4 160): 2..8 blocks as one
  // cluster where the kernels have cluster code (H100 sm_90 build), else combined in the
  // same cooperative launch, or by a second kernel where no cooperative grid can be
  // launched.
  const Case cases[] = {
      {"H100", true, 1, 4, 1, kNone},
      {"H100", true, 1024, 4, 1, kNone},
      {"H100", true, 8192, 4, 1, kNone},
      {"H100", true, 8193, 4, 2, kCluster},
      {"H100", true, 16384, 4, 2, kCluster},
      {"H100", true, 57345, 4, 8, kCluster},
      {"H100", true, 65536, 4, 8, kCluster},
      {"H100", true, 131072, 2, 8, kCluster},
      {"H100", true, 131073, 2, 9, kGrid},
      {"H100", true, 32768, 8, 8, kCluster},
      {"H100", true, 32769, 8, 9, kGrid},
      {"H100", true, 65537, 4, 9, kGrid},
      {"H100", true, 1048576, 4, 128, kGrid},  // one tile of 256 x 8 packs a block
      {"H100", true, 1000003, 4, 123, kGrid},
      {"H100", true, 4194304, 4, 512, kGrid},
      {"H100", true, 16777216, 4, 528, kGrid},
      {"H100", true, 268435456, 4, 528, kGrid},
      {"H100", true, 100000007, 4, 528, kGrid},
      {"H100", true, 1048576, 8, 256, kGrid},
      {"H100", true, 16777216, 2, 528, kGrid},
      {"H100", true, 16384, 2, 1, kNone},
      {"H100", false, 65536, 4, 8, kCluster},
      {"H100", false, 65537, 4, 9, kSecondKernel},
      {"H100", false, 1048576, 4, 128, kSecondKernel},
      {"H100", false, 16777216, 4, 528, kSecondKernel},
      {"H100-compute80", true, 65536, 4, 8, kGrid},
      {"H100-compute80", true, 16777216, 4, 528, kGrid},
      {"H100-compute80", false, 8193, 4, 2, kSecondKernel},
      {"A100", true, 16777216, 4, 432, kGrid},
      {"A100", true, 65536, 4, 8, kGrid},
      {"A100", false, 16777216, 4, 432, kSecondKernel},
      {"L4", true, 16777216, 4, 232, kGrid},
      {"T4", true, 16777216, 4, 160, kGrid},
      {"T4", true, 1048576, 8, 160, kGrid},
      {"T4", false, 1048576, 8, 160, kSecondKernel},
  };
  for (const auto& c : cases) {
    DeviceInfo d = device(c.device);
    d.cooperative_launch = c.cooperative;
    const ReducePlan p = kernelkit::plan_reduce(c.n, c.in_bytes, 4, SIZE_MAX, d);
    const std::string label = std::string(c.device) + (c.cooperative ? "" : " no-coop") +
                              " n=" + std::to_string(c.n) + " bytes=" + std::to_string(c.in_bytes);
    EXPECT_EQ(p.split, c.split) << label;
    EXPECT_EQ(p.combine, c.combine) << label;
    EXPECT_EQ(p.pack, 16 / c.in_bytes) << label;
    EXPECT_EQ(p.unroll, kernelkit::detail::kReduceUnroll) << label;
    EXPECT_EQ(p.shape.grid.x, static_cast<unsigned>(c.split)) << label;
    EXPECT_EQ(p.shape.block.x, 256u) << label;
    EXPECT_EQ(p.shape.is_cluster(), c.combine == kCluster) << label;
    if (c.combine == kCluster)
      EXPECT_EQ(p.shape.cluster.x, static_cast<unsigned>(c.split)) << label;
    EXPECT_FALSE(p.shape.overlap_previous) << label;
    EXPECT_EQ(p.shape.cooperative, c.combine == kGrid) << label;
    if (c.combine == kSecondKernel) {
      EXPECT_EQ(p.combine_shape.grid.x, 1u) << label;
      EXPECT_EQ(p.combine_shape.block.x, 256u) << label;
      // the combine kernel overlaps the split kernel's tail only where it was compiled with
      // the wait (sm_90 code on an sm_90 device)
      EXPECT_EQ(p.combine_shape.overlap_previous, std::string(c.device) == "H100") << label;
    } else {
      EXPECT_FALSE(p.combine_shape.overlap_previous) << label;
    }
  }
}

// The same H100 without cluster launches (what plan_and_launch re-plans with when the
// cluster cannot be resident): the cooperative grid, the same split.
TEST(ReducePlan, NoClusterFallback) {
  DeviceInfo d = kktest::h100();
  d.cluster_launch = false;
  for (int64_t n : {8193, 65536}) {
    const ReducePlan p = kernelkit::plan_reduce(n, 4, 4, SIZE_MAX, d);
    const ReducePlan c = kernelkit::plan_reduce(n, 4, 4, SIZE_MAX, kktest::h100());
    EXPECT_EQ(p.combine, BlockCombine::kGrid) << n;
    EXPECT_EQ(c.combine, BlockCombine::kCluster) << n;
    EXPECT_EQ(p.split, c.split) << n;
    EXPECT_FALSE(p.shape.is_cluster()) << n;
  }
}

// How many times the split kernel reads each pack of a row of `packs` packs with `split`
// blocks: its loop (full tiles, then one partial tile) replayed on the host.
std::vector<int> reads_per_pack(int64_t packs, int split) {
  constexpr int kB = kernelkit::detail::kReduceBlock, kU = kernelkit::detail::kReduceUnroll;
  std::vector<int> reads(packs, 0);
  for (int s = 0; s < split; ++s) {
    for (int t = 0; t < kB; ++t) {
      const int64_t stride = int64_t{split} * kB * kU;
      const int64_t last_full = packs - int64_t{kU - 1} * kB;
      int64_t i = int64_t{s} * kB * kU + t;
      for (; i < last_full; i += stride)
        for (int j = 0; j < kU; ++j)
          ++reads[i + j * kB];
      for (int j = 0; j < kU; ++j)
        if (i + j * kB < packs) ++reads[i + j * kB];
    }
  }
  return reads;
}

TEST(ReducePlan, Invariants) {
  const std::vector<int64_t> sizes = {0,
                                      1,
                                      2,
                                      31,
                                      32,
                                      33,
                                      1000,
                                      8191,
                                      8192,
                                      8193,
                                      8200,
                                      65535,
                                      65536,
                                      99991,
                                      1 << 20,
                                      1000003,
                                      4194305,
                                      1 << 24,
                                      100000007,
                                      int64_t{1} << 31,
                                      (int64_t{1} << 33) + 5};
  for (const auto& [name, dev] : kktest::all_devices()) {
    const int64_t wave = kernelkit::detail::reduce_wave(dev);
    EXPECT_GE(wave, 1) << name;
    EXPECT_LE(wave, kernelkit::kReduceMaxSplit) << name;
    EXPECT_EQ(wave, int64_t{dev.sm_count} * 4) << name;
    for (bool cooperative : {true, false}) {
      DeviceInfo d = dev;
      d.cooperative_launch = cooperative;
      for (int in_bytes : {1, 2, 4, 8}) {
        for (int acc_bytes : {4, 8}) {
          for (int64_t n : sizes) {
            const std::string label =
                std::string(name) + (cooperative ? "" : " no-coop") + " n=" + std::to_string(n) +
                " in=" + std::to_string(in_bytes) + " acc=" + std::to_string(acc_bytes);
            const ReducePlan p = kernelkit::plan_reduce(n, in_bytes, acc_bytes, SIZE_MAX, d);
            const int64_t packs = (n + p.pack - 1) / p.pack;
            // a kernel launch_reduce instantiates (reduce takes 2-, 4- and 8-byte types)
            if (in_bytes > 1) {
              EXPECT_GE(
                  kernelkit::config_index(kernelkit::kReduceConfigs, kernelkit::reduce_config(p)),
                  0)
                  << label;
            }
            EXPECT_GE(p.split, 1) << label;
            EXPECT_LE(p.split, wave) << label;  // one wave: a cooperative grid is resident
            EXPECT_EQ(p.shape.grid.x, static_cast<unsigned>(p.split)) << label;
            EXPECT_LE(static_cast<int>(p.shape.block.x), d.max_threads_per_block) << label;
            EXPECT_EQ(p.split == 1, packs <= kernelkit::kReduceTilePacks) << label;
            // one block per tile at most: every block reads at least one whole tile
            EXPECT_LE(int64_t{p.split - 1} * kernelkit::kReduceTilePacks, packs) << label;
            EXPECT_EQ(p.combine == BlockCombine::kNone, p.split == 1) << label;
            // one launch: a cluster for a few tiles where the kernels have cluster code, a
            // cooperative grid where the device launches them; else a combine kernel
            const bool cluster = d.clusters() && p.split <= kernelkit::detail::kReduceMaxCluster;
            if (p.split > 1) {
              EXPECT_EQ(p.combine, cluster       ? BlockCombine::kCluster
                                   : cooperative ? BlockCombine::kGrid
                                                 : BlockCombine::kSecondKernel)
                  << label;
            }
            EXPECT_EQ(p.shape.cooperative, p.combine == BlockCombine::kGrid) << label;
            EXPECT_EQ(p.combine_shape.grid.x == 1 && p.combine_shape.block.x == 256,
                      p.combine == BlockCombine::kSecondKernel)
                << label;
            // a cluster only as the kCluster combine: one cluster of all split blocks, at
            // most the portable size, never without cluster code
            EXPECT_EQ(p.shape.is_cluster(), p.combine == BlockCombine::kCluster) << label;
            if (p.shape.is_cluster()) {
              EXPECT_TRUE(d.clusters()) << label;
              EXPECT_EQ(p.shape.cluster.x, p.shape.grid.x) << label;
              EXPECT_LE(p.split, kernelkit::detail::kReduceMaxCluster) << label;
            }
            // no programmatic launch of the reading kernel
            EXPECT_FALSE(p.shape.overlap_previous) << label;
            if (p.combine_shape.overlap_previous) EXPECT_TRUE(d.cc_major >= 9 && d.code_arch >= 90);
            // the workspace bound (device-independent) holds every device's partials
            const size_t bound = in_bytes == 4 && acc_bytes == 4
                                     ? kernelkit::reduce_workspace_bytes<float, float>(n)
                                 : in_bytes == 8 && acc_bytes == 8
                                     ? kernelkit::reduce_workspace_bytes<int64_t, int64_t>(n)
                                     : 0;
            if (bound > 0) EXPECT_LE(size_t(p.split) * acc_bytes, bound) << label;
            // a workspace of the bound's size gives the same plan
            if (bound > 0) {
              EXPECT_EQ(kernelkit::plan_reduce(n, in_bytes, acc_bytes, bound, d).split, p.split)
                  << label;
            }
          }
        }
      }
    }
  }
  // every pack read exactly once, for splits and sizes around the tile
  for (int64_t packs : {1, 255, 256, 2047, 2048, 2049, 4096, 5000, 20011}) {
    for (int split : {1, 2, 3, 5, 8}) {
      const auto reads = reads_per_pack(packs, split);
      for (int64_t i = 0; i < packs; ++i) {
        ASSERT_EQ(reads[i], 1) << "pack " << i << " of " << packs << ", split " << split;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// The table of kernel configurations.

std::string describe(const kernelkit::ReduceConfig& c) {
  return "pack=" + std::to_string(c.pack) +
         " combine=" + std::to_string(static_cast<int>(c.combine));
}

TEST(ReduceConfigs, EachPackTogetherNoDuplicates) {
  kktest::expect_ranges_tile(std::size(kernelkit::kReduceConfigs),
                             {kernelkit::reduce_configs_of(8), kernelkit::reduce_configs_of(4),
                              kernelkit::reduce_configs_of(2)});
  kktest::expect_distinct_entries(kernelkit::kReduceConfigs, describe);
}

// Plans over sizes (tiny, odd, prime, around the tile and the cluster limit, past 2^31) x
// devices (the four GPUs and the H100's compute_80 build, each also without cooperative
// launches and without clusters, as plan_and_launch plans again) x workspace sizes x element
// and accumulator sizes: each is an entry of its pack's range of kReduceConfigs (what
// launch_reduce can launch), and every entry is some call's plan. plan_reduce takes no
// alignment: the kernel peels the input's head itself, whatever its offset.
TEST(ReduceConfigs, EveryPlanIsAnEntryAndEveryEntryIsPlanned) {
  const int64_t sizes[] = {0,
                           1,
                           2,
                           3,
                           5,
                           7,
                           8,
                           31,
                           32,
                           33,
                           127,
                           1000,
                           2047,
                           4093,
                           8191,
                           8192,
                           8193,
                           16384,
                           16387,
                           32768,
                           32769,
                           57345,
                           65535,
                           65536,
                           65537,
                           99991,
                           131072,
                           131073,
                           262147,
                           1 << 20,
                           1000003,
                           4194305,
                           1 << 24,
                           100000007,
                           268435456,
                           int64_t{1} << 31,
                           (int64_t{1} << 31) + 11,
                           (int64_t{1} << 33) + 5};
  const size_t workspaces[] = {0, 8, 40, 100, 1000, 4096, 65536, SIZE_MAX};
  std::vector<kktest::NamedDevice> devices;
  for (const auto& d : kktest::all_devices()) {
    devices.push_back(d);
    kernelkit::DeviceInfo no_coop = d.info, no_cluster = d.info;
    no_coop.cooperative_launch = false;
    no_cluster.cluster_launch = false;
    devices.push_back({d.name, no_coop});
    devices.push_back({d.name, no_cluster});
  }
  kktest::PlannedEntries planned(kernelkit::kReduceConfigs);
  for (const auto& dev : devices) {
    for (int in_bytes : {2, 4, 8}) {
      const kernelkit::ConfigRange r = kernelkit::reduce_configs_of(16 / in_bytes);
      for (int acc_bytes : {4, 8}) {
        for (size_t ws : workspaces) {
          for (int64_t n : sizes) {
            const ReducePlan p = kernelkit::plan_reduce(n, in_bytes, acc_bytes, ws, dev.info);
            const kernelkit::ReduceConfig c = kernelkit::reduce_config(p);
            const int i = planned.count(c, r.begin, r.end);
            ASSERT_GE(i, 0) << dev.name << " n=" << n << " in=" << in_bytes << " acc=" << acc_bytes
                            << " ws=" << ws << ": " << describe(c);
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe, "no call plans");
  EXPECT_GT(planned.plans(), 10000);
}

// A smaller workspace than the bound never makes the plan use more partials than it holds;
// reduce_args_ok refuses it anyway, but the plan alone stays within what it is given.
TEST(ReducePlan, WorkspaceLimitsSplit) {
  const DeviceInfo d = kktest::h100();
  EXPECT_EQ(kernelkit::plan_reduce(1 << 24, 4, 4, 40, d).split, 10);
  EXPECT_EQ(kernelkit::plan_reduce(1 << 24, 4, 8, 40, d).split, 5);
  EXPECT_EQ(kernelkit::plan_reduce(1 << 24, 4, 4, 0, d).split, 1);
}

// The workspace covers every grid the plan may pick and grows with n (these assertions
// were DeviceReduceHost.WorkspaceBytes).
TEST(ReducePlan, WorkspaceBytes) {
  EXPECT_EQ(kernelkit::reduce_workspace_bytes<float>(-3), 0u);
  EXPECT_EQ(kernelkit::reduce_workspace_bytes<float>(0), 0u);
  // one tile (kReduceTilePacks packs) is one block that writes out: no workspace
  constexpr int64_t kTile = kernelkit::kReduceTilePacks;
  EXPECT_EQ(kernelkit::reduce_workspace_bytes<float>(1), 0u);
  EXPECT_EQ(kernelkit::reduce_workspace_bytes<float>(4 * kTile), 0u);
  EXPECT_EQ((kernelkit::reduce_workspace_bytes<__half, float>(8 * kTile)), 0u);
  EXPECT_GT(kernelkit::reduce_workspace_bytes<float>(4 * kTile + 1), 0u);
  EXPECT_GT((kernelkit::reduce_workspace_bytes<__half, float>(8 * kTile + 1)), 0u);
  EXPECT_LE(kernelkit::reduce_workspace_bytes<float>(int64_t{1} << 40),
            kernelkit::kReduceMaxSplit * sizeof(float));
  EXPECT_EQ((kernelkit::reduce_workspace_bytes<__half, float>(int64_t{1} << 28)),
            kernelkit::kReduceMaxSplit * sizeof(float));
  EXPECT_EQ((kernelkit::reduce_workspace_bytes<int32_t, int64_t>(int64_t{1} << 28)),
            kernelkit::kReduceMaxSplit * sizeof(int64_t));
  // half accumulates (and keeps partials) in float
  EXPECT_EQ((kernelkit::reduce_workspace_bytes<__half, __half>(int64_t{1} << 28)),
            kernelkit::kReduceMaxSplit * sizeof(float));
  const DeviceInfo h100 = kktest::h100();
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{1000003}, int64_t{1} << 24, int64_t{1} << 28,
                    (int64_t{1} << 31) + 1}) {
    const int grid = kernelkit::plan_reduce(n, 4, 4, SIZE_MAX, h100).split;
    EXPECT_GE(grid, 1);
    EXPECT_LE(grid, 132 * kernelkit::detail::kReduceMinBlocks);
    const size_t bytes = kernelkit::reduce_workspace_bytes<float>(n);
    EXPECT_LE(grid > 1 ? static_cast<size_t>(grid) * sizeof(float) : 0, bytes);
    EXPECT_EQ(grid == 1, bytes == 0) << n;
  }
  EXPECT_EQ(kernelkit::plan_reduce(int64_t{1} << 24, 4, 4, SIZE_MAX, h100).split, 528);
}

// Argument checks on the host (no launch happens for a refused call).
TEST(ReducePlan, ArgsOk) {
  alignas(16) static float buf[16384];
  alignas(16) static unsigned char ws[8192];
  float* in = buf;
  // within one tile no workspace is read: none, or any, passes
  const int64_t small = 3000;
  EXPECT_EQ((kernelkit::reduce_workspace_bytes<float, float>(small)), 0u);
  EXPECT_TRUE(kernelkit::reduce_args_ok(in, small, buf + 4000, nullptr, 0));
  EXPECT_TRUE(kernelkit::reduce_args_ok(in, small, buf + 4000, ws + 8, 3));
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, small, in + small - 1, nullptr, 0));  // out inside in
  // past one tile
  float* out = buf + 12000;
  const int64_t n = 10000;
  const size_t need = kernelkit::reduce_workspace_bytes<float, float>(n);
  ASSERT_GT(need, 0u);
  EXPECT_TRUE(kernelkit::reduce_args_ok(in, n, out, ws, need));
  EXPECT_TRUE(kernelkit::reduce_args_ok<float>(nullptr, 0, out, nullptr, 0));  // writes init
  EXPECT_FALSE(kernelkit::reduce_args_ok<float>(in, 0, static_cast<float*>(nullptr), ws, need));
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, -1, out, ws, need));
  EXPECT_FALSE((kernelkit::reduce_args_ok<float, float>(nullptr, n, out, ws, need)));
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, n, out, nullptr, need));
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, n, out, ws, need - 1));
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, n, out, ws + 8, need));  // workspace not 16-aligned
  const auto* in_odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(in) + 1);
  EXPECT_FALSE(kernelkit::reduce_args_ok(in_odd, n, out, ws, need));
  auto* out_odd = reinterpret_cast<float*>(reinterpret_cast<char*>(out) + 2);
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, n, out_odd, ws, need));
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, n, in + n - 1, ws, need));  // out inside in
  EXPECT_TRUE(kernelkit::reduce_args_ok(in, n, in + n, ws, need));       // just past in
  auto* ws_as_out = reinterpret_cast<float*>(ws);
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, n, ws_as_out, ws, need));  // out in the workspace
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, n, out, in + 16, need));   // workspace over in
  EXPECT_FALSE(kernelkit::reduce_args_ok(in, INT64_MAX / 2, out, ws, SIZE_MAX));  // bytes overflow
  EXPECT_TRUE(kernelkit::reduce_op_ok(kernelkit::ReduceOp::kMin));
  EXPECT_FALSE(kernelkit::reduce_op_ok(static_cast<kernelkit::ReduceOp>(7)));
}

}  // namespace
