// SPDX-License-Identifier: Apache-2.0
// softmax_backward / log_softmax_backward (the row family), and softmax / log_softmax with
// leading dimensions through the public overloads (plan_softmax's kernels; every kernel with
// strided rows: softmax_test's EveryConfigurationStrided), on the GPU against float64
// references: widths {1, 31, 32, 33, primes, past pack multiples, rows past shared memory},
// every type, strided and unaligned rows (pointers and ld off the 16-byte grid), in place (dx ==
// dy, out == in), every entry of kSoftmaxRowsConfigs for both backward kinds (forced plans, with
// a small device for rows read partly twice), bad arguments (nothing written), and the poisoned
// gaps between strided rows left untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "softmax/softmax_case.cuh"

namespace kk = kernelkit;
using kk::SoftmaxKind;
using kk::SoftmaxRowsPlan;
using kktest::DeviceBuffer;

namespace {

template <typename T>
class SoftmaxRowsTest : public kktest::GpuTest {};
using Types = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(SoftmaxRowsTest, Types);

constexpr int64_t kGuard = 16;
constexpr int64_t kMaxElems = int64_t{1} << 16;

bool backward(SoftmaxKind k) {
  return kk::softmax_is_backward(k);
}
bool log_kind(SoftmaxKind k) {
  return k == SoftmaxKind::kLogSoftmax || k == SoftmaxKind::kLogSoftmaxBackward;
}
const char* kind_name(SoftmaxKind k) {
  switch (k) {
    case SoftmaxKind::kSoftmax:
      return "softmax";
    case SoftmaxKind::kLogSoftmax:
      return "log_softmax";
    case SoftmaxKind::kSoftmaxBackward:
      return "softmax_backward";
    default:
      return "log_softmax_backward";
  }
}

// Where the operands sit: element shifts from 256-byte aligned buffers, leading dimensions
// (0: cols), and dx == dy (backward) / out == in (forward) in place.
struct Layout {
  int64_t x_shift = 0, dy_shift = 0, out_shift = 0;
  int64_t ld_pad_x = 0, ld_pad_dy = 0, ld_pad_out = 0;  // ld = cols + pad
  bool in_place = false;
};

// One strided matrix in a poisoned buffer: rows x cols at `shift` elements with stride ld.
template <typename T>
struct Strided {
  DeviceBuffer<T> buf;
  int64_t at, ld;
  Strided(int64_t rows, int64_t cols, int64_t ld_, int64_t shift)
      : buf((rows - 1) * ld_ + cols + 2 * kGuard + 8), at(kGuard + shift), ld(ld_) {
    buf.poison();
  }
  T* p() const { return buf.get() + at; }
  void upload(const std::vector<T>& h, int64_t rows, int64_t cols) {
    CUDA_CHECK(cudaMemcpy2D(p(), ld * sizeof(T), h.data(), cols * sizeof(T), cols * sizeof(T), rows,
                            cudaMemcpyHostToDevice));
  }
};

// Runs one call (the public function, or, backward kinds, `plan` through launch_softmax_rows)
// and checks every
// output element against the float64 reference and every element outside the output matrix
// (guards, the gaps between rows) untouched.
template <typename T>
::testing::AssertionResult run_rows_case(SoftmaxKind kind, int64_t rows, int64_t cols,
                                         const Layout& l, uint64_t seed,
                                         const SoftmaxRowsPlan* plan = nullptr) {
  const bool bwd = backward(kind), log = log_kind(kind);
  const std::string label = std::string(kk::type_name<T>()) + " " + kind_name(kind) + " " +
                            std::to_string(rows) + "x" + std::to_string(cols) + " shifts " +
                            std::to_string(l.x_shift) + "/" + std::to_string(l.dy_shift) + "/" +
                            std::to_string(l.out_shift) + " ld pads " + std::to_string(l.ld_pad_x) +
                            "/" + std::to_string(l.ld_pad_dy) + "/" + std::to_string(l.ld_pad_out) +
                            (l.in_place ? " in place" : "") + " seed=" + std::to_string(seed);
  const int64_t n = rows * cols;
  // inputs: forward x in [-8, 8) with special values; backward y as the forward's output of
  // a row (softmax: probabilities in [0, 2 / cols); log: [-log(cols) - 4, -log(cols))), dy in
  // [-1, 1), a NaN in row 2's dy
  const double lc = std::log(double(cols));
  std::vector<T> hx =
      bwd ? kktest::random_vector<T>(n, seed, log ? -lc - 4 : 0.0, log ? -lc : 2.0 / double(cols))
          : softmax_test::make_input<T>(rows, cols, seed, true);
  std::vector<T> hd = bwd ? kktest::random_vector<T>(n, seed + 7777, -1.0, 1.0) : std::vector<T>();
  if (bwd && rows >= 3) hd[2 * cols + cols - 1] = kk::convert<T>(std::nan(""));
  const int64_t ld_x = cols + l.ld_pad_x, ld_dy = cols + l.ld_pad_dy;
  const int64_t ld_out = l.in_place ? (bwd ? ld_dy : ld_x) : cols + l.ld_pad_out;
  Strided<T> x(rows, cols, ld_x, l.x_shift);
  x.upload(hx, rows, cols);
  Strided<T> dy(bwd ? rows : 1, bwd ? cols : 1, bwd ? ld_dy : 1, l.dy_shift);
  if (bwd) dy.upload(hd, rows, cols);
  Strided<T> out(l.in_place ? 1 : rows, l.in_place ? 1 : cols, l.in_place ? 1 : ld_out,
                 l.out_shift);
  Strided<T>& o = l.in_place ? (bwd ? dy : x) : out;
  cudaError_t err;
  if (plan != nullptr) {
    err = kk::launch_softmax_rows(
        *plan, kind,
        kk::detail::SoftmaxRowsArgs<T>{x.p(), ld_x, bwd ? dy.p() : nullptr, ld_dy, o.p(), ld_out,
                                       rows, cols, 0, 1},
        nullptr);
  } else if (kind == SoftmaxKind::kSoftmax) {
    err = kk::softmax(x.p(), ld_x, o.p(), ld_out, rows, cols);
  } else if (kind == SoftmaxKind::kLogSoftmax) {
    err = kk::log_softmax(x.p(), ld_x, o.p(), ld_out, rows, cols);
  } else if (kind == SoftmaxKind::kSoftmaxBackward) {
    err = kk::softmax_backward(x.p(), ld_x, dy.p(), ld_dy, o.p(), ld_out, rows, cols);
  } else {
    err = kk::log_softmax_backward(x.p(), ld_x, dy.p(), ld_dy, o.p(), ld_out, rows, cols);
  }
  if (err != cudaSuccess)
    return ::testing::AssertionFailure() << label << ": " << cudaGetErrorString(err);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto all = o.buf.download();
  std::vector<T> got(n);
  for (int64_t i = 0; i < int64_t(all.size()); ++i) {
    const int64_t rel = i - o.at;
    const int64_t r = rel >= 0 ? rel / ld_out : -1, c = rel >= 0 ? rel % ld_out : -1;
    if (r >= 0 && r < rows && c < cols) {
      got[r * cols + c] = all[i];
    } else if (!softmax_test::poisoned(all[i])) {
      return ::testing::AssertionFailure()
             << label << ": element " << rel << " outside the output was written";
    }
  }
  if (!bwd) {
    std::vector<double> xd(n);
    for (int64_t i = 0; i < n; ++i)
      xd[i] = kktest::to_double(hx[i]);
    return kktest::check_near(got, softmax_test::reference(xd, rows, cols, log),
                              softmax_test::tolerance<T>(log), label);
  }
  // backward: dx = y (dy - s), s = sum y dy; or dy - exp(y) s, s = sum dy. Bound: the output's
  // rounding, plus |w| (w = y or exp(y)) times the float error of s (a chain of at most
  // cols / 64 + 64 additions of terms of total magnitude S) and of dy - s / exp(y) s.
  int64_t bad = 0;
  std::string first;
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0, mag = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double y = kktest::to_double(hx[r * cols + c]), d = kktest::to_double(hd[r * cols + c]);
      const double t = log ? d : y * d;
      s += t;
      mag += std::fabs(t);
    }
    const double err_s = 1.2e-7 * (double(cols) / 64 + 64) * mag;
    for (int64_t c = 0; c < cols; ++c) {
      const double y = kktest::to_double(hx[r * cols + c]), d = kktest::to_double(hd[r * cols + c]);
      const double w = log ? std::exp(y) : y;
      const double ref = log ? d - w * s : y * (d - s);
      const double v = kktest::to_double(got[r * cols + c]);
      bool ok;
      if (std::isnan(ref)) {
        ok = std::isnan(v);
      } else {
        const double tol = softmax_test::out_rel<T>() * std::fabs(ref) +
                           std::fabs(w) * (err_s + 2e-6 * (std::fabs(d) + std::fabs(s))) +
                           1e-6 * std::fabs(d) + softmax_test::kSubnormalHalfUlp<T>;
        ok = std::fabs(v - ref) <= tol;
      }
      if (!ok && bad++ == 0)
        first = "row " + std::to_string(r) + " col " + std::to_string(c) + ": got " +
                std::to_string(v) + " want " + std::to_string(ref);
    }
  }
  if (bad > 0)
    return ::testing::AssertionFailure() << label << ": " << bad << " mismatches, first " << first;
  return ::testing::AssertionSuccess();
}

