// kernelkit::reduce / sum / max / min against float64 and exact integer references.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/reduce/device_reduce.cuh"

namespace {

using kernelkit::ReduceOp;
using kktest::DeviceBuffer;
using kktest::Tolerance;

constexpr int64_t kPrime = 1000003;
// 2^24 runs in its own tests (f32, f16, i64) to keep the sweep fast under the sanitizer.
const std::vector<int64_t> kSizes = {1, 31, 32, 33, 1023, 1025, 4097, kPrime};

// A workspace for n elements, zero-filled once as the contract asks.
template <typename T, typename Acc>
DeviceBuffer<unsigned char> make_workspace(int64_t n) {
  DeviceBuffer<unsigned char> ws(std::max<size_t>(kernelkit::reduce_workspace_bytes<T, Acc>(n), 1));
  CUDA_CHECK(cudaMemset(ws.get(), 0, ws.size()));
  return ws;
}

template <typename T, typename Acc>
double reference(const std::vector<T>& h, size_t offset, int64_t n, ReduceOp op, Acc init,
                 double* abs_sum) {
  double r = kktest::to_double(init);
  *abs_sum = std::fabs(r);
  for (int64_t i = 0; i < n; ++i) {
    const double x = kktest::to_double(h[offset + i]);
    *abs_sum += std::fabs(x);
    if (op == ReduceOp::kSum) {
      r += x;
    } else if (std::isnan(r) || std::isnan(x)) {
      r = std::numeric_limits<double>::quiet_NaN();
    } else {
      r = op == ReduceOp::kMax ? std::max(r, x) : std::min(r, x);
    }
  }
  return r;
}

// Tolerance of a sum accumulated in Acc: exact for integers; for floats a bound relative to
// sum |x| (error of a pairwise-ish float sum, far below 1e-5 * sum |x| in practice).
template <typename Acc>
Tolerance sum_tolerance(double abs_sum) {
  if constexpr (std::is_integral_v<Acc>) {
    return Tolerance::Exact();
  } else if constexpr (std::is_same_v<Acc, double>) {
    return Tolerance::Rel(0, 1e-13 * abs_sum + 1e-300);
  } else {
    return Tolerance::Rel(0, 2e-6 * abs_sum + 1e-30);
  }
}

// Runs op over h[offset, offset + n) on the device; returns the result and compares it.
template <typename T, typename Acc>
void check_reduce(const std::vector<T>& h, size_t offset, int64_t n, ReduceOp op, Acc init,
                  const std::string& label) {
  auto d_in = kktest::to_device(h);
  DeviceBuffer<Acc> d_out(1);
  d_out.poison();
  auto ws = make_workspace<T, Acc>(n);
  ASSERT_EQ(kernelkit::reduce(d_in.get() + offset, n, d_out.get(), op, init, ws.get(), ws.size(),
                              nullptr),
            cudaSuccess)
      << label;
  CUDA_CHECK(cudaDeviceSynchronize());
  if constexpr (std::is_integral_v<Acc>) {
    // exact integer reference (a float64 sum of 2^40-sized values would round)
    int64_t ref = init;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t x = h[offset + i];
      ref = op == ReduceOp::kSum   ? ref + x
            : op == ReduceOp::kMax ? std::max(ref, x)
                                   : std::min(ref, x);
    }
    EXPECT_EQ(static_cast<int64_t>(d_out.download()[0]), ref) << label;
  } else {
    double abs_sum = 0;
    const double ref = reference(h, offset, n, op, init, &abs_sum);
    const Tolerance tol = op == ReduceOp::kSum ? sum_tolerance<Acc>(abs_sum) : Tolerance::Exact();
    EXPECT_TRUE(kktest::check_near(d_out.download(), {ref}, tol, label));
  }
  // the kernel left the counter at zero for the next call
  const auto w = ws.download(4);
  EXPECT_EQ(w[0] | w[1] | w[2] | w[3], 0) << label << ": counter not reset";
}

const char* op_name(ReduceOp op) {
  return op == ReduceOp::kSum ? "sum" : op == ReduceOp::kMax ? "max" : "min";
}

