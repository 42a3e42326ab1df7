// SPDX-License-Identifier: Apache-2.0
// kernelkit::reduce / sum / max / min against float64 and exact integer references: every
// type, sizes around one tile and past 2^31, misaligned inputs, NaN / inf, determinism, a
// workspace that holds garbage (0xFF bytes) before every call, two streams, graph replay,
// other plans than the device's, bad arguments.
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/devices.cuh"
#include "common/test_util.cuh"
#include "kernelkit/reduce/reduce.cuh"

namespace {

using kernelkit::ReduceOp;
using kktest::DeviceBuffer;
using kktest::Tolerance;

constexpr int64_t kPrime = 1000003;
// 2^24 runs in its own tests (f32, f16, i64) to keep the sweep fast under the sanitizer.
const std::vector<int64_t> kSizes = {1, 31, 32, 33, 1023, 1025, 4097, kPrime};

// A workspace for n elements, filled with 0xFF bytes: a call must be correct whatever the
// workspace holds.
template <typename T, typename Acc>
DeviceBuffer<unsigned char> make_workspace(int64_t n) {
  DeviceBuffer<unsigned char> ws(std::max<size_t>(kernelkit::reduce_workspace_bytes<T, Acc>(n), 1));
  ws.poison();
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
    r = kktest::reduce_step(op, r, x);
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
          const Acc id =
              op == ReduceOp::kMax ? kernelkit::lowest<Acc>() : kernelkit::highest<Acc>();
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
// leaves the workspace holding the previous call's partials.
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

// A captured graph replays correctly, each replay from the workspace the last one left and
// on a new input (a replay runs the same kernel arguments as the one before): the library's
// call (on this GPU a cooperative launch), then the same sum through the plan
// without cooperative grids (the split kernel and the combine kernel, on sm_90 a
// programmatic dependent launch), into a second output.
TEST_F(DeviceReduceTest, GraphReplay) {
  const int64_t n = (int64_t{1} << 23) + 17;
  const auto h = kktest::random_vector<int64_t>(n, 11, -1e9, 1e9);
  auto d_in = kktest::to_device(h);
  auto ws = make_workspace<int64_t, int64_t>(n);
  DeviceBuffer<int64_t> out(2);
  kernelkit::DeviceInfo no_coop;
  ASSERT_EQ(kernelkit::current_device_info(&no_coop), cudaSuccess);
  no_coop.cooperative_launch = false;
  const auto two_kernels = kernelkit::plan_reduce(n, 8, 8, ws.size(), no_coop);
  ASSERT_EQ(two_kernels.combine, kernelkit::BlockCombine::kSecondKernel);
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ASSERT_EQ(kernelkit::sum(d_in.get(), n, out.get(), ws.get(), ws.size(), s), cudaSuccess);
  ASSERT_EQ(kernelkit::launch_reduce<kernelkit::Sum>(two_kernels, d_in.get(), n, out.get() + 1,
                                                     int64_t{0}, ws.get(), s),
            cudaSuccess);
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 6; ++rep) {
    // a new input each replay: the sum changes, so partials left by the replay before would
    // show
    std::vector<int64_t> hr = h;
    for (int64_t i = 0; i < n; i += 997)
      hr[i] += 1000003 * (rep + 1);
    CUDA_CHECK(
        cudaMemcpyAsync(d_in.get(), hr.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice, s));
    int64_t exact = 0;
    for (auto x : hr)
      exact += x;
    out.poison();
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    const auto got = out.download();
    EXPECT_EQ(got[0], exact) << "replay " << rep;
    EXPECT_EQ(got[1], exact) << "two kernels, replay " << rep;
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(s));
}

// Plans made for other devices than this one (run here through launch_reduce): a device of
// 512 SMs (a split of 2048 blocks, the most the workspace bound allows: one full combine
// chunk; more than this GPU holds at once, so with the combine kernel), a device of one SM
// (4 blocks, many tiles each, one cooperative launch), a T4 (160 blocks, cooperative), and
// this device without cooperative launches (the combine kernel). f32 and exact int64 sums,
// unaligned heads and tails, a dirty workspace. The device's own launch facts (compute
// capability, compiled architecture) are kept, so a plan never asks for a launch mode this
// build or GPU lacks.
template <typename T>
void check_plan(const kernelkit::DeviceInfo& dev, const std::vector<int64_t>& sizes, double lo,
                double hi, const std::string& name) {
  for (int64_t n : sizes) {
    const auto h = kktest::random_vector<T>(n + 1, 4321 + n, lo, hi);
    auto d_in = kktest::to_device(h);
    const size_t ws_bytes = kernelkit::reduce_workspace_bytes<T, T>(n);
    DeviceBuffer<unsigned char> ws(ws_bytes);
    ws.poison();
    const auto plan = kernelkit::plan_reduce(n, sizeof(T), sizeof(T), ws_bytes, dev);
    for (size_t offset : {0, 1}) {
      const std::string label = name + " " + std::string(kktest::type_name<T>()) +
                                " n=" + std::to_string(n) + " split=" + std::to_string(plan.split) +
                                " offset=" + std::to_string(offset) +
                                " seed=" + std::to_string(4321 + n);
      DeviceBuffer<T> out(1);
      out.poison();
      ASSERT_EQ(kernelkit::launch_reduce<kernelkit::Sum>(plan, d_in.get() + offset, n, out.get(),
                                                         T(0), ws.get(), nullptr),
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
    }
  }
}

TEST_F(DeviceReduceTest, OtherPlans) {
  kernelkit::DeviceInfo here;
  ASSERT_EQ(kernelkit::current_device_info(&here), cudaSuccess);
  kernelkit::DeviceInfo big = here, one = here, t4 = kktest::t4(), no_coop = here;
  big.sm_count = 512;
  big.cooperative_launch = false;
  one.sm_count = 1;
  one.cluster_launch = false;  // else its few tiles take a cluster: this device runs the grid
  t4.cc_major = here.cc_major, t4.cc_minor = here.cc_minor, t4.code_arch = here.code_arch;
  t4.cluster_launch = here.cluster_launch;
  t4.cooperative_launch = here.cooperative_launch;
  no_coop.cooperative_launch = false;
  const std::vector<int64_t> sizes = {1, 33, 8193, kPrime, (int64_t{1} << 22) + 5};
  const std::pair<kernelkit::DeviceInfo, const char*> devices[] = {
      {big, "512 SMs"}, {one, "1 SM"}, {t4, "T4"}, {no_coop, "no cooperative"}};
  // the plans are the ones meant (so each combine is really run)
  using kernelkit::BlockCombine;
  EXPECT_EQ(kernelkit::plan_reduce(kPrime, 4, 4, SIZE_MAX, big).combine,
            BlockCombine::kSecondKernel);
  EXPECT_EQ(kernelkit::plan_reduce(kPrime, 4, 4, SIZE_MAX, no_coop).combine,
            BlockCombine::kSecondKernel);
  if (here.cooperative_launch) {
    EXPECT_EQ(kernelkit::plan_reduce(kPrime, 4, 4, SIZE_MAX, one).combine, BlockCombine::kGrid);
    EXPECT_EQ(kernelkit::plan_reduce(kPrime, 4, 4, SIZE_MAX, t4).combine, BlockCombine::kGrid);
  }
  for (const auto& [dev, name] : devices) {
    check_plan<float>(dev, sizes, -1, 1, name);
    check_plan<int64_t>(dev, sizes, -1099511627776.0, 1099511627776.0, name);
  }
  // 512 SMs at 2^22 + 5 floats (2^20 + 1 packs): more blocks than the device has SMs, one
  // per tile of packs (none left idle)
  EXPECT_EQ(
      kernelkit::plan_reduce((int64_t{1} << 22) + 5, 4, 4, SIZE_MAX, big).split,
      ((int64_t{1} << 20) + 1 + kernelkit::kReduceTilePacks - 1) / kernelkit::kReduceTilePacks);
}

// The three combines (a cluster's shared memory, the cooperative grid's barrier, the
// combine kernel) add the same partials in the same order: identical bits for the same
// split, whichever runs (plan_and_launch falls back from one to the next where a cluster or
// a cooperative grid cannot be resident). Every split entry of float's range of
// kReduceConfigs runs, planned on this device with what that entry needs and nothing before
// it in the fallback order (a cluster only up to 8 tiles, and only where this device and
// build have clusters; a cooperative grid where this device launches one). Sizes around the
// cluster's limit (8 tiles of 2048 packs) and the 2^24 grid, misaligned by one element.
TEST_F(DeviceReduceTest, AllCombinesSameBits) {
  kernelkit::DeviceInfo here;
  ASSERT_EQ(kernelkit::current_device_info(&here), cudaSuccess);
  using kernelkit::BlockCombine;
  const kernelkit::ConfigRange entries = kernelkit::reduce_configs_of(4);
  std::vector<int> ran(std::size(kernelkit::kReduceConfigs), 0);
  for (int64_t n : {int64_t{8193}, int64_t{57345}, int64_t{65536}, int64_t{65537}, kPrime,
                    (int64_t{1} << 24) + 3}) {
    const auto h = kktest::random_vector<float>(n + 1, 500 + n, -1, 1);
    auto d_in = kktest::to_device(h);
    auto ws = make_workspace<float, float>(n);
    DeviceBuffer<float> out(entries.end - entries.begin);
    out.poison();
    std::vector<int> slots;
    int split = 0;
    for (size_t i = entries.begin; i < entries.end; ++i) {
      const kernelkit::ReduceConfig c = kernelkit::kReduceConfigs[i];
      if (c.combine == BlockCombine::kNone) continue;  // one block: no combine
      kernelkit::DeviceInfo dev = here;
      dev.cluster_launch = dev.cluster_launch && c.combine == BlockCombine::kCluster;
      dev.cooperative_launch = dev.cooperative_launch && c.combine != BlockCombine::kSecondKernel;
      const auto plan = kernelkit::plan_reduce(n, 4, 4, ws.size(), dev);
      if (!(kernelkit::reduce_config(plan) == c)) {
        // only a cluster or a cooperative grid this device or size does not give
        EXPECT_NE(c.combine, BlockCombine::kSecondKernel) << n;
        if (c.combine == BlockCombine::kGrid) EXPECT_FALSE(here.cooperative_launch) << n;
        if (c.combine == BlockCombine::kCluster && here.clusters()) EXPECT_GT(n, 65536) << n;
        continue;
      }
      if (split == 0) split = plan.split;
      ASSERT_EQ(plan.split, split) << n;
      const int slot = static_cast<int>(i - entries.begin);
      ASSERT_EQ(kernelkit::launch_reduce<kernelkit::Sum>(plan, d_in.get() + 1, n, out.get() + slot,
                                                         0.f, ws.get(), nullptr),
                cudaSuccess)
          << "n=" << n << " entry " << i;
      slots.push_back(slot);
      ++ran[i];
    }
    ASSERT_FALSE(slots.empty()) << n;
    const auto got = out.download();
    for (int slot : slots) {
      EXPECT_TRUE(
          kktest::same_bits(std::vector<float>{got[slots[0]]}, std::vector<float>{got[slot]}))
          << "n=" << n << " entry " << entries.begin + slot << ": " << got[slots[0]] << " vs "
          << got[slot];
    }
    double abs_sum = 0;
    const double ref = reference(h, 1, n, ReduceOp::kSum, 0.f, &abs_sum);
    EXPECT_TRUE(kktest::check_near(std::vector<float>{got[slots[0]]}, {ref},
                                   sum_tolerance<float>(abs_sum), "n=" + std::to_string(n)));
  }
  for (size_t i = entries.begin; i < entries.end; ++i) {
    const BlockCombine w = kernelkit::kReduceConfigs[i].combine;
    const bool possible = w == BlockCombine::kSecondKernel ||
                          (w == BlockCombine::kGrid && here.cooperative_launch) ||
                          (w == BlockCombine::kCluster && here.clusters());
    if (w != BlockCombine::kNone && possible) EXPECT_GT(ran[i], 0) << "entry " << i << " never ran";
  }
}

// Sizes around the cluster path's limit (8 tiles: 65536 f32, 131072 f16, 32768 i64) and
// around one and two tiles, every op, misaligned, init applied once.
TEST_F(DeviceReduceTest, ClusterLimit) {
  const auto hf = kktest::random_vector<float>(65540 + 4, 61, -1, 1);
  for (int64_t n : {8193, 16384, 16385, 57344, 57345, 65535, 65536, 65537})
    for (size_t offset : {0, 1, 3})
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin})
        check_reduce<float, float>(hf, offset, n, op, op == ReduceOp::kSum ? 3.f : 0.f,
                                   std::string("f32 ") + op_name(op) + " n=" + std::to_string(n) +
                                       " off=" + std::to_string(offset));
  const auto hh = kktest::random_vector<__half>(131080 + 8, 62, -1, 1);
  for (int64_t n : {16385, 131071, 131072, 131073})
    for (size_t offset : {0, 5})
      check_reduce<__half, float>(hh, offset, n, ReduceOp::kSum, 0.f,
                                  "f16 n=" + std::to_string(n) + " off=" + std::to_string(offset));
  const auto hi = kktest::random_vector<int64_t>(32770 + 1, 63, -1099511627776.0, 1099511627776.0);
  for (int64_t n : {4097, 32767, 32768, 32769})
    for (size_t offset : {0, 1})
      check_reduce<int64_t, int64_t>(
          hi, offset, n, ReduceOp::kSum, int64_t{7},
          "i64 n=" + std::to_string(n) + " off=" + std::to_string(offset));
}

