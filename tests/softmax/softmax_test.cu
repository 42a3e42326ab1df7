// SPDX-License-Identifier: Apache-2.0
// softmax / log_softmax on the GPU against a float64 reference: every path of the plan
// (rows in registers, a row in a block's shared memory, a cluster per row, a cooperative
// grid in rounds, the two-pass fallback), every type, special values (-inf, all -inf rows,
// NaN rows) in the same cases, in place, pointers off 16-byte alignment (the same offset,
// and different offsets for in and out), nothing written outside the output, strided rows
// (ld > cols: every kernel but the tiles', the gaps between rows left untouched), bad
// arguments, determinism, graph capture, past 2^31 elements (contiguous and strided), and many
// widths from many host threads.
//
// The wide paths are driven at small sizes (so that compute-sanitizer runs stay short) by
// planning for a device with few SMs and little shared memory, then launching that plan on
// the real one (launch_softmax): the plan only asks for less than the GPU has.
// Filters: --gtest_filter=-*Large* leaves out the big and the long tests (sanitizer runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "softmax/softmax_case.cuh"

namespace kk = kernelkit;
using kk::SoftmaxKind;
using kk::SoftmaxPath;
using kktest::DeviceBuffer;
using namespace softmax_test;

namespace {

template <typename T>
class SoftmaxTest : public kktest::GpuTest {};
using Types = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(SoftmaxTest, Types);

// Widths: primes, pack +- 1, powers of two +- 1, the benchmark's; the real device's plan.
constexpr int64_t kSweepCols[] = {
    1,    2,    3,    4,    5,    7,    8,    9,    15,    16,    17,    31,    32,   33,   63,
    64,   65,   96,   127,  128,  129,  255,  256,  257,   500,   1000,  1023,  1024, 1025, 1500,
    2047, 2048, 2049, 3000, 4095, 4097, 8191, 8193, 10007, 16383, 16385, 32000, 50257};

TYPED_TEST(SoftmaxTest, SweepMatchesReference) {
  uint64_t seed = 1;
  int64_t index = 0;
  for (const int64_t cols : kSweepCols) {
    for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{37}}) {
      for (const bool log : {false, true})
        // sanitizer: every 5th case (one or two of each width's six, turning through them)
        if (kktest::sanitize_keep(index++, 5))
          EXPECT_TRUE(run_case<TypeParam>(rows_for(rows, cols), cols, log, kAligned, seed++));
    }
  }
}

// Pointers off 16-byte alignment: the same offset for in and out (packs with a partial head
// and tail a row), different offsets (one element at a time), and in place.
TYPED_TEST(SoftmaxTest, OffsetPointers) {
  uint64_t seed = 200;
  int64_t index = 0;
  const Layout layouts[] = {{1, 1, false}, {3, 3, false}, {1, 0, false},
                            {0, 2, false}, {1, 1, true},  {5, 5, true}};
  for (const auto& l : layouts) {
    for (const int64_t cols : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{33}, int64_t{100},
                               int64_t{1000}, int64_t{1025}, int64_t{4097}, int64_t{50257}}) {
      for (const bool log : {false, true})
        // sanitizer: every 3rd case (each layout with a third of the widths, turning)
        if (kktest::sanitize_keep(index++, 3))
          EXPECT_TRUE(run_case<TypeParam>(rows_for(37, cols), cols, log, l, seed++));
    }
  }
}

TYPED_TEST(SoftmaxTest, InPlace) {
  uint64_t seed = 100;
  for (const int64_t cols :
       {int64_t{3}, int64_t{32}, int64_t{1024}, int64_t{4097}, int64_t{16384}, int64_t{100003}})
    for (const bool log : {false, true})
      EXPECT_TRUE(run_case<TypeParam>(rows_for(37, cols) + 2, cols, log, kInPlace, seed++));
}

// One block per row, the row in shared memory, with the plan's grid lowered to 3 blocks (the
// kernel strides by gridDim.x), so that each block runs 7-8 rows back to back: rows of
// The warp path on the pack grid (rows start on 16-byte boundaries, whole packs: one
// predicated 16-byte load and store a pack) at every lane group and packs a lane the plan
// picks, and the general kernel at the same widths with rows off the grid (shifted pointers,
// one element more; contiguous rows of at most 48 packs off the grid are the tile path's:
// TileRows);
// the grid shrunk to 3 blocks so every warp loops over rows, and rows that leave the last
// groups idle; in place.
TYPED_TEST(SoftmaxTest, WarpRowsOnAndOffThePackGrid) {
  using T = TypeParam;
  constexpr int kPack = 16 / sizeof(T);
  const kk::DeviceInfo d = device();
  uint64_t seed = 7000;
  for (const int64_t vp : {1, 2, 3, 4, 8, 12, 16, 17, 32, 33, 64, 100, 128, 200, 256}) {
    if (vp * kPack > 1024) continue;
    // (vp * kPack + kPack / 2: 2-byte rows on the 8-byte grid, every other row off the
    // 16-byte one)
    for (const int64_t cols : {vp * kPack, vp * kPack + 1, vp * kPack + kPack / 2}) {
      if (cols > 1024) continue;
      for (const Layout& l : {kAligned, kInPlace, Layout{3, 3, false}}) {
        const int64_t rows = rows_for(1001, cols);
        kk::SoftmaxPlan p = plan_for<T>(rows, cols, l, d);
        // a row off the grid spans one pack more when it starts mid-pack: the widest ones
        // leave the warp's lanes (kBlock then); on the grid, and whenever the worst span
        // fits, the warp path is the plan's
        // (2-byte rows on the 8-byte grid: half packs, on the grid too)
        const bool half = sizeof(T) == 2 && cols % (kPack / 2) == 0 && cols <= 1024 &&
                          (kGuard + l.in_shift) % (kPack / 2) == 0;
        const bool on_grid = (cols % kPack == 0 && l.in_shift == 0) || half;
        const bool fits = (cols + 2 * (kPack - 1)) / kPack <=
                          int64_t{kk::kWarpSize} * (kk::detail::kSoftmaxWarpFloats / kPack);
        if (p.path == SoftmaxPath::kTile) {
          ASSERT_FALSE(on_grid) << cols;
          ASSERT_LE((cols + 2 * (kPack - 1)) / kPack, kk::detail::kSoftmaxTileMaxPacks) << cols;
          continue;
        }
        if (p.path != SoftmaxPath::kWarp) {
          ASSERT_FALSE(on_grid || fits) << cols << " path " << int(p.path);
          continue;
        }
        EXPECT_EQ(p.on_grid, on_grid) << cols;
        p.shape.grid.x = 3;
        for (const bool log : {false, true})
          EXPECT_TRUE(run_case<T>(rows, cols, log, l, seed++, Runner{&p}))
              << cols << " group " << p.group << " packs " << p.packs << " on_grid " << p.on_grid;
      }
    }
  }
}