template <typename T, typename Acc = kernelkit::compute_t<T>>
void sweep(double lo, double hi, const std::vector<int64_t>& sizes = kSizes) {
  const uint64_t seed = 1234;
  for (int64_t n : sizes) {
    const auto h = kktest::random_vector<T>(n + 1, seed + n, lo, hi);
    for (size_t offset : {0, 1}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
        const std::string label = std::string(kktest::type_name<T>()) + " " + op_name(op) +
                                  " n=" + std::to_string(n) + " offset=" + std::to_string(offset) +
                                  " seed=" + std::to_string(seed + n);
        check_reduce<T, Acc>(h, offset, n, op,
                             kernelkit::convert<Acc>(op == ReduceOp::kSum ? 3 : 0), label);
        if (op != ReduceOp::kSum) {
          // init that does not win: the identity of the op
          const Acc id = op == ReduceOp::kMax ? kernelkit::detail::reduce_lowest<Acc>()
                                              : kernelkit::detail::reduce_highest<Acc>();
          check_reduce<T, Acc>(h, offset, n, op, id, label + " init=identity");
        }
      }
    }
  }
}

class DeviceReduceTest : public kktest::GpuTest {};

TEST_F(DeviceReduceTest, F32) {
  sweep<float>(-1, 1);
}
TEST_F(DeviceReduceTest, F64) {
  sweep<double>(-1, 1);
}
TEST_F(DeviceReduceTest, F16) {
  sweep<__half>(-1, 1);
}
TEST_F(DeviceReduceTest, Bf16) {
  sweep<__nv_bfloat16>(-1, 1);
}
TEST_F(DeviceReduceTest, I32) {
  sweep<int32_t>(-1000, 1000);
}
// int64 sums well past 2^32 (each value up to 2^40), exact
TEST_F(DeviceReduceTest, I64) {
  sweep<int64_t>(-1099511627776.0, 1099511627776.0);
}
TEST_F(DeviceReduceTest, I64PositivePast2To32) {
  sweep<int64_t>(0, 1099511627776.0);
}
// int32 input accumulated in int64 (no overflow where int32 would)
TEST_F(DeviceReduceTest, I32IntoI64) {
  const int64_t n = 1 << 20;
  const auto h = kktest::random_vector<int32_t>(n, 77, 2000000000.0, 2100000000.0);
  check_reduce<int32_t, int64_t>(h, 0, n, ReduceOp::kSum, int64_t{0}, "i32->i64 sum");
}

TEST_F(DeviceReduceTest, Size2To24) {
  sweep<float>(-1, 1, {int64_t{1} << 24});
  sweep<__half>(-1, 1, {int64_t{1} << 24});
  sweep<int64_t>(-1099511627776.0, 1099511627776.0, {int64_t{1} << 24});
}

TEST_F(DeviceReduceTest, EmptyWritesInit) {
  DeviceBuffer<float> out(1);
  out.poison();
  ASSERT_EQ(
      (kernelkit::reduce<float, float>(nullptr, 0, out.get(), ReduceOp::kMax, 42.f, nullptr, 0)),
      cudaSuccess);
  EXPECT_EQ(out.download()[0], 42.f);
  ASSERT_EQ((kernelkit::sum<float, float>(nullptr, 0, out.get(), nullptr, 0)), cudaSuccess);
  EXPECT_EQ(out.download()[0], 0.f);
  EXPECT_EQ(kernelkit::reduce_workspace_bytes<float>(0), 0u);
}

// NaN wins for max and min wherever it is (head, body, tail); infinities order normally.
TEST_F(DeviceReduceTest, NanAndInf) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {int64_t{1}, int64_t{33}, kPrime}) {
    for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
      for (size_t offset : {0, 1}) {
        auto h = kktest::random_vector<float>(n + 1, 5, -1, 1);
        const std::string label = "n=" + std::to_string(n) + " pos=" + std::to_string(pos) +
                                  " off=" + std::to_string(offset);
        h[offset + pos] = nan;
        for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kSum})
          check_reduce<float, float>(h, offset, n, op, 0.f, label + " nan " + op_name(op));
        h[offset + pos] = inf;
        check_reduce<float, float>(h, offset, n, ReduceOp::kMax, -inf, label + " +inf max");
        check_reduce<float, float>(h, offset, n, ReduceOp::kMin, inf, label + " +inf min");
        h[offset + pos] = -inf;
        check_reduce<float, float>(h, offset, n, ReduceOp::kMin, inf, label + " -inf min");
        check_reduce<float, float>(h, offset, n, ReduceOp::kMax, -inf, label + " -inf max");
      }
    }
  }
  // half input, float accumulation
  auto hh = kktest::random_vector<__half>(1025, 9, -1, 1);
  hh[700] = __float2half(nan);
  check_reduce<__half, float>(hh, 0, 1025, ReduceOp::kMax, -inf, "f16 nan max");
}