// Every call correct whatever the workspace held: 0xFF bytes, then the leftovers of a
// different call (other n, other type), twice in a row, for one-block and split plans.
TEST_F(DeviceReduceTest, DirtyWorkspace) {
  const int64_t n_big = (int64_t{1} << 20) + 7;
  const auto h = kktest::random_vector<float>(n_big, 21, -1, 1);
  const auto hi = kktest::random_vector<int64_t>(n_big + 1, 22, -1e12, 1e12);
  auto d_in = kktest::to_device(h);
  auto d_in_i = kktest::to_device(hi);
  DeviceBuffer<unsigned char> ws(kernelkit::reduce_workspace_bytes<int64_t, int64_t>(n_big));
  for (int64_t n : {int64_t{100}, int64_t{8192}, int64_t{8193}, int64_t{65536}, n_big}) {
    for (int round = 0; round < 2; ++round) {
      ws.poison();
      for (int rep = 0; rep < 2; ++rep) {
        DeviceBuffer<float> out(1);
        DeviceBuffer<int64_t> out_i(1);
        out.poison();
        out_i.poison();
        if (round == 1) {  // leftovers of an int64 call of another size first
          ASSERT_EQ(kernelkit::sum(d_in_i.get(), n_big - n / 2, out_i.get(), ws.get(), ws.size()),
                    cudaSuccess);
        }
        ASSERT_EQ(kernelkit::sum(d_in.get(), n, out.get(), ws.get(), ws.size()), cudaSuccess);
        ASSERT_EQ(kernelkit::max(d_in_i.get() + 1, n, out_i.get(), ws.get(), ws.size()),
                  cudaSuccess);
        CUDA_CHECK(cudaDeviceSynchronize());
        const std::string label = "n=" + std::to_string(n) + " round " + std::to_string(round) +
                                  " rep " + std::to_string(rep);
        double abs_sum = 0;
        const double ref = reference(h, 0, n, ReduceOp::kSum, 0.f, &abs_sum);
        EXPECT_TRUE(
            kktest::check_near(out.download(), {ref}, sum_tolerance<float>(abs_sum), label));
        int64_t want = std::numeric_limits<int64_t>::lowest();
        for (int64_t i = 0; i < n; ++i)
          want = std::max(want, hi[1 + i]);
        EXPECT_EQ(out_i.download()[0], want) << label;
      }
    }
  }
}