// Short contiguous rows off the pack grid (the tile path, rows of at most kSoftmaxTileMaxPacks
// packs staged through shared memory as 16-byte packs of the flat array): the narrow kernel at
// every width of at most two packs (in on the 16-byte grid: whole packs of rows a lane; in at an
// odd or an even element offset: a row a lane, 2-byte words shared by two rows), and every lane
// shape of kSoftmaxTileShapes at widths around its capacity, rows starting mid-pack (the same
// offset every row, or a different one row by row), in place; row counts that are no multiple of
// the tile's or of a lane's rows (the last tile partial), and the grid shrunk to 3 blocks so that
// blocks loop over tiles (both buffers); softmax and log_softmax with -inf / all -inf / NaN rows,
// against the float64 reference. Wider rows, and 2-byte rows on the 8-byte grid (the warp path's
// 8-byte packs), are not tiles.
TYPED_TEST(SoftmaxTest, TileRows) {
  using T = TypeParam;
  constexpr int64_t kPack = 16 / sizeof(T);
  const kk::DeviceInfo d = device();
  uint64_t seed = 7500;
  int64_t index = 0;
  const kk::ConfigRange range = kk::softmax_configs_of(sizeof(T));
  std::vector<int> runs(range.end - range.begin, 0);  // tile cases run, by entry
  std::vector<int64_t> widths;
  for (int64_t c = 1; c <= 2 * kPack + 2; ++c)
    widths.push_back(c);
  for (const int64_t packs : {3, 4, 6, 8, 12, 16, 24, 32, 48, 49})
    for (const int64_t c : {(packs - 1) * kPack + 1, packs * kPack - 1, packs * kPack + 1})
      if (c > 2 * kPack + 2) widths.push_back(c);
  for (const int64_t cols : widths) {
    for (const Layout& l : {kAligned, Layout{1, 1, false}, Layout{3, 3, false}, Layout{2, 2, false},
                            Layout{1, 1, true}}) {
      const int64_t rows = rows_for(3001, cols);
      kk::SoftmaxPlan p = plan_for<T>(rows, cols, l, d);
      const int64_t offset = (kGuard + l.in_shift) % kPack;  // elements into its pack
      // on the pack grid, or (2-byte rows) every row on the 8-byte grid: the warp path
      const bool grid16 = offset == 0 && cols % kPack == 0;
      const bool grid8 = sizeof(T) == 2 && offset % (kPack / 2) == 0 && cols % (kPack / 2) == 0;
      int64_t g = kPack;  // the rows' offsets: offset + multiples of gcd(cols, kPack)
      while (cols % g != 0)
        g /= 2;
      const int64_t span = (cols + offset % g + kPack - g + kPack - 1) / kPack;
      if (grid16 || grid8 || (cols > 2 * kPack && span > kk::detail::kSoftmaxTileMaxPacks)) {
        EXPECT_NE(int(p.path), int(SoftmaxPath::kTile)) << cols << " +" << l.in_shift;
        continue;
      }
      ASSERT_EQ(int(p.path), int(SoftmaxPath::kTile)) << cols << " +" << l.in_shift;
      const int entry = kk::config_index(kk::kSoftmaxConfigs, kk::softmax_config(p, sizeof(T)),
                                         range.begin, range.end);
      ASSERT_GE(entry, 0) << cols;
      ++runs[entry - range.begin];
      for (const bool shrink : {false, true}) {
        kk::SoftmaxPlan q = p;
        if (shrink) q.shape.grid.x = std::min(3u, q.shape.grid.x);
        for (const bool log : {false, true})
          // sanitizer: every 4th case
          if (kktest::sanitize_keep(index++, 4))
            EXPECT_TRUE(run_case<T>(rows, cols, log, l, seed++, Runner{&q}))
                << cols << " group " << q.group << " packs " << q.packs << " tile "
                << q.rows_per_round << " grid " << q.shape.grid.x;
      }
    }
  }
  // every tile kernel of the table ran
  for (int i = range.begin; i < range.end; ++i)
    if (kk::kSoftmaxConfigs[i].path == SoftmaxPath::kTile)
      EXPECT_GE(runs[i - range.begin], 1)
          << "tile entry " << i << " group " << kk::kSoftmaxConfigs[i].group << " packs "
          << kk::kSoftmaxConfigs[i].packs << " not run";
}

// Tiles of many rows of a few columns against the float64 reference, big enough that every
// resident block loops over several tiles, both dtypes' narrow and pack-lane kernels, aligned
// and off by an odd element (the narrow kernel's shared words), in place.
TYPED_TEST(SoftmaxTest, TileRowsManyTiles) {
  using T = TypeParam;
  uint64_t seed = 7900;
  int64_t index = 0;
  for (const int64_t cols : {2, 3, 7, 13, 18, 33, 64, 65}) {
    for (const Layout& l : {kAligned, Layout{3, 3, false}, Layout{1, 1, true}}) {
      if (l.in_shift == 0 && cols % (16 / int64_t(sizeof(T))) == 0) continue;
      const int64_t rows = kktest::sanitizer_run() ? 4099 : (int64_t{1} << 20) / cols + 3;
      for (const bool log : {false, true})
        if (kktest::sanitize_keep(index++, 4)) EXPECT_TRUE(run_case<T>(rows, cols, log, l, seed++));
    }
  }
}

// 1025..8184 columns, off the pack grid (partial head and tail packs), in place.
TYPED_TEST(SoftmaxTest, BlockRowsLoop) {
  using T = TypeParam;
  const kk::DeviceInfo d = small_device(2, 1 << 30, false, false);
  uint64_t seed = 5000;
  for (const int64_t cols :
       {int64_t{1025}, int64_t{2049}, int64_t{4096}, int64_t{4097}, int64_t{6007}, int64_t{8184}}) {
    for (const Layout& l : {kAligned, Layout{3, 3, false}, Layout{5, 5, true}}) {
      kk::SoftmaxPlan p = plan_for<T>(23, cols, l, d);
      ASSERT_EQ(int(p.path), int(SoftmaxPath::kBlock)) << cols;
      p.shape.grid.x = 3;  // each block loops over several rows
      for (const bool log : {false, true})
        EXPECT_TRUE(run_case<T>(23, cols, log, l, seed++, Runner{&p}))
            << cols << " block " << p.shape.block.x;
    }
  }
}

