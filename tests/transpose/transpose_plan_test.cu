// SPDX-License-Identifier: Apache-2.0
// plan_transpose on the host (no GPU): the expected plan for the benchmark's shapes on every
// device, and invariants over many shapes, element sizes, alignments and devices: a legal
// launch, shared memory within the device's limits, each path's preconditions, and a host
// model of each kernel's stores that must write every out element exactly once.
// transpose_args_ok's checks are host-pure too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/transpose/transpose.cuh"

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
    case TransposePath::kShift:
      return "shift";
    case TransposePath::kSector:
      return "sector";
    case TransposePath::kScalar:
      return "scalar";
  }
  return "?";
}

struct Expected {
  int64_t rows, cols;
  int elem;
  TransposePath path;
  int chunk;
  bool windows;
  int thin;
  int tile_rows, tile_cols;
  bool col_order = false;  // on the H100 (transpose_col_order; it depends on the SM count)
};

// The benchmark's shapes (goals: TRANSPOSE f32, TRANSPOSE_OTHER f16 / i8 / f64) with 16-byte
// aligned pointers, and a few others. The same plan on every device.
const std::vector<Expected> kTable = {
    // f32
    {2, 16777216, 4, TransposePath::kThinRows, 16, false, 2, 2, 2048},
    {16777216, 2, 4, TransposePath::kThinCols, 16, false, 2, 2048, 2},
    {3, 8388608, 4, TransposePath::kThinRows, 16, false, 3, 3, 2048},
    {8388608, 3, 4, TransposePath::kThinCols, 16, false, 3, 2048, 3},
    {7, 4194304, 4, TransposePath::kThinRows, 16, false, 7, 7, 1024},
    {4194304, 7, 4, TransposePath::kThinCols, 16, false, 7, 1024, 7},
    {32, 1048576, 4, TransposePath::kTile, 16, false, 0, 32, 128},
    {1048576, 32, 4, TransposePath::kTile, 16, false, 0, 128, 32},
    {100, 300000, 4, TransposePath::kTile, 16, false, 0, 128, 32},
    {300000, 100, 4, TransposePath::kTile, 16, false, 0, 32, 128},
    {1000, 33554, 4, TransposePath::kShift, 16, false, 0, 64, 64, true},
    {4096, 8192, 4, TransposePath::kTile, 16, false, 0, 64, 64},
    {8192, 8192, 4, TransposePath::kTile, 16, false, 0, 64, 64},
    {16385, 4097, 4, TransposePath::kSector, 16, false, 0, 64, 64},
    {8191, 8193, 4, TransposePath::kSector, 16, false, 0, 64, 64},
    {1001, 33554, 4, TransposePath::kSector, 16, false, 0, 64, 64, true},
    {1, 1000, 4, TransposePath::kCopy, 0, false, 0, 0, 0},
    {1000, 1, 4, TransposePath::kCopy, 0, false, 0, 0, 0},
    // f16
    {8192, 8192, 2, TransposePath::kTile, 16, false, 0, 128, 128},
    {3, 8388608, 2, TransposePath::kThinRows, 16, false, 3, 3, 4096},
    {8388608, 3, 2, TransposePath::kThinCols, 16, false, 3, 4096, 3},
    {1000, 33554, 2, TransposePath::kTile, 16, true, 0, 128, 128, true},
    {8190, 8190, 2, TransposePath::kTile, 4, false, 0, 32, 32},
    {8191, 8191, 2, TransposePath::kScalar, 0, false, 0, 64, 64},
    // i8
    {8192, 8192, 1, TransposePath::kTile, 8, false, 0, 128, 128},
    {3, 8388608, 1, TransposePath::kThinRows, 16, false, 3, 3, 8192},
    {8388608, 3, 1, TransposePath::kThinCols, 16, false, 3, 8192, 3},
    {1000, 33554, 1, TransposePath::kTile, 8, true, 0, 128, 128, true},
    {1001, 1001, 1, TransposePath::kScalar, 0, false, 0, 64, 64},
    // f64
    {8192, 8192, 8, TransposePath::kTile, 16, false, 0, 32, 32},
    {3, 8388608, 8, TransposePath::kThinRows, 16, false, 3, 3, 1024},
    {8388608, 3, 8, TransposePath::kThinCols, 16, false, 3, 1024, 3},
    {1000, 33554, 8, TransposePath::kTile, 16, false, 0, 32, 32, true},
    {1001, 1000, 8, TransposePath::kScalar, 0, false, 0, 64, 64},
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
      EXPECT_EQ(p.in_windows, e.windows) << label;
      EXPECT_EQ(p.thin, e.thin) << label;
      EXPECT_EQ(p.tile_rows, e.tile_rows) << label;
      EXPECT_EQ(p.tile_cols, e.tile_cols) << label;
      if (dev.info.sm_count == 132) EXPECT_EQ(p.col_order, e.col_order) << label;
    }
  }
}

