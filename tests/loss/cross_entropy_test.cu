// SPDX-License-Identifier: Apache-2.0
// cross_entropy and cross_entropy_backward on the GPU against float64 references: fresh random
// logits and targets (seed in every failure message), outputs poisoned (0xFF bytes: NaN) before
// each call, float / __half / __nv_bfloat16 logits with int32 and int64 targets, every
// reduction, label smoothing 0 / 0.1 / 1, ignore_index rows, targets outside the classes (the
// row NaN), NaN / inf logits, one-column rows, zero rows, widths off the pack, odd row strides
// and starts off the 16-byte grid, the warp / block / split paths, in place and separate
// dlogits (16-byte packs and one element an access), determinism, bad arguments (nothing
// written) and a call past 2^31 elements.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/loss/cross_entropy.cuh"

namespace kk = kernelkit;
using kk::LossReduction;
using kktest::DeviceBuffer;

namespace {

class CrossEntropyTest : public kktest::GpuTest {};

constexpr int64_t kIgnore = -100;

template <typename T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, __half>) return "f16";
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bf16";
  if constexpr (std::is_same_v<T, int32_t>) return "i32";
  return "i64";
}

// Relative tolerance of the losses and lse (float arithmetic; the 2-byte types' exp is
// ex2.approx) and of dlogits (the output's rounding).
template <typename T>
double loss_tol() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-4;
}
// dlogits' absolute resolution at 0: half of __half's smallest subnormal step (mean over many
// rows makes gradients of 1e-8).
template <typename T>
double grad_abs() {
  return std::is_same_v<T, __half> ? 6e-8 : 1e-40;
}
template <typename T>
double grad_tol() {
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  if constexpr (std::is_same_v<T, __half>) return 2e-3;
  return 1e-2;
}

bool close(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * (1.0 + std::fabs(want));
}

// The float64 reference of one row, the kernels' definition: m = max over the non-NaN logits
// (fmax), s = sum exp(x - m) (m = -inf: base 0), lse = m + log s.
struct RowRef {
  double lse, loss, sx;
};
template <typename T>
RowRef row_ref(const T* row, int64_t vocab, int64_t t, double eps) {
  double m = -INFINITY, sx = 0;
  for (int64_t j = 0; j < vocab; ++j) {
    const double x = kktest::to_double(row[j]);
    m = std::fmax(m, x);
    sx += x;
  }
  const double base = m == -INFINITY ? 0.0 : m;
  double s = 0;
  for (int64_t j = 0; j < vocab; ++j)
    s += std::exp(kktest::to_double(row[j]) - base);
  const double lse = m + std::log(s);
  double loss;
  if (t == kIgnore) {
    loss = 0;
  } else if (t < 0 || t >= vocab) {
    loss = NAN;
  } else {
    loss = lse;
    if (eps != 1.0) loss -= (1.0 - eps) * kktest::to_double(row[t]);
    if (eps != 0.0) loss -= eps * sx / double(vocab);
  }
  return {lse, loss, sx};
}

struct Case {
  int64_t rows = 1, vocab = 1;
  int64_t ld = 0;    // 0: vocab
  int off = 0;       // elements the logits start past a 256-byte boundary
  double eps = 0.0;  // label smoothing
  LossReduction reduction = LossReduction::kNone;
  int ignore_every = 0;    // every k-th row's target is ignore_index (0: none)
  int invalid_row = -1;    // this row's target is vocab (outside the classes)
  int special = 0;         // 1: NaN, 2: +inf, 3: -inf (not at the target), 4: -inf at the target,
                           // 5: a row of -inf; in row 0
  double lo = -4, hi = 4;  // logits' range
  bool in_place = true;    // backward: dlogits == logits; else dlogits at d_off, ld_d
  int d_off = 0;
  int64_t ld_d = 0;
};

