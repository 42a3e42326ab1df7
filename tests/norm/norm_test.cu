// SPDX-License-Identifier: Apache-2.0
// rms_norm, layer_norm and add_rms_norm on the GPU against float64 references: fresh random
// inputs (seed printed on failure), outputs poisoned before each call, widths through every
// path (warp, block, tile, two-pass, split; 16-byte packs at every phase of a row, and split's
// one element per access), short rows on groups of 1..32 lanes (several rows a warp, groups past
// the last row), rows {1, 3, many}, pointers off the pack grid, operands at phases other than
// x's, nothing written outside y, weights and bias absent or present, float and same-type weights,
// in place, NaN / inf rows, determinism, bad arguments (nothing written) and a call past 2^31
// elements.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/norm/norm.cuh"

namespace kk = kernelkit;
using kk::NormKind;
using kktest::DeviceBuffer;

namespace {

class NormTest : public kktest::GpuTest {};

const char* kind_name(NormKind k) {
  return k == NormKind::kRms ? "rms_norm" : (k == NormKind::kLayer ? "layer_norm" : "add_rms_norm");
}

template <typename T>
kktest::Tolerance tolerance() {
  if constexpr (std::is_same_v<T, float>) {
    return {2e-5, 2e-5, 0};
  } else {
    return {1e-5, 0, 1};  // the output's rounding plus float arithmetic
  }
}

struct Case {
  NormKind kind = NormKind::kRms;
  int64_t rows = 1, cols = 1;
  int off = 0;  // elements every matrix operand (and the weight) starts past the grid
  // elements y, residual, sum, and the weight and bias start past the grid where >= 0 (else
  // `off`): operands at phases other than x's
  int y_off = -1, r_off = -1, s_off = -1, w_off = -1;
  bool weight = true;     // weight given (bias too, for layer_norm)
  bool save = true;       // mean / rstd saved
  bool in_place = false;  // y == x (add_rms_norm: and sum == residual)
  int special = 0;        // 1: a NaN in row 0, 2: an inf in row 0 (rows > 1: row 1 stays finite)
  const kk::NormConfig* force = nullptr;  // launch this table entry (launch_norm) on 2 blocks
  int lanes = 32;                         // with force, kWarp: lanes a row
  bool one_sm = false;  // plan_norm for this device with one SM (the lanes of the row's
                        // accesses on few rows), launched through launch_norm
};

std::string label(const Case& c, const char* t, const char* w, uint64_t seed) {
  return std::string(kind_name(c.kind)) + " " + t + "/" + w + " " + std::to_string(c.rows) + "x" +
         std::to_string(c.cols) + " off=" + std::to_string(c.off) + "/" + std::to_string(c.y_off) +
         "/" + std::to_string(c.r_off) + "/" + std::to_string(c.s_off) + "/" +
         std::to_string(c.w_off) + " lanes=" + std::to_string(c.lanes) +
         " one_sm=" + std::to_string(c.one_sm) + " weight=" + std::to_string(c.weight) +
         " save=" + std::to_string(c.save) + " in_place=" + std::to_string(c.in_place) +
         " special=" + std::to_string(c.special) + " seed=" + std::to_string(seed);
}

template <typename T, typename W>
void run_case(const Case& c, uint64_t seed) {
  const int64_t n = c.rows * c.cols;
  const std::string where = label(c, kk::type_name<T>(), kk::type_name<W>(), seed);
  std::vector<T> x = kktest::random_vector<T>(n, seed);
  std::vector<T> r = kktest::random_vector<T>(n, seed + 1);
  const std::vector<W> w = kktest::random_vector<W>(c.cols, seed + 2, 0.5, 1.5);
  const std::vector<W> b = kktest::random_vector<W>(c.cols, seed + 3);
  if (c.special == 1 && n > 0)
    x[c.cols / 2] = kk::convert<T>(std::numeric_limits<float>::quiet_NaN());
  if (c.special == 2 && n > 0)
    x[c.cols / 3] = kk::convert<T>(std::numeric_limits<float>::infinity());
  const bool add = c.kind == NormKind::kAddRms, layer = c.kind == NormKind::kLayer;

  // float64 reference (add_rms_norm: of the sum rounded to T, which sum_out holds exactly)
  std::vector<double> ref_y(n), ref_mean(c.rows), ref_rstd(c.rows);
  std::vector<T> ref_sum(add ? n : 0);
  std::vector<double> row(c.cols);
  for (int64_t i = 0; i < c.rows; ++i) {
    for (int64_t j = 0; j < c.cols; ++j) {
      const int64_t k = i * c.cols + j;
      if (add) {
        ref_sum[k] = kk::convert<T>(kk::convert<float>(x[k]) + kk::convert<float>(r[k]));
        row[j] = kktest::to_double(ref_sum[k]);
      } else {
        row[j] = kktest::to_double(x[k]);
      }
    }
    double mean = 0, var = 0;
    if (layer) {
      for (const double v : row)
        mean += v;
      mean /= double(c.cols);
    }
    for (const double v : row)
      var += (v - mean) * (v - mean);
    var /= double(c.cols);
    const double rstd = 1.0 / std::sqrt(var + 1e-5);
    ref_mean[i] = mean;
    ref_rstd[i] = rstd;
    for (int64_t j = 0; j < c.cols; ++j) {
      double y = (row[j] - mean) * rstd;
      if (c.weight) y *= kktest::to_double(w[j]);
      if (c.weight && layer) y += kktest::to_double(b[j]);
      ref_y[i * c.cols + j] = y;
    }
  }

  // device operands, each its offset's elements past the 16-byte grid (the buffers start on
  // it), poisoned around the written ranges
  const auto pick = [&](int o) { return int64_t{o >= 0 ? o : c.off}; };
  const int64_t ox = c.off, oy = pick(c.y_off), orr = pick(c.r_off), os = pick(c.s_off),
                ow = pick(c.w_off);
  constexpr int64_t kSlack = 9;  // more than any offset
  DeviceBuffer<T> dx(n + kSlack), dr(n + kSlack), dy(n + kSlack), ds(n + kSlack);
  DeviceBuffer<W> dw(c.cols + kSlack), db(c.cols + kSlack);
  DeviceBuffer<float> dmean(c.rows + 1), drstd(c.rows + 1);
  for (auto* buf : {&dx, &dr, &dy, &ds})
    buf->poison();
  dmean.poison();
  drstd.poison();
  CUDA_CHECK(cudaMemcpy(dx.get() + ox, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dr.get() + orr, r.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dw.get() + ow, w.data(), c.cols * sizeof(W), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(db.get() + ow, b.data(), c.cols * sizeof(W), cudaMemcpyHostToDevice));
  const T* px = dx.get() + ox;
  const T* pr = dr.get() + orr;
  T* py = c.in_place ? dx.get() + ox : dy.get() + oy;
  T* ps = c.in_place ? dr.get() + orr : ds.get() + os;
  const W* pw = c.weight ? dw.get() + ow : nullptr;
  const W* pb = c.weight ? db.get() + ow : nullptr;
  const std::vector<T> y_before = c.in_place ? dx.download() : dy.download();
  float* pmean = c.save ? dmean.get() : nullptr;
  float* prstd = c.save ? drstd.get() : nullptr;
  cudaError_t err = cudaSuccess;
  const kk::detail::NormArgs<T, W> args{px,
                                        add ? pr : nullptr,
                                        pw,
                                        layer ? pb : nullptr,
                                        py,
                                        add ? ps : nullptr,
                                        layer ? pmean : nullptr,
                                        prstd,
                                        c.rows,
                                        c.cols,
                                        1e-5f};
  if (c.one_sm) {
    // run_norm's plan, for this device as if it had one SM: short rows take their narrowest
    // group of lanes from a hundred rows on
    kk::DeviceInfo d;
    CUDA_CHECK(kk::current_device_info(&d));
    d.sm_count = 1;
    const kk::Alignment x_at =
        kk::common_alignment(kk::alignment_of(px), kk::Alignment(c.cols * int64_t{sizeof(T)}));
    const kk::Alignment all_at = kk::common_alignment(
        x_at, kk::alignment_of(py), kk::alignment_of(args.residual), kk::alignment_of(args.sum),
        kk::alignment_of(pw), kk::alignment_of(args.bias));
    const int wb = pw ? int{sizeof(W)} : 0, bb = args.bias ? int{sizeof(W)} : 0;
    const int64_t fewest = kk::norm_fewest_bytes(c.kind, c.rows, c.cols, sizeof(T), wb, bb,
                                                 args.mean != nullptr, prstd != nullptr);
    const kk::NormPlan p =
        kk::plan_norm(c.kind, c.rows, c.cols, sizeof(T), x_at, all_at, fewest, d);
    err = kk::launch_norm(p, c.kind, args, nullptr);
  } else if (c.force != nullptr) {
    kk::NormPlan p;
    p.path = c.force->path;
    p.pack = c.force->pack;
    p.packs = c.force->packs;
    p.phased = c.force->phased;
    p.lanes = c.force->path == kk::NormPath::kWarp || c.force->path == kk::NormPath::kTile
                  ? c.lanes
                  : c.force->block;
    p.shape.block = dim3(static_cast<unsigned>(c.force->block));
    p.shape.grid = dim3(2);               // fewer blocks than rows: the grid-stride row loop
    if (p.path == kk::NormPath::kTile) {  // tiles of two passes of the block's groups
      p.tile_rows = 2 * (128 / c.lanes);
      p.shape.smem =
          static_cast<size_t>(kk::norm_tile_bytes(c.kind, p.tile_rows, c.cols, sizeof(T)));
    }
    if (p.path == kk::NormPath::kSplit) {  // each row over 3 blocks of a cooperative grid
      p.split = 3;
      p.shape.grid = dim3(static_cast<unsigned>(c.rows * 3));
      p.shape.cooperative = true;
    }
    err = kk::launch_norm(p, c.kind, args, nullptr);
  } else if (c.kind == NormKind::kRms) {
    err = kk::rms_norm(px, pw, py, prstd, c.rows, c.cols, 1e-5f);
  } else if (layer) {
    err = kk::layer_norm(px, pw, pb, py, pmean, prstd, c.rows, c.cols, 1e-5f);
  } else {
    err = kk::add_rms_norm(px, pr, pw, py, ps, prstd, c.rows, c.cols, 1e-5f);
  }
  ASSERT_EQ(err, cudaSuccess) << where;
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), py, n * sizeof(T), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(kktest::check_near(got, ref_y, tolerance<T>(), where + " y"));
  {
    // nothing written before y's first element or past its last (a partial head or tail
    // stored whole would show here)
    const std::vector<T> all = c.in_place ? dx.download() : dy.download();
    const int64_t o = c.in_place ? ox : oy;
    std::vector<T> outside, outside_before;
    for (int64_t k = 0; k < static_cast<int64_t>(all.size()); ++k)
      if (k < o || k >= o + n) outside.push_back(all[k]), outside_before.push_back(y_before[k]);
    EXPECT_TRUE(kktest::same_bits(outside, outside_before)) << where << " around y";
  }
  if (add) {
    std::vector<T> sum(n);
    CUDA_CHECK(cudaMemcpy(sum.data(), ps, n * sizeof(T), cudaMemcpyDeviceToHost));
    // exact (a NaN meets a NaN whatever its payload: the GPU's FADD gives the canonical one)
    std::vector<double> ref_sum_d(n);
    for (int64_t k = 0; k < n; ++k)
      ref_sum_d[k] = kktest::to_double(ref_sum[k]);
    EXPECT_TRUE(kktest::check_near(sum, ref_sum_d, kktest::Tolerance::Exact(), where + " sum_out"));
  }
  if (c.save) {
    const std::vector<float> rstd = drstd.download(c.rows);
    EXPECT_TRUE(kktest::check_near(rstd, ref_rstd, kktest::Tolerance::Rel(2e-5), where + " rstd"));
    if (layer) {
      const std::vector<float> mean = dmean.download(c.rows);
      EXPECT_TRUE(
          kktest::check_near(mean, ref_mean, kktest::Tolerance::Rel(1e-5, 1e-6), where + " mean"));
    }
  }
}

template <typename T, typename W>
void sweep(uint64_t seed0) {
  const int64_t widths[] = {1,    2,    31,   32,   33,   64,   127,   128,   509,   512,   768,
                            1031, 2048, 4093, 4096, 8191, 8192, 12289, 16384, 16391, 65536, 300000};
  const int64_t rows_list[] = {1, 3, 261};
  uint64_t seed = seed0;
  int64_t index = 0;
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const int64_t cols : widths) {
      for (const int64_t rows : rows_list) {
        // (261 x 16391: kTwoPass on an H100; 1 and 3 rows of 65536 / 300000: kSplit)
        if (rows * cols > (int64_t{1} << 23)) continue;
        for (const int off : {0, 1}) {
          // every case on the plain run; under the sanitizer every 5th (both offsets of
          // each width reach its path on some kind)
          if (!kktest::sanitize_keep(index++, 5)) continue;
          Case c;
          c.kind = kind, c.rows = rows, c.cols = cols, c.off = off;
          c.weight = (index % 4) != 0;
          c.save = (index % 3) != 0;
          run_case<T, W>(c, seed++);
        }
      }
    }
  }
}

