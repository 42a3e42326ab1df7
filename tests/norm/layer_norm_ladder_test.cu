// SPDX-License-Identifier: Apache-2.0
// Every step of the layer_norm ladder and the library (kLibrary, ladder/layer_norm/
// registry.cuh) through the cases of the library's layer_norm tests (norm_test.cu): float64
// references, fresh random inputs (seed in every label), y / mean / rstd poisoned before each
// call (and checked untouched past their ends), widths {1, 2, 31, 32, 33, 64, 127, 128, 509,
// 512, 768, 1024, 1031, 2048, 4093, 4096, 8191, 8192, 12289, 16384, 16391, 65536, 300000}
// (primes among them), rows {1, 3, 261}, pointers one element off the 16-byte grid, weight
// and bias absent or present, statistics saved or not, in place, NaN / inf rows, a large
// mean (the variance must not be E[x^2] - E[x]^2), determinism, bad arguments (nothing
// written). A width a step's supports() declines is answered with cudaErrorInvalidValue and
// nothing written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "ladder/layer_norm/registry.cuh"

namespace {

namespace ladder = kernelkit::ladder::layer_norm;
using kktest::DeviceBuffer;
using kktest::Tolerance;

class LayerNormLadderTest : public kktest::GpuTest {};

constexpr Tolerance kTol{2e-5, 2e-5, 0};  // norm_test.cu's f32 tolerance
constexpr float kEps = 1e-5f;

struct Case {
  int64_t rows = 1, cols = 1;
  int off = 0;            // elements x, y, weight and bias start past the 16-byte grid
  bool weight = true;     // weight and bias given
  bool save = true;       // mean and rstd saved
  bool in_place = false;  // y == x
  int special = 0;        // 1: a NaN in row 0, 2: an inf in row 0
};

std::string label(const ladder::Step& step, const Case& c, uint64_t seed) {
  return std::string(step.name) + " " + std::to_string(c.rows) + "x" + std::to_string(c.cols) +
         " off=" + std::to_string(c.off) + " weight=" + std::to_string(c.weight) +
         " save=" + std::to_string(c.save) + " in_place=" + std::to_string(c.in_place) +
         " special=" + std::to_string(c.special) + " seed=" + std::to_string(seed);
}

// Whether every element of h outside [begin, end) is still the 0xFF poison.
bool poison_outside(const std::vector<float>& h, size_t begin, size_t end) {
  for (size_t i = 0; i < h.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &h[i], 4);
    if ((i < begin || i >= end) && bits != 0xFFFFFFFFu) return false;
  }
  return true;
}

