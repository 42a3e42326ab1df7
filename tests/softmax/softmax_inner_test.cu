// SPDX-License-Identifier: Apache-2.0
// softmax_inner / log_softmax_inner and their backward passes (softmax over the middle axis of
// (outer, n, inner)) on the GPU against float64 references: inner {1 (the row softmax), 2, 3, 7,
// 32, 33, 1000}, n {1, 2, 17, 1000, 50000}, outer 1..many, every type, NaN / -inf columns,
// outputs poisoned with guards checked untouched, pointers off the 16-byte grid, in place, with
// and without a workspace, short columns (n <= 16: kRegs, +inf columns too), every entry of
// kSoftmaxInnerConfigs for the four kinds (plans made for small devices), bad arguments (nothing
// written), and a Large_ case past 2^31 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/devices.cuh"
#include "common/test_util.cuh"
#include "kernelkit/softmax/softmax_inner.cuh"
#include "softmax/softmax_case.cuh"

namespace kk = kernelkit;
using kk::SoftmaxInnerPath;
using kk::SoftmaxInnerPlan;
using kk::SoftmaxKind;
using kktest::DeviceBuffer;

namespace {

template <typename T>
class SoftmaxInnerTest : public kktest::GpuTest {};
using Types = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(SoftmaxInnerTest, Types);

constexpr int64_t kGuard = 16;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr SoftmaxKind kKinds[] = {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax,
                                  SoftmaxKind::kSoftmaxBackward, SoftmaxKind::kLogSoftmaxBackward};

bool is_log(SoftmaxKind k) {
  return k == SoftmaxKind::kLogSoftmax || k == SoftmaxKind::kLogSoftmaxBackward;
}
const char* kind_name(SoftmaxKind k) {
  switch (k) {
    case SoftmaxKind::kSoftmax:
      return "softmax_inner";
    case SoftmaxKind::kLogSoftmax:
      return "log_softmax_inner";
    case SoftmaxKind::kSoftmaxBackward:
      return "softmax_inner_backward";
    default:
      return "log_softmax_inner_backward";
  }
}

// How a case runs.
struct Options {
  int64_t shift = 0;       // elements every operand sits past its buffer's guard (1: off-grid)
  int64_t out_shift = -1;  // the output's own shift (-1: shift)
  bool in_place = false;   // out == in (forward) / dx == dy (backward)
  bool workspace = true;   // pass softmax_inner_workspace_bytes of workspace
  const SoftmaxInnerPlan* plan = nullptr;  // launch this plan instead of the public function
  bool pos_inf = false;  // forward: +inf in column (0, 3) (its column NaN, as the formula gives)
};

// x[o][k][i] at (o * n + k) * inner + i: the float64 reference of column (o, i) of every kind.
// Forward: the row softmax's tolerance (tol_fwd); backward: softmax_rows_test's bound (rel_bwd,
// sub_bwd: the output's rounding and f16's subnormal half-ulp).
template <typename T>
::testing::AssertionResult check_case_values(SoftmaxKind kind, int64_t outer, int64_t n,
                                             int64_t inner, const std::vector<double>& x,
                                             const std::vector<double>& dy,
                                             const std::vector<double>& got, double rel_bwd,
                                             double sub_bwd, kktest::Tolerance tol_fwd,
                                             const std::string& label) {
  const bool bwd = kk::softmax_is_backward(kind), log = is_log(kind);
  int64_t bad = 0;
  std::string first;
  std::vector<double> col(n), ref(n), d(n);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < n; ++k) {
        col[k] = x[(o * n + k) * inner + i];
        if (bwd) d[k] = dy[(o * n + k) * inner + i];
      }
      if (!bwd) {
        ref = softmax_test::reference(col, 1, n, log);
        for (int64_t k = 0; k < n; ++k) {
          const double g = got[(o * n + k) * inner + i], r = ref[k];
          if (!kktest::within<T>(g, r, tol_fwd) && bad++ == 0)
            first = "o " + std::to_string(o) + " k " + std::to_string(k) + " i " +
                    std::to_string(i) + ": got " + std::to_string(g) + " want " + std::to_string(r);
        }
        continue;
      }
      double s = 0, mag = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double t = log ? d[k] : col[k] * d[k];
        s += t;
        mag += std::fabs(t);
      }
      const double err_s = 1.2e-7 * (double(n) / 64 + 64) * mag;
      for (int64_t k = 0; k < n; ++k) {
        const double y = col[k], w = log ? std::exp(y) : y;
        const double r = log ? d[k] - w * s : y * (d[k] - s);
        const double g = got[(o * n + k) * inner + i];
        bool ok;
        if (std::isnan(r)) {
          ok = std::isnan(g);
        } else {
          const double tol = rel_bwd * std::fabs(r) +
                             std::fabs(w) * (err_s + 2e-6 * (std::fabs(d[k]) + std::fabs(s))) +
                             1e-6 * std::fabs(d[k]) + sub_bwd;
          ok = std::fabs(g - r) <= tol;
        }
        if (!ok && bad++ == 0)
          first = "o " + std::to_string(o) + " k " + std::to_string(k) + " i " + std::to_string(i) +
                  ": got " + std::to_string(g) + " want " + std::to_string(r);
      }
    }
  }
  if (bad > 0)
    return ::testing::AssertionFailure() << label << ": " << bad << " mismatches, first " << first;
  return ::testing::AssertionSuccess();
}