TEST_F(NormTest, Float) {
  sweep<float, float>(100);
}
TEST_F(NormTest, HalfFloatWeight) {
  sweep<__half, float>(200);
}
TEST_F(NormTest, HalfHalfWeight) {
  sweep<__half, __half>(300);
}
TEST_F(NormTest, Bf16FloatWeight) {
  sweep<__nv_bfloat16, float>(400);
}
TEST_F(NormTest, Bf16Bf16Weight) {
  sweep<__nv_bfloat16, __nv_bfloat16>(500);
}

// Every entry of kNormConfigs forced once per kind (kWarp, kTile: at every group of 1..32
// lanes; kTile also with y, residual, sum and the weight off x's phase but for rms_norm), on
// rows as wide as it holds (less one pack) or, for kTwoPass and kSplit, wider than any
// register entry; each phased entry again
// on rows of odd width from x one element off the grid, y, residual, sum and the weight at
// other phases (its widest such rows: a partial head and tail at the worst phase); aligned
// entries on the grid only, one-element ones off it only.
template <typename T, typename W>
void every_configuration(uint64_t seed) {
  const kk::ConfigRange range = kk::norm_configs_of(sizeof(T));
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const kk::NormConfig& e = kk::kNormConfigs[i];
    const bool groups = e.path == kk::NormPath::kWarp || e.path == kk::NormPath::kTile;
    const int threads = groups ? 32 : e.block;
    const int64_t cap = int64_t{threads} * e.packs * e.pack;
    const bool streamed = e.path == kk::NormPath::kTwoPass || e.path == kk::NormPath::kSplit;
    for (const bool off_grid : {false, true}) {
      // aligned 16-byte entries: every operand on the grid; phased ones both; one element
      // per access off the grid
      if (off_grid && e.pack > 1 && !e.phased) continue;
      if (!off_grid && e.pack == 1) continue;
      for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
        // kWarp: every group width (32 / lanes rows a warp; 11 rows fill no warp's groups
        // evenly but at 32 lanes), the row as wide as the group holds
        for (int lanes = 1; lanes <= 32; lanes *= 2) {
          if (!groups && lanes > 1) break;
          const int64_t held = groups ? cap / 32 * lanes : cap;
          Case c;
          c.kind = kind;
          // (kTile: tiles of 2 x 128 / lanes rows on 2 blocks: several tiles a block, the last
          // one partial)
          c.rows = e.path == kk::NormPath::kTile ? 6 * (128 / lanes) + 5
                                                 : (e.path == kk::NormPath::kWarp ? 11 : 5);
          if (streamed) {  // past kBlock's 16384 f32 / 32768 2-byte columns
            c.cols = (sizeof(T) == 2 ? 40000 : 20000) + (off_grid ? 1 : 0);
          } else {
            // (one element an access: every width; 16-byte packs off the grid: the worst
            // phase's partial head and tail, so a row of one access holds no column)
            c.cols = off_grid ? held - e.pack + 1 : (held > e.pack ? held - e.pack : held);
          }
          if (c.cols < 1) continue;
          c.off = off_grid ? 1 : 0;
          if (off_grid && (e.pack > 1 || (e.path == kk::NormPath::kTile && kind != NormKind::kRms)))
            c.y_off = 2, c.r_off = 3, c.s_off = 0, c.w_off = 1;
          c.force = &e;
          c.lanes = groups ? lanes : 32;
          run_case<T, W>(c, seed++);
        }
      }
    }
  }
}