void run_case(const ladder::Step& step, const Case& c, uint64_t seed) {
  const int64_t n = c.rows * c.cols, off = c.off;
  const std::string where = label(step, c, seed);
  std::vector<float> x = kktest::random_vector<float>(n, seed);
  const std::vector<float> w = kktest::random_vector<float>(c.cols, seed + 2, 0.5, 1.5);
  const std::vector<float> b = kktest::random_vector<float>(c.cols, seed + 3);
  if (c.special == 1 && n > 0) x[c.cols / 2] = std::numeric_limits<float>::quiet_NaN();
  if (c.special == 2 && n > 0) x[c.cols / 3] = std::numeric_limits<float>::infinity();

  // float64 reference
  std::vector<double> ref_y(n), ref_mean(c.rows), ref_rstd(c.rows);
  for (int64_t i = 0; i < c.rows; ++i) {
    const float* row = x.data() + i * c.cols;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < c.cols; ++j)
      mean += row[j];
    mean /= double(c.cols);
    for (int64_t j = 0; j < c.cols; ++j)
      var += (row[j] - mean) * (row[j] - mean);
    const double rstd = 1.0 / std::sqrt(var / double(c.cols) + double(kEps));
    ref_mean[i] = mean;
    ref_rstd[i] = rstd;
    for (int64_t j = 0; j < c.cols; ++j) {
      double y = (row[j] - mean) * rstd;
      if (c.weight) y = y * double(w[j]) + double(b[j]);
      ref_y[i * c.cols + j] = y;
    }
  }

  // device operands c.off elements past the grid, one poisoned element past each end
  DeviceBuffer<float> dx(n + off + 1), dy(n + off + 1), dw(c.cols + off + 1), db(c.cols + off + 1);
  DeviceBuffer<float> dmean(c.rows + 1), drstd(c.rows + 1);
  for (auto* buf : {&dx, &dy, &dmean, &drstd})
    buf->poison();
  CUDA_CHECK(cudaMemcpy(dx.get() + off, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dw.get() + off, w.data(), c.cols * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(db.get() + off, b.data(), c.cols * sizeof(float), cudaMemcpyHostToDevice));
  const float* px = dx.get() + off;
  float* py = c.in_place ? dx.get() + off : dy.get() + off;
  const float* pw = c.weight ? dw.get() + off : nullptr;
  const float* pb = c.weight ? db.get() + off : nullptr;
  float* pmean = c.save ? dmean.get() : nullptr;
  float* prstd = c.save ? drstd.get() : nullptr;
  const DeviceBuffer<float>& ybuf = c.in_place ? dx : dy;
  const std::vector<float> y_before = ybuf.download();

  const cudaError_t err = step.fn(px, pw, pb, py, pmean, prstd, c.rows, c.cols, kEps, nullptr);
  if (!step.supports(c.rows, c.cols)) {
    // declined: answered, nothing written
    EXPECT_EQ(err, cudaErrorInvalidValue) << where;
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(ybuf.download(), y_before)) << where;
    EXPECT_TRUE(poison_outside(dmean.download(), 0, 0)) << where;
    EXPECT_TRUE(poison_outside(drstd.download(), 0, 0)) << where;
    return;
  }
  ASSERT_EQ(err, cudaSuccess) << where;
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> all_y = ybuf.download();
  const std::vector<float> got(all_y.begin() + off, all_y.begin() + off + n);
  EXPECT_TRUE(kktest::check_near(got, ref_y, kTol, where + " y"));
  EXPECT_TRUE(poison_outside(all_y, size_t(off), size_t(off + n))) << where << ": y's guards";
  const std::vector<float> mean = dmean.download(), rstd = drstd.download();
  if (c.save) {
    const Tolerance rstd_tol = Tolerance::Rel(2e-5);
    const Tolerance mean_tol = Tolerance::Rel(1e-5, 1e-6);
    EXPECT_TRUE(kktest::check_near(std::vector<float>(rstd.begin(), rstd.begin() + c.rows),
                                   ref_rstd, rstd_tol, where + " rstd"));
    EXPECT_TRUE(kktest::check_near(std::vector<float>(mean.begin(), mean.begin() + c.rows),
                                   ref_mean, mean_tol, where + " mean"));
  }
  const size_t saved = c.save ? size_t(c.rows) : 0;
  EXPECT_TRUE(poison_outside(mean, 0, saved)) << where << ": mean written past its rows";
  EXPECT_TRUE(poison_outside(rstd, 0, saved)) << where << ": rstd written past its rows";
}

// All steps then the library, as the tests run them.
std::vector<ladder::Step> all_steps() {
  std::vector<ladder::Step> steps(std::begin(ladder::kSteps), std::end(ladder::kSteps));
  steps.push_back(ladder::kLibrary);
  return steps;
}

void sweep(const ladder::Step& step, uint64_t seed) {
  const int64_t widths[] = {1,    2,    31,    32,    33,    64,    127,   128,
                            509,  512,  768,   1024,  1031,  2048,  4093,  4096,
                            8191, 8192, 12289, 16384, 16391, 65536, 300000};
  int64_t index = 0;
  for (const int64_t cols : widths) {
    for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{261}}) {
      if (rows * cols > (int64_t{1} << 23)) continue;
      for (const int off : {0, 1}) {
        // every case on the plain run; under the sanitizer every 3rd (each width's two
        // offsets reach v4's packed and one-float kernels on some row count)
        if (!kktest::sanitize_keep(index++, 3)) continue;
        Case c;
        c.rows = rows, c.cols = cols, c.off = off;
        c.weight = (index % 4) != 0;
        c.save = (index % 3) != 0;
        run_case(step, c, seed++);
      }
    }
  }
}

TEST_F(LayerNormLadderTest, EveryStepMatchesReference) {
  uint64_t seed = 100;
  for (const auto& step : all_steps()) {
    SCOPED_TRACE(step.name);
    sweep(step, seed);
    seed += 1000;
  }
}