std::string label(const Case& c, const char* t, const char* g, uint64_t seed) {
  return std::string(t) + "/" + g + " " + std::to_string(c.rows) + "x" + std::to_string(c.vocab) +
         " ld=" + std::to_string(c.ld) + " off=" + std::to_string(c.off) +
         " eps=" + std::to_string(c.eps) + " red=" + std::to_string(static_cast<int>(c.reduction)) +
         " ignore_every=" + std::to_string(c.ignore_every) +
         " invalid=" + std::to_string(c.invalid_row) + " special=" + std::to_string(c.special) +
         " in_place=" + std::to_string(c.in_place) + " d_off=" + std::to_string(c.d_off) +
         " ld_d=" + std::to_string(c.ld_d) + " seed=" + std::to_string(seed);
}

template <typename T, typename Tgt>
void run_case(Case c, uint64_t seed) {
  const int64_t ld = c.ld ? c.ld : c.vocab;
  const int64_t ld_d = c.ld_d ? c.ld_d : c.vocab;
  const std::string what = label(c, type_name<T>(), type_name<Tgt>(), seed);
  const int64_t span = c.rows > 0 ? (c.rows - 1) * ld + c.vocab : 0;
  // logits (and the padding between rows) random; row 0's special values
  std::vector<T> h = kktest::random_vector<T>(span + c.off, seed, c.lo, c.hi);
  std::vector<Tgt> tgt = kktest::random_vector<Tgt>(c.rows, seed + 1, 0, double(c.vocab));
  for (int64_t r = 0; r < c.rows; ++r)
    if (c.ignore_every > 0 && r % c.ignore_every == c.ignore_every - 1) tgt[r] = Tgt(kIgnore);
  if (c.invalid_row >= 0 && c.invalid_row < c.rows) tgt[c.invalid_row] = Tgt(c.vocab);
  T* row0 = h.data() + c.off;
  if (c.rows > 0 && c.special > 0) {
    const int64_t t = static_cast<int64_t>(tgt[0]);
    const int64_t j = (t >= 0 && t < c.vocab) ? (t + 1) % c.vocab : 0;  // not the target
    if (c.special == 1) row0[j] = kk::convert<T>(NAN);
    if (c.special == 2) row0[j] = kk::convert<T>(INFINITY);
    if (c.special == 3 && c.vocab > 1) row0[j] = kk::convert<T>(-INFINITY);
    if (c.special == 4 && t >= 0 && t < c.vocab) row0[t] = kk::convert<T>(-INFINITY);
    if (c.special == 5)
      for (int64_t k = 0; k < c.vocab; ++k)
        row0[k] = kk::convert<T>(-INFINITY);
  }
  // the logits 256-byte aligned + off elements
  DeviceBuffer<T> logits(h.size() + 256 / sizeof(T));
  T* lp = logits.get() + (256 - reinterpret_cast<uintptr_t>(logits.get()) % 256) % 256 / sizeof(T);
  if (!h.empty())
    CUDA_CHECK(cudaMemcpy(lp, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  lp += c.off;
  const DeviceBuffer<Tgt> target = kktest::to_device(tgt);
  const bool none = c.reduction == LossReduction::kNone;
  DeviceBuffer<float> loss(none ? std::max<int64_t>(c.rows, 1) : 1),
      lse(std::max<int64_t>(c.rows, 1));
  const size_t ws_bytes = kk::cross_entropy_workspace_bytes(c.rows, c.vocab);
  DeviceBuffer<float4> ws(ws_bytes / 16 + 1);
  loss.poison();
  lse.poison();
  ws.poison();
  ASSERT_EQ(kk::cross_entropy(lp, ld, target.get(), c.rows, c.vocab, kIgnore, float(c.eps),
                              c.reduction, loss.get(), lse.get(), ws.get(), ws_bytes),
            cudaSuccess)
      << what;
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto got_loss = loss.download();
  const auto got_lse = lse.download();
  // references
  std::vector<RowRef> ref(c.rows);
  double sum = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    ref[r] = row_ref(row0 + r * ld, c.vocab, static_cast<int64_t>(tgt[r]), c.eps);
    sum += ref[r].loss;
    count += static_cast<int64_t>(tgt[r]) != kIgnore ? 1 : 0;
  }
  const double tol = loss_tol<T>();
  for (int64_t r = 0; r < c.rows; ++r) {
    ASSERT_TRUE(close(got_lse[r], ref[r].lse, tol))
        << what << " row " << r << " lse " << got_lse[r] << " want " << ref[r].lse;
    if (none)
      ASSERT_TRUE(close(got_loss[r], ref[r].loss, tol))
          << what << " row " << r << " loss " << got_loss[r] << " want " << ref[r].loss;
  }
  if (c.rows == 0 && none) {
    uint32_t bits;
    std::memcpy(&bits, &got_loss[0], 4);
    EXPECT_EQ(bits, 0xFFFFFFFFu) << what << " nothing written";
  }
  if (!none) {
    const double want = c.reduction == LossReduction::kSum ? sum : sum / double(count);
    ASSERT_TRUE(close(got_loss[0], want, 10 * tol))
        << what << " reduced " << got_loss[0] << " want " << want;
  }
  if (c.rows == 0) return;

  // backward
  std::vector<float> dloss = kktest::random_vector<float>(none ? c.rows : 1, seed + 2, 0.5, 1.5);
  const DeviceBuffer<float> d_dloss = kktest::to_device(dloss);
  DeviceBuffer<T> separate;
  T* dp = lp;
  if (!c.in_place) {
    const int64_t dspan = (c.rows - 1) * ld_d + c.vocab;
    separate = DeviceBuffer<T>(dspan + 256 / sizeof(T) + c.d_off);
    separate.poison();
    dp = separate.get() +
         (256 - reinterpret_cast<uintptr_t>(separate.get()) % 256) % 256 / sizeof(T) + c.d_off;
  }
  ASSERT_EQ(
      kk::cross_entropy_backward(lp, ld, target.get(), lse.get(), d_dloss.get(), c.rows, c.vocab,
                                 kIgnore, float(c.eps), c.reduction, dp, c.in_place ? ld : ld_d),
      cudaSuccess)
      << what;
  CUDA_CHECK(cudaDeviceSynchronize());
  const int64_t dld = c.in_place ? ld : ld_d;
  std::vector<T> got((c.rows - 1) * dld + c.vocab);
  CUDA_CHECK(cudaMemcpy(got.data(), dp, got.size() * sizeof(T), cudaMemcpyDeviceToHost));
  const double gt = grad_tol<T>();
  for (int64_t r = 0; r < c.rows; ++r) {
    const int64_t t = static_cast<int64_t>(tgt[r]);
    const double g =
        none ? dloss[r]
             : (c.reduction == LossReduction::kSum ? dloss[0] : dloss[0] / double(count));
    // the lse the kernel read (checked against the reference above)
    const double lse_f = got_lse[r];
    for (int64_t j = 0; j < c.vocab; ++j) {
      double want;
      if (t == kIgnore) {
        want = 0;
      } else if (t < 0 || t >= c.vocab) {
        want = NAN;
      } else {
        const double x = kktest::to_double(row0[r * ld + j]);
        want = g * (std::exp(x - lse_f) - c.eps / double(c.vocab) - (j == t ? 1.0 - c.eps : 0.0));
      }
      const double v = kktest::to_double(got[r * dld + j]);
      const bool ok =
          std::isnan(want)
              ? std::isnan(v)
              : std::fabs(v - want) <= gt * (std::fabs(want) + std::fabs(g) * 1e-3) + grad_abs<T>();
      ASSERT_TRUE(ok) << what << " dlogits row " << r << " col " << j << " got " << v << " want "
                      << want;
    }
    if (!c.in_place && r + 1 < c.rows) {
      // the padding between dlogits rows untouched (0xFF bytes)
      for (int64_t j = c.vocab; j < dld; ++j) {
        uint16_t bits = 0;
        std::memcpy(&bits, &got[r * dld + j], 2);
        ASSERT_EQ(bits, 0xFFFFu) << what << " wrote padding at row " << r << " col " << j;
      }
    }
  }
}

template <typename T, typename Tgt>
void sweep(uint64_t seed0) {
  // 4500 x 1500: rows of 188 / 376 packs over more rows than the block slots, a warp a row and
  // several batches a warp (cross_entropy_warp_rows). Few rows split over blocks, their chunks
  // met in the finish by groups of threads a row (cross_entropy_finish_group): 95 x 32021 and
  // 69 x 8740 (2-3 chunks a row: groups of 2-4, 16 / 8 rows a warp), 13 x 79264 (~20 chunks: a
  // warp), 6 x 50000 (~44 chunks: a warp, 2 a lane), 1 x 128256 (f32 ~250 chunks: 2 warps, 4 a
  // thread, met through shared memory), 1 x 300000 and 2 x 300000 (~264 / 132 chunks: 4 / 2
  // warps a row)
  const int64_t shapes[][2] = {{1, 1},       {3, 1},      {5, 7},      {33, 31},    {17, 100},
                               {64, 513},    {7, 1000},   {9, 2049},   {130, 4096}, {5, 8191},
                               {3, 32000},   {1, 128256}, {300, 5003}, {1000, 129}, {4, 262147},
                               {4500, 1500}, {95, 32021}, {69, 8740},  {13, 79264}, {6, 50000},
                               {1, 300000},  {2, 300000}};
  uint64_t seed = seed0;
  int i = 0;
  for (const auto& s : shapes) {
    for (LossReduction red : {LossReduction::kNone, LossReduction::kSum, LossReduction::kMean}) {
      ++i;
      if (!kktest::sanitize_keep(i, 3)) continue;
      Case c;
      c.rows = s[0], c.vocab = s[1], c.reduction = red;
      c.eps = i % 3 == 0 ? 0.1 : (i % 7 == 0 ? 1.0 : 0.0);
      c.ignore_every = i % 2 == 0 ? 3 : 0;
      // odd row strides and starts off the grid; dlogits apart (packs where alike, else one
      // element an access)
      c.ld = i % 4 == 1 ? c.vocab + 3 : 0;
      c.off = i % 5;
      c.in_place = i % 3 != 2;
      c.d_off = i % 2 == 0 ? c.off : c.off + 1;
      c.ld_d = c.ld ? c.ld : 0;
      run_case<T, Tgt>(c, seed++);
    }
  }
}

}  // namespace

