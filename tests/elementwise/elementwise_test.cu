// The engine itself: Apply2 detection, functors built on the device by a factory, bad
// arguments, in place on a later input, and sizes past 2^31 elements (Large_*).
#include <cmath>
#include <string>

#include "elementwise/ew_test_util.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"

namespace {

using kktest::Tolerance;

// ---- host-only: which functors take the paired path ----

static_assert(kernelkit::detail::kHasApply2<kernelkit::Add, __half, __half, __half>);
static_assert(
    kernelkit::detail::kHasApply2<kernelkit::Add, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16>);
static_assert(!kernelkit::detail::kHasApply2<kernelkit::Add, float, float, float>);
static_assert(!kernelkit::detail::kHasApply2<kernelkit::Add, float, __half, __half>);
static_assert(kernelkit::detail::kHasApply2<kernelkit::Cast, __half, float>);
static_assert(kernelkit::detail::kHasApply2<kernelkit::Cast, __nv_bfloat16, float>);
static_assert(!kernelkit::detail::kHasApply2<kernelkit::Cast, float, __half>);
static_assert(kernelkit::detail::kHasApply2<kernelkit::Relu, __half, __half>);
static_assert(!kernelkit::detail::kHasApply2<kernelkit::GeluErf, __nv_bfloat16, __nv_bfloat16>);
static_assert(kernelkit::detail::kHasApply2<kernelkit::Fma, __half, __half, __half, __half>);

// ---- host-only: packs per thread (the functor's kPacksPerThread, else by arity) ----

template <typename F, int Arity>
constexpr int kUnrollOf =
    kernelkit::detail::EwDefaultConfig<kernelkit::detail::EwFunctorFactory<F>, Arity>::kUnroll;
static_assert(kUnrollOf<kernelkit::Add, 2> == 1);
static_assert(kUnrollOf<kernelkit::Relu, 1> == 1);
static_assert(kUnrollOf<kernelkit::Fma, 3> == 2);
static_assert(kUnrollOf<kernelkit::GeluErf, 1> == 4);
static_assert(kUnrollOf<kernelkit::GeluTanh, 1> == 4);

TEST(ElementwiseHost, PackSizesOfOperandTypes) {
  EXPECT_EQ((kernelkit::kMaxPackSize<float, float, float>), 4);
  EXPECT_EQ((kernelkit::kMaxPackSize<__half, float>), 4);
  EXPECT_EQ((kernelkit::kMaxPackSize<__nv_bfloat16, __nv_bfloat16>), 8);
  EXPECT_EQ((kernelkit::kMaxPackSize<uint8_t, uint8_t>), 16);
}

class Elementwise : public kktest::GpuTest {};

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

// ---- the launch shapes the benchmark measures as alternatives (EwConfig) ----

// Each alternative launch shape through the full sweep (sizes, each pointer misaligned,
// in place): other block sizes, streaming stores, inputs staged through shared memory with
// cp.async (full tiles only; the partial last tile and the tail keep plain loads).
template <typename Config, typename F, typename R, typename... Args, typename Ref>
void run_with_config(const std::string& what, F f, Ref ref, Tolerance tol,
                     ewtest::Options opt = {}) {
  ewtest::run_op<R, Args...>(
      what,
      [f](int64_t n, R* o, const Args*... in) {
        return kernelkit::detail::launch_elementwise_with<Config>(
            kernelkit::detail::EwFunctorFactory<F>{f}, nullptr, n, o, in...);
      },
      ref, tol, opt);
}

TEST_F(Elementwise, AlternativeLaunchShapes) {
  using kernelkit::detail::EwCache;
  using kernelkit::detail::EwConfig;
  using Bf16 = __nv_bfloat16;
  auto add = [](double a, double b) { return a + b; };
  auto gelu = [](double x) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); };
  run_with_config<EwConfig<128, 1>, kernelkit::Add, float, float, float>(
      "add b128", kernelkit::Add{}, add, Tolerance::Ulps(1));
  run_with_config<EwConfig<512, 1>, kernelkit::Add, float, float, float>(
      "add b512", kernelkit::Add{}, add, Tolerance::Ulps(1));
  run_with_config<EwConfig<256, 1, EwCache::kStreamingStore>, kernelkit::Add, __half, __half,
                  __half>("add cs", kernelkit::Add{}, add, Tolerance::Ulps(1));
  run_with_config<EwConfig<256, 1, EwCache::kAsyncCopy>, kernelkit::Add, float, float, float>(
      "add async", kernelkit::Add{}, add, Tolerance::Ulps(1));
  run_with_config<EwConfig<256, 4, EwCache::kAsyncCopy>, kernelkit::GeluErf, Bf16, Bf16>(
      "gelu async u4", kernelkit::GeluErf{}, gelu, Tolerance::Ulps(1), {-6.0, 6.0, true});
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

struct ThreeXPlusOne {
  __device__ uint8_t operator()(uint8_t x) const { return static_cast<uint8_t>(3 * x + 1); }
};

TEST_F(Elementwise, KK_LARGE(UnaryPast2To31)) {
  const int64_t n = (int64_t{1} << 31) + 33;
  kktest::DeviceBuffer<uint8_t> in(n + 16), out(n + 16);
  kktest::DeviceBuffer<unsigned long long> bad(1);
  for (int offset : {0, 1}) {  // 0: 16-byte packs; 1: one element per access
    SCOPED_TRACE("offset " + std::to_string(offset));
    fill_pattern_kernel<<<4096, 256>>>(in.get() + offset, n);
    CUDA_CHECK(cudaGetLastError());
    out.poison();
    ASSERT_EQ(kernelkit::unary(ThreeXPlusOne{}, n, out.get() + offset, in.get() + offset),
              cudaSuccess);
    CUDA_CHECK(cudaMemset(bad.get(), 0, sizeof(unsigned long long)));
    count_mismatch_kernel<<<4096, 256>>>(out.get() + offset, n, bad.get());
    CUDA_CHECK(cudaGetLastError());
    EXPECT_EQ(bad.download()[0], 0ull) << "of " << n << " elements";
    // Nothing past the end written.
    const auto tail = [&] {
      std::vector<uint8_t> h(16 - offset);
      CUDA_CHECK(cudaMemcpy(h.data(), out.get() + offset + n, h.size(), cudaMemcpyDeviceToHost));
      return h;
    }();
    for (uint8_t v : tail)
      EXPECT_EQ(v, 0xFF);
  }
}

}  // namespace