// kBlock at every block size of kSoftmaxConfigs (32..1024 threads: 1..8+ packs a thread, one
// warp without a barrier, 2..32 warps with the one-barrier (max, sum) reduction), with one
// and two buffers, blocks looping over 7-8 rows each; rows on and off the pack grid
// (every other row starts mid-pack when cols is not a multiple of it), in place.
TYPED_TEST(SoftmaxTest, BlockSizesAndBuffers) {
  using T = TypeParam;
  const kk::DeviceInfo d = small_device(2, 1 << 30, false, false);
  uint64_t seed = 6000;
  // sanitizer: every 7th case (each block size x buffers x log still runs, on some widths
  // and layouts)
  int64_t index = 0;
  for (const int64_t cols : {int64_t{1025}, int64_t{1500}, int64_t{2048}, int64_t{3001}}) {
    for (const Layout& l : {kAligned, Layout{3, 3, false}, Layout{5, 5, true}}) {
      kk::SoftmaxPlan base = plan_for<T>(23, cols, l, d);
      ASSERT_EQ(int(base.path), int(SoftmaxPath::kBlock)) << cols;
      if (base.on_grid) {
        // rows on the pack grid are planned in registers (BlockRegisterRows); here
        // the same rows in shared memory
        base.on_grid = false;
        base.packs = 1;
        const int64_t pack = 16 / sizeof(T);
        ASSERT_TRUE(
            kk::detail::softmax_plan_block(23, cols / pack, pack * int64_t{sizeof(T)}, d, &base));
      }
      for (const kk::SoftmaxConfig& c : kk::kSoftmaxConfigs) {
        if (c.elem_bytes != int{sizeof(T)} || c.path != SoftmaxPath::kBlock || c.on_grid ||
            c.pack != base.pack)
          continue;
        const int block = c.block;
        for (const int buffers : {1, 2}) {
          kk::SoftmaxPlan p = base;
          p.shape.block.x = static_cast<unsigned>(block);
          p.shape.grid.x = 3;  // each block loops over several rows
          p.buffers = buffers;
          p.shape.smem = static_cast<size_t>(
              kk::detail::softmax_scratch_bytes(block, kk::BlockCombine::kNone) +
              int64_t{buffers} * p.buffer_bytes);
          for (const bool log : {false, true})
            if (kktest::sanitize_keep(index++, 7))
              EXPECT_TRUE(run_case<T>(23, cols, log, l, seed++, Runner{&p}))
                  << cols << " block " << block << " buffers " << buffers;
        }
      }
    }
  }
}

// Rows on the pack grid (16-byte aligned, cols a multiple of the pack) up to 16384 2-byte /
// 8192 f32 columns: the row in the registers of one block (kBlock with on_grid), at widths
// around each register shape's capacity (the kBlock on_grid entries of kSoftmaxConfigs: 128 x
// 2, 256 x 2, 512 x 2, 512 x 4 packs: 2048, 4096, 8192, 16384 2-byte columns, half as many
// f32) and in between, each width on every shape of the table that holds it (threads with packs
// past the row, and threads with no pack at all), the grid shrunk to 3 so that blocks loop over
// rows, in place; softmax and log_softmax with -inf / all -inf / NaN rows. f32 rows of <= 1024
// columns (planned kWarp) are run on the register shapes too; wider rows than the shapes hold stay
// in shared memory. Planned for this GPU without clusters and cooperative launch: here the ~22
// rows a case holds would go to clusters (too few rows to fill the SMs: FewRowsSpreadOverTheSMs
// in the plan tests), and kBlock is what such a GPU plans for them.
TYPED_TEST(SoftmaxTest, BlockRegisterRows) {
  using T = TypeParam;
  constexpr int64_t kPack = 16 / sizeof(T);
  constexpr int64_t kMaxCols = 2048 * kPack;  // 512 x 4 packs
  const kk::DeviceInfo gpu = device();
  const kk::DeviceInfo d =
      small_device_of(gpu, gpu.sm_count, gpu.smem_per_block_optin, false, false);
  uint64_t seed = 8000;
  int64_t width_index = 0;
  // the 2-byte widths; f32 takes half of each (the same packs), then a few past 8192
  for (const int64_t w : {1032, 1536, 2040, 2048, 2056, 3000, 4088, 4096, 4104, 6000, 8184, 8192,
                          8200, 12000, 16376, 16384, 16392, 24000, 32768}) {
    const int64_t cols = w * kPack / 8;
    if (cols > 16384) continue;
    ++width_index;
    for (const Layout& l : {kAligned, kInPlace}) {
      // sanitizer: one layout a width, aligned and in place in turn
      if (!kktest::sanitize_keep(width_index + l.in_place, 2)) continue;
      const int64_t rows = rows_for(23, cols) + 1;
      kk::SoftmaxPlan base = plan_for<T>(rows, cols, l, d);
      if (base.path == SoftmaxPath::kWarp) {
        // f32 rows of <= 1024 columns: the register shapes that hold them
        ASSERT_TRUE(sizeof(T) == 4 && cols <= 1024) << cols;
        ASSERT_TRUE(kk::detail::softmax_plan_block_registers(rows, cols / kPack, d, &base));
        base.pack = static_cast<int>(kPack);
      }
      ASSERT_EQ(int(base.path), int(SoftmaxPath::kBlock)) << cols;
      ASSERT_EQ(base.on_grid, cols <= kMaxCols) << cols;
      if (!base.on_grid) {
        for (const bool log : {false, true})
          EXPECT_TRUE(run_case<T>(rows, cols, log, l, seed++, Runner{&base})) << cols;
        continue;
      }
      int shapes = 0;
      for (const kk::SoftmaxConfig& r : kk::kSoftmaxConfigs) {
        if (r.elem_bytes != int{sizeof(T)} || r.path != SoftmaxPath::kBlock || !r.on_grid) continue;
        if (cols / kPack > int64_t{r.block} * r.packs) continue;
        ++shapes;
        kk::SoftmaxPlan p = base;
        p.shape.block.x = static_cast<unsigned>(r.block);
        p.packs = r.packs;
        p.shape.grid.x = 3;  // each block loops over several rows
        for (const bool log : {false, true})
          EXPECT_TRUE(run_case<T>(rows, cols, log, l, seed++, Runner{&p}))
              << cols << " block " << r.block << " x " << r.packs << " packs";
      }
      EXPECT_GE(shapes, 1) << cols;
      // and the plan's own shape and grid
      for (const bool log : {false, true})
        EXPECT_TRUE(run_case<T>(rows, cols, log, l, seed++, Runner{&base}))
            << cols << " block " << base.shape.block.x << " x " << base.packs << " packs";
    }
  }
}

// Every kernel of kSoftmaxConfigs, softmax and log_softmax, on the small case planned for it
// (config_cases: on this GPU, or on a smaller one like it for the chunk paths); a GPU without
// clusters skips the cluster entries.
TYPED_TEST(SoftmaxTest, EveryConfiguration) {
  using T = TypeParam;
  const kk::DeviceInfo d = device();
  const kk::ConfigRange range = kk::softmax_configs_of(sizeof(T));
  const std::vector<ConfigCase> cases = config_cases<T>(d);
  uint64_t seed = 9000;
  for (size_t i = 0; i < cases.size(); ++i) {
    const kk::SoftmaxConfig& c = kk::kSoftmaxConfigs[range.begin + i];
    const std::string what = "entry " + std::to_string(range.begin + i) + ": path " +
                             std::to_string(int(c.path)) + " pack " + std::to_string(c.pack) +
                             " block " + std::to_string(c.block) + " group " +
                             std::to_string(c.group) + " packs " + std::to_string(c.packs) +
                             " on_grid " + std::to_string(c.on_grid);
    if (!cases[i].found) {
      EXPECT_TRUE(c.path == SoftmaxPath::kCluster && !d.clusters()) << "no case plans " << what;
      continue;
    }
    for (const bool log : {false, true}) {
      // sanitizer: softmax or log_softmax, turning with the entry
      if (kktest::sanitize_keep(int64_t(i) + log, 2))
        EXPECT_TRUE(run_case<T>(cases[i].rows, cases[i].cols, log, cases[i].layout, seed,
                                Runner{&cases[i].plan}))
            << what;
      ++seed;
    }
  }
}