TEST(TransposePlan, AlignmentPicksThePath) {
  const DeviceInfo d = kktest::h100();
  // out not chunk-aligned: no tile (out rows would not start on chunk boundaries).
  EXPECT_EQ(plan_transpose(1024, 1024, 4, Alignment(), Alignment(4), d).path,
            TransposePath::kSector);
  EXPECT_EQ(plan_transpose(1024, 1024, 4, Alignment(), Alignment(8), d).path,
            TransposePath::kSector);
  EXPECT_EQ(plan_transpose(1024, 1024, 8, Alignment(), Alignment(8), d).path,
            TransposePath::kScalar);
  EXPECT_EQ(plan_transpose(1024, 1024, 2, Alignment(), Alignment(8), d).path, TransposePath::kTile);
  EXPECT_EQ(plan_transpose(1024, 1024, 2, Alignment(), Alignment(8), d).chunk_bytes, 4);
  EXPECT_EQ(plan_transpose(1024, 1024, 2, Alignment(), Alignment(2), d).path,
            TransposePath::kScalar);
  EXPECT_EQ(plan_transpose(1024, 1024, 1, Alignment(), Alignment(8), d).path, TransposePath::kTile);
  EXPECT_EQ(plan_transpose(1024, 1024, 1, Alignment(), Alignment(4), d).chunk_bytes, 4);
  // in not chunk-aligned: the tile path reads windows, except for 4-byte elements, which
  // take the shifted kernel (out rows chunk-aligned) or the sector kernel (not).
  EXPECT_TRUE(plan_transpose(1024, 1024, 2, Alignment(4), Alignment(), d).in_windows);
  EXPECT_FALSE(plan_transpose(1024, 1024, 4, Alignment(), Alignment(), d).in_windows);
  EXPECT_TRUE(plan_transpose(1024, 1023, 2, Alignment(), Alignment(), d).in_windows);
  EXPECT_EQ(plan_transpose(1024, 1024, 4, Alignment(4), Alignment(), d).path,
            TransposePath::kShift);
  EXPECT_EQ(plan_transpose(1024, 1023, 4, Alignment(), Alignment(), d).path, TransposePath::kShift);
  EXPECT_EQ(plan_transpose(1023, 1024, 4, Alignment(), Alignment(), d).path,
            TransposePath::kSector);
  EXPECT_EQ(plan_transpose(1023, 1023, 4, Alignment(4), Alignment(), d).path,
            TransposePath::kSector);
  EXPECT_EQ(plan_transpose(1026, 1024, 4, Alignment(), Alignment(), d).path,
            TransposePath::kSector);
  // Thin: any alignment; thin cols store directly only into chunk-aligned out rows.
  EXPECT_EQ(plan_transpose(3, 1000, 4, Alignment(4), Alignment(4), d).path,
            TransposePath::kThinRows);
  EXPECT_TRUE(plan_transpose(1000, 3, 4, Alignment(4), Alignment(), d).out_aligned);
  EXPECT_FALSE(plan_transpose(1000, 3, 4, Alignment(), Alignment(4), d).out_aligned);
  EXPECT_FALSE(plan_transpose(1001, 3, 4, Alignment(), Alignment(), d).out_aligned);
  // Square-ish small matrices of 8 or fewer rows and columns are thin.
  EXPECT_EQ(plan_transpose(8, 8, 4, Alignment(), Alignment(), d).path, TransposePath::kThinRows);
  EXPECT_EQ(plan_transpose(9, 8, 4, Alignment(), Alignment(), d).path, TransposePath::kThinCols);
  EXPECT_EQ(plan_transpose(9, 9, 4, Alignment(), Alignment(), d).path, TransposePath::kSector);
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
    case TransposePath::kShift: {
      const int vec = 16 / e, tile = p.tile_rows;
      for (int64_t t = 0; t < p.num_tiles; ++t) {
        int64_t tr, tc;
        tile_at(p, t, &tr, &tc);
        for (int cc = 0; cc < tile; ++cc) {
          const int64_t c = tc * tile + cc;
          if (c >= cols) continue;
          const int po = static_cast<int>((out_ph + c * rows) % vec);
          for (int kk = 0; kk < tile / vec; ++kk) {
            const int64_t rs = tr * tile + int64_t{vec} * kk - po;
            for (int j = 0; j < vec; ++j)
              hit(c, rs + j);
          }
        }
      }
      break;
    }
    case TransposePath::kSector: {
      // out_ph: element phase of out mod 8 (its 32-byte sector phase).
      using G = kernelkit::detail::TransposeSectorGeometry;
      EXPECT_EQ(p.tile_rows, G::kTile);
      for (int64_t t = 0; t < p.num_tiles; ++t) {
        int64_t tr, tc;
        tile_at(p, t, &tr, &tc);
        for (int cc = 0; cc < G::kTile; ++cc) {
          const int64_t c = tc * G::kTile + cc;
          if (c >= cols) continue;
          const int own = G::out_phase(out_ph, static_cast<int>(rows % 8), cc % 8);
          EXPECT_EQ((out_ph + c * rows) % 8, own) << "sector phase of out row " << c;
          for (int kk = 0; kk < G::kOutChunks; ++kk) {
            const int64_t rs = tr * G::kTile - own + int64_t{G::kVec} * kk;
            // chunks 16-byte aligned, pairs of them whole 32-byte sectors
            EXPECT_EQ((out_ph + c * rows + rs) % 8, 4 * (kk % 2)) << "chunk " << kk;
            for (int j = 0; j < G::kVec; ++j)
              hit(c, rs + j);
          }
        }
      }
      break;
    }
    case TransposePath::kScalar:
      for (int64_t t = 0; t < p.num_tiles; ++t) {
        int64_t tr, tc;
        tile_at(p, t, &tr, &tc);
        const int64_t r0 = tr * p.tile_rows, c0 = tc * p.tile_cols;
        for (int i = 0; i < p.tile_rows; ++i)
          for (int j = 0; j < p.tile_cols; ++j)
            hit(c0 + j, r0 + i);
      }
      break;
  }
  return count;
}

