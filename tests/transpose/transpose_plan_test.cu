// SPDX-License-Identifier: Apache-2.0
// plan_transpose on the host (no GPU): the expected plan for the benchmark's shapes on every
// device, and invariants over many shapes, element sizes, alignments and devices: a legal
// launch, shared memory within the device's limits, each path's preconditions, a host model of
// the tile, thin and copy kernels' stores that must write every out element exactly once, and
// the gather kernel's own code run on the host (transpose_gather_emulator.cuh: every element,
// sector ownership, staged reads, loads inside in) and its shared-memory bank conflicts.
// transpose_args_ok's checks are host-pure too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/transpose/transpose.cuh"
#include "transpose/transpose_gather_emulator.cuh"

namespace {

using kernelkit::Alignment;
using kernelkit::DeviceInfo;
using kernelkit::plan_transpose;
using kernelkit::TransposePath;
using kernelkit::TransposePlan;
// (Alignment(b) for a power of two b <= 16: an address aligned to b bytes and no more, b bytes
// past a 16-byte boundary; Alignment(): 16-byte aligned.)

const char* path_name(TransposePath p) {
  switch (p) {
    case TransposePath::kCopy:
      return "copy";
    case TransposePath::kTile:
      return "tile";
    case TransposePath::kThinRows:
      return "thin_rows";
    case TransposePath::kThinCols:
      return "thin_cols";
    case TransposePath::kGather:
      return "gather";
  }
  return "?";
}

struct Expected {
  int64_t rows, cols;
  int elem;
  TransposePath path;
  int chunk;
  int thin;
  int tile_rows, tile_cols;
  bool flat_out = false, flat_in = false;  // kGather
  bool col_order = false;  // on the H100 (transpose_col_order; it depends on the SM count)
};

// The benchmark's shapes (goals: TRANSPOSE f32, TRANSPOSE_OTHER f16 / i8 / f64) with 16-byte
// aligned pointers, and a few others. The same plan on every device (these are large enough
// that the gather kernel's tiles keep their full size everywhere).
const std::vector<Expected> kTable = {
    // f32
    {2, 16777216, 4, TransposePath::kThinRows, 16, 2, 2, 2048},
    {16777216, 2, 4, TransposePath::kThinCols, 16, 2, 2048, 2},
    {3, 8388608, 4, TransposePath::kThinRows, 16, 3, 3, 2048},
    {8388608, 3, 4, TransposePath::kThinCols, 16, 3, 2048, 3},
    {7, 4194304, 4, TransposePath::kThinRows, 16, 7, 7, 1024},
    {4194304, 7, 4, TransposePath::kThinCols, 16, 7, 1024, 7},
    {32, 1048576, 4, TransposePath::kTile, 16, 0, 32, 128},
    {1048576, 32, 4, TransposePath::kTile, 16, 0, 128, 32},
    {100, 300000, 4, TransposePath::kTile, 16, 0, 128, 32},
    {300000, 100, 4, TransposePath::kTile, 16, 0, 32, 128},
    {1000, 33554, 4, TransposePath::kGather, 16, 0, 64, 64, false, false, true},
    {4096, 8192, 4, TransposePath::kTile, 16, 0, 64, 64},
    {8192, 8192, 4, TransposePath::kTile, 16, 0, 64, 64},
    {16385, 4097, 4, TransposePath::kGather, 16, 0, 64, 64},
    {8191, 8193, 4, TransposePath::kGather, 16, 0, 64, 64},
    {1001, 33554, 4, TransposePath::kGather, 16, 0, 64, 64, false, false, true},
    {1, 1 << 28, 4, TransposePath::kCopy, 0, 0, 0, 0},
    {1 << 28, 1, 4, TransposePath::kCopy, 0, 0, 0, 0},
    // the benchmark's generated shapes that fell to 0.2-0.5 of the speed of light before the
    // gather kernel (thin sides of 9..95 elements, odd sides)
    {11, 8284541, 4, TransposePath::kGather, 16, 0, 11, 368, true},
    {42324981, 11, 4, TransposePath::kGather, 16, 0, 368, 11, false, true},
    {360578, 16, 4, TransposePath::kGather, 16, 0, 256, 16, false, true},
    {81, 1075968, 4, TransposePath::kGather, 16, 0, 81, 48, true},
    // f16
    {8192, 8192, 2, TransposePath::kTile, 16, 0, 128, 128},
    {3, 8388608, 2, TransposePath::kThinRows, 16, 3, 3, 4096},
    {8388608, 3, 2, TransposePath::kThinCols, 16, 3, 4096, 3},
    {1000, 33554, 2, TransposePath::kGather, 16, 0, 128, 64, false, false, true},
    {2549, 280811, 2, TransposePath::kGather, 16, 0, 128, 64, false, false, true},
    {95, 3261799, 2, TransposePath::kGather, 16, 0, 95, 64, true},
    // i8
    {8192, 8192, 1, TransposePath::kTile, 8, 0, 128, 128},
    {3, 8388608, 1, TransposePath::kThinRows, 16, 3, 3, 8192},
    {8388608, 3, 1, TransposePath::kThinCols, 16, 3, 8192, 3},
    {1000, 33554, 1, TransposePath::kGather, 16, 0, 128, 128, false, false, true},
    {15, 7039169, 1, TransposePath::kGather, 16, 0, 15, 1088, true},
    {265, 1291313, 1, TransposePath::kGather, 16, 0, 128, 128, false, false, true},
    // f64
    {8192, 8192, 8, TransposePath::kTile, 16, 0, 32, 32},
    {3, 8388608, 8, TransposePath::kThinRows, 16, 3, 3, 1024},
    {8388608, 3, 8, TransposePath::kThinCols, 16, 3, 1024, 3},
    {1000, 33554, 8, TransposePath::kTile, 16, 0, 32, 32, false, false, true},
    {4675, 27439, 8, TransposePath::kGather, 16, 0, 64, 32, false, false, true},
    {9, 4630597, 8, TransposePath::kGather, 16, 0, 9, 224, true},
};

TEST(TransposePlan, BenchmarkShapesOnEveryDevice) {
  for (const auto& dev : kktest::all_devices()) {
    for (const Expected& e : kTable) {
      const TransposePlan p =
          plan_transpose(e.rows, e.cols, e.elem, Alignment(), Alignment(), dev.info);
      const std::string label = std::string(dev.name) + " " + std::to_string(e.rows) + "x" +
                                std::to_string(e.cols) + " elem " + std::to_string(e.elem) + ": " +
                                path_name(p.path);
      EXPECT_EQ(p.path, e.path) << label << " (want " << path_name(e.path) << ")";
      EXPECT_EQ(p.chunk_bytes, e.chunk) << label;
      EXPECT_EQ(p.thin, e.thin) << label;
      EXPECT_EQ(p.tile_rows, e.tile_rows) << label;
      EXPECT_EQ(p.tile_cols, e.tile_cols) << label;
      EXPECT_EQ(p.flat_out, e.flat_out) << label;
      EXPECT_EQ(p.gather.flat_in, e.flat_in) << label;
      if (dev.info.sm_count == 132) EXPECT_EQ(p.col_order, e.col_order) << label;
    }
  }
}

TEST(TransposePlan, AlignmentPicksThePath) {
  const DeviceInfo d = kktest::h100();
  // tiles need rows and cols multiples of the chunk's elements and both pointers chunk-aligned
  for (const int e : {1, 2, 4, 8}) {
    const int wide = e == 1 ? 8 : 16;
    EXPECT_EQ(plan_transpose(1024, 1024, e, Alignment(wide), Alignment(wide), d).path,
              TransposePath::kTile)
        << e;
    EXPECT_EQ(plan_transpose(1024, 1024, e, Alignment(16), Alignment(16), d).chunk_bytes, wide)
        << e;
    if (e < wide) {
      EXPECT_EQ(plan_transpose(1024, 1024, e, Alignment(wide / 2), Alignment(16), d).path,
                TransposePath::kGather)
          << e;
      EXPECT_EQ(plan_transpose(1024, 1024, e, Alignment(16), Alignment(wide / 2), d).path,
                TransposePath::kGather)
          << e;
    }
    EXPECT_EQ(plan_transpose(1024, 1023, e, Alignment(16), Alignment(16), d).path,
              TransposePath::kGather)
        << e;
    EXPECT_EQ(plan_transpose(1023, 1024, e, Alignment(16), Alignment(16), d).path,
              TransposePath::kGather)
        << e;
    EXPECT_EQ(plan_transpose(1026, 1024, e, Alignment(16), Alignment(16), d).path,
              1026 % (wide / e) == 0 ? TransposePath::kTile : TransposePath::kGather)
        << e;
  }
  // Thin: any alignment; thin cols store directly only into chunk-aligned out rows.
  EXPECT_EQ(plan_transpose(3, 1000, 4, Alignment(4), Alignment(4), d).path,
            TransposePath::kThinRows);
  EXPECT_TRUE(plan_transpose(1000, 3, 4, Alignment(4), Alignment(), d).out_aligned);
  EXPECT_FALSE(plan_transpose(1000, 3, 4, Alignment(), Alignment(4), d).out_aligned);
  EXPECT_FALSE(plan_transpose(1001, 3, 4, Alignment(), Alignment(), d).out_aligned);
  // Square-ish small matrices of 8 or fewer rows and columns are thin.
  EXPECT_EQ(plan_transpose(8, 8, 4, Alignment(16), Alignment(16), d).path,
            TransposePath::kThinRows);
  EXPECT_EQ(plan_transpose(9, 8, 4, Alignment(16), Alignment(16), d).path,
            TransposePath::kThinCols);
  EXPECT_EQ(plan_transpose(9, 9, 4, Alignment(16), Alignment(16), d).path, TransposePath::kGather);
}

// The gather kernel's two ways to cut out and its staging follow the shape: out written as one
// run a tile for out rows of at most 256 bytes or at most 128 rows; in staged as one run a tile
// for at most 64 columns; one row or one column is a copy from four times the L2 on (below it
// the gather kernel copies).
TEST(TransposePlan, GatherModesFollowTheShape) {
  for (const auto& dev : kktest::all_devices()) {
    const DeviceInfo& d = dev.info;
    for (const int e : {1, 2, 4, 8}) {
      const std::string label = std::string(dev.name) + " elem " + std::to_string(e);
      for (const int64_t rows :
           std::vector<int64_t>{9, 64, 127, 128, 129, 256 / e, 256 / e + 1, 300}) {
        const TransposePlan p = plan_transpose(rows, 100003, e, Alignment(e), Alignment(e), d);
        ASSERT_EQ(p.path, TransposePath::kGather) << label << " rows " << rows;
        EXPECT_EQ(p.flat_out, rows <= 128 || rows * e <= 256) << label << " rows " << rows;
        if (p.flat_out) {
          EXPECT_EQ(p.tiles_r, 1) << label;
          EXPECT_EQ(p.tile_rows, rows) << label;
        }
      }
      for (const int64_t cols : std::vector<int64_t>{9, 33, 63, 64, 65, 100}) {
        const TransposePlan p = plan_transpose(1000003, cols, e, Alignment(e), Alignment(e), d);
        ASSERT_EQ(p.path, TransposePath::kGather) << label << " cols " << cols;
        EXPECT_FALSE(p.flat_out) << label;
        EXPECT_EQ(p.gather.flat_in, cols <= 64) << label << " cols " << cols;
        if (p.gather.flat_in) {
          EXPECT_EQ(p.tiles_c, 1) << label;
          EXPECT_EQ(p.tile_cols, cols) << label;
        }
      }
      const int64_t big = kernelkit::transpose_copy_min_bytes(d) / e;
      EXPECT_EQ(plan_transpose(1, big, e, Alignment(e), Alignment(e), d).path, TransposePath::kCopy)
          << label;
      EXPECT_EQ(plan_transpose(big, 1, e, Alignment(e), Alignment(e), d).path, TransposePath::kCopy)
          << label;
      EXPECT_EQ(plan_transpose(1, big - 1, e, Alignment(e), Alignment(e), d).path,
                TransposePath::kGather)
          << label;
      EXPECT_EQ(plan_transpose(big - 1, 1, e, Alignment(e), Alignment(e), d).path,
                TransposePath::kGather)
          << label;
    }
  }
}

// The gather kernel's passes a tile (p = 4, 2, 1) on device d.
int gather_passes(const TransposePlan& p) {
  const kernelkit::TransposeGatherShape& g = p.gather;
  const int vec = 16 / p.elem_bytes;
  return p.flat_out  ? g.tile_c / (vec * (256 / static_cast<int>(g.rows)))
         : g.flat_in ? g.tile_r / (vec * g.kk_threads)
                     : g.tile_c / g.cq_threads;
}

// The gather kernel's tiles take four passes of the block on large matrices, fewer where the
// waves of tiles the device runs at once, times (passes + 1), come to less: on the H100 (132
// SMs x 5-6 blocks) f32 2169x746 keeps four (408 tiles, one wave), f32 3619x853 takes two (798
// tiles at four: two waves of 5 against three of 3), f64 1x299772 one (586 tiles, one wave).
TEST(TransposePlan, GatherTilesFollowTheDevice) {
  const DeviceInfo h = kktest::h100();
  EXPECT_EQ(gather_passes(plan_transpose(2169, 746, 4, Alignment(16), Alignment(16), h)), 4);
  EXPECT_EQ(gather_passes(plan_transpose(3619, 853, 4, Alignment(16), Alignment(16), h)), 2);
  EXPECT_EQ(gather_passes(plan_transpose(1, 299772, 8, Alignment(16), Alignment(16), h)), 1);
  for (const auto& dev : kktest::all_devices()) {
    for (const int e : {1, 2, 4, 8}) {
      for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{2169, 746},
                                                                               {18137, 63},
                                                                               {11, 132379},
                                                                               {1001, 1001},
                                                                               {333, 555},
                                                                               {3619, 853},
                                                                               {1, 299772},
                                                                               {40000, 40001},
                                                                               {13, 50000017}}) {
        const TransposePlan p = plan_transpose(rows, cols, e, Alignment(e), Alignment(e), dev.info);
        const std::string label = std::string(dev.name) + " " + std::to_string(rows) + "x" +
                                  std::to_string(cols) + " elem " + std::to_string(e);
        ASSERT_EQ(p.path, TransposePath::kGather) << label;
        const int passes = gather_passes(p);
        EXPECT_TRUE(passes == 1 || passes == 2 || passes == 4) << label << " " << passes;
        if (rows * cols * e >= (int64_t{64} << 20)) EXPECT_EQ(passes, 4) << label;
      }
    }
  }
}

