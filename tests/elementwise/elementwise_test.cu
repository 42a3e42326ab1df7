// SPDX-License-Identifier: Apache-2.0
// The engine itself: functors built on the device by a factory; every path a plan can take
// (head + packs, one element per access, 1 / 2 / 4 packs per thread, staged, 64- to
// 256-thread blocks) forced through plans made for other SM counts; pointers at the same and
// at different offsets within a pack; in place on a later input; bad arguments (including
// misaligned elements and partial overlap); sizes past 2^31 elements (Large_*).
#include <cmath>
#include <string>

#include "elementwise/ew_test_util.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"

namespace {

using kktest::Tolerance;

class Elementwise : public kktest::GpuTest {};

// 3 x + 1 (mod 256) on bytes: exact, and distinct from the input for every byte.
struct ThreeXPlusOneU8 {
  __device__ uint8_t operator()(uint8_t x) const { return static_cast<uint8_t>(3 * x + 1); }
};

// ---- factories ----

// A factory that reads its parameter from device memory when the functor is built.
struct ScaleFromDevice {
  const float* alpha;
  __device__ kernelkit::Scale<float> operator()() const { return kernelkit::Scale<float>{*alpha}; }
};

template <typename F>
struct Plain {
  F f;
  __device__ F operator()() const { return f; }
};

TEST_F(Elementwise, FactoryBuildsFunctorOnDevice) {
  const auto d_alpha = kktest::to_device(std::vector<float>{-2.5f});
  const ScaleFromDevice factory{d_alpha.get()};
  ewtest::run_op<float, float>(
      "unary_with_factory scale",
      [factory](int64_t n, float* o, const float* a) {
        return kernelkit::unary_with_factory(factory, n, o, a);
      },
      [](double x) { return -2.5 * x; }, Tolerance::Ulps(1));
}

TEST_F(Elementwise, BinaryAndTernaryWithFactory) {
  ewtest::run_op<__half, __half, __half>(
      "binary_with_factory add",
      [](int64_t n, __half* o, const __half* a, const __half* b) {
        return kernelkit::binary_with_factory(Plain<kernelkit::Add>{}, n, o, a, b);
      },
      [](double a, double b) { return a + b; }, Tolerance::Ulps(1));
  ewtest::run_op<float, float, float, float>(
      "ternary_with_factory fma",
      [](int64_t n, float* o, const float* a, const float* b, const float* c) {
        return kernelkit::ternary_with_factory(Plain<kernelkit::Fma>{}, n, o, a, b, c);
      },
      [](double a, double b, double c) { return std::fma(a, b, c); }, Tolerance::Ulps(1));
}

// ---- every path a plan can take ----

// A costly-functor stand-in with two inputs: asks for 4 staged packs per thread.
struct StagedMulAdd {
  static constexpr int kPacksPerThread = 4;
  static constexpr bool kStageInputs = true;
  template <typename A, typename B>
  __device__ float operator()(A a, B b) const {
    return 2.0f * kernelkit::convert<float>(a) + kernelkit::convert<float>(b);
  }
};

// SM counts the plans are made for: 1 (the functor's most packs per thread, 256-thread
// blocks), a few in between, the device's own, and far more than any GPU has (one pack per
// thread, 64-thread blocks).
std::vector<int> sm_counts() {
  kernelkit::DeviceInfo d;
  CUDA_CHECK(kernelkit::current_device_info(&d));
  return {1, 4, 16, 64, d.sm_count, 1 << 20};
}

// The full sweep of run_op (plus mid sizes) for f through plans made for every SM count
// above; returns the plans used.
template <typename R, typename... Args, typename F, typename Ref>
std::vector<kernelkit::EwPlan> run_every_plan(const std::string& what, F f, Ref ref, Tolerance tol,
                                              ewtest::Options opt = {}) {
  std::vector<kernelkit::EwPlan> seen;
  // (40009 and 160001: 2 packs a thread on 1 and 4 SMs, where 4 would not fill a wave)
  std::vector<int64_t> sizes = {0, 1, 3, 9, 33, 257, 4099, 40009, 65539, 160001, 300007};
  // sanitizer: no 300007 (4/5 of the work; the plans come from the SM counts, and the callers
  // still check that they saw each)
  if (kktest::sanitizer_run()) sizes.pop_back();
  for (int sms : sm_counts()) {
    ewtest::run_op<R, Args...>(
        what + " sms=" + std::to_string(sms),
        [&](int64_t n, R* o, const Args*... in) {
          return ewtest::launch_with_sm_count(sms, &seen, f, n, o, in...);
        },
        ref, tol, opt, sizes);
  }
  return seen;
}

// Whether some plan in `seen` satisfies pred.
template <typename Pred>
bool any_plan(const std::vector<kernelkit::EwPlan>& seen, Pred pred) {
  for (const auto& p : seen)
    if (pred(p)) return true;
  return false;
}

TEST_F(Elementwise, EveryPlanPathStaged) {
  using Bf16 = __nv_bfloat16;
  auto gelu = [](double x) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); };
  const auto seen = run_every_plan<Bf16, Bf16>("gelu bf16", kernelkit::GeluErf{}, gelu,
                                               Tolerance::Ulps(1), {-6.0, 6.0, true});
  for (int ppt : {1, 2, 4}) {
    EXPECT_TRUE(any_plan(seen,
                         [&](const kernelkit::EwPlan& p) {
                           return p.pack == 8 && p.packs_per_thread == ppt && p.staged == (ppt > 1);
                         }))
        << "no gelu plan with " << ppt << " packs per thread";
  }
  for (unsigned block : {64u, 128u, 256u}) {
    EXPECT_TRUE(
        any_plan(seen, [&](const kernelkit::EwPlan& p) { return p.shape.block.x == block; }))
        << "no gelu plan with " << block << "-thread blocks";
  }
  EXPECT_TRUE(any_plan(seen, [](const kernelkit::EwPlan& p) { return p.pack == 1; }));
  EXPECT_TRUE(any_plan(seen, [](const kernelkit::EwPlan& p) { return p.head > 0; }));

  auto muladd = [](double a, double b) { return 2.0 * a + b; };
  const auto seen2 = run_every_plan<float, float, float>("staged muladd f32", StagedMulAdd{},
                                                         muladd, Tolerance::Ulps(1));
  EXPECT_TRUE(any_plan(seen2, [](const kernelkit::EwPlan& p) {
    return p.staged && p.packs_per_thread == 4 && p.shape.smem == 16 * 256 * 4 * 2;
  }));
  run_every_plan<Bf16, Bf16, float>("staged muladd bf16,f32->bf16", StagedMulAdd{}, muladd,
                                    Tolerance::Ulps(1));
}