TEST_F(CrossEntropyTest, SweepF32Int64) {
  sweep<float, int64_t>(100);
}
TEST_F(CrossEntropyTest, SweepF32Int32) {
  sweep<float, int32_t>(200);
}
TEST_F(CrossEntropyTest, SweepF16Int64) {
  sweep<__half, int64_t>(300);
}
TEST_F(CrossEntropyTest, SweepBf16Int32) {
  sweep<__nv_bfloat16, int32_t>(400);
}
TEST_F(CrossEntropyTest, SweepBf16Int64) {
  sweep<__nv_bfloat16, int64_t>(500);
}

TEST_F(CrossEntropyTest, LargeLogitsAndSmoothing) {
  Case c;
  c.rows = 37, c.vocab = 50257, c.lo = -60, c.hi = 60, c.eps = 0.3;
  for (LossReduction red : {LossReduction::kNone, LossReduction::kMean}) {
    c.reduction = red;
    run_case<float, int64_t>(c, 600);
    run_case<__nv_bfloat16, int64_t>(c, 601);
  }
}

TEST_F(CrossEntropyTest, TargetOutsideTheClassesMakesTheRowNaN) {
  for (int64_t vocab : {7, 4096, 151936}) {
    for (LossReduction red : {LossReduction::kNone, LossReduction::kSum, LossReduction::kMean}) {
      Case c;
      c.rows = 5, c.vocab = vocab, c.invalid_row = 2, c.reduction = red, c.ignore_every = 4;
      run_case<float, int32_t>(c, 700);
      run_case<__half, int64_t>(c, 701);
    }
  }
}

