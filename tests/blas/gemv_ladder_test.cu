// SPDX-License-Identifier: Apache-2.0
// Every gemv ladder step (BlasOp::N) and the library under the ladder signature, against a
// float64 reference with the library's cases: shape sweep, lda > n, misaligned pointers
// (steps that need alignment must refuse them), alpha/beta values, alpha == 0 reading
// neither A nor x, NaN in y with beta == 0, exact small-integer sums and the argument
// checks every step shares with the library (gemv_args_ok).
#include <cfloat>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/test_util.cuh"
#include "ladder/gemv/registry.cuh"

namespace {

namespace lg = kernelkit::ladder::gemv;
using kktest::DeviceBuffer;
using kktest::Tolerance;

struct LadderCase {
  int64_t m, n, lda;
  float alpha, beta;
  int a_offset = 0, x_offset = 0;
  bool small_ints = false;
};

void run_step(const lg::Step& step, const LadderCase& c, uint64_t seed) {
  char label[200];
  std::snprintf(label, sizeof label,
                "%s m=%lld n=%lld lda=%lld alpha=%g beta=%g off=%d,%d seed=%llu", step.name,
                (long long)c.m, (long long)c.n, (long long)c.lda, c.alpha, c.beta, c.a_offset,
                c.x_offset, (unsigned long long)seed);
  const int64_t a_elems = c.m == 0 ? 0 : (c.m - 1) * c.lda + c.n;
  const double lo = c.small_ints ? -4 : -1, hi = c.small_ints ? 5 : 1;
  auto hA = kktest::random_vector<float>(a_elems + c.a_offset, seed, lo, hi);
  auto hx = kktest::random_vector<float>(c.n + c.x_offset, seed + 1, lo, hi);
  auto hy = kktest::random_vector<float>(c.m, seed + 2, lo, hi);
  if (c.small_ints) {
    for (auto* v : {&hA, &hx, &hy})
      for (auto& e : *v)
        e = std::floor(e);
  }
  auto dA = kktest::to_device(hA);
  auto dx = kktest::to_device(hx);
  auto dy = kktest::to_device(hy);
  if (c.beta == 0.f) dy.poison();
  const float* A = dA.get() + c.a_offset;
  const float* x = dx.get() + c.x_offset;
  if (!step.supports(A, c.lda, x)) {
    EXPECT_EQ(step.fn(c.m, c.n, c.alpha, A, c.lda, x, c.beta, dy.get(), nullptr),
              cudaErrorInvalidValue)
        << label;
    return;
  }
  std::vector<double> ref(c.m);
  for (int64_t i = 0; i < c.m; ++i) {
    double s = 0;
    for (int64_t j = 0; j < c.n; ++j)
      s += double(hA[c.a_offset + i * c.lda + j]) * hx[c.x_offset + j];
    ref[i] = double(c.alpha) * s + (c.beta == 0.f ? 0.0 : double(c.beta) * hy[i]);
  }
  ASSERT_EQ(step.fn(c.m, c.n, c.alpha, A, c.lda, x, c.beta, dy.get(), nullptr), cudaSuccess)
      << label;
  CUDA_CHECK(cudaDeviceSynchronize());
  const Tolerance tol = c.small_ints
                            ? Tolerance::Exact()
                            : Tolerance{2.0 * (c.n + 2) * FLT_EPSILON * std::fabs(c.alpha) + 1e-30,
                                        4 * FLT_EPSILON, 0};
  EXPECT_TRUE(kktest::check_near(dy.download(), ref, tol, label));
}

std::vector<lg::Step> all_steps() {
  std::vector<lg::Step> steps(std::begin(lg::kSteps), std::end(lg::kSteps));
  steps.push_back(lg::kLibrary);
  return steps;
}

class GemvLadder : public kktest::GpuTest {};

TEST_F(GemvLadder, ShapeSweep) {
  const int64_t dims[] = {1, 3, 31, 32, 33, 1024, 4097, 65536};
  for (const auto& step : all_steps()) {
    uint64_t seed = 500;
    for (int64_t m : dims)
      for (int64_t n : dims) {
        if (m * n > (int64_t{1} << 24)) continue;
        // sanitizer: at most 2^20 floats (a step's kernel is the same at every shape; every
        // dim still meets 1 and 3, and all but 65536 meet 1 .. 33)
        if (kktest::sanitizer_run() && m * n > (int64_t{1} << 20)) continue;
        run_step(step, {m, n, n, -0.5f, 1.f}, seed++);
      }
  }
}

TEST_F(GemvLadder, LdaMisalignmentAlphaBeta) {
  const int64_t shapes[][2] = {{33, 1024}, {1024, 33}, {7, 4097}, {3, 65536}, {32, 32}};
  for (const auto& step : all_steps()) {
    uint64_t seed = 600;
    for (const auto& s : shapes) {
      const int64_t m = s[0], n = s[1];
      run_step(step, {m, n, n + 3, 1.f, -0.5f}, seed++);
      run_step(step, {m, n, n + 4, 1.f, -0.5f}, seed++);
      run_step(step, {m, n, n, 1.f, -0.5f, 1, 0}, seed++);
      run_step(step, {m, n, n, 1.f, -0.5f, 0, 1}, seed++);
      int pair = 0;
      for (float alpha : {0.f, 1.f, -0.5f})
        for (float beta : {0.f, 1.f, -0.5f}) {
          // sanitizer: 3 of the 9 pairs (each alpha and each beta once)
          if (kktest::sanitize_keep(pair++, 4)) run_step(step, {m, n, n, alpha, beta}, seed);
          ++seed;
        }
    }
  }
}

TEST_F(GemvLadder, SmallIntegersAreExact) {
  for (const auto& step : all_steps()) {
    uint64_t seed = 700;
    for (const auto& s : {std::pair<int64_t, int64_t>{1024, 4097}, {33, 65536}, {4097, 33}}) {
      LadderCase c{s.first, s.second, s.second, 1.f, -0.5f};
      c.small_ints = true;
      run_step(step, c, seed++);
      c.beta = 0.f;
      run_step(step, c, seed++);
    }
  }
}

TEST_F(GemvLadder, BadArgumentsAreRejected) {
  DeviceBuffer<float> dA(64), dx(8), dy(8);
  for (const auto& step : all_steps()) {
    EXPECT_EQ(step.fn(-1, 4, 1.f, dA.get(), 4, dx.get(), 0.f, dy.get(), nullptr),
              cudaErrorInvalidValue)
        << step.name;
    EXPECT_EQ(step.fn(4, 8, 1.f, dA.get(), 7, dx.get(), 0.f, dy.get(), nullptr),
              cudaErrorInvalidValue)
        << step.name;
    EXPECT_EQ(step.fn(4, 4, 1.f, dA.get(), 4, dx.get(), 0.f, nullptr, nullptr),
              cudaErrorInvalidValue)
        << step.name;
    EXPECT_EQ(step.fn(4, 4, 1.f, nullptr, 4, dx.get(), 0.f, dy.get(), nullptr),
              cudaErrorInvalidValue)
        << step.name;
    EXPECT_EQ(step.fn(0, 4, 1.f, nullptr, 4, nullptr, 0.f, nullptr, nullptr), cudaSuccess)
        << step.name;
    // the library's checks (gemv_args_ok): pointers aligned to float, y apart from A and x
    const auto* odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(dA.get()) + 2);
    EXPECT_EQ(step.fn(4, 4, 1.f, odd, 4, dx.get(), 0.f, dy.get(), nullptr), cudaErrorInvalidValue)
        << step.name;
    EXPECT_EQ(step.fn(4, 4, 1.f, dA.get(), 4, dx.get(), 0.f, dA.get() + 3, nullptr),
              cudaErrorInvalidValue)
        << step.name;
    EXPECT_EQ(step.fn(4, 4, 1.f, dA.get(), 4, dx.get(), 0.f, dx.get(), nullptr),
              cudaErrorInvalidValue)
        << step.name;
  }
}

// alpha == 0 reads neither A nor x: null pointers are accepted, NaNs in them ignored.
TEST_F(GemvLadder, AlphaZeroReadsNeitherAnorX) {
  const auto hy = kktest::random_vector<float>(8, 3);
  std::vector<double> ref(8);
  for (int k = 0; k < 8; ++k)
    ref[k] = -0.5 * hy[k];
  DeviceBuffer<float> dA(64), dx(8);
  dA.poison();
  dx.poison();
  for (const auto& step : all_steps()) {
    auto dy = kktest::to_device(hy);
    ASSERT_EQ(step.fn(8, 8, 0.f, nullptr, 8, nullptr, -0.5f, dy.get(), nullptr), cudaSuccess)
        << step.name;
    EXPECT_TRUE(kktest::check_near(dy.download(), ref, Tolerance::Exact(), step.name));
    dy.upload(hy);
    if (step.supports(dA.get(), 8, dx.get())) {
      ASSERT_EQ(step.fn(8, 8, 0.f, dA.get(), 8, dx.get(), -0.5f, dy.get(), nullptr), cudaSuccess)
          << step.name;
      EXPECT_TRUE(kktest::check_near(dy.download(), ref, Tolerance::Exact(), step.name));
    }
  }
}

}  // namespace