// Runs one call and checks every output element against the float64 reference and the guards
// around the output untouched.
template <typename T>
::testing::AssertionResult run_case(SoftmaxKind kind, int64_t outer, int64_t n, int64_t inner,
                                    uint64_t seed, const Options& opt = Options()) {
  const bool bwd = kk::softmax_is_backward(kind), log = is_log(kind);
  const int64_t out_shift = opt.out_shift < 0 ? opt.shift : opt.out_shift;
  const std::string label = std::string(kk::type_name<T>()) + " " + kind_name(kind) + " " +
                            std::to_string(outer) + "x" + std::to_string(n) + "x" +
                            std::to_string(inner) + " shift " + std::to_string(opt.shift) + "/" +
                            std::to_string(out_shift) + (opt.in_place ? " in place" : "") +
                            (opt.workspace ? "" : " no workspace") +
                            (opt.plan ? " forced plan" : "") + " seed=" + std::to_string(seed);
  const int64_t total = outer * n * inner;
  // forward: x in [-8, 8) with specials (column (0, 0) two -inf, (0, 1) all -inf, (0, 2) a NaN);
  // backward: y as a forward output would be (softmax: [0, 2 / n); log: [-log n - 4, -log n)),
  // dy in [-1, 1), a NaN in column (0, 2)'s dy
  const double ln = std::log(double(n));
  std::vector<T> hx =
      bwd ? kktest::random_vector<T>(total, seed, log ? -ln - 4 : 0.0, log ? -ln : 2.0 / double(n))
          : kktest::random_vector<T>(total, seed, -8.0, 8.0);
  std::vector<T> hd =
      bwd ? kktest::random_vector<T>(total, seed + 7777, -1.0, 1.0) : std::vector<T>();
  const auto at = [&](int64_t o, int64_t k, int64_t i) { return (o * n + k) * inner + i; };
  if (!bwd) {
    const T ninf = kk::convert<T>(-kInf);
    hx[at(0, 0, 0)] = ninf;
    hx[at(0, n / 2, 0)] = ninf;
    if (inner >= 2)
      for (int64_t k = 0; k < n; ++k)
        hx[at(0, k, 1)] = ninf;
    if (inner >= 3) hx[at(0, n - 1, 2)] = kk::convert<T>(kNaN);
    if (opt.pos_inf && inner >= 4) hx[at(0, n - 1, 3)] = kk::convert<T>(kInf);
  } else if (inner >= 3) {
    hd[at(0, n / 3, 2)] = kk::convert<T>(kNaN);
  }
  DeviceBuffer<T> x(total + 2 * kGuard + 8), dy(bwd ? total + 2 * kGuard + 8 : 1),
      out(total + 2 * kGuard + 8);
  x.poison();
  dy.poison();
  out.poison();
  T* const px = x.get() + kGuard + opt.shift;
  T* const pdy = dy.get() + kGuard + opt.shift;
  CUDA_CHECK(cudaMemcpy(px, hx.data(), total * sizeof(T), cudaMemcpyHostToDevice));
  if (bwd) CUDA_CHECK(cudaMemcpy(pdy, hd.data(), total * sizeof(T), cudaMemcpyHostToDevice));
  DeviceBuffer<T>& ob = opt.in_place ? (bwd ? dy : x) : out;
  T* const po = opt.in_place ? (bwd ? pdy : px) : out.get() + kGuard + out_shift;
  const size_t ws_bytes = opt.workspace ? kk::softmax_inner_workspace_bytes<T>(outer, n, inner) : 0;
  DeviceBuffer<unsigned char> ws(ws_bytes);
  ws.poison();  // whatever the workspace holds before a call
  void* const pws = ws_bytes ? ws.get() : nullptr;
  cudaError_t err;
  if (opt.plan != nullptr) {
    err = kk::launch_softmax_inner(*opt.plan, kind, px, bwd ? pdy : nullptr, po, outer, n, inner,
                                   pws, nullptr);
  } else if (kind == SoftmaxKind::kSoftmax) {
    err = kk::softmax_inner(px, po, outer, n, inner, pws, ws_bytes);
  } else if (kind == SoftmaxKind::kLogSoftmax) {
    err = kk::log_softmax_inner(px, po, outer, n, inner, pws, ws_bytes);
  } else if (kind == SoftmaxKind::kSoftmaxBackward) {
    err = kk::softmax_inner_backward(px, pdy, po, outer, n, inner, pws, ws_bytes);
  } else {
    err = kk::log_softmax_inner_backward(px, pdy, po, outer, n, inner, pws, ws_bytes);
  }
  if (err != cudaSuccess)
    return ::testing::AssertionFailure() << label << ": " << cudaGetErrorString(err);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto all = ob.download();
  const int64_t base = po - ob.get();
  std::vector<double> got(total), xd(total), dd(bwd ? total : 0);
  for (int64_t e = 0; e < int64_t(all.size()); ++e) {
    const int64_t rel = e - base;
    if (rel >= 0 && rel < total) {
      got[rel] = kktest::to_double(all[e]);
    } else if (!softmax_test::poisoned(all[e])) {
      return ::testing::AssertionFailure()
             << label << ": element " << rel << " outside the output was written";
    }
  }
  for (int64_t e = 0; e < total; ++e) {
    xd[e] = kktest::to_double(hx[e]);
    if (bwd) dd[e] = kktest::to_double(hd[e]);
  }
  return check_case_values<T>(kind, outer, n, inner, xd, dd, got, softmax_test::out_rel<T>(),
                              softmax_test::kSubnormalHalfUlp<T>, softmax_test::tolerance<T>(log),
                              label);
}