TEST_F(CrossEntropyTest, NanAndInfLogits) {
  for (int special = 1; special <= 5; ++special) {
    for (int64_t vocab : {1, 33, 5000, 200003}) {
      for (double eps : {0.0, 0.2}) {
        Case c;
        c.rows = 3, c.vocab = vocab, c.special = special, c.eps = eps;
        run_case<float, int64_t>(c, 800 + special);
        run_case<__nv_bfloat16, int32_t>(c, 810 + special);
        c.reduction = LossReduction::kSum;
        run_case<float, int64_t>(c, 820 + special);
      }
    }
  }
}

TEST_F(CrossEntropyTest, ZeroRows) {
  for (LossReduction red : {LossReduction::kNone, LossReduction::kSum, LossReduction::kMean}) {
    Case c;
    c.rows = 0, c.vocab = 10, c.reduction = red;
    run_case<float, int64_t>(c, 900);
  }
  // sum of nothing 0, mean of nothing NaN
  DeviceBuffer<float> loss(1);
  loss.poison();
  ASSERT_EQ(
      kk::cross_entropy(static_cast<const float*>(nullptr), static_cast<const int64_t*>(nullptr), 0,
                        10, kIgnore, 0.f, LossReduction::kSum, loss.get(), nullptr, nullptr, 0),
      cudaSuccess);
  EXPECT_EQ(loss.download()[0], 0.f);
  ASSERT_EQ(
      kk::cross_entropy(static_cast<const float*>(nullptr), static_cast<const int64_t*>(nullptr), 0,
                        10, kIgnore, 0.f, LossReduction::kMean, loss.get(), nullptr, nullptr, 0),
      cudaSuccess);
  EXPECT_TRUE(std::isnan(loss.download()[0]));
}