// Host model of transpose_staged_kernel's copy and read back (the kernel's index math): every
// element a thread reads back must come from a staged chunk the copy wrote, holding that
// element, inside the tile's shared memory and inside the row's span; in_ph_bytes: the byte
// phase of the in pointer (a multiple of the element size). Returns the number of failures.
int64_t simulate_staged(const TransposePlan& p, int64_t rows, int64_t cols, int in_ph_bytes) {
  const int e = p.elem_bytes, cb = p.chunk_bytes, vec = cb / e;
  const int a_blocks = p.tile_rows / vec, b_chunks = p.tile_cols / vec;
  int b_log2 = 0;
  while ((1 << b_log2) < b_chunks)
    ++b_log2;
  const int m_log2 = cb == 16 ? b_log2 : (b_log2 > 0 ? b_log2 - 1 : 0);
  const int m_chunks = 1 << m_log2, row_chunks = m_chunks + 1;
  const int64_t smem_chunks = static_cast<int64_t>(p.shape.smem) / 16;
  const int64_t in_lo = 4096 + in_ph_bytes, in_hi = in_lo + rows * cols * e;
  int64_t bad = 0;
  std::vector<int64_t> stage(static_cast<size_t>(smem_chunks));
  for (int64_t t = 0; t < p.num_tiles; ++t) {
    int64_t tr, tc;
    tile_at(p, t, &tr, &tc);
    const int64_t r0 = tr * p.tile_rows, c0 = tc * p.tile_cols;
    const int vc = static_cast<int>(std::min<int64_t>(cols - c0, p.tile_cols));
    std::fill(stage.begin(), stage.end(), -1);
    const int items = p.tile_rows * row_chunks;
    for (int f = 0; f < items; ++f) {
      const bool main = f < p.tile_rows * m_chunks;
      const int row = main ? f >> m_log2 : f - p.tile_rows * m_chunks;
      const int j = main ? f & (m_chunks - 1) : m_chunks;
      const int64_t r = r0 + row;
      if (r >= rows) continue;
      const int64_t first = in_lo + (r * cols + c0) * e;
      const int phase = static_cast<int>(first & 15);
      if (16 * j >= phase + vc * e) continue;
      const int64_t g = (first & ~int64_t{15}) + 16 * j;
      const int64_t idx = row * row_chunks + row / vec + j;
      if (idx < 0 || idx >= smem_chunks) {
        ++bad;
        continue;
      }
      bad += stage[static_cast<size_t>(idx)] != -1;  // one copy per chunk
      stage[static_cast<size_t>(idx)] = g;
      bad += g + 16 <= in_lo || g >= in_hi;  // every staged chunk holds matrix bytes
    }
    for (int a = 0; a < a_blocks; ++a) {
      const int64_t rf = r0 + int64_t{vec} * a;
      if (rf >= rows) continue;
      for (int b = 0; b < b_chunks; ++b)
        for (int k = 0; k < vec; ++k) {
          const int row = vec * a + k;
          const int64_t r = rf + k;
          const int phase = static_cast<int>((in_lo + (r * cols + c0) * e) & 15);
          const int x = phase + cb * b;
          if ((x / cb + 2) * cb > row_chunks * 16) ++bad;  // the window's two units
          for (int m = 0; m < vec; ++m) {
            const int64_t c = c0 + int64_t{vec} * b + m;
            if (c >= cols) continue;
            const int byte = x + m * e;
            const int64_t idx = row * row_chunks + row / vec + byte / 16;
            if (idx >= smem_chunks || stage[static_cast<size_t>(idx)] == -1) {
              ++bad;
              continue;
            }
            bad += stage[static_cast<size_t>(idx)] + byte % 16 != in_lo + (r * cols + c) * e;
          }
        }
    }
  }
  return bad;
}