TEST_F(Elementwise, EveryPlanPathCheap) {
  auto fma = [](double a, double b, double c) { return std::fma(a, b, c); };
  const auto seen = run_every_plan<float, float, float, float>("fma f32", kernelkit::Fma{}, fma,
                                                               Tolerance::Ulps(1));
  EXPECT_TRUE(any_plan(seen, [](const kernelkit::EwPlan& p) { return p.packs_per_thread == 2; }));
  EXPECT_TRUE(any_plan(
      seen, [](const kernelkit::EwPlan& p) { return p.pack == 4 && p.packs_per_thread == 1; }));
  auto add = [](double a, double b) { return a + b; };
  run_every_plan<__half, __half, __half>("add f16", kernelkit::Add{}, add, Tolerance::Ulps(1));
  run_every_plan<__nv_bfloat16, float>(
      "cast f32->bf16", kernelkit::Cast{}, [](double x) { return x; }, Tolerance::Exact());
}

// ---- pointer offsets within a pack ----

// Every pointer `shift` elements past a 16-byte boundary, for every shift within a pack: a
// scalar head up to the first pack boundary, whole packs, then the tail, in one launch (the
// plan for this device must say so); sizes around the pack; in place too.
template <typename R, typename... Args, typename F, typename Ref>
void same_offset_sweep(const std::string& what, F f, Ref ref, Tolerance tol,
                       ewtest::Options opt = {}) {
  constexpr int kPack = kernelkit::kMaxPackSize<R, Args...>;
  kernelkit::DeviceInfo d;
  CUDA_CHECK(kernelkit::current_device_info(&d));
  const int64_t sizes[] = {1, 2, kPack - 1, kPack, kPack + 1, 2 * kPack + 3, 1000, 65539, 1000003};
  for (int shift = 1; shift < kPack; ++shift) {
    for (int64_t n : sizes) {
      // sanitizer: no 1000003 (94% of the work; 65539 still spans many blocks)
      if (kktest::sanitizer_run() && n > 100000) continue;
      for (bool in_place : {false, true}) {
        if (in_place && !std::is_same_v<R, std::tuple_element_t<0, std::tuple<Args...>>>) continue;
        auto launch = [&](int64_t m, R* o, const Args*... in) {
          std::vector<kernelkit::EwPlan> seen;
          const cudaError_t err = ewtest::launch_with_sm_count(d.sm_count, &seen, f, m, o, in...);
          EXPECT_EQ(seen.size(), 1u);
          if (!seen.empty()) {
            EXPECT_EQ(seen[0].pack, kPack) << what << " shift " << shift << " n=" << m;
            EXPECT_EQ(seen[0].head, std::min<int64_t>(m, kPack - shift))
                << what << " shift " << shift << " n=" << m;
          }
          return err;
        };
        ewtest::run_one<R, Args...>(what + " shift " + std::to_string(shift), launch, ref, tol, opt,
                                    n, ewtest::kAllShifted, in_place, shift);
      }
    }
  }
}

