// SPDX-License-Identifier: Apache-2.0
// plan_cross_entropy and plan_cross_entropy_backward on the host (no GPU): the listed shapes on
// an H100, then invariants over shapes x element sizes x reductions x the test devices (and a
// device without cooperative launches): every plan is an entry of kCrossEntropyConfigs, its
// grid is legal (resident where cooperative), its chunks cover each row once and fit the
// workspace, few wide rows use every SM, and every entry is planned. Also the argument checks
// (cross_entropy_args_ok, cross_entropy_backward_args_ok), which are pure as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/loss/cross_entropy.cuh"

namespace kk = kernelkit;
using kk::CrossEntropyConfig;
using kk::CrossEntropyPlan;
using kk::LossReduction;

namespace {

std::string describe_config(const CrossEntropyConfig& c) {
  return std::string(c.backward ? "backward" : "forward") +
         " elem=" + std::to_string(c.elem_bytes) + " pack=" + std::to_string(c.pack) +
         " threads=" + std::to_string(c.threads) + " block=" + std::to_string(c.block);
}

std::string describe(const CrossEntropyPlan& p) {
  return "pack=" + std::to_string(p.pack) + " threads=" + std::to_string(p.threads) +
         " split=" + std::to_string(p.split) + " group=" + std::to_string(p.group) +
         " tasks=" + std::to_string(p.tasks) + " grid=" + std::to_string(p.shape.grid.x) +
         " block=" + std::to_string(p.shape.block.x) +
         " combine=" + std::to_string(static_cast<int>(p.combine));
}

CrossEntropyPlan forward(int64_t rows, int64_t vocab, int elem, LossReduction red,
                         const kk::DeviceInfo& d) {
  const int64_t fewest = kk::cross_entropy_fewest_bytes(rows, vocab, elem, 8, red, true);
  return kk::plan_cross_entropy(rows, vocab, elem, red, fewest, d);
}

CrossEntropyPlan backward(int64_t rows, int64_t vocab, int elem, bool alike, LossReduction red,
                          const kk::DeviceInfo& d) {
  const int64_t fewest = kk::cross_entropy_backward_fewest_bytes(rows, vocab, elem, 8, red);
  return kk::plan_cross_entropy_backward(rows, vocab, elem, alike, 8, red, fewest, d);
}

std::vector<kk::DeviceInfo> devices() {
  std::vector<kk::DeviceInfo> all = {kktest::h100(), kktest::h100_compute80(), kktest::a100(),
                                     kktest::l4(), kktest::t4()};
  kk::DeviceInfo no_coop = kktest::h100();
  no_coop.cooperative_launch = false;
  all.push_back(no_coop);
  return all;
}

const int64_t kRows[] = {1, 2, 3, 7, 16, 33, 100, 131, 132, 264, 500, 1000, 4097, 8192, 32768};
const int64_t kVocabs[] = {1,    2,    7,     31,    100,   127,    513,    1000,   1024,  2049,
                           4096, 8191, 32000, 50257, 65536, 128256, 151936, 200003, 262144};
const LossReduction kReductions[] = {LossReduction::kNone, LossReduction::kSum,
                                     LossReduction::kMean};

}  // namespace

TEST(CrossEntropyPlan, TableEntriesAreDistinctAndGrouped) {
  kktest::expect_distinct_entries(kk::kCrossEntropyConfigs, describe_config);
  kktest::expect_ranges_tile(
      std::size(kk::kCrossEntropyConfigs),
      {kk::cross_entropy_configs_of(false, 4), kk::cross_entropy_configs_of(false, 2),
       kk::cross_entropy_configs_of(true, 4), kk::cross_entropy_configs_of(true, 2)});
}

