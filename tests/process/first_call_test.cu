// SPDX-License-Identifier: Apache-2.0
// What happens on an op's first call in a process (issue 16), each case in a fresh process:
// the test re-runs its own executable with KK_FIRST_CALL_CASE=<case>, so every kernelkit
// call below is the first of its process (no device facts, kernel attributes or occupancy
// cached yet).
//  - capture/<op>: the op's first call is made inside a CUDA graph capture in global mode;
//    the capture must succeed and the graph must replay to the right result (twice).
//  - reset: sgemm and softmax work, cudaDeviceReset, and work again (the caches keyed by
//    device and kernel must not leave a stale setup behind).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <sys/wait.h>
#include <type_traits>
#include <unistd.h>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/kernelkit.cuh"

namespace kk = kernelkit;

namespace {

// ---- child side ---------------------------------------------------------------------------

#define CHILD_CHECK(expr)                                                             \
  do {                                                                                \
    const cudaError_t kk_e_ = (expr);                                                 \
    if (kk_e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s: %s -> %s\n", name, #expr, cudaGetErrorString(kk_e_)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

// Enqueues the op on the stream; returns its status.
using Enqueue = std::function<cudaError_t(cudaStream_t)>;
// Downloads the result and compares it with the reference; true when right.
using Check = std::function<bool()>;

// The op's first call inside a global-mode capture, then two replays, each checked.
int capture_case(const char* name, const Enqueue& enqueue, const Check& check,
                 const std::function<void()>& poison) {
  cudaStream_t s = nullptr;
  CHILD_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHILD_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  const cudaError_t op_status = enqueue(s);
  cudaGraph_t graph = nullptr;
  const cudaError_t end_status = cudaStreamEndCapture(s, &graph);
  CHILD_CHECK(op_status);
  CHILD_CHECK(end_status);
  cudaGraphExec_t exec = nullptr;
  CHILD_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    poison();
    CHILD_CHECK(cudaGraphLaunch(exec, s));
    CHILD_CHECK(cudaStreamSynchronize(s));
    if (!check()) {
      std::fprintf(stderr, "%s: replay %d gave a wrong result\n", name, replay);
      return 1;
    }
  }
  CHILD_CHECK(cudaGraphExecDestroy(exec));
  CHILD_CHECK(cudaGraphDestroy(graph));
  CHILD_CHECK(cudaStreamDestroy(s));
  return 0;
}

// The largest |got - ref| / |ref|, counting as exact an error within one step of T's smallest
// subnormal (a correct f16 softmax of 4096 columns writes values below f16's normal range).
template <typename T>
double max_rel_err(const std::vector<T>& got, const std::vector<double>& ref) {
  double step = std::numeric_limits<float>::denorm_min();
  if constexpr (std::is_same_v<T, __half>) step = std::ldexp(1.0, -24);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) step = std::ldexp(1.0, -133);
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = kernelkit::convert<double>(got[i]);
    if (std::isnan(g)) return INFINITY;
    const double err = std::max(std::fabs(g - ref[i]) - step, 0.0);
    worst = std::max(worst, err / std::max(std::fabs(ref[i]), 1e-30));
  }
  return worst;
}

template <typename T>
int softmax_case(const char* name, int64_t rows, int64_t cols, bool log, double tol) {
  const auto h = kktest::random_vector<T>(rows * cols, 7, -4, 4);
  auto in = kktest::to_device(h);
  kktest::DeviceBuffer<T> out(h.size());
  std::vector<double> ref(h.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, kktest::to_double(h[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c)
      sum += std::exp(kktest::to_double(h[r * cols + c]) - m);
    for (int64_t c = 0; c < cols; ++c) {
      const double x = kktest::to_double(h[r * cols + c]);
      ref[r * cols + c] = log ? x - m - std::log(sum) : std::exp(x - m) / sum;
    }
  }
  return capture_case(
      name,
      [&](cudaStream_t s) {
        return log ? kk::log_softmax(in.get(), out.get(), rows, cols, s)
                   : kk::softmax(in.get(), out.get(), rows, cols, s);
      },
      [&] {
        const auto got = out.download();
        if (log) {  // absolute error for log_softmax (values near 0 are exact-ish)
          for (size_t i = 0; i < ref.size(); ++i)
            if (!(std::fabs(kktest::to_double(got[i]) - ref[i]) <= tol * 10)) return false;
          return true;
        }
        return max_rel_err(got, ref) <= tol;
      },
      [&] { out.poison(); });
}

// rms_norm with a float weight (y and rstd checked against float64).
template <typename T>
int rms_norm_case(const char* name, int64_t rows, int64_t cols, double tol) {
  const auto h = kktest::random_vector<T>(rows * cols, 13);
  const auto hw = kktest::random_vector<float>(cols, 14, 0.5, 1.5);
  auto in = kktest::to_device(h);
  auto w = kktest::to_device(hw);
  kktest::DeviceBuffer<T> out(h.size());
  kktest::DeviceBuffer<float> rstd(rows);
  std::vector<double> ref(h.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c)
      ss += kktest::to_double(h[r * cols + c]) * kktest::to_double(h[r * cols + c]);
    const double rs = 1.0 / std::sqrt(ss / double(cols) + 1e-5);
    for (int64_t c = 0; c < cols; ++c)
      ref[r * cols + c] = kktest::to_double(h[r * cols + c]) * rs * hw[c];
  }
  return capture_case(
      name,
      [&](cudaStream_t s) {
        return kk::rms_norm(in.get(), w.get(), out.get(), rstd.get(), rows, cols, 1e-5f, s);
      },
      [&] {
        const auto got = out.download();
        for (size_t i = 0; i < ref.size(); ++i)
          if (!(std::fabs(kktest::to_double(got[i]) - ref[i]) <= tol * (1 + std::fabs(ref[i]))))
            return false;
        return true;
      },
      [&] { out.poison(); });
}