// ---- host models of the kernels' stores ------------------------------------------------------

// Tile t's tile row and column, as the kernels number them.
void tile_at(const TransposePlan& p, int64_t t, int64_t* tr, int64_t* tc) {
  kernelkit::detail::transpose_tile_at(t, p.col_order ? p.tiles_r : p.tiles_c, p.col_order, tr, tc);
}

// Out elements each plan's kernel writes, counted: out is cols x rows, element (c, r) at
// c * rows + r. out_ph: element phase of the out pointer (0 <= out_ph < 16 / elem).
std::vector<int> simulate_stores(const TransposePlan& p, int64_t rows, int64_t cols, int out_ph) {
  std::vector<int> count(static_cast<size_t>(rows * cols), 0);
  const int e = p.elem_bytes;
  auto hit = [&](int64_t oc, int64_t r) {
    if (oc >= 0 && oc < cols && r >= 0 && r < rows) ++count[static_cast<size_t>(oc * rows + r)];
  };
  // store_staged_run: [0, len) of a run starting at out element `start` in head / body / tail.
  auto staged_run = [&](int64_t start, int len) {
    const int vec = 16 / e;
    const int ph = static_cast<int>((out_ph + start) % vec);
    const int head_full = (vec - ph) & (vec - 1);
    const int head = std::min(head_full, len);
    const int body = (len - head) / vec;
    const int tail0 = head + body * vec;
    std::vector<int64_t> written;
    for (int i = 0; i < head; ++i)
      written.push_back(start + i);
    for (int k = 0; k < body; ++k) {
      EXPECT_EQ((out_ph + start + head + int64_t{k} * vec) % vec, 0) << "unaligned body chunk";
      for (int j = 0; j < vec; ++j)
        written.push_back(start + head + int64_t{k} * vec + j);
    }
    for (int i = tail0; i < len; ++i)
      written.push_back(start + i);
    for (const int64_t o : written)
      hit(o / rows, o % rows);
  };
  switch (p.path) {
    case TransposePath::kCopy:
      for (int64_t o = 0; o < rows * cols; ++o)
        hit(o / rows, o % rows);
      break;
    case TransposePath::kTile: {
      const int vec = p.chunk_bytes / e;
      const int a_blocks = p.tile_rows / vec, b_chunks = p.tile_cols / vec;
      EXPECT_EQ(a_blocks * b_chunks, kernelkit::detail::kTransposeBlock);
      for (int64_t t = 0; t < p.num_tiles; ++t) {
        int64_t tr, tc;
        tile_at(p, t, &tr, &tc);
        const int64_t r0 = tr * p.tile_rows, c0 = tc * p.tile_cols;
        for (int a = 0; a < a_blocks; ++a)
          for (int b = 0; b < b_chunks; ++b) {
            if (r0 + vec * a >= rows) continue;
            for (int m = 0; m < vec; ++m) {
              const int64_t oc = c0 + int64_t{vec} * b + m;
              if (oc >= cols) continue;
              for (int k = 0; k < vec; ++k)
                hit(oc, r0 + int64_t{vec} * a + k);
            }
          }
      }
      break;
    }
    case TransposePath::kThinRows:
      for (int64_t t = 0; t < p.num_tiles; ++t) {
        const int64_t c0 = t * p.tile_cols;
        const int64_t cv = std::min<int64_t>(p.tile_cols, cols - c0);
        staged_run(c0 * rows, static_cast<int>(cv * rows));
      }
      break;
    case TransposePath::kThinCols: {
      const int vec = 16 / e;
      for (int64_t t = 0; t < p.num_tiles; ++t) {
        const int64_t r0 = t * p.tile_rows;
        const int hv = static_cast<int>(std::min<int64_t>(p.tile_rows, rows - r0));
        if (p.out_aligned) {
          for (int q = 0; q < p.tile_rows / vec; ++q) {
            const int64_t r = r0 + int64_t{q} * vec;
            if (r >= rows) continue;
            const int valid = static_cast<int>(std::min<int64_t>(vec, rows - r));
            for (int64_t c = 0; c < cols; ++c) {
              if (valid == vec) EXPECT_EQ((out_ph + c * rows + r) % vec, 0) << "unaligned chunk";
              for (int j = 0; j < valid; ++j)
                hit(c, r + j);
            }
          }
        } else {
          for (int64_t c = 0; c < cols; ++c)
            staged_run(c * rows + r0, hv);
        }
      }
      break;
    }
    case TransposePath::kGather:
      ADD_FAILURE() << "the gather kernel's stores are checked by running it (transpose_emu)";
      break;
  }
  return count;
}

