// SPDX-License-Identifier: Apache-2.0
// Every functor through the engine, against a float64 reference: the size sweep, each
// pointer misaligned, in place, NaN / +-inf / extreme inputs (ew_test_util.cuh).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "elementwise/ew_test_util.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"

namespace {

using kernelkit::convert;
using kktest::Tolerance;
using kktest::type_name;

class ElementwiseFunctors : public kktest::GpuTest {};

// Arithmetic (one rounding, or two for half / bf16 through float): within one ulp of the
// correctly rounded result.
template <typename T>
Tolerance arith_tol() {
  return Tolerance::Ulps(1);
}
// Transcendental functions: f32 within a few float ulps (absolute floor where 1 + erf or
// 1 + tanh cancels), half / bf16 within one ulp of the correctly rounded result.
template <typename T>
Tolerance trans_tol() {
  if constexpr (std::is_same_v<T, float>) return Tolerance{1e-6, 4e-6, 0};
  if constexpr (std::is_same_v<T, double>) return Tolerance{1e-15, 1e-13, 0};
  return Tolerance::Ulps(1);
}

constexpr ewtest::Options kTransRange{-3.0, 3.0, true};

template <typename R, typename A, typename F, typename Ref>
void unary_case(const std::string& name, F f, Ref ref, Tolerance tol, ewtest::Options opt = {}) {
  ewtest::run_op<R, A>(
      name + "/" + type_name<A>() + "->" + type_name<R>(),
      [f](int64_t n, R* o, const A* a) { return kernelkit::unary(f, n, o, a); }, ref, tol, opt);
}

template <typename R, typename A, typename B, typename F, typename Ref>
void binary_case(const std::string& name, F f, Ref ref, Tolerance tol, ewtest::Options opt = {}) {
  ewtest::run_op<R, A, B>(
      name + "/" + type_name<A>() + "," + type_name<B>() + "->" + type_name<R>(),
      [f](int64_t n, R* o, const A* a, const B* b) { return kernelkit::binary(f, n, o, a, b); },
      ref, tol, opt);
}

template <typename T, typename F, typename Ref>
void ternary_case(const std::string& name, F f, Ref ref, Tolerance tol, ewtest::Options opt = {}) {
  ewtest::run_op<T, T, T, T>(
      name + "/" + type_name<T>(),
      [f](int64_t n, T* o, const T* a, const T* b, const T* c) {
        return kernelkit::ternary(f, n, o, a, b, c);
      },
      ref, tol, opt);
}

// float64 references.
double sigmoid_ref(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double silu_ref(double x) {
  return x / (1.0 + std::exp(-x));
}
double gelu_erf_ref(double x) {
  return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
}
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
double relu_ref(double x) {
  return x < 0 ? 0.0 : x;
}

// ---- unary ----

TEST_F(ElementwiseFunctors, Identity) {
  auto ref = [](double x) { return x; };
  unary_case<float, float>("identity", kernelkit::Identity{}, ref, Tolerance::Exact());
  unary_case<__nv_bfloat16, __nv_bfloat16>("identity", kernelkit::Identity{}, ref,
                                           Tolerance::Exact());
}

TEST_F(ElementwiseFunctors, Relu) {
  unary_case<float, float>("relu", kernelkit::Relu{}, relu_ref, Tolerance::Exact());
  unary_case<__half, __half>("relu", kernelkit::Relu{}, relu_ref, Tolerance::Exact());
  unary_case<__nv_bfloat16, __nv_bfloat16>("relu", kernelkit::Relu{}, relu_ref, Tolerance::Exact());
}

TEST_F(ElementwiseFunctors, Scale) {
  auto ref = [](double x) { return 1.5 * x; };
  unary_case<float, float>("scale", kernelkit::Scale<float>{1.5f}, ref, arith_tol<float>());
  unary_case<__nv_bfloat16, __nv_bfloat16>("scale", kernelkit::Scale<float>{1.5f}, ref,
                                           arith_tol<__nv_bfloat16>());
}

TEST_F(ElementwiseFunctors, Sigmoid) {
  unary_case<float, float>("sigmoid", kernelkit::Sigmoid{}, sigmoid_ref, trans_tol<float>(),
                           kTransRange);
  unary_case<__nv_bfloat16, __nv_bfloat16>("sigmoid", kernelkit::Sigmoid{}, sigmoid_ref,
                                           trans_tol<__nv_bfloat16>(), kTransRange);
}

TEST_F(ElementwiseFunctors, Silu) {
  unary_case<float, float>("silu", kernelkit::Silu{}, silu_ref, trans_tol<float>(), kTransRange);
  unary_case<__half, __half>("silu", kernelkit::Silu{}, silu_ref, trans_tol<__half>(), kTransRange);
}

TEST_F(ElementwiseFunctors, Tanh) {
  auto ref = [](double x) { return std::tanh(x); };
  unary_case<float, float>("tanh", kernelkit::Tanh{}, ref, trans_tol<float>(), kTransRange);
  unary_case<__nv_bfloat16, __nv_bfloat16>("tanh", kernelkit::Tanh{}, ref,
                                           trans_tol<__nv_bfloat16>(), kTransRange);
}

TEST_F(ElementwiseFunctors, Exp) {
  auto ref = [](double x) { return std::exp(x); };
  unary_case<float, float>("exp", kernelkit::Exp{}, ref, trans_tol<float>(), kTransRange);
  unary_case<__half, __half>("exp", kernelkit::Exp{}, ref, trans_tol<__half>(), kTransRange);
}

TEST_F(ElementwiseFunctors, GeluErf) {
  unary_case<float, float>("gelu", kernelkit::GeluErf{}, gelu_erf_ref, trans_tol<float>(),
                           kTransRange);
  unary_case<double, double>("gelu", kernelkit::GeluErf{}, gelu_erf_ref, trans_tol<double>(),
                             kTransRange);
  unary_case<__half, __half>("gelu", kernelkit::GeluErf{}, gelu_erf_ref, trans_tol<__half>(),
                             kTransRange);
  unary_case<__nv_bfloat16, __nv_bfloat16>("gelu", kernelkit::GeluErf{}, gelu_erf_ref,
                                           trans_tol<__nv_bfloat16>(), kTransRange);
}

// Every bf16 and every f16 value (NaN, +-inf, subnormals, the far tails) through gelu, erf
// form. Half / bf16 inputs take the erfc form, which stays accurate in the negative tail
// down to the subnormal results, so the reference is x * erfc(-x / sqrt 2) / 2 (1 + erf
// cancels there, in double as well). Through the public function (this device's plan) and
// through the plan for a 1-SM device (8-wide packs, 4 staged per thread, full tiles and the
// partial last one); aligned, and offset by one element (a 7-element head, then packs).
template <typename T>
void gelu_every_value() {
  constexpr size_t kCount = 65536;
  std::vector<T> h(kCount);
  std::vector<double> ref(kCount);
  for (size_t b = 0; b < kCount; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    std::memcpy(&h[b], &bits, sizeof(bits));
    const double x = kktest::to_double(h[b]);
    ref[b] = kktest::to_double(convert<T>(0.5 * x * std::erfc(-x * M_SQRT1_2)));
  }
  for (int off : {0, 1})
    for (bool one_sm : {false, true}) {
      const std::string label = std::string("gelu every ") + type_name<T>() + " value, offset " +
                                std::to_string(off) + (one_sm ? ", 1-SM plan" : "");
      kktest::DeviceBuffer<T> in(kCount + 1), out(kCount + 1);
      out.poison();
      CUDA_CHECK(cudaMemcpy(in.get() + off, h.data(), kCount * sizeof(T), cudaMemcpyHostToDevice));
      std::vector<kernelkit::EwPlan> plan;
      const cudaError_t err =
          one_sm
              ? ewtest::launch_with_sm_count(1, &plan, kernelkit::GeluErf{}, int64_t{kCount},
                                             out.get() + off, static_cast<const T*>(in.get() + off))
              : kernelkit::unary(kernelkit::GeluErf{}, int64_t{kCount}, out.get() + off,
                                 static_cast<const T*>(in.get() + off));
      ASSERT_EQ(err, cudaSuccess) << label;
      if (one_sm) {
        ASSERT_EQ(plan.size(), 1u);
        EXPECT_EQ(plan[0].packs_per_thread, 4) << label;
        EXPECT_TRUE(plan[0].staged) << label;
        EXPECT_EQ(plan[0].head, off == 0 ? 0 : 7) << label;
      }
      CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<T> got(kCount);
      CUDA_CHECK(
          cudaMemcpy(got.data(), out.get() + off, kCount * sizeof(T), cudaMemcpyDeviceToHost));
      EXPECT_TRUE(kktest::check_near(got, ref, Tolerance::Ulps(1), label));
    }
}

TEST_F(ElementwiseFunctors, GeluErfEveryHalfAndBf16Value) {
  gelu_every_value<__nv_bfloat16>();
  gelu_every_value<__half>();
}

TEST_F(ElementwiseFunctors, GeluTanh) {
  unary_case<float, float>("gelu_tanh", kernelkit::GeluTanh{}, gelu_tanh_ref, trans_tol<float>(),
                           kTransRange);
  unary_case<__nv_bfloat16, __nv_bfloat16>("gelu_tanh", kernelkit::GeluTanh{}, gelu_tanh_ref,
                                           trans_tol<__nv_bfloat16>(), kTransRange);
}

// Casts are correctly rounded (nearest even, overflow to +-inf): exact against the rounded
// reference. Wide ranges reach overflow, narrow ones subnormals.
TEST_F(ElementwiseFunctors, Cast) {
  auto ref = [](double x) { return x; };
  const auto exact = Tolerance::Exact();
  for (auto opt : {ewtest::Options{-7e4, 7e4, true}, ewtest::Options{-1e-4, 1e-4, true}}) {
    unary_case<__half, float>("cast", kernelkit::Cast{}, ref, exact, opt);
    unary_case<__half, double>("cast", kernelkit::Cast{}, ref, exact, opt);
    unary_case<float, __half>("cast", kernelkit::Cast{}, ref, exact, opt);
  }
  for (auto opt : {ewtest::Options{-1e38, 1e38, true}, ewtest::Options{-1e-38, 1e-38, true}}) {
    unary_case<__nv_bfloat16, float>("cast", kernelkit::Cast{}, ref, exact, opt);
    unary_case<__nv_bfloat16, double>("cast", kernelkit::Cast{}, ref, exact, opt);
    unary_case<float, __nv_bfloat16>("cast", kernelkit::Cast{}, ref, exact, opt);
  }
  for (auto opt : {ewtest::Options{-1e300, 1e300, true}, ewtest::Options{-1, 1, true}}) {
    unary_case<float, double>("cast", kernelkit::Cast{}, ref, exact, opt);
  }
  unary_case<double, float>("cast", kernelkit::Cast{}, ref, exact);
}

// ---- binary ----

TEST_F(ElementwiseFunctors, Add) {
  auto ref = [](double a, double b) { return a + b; };
  binary_case<float, float, float>("add", kernelkit::Add{}, ref, arith_tol<float>());
  binary_case<double, double, double>("add", kernelkit::Add{}, ref, arith_tol<double>());
  binary_case<__half, __half, __half>("add", kernelkit::Add{}, ref, arith_tol<__half>());
  binary_case<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>("add", kernelkit::Add{}, ref,
                                                           arith_tol<__nv_bfloat16>());
  // Mixed precision: half + float -> float.
  binary_case<float, __half, float>("add", kernelkit::Add{}, ref, arith_tol<float>());
  // Integers: exact.
  binary_case<int32_t, int32_t, int32_t>("add", kernelkit::Add{}, ref, Tolerance::Exact(),
                                         ewtest::Options{-1000, 1000, false});
}

TEST_F(ElementwiseFunctors, Sub) {
  auto ref = [](double a, double b) { return a - b; };
  binary_case<float, float, float>("sub", kernelkit::Sub{}, ref, arith_tol<float>());
  binary_case<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>("sub", kernelkit::Sub{}, ref,
                                                           arith_tol<__nv_bfloat16>());
}

TEST_F(ElementwiseFunctors, Mul) {
  auto ref = [](double a, double b) { return a * b; };
  binary_case<float, float, float>("mul", kernelkit::Mul{}, ref, arith_tol<float>());
  binary_case<__half, __half, __half>("mul", kernelkit::Mul{}, ref, arith_tol<__half>());
}

TEST_F(ElementwiseFunctors, Div) {
  auto ref = [](double a, double b) { return a / b; };
  binary_case<float, float, float>("div", kernelkit::Div{}, ref, arith_tol<float>());
  binary_case<__half, __half, __half>("div", kernelkit::Div{}, ref, arith_tol<__half>());
}

TEST_F(ElementwiseFunctors, Axpby) {
  // alpha, beta powers of two: the products are exact, one rounding in the sum.
  auto ref = [](double a, double b) { return 2.0 * a + -0.5 * b; };
  binary_case<float, float, float>("axpby", kernelkit::Axpby<float>{2.f, -0.5f}, ref,
                                   arith_tol<float>());
  binary_case<__half, __half, __half>("axpby", kernelkit::Axpby<float>{2.f, -0.5f}, ref,
                                      arith_tol<__half>());
}

// ---- ternary ----

TEST_F(ElementwiseFunctors, Fma) {
  auto ref = [](double a, double b, double c) { return std::fma(a, b, c); };
  ternary_case<float>("fma", kernelkit::Fma{}, ref, arith_tol<float>());
  ternary_case<double>("fma", kernelkit::Fma{}, ref, arith_tol<double>());
  ternary_case<__half>("fma", kernelkit::Fma{}, ref, arith_tol<__half>());
  ternary_case<__nv_bfloat16>("fma", kernelkit::Fma{}, ref, arith_tol<__nv_bfloat16>());
}

}  // namespace