int row_sum_case(const char* name, int64_t rows, int64_t cols) {
  const auto h = kktest::small_int_vector<float>(rows * cols, 11);
  auto in = kktest::to_device(h);
  kktest::DeviceBuffer<float> out(rows);
  std::vector<double> ref(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ref[r] += h[r * cols + c];
  return capture_case(
      name, [&](cudaStream_t s) { return kk::row_sum(in.get(), rows, cols, out.get(), s); },
      [&] { return max_rel_err(out.download(), ref) == 0; }, [&] { out.poison(); });
}

int reduce_case(const char* name, int64_t n) {
  const auto h = kktest::small_int_vector<float>(n, 13);
  auto in = kktest::to_device(h);
  kktest::DeviceBuffer<float> out(1);
  const size_t ws_bytes = kk::reduce_workspace_bytes<float, float>(n);
  kktest::DeviceBuffer<unsigned char> ws(ws_bytes);
  if (ws_bytes) CUDA_CHECK(cudaMemset(ws.get(), 0, ws_bytes));
  double ref = 0;
  for (float x : h)
    ref += x;
  return capture_case(
      name,
      [&](cudaStream_t s) {
        return kk::reduce(in.get(), n, out.get(), kk::ReduceOp::kSum, 0.f, ws.get(), ws_bytes, s);
      },
      [&] { return out.download()[0] == ref; }, [&] { out.poison(); });
}

int add_case(const char* name, int64_t n) {
  const auto a = kktest::random_vector<float>(n, 17), b = kktest::random_vector<float>(n, 19);
  auto da = kktest::to_device(a), db = kktest::to_device(b);
  kktest::DeviceBuffer<float> out(n);
  return capture_case(
      name,
      [&](cudaStream_t s) { return kk::binary(kk::Add{}, n, out.get(), da.get(), db.get(), s); },
      [&] {
        const auto got = out.download();
        for (int64_t i = 0; i < n; ++i)
          if (got[i] != a[i] + b[i]) return false;
        return true;
      },
      [&] { out.poison(); });
}

int transpose_case(const char* name, int64_t rows, int64_t cols) {
  const auto h = kktest::random_vector<float>(rows * cols, 23);
  auto in = kktest::to_device(h);
  kktest::DeviceBuffer<float> out(h.size());
  return capture_case(
      name, [&](cudaStream_t s) { return kk::transpose(in.get(), out.get(), rows, cols, s); },
      [&] {
        const auto got = out.download();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            if (got[c * rows + r] != h[r * cols + c]) return false;
        return true;
      },
      [&] { out.poison(); });
}

int gemv_case(const char* name, kk::BlasOp op, int64_t m, int64_t n) {
  const auto a = kktest::small_int_vector<float>(m * n, 29, -2, 3);
  const int64_t xn = op == kk::BlasOp::N ? n : m, yn = op == kk::BlasOp::N ? m : n;
  const auto x = kktest::small_int_vector<float>(xn, 31, -2, 3);
  auto da = kktest::to_device(a), dx = kktest::to_device(x);
  kktest::DeviceBuffer<float> y(yn);
  std::vector<double> ref(yn, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (op == kk::BlasOp::N)
        ref[i] += double(a[i * n + j]) * x[j];
      else
        ref[j] += double(a[i * n + j]) * x[i];
    }
  return capture_case(
      name,
      [&](cudaStream_t s) {
        return kk::gemv(op, m, n, 1.f, da.get(), n, dx.get(), 0.f, y.get(), s);
      },
      [&] { return max_rel_err(y.download(), ref) == 0; }, [&] { y.poison(); });
}

// C (m x n) = A (m x k) B (k x n), small integers: exact in f32.
int sgemm_once(const char* name, int64_t m, int64_t n, int64_t k, cudaStream_t s) {
  const auto a = kktest::small_int_vector<float>(m * k, 37, -2, 3);
  const auto b = kktest::small_int_vector<float>(k * n, 41, -2, 3);
  auto da = kktest::to_device(a), db = kktest::to_device(b);
  kktest::DeviceBuffer<float> c(m * n);
  c.poison();
  CHILD_CHECK(kk::sgemm(kk::BlasOp::N, kk::BlasOp::N, m, n, k, 1.f, da.get(), k, db.get(), n, 0.f,
                        c.get(), n, s));
  CHILD_CHECK(cudaStreamSynchronize(s));
  const auto got = c.download();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t q = 0; q < k; ++q)
        ref += double(a[i * k + q]) * b[q * n + j];
      if (got[i * n + j] != ref) {
        std::fprintf(stderr, "%s: C[%lld][%lld] = %g, want %g\n", name, (long long)i, (long long)j,
                     got[i * n + j], ref);
        return 1;
      }
    }
  return 0;
}