// Strided rows (ld > cols): every kernel of kSoftmaxConfigs but the tile entries (contiguous
// rows only), softmax and log_softmax, on the small strided case planned for it (config_cases
// with strided layouts: rows on the 16-byte grid, at several offsets, on the 8-byte grid, in
// and out at different offsets, in place), launched with the plan's strides; the gaps between
// rows stay poisoned (run_case).
TYPED_TEST(SoftmaxTest, EveryConfigurationStrided) {
  using T = TypeParam;
  const kk::DeviceInfo d = device();
  const kk::ConfigRange range = kk::softmax_configs_of(sizeof(T));
  const std::vector<ConfigCase> cases = config_cases<T>(d, true);
  uint64_t seed = 9500;
  for (size_t i = 0; i < cases.size(); ++i) {
    const kk::SoftmaxConfig& c = kk::kSoftmaxConfigs[range.begin + i];
    const std::string what = "entry " + std::to_string(range.begin + i) + ": path " +
                             std::to_string(int(c.path)) + " pack " + std::to_string(c.pack) +
                             " block " + std::to_string(c.block) + " group " +
                             std::to_string(c.group) + " packs " + std::to_string(c.packs) +
                             " on_grid " + std::to_string(c.on_grid);
    if (!cases[i].found) {
      EXPECT_TRUE(c.path == SoftmaxPath::kTile ||
                  (c.path == SoftmaxPath::kCluster && !d.clusters()))
          << "no strided case plans " << what;
      continue;
    }
    for (const bool log : {false, true}) {
      if (kktest::sanitize_keep(int64_t(i) + log, 2))
        EXPECT_TRUE(run_case<T>(cases[i].rows, cases[i].cols, log, cases[i].layout, seed,
                                Runner{&cases[i].plan}))
            << what;
      ++seed;
    }
  }
}

// The public leading-dimension overloads over the sweep's widths: rows on the 16-byte grid
// (padded by 16 bytes: the contiguous rows' plan), off it (padded by one element), in and out
// at different offsets, in place; a tile plan (contiguous rows only) given strided rows
// answers cudaErrorInvalidValue and writes nothing.
TYPED_TEST(SoftmaxTest, StridedRows) {
  using T = TypeParam;
  constexpr int64_t P = 16 / sizeof(T);
  const Layout layouts[] = {Layout{0, 0, false, P, 0}, Layout{0, 0, false, 1, 1},
                            Layout{1, 1, false, P + 2, 2}, Layout{0, 1, false, P, 0},
                            Layout{3, 3, true, 5, 0}};
  uint64_t seed = 9800;
  int64_t index = 0;
  for (const Layout& l : layouts)
    for (const int64_t cols : kSweepCols)
      for (const bool log : {false, true})
        if (kktest::sanitize_keep(index++, 6))
          EXPECT_TRUE(run_case<T>(rows_for(23, cols), cols, log, l, seed++));
  const kk::DeviceInfo d = device();
  const kk::SoftmaxPlan tile = plan_for<T>(64, 9, Layout{1, 1, false}, d);
  ASSERT_EQ(int(tile.path), int(SoftmaxPath::kTile));
  DeviceBuffer<T> in(64 * 16), out(64 * 16);
  in.upload(kktest::random_vector<T>(64 * 16, 5));
  out.poison();
  const auto before = out.download();
  EXPECT_EQ(kk::launch_softmax(tile, SoftmaxKind::kSoftmax, in.get() + 1, 16, out.get() + 1, 9, 64,
                               9, nullptr),
            cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, out.download()));
}

// The chunk paths at small sizes: a grid in rounds (6 SMs: several rounds, the pairs parked
// in the output and their bytes written a round later), one round, a cluster per row, one
// block per row, and the two-pass fallback; the plan's path (and, for aligned rows, its
// split and buffers where the case names them) is checked, then the output.
struct WideCase {
  int sms, smem;
  bool clusters, cooperative;
  SoftmaxPath want;  // kCluster falls back to kTwoPass on a GPU without clusters
  int64_t rows, cols;
  int split = 0, buffers = 0;  // 0: any
  int max_cluster = 0;         // 0: the device's largest cluster; 8: the portable size only
  bool past = false;           // kGrid: chunks longer than their buffer (part read twice)
};

// The layouts every wide case runs with.
constexpr Layout kWideLayouts[] = {kAligned, Layout{3, 3, true}, Layout{1, 0, false}};

// The widths where the plan stops keeping a row in one block on d, asked of the plan itself
// so that the cases follow its capacity rule (buffer + the block's scratch within the
// shared memory) as it changes: `fits` is the widest row that every wide layout keeps in
// one block (as is every width from the warp path's end up to it), `past` the narrowest from
// which none does (up to twice `fits`: rows on the pack grid hold a few more columns).
struct BlockLimit {
  int64_t fits, past;
};
template <typename T>
BlockLimit block_limit(kk::DeviceInfo d) {
  d.cluster_launch = false;  // past a block: kTwoPass
  d.cooperative_launch = false;
  // (in_smem: only rows kept in shared memory count; rows on the pack grid are held in
  // registers up to 16384 2-byte / 8192 f32 columns, whatever the shared memory)
  const auto blocks = [&](int64_t cols, bool in_smem) {
    int n = 0;
    for (const Layout& l : kWideLayouts) {
      const kk::SoftmaxPlan p = plan_for<T>(1, cols, l, d);
      n += p.path == SoftmaxPath::kBlock && !(in_smem && p.on_grid);
    }
    return n;
  };
  BlockLimit b{1024, 0};  // the warp path holds up to 1024 columns
  while (blocks(b.fits + 1, false) == 3)
    ++b.fits;
  b.past = b.fits + 1;
  for (int64_t c = b.past; c <= 2 * b.fits; ++c)
    if (blocks(c, true) != 0) b.past = c + 1;
  return b;
}

// The narrowest width in [lo, hi) whose plan for rows x width (aligned) on d satisfies
// want(plan), or 0: the cases that need a plan only a window of widths gets.
template <typename T, typename Want>
int64_t first_width(const kk::DeviceInfo& d, int64_t rows, int64_t lo, int64_t hi, Want want,
                    int max_cluster = 0) {
  for (int64_t cols = lo; cols < hi; ++cols)
    if (want(plan_for<T>(rows, cols, kAligned, d, max_cluster))) return cols;
  return 0;
}

template <typename T>
void check_wide(const WideCase& w, const Layout& l, uint64_t seed) {
  const kk::DeviceInfo d = small_device(w.sms, w.smem, w.clusters, w.cooperative);
  const kk::SoftmaxPlan p = plan_for<T>(w.rows, w.cols, l, d, w.max_cluster);
  SoftmaxPath want = w.want;
  if (want == SoftmaxPath::kCluster && !d.clusters()) want = SoftmaxPath::kTwoPass;
  ASSERT_EQ(int(p.path), int(want)) << w.rows << "x" << w.cols << " on " << w.sms << " SMs";
  if (p.path == w.want && l.in_shift == 0 && l.out_shift == 0 && !l.in_place) {
    // (a cluster of 16 only where the device's architecture launches one)
    if (w.split && w.split <= std::max(1, d.max_cluster()))
      EXPECT_EQ(p.split, w.split) << w.rows << "x" << w.cols;
    if (w.buffers) EXPECT_EQ(p.buffers, w.buffers) << w.rows << "x" << w.cols;
  }
  if (w.past)
    EXPECT_GT(w.cols / p.split * int64_t{sizeof(T)}, p.buffer_bytes) << w.rows << "x" << w.cols;
  for (const bool log : {false, true})
    // sanitizer: softmax or log_softmax, turning with the seed (WidePaths passes every other)
    if (kktest::sanitize_keep(seed / 2 + log, 2))
      EXPECT_TRUE(run_case<T>(w.rows, w.cols, log, l, seed + log, Runner{&p}))
          << "path " << int(p.path) << " split " << p.split << " rounds " << p.rounds << " buffers "
          << p.buffers << " block " << p.shape.block.x << " " << w.rows << "x" << w.cols;
}