// ---- the gather kernel on the host -----------------------------------------------------------

// A gather plan forced onto rows x cols (its mode and tile order as asked, its tiles as the
// plan would size them on d), or false when the mode cannot take the shape: flat out needs at
// most 256 rows (a tile's threads take whole periods of all rows) and its tile within the
// device's shared memory, one run (flat in) at most 64 columns.
bool gather_plan(int e, int64_t rows, int64_t cols, bool flat_out, bool flat_in, bool col_order,
                 const DeviceInfo& d, TransposePlan* plan) {
  if (flat_out && rows > 256) return false;
  if (flat_in && (flat_out || cols > 64)) return false;
  TransposePlan p;
  p.path = TransposePath::kGather;
  p.elem_bytes = e;
  p.chunk_bytes = 16;
  p.flat_out = flat_out;
  p.gather.flat_in = flat_in;
  p = kernelkit::detail::finish_transpose_plan(p, rows, cols, d);
  if (static_cast<int64_t>(p.shape.smem) > d.smem_per_block) return false;
  kernelkit::detail::transpose_set_order(&p, col_order && p.tiles_r > 1 && p.tiles_c > 1);
  *plan = p;
  return true;
}

// Runs plan p on the host for an element size of e bytes; the number of failures (the first
// one described in *what).
int64_t emulate(const TransposePlan& p, int64_t rows, int64_t cols,
                const transpose_emu::Placement& at, std::string* what) {
  const uint64_t seed = 1000003ull * rows + 7919ull * cols + 31ull * at.in_off + at.out_off;
  switch (p.elem_bytes) {
    case 1:
      return transpose_emu::run_gather<uint8_t>(p, rows, cols, at, seed, what);
    case 2:
      return transpose_emu::run_gather<uint16_t>(p, rows, cols, at, seed, what);
    case 4:
      return transpose_emu::run_gather<uint32_t>(p, rows, cols, at, seed, what);
    default:
      return transpose_emu::run_gather<uint64_t>(p, rows, cols, at, seed, what);
  }
}