// One workspace, one stream, calls on inputs whose sums differ by one each time (exact
// integers): the partials each call combines are its own, never the ones the call before
// left (same positions, types and split). f32 and i64, a split of a few blocks and of a
// full wave; the input changes on the stream between calls without a host synchronization.
TEST_F(DeviceReduceTest, StalePartialsNeverRead) {
  for (int64_t n : {int64_t{70001}, (int64_t{1} << 22) + 1}) {
    std::vector<float> hf(n, 1.0f);
    std::vector<int64_t> hi(n, 3);
    auto d_f = kktest::to_device(hf);
    auto d_i = kktest::to_device(hi);
    auto ws = make_workspace<int64_t, int64_t>(n);
    constexpr int kCalls = 12;
    DeviceBuffer<float> out_f(kCalls);
    DeviceBuffer<int64_t> out_i(kCalls);
    out_f.poison();
    out_i.poison();
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<float> one_f(kCalls);
    std::vector<int64_t> one_i(kCalls);
    for (int k = 0; k < kCalls; ++k) {
      // element k * 37 becomes 2 (f32) / 4 + k (i64): each call's sum is new
      one_f[k] = 2.0f;
      one_i[k] = 4 + k;
      CUDA_CHECK(
          cudaMemcpyAsync(d_f.get() + k * 37, &one_f[k], sizeof(float), cudaMemcpyHostToDevice, s));
      CUDA_CHECK(cudaMemcpyAsync(d_i.get() + k * 37, &one_i[k], sizeof(int64_t),
                                 cudaMemcpyHostToDevice, s));
      ASSERT_EQ(kernelkit::sum(d_f.get(), n, out_f.get() + k, ws.get(), ws.size(), s), cudaSuccess);
      ASSERT_EQ(kernelkit::sum(d_i.get(), n, out_i.get() + k, ws.get(), ws.size(), s), cudaSuccess);
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaStreamDestroy(s));
    const auto got_f = out_f.download();
    const auto got_i = out_i.download();
    int64_t want_i = 3 * n;
    for (int k = 0; k < kCalls; ++k) {
      want_i += (4 + k) - 3;
      // n + k + 1 ones turned to twos: exact in f32 below 2^24
      EXPECT_EQ(got_f[k], static_cast<float>(n + k + 1)) << "n=" << n << " call " << k;
      EXPECT_EQ(got_i[k], want_i) << "n=" << n << " call " << k;
    }
  }
}