// Rows at every phase: odd widths through each path (a stride off the grid puts row r at
// phase r x cols mod the pack), x at several offsets, and y, residual, sum and the weight at
// phases of their own, on the plans of the current device.
template <typename T, typename W>
void every_phase(uint64_t seed) {
  constexpr int kPack = 16 / sizeof(T);
  const int64_t widths[] = {1,    3,    7,    71,    239,   509,   613,   1017,
                            1227, 1787, 4093, 16377, 16383, 20001, 32761, 32767};
  int64_t index = 0;
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const int64_t cols : widths) {
      for (const int off : {0, 1, kPack - 1}) {
        for (const bool mixed : {false, true}) {
          if (!kktest::sanitize_keep(index++, 4)) continue;
          Case c;
          c.kind = kind, c.cols = cols, c.off = off;
          // (past a block's registers: 140 rows stream (kTwoPass), 9 split where cooperative)
          c.rows = cols == 16383 ? 140 : (cols > 4096 ? 9 : 37);
          if (mixed) {
            c.y_off = (off + 1) % kPack, c.r_off = (off + 2) % kPack, c.s_off = (off + 3) % kPack;
            c.w_off = (off + kPack / 2) % kPack;
          }
          c.weight = (index % 5) != 0;
          run_case<T, W>(c, seed++);
        }
      }
    }
  }
}