// Host model of transpose_sector_kernel's loads and read back (the kernel's index math): every
// chunk it loads is aligned and lies in in (or is read element by element at the edges of the
// matrix), fills one staged slot inside shared memory, and every element a thread stores was
// staged where it reads it. in_ph: element phase of in (mod 4); out_ph: of out (mod 8).
// Returns the number of failures.
int64_t simulate_sector(const TransposePlan& p, int64_t rows, int64_t cols, int in_ph, int out_ph) {
  using G = kernelkit::detail::TransposeSectorGeometry;
  const int64_t n = rows * cols;
  const int cols_m = static_cast<int>(cols % 4);
  int64_t bad = 0;
  std::vector<int64_t> words(G::kSmemWords);
  for (int64_t t = 0; t < p.num_tiles; ++t) {
    int64_t tr, tc;
    tile_at(p, t, &tr, &tc);
    const int64_t c0 = tc * G::kTile;
    const int64_t base = (tr * G::kTile - G::kHalo) * cols + c0;
    const bool inside = base - 3 >= 0 && base + (G::kLdRows - 1) * cols + G::kRowWords <= n;
    std::fill(words.begin(), words.end(), int64_t{-2});  // -2: not staged, -1: outside in
    const int vc = static_cast<int>(std::min<int64_t>(cols - c0, G::kTile));
    for (int f = 0; f < G::kLoadItems; ++f) {
      const int rho = f / G::kChunks, k = f - rho * G::kChunks;
      if (G::kVec * k >= vc + G::in_phase(in_ph, cols_m, rho)) continue;  // not needed
      const int64_t g = base + rho * cols - G::in_phase(in_ph, cols_m, rho) + G::kVec * k;
      bad += ((in_ph + g) % 4 + 4) % 4 != 0;  // an aligned chunk
      if (inside) bad += g < 0 || g + G::kVec > n;
      const int w0 = G::slot(rho) + G::kVec * k;
      if (w0 < 0 || w0 + G::kVec > G::kSmemWords) {
        ++bad;
        continue;
      }
      for (int j = 0; j < G::kVec; ++j) {
        bad += words[static_cast<size_t>(w0 + j)] != -2;  // one chunk per slot
        words[static_cast<size_t>(w0 + j)] = g + j >= 0 && g + j < n ? g + j : -1;
      }
    }
    for (int x = 0; x < 256; ++x) {
      const int kk = x % G::kOutChunks, cq = x / G::kOutChunks;
      const int rows_m8 = static_cast<int>(rows % 8);
      const int own = G::out_phase(out_ph, rows_m8, cq % 8);
      const int rot = G::read_rotation(in_ph, cols_m, out_ph, rows_m8, cq);
      const int64_t rs = tr * G::kTile - own + int64_t{G::kVec} * kk;
      for (int step = 0; step < G::kVec; ++step) {
        // step `step` reads element j = (step + rot) & 3, which the rotation back puts at j
        const int j = (step + rot) & 3;
        EXPECT_EQ(((j - rot) & 3), step);
        const int rho = G::kHalo - own + G::kVec * kk + j;
        const int rd = G::slot(rho) + G::in_phase(in_ph, cols_m, rho) + cq;
        for (int i = 0; i < G::kStores; ++i) {
          const int64_t c = c0 + cq + G::kOutRowsPerPass * i, r = rs + j;
          const int w = rd + G::kOutRowsPerPass * i;
          if (w < 0 || w >= G::kSmemWords) {
            ++bad;
            continue;
          }
          if (c < cols && r >= 0 && r < rows) bad += words[static_cast<size_t>(w)] != r * cols + c;
        }
      }
    }
  }
  return bad;
}