// The shapes of the issue: inner {1, 2, 3, 7, 32, 33, 1000} x n {1, 2, 17, 1000} x outer {1, 3},
// every kind and type (cases past 2^20 elements skipped: the reference runs on the host).
TYPED_TEST(SoftmaxInnerTest, ShapesEveryKind) {
  using T = TypeParam;
  uint64_t seed = 1;
  int64_t index = 0;
  for (const SoftmaxKind kind : kKinds) {
    for (const int64_t inner : {1, 2, 3, 7, 32, 33, 1000}) {
      for (const int64_t n : {1, 2, 17, 1000}) {
        for (const int64_t outer : {1, 3}) {
          if (outer * n * inner > (int64_t{1} << 20)) continue;
          // under the sanitizer every third case (each path still runs: the sweep's paths
          // repeat with period 2 in outer)
          if (!kktest::sanitize_keep(index++, 3)) continue;
          EXPECT_TRUE(run_case<T>(kind, outer, n, inner, seed++));
        }
      }
    }
  }
}

// Many slices (several a tile), tall columns (streamed; split with a workspace, unsplit
// without), off-grid pointers (one element a load), in place.
TYPED_TEST(SoftmaxInnerTest, LayoutsAndTallColumns) {
  using T = TypeParam;
  uint64_t seed = 100;
  for (const SoftmaxKind kind : kKinds) {
    EXPECT_TRUE(run_case<T>(kind, 2000, 17, 7, seed++));
    EXPECT_TRUE(run_case<T>(kind, 4096, 2, 2, seed++));
    EXPECT_TRUE(run_case<T>(kind, 5, 64, 200, seed++, {1}));            // off the grid
    EXPECT_TRUE(run_case<T>(kind, 5, 64, 200, seed++, {0, 1}));         // out elsewhere
    EXPECT_TRUE(run_case<T>(kind, 3, 100, 96, seed++, {0, -1, true}));  // in place
    EXPECT_TRUE(run_case<T>(kind, 3, 100, 96, seed++, {1, -1, true}));  // in place, off grid
    EXPECT_TRUE(run_case<T>(kind, 1, 50000, 2, seed++));                // tall, narrow
    EXPECT_TRUE(run_case<T>(kind, 1, 50000, 17, seed++));               // tall, one at a time
    EXPECT_TRUE(run_case<T>(kind, 1, 50000, 16, seed++));               // tall, split
    EXPECT_TRUE(run_case<T>(kind, 1, 50000, 16, seed++, {0, -1, false, false}));  // unsplit
    EXPECT_TRUE(run_case<T>(kind, 1, 50000, 16, seed++, {0, -1, true}));          // split, in place
  }
}