TEST(CrossEntropyPlan, ListedShapesOnAnH100) {
  const kk::DeviceInfo d = kktest::h100();
  struct Expect {
    int64_t rows, vocab;
    int elem;
    int threads, split;
  };
  // 2 blocks of 512 a SM (64 registers): 264 slots; chunks of at least 128 packs
  const Expect table[] = {
      {8192, 32000, 2, 512, 1},
      {8192, 32000, 4, 512, 1},
      {4096, 128256, 2, 512, 1},
      {32768, 50257, 2, 512, 1},
      {1, 128256, 2, 512, 125},
      {1, 128256, 4, 512, 250},
      {16, 151936, 2, 512, 16},
      {16, 151936, 4, 512, 16},
      {100, 1000, 2, 32, 1},
      // rows of 129-512 packs: a warp a row where the rows fill the warps, else the block of 128
      // (cross_entropy_warp_rows)
      {65536, 2000, 2, 32, 1},
      {2914, 1120, 4, 32, 1},
      {311, 1693, 4, 128, 1},
      {25883, 3761, 4, 128, 1},
  };
  for (const Expect& e : table) {
    const CrossEntropyPlan p = forward(e.rows, e.vocab, e.elem, LossReduction::kMean, d);
    EXPECT_EQ(p.threads, e.threads) << e.rows << "x" << e.vocab << " " << describe(p);
    EXPECT_EQ(p.split, e.split) << e.rows << "x" << e.vocab << " " << describe(p);
    EXPECT_EQ(p.combine, kk::BlockCombine::kGrid) << describe(p);
  }
  // reduction none over enough rows: nothing to finish, one launch without a barrier
  const CrossEntropyPlan none = forward(8192, 32000, 2, LossReduction::kNone, d);
  EXPECT_EQ(none.combine, kk::BlockCombine::kNone);
  EXPECT_FALSE(none.shape.cooperative);
  // the backward: in place (alike) in 16-byte packs, chunks of at most 4 packs a thread
  const CrossEntropyPlan b = backward(4096, 128256, 2, true, LossReduction::kMean, d);
  EXPECT_EQ(b.pack, 8);
  EXPECT_EQ(b.threads, 512);
  EXPECT_EQ(b.split, 8) << describe(b);
  EXPECT_EQ(backward(4096, 128256, 2, false, LossReduction::kMean, d).pack, 1);
  // few rows: as many chunks as fit the 264 slots in one round (16 x 16 = 256, not 16 x 17)
  const CrossEntropyPlan few = backward(16, 151936, 2, true, LossReduction::kMean, d);
  EXPECT_EQ(few.split, 16) << describe(few);
  EXPECT_LE(few.tasks, 264) << describe(few);
}

TEST(CrossEntropyPlan, FewWideRowsUseEverySm) {
  for (const kk::DeviceInfo& d : devices()) {
    for (int elem : {4, 2}) {
      for (int64_t rows : {1, 2, 4, 8}) {
        for (int64_t vocab : {200003, 262144}) {
          const CrossEntropyPlan p = forward(rows, vocab, elem, LossReduction::kMean, d);
          EXPECT_GE(int64_t{p.shape.grid.x}, d.sm_count)
              << rows << "x" << vocab << " elem " << elem << " sms " << d.sm_count << " "
              << describe(p);
          const CrossEntropyPlan b = backward(rows, vocab, elem, true, LossReduction::kMean, d);
          EXPECT_GE(int64_t{b.shape.grid.x} * 2, d.sm_count)
              << rows << "x" << vocab << " backward " << describe(b);
        }
      }
    }
  }
}