// The layout a backward run_rows_case's operands (not in place) have, as the library reads it.
template <typename T>
kk::SoftmaxRowsLayout layout_of(int64_t cols, const Layout& l) {
  const int64_t e = sizeof(T);
  const auto at = [&](int64_t shift) { return kk::Alignment((kGuard + shift) * e); };
  return kk::softmax_rows_layout(e, at(l.x_shift), cols + l.ld_pad_x, at(l.out_shift),
                                 cols + l.ld_pad_out, at(l.dy_shift), cols + l.ld_pad_dy);
}

int64_t rows_for(int64_t want, int64_t cols) {
  return std::max<int64_t>(1, std::min<int64_t>(want, kMaxElems / cols));
}

constexpr SoftmaxKind kBackward[] = {SoftmaxKind::kSoftmaxBackward,
                                     SoftmaxKind::kLogSoftmaxBackward};
constexpr SoftmaxKind kAll[] = {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax,
                                SoftmaxKind::kSoftmaxBackward, SoftmaxKind::kLogSoftmaxBackward};
constexpr int64_t kWidths[] = {1,    2,    3,    7,    8,     9,     16,   17,   31,
                               32,   256,  1024, 33,   63,    64,    65,   127,  128,
                               129,  255,  257,  509,  512,   513,   1000, 1021, 2048,
                               2049, 4093, 8191, 8193, 10007, 32000, 50257};

