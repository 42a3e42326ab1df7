// SPDX-License-Identifier: Apache-2.0
// Shared test machinery: the GPU fixture, an aborting CUDA check, device buffers, random
// inputs, poisoning, and the one reference-check helper every test compares through.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernelkit/core/types.cuh"

// Aborts the test program on a CUDA error: tests and benchmarks may, the library never does.
#define CUDA_CHECK(expr)                                                 \
  do {                                                                   \
    const cudaError_t kk_e_ = (expr);                                    \
    if (kk_e_ != cudaSuccess) {                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(kk_e_));                           \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

namespace kktest {

// True when a CUDA device can be used here.
inline bool have_gpu() {
  static const bool have = [] {
    int n = 0;
    const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    cudaGetLastError();  // clear the no-device error
    return ok;
  }();
  return have;
}

// Fixture for every test that launches kernels: skipped, with the reason, without a GPU.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device visible (GPU tests run on the GPU machine)";
  }
  void TearDown() override {
    if (have_gpu()) {
      CUDA_CHECK(cudaDeviceSynchronize());
      CUDA_CHECK(cudaGetLastError());
    }
  }
};

// Tests that also run past 2^31 elements: name them with this prefix so sanitizer runs can
// leave them out (--gtest_filter=-*Large*).
#define KK_LARGE(name) Large_##name

// True in scripts/gpu-check's compute-sanitizer runs (KK_SANITIZE=1 in the environment).
// Racecheck runs a shared-memory-heavy kernel hundreds of times slower than the GPU, so a
// sweep that sends the same kernels through many cases thins itself there with
// sanitize_keep(); the plain test run always checks every case.
inline bool sanitizer_run() {
  static const bool on = [] {
    const char* v = std::getenv("KK_SANITIZE");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

// Whether case `index` of a sweep runs: every case normally, every `stride`-th one (the
// first included) under the sanitizer. Callers pick a stride that still sends every kernel
// path through at least one case (say which in a comment).
inline bool sanitize_keep(int64_t index, int64_t stride) {
  return !sanitizer_run() || index % stride == 0;
}

// Owning device buffer.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) {
    if (n > 0) CUDA_CHECK(cudaMalloc(&p_, n * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

  void upload(const std::vector<T>& h) {
    CUDA_CHECK(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download(size_t count = SIZE_MAX) const {
    std::vector<T> h(count == SIZE_MAX ? n_ : count);
    if (!h.empty())
      CUDA_CHECK(cudaMemcpy(h.data(), p_, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  // Fills every byte with 0xFF: NaN for floating types, -1 for integers.
  // 0xFF bytes (NaN for floats), in place before the next call on any stream (cudaMemset
  // runs on the legacy stream, which work on a non-blocking stream does not wait for).
  void poison() {
    if (!n_) return;
    CUDA_CHECK(cudaMemset(p_, 0xFF, n_ * sizeof(T)));
    CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& h) {
  DeviceBuffer<T> d(h.size());
  if (!h.empty()) d.upload(h);
  return d;
}

// Random values in [lo, hi) converted to T (integers: uniform integers in [lo, hi)).
template <typename T>
std::vector<T> random_vector(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::vector<T> v(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo),
                                                static_cast<int64_t>(hi) - 1);
    for (auto& x : v)
      x = static_cast<T>(dist(gen));
  } else {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& x : v)
      x = kernelkit::convert<T>(dist(gen));
  }
  return v;
}

// Random integers in [lo, hi) stored as T: sums of them are exact in every type and every
// summation order (while they stay within the type's integer range), so a missed or
// doubled element shows in an exact comparison.
template <typename T>
std::vector<T> small_int_vector(size_t n, uint64_t seed, int lo = -8, int hi = 8) {
  const auto ints = random_vector<int32_t>(n, seed, lo, hi);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = kernelkit::convert<T>(ints[i]);
  return v;
}

template <typename T>
double to_double(T x) {
  return kernelkit::convert<double>(x);
}

// acc op x in float64: the reference's step of a sum, max or min (NaN wins max and min).
inline double reduce_step(kernelkit::ReduceOp op, double acc, double x) {
  if (op == kernelkit::ReduceOp::kSum) return acc + x;
  if (std::isnan(acc) || std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  return op == kernelkit::ReduceOp::kMax ? std::max(acc, x) : std::min(acc, x);
}

// Type names (f32, bf16, ...): the library's one table.
using kernelkit::type_name;

// Unit in the last place of T at the magnitude of x (T a floating type).
template <typename T>
double ulp_of(double x) {
  int mant_bits = 0, min_exp = 0;
  if constexpr (std::is_same_v<T, __half>) {
    mant_bits = 10, min_exp = -14;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    mant_bits = 7, min_exp = -126;
  } else if constexpr (std::is_same_v<T, float>) {
    mant_bits = 23, min_exp = -126;
  } else {
    mant_bits = 52, min_exp = -1022;
  }
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| in [2^(e-1), 2^e)
  const int exp = std::max(e - 1, min_exp);
  return std::ldexp(1.0, exp - mant_bits);
}

// A tolerance: |got - ref| <= abs + rel * |ref| + ulps * ulp_T(ref). Exact() for integer
// results and small-integer inputs.
struct Tolerance {
  double abs = 0, rel = 0, ulps = 0;
  static Tolerance Exact() { return {}; }
  static Tolerance Rel(double r, double a = 0) { return {a, r, 0}; }
  static Tolerance Ulps(double u) { return {0, 0, u}; }
};

// One element against its float64 reference: NaN must meet NaN, infinities must match in
// sign, everything else must be within tol (check_near's rule, for tests that walk their own
// layout).
template <typename T>
bool within(double g, double r, const Tolerance& tol) {
  if (std::isnan(r) || std::isnan(g)) return std::isnan(r) && std::isnan(g);
  if (std::isinf(r) || std::isinf(g)) return g == r;
  double allowed = tol.abs + tol.rel * std::fabs(r);
  if constexpr (!std::is_integral_v<T>) {
    if (tol.ulps > 0) allowed += tol.ulps * ulp_of<T>(r);
  }
  return std::fabs(g - r) <= allowed;
}

// The reference check: every element of got against the float64 reference. NaN must meet
// NaN, infinities must match in sign, everything else must be within tol. Reports the
// count of mismatches and the first few, with the label (seed, shape) that reproduces them.
template <typename T>
::testing::AssertionResult check_near(const std::vector<T>& got, const std::vector<double>& ref,
                                      Tolerance tol, const std::string& label = "") {
  if (got.size() != ref.size()) {
    return ::testing::AssertionFailure()
           << label << ": size " << got.size() << " vs reference " << ref.size();
  }
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = to_double(got[i]), r = ref[i];
    if (!within<T>(g, r, tol)) {
      if (bad < 5) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "\n  [%zu] got %.17g, want %.17g", i, g, r);
        first += buf;
      }
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << label << ": " << bad << " of " << got.size() << " elements off" << first;
}

// True when the two byte ranges are identical (determinism and "nothing written" checks).
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace kktest