// Split rows as the finish meets them: every chunk its own block (one round of the grid); a
// group of threads a row in the finishing block (the main block of 512 after the grid barrier,
// or the second kernel's): split rounded up to a power of two up to a warp (a part a thread),
// past a warp the fewest threads that hold kCrossEntropyFinishUnroll parts each, at least a
// warp, at most the block (H200: groups of split rounded up to 512, with every warp of the
// block through the finish, ran 0.2-0.6 us slower than a warp a row on 1-16 rows); on an H100
// every row's group in one pass of the block of 512 (issue 34: the finish had taken a warp a
// row, its rows one after another).
TEST(CrossEntropyPlan, SplitRowsFinishInOnePass) {
  constexpr int kU = kk::detail::kCrossEntropyFinishUnroll;
  for (const kk::DeviceInfo& d : devices()) {
    for (int elem : {4, 2}) {
      for (int64_t rows = 1; rows <= 300; ++rows) {
        for (int64_t vocab :
             {5399, 8740, 25468, 32021, 57163, 79264, 128256, 209632, 2977308, 22134989}) {
          for (LossReduction red : kReductions) {
            const CrossEntropyPlan p = forward(rows, vocab, elem, red, d);
            const std::string where = std::to_string(rows) + "x" + std::to_string(vocab) +
                                      " elem " + std::to_string(elem) + " " + describe(p);
            if (p.split == 1) {
              EXPECT_EQ(p.group, 1) << where;
              continue;
            }
            EXPECT_LE(p.tasks, int64_t{p.shape.grid.x}) << where;
            EXPECT_EQ(p.shape.block.x, 512u) << where;
            const int block = p.combine == kk::BlockCombine::kGrid
                                  ? static_cast<int>(p.shape.block.x)
                                  : static_cast<int>(p.finish.block.x);
            ASSERT_GE(p.group, 1) << where;
            EXPECT_EQ(p.group & (p.group - 1), 0) << where << " a power of two";
            EXPECT_LE(p.group, block) << where;
            if (p.split <= 32) {
              // a part a thread, the fewest threads that do it
              EXPECT_GE(p.group, p.split) << where;
              EXPECT_LT(p.group / 2, p.split) << where;
            } else {
              // a warp or more, at most kU parts a thread (one batch of loads) unless the
              // group is the block, the fewest threads that do it
              EXPECT_GE(p.group, 32) << where;
              if (p.group < block) EXPECT_LE((p.split + p.group - 1) / p.group, kU) << where;
              if (p.group > 32) EXPECT_GT((p.split + p.group / 2 - 1) / (p.group / 2), kU) << where;
            }
            if (d.sm_count != kktest::h100().sm_count || !d.cooperative_launch) continue;
            EXPECT_LE(rows * p.group, 512) << where << " one pass";
          }
        }
      }
    }
  }
}

// The finishing group of listed H100 plans (H200 cases: bench/NOTES.md "cross_entropy").
TEST(CrossEntropyPlan, FinishGroupOnAnH100) {
  struct Case {
    int64_t rows, vocab;
    int elem, split, group;
  };
  const Case cases[] = {
      {91, 5399, 4, 2, 2},     {95, 32021, 2, 2, 2},       {69, 8740, 4, 3, 4},
      {53, 50553, 2, 4, 4},    {40, 112427, 2, 6, 8},      {29, 25468, 2, 9, 16},
      {16, 151936, 4, 16, 16}, {13, 79264, 2, 20, 32},     {9, 84650, 4, 29, 32},
      {5, 38317, 4, 52, 32},   {5, 2977308, 2, 52, 32},    {1, 128256, 2, 125, 32},
      {1, 128256, 4, 250, 64}, {1, 22134989, 2, 264, 128}, {2, 477530368, 2, 132, 64},
  };
  for (const Case& c : cases) {
    const CrossEntropyPlan p =
        forward(c.rows, c.vocab, c.elem, LossReduction::kMean, kktest::h100());
    EXPECT_EQ(p.split, c.split) << c.rows << "x" << c.vocab << " " << describe(p);
    EXPECT_EQ(p.group, c.group) << c.rows << "x" << c.vocab << " " << describe(p);
  }
}