int sgemm_capture_case(const char* name) {
  constexpr int64_t m = 256, n = 256, k = 256;
  const auto a = kktest::small_int_vector<float>(m * k, 43, -2, 3);
  const auto b = kktest::small_int_vector<float>(k * n, 47, -2, 3);
  auto da = kktest::to_device(a), db = kktest::to_device(b);
  kktest::DeviceBuffer<float> c(m * n);
  std::vector<double> ref(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < n; ++j)
        ref[i * n + j] += double(a[i * k + q]) * b[q * n + j];
  return capture_case(
      name,
      [&](cudaStream_t s) {
        return kk::sgemm(kk::BlasOp::N, kk::BlasOp::N, m, n, k, 1.f, da.get(), k, db.get(), n, 0.f,
                         c.get(), n, s);
      },
      [&] { return max_rel_err(c.download(), ref) == 0; }, [&] { c.poison(); });
}

// sgemm 256^3 and a 2 x 16384 f32 softmax, cudaDeviceReset, then both again.
int reset_case(const char* name) {
  for (int round = 0; round < 2; ++round) {
    cudaStream_t s = nullptr;
    CHILD_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (sgemm_once(name, 256, 256, 256, s) != 0) return 1;
    CHILD_CHECK(cudaStreamDestroy(s));
    if (softmax_case<float>(name, 2, 16384, false, 1e-5) != 0) return 1;
    if (round == 0) CHILD_CHECK(cudaDeviceReset());
  }
  return 0;
}

struct Case {
  const char* name;
  std::function<int(const char*)> run;
};

std::vector<Case> cases() {
  return {
      {"capture/softmax_f32_64x1000",
       [](const char* n) { return softmax_case<float>(n, 64, 1000, false, 1e-5); }},
      {"capture/softmax_f16_64x4096",
       [](const char* n) { return softmax_case<__half>(n, 64, 4096, false, 2e-3); }},
      {"capture/softmax_f32_2x300001",
       [](const char* n) { return softmax_case<float>(n, 2, 300001, false, 1e-5); }},
      {"capture/log_softmax_bf16_100x50257",
       [](const char* n) { return softmax_case<__nv_bfloat16>(n, 100, 50257, true, 2e-2); }},
      {"capture/rms_norm_bf16_100x4096",
       [](const char* n) { return rms_norm_case<__nv_bfloat16>(n, 100, 4096, 1e-2); }},
      {"capture/rms_norm_f32_3x20001",
       [](const char* n) { return rms_norm_case<float>(n, 3, 20001, 1e-5); }},
      {"capture/row_sum_1000x333", [](const char* n) { return row_sum_case(n, 1000, 333); }},
      {"capture/row_sum_1x4194304", [](const char* n) { return row_sum_case(n, 1, 1 << 22); }},
      {"capture/reduce_sum_1048576", [](const char* n) { return reduce_case(n, 1 << 20); }},
      {"capture/add_1000003", [](const char* n) { return add_case(n, 1000003); }},
      {"capture/transpose_300x1001", [](const char* n) { return transpose_case(n, 300, 1001); }},
      {"capture/transpose_3x100003", [](const char* n) { return transpose_case(n, 3, 100003); }},
      {"capture/gemv_n_3x1000001",
       [](const char* n) { return gemv_case(n, kk::BlasOp::N, 3, 1000001); }},
      {"capture/gemv_t_65536x64",
       [](const char* n) { return gemv_case(n, kk::BlasOp::T, 65536, 64); }},
      {"capture/sgemm_256", [](const char* n) { return sgemm_capture_case(n); }},
      {"reset", [](const char* n) { return reset_case(n); }},
  };
}

// Child mode: run before main() when the parent asked for one case, then exit.
const int g_child = [] {
  const char* which = std::getenv("KK_FIRST_CALL_CASE");
  if (which == nullptr) return 0;
  for (const auto& c : cases()) {
    if (std::string(c.name) == which) std::exit(c.run(c.name) == 0 ? 0 : 1);
  }
  std::fprintf(stderr, "unknown case %s\n", which);
  std::exit(2);
}();

// ---- parent side --------------------------------------------------------------------------

class FirstCall : public kktest::GpuTest {};

TEST_F(FirstCall, EveryOpCapturesAndReplaysOnItsFirstCallAndSurvivesADeviceReset) {
  char self[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(len, 0);
  for (const auto& c : cases()) {
    const std::string cmd = std::string("KK_FIRST_CALL_CASE='") + c.name + "' '" + self + "'";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << c.name << ": the fresh process failed (status " << status << "); its stderr says why";
  }
}

}  // namespace