TEST_F(LayerNormLadderTest, InPlaceAndSpecialValues) {
  uint64_t seed = 600;
  for (const auto& step : all_steps()) {
    for (const int64_t cols : {int64_t{33}, int64_t{512}, int64_t{4096}, int64_t{20000}}) {
      for (const int special : {0, 1, 2}) {
        Case c;
        c.rows = 3, c.cols = cols, c.special = special;
        c.in_place = special == 0;
        run_case(step, c, seed++);
      }
    }
  }
}

// x = 1000 + U(-1, 1): E[x^2] - E[x]^2 in float would lose ~20 of the variance's 24 bits;
// every step keeps rstd within 1e-4.
TEST_F(LayerNormLadderTest, LargeMean) {
  uint64_t seed = 700;
  for (const auto& step : all_steps()) {
    for (const int64_t cols : {int64_t{1031}, int64_t{4096}}) {
      Case c;
      c.rows = 3, c.cols = cols, c.weight = false;
      // y = (x - mean) * rstd: float's rounding of the mean (|mean| 1e3) is the bound here,
      // so y is checked against the mean the step saved; mean and rstd against float64
      const int64_t n = c.rows * c.cols;
      const auto x = kktest::random_vector<float>(n, seed, 999.0, 1001.0);
      const auto dx = kktest::to_device(x);
      DeviceBuffer<float> dy(n), dmean(c.rows), drstd(c.rows);
      dy.poison();
      dmean.poison();
      drstd.poison();
      const std::string where = label(step, c, seed++) + " x in [999, 1001)";
      ASSERT_EQ(step.fn(dx.get(), nullptr, nullptr, dy.get(), dmean.get(), drstd.get(), c.rows,
                        c.cols, kEps, nullptr),
                cudaSuccess)
          << where;
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto y = dy.download(), mean = dmean.download(), rstd = drstd.download();
      std::vector<double> ref_mean(c.rows), ref_rstd(c.rows), ref_y(n);
      for (int64_t i = 0; i < c.rows; ++i) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < c.cols; ++j)
          m += x[i * c.cols + j];
        m /= double(c.cols);
        for (int64_t j = 0; j < c.cols; ++j)
          v += (x[i * c.cols + j] - m) * (x[i * c.cols + j] - m);
        ref_mean[i] = m;
        ref_rstd[i] = 1.0 / std::sqrt(v / double(c.cols) + double(kEps));
        for (int64_t j = 0; j < c.cols; ++j)
          ref_y[i * c.cols + j] = (x[i * c.cols + j] - double(mean[i])) * ref_rstd[i];
      }
      EXPECT_TRUE(kktest::check_near(mean, ref_mean, Tolerance::Rel(1e-5), where + " mean"));
      EXPECT_TRUE(kktest::check_near(rstd, ref_rstd, Tolerance::Rel(1e-4), where + " rstd"));
      // x - mean is exact in float here (Sterbenz), so y carries rstd's error and one rounding
      EXPECT_TRUE(kktest::check_near(y, ref_y, Tolerance{1e-6, 1e-4, 0}, where + " y"));
    }
  }
}

TEST_F(LayerNormLadderTest, Deterministic) {
  for (const auto& step : all_steps()) {
    for (const int64_t cols : {int64_t{4096}, int64_t{20000}}) {
      const int64_t rows = 8, n = rows * cols;
      if (!step.supports(rows, cols)) continue;
      const auto x = kktest::to_device(kktest::random_vector<float>(n, 800));
      const auto w = kktest::to_device(kktest::random_vector<float>(cols, 801));
      DeviceBuffer<float> y(n), mean(rows), rstd(rows);
      std::vector<float> first;
      for (int run = 0; run < 3; ++run) {
        y.poison();
        ASSERT_EQ(step.fn(x.get(), w.get(), w.get(), y.get(), mean.get(), rstd.get(), rows, cols,
                          kEps, nullptr),
                  cudaSuccess);
        CUDA_CHECK(cudaDeviceSynchronize());
        auto got = y.download();
        const auto m = mean.download(), r = rstd.download();
        got.insert(got.end(), m.begin(), m.end());
        got.insert(got.end(), r.begin(), r.end());
        if (run == 0) first = got;
        EXPECT_TRUE(kktest::same_bits(got, first)) << step.name << " " << cols << " run " << run;
      }
    }
  }
}