// Short rows on groups of lanes (several rows a warp): every width 1..200 (odd ones, 1 and 2
// elements, the group boundaries), x on and one element off the grid, other operands at their
// own phases, 129..189 rows (no multiple of the rows a warp or a block of groups holds: groups
// past the last row), on the plan of this device with one SM (the narrowest group of the
// row's accesses from 128 rows on), every kind.
template <typename T, typename W>
void short_rows(uint64_t seed) {
  constexpr int kPack = 16 / sizeof(T);
  int64_t index = 0;
  for (int64_t cols = 1; cols <= 200; ++cols) {
    for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
      for (const int off : {0, 1}) {
        if (!kktest::sanitize_keep(index++, 9)) continue;
        Case c;
        c.kind = kind, c.cols = cols, c.off = off;
        c.rows = 129 + (cols * 7 + off * 13) % 61;
        c.one_sm = true;
        if (cols % 5 == 0) {  // operands at phases of their own
          c.y_off = (off + 1) % kPack, c.r_off = (off + 2) % kPack, c.s_off = (off + 3) % kPack;
          c.w_off = (off + kPack / 2) % kPack;
        }
        c.weight = (index % 5) != 0;
        c.save = (index % 3) != 0;
        run_case<T, W>(c, seed++);
      }
    }
  }
}