// The invariants every plan must hold on device d.
void check_plan(const TransposePlan& p, int64_t rows, int64_t cols, int e, int in_align,
                int out_align, const DeviceInfo& d, const std::string& label) {
  EXPECT_EQ(p.elem_bytes, e) << label;
  // a kernel launch_transpose instantiates
  EXPECT_GE(kernelkit::config_index(kernelkit::kTransposeConfigs, kernelkit::transpose_config(p)),
            0)
      << label;
  if (rows == 1 || cols == 1) {
    EXPECT_EQ(p.path, TransposePath::kCopy) << label;
    return;
  }
  EXPECT_NE(p.path, TransposePath::kCopy) << label;
  // A legal launch that fits the device.
  EXPECT_GE(p.num_tiles, 1) << label;
  EXPECT_EQ(static_cast<int64_t>(p.shape.grid.x), std::min<int64_t>(p.num_tiles, INT32_MAX))
      << label;
  EXPECT_EQ(p.shape.grid.y * p.shape.grid.z, 1u) << label;
  EXPECT_EQ(p.shape.block.x, static_cast<unsigned>(kernelkit::detail::kTransposeBlock)) << label;
  EXPECT_LE(static_cast<int>(p.shape.block.x), d.max_threads_per_block) << label;
  EXPECT_FALSE(p.shape.is_cluster()) << label;
  // Static shared memory, or dynamic (the staged kernel's rows), within the 48 KiB a block gets
  // without opting in.
  const int64_t smem = p.static_smem + static_cast<int64_t>(p.shape.smem);
  EXPECT_GT(smem, 0) << label;
  EXPECT_TRUE(p.static_smem == 0 || p.shape.smem == 0) << label;
  EXPECT_LE(smem, d.smem_per_block) << label;
  // One block fits an SM with the register budget of every transpose kernel (<= 64 on sm_90,
  // <= 85 for the 1-/2-byte thin cols of 6-8 columns).
  EXPECT_GE(kernelkit::blocks_per_sm(d, p.shape.block.x, 85, smem), 1) << label;
  EXPECT_EQ(p.tiles_c * p.tile_cols >= cols, true) << label;
  EXPECT_EQ(p.tiles_r * p.tiles_c, p.num_tiles) << label;
  EXPECT_GE(p.tiles_r * p.tile_rows, rows) << label;
  if (p.path != TransposePath::kTile && p.path != TransposePath::kShift &&
      p.path != TransposePath::kSector)
    EXPECT_FALSE(p.col_order) << label;
  if (p.col_order) EXPECT_TRUE(p.tiles_r > 1 && p.tiles_c > 1) << label;
  switch (p.path) {
    case TransposePath::kTile: {
      const int vec = p.chunk_bytes / e;
      EXPECT_TRUE(p.chunk_bytes == (e == 1 ? 8 : 16) || (p.chunk_bytes == 4 && e <= 2)) << label;
      EXPECT_EQ(rows % vec, 0) << label;
      EXPECT_GE(out_align, p.chunk_bytes) << label;
      if (!p.in_windows) {
        EXPECT_EQ(cols % vec, 0) << label;
        EXPECT_GE(in_align, p.chunk_bytes) << label;
      }
      if (e == 4) EXPECT_FALSE(p.in_windows) << label;  // the shifted kernel instead
      if (p.chunk_bytes == 4) {
        EXPECT_FALSE(p.in_windows) << label;
        EXPECT_EQ(p.tile_rows, 16 * vec) << label;
        EXPECT_EQ(p.tile_cols, 16 * vec) << label;
      }
      const int a = p.tile_rows / vec, b = p.tile_cols / vec;
      EXPECT_EQ(a * vec, p.tile_rows) << label;
      EXPECT_EQ(a & (a - 1), 0) << label;
      EXPECT_EQ(b & (b - 1), 0) << label;
      EXPECT_EQ(a * b, 256) << label;
      if (p.in_windows) {
        EXPECT_EQ(static_cast<int64_t>(p.shape.smem),
                  kernelkit::detail::transpose_staged_smem_bytes(e, p.chunk_bytes, a, b))
            << label;
      } else {
        EXPECT_EQ(p.static_smem, 256 * vec * p.chunk_bytes) << label;
        EXPECT_EQ(p.shape.smem, 0u) << label;
      }
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
    case TransposePath::kShift:  // only the in rows are not chunk-aligned
      EXPECT_EQ(e, 4) << label;
      EXPECT_EQ(rows % 4, 0) << label;
      EXPECT_GE(out_align, 16) << label;
      EXPECT_TRUE(cols % 4 != 0 || in_align < 16) << label;
      break;
    case TransposePath::kSector:  // the out rows are not chunk-aligned
      EXPECT_EQ(e, 4) << label;
      EXPECT_TRUE(rows % 4 != 0 || out_align < 16) << label;
      EXPECT_EQ(p.tiles_r, (rows + 7 + 63) / 64) << label;
      EXPECT_EQ(p.static_smem, kernelkit::detail::TransposeSectorGeometry::kSmemBytes) << label;
      break;
    case TransposePath::kScalar:
      EXPECT_NE(e, 4) << label;
      break;
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
            // The plan does not depend on the device (every kernel fits every GPU).
            EXPECT_EQ(p.path, p0.path) << dev.name << " " << label;
            EXPECT_EQ(p.num_tiles, p0.num_tiles) << dev.name << " " << label;
          }
          // Every out element written exactly once, for every out phase the alignment allows.
          // (the sector kernel: every phase of out mod 8, its 32-byte sector phase)
          const int vec = p0.path == TransposePath::kSector ? 8 : 16 / e;
          for (int out_ph = 0; out_ph < (out_align >= 16 ? 1 : vec); ++out_ph) {
            const auto count = simulate_stores(p0, rows, cols, out_ph);
            int64_t bad = 0;
            for (const int c : count)
              bad += c != 1;
            EXPECT_EQ(bad, 0) << label << " " << path_name(p0.path) << " out phase " << out_ph;
          }
          // The staged kernel reads back every element from where its copy put it, for every
          // in phase the alignment allows.
          if (p0.path == TransposePath::kTile && p0.in_windows)
            for (int in_ph = 0; in_ph < (in_align >= 16 ? 1 : 16); in_ph += e)
              EXPECT_EQ(simulate_staged(p0, rows, cols, in_ph), 0)
                  << label << " staged, in phase " << in_ph;
          if (p0.path == TransposePath::kSector)
            for (int in_ph = 0; in_ph < (in_align >= 16 ? 1 : 4); ++in_ph)
              for (int out_ph = 0; out_ph < 8; out_ph += out_align >= 16 ? 4 : 1)
                EXPECT_EQ(simulate_sector(p0, rows, cols, in_ph, out_ph), 0)
                    << label << " sector, in phase " << in_ph << ", out phase " << out_ph;
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

// Every kernel of kTransposeConfigs, forced onto shapes it does not get from the plan, covers
// out exactly once too (the tests run these on the GPU): each entry on every shape its kernel
// takes (tiles: rows a multiple of the chunk's elements, and cols too with aligned in rows;
// thin paths: that many rows or columns).
TEST(TransposePlan, ForcedPathsWriteEveryElementOnce) {
  for (const auto& [rows, cols] : invariant_shapes()) {
    if (rows < 2 || cols < 2) continue;
    for (const int e : {1, 2, 4, 8}) {
      std::vector<TransposePlan> plans;
      for (const kernelkit::TransposeConfig& c : kernelkit::kTransposeConfigs) {
        if (c.elem_bytes != e || c.path == TransposePath::kCopy) continue;
        TransposePlan p;
        p.elem_bytes = e;
        p.path = c.path;
        p.in_windows = c.in_windows;
        p.col_order = c.col_order;
        p.thin = c.thin;
        p.chunk_bytes = c.path == TransposePath::kTile
                            ? c.chunk_bytes
                            : (c.path == TransposePath::kScalar ? 0 : 16);
        const int vec = c.chunk_bytes / e;
        if (c.path == TransposePath::kTile &&
            (rows % vec != 0 || (!c.in_windows && cols % vec != 0)))
          continue;
        if (c.path == TransposePath::kThinRows && rows != c.thin) continue;
        if (c.path == TransposePath::kThinCols && cols != c.thin) continue;
        plans.push_back(p);
      }
      for (TransposePlan q : plans) {
        q = kernelkit::detail::finish_transpose_plan(q, rows, cols, kktest::h100().smem_per_block);
        check_plan_shape(q, rows, cols);
        if (q.path == TransposePath::kTile && q.in_windows)
          for (int in_ph = 0; in_ph < 16; in_ph += e)
            EXPECT_EQ(simulate_staged(q, rows, cols, in_ph), 0)
                << rows << "x" << cols << " elem " << e << " staged, in phase " << in_ph;
        if (q.path == TransposePath::kSector)
          for (int in_ph = 0; in_ph < 4; ++in_ph)
            for (int out_ph = 0; out_ph < 8; ++out_ph)
              EXPECT_EQ(simulate_sector(q, rows, cols, in_ph, out_ph), 0)
                  << rows << "x" << cols << " sector, in phase " << in_ph << ", out phase "
                  << out_ph << (q.col_order ? ", column order" : "");
        for (int out_ph = 0; out_ph < (q.path == TransposePath::kSector ? 8 : 16 / e); ++out_ph) {
          const auto count = simulate_stores(q, rows, cols, out_ph);
          int64_t bad = 0;
          for (const int c : count)
            bad += c != 1;
          EXPECT_EQ(bad, 0) << rows << "x" << cols << " elem " << e << " " << path_name(q.path)
                            << " out phase " << out_ph;
        }
      }
    }
  }
}

std::string describe(const kernelkit::TransposeConfig& c) {
  return std::string(path_name(c.path)) + " elem_bytes=" + std::to_string(c.elem_bytes) +
         " chunk_bytes=" + std::to_string(c.chunk_bytes) +
         " in_windows=" + std::to_string(c.in_windows) +
         " col_order=" + std::to_string(c.col_order) + " thin=" + std::to_string(c.thin);
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

// The sector kernel's read back: at every step, a warp's 32 word loads (chunks kk = 0..15 of out
// row groups cq = 2w and 2w + 1) fall into banks with at most 2 distinct words each (the fewest
// for 16 lanes whose words share a residue mod 4), for every phase of in and out and every
// rows and cols mod 8 and 4; in order (no rotation) f32 16385 x 4097 would take 4.
TEST(TransposePlan, SectorReadBackBankConflicts) {
  using G = kernelkit::detail::TransposeSectorGeometry;
  int worst_unrotated = 0;
  for (int in_ph = 0; in_ph < 4; ++in_ph)
    for (int cols_m = 0; cols_m < 4; ++cols_m)
      for (int out_ph8 = 0; out_ph8 < 8; ++out_ph8)
        for (int rows_m8 = 0; rows_m8 < 8; ++rows_m8)
          for (const bool rotate : {true, false})
            for (int w = 0; w < 8; ++w)
              for (int step = 0; step < G::kVec; ++step) {
                std::vector<std::vector<int>> bank(32);
                for (int lane = 0; lane < 32; ++lane) {
                  const int kk = lane % 16, cq = 2 * w + lane / 16;
                  const int own = G::out_phase(out_ph8, rows_m8, cq % 8);
                  const int rot =
                      rotate ? G::read_rotation(in_ph, cols_m, out_ph8, rows_m8, cq) : 0;
                  const int rho = G::kHalo - own + G::kVec * kk + ((step + rot) & 3);
                  const int word = G::slot(rho) + G::in_phase(in_ph, cols_m, rho) + cq;
                  auto& b = bank[static_cast<size_t>(word % 32)];
                  if (std::find(b.begin(), b.end(), word) == b.end()) b.push_back(word);
                }
                size_t most = 0;
                for (const auto& b : bank)
                  most = std::max(most, b.size());
                if (rotate) {
                  EXPECT_LE(most, 2u) << "in phase " << in_ph << " cols%4 " << cols_m
                                      << " out phase " << out_ph8 << " rows%8 " << rows_m8;
                } else if (in_ph == 0 && cols_m == 1 && out_ph8 == 0 && rows_m8 == 1) {
                  worst_unrotated = std::max(worst_unrotated, static_cast<int>(most));
                }
              }
  EXPECT_EQ(worst_unrotated, 4);  // 16385 x 4097 without the rotation
}

// The sector kernel's model on larger odd shapes than the invariants' (several tile rows and
// columns, full and partial tiles, both orders), at every in and out phase.
TEST(TransposePlan, SectorKernelOnOddShapes) {
  const DeviceInfo d = kktest::h100();
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {2049, 1025}, {1025, 2049}, {131, 4097}, {4097, 67}, {577, 577}, {66, 1000}}) {
    for (const bool col_order : {false, true}) {
      TransposePlan p = plan_transpose(rows, cols, 4, Alignment(), Alignment(), d);
      ASSERT_EQ(p.path, TransposePath::kSector) << rows << "x" << cols;
      p.col_order = col_order;
      for (int in_ph = 0; in_ph < 4; ++in_ph)
        for (int out_ph = 0; out_ph < 8; ++out_ph)
          EXPECT_EQ(simulate_sector(p, rows, cols, in_ph, out_ph), 0)
              << rows << "x" << cols << " in phase " << in_ph << ", out phase " << out_ph;
      int64_t bad = 0;
      for (const int c : simulate_stores(p, rows, cols, 3))
        bad += c != 1;
      EXPECT_EQ(bad, 0) << rows << "x" << cols;
    }
  }
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
  const TransposePlan r =
      plan_transpose(int64_t{1} << 31, (int64_t{1} << 24) + 1, 4, Alignment(), Alignment(), d);
  EXPECT_EQ(r.path, TransposePath::kShift);
  const TransposePlan u =
      plan_transpose((int64_t{1} << 31) + 1, int64_t{1} << 24, 4, Alignment(), Alignment(), d);
  EXPECT_EQ(u.path, TransposePath::kSector);
  EXPECT_GT(u.num_tiles, INT32_MAX);
  EXPECT_EQ(u.shape.grid.x, static_cast<unsigned>(INT32_MAX));
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
