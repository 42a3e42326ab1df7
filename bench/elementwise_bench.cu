// The elementwise engine against CUB's DeviceTransform (same functor, same data) and the
// ladder steps. bytes = every input read once + the output written once. Each case is
// verified once at sampled indices against a float64 reference rounded to the output type.
#include <cub/device/device_transform.cuh>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"
#include "ladder/elementwise/registry.cuh"

namespace {

constexpr int64_t kSizes[] = {int64_t{1} << 28, int64_t{1} << 24};

template <typename T>
const char* dtype() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, __half>) return "f16";
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return "bf16";
  return "?";
}

template <typename T>
double read_one(const T* p, size_t i) {
  T v;
  BENCH_CUDA(cudaMemcpy(&v, p + i, sizeof(T), cudaMemcpyDeviceToHost));
  return kernelkit::convert<double>(v);
}

// Registers one case. op(stream, n, out, in...) -> cudaError_t launches it; ref(double...)
// is the float64 reference; the result must be within rtol / atol of ref rounded to R.
template <typename R, typename... Args, typename Op, typename Ref, size_t... I>
void add_ew_case_impl(const std::string& name, int64_t n, Op op, Ref ref, double rtol, double atol,
                      std::index_sequence<I...>) {
  const double bytes = double(n) * double(sizeof(R) + (sizeof(Args) + ... + 0));
  kkbench::add_case(name, bytes, 0, [=](cudaStream_t s) -> kkbench::Launch {
    // Inputs in [-2, 2): every functor here is defined and finite there.
    auto ins = std::make_tuple(kkbench::random_array<Args>(size_t(n), 101 + I, -2.0, 2.0)...);
    auto out = kkbench::poisoned_array<R>(size_t(n));
    auto launch = [ins, out, n, op](cudaStream_t st) {
      BENCH_CUDA(op(st, n, out->p, static_cast<const Args*>(std::get<I>(ins)->p)...));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    std::vector<double> got, want;
    for (size_t i : kkbench::sample_indices(size_t(n), 2048)) {
      got.push_back(read_one(out->p, i));
      want.push_back(kernelkit::convert<double>(
          kernelkit::convert<R>(ref(read_one(std::get<I>(ins)->p, i)...))));
    }
    kkbench::verify(name, got, want, rtol, atol);
    return launch;
  });
}

template <typename R, typename... Args, typename Op, typename Ref>
void add_ew_case(const std::string& name, int64_t n, Op op, Ref ref, double rtol,
                 double atol = 0.0) {
  add_ew_case_impl<R, Args...>(name, n, op, ref, rtol, atol, std::index_sequence_for<Args...>{});
}

// The public entry point of the given arity.
template <typename F, typename R, typename... Args>
cudaError_t kk_transform(F f, cudaStream_t s, int64_t n, R* out, const Args*... in) {
  if constexpr (sizeof...(Args) == 1) {
    return kernelkit::unary(f, n, out, in..., s);
  } else if constexpr (sizeof...(Args) == 2) {
    return kernelkit::binary(f, n, out, in..., s);
  } else {
    return kernelkit::ternary(f, n, out, in..., s);
  }
}

// CUB takes 32-bit offsets when n fits, as the engine indexes in 32 bits there.
template <typename F, typename R, typename... Args>
cudaError_t cub_transform(F f, cudaStream_t s, int64_t n, R* out, const Args*... in) {
  if (n <= INT32_MAX) {
    return cub::DeviceTransform::Transform(::cuda::std::make_tuple(in...), out, static_cast<int>(n),
                                           f, s);
  }
  return cub::DeviceTransform::Transform(::cuda::std::make_tuple(in...), out, n, f, s);
}

// The engine and CUB on the same functor.
template <typename R, typename... Args, typename F, typename Ref>
void add_engine_and_cub(const std::string& op, const std::string& type, int64_t n, F f, Ref ref,
                        double rtol, bool with_cub = true) {
  const std::string tail = "/" + type + "/" + kkbench::dims(n);
  add_ew_case<R, Args...>(
      "elementwise." + op + "/kernelkit" + tail, n,
      [f](cudaStream_t s, int64_t m, R* out, const Args*... in) {
        return kk_transform(f, s, m, out, in...);
      },
      ref, rtol);
  if (with_cub) {
    add_ew_case<R, Args...>(
        "elementwise." + op + "/cub" + tail, n,
        [f](cudaStream_t s, int64_t m, R* out, const Args*... in) {
          return cub_transform(f, s, m, out, in...);
        },
        ref, rtol);
  }
}

double add_ref(double a, double b) {
  return a + b;
}
double relu_ref(double x) {
  return x < 0 ? 0.0 : x;
}
double sigmoid_ref(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
}

KKBENCH_CASES {
  using kernelkit::ladder::elementwise::kSteps;
  constexpr double kF32 = 1e-6, kF16 = 0x1.0p-10, kBF16 = 0x1.0p-7;  // about one ulp
  for (int64_t n : kSizes) {
    add_engine_and_cub<float, float, float>("add", "f32", n, kernelkit::Add{}, add_ref, kF32);
    add_engine_and_cub<float, float>("relu", "f32", n, kernelkit::Relu{}, relu_ref, 0.0);
    add_engine_and_cub<__half, float>(
        "cast", "f32-f16", n, kernelkit::Cast{}, [](double x) { return x; }, 0.0);
    add_engine_and_cub<__half, __half, __half>("add", "f16", n, kernelkit::Add{}, add_ref, kF16);
    add_engine_and_cub<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(
        "add", "bf16", n, kernelkit::Add{}, add_ref, kBF16);
    add_engine_and_cub<__nv_bfloat16, __nv_bfloat16>("gelu", "bf16", n, kernelkit::GeluErf{},
                                                     gelu_ref, kBF16, false);
    add_engine_and_cub<float, float, float, float>(
        "fma", "f32", n, kernelkit::Fma{},
        [](double a, double b, double c) { return std::fma(a, b, c); }, kF32, false);
    add_engine_and_cub<float, float>("sigmoid", "f32", n, kernelkit::Sigmoid{}, sigmoid_ref, 1e-5,
                                     false);

    // The ladder steps before the engine (the engine's own rows are the kernelkit ones).
    for (const auto& step : kSteps) {
      const std::string name = step.name;
      if (name.rfind("v2", 0) == 0) continue;
      const std::string tail = "/ladder." + name + "/f32/" + kkbench::dims(n);
      const auto add = step.add;
      const auto relu = step.relu;
      const auto sigmoid = step.sigmoid;
      add_ew_case<float, float, float>(
          "elementwise.add" + tail, n,
          [add](cudaStream_t s, int64_t m, float* o, const float* a, const float* b) {
            return add(kernelkit::Add{}, m, o, a, b, s);
          },
          add_ref, kF32);
      add_ew_case<float, float>(
          "elementwise.relu" + tail, n,
          [relu](cudaStream_t s, int64_t m, float* o, const float* a) {
            return relu(kernelkit::Relu{}, m, o, a, s);
          },
          relu_ref, 0.0);
      add_ew_case<float, float>(
          "elementwise.sigmoid" + tail, n,
          [sigmoid](cudaStream_t s, int64_t m, float* o, const float* a) {
            return sigmoid(kernelkit::Sigmoid{}, m, o, a, s);
          },
          sigmoid_ref, 1e-5);
    }
  }
}

}  // namespace