TEST_F(CrossEntropyTest, EveryRowIgnored) {
  for (LossReduction red : {LossReduction::kSum, LossReduction::kMean}) {
    Case c;
    c.rows = 6, c.vocab = 300, c.ignore_every = 1, c.reduction = red;  // mean: NaN (0 / 0)
    run_case<float, int64_t>(c, 950);
  }
}

TEST_F(CrossEntropyTest, Deterministic) {
  // few wide rows (split, chunks combined in the finish) and many rows (summed in the finish)
  for (auto shape : {std::pair<int64_t, int64_t>{3, 200003}, {4099, 3001}}) {
    const int64_t rows = shape.first, vocab = shape.second;
    const auto h = kktest::random_vector<float>(rows * vocab, 960, -8, 8);
    const auto t = kktest::random_vector<int64_t>(rows, 961, 0, double(vocab));
    const DeviceBuffer<float> x = kktest::to_device(h);
    const DeviceBuffer<int64_t> tg = kktest::to_device(t);
    const size_t wsb = kk::cross_entropy_workspace_bytes(rows, vocab);
    DeviceBuffer<float4> ws(wsb / 16 + 1);
    DeviceBuffer<float> loss(1), lse(rows);
    uint32_t first = 0;
    for (int k = 0; k < 4; ++k) {
      ws.poison();
      ASSERT_EQ(kk::cross_entropy(x.get(), tg.get(), rows, vocab, kIgnore, 0.1f,
                                  LossReduction::kMean, loss.get(), lse.get(), ws.get(), wsb),
                cudaSuccess);
      const float v = loss.download()[0];
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if (k == 0) first = bits;
      EXPECT_EQ(bits, first) << rows << "x" << vocab << " run " << k;
    }
  }
}