// Two streams, two workspaces, calls interleaved without synchronization in between.
TEST_F(DeviceReduceTest, TwoStreamsTwoWorkspaces) {
  const int64_t n = (int64_t{1} << 22) + 3;
  const auto h = kktest::random_vector<float>(n, 31, -1, 1);
  auto d_in = kktest::to_device(h);
  cudaStream_t s[2];
  DeviceBuffer<unsigned char> ws[2] = {make_workspace<float, float>(n),
                                       make_workspace<float, float>(n)};
  DeviceBuffer<float> out(16);
  out.poison();
  for (auto& st : s)
    CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int64_t sizes[8] = {n, 77777, n - 5, 8193, 123457, n, 1 << 16, 3};
  for (int k = 0; k < 8; ++k) {
    const int j = k % 2;
    ASSERT_EQ(kernelkit::sum(d_in.get(), sizes[k], out.get() + k, ws[j].get(), ws[j].size(), s[j]),
              cudaSuccess);
    ASSERT_EQ(kernelkit::min(d_in.get() + 2, sizes[k] - 2, out.get() + 8 + k, ws[j].get(),
                             ws[j].size(), s[j]),
              cudaSuccess);
  }
  for (auto& st : s) {
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(cudaStreamDestroy(st));
  }
  const auto got = out.download();
  for (int k = 0; k < 8; ++k) {
    double abs_sum = 0, dummy = 0;
    const double ref = reference(h, 0, sizes[k], ReduceOp::kSum, 0.f, &abs_sum);
    EXPECT_TRUE(kktest::check_near(std::vector<float>{got[k]}, {ref}, sum_tolerance<float>(abs_sum),
                                   "sum " + std::to_string(k)));
    const double ref_min = reference(h, 2, sizes[k] - 2, ReduceOp::kMin, INFINITY, &dummy);
    EXPECT_TRUE(kktest::check_near(std::vector<float>{got[8 + k]}, {ref_min}, Tolerance::Exact(),
                                   "min " + std::to_string(k)));
  }
}