TYPED_TEST(SoftmaxRowsTest, BackwardSweep) {
  uint64_t seed = 1;
  int64_t index = 0;
  for (const int64_t cols : kWidths)
    for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{37}})
      for (const SoftmaxKind k : kBackward)
        if (kktest::sanitize_keep(index++, 5))
          EXPECT_TRUE(run_rows_case<TypeParam>(k, rows_for(rows, cols), cols, Layout{}, seed++));
}

// Strided and unaligned rows: ld padded by 1, 3, 8 elements, pointers shifted (pack 1 where any
// pointer or stride is off the 16-byte grid), in place, for every kind (the forward through the
// public ld overloads: plan_softmax's kernels).
TYPED_TEST(SoftmaxRowsTest, StridedUnalignedAndInPlace) {
  uint64_t seed = 500;
  int64_t index = 0;
  const Layout layouts[] = {
      {0, 0, 0, 8, 8, 8, false}, {0, 0, 0, 16, 0, 32, false}, {1, 1, 1, 0, 0, 0, false},
      {0, 0, 0, 1, 1, 1, false}, {1, 3, 2, 3, 5, 7, false},   {0, 0, 0, 0, 0, 0, true},
      {0, 0, 0, 8, 8, 8, true},  {1, 1, 0, 3, 3, 0, true},
  };
  for (const Layout& l : layouts)
    for (const int64_t cols : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{100}, int64_t{509},
                               int64_t{1000}, int64_t{4097}, int64_t{50257}})
      for (const SoftmaxKind k : kAll)
        if (kktest::sanitize_keep(index++, 4))
          EXPECT_TRUE(run_rows_case<TypeParam>(k, rows_for(19, cols), cols, l, seed++));
}