std::string describe_run(const TransposePlan& p, int64_t rows, int64_t cols,
                         const transpose_emu::Placement& at) {
  return std::to_string(rows) + "x" + std::to_string(cols) + " elem " +
         std::to_string(p.elem_bytes) + (p.flat_out ? " flat out" : " rows") +
         (p.gather.flat_in ? " flat in" : "") + (p.col_order ? " col order" : "") + " tile " +
         std::to_string(p.tile_rows) + "x" + std::to_string(p.tile_cols) + " in_off " +
         std::to_string(at.in_off) + " out_off " + std::to_string(at.out_off) +
         (at.in_guard == 1   ? " in against the next page"
          : at.in_guard == 2 ? " in after a page"
                             : "");
}

// Small and odd shapes: 1..9 and a few more, thin sides of every kind, prime sides, partial
// tiles both ways, several tiles, one row / one column.
std::vector<std::pair<int64_t, int64_t>> gather_shapes() {
  std::vector<std::pair<int64_t, int64_t>> s = {
      {1, 1},     {1, 7},     {7, 1},     {1, 100},   {100, 1},  {1, 1000}, {1000, 1},
      {2, 2},     {3, 5},     {9, 9},     {11, 300},  {17, 33},  {33, 17},  {64, 64},
      {65, 63},   {100, 300}, {300, 100}, {129, 70},  {200, 12}, {12, 200}, {255, 257},
      {31, 4099}, {4099, 31}, {130, 520}, {520, 130}, {256, 77}, {2, 3001}, {3001, 2}};
  std::mt19937 gen(2025);
  std::uniform_int_distribution<int> small(1, 400);
  for (int i = 0; i < 10; ++i)
    s.emplace_back(small(gen), small(gen));
  return s;
}