TEST_F(NormTest, ShortRowsShareAWarp) {
  short_rows<float, float>(8000);
  short_rows<__nv_bfloat16, __nv_bfloat16>(9000);
  short_rows<__half, float>(10000);
  short_rows<__nv_bfloat16, float>(11000);
}

TEST_F(NormTest, EveryPhase) {
  every_phase<float, float>(5000);
  every_phase<__nv_bfloat16, __nv_bfloat16>(6000);
  every_phase<__half, float>(7000);
}

TEST_F(NormTest, EveryConfiguration) {
  every_configuration<float, float>(1000);
  every_configuration<__nv_bfloat16, __nv_bfloat16>(2000);
  every_configuration<__half, float>(3000);
}

// Short rows off the grid in tiles of rows (kTile) on the plan of this device: widths of 1..4
// elements a lane of 1..32 lanes, x at several phases, the residual, y and sum at x's phase or
// not (read / written element by element then), in place, row counts that leave the last tile
// partial. Skipped where the plan is another path.
template <typename T, typename W>
void tile_rows(uint64_t seed) {
  constexpr int kPack = 16 / sizeof(T);
  struct Shape {
    NormKind kind;
    int64_t rows, cols;
    int off;
    bool mixed, in_place;
  };
  const Shape shapes[] = {
      {NormKind::kRms, 100003, 71, 0, false, false},
      {NormKind::kLayer, 90001, 58, 5, false, false},
      {NormKind::kAddRms, 150007, 17, 0, true, false},
      {NormKind::kAddRms, 120001, 39, 3, false, true},
      {NormKind::kRms, 50003, 101, 1, false, true},
      {NormKind::kLayer, 500009, 3, 1, true, false},
      {NormKind::kRms, 500007, 1, 0, false, false},
      {NormKind::kAddRms, 60013, 127, 2, false, false},
  };
  int64_t index = 0;
  for (const Shape& sh : shapes) {
    if (!kktest::sanitize_keep(index++, 3)) continue;
    Case c;
    c.kind = sh.kind, c.rows = sh.rows, c.cols = sh.cols, c.off = sh.off % kPack;
    c.in_place = sh.in_place;
    if (sh.mixed) {
      c.y_off = (c.off + 1) % kPack, c.r_off = (c.off + 2) % kPack, c.s_off = (c.off + 3) % kPack;
      c.w_off = (c.off + 2) % kPack;
    }
    c.weight = index % 4 != 0;
    kk::DeviceInfo d;
    CUDA_CHECK(kk::current_device_info(&d));
    const kk::Alignment x_at = kk::common_alignment(kk::Alignment(c.off * int64_t{sizeof(T)}),
                                                    kk::Alignment(c.cols * int64_t{sizeof(T)}));
    const kk::NormPlan p = kk::plan_norm(
        c.kind, c.rows, c.cols, sizeof(T), x_at, x_at,
        kk::norm_fewest_bytes(c.kind, c.rows, c.cols, sizeof(T), sizeof(W), sizeof(W), true, true),
        d);
    if (p.path != kk::NormPath::kTile) continue;
    run_case<T, W>(c, seed++);
  }
}