// Ten runs, identical bits (2^24 and a prime; sums are where order matters).
TEST_F(DeviceReduceTest, Deterministic) {
  for (int64_t n : {kPrime, int64_t{1} << 24}) {
    const auto h = kktest::random_vector<float>(n, 99, -1, 1);
    auto d_in = kktest::to_device(h);
    auto ws = make_workspace<float, float>(n);
    DeviceBuffer<float> out(1);
    std::vector<float> first;
    for (int run = 0; run < 10; ++run) {
      out.poison();
      ASSERT_EQ(kernelkit::sum(d_in.get(), n, out.get(), ws.get(), ws.size()), cudaSuccess);
      const auto got = out.download();
      if (run == 0) {
        first = got;
      } else {
        EXPECT_TRUE(kktest::same_bits(first, got)) << "n=" << n << " run " << run;
      }
    }
  }
}

// One workspace, calls of different sizes, types and ops back to back on a stream: each
// relies on the previous one having reset the counter.
TEST_F(DeviceReduceTest, WorkspaceReuseAcrossCalls) {
  const int64_t n_big = int64_t{1} << 22;
  const auto h = kktest::random_vector<float>(n_big, 3, -1, 1);
  auto d_in = kktest::to_device(h);
  auto ws = make_workspace<float, double>(n_big);  // double partials: the larger of the two
  DeviceBuffer<float> out_f(8);
  DeviceBuffer<double> out_d(8);
  out_f.poison();
  out_d.poison();
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  const int64_t sizes[4] = {n_big, 5000, n_big - 3, 123457};
  for (int k = 0; k < 4; ++k) {
    ASSERT_EQ(kernelkit::sum(d_in.get(), sizes[k], out_f.get() + k, ws.get(), ws.size(), s),
              cudaSuccess);
    ASSERT_EQ(kernelkit::max(d_in.get() + 1, sizes[k] - 1, out_d.get() + k, ws.get(), ws.size(), s),
              cudaSuccess);
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  CUDA_CHECK(cudaStreamDestroy(s));
  const auto got_f = out_f.download(4);
  const auto got_d = out_d.download(4);
  for (int k = 0; k < 4; ++k) {
    double abs_sum = 0, dummy = 0;
    const double ref = reference(h, 0, sizes[k], ReduceOp::kSum, 0.f, &abs_sum);
    EXPECT_TRUE(kktest::check_near(std::vector<float>{got_f[k]}, {ref},
                                   sum_tolerance<float>(abs_sum), "sum " + std::to_string(k)));
    const double ref_max = reference(h, 1, sizes[k] - 1, ReduceOp::kMax, -INFINITY, &dummy);
    EXPECT_TRUE(kktest::check_near(std::vector<double>{got_d[k]}, {ref_max}, Tolerance::Exact(),
                                   "max " + std::to_string(k)));
  }
}

// A captured graph replays correctly (the counter is reset inside the kernel).
TEST_F(DeviceReduceTest, GraphReplay) {
  const int64_t n = (int64_t{1} << 23) + 17;
  const auto h = kktest::random_vector<int64_t>(n, 11, -1e9, 1e9);
  auto d_in = kktest::to_device(h);
  auto ws = make_workspace<int64_t, int64_t>(n);
  DeviceBuffer<int64_t> out(1);
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ASSERT_EQ(kernelkit::sum(d_in.get(), n, out.get(), ws.get(), ws.size(), s), cudaSuccess);
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  double abs_sum = 0;
  const double ref = reference(h, 0, n, ReduceOp::kSum, int64_t{0}, &abs_sum);
  int64_t exact = 0;
  for (auto x : h)
    exact += x;
  for (int rep = 0; rep < 3; ++rep) {
    out.poison();
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    EXPECT_EQ(out.download()[0], exact) << "replay " << rep << " (ref " << ref << ")";
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(s));
}

// The kernel under other policies than the library's (a grid over every tile, one with more
// partials than one combine chunk covers): f32 and exact int64 sums, unaligned heads,
// tails, a grid > 4096 blocks, the counter reset.
template <typename Policy, typename T>
void check_policy(const std::vector<int64_t>& sizes, double lo, double hi) {
  for (int64_t n : sizes) {
    const auto h = kktest::random_vector<T>(n + 1, 4321 + n, lo, hi);
    auto d_in = kktest::to_device(h);
    DeviceBuffer<unsigned char> ws(
        kernelkit::detail::device_reduce_workspace_bytes<T, T, Policy>(n + 1));
    CUDA_CHECK(cudaMemset(ws.get(), 0, ws.size()));
    for (size_t offset : {0, 1}) {
      const std::string label = std::string(kktest::type_name<T>()) + " n=" + std::to_string(n) +
                                " offset=" + std::to_string(offset) +
                                " seed=" + std::to_string(4321 + n);
      DeviceBuffer<T> out(1);
      out.poison();
      ASSERT_EQ(kernelkit::detail::launch_device_reduce<Policy>(
                    d_in.get() + offset, n, out.get(), kernelkit::Sum{}, T(0), ws.get(), nullptr),
                cudaSuccess)
          << label;
      CUDA_CHECK(cudaDeviceSynchronize());
      if constexpr (std::is_integral_v<T>) {
        int64_t ref = 0;
        for (int64_t i = 0; i < n; ++i)
          ref += h[offset + i];
        EXPECT_EQ(static_cast<int64_t>(out.download()[0]), ref) << label;
      } else {
        double abs_sum = 0;
        const double ref = reference(h, offset, n, ReduceOp::kSum, T(0), &abs_sum);
        EXPECT_TRUE(kktest::check_near(out.download(), {ref}, sum_tolerance<T>(abs_sum), label));
      }
      const auto w = ws.download(4);
      EXPECT_EQ(w[0] | w[1] | w[2] | w[3], 0) << label << ": counter not reset";
    }
  }
}

TEST_F(DeviceReduceTest, OtherPolicies) {
  namespace kd = kernelkit::detail;
  using Tiles = kd::DeviceReducePolicy<256, 4, 8, 8, 8192>;
  const std::vector<int64_t> sizes = {1, 33, 4097, kPrime, (int64_t{1} << 22) + 5};
  check_policy<Tiles, float>(sizes, -1, 1);
  check_policy<Tiles, int64_t>(sizes, -1099511627776.0, 1099511627776.0);
  // one pack per thread, a grid over every tile: 4121 blocks here, more partials than one
  // combine chunk (256 threads x 16) covers, so the last block loops over two chunks
  using OnePack = kd::DeviceReducePolicy<256, 4, 1, 64, 8192>;
  check_policy<OnePack, int64_t>({(int64_t{1} << 21) + 12345}, -1099511627776.0, 1099511627776.0);
  // 6 blocks a SM (<= 40 registers a thread): the narrower combine chunks (8 partials a
  // thread for 4-byte Acc, 4 for 8-byte) and 4 packs a thread
  using HighOccupancy = kd::DeviceReducePolicy<256, 6, 4, 8, 8192>;
  check_policy<HighOccupancy, float>(sizes, -1, 1);
  check_policy<HighOccupancy, int64_t>(sizes, -1099511627776.0, 1099511627776.0);
}

// Bad arguments: cudaErrorInvalidValue before any launch; out stays poisoned.
TEST_F(DeviceReduceTest, BadArguments) {
  const int64_t n = 100000;
  auto d_in = kktest::to_device(kktest::random_vector<float>(n, 1));
  DeviceBuffer<float> out(1);
  out.poison();
  const size_t need = kernelkit::reduce_workspace_bytes<float>(n);
  auto ws = make_workspace<float, float>(n);
  float* in = d_in.get();
  void* w = ws.get();
  EXPECT_EQ(kernelkit::sum(in, -1, out.get(), w, need), cudaErrorInvalidValue);
  EXPECT_EQ((kernelkit::sum<float, float>(nullptr, n, out.get(), w, need)), cudaErrorInvalidValue);
  EXPECT_EQ((kernelkit::sum<float, float>(in, n, nullptr, w, need)), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::sum(in, n, out.get(), nullptr, need), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::sum(in, n, out.get(), w, need - 1), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::sum(in, n, out.get(), static_cast<char*>(w) + 4, need),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::reduce(in, n, out.get(), static_cast<ReduceOp>(7), 0.f, w, need),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::max(in, n, out.get(), w, 0), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::min(in, -5, out.get(), w, need), cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = out.download();
  std::vector<float> poisoned(1);
  std::memset(poisoned.data(), 0xFF, sizeof(float));
  EXPECT_TRUE(kktest::same_bits(got, poisoned)) << "an invalid call wrote the output";
}

// Host-only: the workspace covers every grid the heuristic may pick and grows with n.
TEST(DeviceReduceHost, WorkspaceBytes) {
  EXPECT_EQ(kernelkit::reduce_workspace_bytes<float>(-3), 0u);
  EXPECT_GT(kernelkit::reduce_workspace_bytes<float>(1), 0u);
  EXPECT_LE(kernelkit::reduce_workspace_bytes<float>(int64_t{1} << 40),
            kernelkit::detail::kDeviceReduceHeaderBytes +
                kernelkit::detail::kDeviceReduceMaxGrid * sizeof(float));
  kernelkit::DeviceInfo h100;
  h100.sm_count = 132;
  h100.max_threads_per_sm = 2048;
  for (int64_t n : {int64_t{1}, int64_t{1000}, kPrime, int64_t{1} << 24, int64_t{1} << 28,
                    (int64_t{1} << 31) + 1}) {
    const int grid = kernelkit::detail::device_reduce_grid<float>(n, h100);
    EXPECT_GE(grid, 1);
    EXPECT_LE(grid, 132 * kernelkit::detail::kDeviceReduceMinBlocksPerSm);
    EXPECT_LE(
        static_cast<size_t>(grid) * sizeof(float) + kernelkit::detail::kDeviceReduceHeaderBytes,
        kernelkit::reduce_workspace_bytes<float>(n));
  }
  EXPECT_EQ(kernelkit::detail::device_reduce_grid<float>(int64_t{1} << 24, h100), 528);
}

// n one past 2^31 (8.6 GB of int32): 64-bit indexing through the body, head and tail.
TEST_F(DeviceReduceTest, KK_LARGE(PastInt32Range)) {
  const int64_t n = (int64_t{1} << 31) + 1;
  DeviceBuffer<int32_t> in(n + 1);
  CUDA_CHECK(cudaMemset(in.get(), 0x01, (n + 1) * sizeof(int32_t)));  // 0x01010101 each
  const int32_t big = 0x7fff0000;
  CUDA_CHECK(cudaMemcpy(in.get() + n, &big, sizeof big, cudaMemcpyHostToDevice));  // last of in+1
  auto ws = make_workspace<int32_t, int64_t>(n);
  DeviceBuffer<int64_t> out(2);
  out.poison();
  // offset by one element: unaligned head, the body, and `big` as the very last element
  ASSERT_EQ(kernelkit::sum(in.get() + 1, n, out.get(), ws.get(), ws.size()), cudaSuccess);
  ASSERT_EQ(kernelkit::max(in.get() + 1, n, out.get() + 1, ws.get(), ws.size()), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = out.download();
  EXPECT_EQ(got[0], int64_t{0x01010101} * (n - 1) + big);
  EXPECT_EQ(got[1], int64_t{big});
}

// f32 sum of 2^28 values in [-1, 1): within 1e-5 relative of the float64 sum (the
// issue's accuracy goal; the relative error is of the sum itself, which is ~1e4 here).
TEST_F(DeviceReduceTest, KK_LARGE(F32SumAccuracy2To28)) {
  const int64_t n = int64_t{1} << 28;
  const auto h = kktest::random_vector<float>(n, 2028, -1, 1);
  auto d_in = kktest::to_device(h);
  auto ws = make_workspace<float, float>(n);
  DeviceBuffer<float> out(1);
  out.poison();
  ASSERT_EQ(kernelkit::sum(d_in.get(), n, out.get(), ws.get(), ws.size()), cudaSuccess);
  double ref = 0;
  for (float x : h)
    ref += x;
  const double got = out.download()[0];
  std::printf("f32 sum 2^28: got %.9g ref %.9g rel err %.3g\n", got, ref,
              std::fabs(got - ref) / std::fabs(ref));
  EXPECT_TRUE(kktest::check_near(out.download(), {ref}, Tolerance::Rel(1e-5), "f32 2^28 sum"));
}

}  // namespace