TEST_F(LayerNormLadderTest, BadArgumentsWriteNothing) {
  const int64_t rows = 4, cols = 256, n = rows * cols;
  const auto x = kktest::to_device(kktest::random_vector<float>(n + 1, 900));
  const auto w = kktest::to_device(kktest::random_vector<float>(cols, 901));
  DeviceBuffer<float> y(n + 1), stats(2 * rows);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& step : all_steps()) {
    SCOPED_TRACE(step.name);
    y.poison();
    stats.poison();
    const auto before = y.download();
    const auto stats_before = stats.download();
    float* py = y.get();
    const float* px = x.get();
    const float* pw = w.get();
    float* pm = stats.get();
    float* pr = stats.get() + rows;
    const auto call = [&](const float* xx, float* yy, float* mm, float* rr, int64_t r, int64_t c,
                          float eps) {
      return step.fn(xx, pw, pw, yy, mm, rr, r, c, eps, nullptr);
    };
    EXPECT_EQ(call(px, py, pm, pr, -1, cols, kEps), cudaErrorInvalidValue);
    EXPECT_EQ(call(px, py, pm, pr, rows, -1, kEps), cudaErrorInvalidValue);
    EXPECT_EQ(call(px, py, pm, pr, rows, cols, -1.f), cudaErrorInvalidValue);
    EXPECT_EQ(call(px, py, pm, pr, rows, cols, nan), cudaErrorInvalidValue);
    EXPECT_EQ(call(nullptr, py, pm, pr, rows, cols, kEps), cudaErrorInvalidValue);
    EXPECT_EQ(call(px, nullptr, pm, pr, rows, cols, kEps), cudaErrorInvalidValue);
    EXPECT_EQ(call(reinterpret_cast<const float*>(reinterpret_cast<const char*>(px) + 2), py, pm,
                   pr, rows, cols, kEps),
              cudaErrorInvalidValue);
    EXPECT_EQ(call(px, py, pm, pm + 1, rows, cols, kEps), cudaErrorInvalidValue);  // mean, rstd
    EXPECT_EQ(call(px, x.get() + 1, pm, pr, rows, cols, kEps), cudaErrorInvalidValue);  // y, x
    EXPECT_EQ(call(px, py, py + 3, pr, rows, cols, kEps), cudaErrorInvalidValue);       // mean, y
    EXPECT_EQ(call(px, py, pm, pr, int64_t{1} << 62, int64_t{1} << 3, kEps),
              cudaErrorInvalidValue);  // rows x cols x 4 past int64
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(y.download(), before));
    EXPECT_TRUE(kktest::same_bits(stats.download(), stats_before));
    // empty: nothing to do
    EXPECT_EQ(call(px, py, pm, pr, 0, cols, kEps), cudaSuccess);
    EXPECT_EQ(call(px, py, pm, pr, rows, 0, kEps), cudaSuccess);
    EXPECT_EQ(call(nullptr, nullptr, nullptr, nullptr, 0, 0, kEps), cudaSuccess);
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(y.download(), before));
  }
}

TEST(LayerNormLadder, NamesAndSupports) {
  const char* expected[] = {"v0_naive", "v1_welford", "v2_warp_per_row", "v3_block_smem",
                            "v4_vectorized"};
  ASSERT_EQ(std::size(ladder::kSteps), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_STREQ(ladder::kSteps[i].name, expected[i]);
    EXPECT_NE(ladder::kSteps[i].fn, ladder::kLibrary.fn);
    EXPECT_TRUE(ladder::kSteps[i].supports(1, 1));
    EXPECT_TRUE(ladder::kSteps[i].supports(int64_t{1} << 20, 4096));
    EXPECT_EQ(ladder::kSteps[i].supports(3, 300000), i < 3) << expected[i];
  }
  EXPECT_TRUE(ladder::kSteps[3].supports(5, 12288));
  EXPECT_FALSE(ladder::kSteps[3].supports(5, 12289));
  EXPECT_TRUE(ladder::kSteps[4].supports(5, 16384));
  EXPECT_FALSE(ladder::kSteps[4].supports(5, 16385));
  EXPECT_STREQ(ladder::kLibrary.name, "kernelkit");
  EXPECT_TRUE(ladder::kLibrary.supports(3, 300000));
}

}  // namespace