TYPED_TEST(SoftmaxTest, WidePaths) {
  using T = TypeParam;
  constexpr int kSmem = 12 * 1024;
  // widths in units of the widest row one block holds with 12 KiB of shared memory (about
  // 2900 floats / 5800 2-byte elements), and just past the rows one block holds
  const BlockLimit b = block_limit<T>(small_device(8, kSmem, false, false));
  const int64_t w = b.fits;
  // widths off the pack grid, where the case needs a shared-memory row or a split (rows on
  // the grid up to 16384 2-byte / 8192 f32 columns are held in registers): one more column, or for
  // the widest row one less
  constexpr int64_t kPack = 16 / sizeof(T);
  const auto off = [](int64_t c) { return c % kPack == 0 ? c + 1 : c; };
  const int64_t w_off = w % kPack == 0 ? w - 1 : w;
  const int64_t two = first_width<T>(
      small_device(2, 1 << 30, false, false), 129, 1025, 1 << 16,
      [](const kk::SoftmaxPlan& p) { return p.path == SoftmaxPath::kBlock && p.buffers == 2; });
  ASSERT_GT(two, 0) << "no width gets two buffers in one block";
  // a cluster of 4 comes in a window of widths (a chunk of 4 fits a block once, one of 8
  // not twice: with clusters of at most 8); without clusters (or without that window) a
  // width that gets some split
  const int64_t four = first_width<T>(
      small_device(8, kSmem, true, false), 4, b.past, 8 * w,
      [](const kk::SoftmaxPlan& p) { return p.path == SoftmaxPath::kCluster && p.split == 4; }, 8);
  // clusters of 16 (non-portable; sm_90 / sm_100): the first width that gets one (blocks of
  // 512; one cluster on the 8 SMs, looping over the rows); without them, a width that gets
  // some split
  const int64_t sixteen_at = first_width<T>(
      small_device(8, kSmem, true, false), 3, b.past, 64 * w,
      [](const kk::SoftmaxPlan& p) { return p.path == SoftmaxPath::kCluster && p.split == 16; });
  const int64_t sixteen = sixteen_at ? sixteen_at : 2 * w + 1;
  const WideCase cases[] = {
      // grid, one round over every block, chunks that fit their buffer
      {6, kSmem, false, true, SoftmaxPath::kGrid, 1, 3 * w + 7, 0, 1},
      {8, kSmem, false, true, SoftmaxPath::kGrid, 2, 3 * w + 1, 0, 1},
      // grid, chunks longer than their buffer (one buffer's worth on chip, the rest read
      // twice): a row wider than the grid's shared memory in one round; rows just past a
      // block, twice that and five times, in rounds (13 rows: the next round's buffer loads
      // during the write); most of every chunk read twice, in rounds
      // (two buffers are no longer planned for the grid: fewer rounds of chunks past the
      // buffer beat them)
      {6, kSmem, false, true, SoftmaxPath::kGrid, 1, 8 * w + 3, 0, 1, 0, true},
      {6, kSmem, false, true, SoftmaxPath::kGrid, 13, off(b.past), 0, 1, 0, true},
      {6, kSmem, false, true, SoftmaxPath::kGrid, 5, 2 * w + 1, 0, 1, 0, true},
      {6, kSmem, false, true, SoftmaxPath::kGrid, 5, 5 * w + 3, 0, 1, 0, true},
      {2, kSmem, false, true, SoftmaxPath::kGrid, 3, 4 * w + 5, 0, 1, 0, true},
      // cluster per row (two-pass where the GPU has no clusters): of 4 blocks, and of 8
      // blocks of 512 threads, just past a block and wider (2 only comes with rows that fit
      // a block: Large_WideSweep)
      // (clusters of at most 8: the plan after a cluster of 16 did not fit)
      {8, kSmem, true, false, SoftmaxPath::kCluster, 4, four ? four : 4 * w, four ? 4 : 0, 0, 8},
      {8, kSmem, true, false, SoftmaxPath::kCluster, 4, off(b.past + 1), 0, 0, 8},
      {8, kSmem, true, false, SoftmaxPath::kCluster, 7, off(w * 17 / 10), 8, 0, 8},
      {8, kSmem, true, false, SoftmaxPath::kCluster, 13, w * 17 / 5, 8, 0, 8},
      {8, kSmem, true, false, SoftmaxPath::kCluster, 3, w * 17 / 5 + 1, 8, 0, 8},
      // chunks too big for two blocks of 512 a SM: clusters of 1024-thread blocks, two
      // buffers and one
      {8, kSmem, true, false, SoftmaxPath::kCluster, 3, w * 37 / 10, 8, 2, 8},
      {8, kSmem, true, false, SoftmaxPath::kCluster, 3, w * 34 / 5, 8, 1, 8},
      // clusters of 16 (rows looping over the one cluster)
      {8, kSmem, true, false, SoftmaxPath::kCluster, 3, sixteen, sixteen_at ? 16 : 0, 0},
      {8, kSmem, true, false, SoftmaxPath::kCluster, 11, off(sixteen + 1), sixteen_at ? 16 : 0, 0},
      // one block per row on 2 SMs, so that each block runs many rows: one buffer (the next
      // row loads during the write) at the widest row and at half of it; two buffers where
      // they cost no resident block
      {2, kSmem, false, false, SoftmaxPath::kBlock, 37, w_off, 1, 1},
      {2, kSmem, false, false, SoftmaxPath::kBlock, 37, off(w / 2 + 1), 1, 1},
      {2, 1 << 30, false, false, SoftmaxPath::kBlock, 129, two, 1, 2},
      // the fallback: read twice
      {8, kSmem, false, false, SoftmaxPath::kTwoPass, 7, w * 17 / 5, 1, 0},
      {8, kSmem, false, false, SoftmaxPath::kTwoPass, 2, 10 * w + 1, 1, 0},
  };
  uint64_t seed = 3000;
  int64_t case_index = 0;
  for (const auto& c : cases) {
    // sanitizer (racecheck ran this test for 370 s): one layout a case, turning with the case
    int allowed = 0;
    for (const Layout& l : kWideLayouts) {
      if (c.want == SoftmaxPath::kCluster && l.in_shift != l.out_shift && !l.in_place) continue;
      const int layouts = c.want == SoftmaxPath::kCluster ? 2 : 3;
      if (!kktest::sanitizer_run() || allowed++ == case_index % layouts) check_wide<T>(c, l, seed);
      seed += 2;
    }
    ++case_index;
  }
}