// Every entry of kSoftmaxRowsConfigs, for both backward kinds, through launch_softmax_rows: the
// first small shape whose plan (on this device, or one with 12 KiB of shared memory: rows read
// partly twice) is that entry.
TYPED_TEST(SoftmaxRowsTest, EveryConfiguration) {
  using T = TypeParam;
  const kk::DeviceInfo real = softmax_test::device();
  const kk::DeviceInfo small = softmax_test::small_device(8, 12 * 1024, false, false);
  const kk::ConfigRange range = kk::softmax_rows_configs_of(sizeof(T));
  uint64_t seed = 900;
  for (const SoftmaxKind k : kBackward) {
    std::vector<bool> done(range.end - range.begin, false);
    std::vector<bool> partial(range.end - range.begin, false);
    for (const int64_t cols : kWidths) {
      // aligned; padded ld; every operand one element off the grid; out alone off it (pack 1)
      for (const Layout& l : {Layout{}, Layout{0, 0, 0, 1, 1, 1, false},
                              Layout{1, 1, 1, 0, 0, 0, false}, Layout{0, 0, 1, 0, 0, 0, false}}) {
        for (const kk::DeviceInfo* d : {&real, &small}) {
          const int64_t rows = rows_for(23, cols);
          const SoftmaxRowsPlan p =
              kk::plan_softmax_rows(rows, cols, sizeof(T), layout_of<T>(cols, l), *d);
          const int i =
              kk::config_index(kk::kSoftmaxRowsConfigs, kk::softmax_rows_config(p, sizeof(T)),
                               range.begin, range.end);
          ASSERT_GE(i, 0);
          const bool part = p.path == kk::SoftmaxRowsPath::kBlock && p.cached < cols / p.pack;
          // each entry once, and each block entry once more with a partly cached row
          if (done[i - range.begin] && (!part || partial[i - range.begin])) continue;
          done[i - range.begin] = true;
          if (part) partial[i - range.begin] = true;
          EXPECT_TRUE(run_rows_case<T>(k, rows, cols, l, seed++, &p))
              << "plan for " << (d == &real ? "this device" : "a 12 KiB device");
        }
      }
    }
    // cluster entries plan only where this build and device launch clusters (not from the
    // compute_80 PTX build)
    for (size_t i = 0; i < done.size(); ++i)
      EXPECT_TRUE(done[i] ||
                  (kk::kSoftmaxRowsConfigs[range.begin + i].path == kk::SoftmaxRowsPath::kCluster &&
                   !real.clusters()))
          << kind_name(k) << ": no case for entry " << range.begin + i;
  }
}

// Rows wider than one block's shared memory on this device (two inputs of 80 K f32 / 160 K
// 2-byte elements): the part past the cache is read twice.
TYPED_TEST(SoftmaxRowsTest, RowsPastSharedMemory) {
  const int64_t cols = sizeof(TypeParam) == 4 ? 80000 : 160000;
  uint64_t seed = 1300;
  for (const SoftmaxKind k : kBackward) {
    EXPECT_TRUE(run_rows_case<TypeParam>(k, 3, cols, Layout{}, seed++));
    EXPECT_TRUE(run_rows_case<TypeParam>(k, 2, cols, Layout{0, 0, 0, 8, 8, 8, true}, seed++));
  }
  EXPECT_TRUE(run_rows_case<TypeParam>(SoftmaxKind::kSoftmax, 3, cols,
                                       Layout{0, 0, 0, 8, 0, 16, false}, seed++));
  // few rows on a cluster whose blocks hold part of their chunk (a plan for 8 SMs with 12 KiB
  // of shared memory: clusters of 4, ~350 of ~2500 packs a block cached)
  const kk::DeviceInfo small = softmax_test::small_device(8, 12 * 1024, true, false);
  if (!small.clusters()) GTEST_SKIP() << "no cluster launch here";
  const int64_t few = sizeof(TypeParam) == 4 ? 40000 : 80000;
  for (const SoftmaxKind k : kBackward) {
    const SoftmaxRowsPlan p = kk::plan_softmax_rows(2, few, sizeof(TypeParam),
                                                    layout_of<TypeParam>(few, Layout{}), small);
    EXPECT_EQ(p.path, kk::SoftmaxRowsPath::kCluster);
    EXPECT_LT(p.cached * p.split * p.pack, few);
    EXPECT_TRUE(run_rows_case<TypeParam>(k, 2, few, Layout{}, seed++, &p));
  }
}

TYPED_TEST(SoftmaxRowsTest, EmptyIsANoOp) {
  using T = TypeParam;
  EXPECT_EQ(kk::softmax_backward<T>(nullptr, nullptr, nullptr, 0, 5), cudaSuccess);
  EXPECT_EQ(kk::log_softmax_backward<T>(nullptr, nullptr, nullptr, 5, 0), cudaSuccess);
  EXPECT_EQ(kk::softmax<T>(nullptr, 9, nullptr, 9, 0, 5), cudaSuccess);
}