TEST(CrossEntropyPlan, EveryPlanIsALegalTableEntryAndEveryEntryIsPlanned) {
  kktest::PlannedEntries<CrossEntropyConfig, std::size(kk::kCrossEntropyConfigs)> planned(
      kk::kCrossEntropyConfigs);
  for (const kk::DeviceInfo& d : devices()) {
    for (int elem : {4, 2}) {
      for (int64_t rows : kRows) {
        for (int64_t vocab : kVocabs) {
          for (LossReduction red : kReductions) {
            const std::string where = std::to_string(rows) + "x" + std::to_string(vocab) +
                                      " elem " + std::to_string(elem) + " red " +
                                      std::to_string(static_cast<int>(red)) + " sms " +
                                      std::to_string(d.sm_count);
            // forward
            const CrossEntropyPlan p = forward(rows, vocab, elem, red, d);
            const kk::ConfigRange fr = kk::cross_entropy_configs_of(false, elem);
            ASSERT_GE(planned.count(kk::cross_entropy_config(p, false, elem), fr.begin, fr.end), 0)
                << where << " " << describe(p);
            const int block = static_cast<int>(p.shape.block.x);
            ASSERT_GE(p.split, 1);
            EXPECT_EQ(p.tasks, rows * p.split) << where;
            EXPECT_GE(p.shape.grid.x, 1u) << where;
            EXPECT_LT((int64_t{p.shape.grid.x} - 1) * (block / p.threads), p.tasks)
                << where << " no block without a task";
            const int bps = kk::blocks_per_sm(d, block, kk::detail::kCrossEntropyRegs, 0);
            ASSERT_GE(bps, p.blocks_per_sm) << where;
            // a grid of resident blocks (a cooperative one must be; the others are too)
            EXPECT_LE(int64_t{p.shape.grid.x}, int64_t{bps} * d.sm_count) << where;
            const bool finish = p.split > 1 || red != LossReduction::kNone;
            const kk::BlockCombine want = !finish                ? kk::BlockCombine::kNone
                                          : d.cooperative_launch ? kk::BlockCombine::kGrid
                                                                 : kk::BlockCombine::kSecondKernel;
            EXPECT_EQ(p.combine, want) << where;
            EXPECT_EQ(p.shape.cooperative, want == kk::BlockCombine::kGrid) << where;
            // the finishing block's warps that take part: the rows' groups (split) or a thread
            // a block's record, at most the block
            if (finish) {
              const int fb =
                  want == kk::BlockCombine::kGrid ? block : kk::detail::kCrossEntropyFinishBlock;
              const int64_t items = p.split > 1 ? rows * p.group : int64_t{p.shape.grid.x};
              EXPECT_EQ(p.finish_warps, (std::min<int64_t>(items, fb) + 31) / 32) << where;
              EXPECT_GE(p.finish_warps, 1) << where;
              EXPECT_LE(p.finish_warps * 32, fb) << where;
              EXPECT_LE(p.group, fb) << where;
            }
            if (p.split == 1) EXPECT_EQ(p.group, 1) << where;
            // the workspace holds what is parked
            const size_t ws = kk::cross_entropy_workspace_bytes(rows, vocab);
            if (p.split > 1) {
              EXPECT_LE(p.tasks, kk::detail::kCrossEntropyMaxTasks) << where;
              EXPECT_LE(static_cast<size_t>(p.tasks) * 16, ws) << where;
              EXPECT_LE(p.tasks, int64_t{bps} * d.sm_count) << where << " a task a block";
            } else if (finish) {
              EXPECT_LE(static_cast<size_t>(rows) * 4, ws) << where;
              // each block's record (its rows' loss sum and count)
              EXPECT_LE(size_t{p.shape.grid.x} * 16, ws) << where << " a record a block";
            }
            // the chunks of a row at any alignment tile it, each at least a pack
            for (int64_t lead = 0; lead < p.pack; ++lead) {
              int64_t prev = 0;
              for (int j = 1; j <= p.split; ++j) {
                const int64_t c = kk::detail::softmax_chunk_begin(j, p.split, vocab, p.pack, lead);
                ASSERT_GT(c, prev) << where << " chunk " << j << " lead " << lead;
                prev = c;
              }
              ASSERT_EQ(prev, vocab) << where;
            }
            EXPECT_GE(p.bytes, kk::cross_entropy_fewest_bytes(rows, vocab, elem, 8, red, true));
            // backward, both alignments
            for (bool alike : {true, false}) {
              const CrossEntropyPlan b = backward(rows, vocab, elem, alike, red, d);
              const kk::ConfigRange br = kk::cross_entropy_configs_of(true, elem);
              ASSERT_GE(planned.count(kk::cross_entropy_config(b, true, elem), br.begin, br.end), 0)
                  << where << " backward " << describe(b);
              EXPECT_EQ(b.pack, alike ? 16 / elem : 1) << where;
              EXPECT_EQ(b.combine, kk::BlockCombine::kNone);
              EXPECT_FALSE(b.shape.cooperative);
              EXPECT_EQ(b.tasks, rows * b.split) << where;
              const int bb = static_cast<int>(b.shape.block.x);
              EXPECT_LE(
                  int64_t{b.shape.grid.x},
                  int64_t{kk::blocks_per_sm(d, bb, kk::detail::kCrossEntropyRegs, 0)} * d.sm_count)
                  << where;
              for (int64_t lead = 0; lead < b.pack; ++lead) {
                int64_t prev = 0;
                for (int j = 1; j <= b.split; ++j) {
                  const int64_t c =
                      kk::detail::softmax_chunk_begin(j, b.split, vocab, b.pack, lead);
                  ASSERT_GT(c, prev) << where << " backward chunk " << j;
                  prev = c;
                }
                ASSERT_EQ(prev, vocab) << where;
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

TEST(CrossEntropyPlan, WorkspaceBytes) {
  EXPECT_EQ(kk::cross_entropy_workspace_bytes(0, 100), 0u);
  EXPECT_EQ(kk::cross_entropy_workspace_bytes(5, 0), 0u);
  EXPECT_EQ(kk::cross_entropy_workspace_bytes(1, 128256), (128256 / 128 + 1) * 16u);
  EXPECT_EQ(kk::cross_entropy_workspace_bytes(32768, 50257), 32768u * 4);
  EXPECT_EQ(kk::cross_entropy_workspace_bytes(100, 10), 100u * 16);
}

// The argument checks on fake, never dereferenced, addresses.
TEST(CrossEntropyArgs, Forward) {
  using Args = kk::detail::CrossEntropyArgs<float, int64_t>;
  auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  const int64_t rows = 8, vocab = 100;
  const size_t ws = kk::cross_entropy_workspace_bytes(rows, vocab);
  Args good{static_cast<const float*>(at(0x100000)),
            vocab,
            static_cast<const int64_t*>(at(0x200000)),
            rows,
            vocab,
            -100,
            0.1f,
            LossReduction::kNone,
            static_cast<float*>(at(0x300000)),
            static_cast<float*>(at(0x400000)),
            at(0x500000)};
  EXPECT_TRUE(kk::cross_entropy_args_ok(good, ws));
  auto bad = [&](auto edit, size_t bytes) {
    Args a = good;
    edit(a);
    return !kk::cross_entropy_args_ok(a, bytes);
  };
  EXPECT_TRUE(bad([](Args&) {}, ws - 1)) << "workspace too small";
  EXPECT_TRUE(bad([](Args& a) { a.rows = -1; }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.vocab = 0; }, ws)) << "no class";
  EXPECT_TRUE(bad([](Args& a) { a.ld = 99; }, ws)) << "ld < vocab";
  EXPECT_TRUE(bad([](Args& a) { a.smoothing = -0.1f; }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.smoothing = 1.5f; }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.smoothing = NAN; }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.reduction = static_cast<LossReduction>(7); }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.logits = nullptr; }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.target = nullptr; }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.loss = nullptr; }, ws));
  EXPECT_TRUE(bad([](Args& a) { a.workspace = nullptr; }, ws));
  EXPECT_TRUE(bad([&](Args& a) { a.workspace = at(0x500008); }, ws)) << "workspace 16-byte";
  EXPECT_TRUE(bad([&](Args& a) { a.logits = static_cast<const float*>(at(0x100002)); }, ws));
  EXPECT_TRUE(bad([&](Args& a) { a.target = static_cast<const int64_t*>(at(0x200004)); }, ws));
  EXPECT_TRUE(bad([&](Args& a) { a.loss = static_cast<float*>(at(0x100010)); }, ws))
      << "loss over the logits";
  EXPECT_TRUE(bad([&](Args& a) { a.lse = static_cast<float*>(at(0x300010)); }, ws))
      << "lse over the loss";
  EXPECT_TRUE(bad([&](Args& a) { a.lse = static_cast<float*>(at(0x200000)); }, ws))
      << "lse over the targets";
  EXPECT_TRUE(bad([&](Args& a) { a.workspace = at(0x400000); }, ws)) << "workspace over lse";
  EXPECT_TRUE(bad([](Args& a) { a.ld = INT64_MAX / 2; }, ws)) << "span past int64";
  // lse may be null; rows == 0 needs only the loss of sum / mean
  EXPECT_FALSE(bad([](Args& a) { a.lse = nullptr; }, ws));
  EXPECT_FALSE(bad(
      [](Args& a) {
        a.rows = 0, a.logits = nullptr, a.target = nullptr, a.workspace = nullptr;
        a.loss = nullptr;
      },
      0));
  EXPECT_TRUE(bad(
      [](Args& a) {
        a.rows = 0, a.loss = nullptr;
        a.reduction = LossReduction::kMean;
      },
      0));
}

TEST(CrossEntropyArgs, Backward) {
  using Args = kk::detail::CrossEntropyBackwardArgs<__half, int32_t>;
  auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  const int64_t rows = 8, vocab = 100;
  Args good{static_cast<const __half*>(at(0x100000)),
            vocab,
            static_cast<const int32_t*>(at(0x200000)),
            static_cast<const float*>(at(0x300000)),
            static_cast<const float*>(at(0x400000)),
            rows,
            vocab,
            -100,
            0.f,
            LossReduction::kMean,
            static_cast<__half*>(at(0x100000)),
            vocab};
  EXPECT_TRUE(kk::cross_entropy_backward_args_ok(good)) << "in place";
  auto bad = [&](auto edit) {
    Args a = good;
    edit(a);
    return !kk::cross_entropy_backward_args_ok(a);
  };
  EXPECT_FALSE(bad([&](Args& a) { a.dlogits = static_cast<__half*>(at(0x600000)); }));
  EXPECT_TRUE(bad([&](Args& a) { a.dlogits = static_cast<__half*>(at(0x100002)); }))
      << "partial overlap";
  EXPECT_TRUE(bad([&](Args& a) { a.ld_dlogits = 101; })) << "in place with another stride";
  EXPECT_TRUE(bad([&](Args& a) { a.dlogits = static_cast<__half*>(at(0x3FFFF0)); })) << "over lse";
  EXPECT_TRUE(bad([&](Args& a) { a.lse = nullptr; }));
  EXPECT_TRUE(bad([&](Args& a) { a.dloss = nullptr; }));
  EXPECT_TRUE(bad([&](Args& a) { a.dlogits = static_cast<__half*>(at(0x600001)); }));
  EXPECT_TRUE(bad([&](Args& a) { a.vocab = 0; }));
  EXPECT_TRUE(bad([&](Args& a) { a.smoothing = 2.f; }));
  EXPECT_FALSE(bad([&](Args& a) {
    a.rows = 0, a.logits = nullptr, a.dlogits = nullptr, a.lse = nullptr, a.dloss = nullptr;
  }));
}