TEST_F(NormTest, ShortRowsInTiles) {
  tile_rows<float, float>(16000);
  tile_rows<__nv_bfloat16, __nv_bfloat16>(17000);
  tile_rows<__half, float>(18000);
  tile_rows<__nv_bfloat16, float>(19000);
}

TEST_F(NormTest, InPlaceAndSpecialValues) {
  uint64_t seed = 600;
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const int64_t cols :
         {int64_t{33}, int64_t{512}, int64_t{1001}, int64_t{4096}, int64_t{20000}}) {
      for (const int special : {0, 1, 2}) {
        Case c;
        c.kind = kind, c.rows = 3, c.cols = cols, c.special = special;
        c.in_place = special == 0;
        run_case<float, float>(c, seed++);
        run_case<__nv_bfloat16, float>(c, seed++);
      }
    }
  }
}

TEST_F(NormTest, Deterministic) {
  // a block's registers, a split row (kSplit), streamed rows (kTwoPass), on an H100
  const int64_t shapes[][2] = {{8, 4096}, {8, 300000}, {300, 20000}};
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0], cols = shape[1], n = rows * cols;
    const auto x = kktest::to_device(kktest::random_vector<float>(n, 700));
    const auto w = kktest::to_device(kktest::random_vector<float>(cols, 701));
    DeviceBuffer<float> y(n), mean(rows), rstd(rows);
    std::vector<float> first;
    for (int run = 0; run < 3; ++run) {
      y.poison();
      ASSERT_EQ(kk::layer_norm(x.get(), w.get(), w.get(), y.get(), mean.get(), rstd.get(), rows,
                               cols, 1e-5f),
                cudaSuccess);
      auto got = y.download();
      const auto m = mean.download();
      got.insert(got.end(), m.begin(), m.end());
      if (run == 0) first = got;
      EXPECT_TRUE(kktest::same_bits(got, first)) << rows << "x" << cols << " run " << run;
    }
  }
}