// The wide paths as the real device plans them (rows wider than a block, few rows).
TYPED_TEST(SoftmaxTest, WideRowsOnThisDevice) {
  uint64_t seed = 4000;
  for (const auto& [rows, cols] :
       {std::pair<int64_t, int64_t>{1, 262147}, {2, 100003}, {4, 60013}}) {
    // sanitizer (racecheck ran this test for 93 s): one of the two calls a shape, turning
    if (kktest::sanitize_keep(seed - 4000, 4))
      EXPECT_TRUE(run_case<TypeParam>(rows, cols, false, kAligned, seed));
    ++seed;
    if (kktest::sanitize_keep(seed - 4000 + 1, 4))
      EXPECT_TRUE(run_case<TypeParam>(rows, cols, true, Layout{1, 1, true}, seed));
    ++seed;
  }
}

// |x| up to 1e4: exp(x - max) never overflows.
TYPED_TEST(SoftmaxTest, LargeMagnitudeInputs) {
  uint64_t seed = 300;
  for (const int64_t cols :
       {int64_t{7}, int64_t{128}, int64_t{1000}, int64_t{4096}, int64_t{50257}})
    for (const bool log : {false, true})
      EXPECT_TRUE(run_case<TypeParam>(rows_for(5, cols), cols, log, kAligned, seed++, {}, false,
                                      -1e4, 1e4));
}

// Small spread: every element contributes (no underflow hides a wrong sum).
TYPED_TEST(SoftmaxTest, NarrowInputs) {
  uint64_t seed = 400;
  for (const int64_t cols : {int64_t{64}, int64_t{1024}, int64_t{16385}, int64_t{65536}})
    for (const bool log : {false, true})
      EXPECT_TRUE(run_case<TypeParam>(rows_for(4, cols), cols, log, kAligned, seed++, {}, false,
                                      -0.5, 0.5));
}

TYPED_TEST(SoftmaxTest, EmptyIsANoOp) {
  DeviceBuffer<TypeParam> buf(4);
  buf.poison();
  const auto before = buf.download();
  EXPECT_EQ(kk::softmax<TypeParam>(nullptr, nullptr, 0, 5), cudaSuccess);
  EXPECT_EQ(kk::softmax<TypeParam>(nullptr, nullptr, 5, 0), cudaSuccess);
  EXPECT_EQ(kk::log_softmax(buf.get(), buf.get(), 0, 4), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, buf.download()));
}

TYPED_TEST(SoftmaxTest, BadArgumentsWriteNothing) {
  using T = TypeParam;
  DeviceBuffer<T> in(64), out(64);
  in.upload(kktest::random_vector<T>(64, 5));
  out.poison();
  const auto before_out = out.download();
  const auto before_in = in.download();
  const int64_t big = int64_t{1} << 40;
  const auto* misaligned_in =
      reinterpret_cast<const T*>(reinterpret_cast<const char*>(in.get()) + 1);
  auto* misaligned_out = reinterpret_cast<T*>(reinterpret_cast<char*>(out.get()) + 1);
  for (const bool log : {false, true}) {
    auto f = [&](const T* a, T* b, int64_t r, int64_t c) {
      return log ? kk::log_softmax(a, b, r, c) : kk::softmax(a, b, r, c);
    };
    EXPECT_EQ(f(in.get(), out.get(), -1, 8), cudaErrorInvalidValue);
    EXPECT_EQ(f(in.get(), out.get(), 8, -1), cudaErrorInvalidValue);
    EXPECT_EQ(f(nullptr, out.get(), 8, 8), cudaErrorInvalidValue);
    EXPECT_EQ(f(in.get(), nullptr, 8, 8), cudaErrorInvalidValue);
    EXPECT_EQ(f(in.get(), out.get(), big, big), cudaErrorInvalidValue);
    EXPECT_EQ(f(misaligned_in, out.get(), 4, 8), cudaErrorInvalidValue);
    EXPECT_EQ(f(in.get(), misaligned_out, 4, 8), cudaErrorInvalidValue);
    // partial overlap of in and out (exact in place is allowed)
    EXPECT_EQ(f(in.get(), in.get() + 1, 4, 8), cudaErrorInvalidValue);
    EXPECT_EQ(f(in.get() + 8, in.get(), 4, 8), cudaErrorInvalidValue);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before_out, out.download()));
  EXPECT_TRUE(kktest::same_bits(before_in, in.download()));
}

// The same input gives the same bits, on every path (the combines have a fixed order).
TYPED_TEST(SoftmaxTest, Deterministic) {
  using T = TypeParam;
  const kk::DeviceInfo grid_dev = small_device(8, 12 * 1024, false, true);
  const kk::DeviceInfo cluster_dev = small_device(8, 12 * 1024, true, false);
  const std::pair<int64_t, int64_t> shapes[] = {{8, 1000}, {8, 16384}, {5, 10001}, {3, 6001}};
  // sanitizer: each device's plan (this one's, the grid device's, the cluster device's) runs
  // each of its paths once, at the smallest shape that takes it (racecheck ran f32's grid
  // rounds, 3 shapes, for 190 s)
  const kk::DeviceInfo devs[] = {device(), grid_dev, cluster_dev};
  std::map<std::pair<int, int>, int64_t> smallest;  // (device, path) -> rows x cols
  for (const auto& [rows, cols] : shapes)
    for (int dv = 0; dv < 3; ++dv) {
      const int path = int(plan_for<T>(rows, cols, kAligned, devs[dv]).path);
      if (!smallest.count({dv, path}) || smallest[{dv, path}] > rows * cols)
        smallest[{dv, path}] = rows * cols;
    }
  for (const auto& [rows, cols] : shapes) {
    const auto p_grid = plan_for<T>(rows, cols, kAligned, grid_dev);
    const auto p_cluster = plan_for<T>(rows, cols, kAligned, cluster_dev);
    for (const kk::SoftmaxPlan* p :
         {static_cast<const kk::SoftmaxPlan*>(nullptr), &p_grid, &p_cluster}) {
      const int dv = p == nullptr ? 0 : p == &p_grid ? 1 : 2;
      if (kktest::sanitizer_run() &&
          smallest[{dv, int(plan_for<T>(rows, cols, kAligned, devs[dv]).path)}] != rows * cols)
        continue;
      auto in = kktest::to_device(make_input<T>(rows, cols, 9, false));
      DeviceBuffer<T> a(rows * cols), b(rows * cols);
      ASSERT_EQ(call<T>(Runner{p}, false, in.get(), a.get(), rows, cols), cudaSuccess);
      ASSERT_EQ(call<T>(Runner{p}, false, in.get(), b.get(), rows, cols), cudaSuccess);
      CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_TRUE(kktest::same_bits(a.download(), b.download()))
          << rows << "x" << cols << " path " << (p ? int(p->path) : -1);
    }
  }
}