// The finish in a second kernel (kSecondKernel: the plan where cooperative grids do not launch)
// against the grid barrier's (kGrid), on split rows and on summed rows.
TEST_F(CrossEntropyTest, SecondKernelFinishAgrees) {
  kk::DeviceInfo d;
  CUDA_CHECK(kk::current_device_info(&d));
  kk::DeviceInfo no_coop = d;
  no_coop.cooperative_launch = false;
  // 130 x 4096 (2 chunks a row: groups of 2) takes two passes of the second kernel's 256
  // threads; 6 x 50000 (44 chunks: a warp a row); 1 x 300000 (264 chunks: 4 warps a row, met
  // through shared memory)
  for (auto shape : {std::pair<int64_t, int64_t>{3, 200003},
                     {777, 3001},
                     {130, 4096},
                     {6, 50000},
                     {1, 300000}}) {
    for (LossReduction red : {LossReduction::kNone, LossReduction::kMean}) {
      const int64_t rows = shape.first, vocab = shape.second;
      const auto h = kktest::random_vector<__nv_bfloat16>(rows * vocab, 980, -8, 8);
      const auto t = kktest::random_vector<int32_t>(rows, 981, 0, double(vocab));
      const DeviceBuffer<__nv_bfloat16> x = kktest::to_device(h);
      const DeviceBuffer<int32_t> tg = kktest::to_device(t);
      const size_t wsb = kk::cross_entropy_workspace_bytes(rows, vocab);
      DeviceBuffer<float4> ws(wsb / 16 + 1);
      DeviceBuffer<float> loss_a(rows), loss_b(rows), lse_a(rows), lse_b(rows);
      loss_a.poison(), loss_b.poison(), lse_a.poison(), lse_b.poison();
      ASSERT_EQ(kk::cross_entropy(x.get(), tg.get(), rows, vocab, kIgnore, 0.f, red, loss_a.get(),
                                  lse_a.get(), ws.get(), wsb),
                cudaSuccess);
      const int64_t fewest = kk::cross_entropy_fewest_bytes(rows, vocab, 2, 4, red, true);
      const kk::CrossEntropyPlan p = kk::plan_cross_entropy(rows, vocab, 2, red, fewest, no_coop);
      ASSERT_NE(p.combine, kk::BlockCombine::kGrid);
      const kk::detail::CrossEntropyArgs<__nv_bfloat16, int32_t> a{
          x.get(), vocab, tg.get(),     rows,        vocab,   kIgnore,
          0.f,     red,   loss_b.get(), lse_b.get(), ws.get()};
      ASSERT_EQ(kk::launch_cross_entropy(p, a, nullptr), cudaSuccess);
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto la = loss_a.download(), lb = loss_b.download();
      const auto sa = lse_a.download(), sb = lse_b.download();
      const int64_t n = red == LossReduction::kNone ? rows : 1;
      for (int64_t r = 0; r < n; ++r)
        ASSERT_TRUE(close(lb[r], la[r], 1e-5)) << rows << "x" << vocab << " row " << r;
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_TRUE(close(sb[r], sa[r], 1e-6)) << rows << "x" << vocab << " lse row " << r;
    }
  }
}