// Short columns (n <= 16, kRegs): n 1 .. 16 (1: every output 1, or NaN where the formula
// gives NaN: -inf, +inf and NaN columns), slices narrower and wider than 256 units (tiles of
// whole slices / of one slice's columns, the slice's last partial), rows on and off the grid,
// in place, every kind and type.
TYPED_TEST(SoftmaxInnerTest, ShortColumns) {
  using T = TypeParam;
  uint64_t seed = 300;
  int64_t index = 0;
  for (const SoftmaxKind kind : kKinds) {
    const bool bwd = kk::softmax_is_backward(kind);
    for (const int64_t n : {1, 2, 3, 4, 5, 8, 9, 16}) {
      if (bwd && n > 8) continue;
      for (const int64_t inner : {2, 5, 64, 255, 256, 1000, 4099}) {
        for (const int64_t outer : {1, 7}) {
          for (const int64_t shift : {0, 1}) {
            if (!kktest::sanitize_keep(index++, 4)) continue;
            Options opt;
            opt.shift = shift;
            opt.pos_inf = true;
            opt.in_place = (n + inner) % 3 == 0;
            EXPECT_TRUE(run_case<T>(kind, outer, n, inner, seed++, opt));
          }
        }
      }
    }
  }
  // many tiles and slices: one long row (n 1) and two rows, off the grid; narrow slices
  for (const SoftmaxKind kind : kKinds) {
    Options off_grid;
    off_grid.shift = 1;
    off_grid.pos_inf = !kk::softmax_is_backward(kind);
    EXPECT_TRUE(run_case<T>(kind, 1, 1, (int64_t{1} << 18) + 3, seed++, off_grid));
    EXPECT_TRUE(run_case<T>(kind, 1, 2, 100003, seed++, off_grid));
    EXPECT_TRUE(run_case<T>(kind, 20000, 2, 2, seed++));
    EXPECT_TRUE(run_case<T>(kind, 3000, 5, 8, seed++));
  }
}