TEST_F(NormTest, BadArgumentsWriteNothing) {
  const int64_t rows = 4, cols = 256, n = rows * cols;
  const auto x = kktest::to_device(kktest::random_vector<float>(n + 1, 800));
  const auto w = kktest::to_device(kktest::random_vector<float>(cols, 801));
  DeviceBuffer<float> y(n + 1), rstd(rows);
  y.poison();
  rstd.poison();
  const auto before = y.download();
  const auto rstd_before = rstd.download();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float* py = y.get();
  const float* px = x.get();
  EXPECT_EQ(kk::rms_norm(px, w.get(), py, rstd.get(), -1, cols, 1e-5f), cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm(px, w.get(), py, rstd.get(), rows, -1, 1e-5f), cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm(px, w.get(), py, rstd.get(), rows, cols, -1.f), cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm(px, w.get(), py, rstd.get(), rows, cols, nan), cudaErrorInvalidValue);
  const float* null_x = nullptr;
  EXPECT_EQ(kk::rms_norm(null_x, w.get(), py, rstd.get(), rows, cols, 1e-5f),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm(reinterpret_cast<const float*>(reinterpret_cast<const char*>(px) + 2),
                         w.get(), py, rstd.get(), rows, cols, 1e-5f),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm(px, w.get(), py, py + 3, rows, cols, 1e-5f), cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm(px, w.get(), x.get() + 1, rstd.get(), rows, cols, 1e-5f),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::add_rms_norm(px, px, w.get(), py, py, rstd.get(), rows, cols, 1e-5f),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::layer_norm(px, w.get(), w.get(), py, rstd.get(), rstd.get(), rows, cols, 1e-5f),
            cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(y.download(), before));
  EXPECT_TRUE(kktest::same_bits(rstd.download(), rstd_before));
  // empty: nothing to do
  EXPECT_EQ(kk::rms_norm(px, w.get(), py, rstd.get(), 0, cols, 1e-5f), cudaSuccess);
  EXPECT_EQ(kk::rms_norm(px, w.get(), py, rstd.get(), rows, 0, 1e-5f), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(y.download(), before));
}

// rows x cols past 2^31 elements (bf16, 4 GiB a matrix): the first and last rows checked.
TEST_F(NormTest, KK_LARGE(PastTwoToThe31Elements)) {
  using T = __nv_bfloat16;
  const int64_t cols = 4096, rows = (int64_t{1} << 31) / cols + 3, n = rows * cols;
  DeviceBuffer<T> x(n), y(n);
  DeviceBuffer<float> rstd(rows);
  const int64_t k = 3;  // rows checked at each end
  const auto head = kktest::random_vector<T>(k * cols, 900);
  const auto tail = kktest::random_vector<T>(k * cols, 901);
  CUDA_CHECK(cudaMemset(x.get(), 0, n * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(x.get(), head.data(), head.size() * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(x.get() + n - k * cols, tail.data(), tail.size() * sizeof(T),
                        cudaMemcpyHostToDevice));
  y.poison();
  ASSERT_EQ(kk::rms_norm(x.get(), static_cast<const float*>(nullptr), y.get(), rstd.get(), rows,
                         cols, 1e-5f),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  for (const int end : {0, 1}) {
    const auto& in = end == 0 ? head : tail;
    std::vector<T> got(k * cols);
    CUDA_CHECK(cudaMemcpy(got.data(), y.get() + (end == 0 ? 0 : n - k * cols),
                          got.size() * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<double> ref(k * cols);
    for (int64_t i = 0; i < k; ++i) {
      double ss = 0;
      for (int64_t j = 0; j < cols; ++j)
        ss += kktest::to_double(in[i * cols + j]) * kktest::to_double(in[i * cols + j]);
      const double rs = 1.0 / std::sqrt(ss / double(cols) + 1e-5);
      for (int64_t j = 0; j < cols; ++j)
        ref[i * cols + j] = kktest::to_double(in[i * cols + j]) * rs;
    }
    EXPECT_TRUE(kktest::check_near(got, ref, tolerance<T>(), end == 0 ? "head" : "tail"));
  }
}

}  // namespace