// Captured into a CUDA graph (the cooperative grid and the cluster launches included) and
// replayed twice.
TEST(SoftmaxGraph, CapturedAndReplayed) {
  if (!kktest::have_gpu()) GTEST_SKIP() << "no CUDA device visible";
  const kk::DeviceInfo grid_dev = small_device(8, 12 * 1024, false, true);
  const kk::DeviceInfo cluster_dev = small_device(8, 12 * 1024, true, false);
  const int64_t rows = 5, cols = 10001;
  const auto p_grid = plan_for<float>(rows, cols, kAligned, grid_dev);
  const auto p_cluster = plan_for<float>(rows, cols, kAligned, cluster_dev);
  ASSERT_EQ(int(p_grid.path), int(SoftmaxPath::kGrid));
  if (cluster_dev.clusters()) ASSERT_EQ(int(p_cluster.path), int(SoftmaxPath::kCluster));
  const auto h_in = make_input<float>(rows, cols, 77, true);
  std::vector<double> x(h_in.begin(), h_in.end());
  const auto ref = reference(x, rows, cols, false);
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const kk::SoftmaxPlan* p :
       {static_cast<const kk::SoftmaxPlan*>(nullptr), &p_grid, &p_cluster}) {
    auto in = kktest::to_device(h_in);
    DeviceBuffer<float> out(rows * cols);
    out.poison();
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const cudaError_t err = call<float>(Runner{p}, false, in.get(), out.get(), rows, cols, s);
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    ASSERT_EQ(err, cudaSuccess);
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
      CUDA_CHECK(cudaGraphLaunch(exec, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      EXPECT_TRUE(kktest::check_near(out.download(), ref, tolerance<float>(false),
                                     "graph replay " + std::to_string(replay)));
      out.poison();
    }
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  CUDA_CHECK(cudaStreamDestroy(s));
}

// ---------------------------------------------------------------------------------------
// Large and long tests (left out of sanitizer runs).

// Widths up to 300000 (primes, powers of two +- 1, the benchmark's) with a few rows each:
// the grid and cluster paths as this device plans them.
TYPED_TEST(SoftmaxTest, Large_WideSweep) {
  uint64_t seed = 5000;
  // rows that fit a block but too few to fill the GPU: 24 x 50000 f32 on an H100 runs as
  // clusters of 2
  for (const bool log : {false, true}) {
    EXPECT_TRUE(run_case<TypeParam>(24, 50000, log, kAligned, seed++));
    EXPECT_TRUE(run_case<TypeParam>(24, 50000, log, Layout{3, 3, true}, seed++));
  }
  for (const int64_t cols :
       {int64_t{65535}, int64_t{65536}, int64_t{65537}, int64_t{100000}, int64_t{131071},
        int64_t{131073}, int64_t{151936}, int64_t{199999}, int64_t{262143}, int64_t{262144},
        int64_t{262145}, int64_t{299993}, int64_t{300000}}) {
    for (const int64_t rows : {int64_t{1}, int64_t{4}, int64_t{16}, int64_t{33}}) {
      for (const bool log : {false, true}) {
        EXPECT_TRUE(run_case<TypeParam>(rows, cols, log, kAligned, seed++));
        EXPECT_TRUE(run_case<TypeParam>(rows, cols, log, Layout{1, 1, false}, seed++));
      }
    }
  }
}

// Rows wider than this GPU's shared memory (issue 30: an H100 holds ~30 MB): the grid keeps
// a buffer's worth of each chunk on chip and reads the rest twice. The benchmark's f32
// 1 x 26413760 (planned one block per row before, 5.8 ms), and two rows of 20 M, log_softmax,
// in place, off the pack grid.
TYPED_TEST(SoftmaxTest, Large_RowsPastSharedMemory) {
  using T = TypeParam;
  const kk::DeviceInfo d = device();
  uint64_t seed = 6500;
  for (const auto& [rows, cols, log, layout] :
       {std::tuple<int64_t, int64_t, bool, Layout>{1, 26413760, false, kAligned},
        {2, 20051951, true, Layout{3, 3, true}}}) {
    const kk::SoftmaxPlan p = plan_for<T>(rows, cols, layout, d);
    if (d.cooperative_launch) EXPECT_EQ(int(p.path), int(SoftmaxPath::kGrid));
    EXPECT_TRUE(run_case<T>(rows, cols, log, layout, seed++));
  }
}

// Row counts up to 10^6 with short rows (the lane-group paths, the grid's row loop).
TYPED_TEST(SoftmaxTest, Large_RowCounts) {
  uint64_t seed = 6000;
  for (const int64_t rows :
       {int64_t{1}, int64_t{2}, int64_t{1000}, int64_t{100000}, int64_t{1000000}}) {
    for (const int64_t cols : {int64_t{1}, int64_t{7}, int64_t{32}, int64_t{33}}) {
      EXPECT_TRUE(run_case<TypeParam>(rows, cols, false, kAligned, seed++));
      EXPECT_TRUE(run_case<TypeParam>(rows, cols, true, Layout{1, 1, true}, seed++));
    }
  }
}

// Past 2^31 elements (f16, in place, 4 GiB): values from a formula, so the reference of a
// few sampled rows is computed on the host without the whole matrix.
__global__ void fill_pattern_kernel(__half* p, int64_t rows, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows * cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    p[i] = __float2half(float((r * 31 + c * 17) % 97) / 16.f - 3.f);
  }
}

class SoftmaxLargeTest : public kktest::GpuTest {};

TEST_F(SoftmaxLargeTest, KK_LARGE(PastInt32Elements)) {
  for (const int64_t cols : {int64_t{1024}, int64_t{4096}, int64_t{262147}}) {
    const int64_t rows = ((int64_t{1} << 31) / cols) + 3;
    DeviceBuffer<__half> buf(rows * cols);
    fill_pattern_kernel<<<4096, 256>>>(buf.get(), rows, cols);
    CUDA_CHECK(cudaGetLastError());
    ASSERT_EQ(kk::softmax(buf.get(), buf.get(), rows, cols), cudaSuccess);
    CUDA_CHECK(cudaDeviceSynchronize());
    for (const int64_t r : {int64_t{0}, rows / 2, rows - 2, rows - 1}) {
      std::vector<__half> got(cols);
      CUDA_CHECK(cudaMemcpy(got.data(), buf.get() + r * cols, cols * sizeof(__half),
                            cudaMemcpyDeviceToHost));
      std::vector<double> x(cols);
      for (int64_t c = 0; c < cols; ++c)
        x[c] = kktest::to_double(__float2half(float((r * 31 + c * 17) % 97) / 16.f - 3.f));
      EXPECT_TRUE(kktest::check_near(got, reference(x, 1, cols, false), tolerance<__half>(false),
                                     "row " + std::to_string(r) + " cols " + std::to_string(cols)));
    }
  }
}