// Every entry of kSoftmaxInnerConfigs for every kind, through plans made for devices small
// enough to pick it on shapes a test can check.
TYPED_TEST(SoftmaxInnerTest, EveryConfiguration) {
  using T = TypeParam;
  constexpr int kElem = sizeof(T);
  kk::DeviceInfo small = kktest::h100();
  small.smem_per_sm = 16 * 1024;  // tiles of at most ~5 KB: n = 3000 streams
  small.smem_per_block_optin = 16 * 1024;
  const kk::ConfigRange range = kk::softmax_inner_configs_of(kElem);
  uint64_t seed = 500;
  for (size_t e = range.begin; e < range.end; ++e) {
    const kk::SoftmaxInnerConfig c = kk::kSoftmaxInnerConfigs[e];
    const bool tile = c.path == SoftmaxInnerPath::kTile;
    const bool packed = c.pack > 1;
    if (c.path == SoftmaxInnerPath::kRegs) {
      // short columns: n the bound (rows on the grid where packed, one element past it
      // otherwise), for each direction whose plans take the entry
      for (const SoftmaxKind kind : kKinds) {
        const bool bwd = kk::softmax_is_backward(kind);
        if (c.rows > (bwd ? 8 : 16)) continue;
        if (packed && c.pack != kk::detail::softmax_inner_regs_pack(kElem, bwd, c.rows)) continue;
        const int64_t outer = 3, n = c.rows, inner = 64;
        Options opt;
        opt.shift = packed ? 0 : 1;
        const kk::Alignment a(opt.shift * kElem);
        const kk::SoftmaxInnerLayout at =
            bwd ? kk::softmax_inner_layout(a, a, &a) : kk::softmax_inner_layout(a, a);
        const SoftmaxInnerPlan p =
            kk::plan_softmax_inner(outer, n, inner, kElem, bwd, at, 0, kktest::h100());
        ASSERT_EQ(kk::softmax_inner_config(p, kElem), c) << kind_name(kind);
        opt.plan = &p;
        EXPECT_TRUE(run_case<T>(kind, outer, n, inner, seed++, opt));
      }
      continue;
    }
    for (const SoftmaxKind kind : kKinds) {
      const bool bwd = kk::softmax_is_backward(kind);
      // tiles: whole slices, the output at the inputs' offset (packs) or one element past it;
      // streams (n 3000 on the small device): rows on the grid, or every operand one element
      // past it
      const int64_t outer = tile ? 3 : 2, n = tile ? 40 : 3000, inner = 64;
      Options opt;
      opt.shift = packed || tile ? 0 : 1;
      opt.out_shift = packed || !tile ? opt.shift : 1;
      const kk::Alignment a(opt.shift * kElem), o(opt.out_shift * kElem);
      const kk::SoftmaxInnerLayout at =
          bwd ? kk::softmax_inner_layout(a, o, &a) : kk::softmax_inner_layout(a, o);
      const size_t ws = kk::softmax_inner_workspace_bytes<T>(outer, n, inner);
      const SoftmaxInnerPlan p = kk::plan_softmax_inner(outer, n, inner, kElem, bwd, at, ws,
                                                        tile ? kktest::h100() : small);
      ASSERT_EQ(kk::softmax_inner_config(p, kElem), c) << kind_name(kind);
      opt.plan = &p;
      EXPECT_TRUE(run_case<T>(kind, outer, n, inner, seed++, opt));
    }
  }
}

// Bad arguments: cudaErrorInvalidValue before any launch, nothing written.
TYPED_TEST(SoftmaxInnerTest, BadArgumentsWriteNothing) {
  using T = TypeParam;
  const int64_t outer = 2, n = 4, inner = 8, total = outer * n * inner;
  DeviceBuffer<T> x(total + 8), out(total + 8), ws(64);
  x.poison();
  out.poison();
  const auto before = out.download();
  const auto bad = [&](cudaError_t e) {
    EXPECT_EQ(e, cudaErrorInvalidValue);
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(out.download(), before));
  };
  T* const o = out.get();
  const T* const in = x.get();
  bad(kk::softmax_inner(in, o, -1, n, inner));
  bad(kk::softmax_inner(in, o, outer, -1, inner));
  bad(kk::log_softmax_inner(in, o, outer, n, -1));
  bad(kk::softmax_inner<T>(nullptr, o, outer, n, inner));
  bad(kk::softmax_inner(in, reinterpret_cast<T*>(reinterpret_cast<char*>(o) + 1), outer, n, inner));
  bad(kk::softmax_inner(in, o, int64_t{1} << 40, int64_t{1} << 40, inner));
  bad(kk::softmax_inner(o + 1, o, outer, n, inner));  // partial overlap
  bad(kk::softmax_inner(in, o, outer, n, inner, nullptr, 64));
  bad(kk::softmax_inner(in, o, outer, n, inner, o + 8, 64));  // workspace over out
  bad(kk::softmax_inner_backward(in, in, o, outer, n, inner, reinterpret_cast<char*>(ws.get()) + 4,
                                 64));
  bad(kk::softmax_inner_backward(o, in, o, outer, n, inner));          // dx == y
  bad(kk::log_softmax_inner_backward(in, o + 1, o, outer, n, inner));  // dx over dy
  bad(kk::softmax_inner_backward<T>(in, nullptr, o, outer, n, inner));
  // empty calls do nothing and succeed
  EXPECT_EQ(kk::softmax_inner<T>(nullptr, nullptr, 0, n, inner), cudaSuccess);
  EXPECT_EQ(kk::softmax_inner_backward<T>(nullptr, nullptr, nullptr, outer, 0, inner), cudaSuccess);
  EXPECT_TRUE(kktest::same_bits(out.download(), before));
}