// Bad arguments: cudaErrorInvalidValue, nothing written, no error left behind.
TYPED_TEST(SoftmaxRowsTest, BadArgumentsWriteNothing) {
  using T = TypeParam;
  const int64_t rows = 4, cols = 8, n = 256;
  DeviceBuffer<T> buf(n);
  buf.poison();
  T* b = buf.get();
  const auto expect_bad = [&](cudaError_t e, const char* what) {
    EXPECT_EQ(e, cudaErrorInvalidValue) << what;
  };
  expect_bad(kk::softmax_backward(b, b + 64, b + 128, -1, cols), "rows < 0");
  expect_bad(kk::softmax_backward(b, b + 64, b + 128, rows, -1), "cols < 0");
  expect_bad(kk::softmax_backward<T>(nullptr, b + 64, b + 128, rows, cols), "null y");
  expect_bad(kk::softmax_backward<T>(b, nullptr, b + 128, rows, cols), "null dy");
  expect_bad(kk::softmax_backward<T>(b, b + 64, nullptr, rows, cols), "null dx");
  expect_bad(kk::softmax_backward(b, b + 64, b + 4, rows, cols), "dx overlaps y");
  expect_bad(kk::softmax_backward(b, b + 64, b, rows, cols), "dx == y");
  expect_bad(kk::softmax_backward(b, b + 64, b + 65, rows, cols), "dx partly dy");
  expect_bad(kk::log_softmax_backward(b, b + 64, b + 65, rows, cols), "log: dx partly dy");
  expect_bad(kk::softmax_backward(b, 7, b + 64, 8, b + 128, 8, rows, cols), "ld_y < cols");
  expect_bad(kk::log_softmax_backward(b, 8, b + 64, 8, b + 128, 7, rows, cols), "ld_dx < cols");
  expect_bad(kk::softmax_backward(b, 8, b + 64, 8, b + 64, 9, rows, cols), "in place, other ld");
  const T* odd = reinterpret_cast<const T*>(reinterpret_cast<const char*>(b) + 1);
  expect_bad(kk::softmax_backward(odd, b + 64, b + 128, rows, cols), "misaligned y");
  expect_bad(kk::softmax(b, 7, b + 128, 8, rows, cols), "forward ld_in < cols");
  expect_bad(kk::log_softmax(b, 40, b + 100, 8, rows, cols), "forward spans overlap");
  expect_bad(kk::softmax(b, 8, b, 9, rows, cols), "forward in place, other ld");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  for (const T& v : buf.download())
    ASSERT_TRUE(softmax_test::poisoned(v)) << "a rejected call wrote";
}

// Past 2^31 elements (f32 2^31 + 2^20 ... 2-byte types: fewer bytes): 16 rows checked.
class SoftmaxRowsLargeTest : public kktest::GpuTest {};
TEST_F(SoftmaxRowsLargeTest, KK_LARGE(BackwardPastInt32Elements)) {
  using T = __nv_bfloat16;
  const int64_t cols = 1000, rows = ((int64_t{1} << 31) + 4096 * cols) / cols;
  const int64_t n = rows * cols;
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < size_t(3 * n * sizeof(T)) + (size_t{1} << 30)) GTEST_SKIP() << "not enough memory";
  DeviceBuffer<T> y(n), dy(n);
  // y = 1 / cols, dy = 1 (written by the device): s = 1, dx = 0 everywhere but row 0's
  // modified first element
  std::vector<T> row_y(cols, kk::convert<T>(1.0 / cols)), row_d(cols, kk::convert<T>(1.0));
  for (int64_t r = 0; r < rows; r += 65536) {
    const int64_t k = std::min<int64_t>(65536, rows - r);
    std::vector<T> by(k * cols), bd(k * cols);
    for (int64_t i = 0; i < k; ++i) {
      std::copy(row_y.begin(), row_y.end(), by.begin() + i * cols);
      std::copy(row_d.begin(), row_d.end(), bd.begin() + i * cols);
    }
    CUDA_CHECK(
        cudaMemcpy(y.get() + r * cols, by.data(), by.size() * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_CHECK(
        cudaMemcpy(dy.get() + r * cols, bd.data(), bd.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  // the last row's dy: 2 at column 0
  const T two = kk::convert<T>(2.0);
  CUDA_CHECK(cudaMemcpy(dy.get() + (rows - 1) * cols, &two, sizeof(T), cudaMemcpyHostToDevice));
  ASSERT_EQ(kk::softmax_backward(y.get(), dy.get(), dy.get(), rows, cols),
            cudaSuccess);  // in place
  CUDA_CHECK(cudaDeviceSynchronize());
  const double yv = kktest::to_double(row_y[0]);
  for (const int64_t r : {int64_t{0}, rows / 2, rows - 2, rows - 1}) {
    std::vector<T> got(cols);
    CUDA_CHECK(
        cudaMemcpy(got.data(), dy.get() + r * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
    const double s = yv * cols + (r == rows - 1 ? yv : 0.0);
    for (int64_t c = 0; c < cols; ++c) {
      const double d = (r == rows - 1 && c == 0) ? 2.0 : 1.0;
      const double want = yv * (d - s);
      ASSERT_NEAR(kktest::to_double(got[c]), want, 1e-2 * std::fabs(want) + 1e-5)
          << "row " << r << " col " << c;
    }
  }
}

}  // namespace