// Sizes around one tile (8192 floats: one block, no combine) and every misalignment of a
// half input (8-element packs).
TEST_F(DeviceReduceTest, TileEdgesAndMisalignment) {
  const auto h = kktest::random_vector<float>(40000, 41, -1, 1);
  for (int64_t n : {8191, 8192, 8193, 8195, 16385, 32768})
    for (size_t offset : {0, 1, 2, 3})
      check_reduce<float, float>(h, offset, n, ReduceOp::kSum, 0.f,
                                 "f32 n=" + std::to_string(n) + " off=" + std::to_string(offset));
  const auto hh = kktest::random_vector<__half>(70000, 42, -1, 1);
  for (int64_t n : {1, 7, 9, 16383, 16384, 16385, 65536})
    for (size_t offset = 0; offset < 8; ++offset)
      check_reduce<__half, float>(hh, offset, n, ReduceOp::kSum, 0.f,
                                  "f16 n=" + std::to_string(n) + " off=" + std::to_string(offset));
}

// Within one tile no workspace is needed: a null one gives the exact sum; past it, a null
// workspace is refused.
TEST_F(DeviceReduceTest, NoWorkspaceWithinOneTile) {
  constexpr int64_t kTile = int64_t{kernelkit::kReduceTilePacks} * 4;  // floats
  for (int64_t n : {int64_t{1}, int64_t{64}, int64_t{1000}, kTile}) {
    ASSERT_EQ(kernelkit::reduce_workspace_bytes<float>(n), 0u) << n;
    const auto h = kktest::small_int_vector<float>(static_cast<size_t>(n), 77 + n);
    auto d_in = kktest::to_device(h);
    DeviceBuffer<float> out(1);
    out.poison();
    ASSERT_EQ(kernelkit::sum(d_in.get(), n, out.get(), nullptr, 0), cudaSuccess) << n;
    double ref = 0;
    for (float x : h)
      ref += x;
    EXPECT_EQ(static_cast<double>(out.download()[0]), ref) << n;
  }
  auto d_in = kktest::to_device(kktest::small_int_vector<float>(static_cast<size_t>(kTile) + 1, 5));
  DeviceBuffer<float> out(1);
  EXPECT_EQ(kernelkit::sum(d_in.get(), kTile + 1, out.get(), nullptr, 0), cudaErrorInvalidValue);
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
  // pointers not aligned to their element
  const float* in_odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(in) + 2);
  float* out_odd = reinterpret_cast<float*>(reinterpret_cast<char*>(out.get()) + 1);
  EXPECT_EQ(kernelkit::sum(in_odd, n - 1, out.get(), w, need), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::sum(in, n, out_odd, w, need), cudaErrorInvalidValue);
  // out inside in, out inside the workspace, the workspace over in
  DeviceBuffer<float> both(n + need / sizeof(float) + 64);
  both.poison();
  EXPECT_EQ(kernelkit::sum(both.get(), n, both.get() + 5, w, need), cudaErrorInvalidValue);
  auto* ws_f = static_cast<float*>(w);
  EXPECT_EQ(kernelkit::sum(in, n, ws_f + 1, w, need), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::sum(both.get(), n, out.get(), both.get() + (n / 64) * 16, need),
            cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  {
    const auto b = both.download();
    std::vector<float> all_poisoned(b.size());
    std::memset(all_poisoned.data(), 0xFF, all_poisoned.size() * sizeof(float));
    EXPECT_TRUE(kktest::same_bits(b, all_poisoned)) << "an invalid call wrote an overlap buffer";
  }
  const auto got = out.download();
  std::vector<float> poisoned(1);
  std::memset(poisoned.data(), 0xFF, sizeof(float));
  EXPECT_TRUE(kktest::same_bits(got, poisoned)) << "an invalid call wrote the output";
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