// The same call gives the same bits (split through the workspace too).
TYPED_TEST(SoftmaxInnerTest, Deterministic) {
  using T = TypeParam;
  const int64_t outer = 1, n = 50000, inner = 16, total = outer * n * inner;
  const auto hx = kktest::random_vector<T>(total, 77, -4.0, 4.0);
  auto x = kktest::to_device(hx);
  DeviceBuffer<T> a(total), b(total);
  const size_t wsb = kk::softmax_inner_workspace_bytes<T>(outer, n, inner);
  DeviceBuffer<unsigned char> ws(wsb);
  ASSERT_EQ(kk::softmax_inner(x.get(), a.get(), outer, n, inner, ws.get(), wsb), cudaSuccess);
  ws.poison();
  ASSERT_EQ(kk::softmax_inner(x.get(), b.get(), outer, n, inner, ws.get(), wsb), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(a.download(), b.download()));
}

class SoftmaxInnerLargeTest : public kktest::GpuTest {};

// Past 2^31 elements (bf16, in place): 131073 slices of 16 x 1024 (2^31 + 16384 elements), every
// column constant but one of the last slice.
TEST_F(SoftmaxInnerLargeTest, KK_LARGE(PastInt32Elements)) {
  using T = __nv_bfloat16;
  const int64_t n = 16, inner = 1024, outer = (int64_t{1} << 31) / (n * inner) + 1;
  const int64_t total = outer * n * inner;
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < size_t(total * sizeof(T)) + (size_t{1} << 30)) GTEST_SKIP() << "not enough memory";
  DeviceBuffer<T> x(total);
  CUDA_CHECK(cudaMemset(x.get(), 0x3C, total * sizeof(T)));  // bf16 0x3C3C everywhere
  const T one = kk::convert<T>(1.0);
  const int64_t last = (outer - 1) * n * inner;  // the last slice's (k 0, i 5)
  CUDA_CHECK(cudaMemcpy(x.get() + last + 5, &one, sizeof(T), cudaMemcpyHostToDevice));
  ASSERT_EQ(kk::softmax_inner(x.get(), x.get(), outer, n, inner), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  T c;
  uint16_t bits = 0x3C3C;
  std::memcpy(&c, &bits, 2);
  const double cv = kktest::to_double(c), ov = 1.0;
  const double big = std::exp(ov - ov) / (1.0 + (n - 1) * std::exp(cv - ov));
  const double small = std::exp(cv - ov) / (1.0 + (n - 1) * std::exp(cv - ov));
  const auto get = [&](int64_t e) {
    T v;
    CUDA_CHECK(cudaMemcpy(&v, x.get() + e, sizeof(T), cudaMemcpyDeviceToHost));
    return kktest::to_double(v);
  };
  for (const int64_t e : {int64_t{0}, total / 2 + 3, total - 1, last + 4, last + inner + 6})
    EXPECT_NEAR(get(e), 1.0 / n, 1e-3) << e;
  EXPECT_NEAR(get(last + 5), big, 8e-3 * big);
  EXPECT_NEAR(get(last + inner + 5), small, 8e-3 * small);
  EXPECT_NEAR(get(last + (n - 1) * inner + 5), small, 8e-3 * small);
}

}  // namespace