// Strided rows past 2^31 elements (row offsets r x ld in 64 bits): f16 rows of 1000 (on the
// 16-byte grid: the warp path) and 4000 columns (the register path) at ld 1024 / 4104, in place;
// four rows checked against the float64 reference, and the gap after each untouched.
TEST_F(SoftmaxLargeTest, KK_LARGE(StridedPastInt32Elements)) {
  for (const auto& [cols, ld] : {std::pair<int64_t, int64_t>{1000, 1024}, {4000, 4104}}) {
    const int64_t rows = ((int64_t{1} << 31) / ld) + 3;
    DeviceBuffer<__half> buf(rows * ld);
    fill_pattern_kernel<<<4096, 256>>>(buf.get(), rows, ld);  // the gaps too
    CUDA_CHECK(cudaGetLastError());
    ASSERT_EQ(kk::softmax(buf.get(), ld, buf.get(), ld, rows, cols), cudaSuccess);
    CUDA_CHECK(cudaDeviceSynchronize());
    for (const int64_t r : {int64_t{0}, rows / 2, rows - 2, rows - 1}) {
      std::vector<__half> got(ld);
      CUDA_CHECK(
          cudaMemcpy(got.data(), buf.get() + r * ld, ld * sizeof(__half), cudaMemcpyDeviceToHost));
      std::vector<double> x(cols);
      for (int64_t c = 0; c < cols; ++c)
        x[c] = kktest::to_double(__float2half(float((r * 31 + c * 17) % 97) / 16.f - 3.f));
      EXPECT_TRUE(kktest::check_near(std::vector<__half>(got.begin(), got.begin() + cols),
                                     reference(x, 1, cols, false), tolerance<__half>(false),
                                     "row " + std::to_string(r) + " cols " + std::to_string(cols)));
      for (int64_t c = cols; c < ld; ++c)
        ASSERT_EQ(__half2float(got[c]), float((r * 31 + c * 17) % 97) / 16.f - 3.f)
            << "gap of row " << r << " written at " << c;
    }
  }
}

// Sums over very long rows stay exact to float (issue 30): an f32 row of 60 million random
// values in [-8, 8), every output within 2e-6 (relative) of the float64 answer, on the device's
// plan, and on the two-pass plan (one block a row: ~60,000 terms a thread, where a float sum
// without compensation drifted 5.3e-5). The worst error is printed.
TEST_F(SoftmaxLargeTest, KK_LARGE(LongRowSumsAreAccurate)) {
  constexpr int64_t kCols = 60000000;
  const auto h = kktest::random_vector<float>(kCols, 91001, -8.0, 8.0);
  const std::vector<double> ref =
      reference(std::vector<double>(h.begin(), h.end()), 1, kCols, /*log=*/false);
  DeviceBuffer<float> in(kCols), out(kCols);
  in.upload(h);
  kk::DeviceInfo d = device();
  kk::DeviceInfo no_coop = d;
  no_coop.cooperative_launch = false;
  for (const kk::DeviceInfo& dev : {d, no_coop}) {
    const kk::SoftmaxPlan p = kk::plan_softmax(1, kCols, 4, kk::Alignment(), kk::Alignment(), dev);
    out.poison();
    ASSERT_EQ(kk::launch_softmax(p, SoftmaxKind::kSoftmax, in.get(), out.get(), 1, kCols, nullptr),
              cudaSuccess);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = out.download();
    double worst = 0;
    for (int64_t i = 0; i < kCols; ++i)
      worst = std::max(worst, std::fabs(double(got[i]) - ref[i]) / ref[i]);
    std::printf("f32 1x%lld, path %d: worst relative error %.3g\n", static_cast<long long>(kCols),
                int(p.path), worst);
    EXPECT_LE(worst, 2e-6) << "path " << int(p.path);
  }
}

// Fills a 2-byte row with -16 and puts 0 (a spike) every `every` elements from `first`.
__global__ void fill_spikes_kernel(__half* p, int64_t n, int64_t first, int64_t every) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = __float2half(i >= first && (i - first) % every == 0 ? 0.f : -16.f);
}

// An f16 row of 1.1e9 elements at -16 with sparse spikes at 0 (issue 30: the spikes' outputs
// were 2 % off where one thread summed 10^6 small terms after a spike): every spike's output,
// and the others (sampled), within one f16 ulp of the float64 answer; in place (2.2 GB).
TEST_F(SoftmaxLargeTest, KK_LARGE(SpikesInAHugeHalfRow)) {
  constexpr int64_t kCols = 1100000000, kFirst = 12345, kEvery = 1000003;
  DeviceBuffer<__half> buf(kCols);
  fill_spikes_kernel<<<4096, 256>>>(buf.get(), kCols, kFirst, kEvery);
  CUDA_CHECK(cudaGetLastError());
  ASSERT_EQ(kk::softmax(buf.get(), buf.get(), 1, kCols), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  const int64_t spikes = (kCols - 1 - kFirst) / kEvery + 1;
  const double small = std::exp(-16.0);
  const double s = double(spikes) + double(kCols - spikes) * small;
  const auto at = [&](int64_t i) {
    __half v;
    CUDA_CHECK(cudaMemcpy(&v, buf.get() + i, sizeof(v), cudaMemcpyDeviceToHost));
    return kktest::to_double(v);
  };
  std::vector<__half> got;
  std::vector<double> want;
  for (int64_t k = 0; k < spikes; ++k) {
    const int64_t i = kFirst + k * kEvery;
    for (const int64_t j : {i, i + 1}) {  // the spike and the element after it
      if (j >= kCols) continue;
      __half v;
      CUDA_CHECK(cudaMemcpy(&v, buf.get() + j, sizeof(v), cudaMemcpyDeviceToHost));
      got.push_back(v);
      want.push_back((j == i ? 1.0 : small) / s);
    }
  }
  EXPECT_TRUE(kktest::check_near(got, want, kktest::Tolerance::Ulps(1), "f16 spikes"));
  EXPECT_LE(std::fabs(at(0) - small / s), kktest::ulp_of<__half>(small / s));
  EXPECT_LE(std::fabs(at(kCols - 1) - small / s), kktest::ulp_of<__half>(small / s));
}

// 20,000 distinct widths from 8 host threads, each on its own stream: every call right (the
// host caches are bounded: nothing in softmax is keyed by the width but the bounded
// occupancy caches of core).
TEST_F(SoftmaxLargeTest, KK_LARGE(ManyWidthsFromEightThreads)) {
  constexpr int kThreads = 8, kPerThread = 2500;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      cudaStream_t s;
      CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      const int64_t max_cols = int64_t{kThreads} * kPerThread;
      DeviceBuffer<float> in(2 * max_cols), out(2 * max_cols);
      for (int k = 0; k < kPerThread; ++k) {
        const int64_t cols = 1 + t + int64_t{kThreads} * k;  // 1..20000, each once
        const auto h = kktest::random_vector<float>(2 * cols, 10000 + cols);
        CUDA_CHECK(cudaMemcpyAsync(in.get(), h.data(), 2 * cols * sizeof(float),
                                   cudaMemcpyHostToDevice, s));
        if (kk::softmax(in.get(), out.get(), 2, cols, s) != cudaSuccess) {
          ++failures[t];
          continue;
        }
        std::vector<float> got(2 * cols);
        CUDA_CHECK(cudaMemcpyAsync(got.data(), out.get(), 2 * cols * sizeof(float),
                                   cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        const auto ref = reference(std::vector<double>(h.begin(), h.end()), 2, cols, false);
        if (!kktest::check_near(got, ref, tolerance<float>(false))) ++failures[t];
      }
      CUDA_CHECK(cudaStreamDestroy(s));
    });
  }
  for (auto& th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