// Every mode of the gather kernel (tiles of out rows with rows staged one by one or as one run,
// flat out; both tile orders) on every shape above, every element size, in and out at mixed
// phases and against guard pages, with the tiles it gets on the H100 and on the T4 (the
// smallest wave: the smallest tiles).
TEST(TransposeGather, EveryModeOnOddShapesAndPhases) {
  int64_t runs = 0;
  for (const DeviceInfo& d : {kktest::h100(), kktest::t4()}) {
    for (const auto& [rows, cols] : gather_shapes()) {
      for (const int e : {1, 2, 4, 8}) {
        const int vec = 16 / e, sec = 32 / e;
        for (int mode = 0; mode < 3; ++mode) {
          for (int k = 0; k < 4; ++k) {
            TransposePlan p;
            if (d.sm_count != 132 && k != 1) continue;  // (the T4: one placement)
            if (!gather_plan(e, rows, cols, mode == 0, mode == 2, k & 1, d, &p)) continue;
            transpose_emu::Placement at;
            at.in_guard = k == 2 ? 2 : k == 3 ? 1 : 0;
            at.in_off = at.in_guard == 2 ? 0 : static_cast<int>((k * 5 + rows) % vec);
            at.out_off = static_cast<int>((k * 7 + cols) % sec);
            std::string what;
            EXPECT_EQ(emulate(p, rows, cols, at, &what), 0)
                << describe_run(p, rows, cols, at) << ": " << what;
            ++runs;
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 700);
}

// Every in phase and every out sector phase on a few shapes of each mode.
TEST(TransposeGather, EveryPhase) {
  const DeviceInfo d = kktest::h100();
  for (const int e : {1, 2, 4, 8}) {
    const int vec = 16 / e, sec = 32 / e;
    for (const auto& [rows, cols, mode] : std::vector<std::tuple<int64_t, int64_t, int>>{
             {37, 201, 0}, {201, 37, 2}, {201, 103, 1}, {2, 377, 0}}) {
      TransposePlan p;
      ASSERT_TRUE(gather_plan(e, rows, cols, mode == 0, mode == 2, false, d, &p));
      for (int in_off = 0; in_off < vec; ++in_off)
        for (int out_off = 0; out_off < sec; ++out_off) {
          const transpose_emu::Placement at{in_off, out_off, 0};
          std::string what;
          EXPECT_EQ(emulate(p, rows, cols, at, &what), 0)
              << describe_run(p, rows, cols, at) << ": " << what;
        }
    }
  }
}

// transpose_store_part, every part [lo, hi) of a chunk (not all of it) for every element size, and
// transpose_store_tail / transpose_store_head on the parts that end the chunk on one side:
// exactly bytes [lo, hi) written with the chunk's bytes, each store aligned to its size and no
// smaller than an element, at most one store of each size on each side of the chunk's row boundary
// (2 log2(16 / E) at most; both sides only where the part is inside the chunk at both ends).
template <int E>
void check_store_part() {
  static thread_local std::vector<std::pair<int, int>> stores;  // (byte, size) of each store
  static thread_local const unsigned char* base;
  alignas(16) unsigned char chunk[16];
  kernelkit::Pack<uint32_t, 4> w;
  for (int i = 0; i < 16; ++i)
    reinterpret_cast<unsigned char*>(w.elem)[i] = static_cast<unsigned char>(0x10 + i);
  base = chunk;
  kernelkit::detail::transpose_gather_hook = [](const void* q, int k, bool store) {
    if (store)
      stores.emplace_back(static_cast<int>(static_cast<const unsigned char*>(q) - base), k);
  };
  for (int lo = 0; lo < 16; lo += E)
    for (int hi = lo + E; hi <= 16; hi += E) {
      if (lo == 0 && hi == 16) continue;  // (the whole chunk: one 16-byte store)
      const std::string label =
          "elem " + std::to_string(E) + " [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
      const int sides = (lo > 0 ? 1 : 0) + (hi < 16 ? 1 : 0);
      const auto check = [&](const std::string& how, auto store) {
        memset(chunk, 0xEE, sizeof(chunk));
        stores.clear();
        store();
        for (int i = 0; i < 16; ++i)
          EXPECT_EQ(chunk[i], i >= lo && i < hi ? 0x10 + i : 0xEE)
              << how << " " << label << " byte " << i;
        int per_size[9] = {};
        for (const auto& [b, k] : stores) {
          EXPECT_TRUE(k == 1 || k == 2 || k == 4 || k == 8) << how << " " << label;
          EXPECT_GE(k, E) << how << " " << label;
          EXPECT_EQ(b % k, 0) << how << " " << label << " store of " << k << " at " << b;
          ++per_size[k];
        }
        for (int k = 1; k <= 8; k *= 2)
          EXPECT_LE(per_size[k], sides) << how << " " << label << " stores of " << k;
      };
      check("part", [&] { kernelkit::detail::transpose_store_part<E>(chunk, w, lo, hi); });
      // one end of an out row: the tail [lo, 16) and the head [0, hi) (tiles of out rows)
      if (hi == 16)
        check("tail", [&] { kernelkit::detail::transpose_store_tail<E>(chunk, w, lo); });
      if (lo == 0) check("head", [&] { kernelkit::detail::transpose_store_head<E>(chunk, w, hi); });
    }
  kernelkit::detail::transpose_gather_hook = nullptr;
}

TEST(TransposeGather, StorePartEveryPart) {
  check_store_part<1>();
  check_store_part<2>();
  check_store_part<4>();
  check_store_part<8>();
}

// Tiles of out rows at the row counts just past flat out (129 rows; 257 for 1-byte elements),
// a few hundred more and 1000 (a last tile row of at most kSec - 1 rows): two to nine tile rows,
// out rows of every length mod 16 bytes, so that threads on the first and the last rows of the
// matrix write parts of chunks (transpose_store_tail, transpose_store_head; every element size,
// rows staged one by one and as one run, both tile orders, out at every sector phase across the
// row counts, in at others), on every device of the plan tests.
TEST(TransposeGather, EdgeChunksPastFlatOut) {
  for (const auto& dev : kktest::all_devices()) {
    const DeviceInfo& d = dev.info;
    for (const int e : {1, 2, 4, 8}) {
      const int vec = 16 / e, sec = 32 / e;
      const int64_t first = std::max(129, 256 / e + 1);
      std::vector<int64_t> row_counts;
      for (int64_t r = first; r < first + 16; ++r)
        row_counts.push_back(r);
      for (const int64_t r : {first + 127, first + 136, 3 * first + 7, int64_t{1000}})
        row_counts.push_back(r);
      int index = 0;
      for (const int64_t rows : row_counts)
        for (const int64_t cols : {40, 77, 301})
          for (const bool col_order : {false, true}) {
            TransposePlan p;
            if (!gather_plan(e, rows, cols, false, cols <= 64, col_order, d, &p)) continue;
            if (col_order && !p.col_order) continue;
            ++index;
            const transpose_emu::Placement at{static_cast<int>((index * 5 + rows) % vec),
                                              static_cast<int>((index * 7) % sec), 0};
            std::string what;
            EXPECT_EQ(emulate(p, rows, cols, at, &what), 0)
                << dev.name << " " << describe_run(p, rows, cols, at) << ": " << what;
          }
      EXPECT_GT(index, 40) << "elem " << e;
    }
  }
}

// The plan's own gather plans on every device, for the shapes of the invariants below.
std::vector<std::pair<int64_t, int64_t>> invariant_shapes();

TEST(TransposeGather, PlannedShapesOnEveryDevice) {
  for (const auto& dev : kktest::all_devices()) {
    for (const auto& [rows, cols] : invariant_shapes()) {
      for (const int e : {1, 2, 4, 8}) {
        const int off = static_cast<int>((rows + cols) % (16 / e));
        const TransposePlan p =
            plan_transpose(rows, cols, e, Alignment(off * e), Alignment((off + 1) * e), dev.info);
        if (p.path != TransposePath::kGather) continue;
        const transpose_emu::Placement at{off, off + 1, 0};
        std::string what;
        EXPECT_EQ(emulate(p, rows, cols, at, &what), 0)
            << dev.name << " " << describe_run(p, rows, cols, at) << ": " << what;
      }
    }
  }
}

// Larger odd shapes: several tiles of each mode, partial tiles, both tile orders.
TEST(TransposeGather, LargerOddShapes) {
  const DeviceInfo d = kktest::h100();
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{2049, 1025},
                                                                           {1025, 2049},
                                                                           {131, 4097},
                                                                           {4097, 67},
                                                                           {577, 577},
                                                                           {66, 10001},
                                                                           {10001, 47},
                                                                           {13, 50001}}) {
    for (const int e : {1, 2, 4, 8}) {
      TransposePlan p = plan_transpose(rows, cols, e, Alignment(e), Alignment(e), d);
      ASSERT_EQ(p.path, TransposePath::kGather);
      for (const bool col_order : {false, true}) {
        if (col_order && (p.tiles_r <= 1 || p.tiles_c <= 1)) continue;
        kernelkit::detail::transpose_set_order(&p, col_order);
        const transpose_emu::Placement at{static_cast<int>(cols % (16 / e)),
                                          static_cast<int>(rows % (32 / e)), 0};
        std::string what;
        EXPECT_EQ(emulate(p, rows, cols, at, &what), 0)
            << describe_run(p, rows, cols, at) << ": " << what;
      }
    }
  }
}

// The gather's shared-memory bank conflicts: at every gather load of the first pass, the most
// distinct 32-bit words a warp's lanes read in one bank (1: conflict-free; 8-byte loads take
// two at least, counted as one), averaged over the loads, for in and out phases. The staging
// layout (one spare chunk every kVec staged rows, or every kVec rows of a run of an even column
// count) keeps the mean over shapes of every class under 3 and each under 6; 1-byte gathers (16
// loads a chunk) take 64 shared-memory wavefronts a warp's 512 bytes at 4, what the speed of
// light allows.
template <typename U, bool Flat>
double gather_wavefronts_of(const TransposePlan& p, int in_ph, int out_sec) {
  constexpr int kVec = 16 / sizeof(U), kWords = sizeof(U) >= 4 ? sizeof(U) / 4 : 1;
  constexpr int kBlock = kernelkit::detail::kTransposeBlock;
  std::vector<kernelkit::detail::TransposeGatherThread<U, Flat>> th;
  th.reserve(kBlock);
  for (int t = 0; t < kBlock; ++t)
    th.emplace_back(p.gather, in_ph, out_sec, t);
  double total = 0;
  int loads = 0;
  for (int w = 0; w < kBlock / 32; ++w)
    for (int j = 0; j < kVec; ++j) {
      int words[32 * kWords], n = 0;  // the distinct words the warp reads
      for (int l = 0; l < 32; ++l) {
        const auto& x = th[static_cast<size_t>(32 * w + l)];
        if (!x.active()) continue;
        for (int b = 0; b < kWords; ++b) {
          const int word = x.at(j) / 4 + b;
          if (std::find(words, words + n, word) == words + n) words[n++] = word;
        }
      }
      if (n == 0) continue;
      int per_bank[32] = {};
      for (int i = 0; i < n; ++i)
        ++per_bank[words[i] % 32];
      total += *std::max_element(per_bank, per_bank + 32);
      ++loads;
    }
  return loads ? total / loads : 0;
}

double gather_wavefronts(const TransposePlan& p, int in_ph, int out_sec) {
  switch (p.elem_bytes) {
    case 1:
      return p.flat_out ? gather_wavefronts_of<uint8_t, true>(p, in_ph, out_sec)
                        : gather_wavefronts_of<uint8_t, false>(p, in_ph, out_sec);
    case 2:
      return p.flat_out ? gather_wavefronts_of<uint16_t, true>(p, in_ph, out_sec)
                        : gather_wavefronts_of<uint16_t, false>(p, in_ph, out_sec);
    case 4:
      return p.flat_out ? gather_wavefronts_of<uint32_t, true>(p, in_ph, out_sec)
                        : gather_wavefronts_of<uint32_t, false>(p, in_ph, out_sec);
    default:
      return p.flat_out ? gather_wavefronts_of<uint64_t, true>(p, in_ph, out_sec)
                        : gather_wavefronts_of<uint64_t, false>(p, in_ph, out_sec);
  }
}

TEST(TransposeGather, BankConflicts) {
  const DeviceInfo d = kktest::h100();
  // rows and cols at residues that matter (mod 32 and mod 16), each mode
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t m = 0; m < 32; m += 3)
    for (int64_t c = 0; c < 16; c += 5) {
      shapes.emplace_back(4096 + m, 8192 + c);       // tiles of out rows, rows staged one by one
      shapes.emplace_back(1000003 + m, 16 + 3 * c);  // one staged run
      shapes.emplace_back(9 + m, 1000003 + c);       // flat out
      shapes.emplace_back(100 + m, 1000003 + c);     // flat out, more rows
    }
  for (const int e : {1, 2, 4, 8}) {
    double sum = 0, worst = 0;
    int n = 0;
    for (const auto& [rows, cols] : shapes) {
      const TransposePlan p = plan_transpose(rows, cols, e, Alignment(e), Alignment(e), d);
      if (p.path != TransposePath::kGather) continue;
      for (int in_ph = 0; in_ph < 16; in_ph += 8)
        for (int out_sec = 0; out_sec < 32 / e; out_sec += 5) {
          // (in units of the fewest: two for 8-byte loads)
          const double w = gather_wavefronts(p, in_ph, out_sec) / (e == 8 ? 2 : 1);
          worst = std::max(worst, w);
          sum += w;
          ++n;
          EXPECT_LE(w, 6.0) << rows << "x" << cols << " elem " << e << " in phase " << in_ph
                            << " out phase " << out_sec;
        }
    }
    EXPECT_LE(sum / n, 3.0) << "elem " << e;
    EXPECT_GT(worst, 1.0) << "elem " << e;  // (the model sees conflicts where there are some)
  }
}

// The invariants every plan must hold on device d.
void check_plan(const TransposePlan& p, int64_t rows, int64_t cols, int e, int in_align,
                int out_align, const DeviceInfo& d, const std::string& label) {
  EXPECT_EQ(p.elem_bytes, e) << label;
  // a kernel launch_transpose instantiates
  EXPECT_GE(kernelkit::config_index(kernelkit::kTransposeConfigs, kernelkit::transpose_config(p)),
            0)
      << label;
  if (p.path == TransposePath::kCopy) {
    EXPECT_TRUE(rows == 1 || cols == 1) << label;
    EXPECT_GE(rows * cols * e, kernelkit::transpose_copy_min_bytes(d)) << label;
    return;
  }
  // A legal launch that fits the device.
  EXPECT_GE(p.num_tiles, 1) << label;
  EXPECT_EQ(static_cast<int64_t>(p.shape.grid.x), std::min<int64_t>(p.num_tiles, INT32_MAX))
      << label;
  EXPECT_EQ(p.shape.grid.y * p.shape.grid.z, 1u) << label;
  EXPECT_EQ(p.shape.block.x, static_cast<unsigned>(kernelkit::detail::kTransposeBlock)) << label;
  EXPECT_LE(static_cast<int>(p.shape.block.x), d.max_threads_per_block) << label;
  EXPECT_FALSE(p.shape.is_cluster()) << label;
  // Static shared memory, or dynamic (the gather kernel's stage), within the 48 KiB a block
  // gets without opting in.
  const int64_t smem = p.static_smem + static_cast<int64_t>(p.shape.smem);
  EXPECT_GT(smem, 0) << label;
  EXPECT_TRUE(p.static_smem == 0 || p.shape.smem == 0) << label;
  EXPECT_LE(smem, d.smem_per_block) << label;
  // One block fits an SM with the register budget of every transpose kernel (<= 64 on sm_90,
  // <= 85 for the 1-/2-byte thin cols of 6-8 columns).
  EXPECT_GE(kernelkit::blocks_per_sm(d, p.shape.block.x, 85, smem), 1) << label;
  EXPECT_EQ(p.tiles_r * p.tiles_c, p.num_tiles) << label;
  if (p.path != TransposePath::kTile && !(p.path == TransposePath::kGather && !p.flat_out))
    EXPECT_FALSE(p.col_order) << label;
  if (p.col_order) EXPECT_TRUE(p.tiles_r > 1 && p.tiles_c > 1) << label;
  switch (p.path) {
    case TransposePath::kTile: {
      const int vec = p.chunk_bytes / e;
      EXPECT_EQ(p.chunk_bytes, e == 1 ? 8 : 16) << label;
      EXPECT_EQ(rows % vec, 0) << label;
      EXPECT_EQ(cols % vec, 0) << label;
      EXPECT_GE(out_align, p.chunk_bytes) << label;
      EXPECT_GE(in_align, p.chunk_bytes) << label;
      EXPECT_GE(p.tiles_c * p.tile_cols, cols) << label;
      EXPECT_GE(p.tiles_r * p.tile_rows, rows) << label;
      const int a = p.tile_rows / vec, b = p.tile_cols / vec;
      EXPECT_EQ(a * vec, p.tile_rows) << label;
      EXPECT_EQ(a & (a - 1), 0) << label;
      EXPECT_EQ(b & (b - 1), 0) << label;
      EXPECT_EQ(a * b, 256) << label;
      EXPECT_EQ(p.static_smem, 256 * vec * p.chunk_bytes) << label;
      EXPECT_EQ(p.shape.smem, 0u) << label;
      break;
    }
    case TransposePath::kThinRows:
      EXPECT_EQ(p.thin, rows) << label;
      EXPECT_LE(rows, cols) << label;
      EXPECT_GE(p.thin, 2) << label;
      EXPECT_LE(p.thin, kernelkit::kTransposeThinMax) << label;
      break;
    case TransposePath::kThinCols:
      EXPECT_EQ(p.thin, cols) << label;
      EXPECT_LT(cols, rows) << label;
      EXPECT_GE(p.thin, 2) << label;
      EXPECT_LE(p.thin, kernelkit::kTransposeThinMax) << label;
      if (p.out_aligned) {
        EXPECT_EQ(rows % (16 / e), 0) << label;
        EXPECT_GE(out_align, 16) << label;
      }
      break;
    case TransposePath::kGather: {
      // not a shape another path takes
      EXPECT_TRUE(rows == 1 || cols == 1 || std::min(rows, cols) > kernelkit::kTransposeThinMax)
          << label;
      const int wide = e == 1 ? 8 : 16, vec = 16 / e, sec = 32 / e;
      EXPECT_FALSE(rows % (wide / e) == 0 && cols % (wide / e) == 0 && in_align >= wide &&
                   out_align >= wide && rows > 1 && cols > 1)
          << label;
      const kernelkit::TransposeGatherShape& g = p.gather;
      EXPECT_EQ(g.rows, rows) << label;
      EXPECT_EQ(g.cols, cols) << label;
      EXPECT_EQ(g.num_tiles, p.num_tiles) << label;
      EXPECT_EQ(g.col_order, p.col_order) << label;
      EXPECT_EQ(g.tiles_minor, p.col_order ? p.tiles_r : p.tiles_c) << label;
      EXPECT_EQ(static_cast<int64_t>(p.shape.smem),
                kernelkit::detail::transpose_gather_smem_bytes(g, e))
          << label;
      if (p.flat_out) {
        // every tile all rows; whole sectors of the run: tile_c a multiple of kSec, and
        // every thread's periods whole passes
        EXPECT_EQ(g.tile_r, rows) << label;
        EXPECT_LE(rows, 256) << label;
        EXPECT_EQ(g.tile_c % sec, 0) << label;
        EXPECT_EQ(g.tile_c % (vec * (256 / rows)), 0) << label;
        EXPECT_EQ(p.tiles_r, 1) << label;
        EXPECT_GE(p.tiles_c * g.tile_c * rows, rows * cols + sec - 1) << label;
      } else {
        EXPECT_EQ(g.tile_r % sec, 0) << label;  // tile rows on sector boundaries
        EXPECT_EQ(g.staged_rows, g.tile_r + sec - 1) << label;
        EXPECT_GE(p.tiles_r * g.tile_r, rows + sec - 1) << label;
        EXPECT_EQ(g.tile_r % (vec * g.kk_threads), 0) << label;
        EXPECT_LE(g.kk_threads * g.cq_threads, 256) << label;
        if (g.flat_in) {
          EXPECT_LE(cols, 64) << label;
          EXPECT_EQ(g.tile_c, cols) << label;
          EXPECT_EQ(g.cq_threads, cols) << label;
          EXPECT_EQ(p.tiles_c, 1) << label;
        } else {
          // a thread's out rows share their sector phase: cq_threads a multiple of kSec
          EXPECT_EQ(g.cq_threads % sec, 0) << label;
          EXPECT_EQ(g.tile_c % g.cq_threads, 0) << label;
          EXPECT_EQ(g.kk_threads * vec, g.tile_r) << label;
          EXPECT_GE(p.tiles_c * g.tile_c, cols) << label;
        }
      }
      break;
    }
    case TransposePath::kCopy:
      break;
  }
}

std::vector<std::pair<int64_t, int64_t>> invariant_shapes() {
  std::vector<std::pair<int64_t, int64_t>> s = {
      {1, 1},   {1, 7},    {7, 1},    {2, 2},     {2, 3},     {3, 2},    {8, 8},    {8, 9},
      {9, 8},   {9, 9},    {16, 16},  {17, 33},   {32, 100},  {100, 32}, {12, 200}, {200, 12},
      {64, 64}, {65, 63},  {96, 200}, {100, 300}, {300, 100}, {128, 8},  {8, 128},  {24, 40},
      {40, 24}, {3, 4099}, {4099, 3}, {7, 2049},  {2049, 7},  {2, 8192}, {8192, 2}, {256, 260}};
  std::mt19937 gen(2024);
  std::uniform_int_distribution<int> small(1, 300);
  for (int i = 0; i < 40; ++i)
    s.emplace_back(small(gen), small(gen));
  return s;
}

TEST(TransposePlan, InvariantsAndEveryElementWrittenOnce) {
  const auto devices = kktest::all_devices();
  for (const auto& [rows, cols] : invariant_shapes()) {
    for (const int e : {1, 2, 4, 8}) {
      for (const int in_align : {e, 16}) {
        for (const int out_align : {e, 16}) {
          const std::string label = std::to_string(rows) + "x" + std::to_string(cols) + " elem " +
                                    std::to_string(e) + " align " + std::to_string(in_align) + "/" +
                                    std::to_string(out_align);
          const TransposePlan p0 = plan_transpose(rows, cols, e, Alignment(in_align),
                                                  Alignment(out_align), devices[0].info);
          for (const auto& dev : devices) {
            const TransposePlan p =
                plan_transpose(rows, cols, e, Alignment(in_align), Alignment(out_align), dev.info);
            check_plan(p, rows, cols, e, in_align, out_align, dev.info,
                       std::string(dev.name) + " " + label + " " + path_name(p.path));
            // The path does not depend on the device (every kernel fits every GPU; the gather
            // kernel's tiles follow its wave).
            EXPECT_EQ(p.path, p0.path) << dev.name << " " << label;
            EXPECT_EQ(p.flat_out, p0.flat_out) << dev.name << " " << label;
          }
          // Every out element written exactly once, for every out phase the alignment allows
          // (the gather kernel: its own code, TransposeGather above).
          if (p0.path == TransposePath::kGather) continue;
          const int vec = 16 / e;
          for (int out_ph = 0; out_ph < (out_align >= 16 ? 1 : vec); ++out_ph) {
            const auto count = simulate_stores(p0, rows, cols, out_ph);
            int64_t bad = 0;
            for (const int c : count)
              bad += c != 1;
            EXPECT_EQ(bad, 0) << label << " " << path_name(p0.path) << " out phase " << out_ph;
          }
        }
      }
    }
  }
}

// A forced plan's launch fits (tile shape, shared memory).
void check_plan_shape(const TransposePlan& p, int64_t rows, int64_t cols) {
  const std::string label = std::to_string(rows) + "x" + std::to_string(cols) + " elem " +
                            std::to_string(p.elem_bytes) + " " + path_name(p.path);
  EXPECT_LE(p.static_smem + static_cast<int64_t>(p.shape.smem), 48 * 1024) << label;
  if (p.path == TransposePath::kTile) {
    const int vec = p.chunk_bytes / p.elem_bytes;
    EXPECT_EQ((p.tile_rows / vec) * (p.tile_cols / vec), 256) << label;
  }
}

// Every tile and thin kernel of kTransposeConfigs, forced onto shapes it does not get from the
// plan, covers out exactly once too (the tests run these on the GPU): each entry on every shape
// its kernel takes (tiles: rows and cols multiples of the chunk's elements; thin paths: that
// many rows or columns). (The gather kernel on forced modes: TransposeGather above.)
TEST(TransposePlan, ForcedPathsWriteEveryElementOnce) {
  for (const auto& [rows, cols] : invariant_shapes()) {
    if (rows < 2 || cols < 2) continue;
    for (const int e : {1, 2, 4, 8}) {
      for (const kernelkit::TransposeConfig& c : kernelkit::kTransposeConfigs) {
        if (c.elem_bytes != e || c.path == TransposePath::kCopy || c.path == TransposePath::kGather)
          continue;
        TransposePlan p;
        p.elem_bytes = e;
        p.path = c.path;
        p.thin = c.thin;
        p.chunk_bytes = c.path == TransposePath::kTile ? c.chunk_bytes : 16;
        const int vec = c.chunk_bytes / e;
        if (c.path == TransposePath::kTile && (rows % vec != 0 || cols % vec != 0)) continue;
        if (c.path == TransposePath::kThinRows && rows != c.thin) continue;
        if (c.path == TransposePath::kThinCols && cols != c.thin) continue;
        p = kernelkit::detail::finish_transpose_plan(p, rows, cols, kktest::h100());
        kernelkit::detail::transpose_set_order(&p, c.col_order);
        check_plan_shape(p, rows, cols);
        for (int out_ph = 0; out_ph < 16 / e; ++out_ph) {
          const auto count = simulate_stores(p, rows, cols, out_ph);
          int64_t bad = 0;
          for (const int n : count)
            bad += n != 1;
          EXPECT_EQ(bad, 0) << rows << "x" << cols << " elem " << e << " " << path_name(p.path)
                            << " out phase " << out_ph;
        }
      }
    }
  }
}

std::string describe(const kernelkit::TransposeConfig& c) {
  return std::string(path_name(c.path)) + " elem_bytes=" + std::to_string(c.elem_bytes) +
         " chunk_bytes=" + std::to_string(c.chunk_bytes) +
         " col_order=" + std::to_string(c.col_order) + " thin=" + std::to_string(c.thin) +
         " flat_out=" + std::to_string(c.flat_out);
}

TEST(TransposeConfigs, EachElementSizeTogetherNoDuplicates) {
  kktest::expect_ranges_tile(
      std::size(kernelkit::kTransposeConfigs),
      {kernelkit::transpose_configs_of(1), kernelkit::transpose_configs_of(2),
       kernelkit::transpose_configs_of(4), kernelkit::transpose_configs_of(8)});
  kktest::expect_distinct_entries(kernelkit::kTransposeConfigs, describe);
}

// Plans over shapes (odd, prime, tiny, few rows or columns, past 2^31 elements) x devices x
// alignments x element sizes: each is an entry of kTransposeConfigs (what launch_transpose can
// launch), and every entry is some shape's plan (no kernel is built that no call runs).
TEST(TransposeConfigs, EveryPlanIsAnEntryAndEveryEntryIsPlanned) {
  const int64_t sizes[] = {
      1,     2,     3,      4,      5,       6,        7,           8,    9,    12,    16,
      17,    24,    31,     32,     33,      40,       63,          64,   65,   96,    100,
      127,   128,   129,    200,    255,     256,      257,         260,  500,  1000,  1021,
      1024,  1025,  2048,   2049,   4093,    4096,     4099,        8192, 8193, 16384, 33554,
      65536, 65537, 100003, 262147, 1048576, 33554432, 2147483659LL};
  kktest::PlannedEntries planned(kernelkit::kTransposeConfigs);
  for (const auto& dev : kktest::all_devices()) {
    for (const int e : {1, 2, 4, 8}) {
      const kernelkit::ConfigRange range = kernelkit::transpose_configs_of(e);
      for (const int64_t rows : sizes) {
        for (const int64_t cols : sizes) {
          if (rows > (int64_t{1} << 40) / cols) continue;
          for (int in_align = e; in_align <= 16; in_align *= 2) {
            for (int out_align = e; out_align <= 16; out_align *= 2) {
              const TransposePlan p = plan_transpose(rows, cols, e, Alignment(in_align),
                                                     Alignment(out_align), dev.info);
              const int i = planned.count(kernelkit::transpose_config(p), range.begin, range.end);
              ASSERT_GE(i, 0) << dev.name << " " << rows << "x" << cols << " elem " << e
                              << " align " << in_align << "/" << out_align << " "
                              << path_name(p.path);
            }
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe, "no shape plans");
  EXPECT_GT(planned.plans(), 100000);
}

// Grids past INT32_MAX tiles stay legal (the kernels stride by gridDim.x).
TEST(TransposePlan, HugeShapes) {
  const DeviceInfo d = kktest::h100();
  const TransposePlan p = plan_transpose(int64_t{1} << 40, 2, 1, Alignment(), Alignment(), d);
  EXPECT_EQ(p.path, TransposePath::kThinCols);
  EXPECT_EQ(p.shape.grid.x, static_cast<unsigned>((int64_t{1} << 40) / 8192));
  const TransposePlan q =
      plan_transpose(int64_t{1} << 31, int64_t{1} << 24, 4, Alignment(), Alignment(), d);
  EXPECT_EQ(q.path, TransposePath::kTile);
  EXPECT_GT(q.num_tiles, INT32_MAX);
  EXPECT_EQ(q.shape.grid.x, static_cast<unsigned>(INT32_MAX));
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{int64_t{1} << 31, (int64_t{1} << 24) + 1},
                                                {(int64_t{1} << 31) + 1, int64_t{1} << 24},
                                                {int64_t{1} << 40, 11},
                                                {13, int64_t{1} << 40}}) {
    const TransposePlan u = plan_transpose(rows, cols, 4, Alignment(16), Alignment(16), d);
    EXPECT_EQ(u.path, TransposePath::kGather) << rows << "x" << cols;
    EXPECT_EQ(u.gather.rows, rows);
    EXPECT_EQ(u.gather.cols, cols);
    EXPECT_GT(u.num_tiles, INT32_MAX / 64) << rows << "x" << cols;
    EXPECT_EQ(u.shape.grid.x, static_cast<unsigned>(std::min<int64_t>(u.num_tiles, INT32_MAX)));
  }
}

TEST(TransposeArgs, Checks) {
  alignas(16) static float buf[64];
  using kernelkit::transpose_args_ok;
  EXPECT_TRUE(transpose_args_ok(buf, buf + 32, 4, 8));
  EXPECT_TRUE(transpose_args_ok<float>(nullptr, nullptr, 0, 5));
  EXPECT_TRUE(transpose_args_ok<float>(nullptr, nullptr, 5, 0));
  EXPECT_FALSE(transpose_args_ok(buf, buf + 32, -1, 8));
  EXPECT_FALSE(transpose_args_ok(buf, buf + 32, 8, -1));
  EXPECT_FALSE(transpose_args_ok<float>(nullptr, buf, 4, 8));
  EXPECT_FALSE(transpose_args_ok<float>(buf, nullptr, 4, 8));
  EXPECT_FALSE(transpose_args_ok(buf, buf, 4, 8));       // in place
  EXPECT_FALSE(transpose_args_ok(buf, buf + 31, 4, 8));  // overlap by one element
  EXPECT_TRUE(transpose_args_ok(buf + 32, buf, 4, 8));   // adjacent
  EXPECT_FALSE(transpose_args_ok(buf, buf + 32, int64_t{1} << 32, int64_t{1} << 32));
  EXPECT_FALSE(transpose_args_ok(buf, buf + 32, INT64_MAX / 4 / 2 + 1, 2));
  // Not aligned to the element's size.
  const auto* odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(buf) + 2);
  EXPECT_FALSE(transpose_args_ok(odd, buf + 32, 2, 2));
  EXPECT_FALSE(transpose_args_ok(buf, const_cast<float*>(odd) + 40, 2, 2));
  const auto* half = reinterpret_cast<const __half*>(reinterpret_cast<const char*>(buf) + 1);
  EXPECT_FALSE(transpose_args_ok(half, reinterpret_cast<const __half*>(buf + 32), 2, 2));
  EXPECT_TRUE(transpose_args_ok(reinterpret_cast<const __half*>(buf) + 1,
                                reinterpret_cast<const __half*>(buf + 32), 2, 2));
  // 8-byte elements must be 8-byte aligned (they move as one 8-byte word).
  const auto* d4 = reinterpret_cast<const double*>(buf + 1);
  EXPECT_FALSE(transpose_args_ok(d4, reinterpret_cast<const double*>(buf + 32), 2, 2));
}

}  // namespace