TEST_F(Elementwise, SameOffsetHeadThenPacks) {
  auto add = [](double a, double b) { return a + b; };
  same_offset_sweep<float, float, float>("add f32", kernelkit::Add{}, add, Tolerance::Ulps(1));
  same_offset_sweep<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>("add bf16", kernelkit::Add{}, add,
                                                                 Tolerance::Ulps(1));
  same_offset_sweep<__nv_bfloat16, float>(
      "cast f32->bf16", kernelkit::Cast{}, [](double x) { return x; }, Tolerance::Exact());
  same_offset_sweep<uint8_t, uint8_t>("3x+1 u8", ThreeXPlusOneU8{},
                                      [](double x) { return std::fmod(3 * x + 1, 256.0); },
                                      Tolerance::Exact(), {0, 256, false});
  same_offset_sweep<double, double, double, double>(
      "fma f64", kernelkit::Fma{}, [](double a, double b, double c) { return std::fma(a, b, c); },
      Tolerance::Ulps(1));
  auto gelu = [](double x) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); };
  same_offset_sweep<__nv_bfloat16, __nv_bfloat16>("gelu bf16", kernelkit::GeluErf{}, gelu,
                                                  Tolerance::Ulps(1), {-6.0, 6.0, true});
}

// Pointers at different offsets within a pack (no head makes them all aligned): one element
// per access, a pack's worth per thread, through the public functions.
TEST_F(Elementwise, DifferentOffsets) {
  const int64_t sizes[] = {1, 7, 33, 4099, 1000003};
  const int shifts[][3] = {{1, 2, 3}, {0, 2, 1}, {3, 0, 0}, {2, 2, 0}};
  for (int64_t n : sizes) {
    for (const auto& s : shifts) {
      const std::string label = "add f32 n=" + std::to_string(n) + " shifts " +
                                std::to_string(s[0]) + "," + std::to_string(s[1]) + "," +
                                std::to_string(s[2]);
      const auto ha = kktest::random_vector<float>(size_t(n), 21 + n);
      const auto hb = kktest::random_vector<float>(size_t(n), 22 + n);
      kktest::DeviceBuffer<float> out(size_t(n) + 8), a(size_t(n) + 8), b(size_t(n) + 8);
      out.poison();
      CUDA_CHECK(cudaMemcpy(a.get() + s[1], ha.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(b.get() + s[2], hb.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      ASSERT_EQ(kernelkit::binary(kernelkit::Add{}, n, out.get() + s[0],
                                  static_cast<const float*>(a.get() + s[1]),
                                  static_cast<const float*>(b.get() + s[2])),
                cudaSuccess)
          << label;
      std::vector<double> ref(size_t(n) + 8, std::nan(""));
      for (int64_t i = 0; i < n; ++i)
        ref[size_t(i + s[0])] = static_cast<float>(double(ha[i]) + double(hb[i]));
      // Every element of the buffer: the sums where written, the NaN poison around them.
      EXPECT_TRUE(kktest::check_near(out.download(), ref, Tolerance::Ulps(1), label));
    }
  }
}

// ---- aliasing: out is the second / third input ----

TEST_F(Elementwise, InPlaceOnLaterInputs) {
  for (int64_t n : ewtest::kSizes) {
    const auto ha = kktest::random_vector<float>(n, 11 + n);
    const auto hb = kktest::random_vector<float>(n, 12 + n);
    const auto hc = kktest::random_vector<float>(n, 13 + n);
    auto a = kktest::to_device(ha);
    auto b = kktest::to_device(hb);
    auto c = kktest::to_device(hc);
    ASSERT_EQ(kernelkit::binary(kernelkit::Sub{}, n, b.get(), a.get(), b.get()), cudaSuccess);
    ASSERT_EQ(kernelkit::ternary(kernelkit::Fma{}, n, c.get(), a.get(), a.get(), c.get()),
              cudaSuccess);
    std::vector<double> rb(n), rc(n);
    for (int64_t i = 0; i < n; ++i) {
      rb[i] = static_cast<float>(double(ha[i]) - double(hb[i]));
      rc[i] = static_cast<float>(std::fma(double(ha[i]), double(ha[i]), double(hc[i])));
    }
    EXPECT_TRUE(
        kktest::check_near(b.download(), rb, Tolerance::Ulps(1), "out==b n=" + std::to_string(n)));
    EXPECT_TRUE(
        kktest::check_near(c.download(), rc, Tolerance::Ulps(1), "out==c n=" + std::to_string(n)));
  }
}

// ---- bad arguments ----

TEST_F(Elementwise, BadArgumentsWriteNothing) {
  ewtest::check_bad_args<float, float>("unary", [](int64_t n, float* o, const float* a) {
    return kernelkit::unary(kernelkit::Relu{}, n, o, a);
  });
  ewtest::check_bad_args<__half, __half, __half>(
      "binary", [](int64_t n, __half* o, const __half* a, const __half* b) {
        return kernelkit::binary(kernelkit::Add{}, n, o, a, b);
      });
  ewtest::check_bad_args<float, float, float, float>(
      "ternary", [](int64_t n, float* o, const float* a, const float* b, const float* c) {
        return kernelkit::ternary(kernelkit::Fma{}, n, o, a, b, c);
      });
  ewtest::check_bad_args<float, float>(
      "unary_with_factory", [](int64_t n, float* o, const float* a) {
        return kernelkit::unary_with_factory(Plain<kernelkit::Identity>{}, n, o, a);
      });
}

// ---- past 2^31 elements: 64-bit indexing, packed and one-element paths ----

__global__ void fill_pattern_kernel(uint8_t* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<uint8_t>(i % 251);
}

// Counts elements of out that differ from (i % 251) * 3 + 1 (mod 256).
__global__ void count_mismatch_kernel(const uint8_t* out, int64_t n, unsigned long long* bad) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    local += out[i] != static_cast<uint8_t>((i % 251) * 3 + 1);
  if (local) atomicAdd(bad, local);
}

// 2^31 + 33 bytes: every pointer aligned (16-byte packs), every pointer one byte in (a
// 15-byte head, then packs), and the output alone one byte in (one element per access); all
// with 64-bit indices. Nothing before or after the output written.
TEST_F(Elementwise, KK_LARGE(UnaryPast2To31)) {
  const int64_t n = (int64_t{1} << 31) + 33;
  kktest::DeviceBuffer<uint8_t> in(n + 16), out(n + 16);
  kktest::DeviceBuffer<unsigned long long> bad(1);
  const int offsets[][2] = {{0, 0}, {1, 1}, {0, 1}};  // {input, output}
  for (const auto& off : offsets) {
    SCOPED_TRACE("input offset " + std::to_string(off[0]) + ", output offset " +
                 std::to_string(off[1]));
    fill_pattern_kernel<<<4096, 256>>>(in.get() + off[0], n);
    CUDA_CHECK(cudaGetLastError());
    out.poison();
    ASSERT_EQ(kernelkit::unary(ThreeXPlusOneU8{}, n, out.get() + off[1],
                               static_cast<const uint8_t*>(in.get() + off[0])),
              cudaSuccess);
    CUDA_CHECK(cudaMemset(bad.get(), 0, sizeof(unsigned long long)));
    count_mismatch_kernel<<<4096, 256>>>(out.get() + off[1], n, bad.get());
    CUDA_CHECK(cudaGetLastError());
    EXPECT_EQ(bad.download()[0], 0ull) << "of " << n << " elements";
    std::vector<uint8_t> edge(16);
    CUDA_CHECK(
        cudaMemcpy(edge.data(), out.get() + off[1] + n, 16 - off[1], cudaMemcpyDeviceToHost));
    if (off[1] == 1) CUDA_CHECK(cudaMemcpy(&edge[15], out.get(), 1, cudaMemcpyDeviceToHost));
    for (uint8_t v : edge)
      EXPECT_EQ(v, 0xFF);
  }
}

}  // namespace