TEST_F(CrossEntropyTest, BadArgumentsWriteNothing) {
  const int64_t rows = 4, vocab = 100;
  const DeviceBuffer<float> x = kktest::to_device(kktest::random_vector<float>(rows * vocab, 970));
  const DeviceBuffer<int64_t> t = kktest::to_device(std::vector<int64_t>(rows, 1));
  const size_t wsb = kk::cross_entropy_workspace_bytes(rows, vocab);
  DeviceBuffer<float4> ws(wsb / 16 + 1);
  DeviceBuffer<float> loss(rows), lse(rows), dloss(rows);
  DeviceBuffer<float> dx(rows * vocab);
  loss.poison(), lse.poison(), dx.poison();
  const auto expect_untouched = [&](const char* what) {
    for (float v : loss.download())
      EXPECT_TRUE(std::isnan(v)) << what;
    for (float v : lse.download())
      EXPECT_TRUE(std::isnan(v)) << what;
    for (float v : dx.download())
      EXPECT_TRUE(std::isnan(v)) << what;
  };
  const auto none = LossReduction::kNone;
  EXPECT_EQ(kk::cross_entropy(x.get(), t.get(), rows, 0, kIgnore, 0.f, none, loss.get(), lse.get(),
                              ws.get(), wsb),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::cross_entropy(x.get(), vocab - 1, t.get(), rows, vocab, kIgnore, 0.f, none,
                              loss.get(), lse.get(), ws.get(), wsb),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::cross_entropy(x.get(), t.get(), rows, vocab, kIgnore, 1.5f, none, loss.get(),
                              lse.get(), ws.get(), wsb),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::cross_entropy(x.get(), t.get(), rows, vocab, kIgnore, 0.f, none, loss.get(),
                              lse.get(), ws.get(), wsb - 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::cross_entropy(x.get(), t.get(), rows, vocab, kIgnore, 0.f,
                              static_cast<LossReduction>(3), loss.get(), lse.get(), ws.get(), wsb),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::cross_entropy(x.get(), t.get(), rows, vocab, kIgnore, 0.f, none, loss.get(),
                              loss.get(), ws.get(), wsb),
            cudaErrorInvalidValue);  // lse over loss
  EXPECT_EQ(kk::cross_entropy_backward(x.get(), t.get(), lse.get(), dloss.get(), rows, vocab,
                                       kIgnore, NAN, none, dx.get()),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::cross_entropy_backward(x.get(), t.get(), static_cast<const float*>(nullptr),
                                       dloss.get(), rows, vocab, kIgnore, 0.f, none, dx.get()),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::cross_entropy_backward(x.get(), vocab, t.get(), lse.get(), dloss.get(), rows, vocab,
                                       kIgnore, 0.f, none, const_cast<float*>(x.get()) + 1, vocab),
            cudaErrorInvalidValue);  // dlogits partly over the logits
  CUDA_CHECK(cudaDeviceSynchronize());
  expect_untouched("after bad calls");
}

TEST_F(CrossEntropyTest, KK_LARGE(PastTwoToThe31Elements)) {
  using T = __nv_bfloat16;
  const int64_t vocab = 128256, rows = (int64_t{1} << 31) / vocab + 3, n = rows * vocab;
  DeviceBuffer<T> x(n);
  const int64_t k = 2;  // rows checked at each end
  const auto head = kktest::random_vector<T>(k * vocab, 990, -6, 6);
  const auto tail = kktest::random_vector<T>(k * vocab, 991, -6, 6);
  CUDA_CHECK(cudaMemset(x.get(), 0, n * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(x.get(), head.data(), head.size() * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(x.get() + n - k * vocab, tail.data(), tail.size() * sizeof(T),
                        cudaMemcpyHostToDevice));
  auto t = kktest::random_vector<int64_t>(rows, 992, 0, double(vocab));
  const DeviceBuffer<int64_t> tg = kktest::to_device(t);
  DeviceBuffer<float> loss(rows), lse(rows), dloss(rows);
  const size_t wsb = kk::cross_entropy_workspace_bytes(rows, vocab);
  DeviceBuffer<float4> ws(wsb / 16 + 1);
  loss.poison(), lse.poison();
  ASSERT_EQ(kk::cross_entropy(x.get(), tg.get(), rows, vocab, kIgnore, 0.f, LossReduction::kNone,
                              loss.get(), lse.get(), ws.get(), wsb),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = loss.download();
  const auto got_lse = lse.download();
  const double zero_lse = std::log(double(vocab));  // a row of zeros
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = r < k ? head.data() + r * vocab
                         : (r >= rows - k ? tail.data() + (r - (rows - k)) * vocab : nullptr);
    if (row == nullptr) {
      ASSERT_NEAR(got_lse[r], zero_lse, 1e-4 * zero_lse) << "row " << r;
      ASSERT_NEAR(got[r], zero_lse, 1e-4 * zero_lse) << "row " << r;
      continue;
    }
    const RowRef ref = row_ref(row, vocab, t[r], 0.0);
    ASSERT_TRUE(close(got[r], ref.loss, 1e-4)) << "row " << r << " " << got[r] << " " << ref.loss;
    ASSERT_TRUE(close(got_lse[r], ref.lse, 1e-4)) << "row " << r;
  }
  // backward in place, mean: the last rows' gradients
  const DeviceBuffer<float> one = kktest::to_device(std::vector<float>{2.f});
  ASSERT_EQ(kk::cross_entropy_backward(x.get(), tg.get(), lse.get(), one.get(), rows, vocab,
                                       kIgnore, 0.f, LossReduction::kMean, x.get()),
            cudaSuccess);
  std::vector<T> last(vocab);
  CUDA_CHECK(
      cudaMemcpy(last.data(), x.get() + n - vocab, vocab * sizeof(T), cudaMemcpyDeviceToHost));
  const double lse_f = got_lse[rows - 1];
  for (int64_t j = 0; j < vocab; ++j) {
    const double xv = kktest::to_double(tail[(k - 1) * vocab + j]);
    const double want =
        2.0 / double(rows) * (std::exp(xv - lse_f) - (j == t[rows - 1] ? 1.0 : 0.0));
    ASSERT_NEAR(kktest::to_double(last[j]), want, 1e-2 * std::fabs(want) + 1e-9) << "col " << j;
  }
}
