// SPDX-License-Identifier: Apache-2.0
// elementwise.add (f32, f16, bf16), elementwise.cast (f32 -> bf16), each against CUB's
// DeviceTransform on the same functor and data, and elementwise.gelu (bf16), over the listed
// sizes of issue 14 and generated ones (bench/shapes.h; "+o": every operand starts o elements
// past an aligned address). bytes = every input read once + the output written once. Each
// case is verified once at 2048 sampled indices against a float64 reference rounded to the
// output type.
#include <cub/device/device_transform.cuh>

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "shapes.h"
#include "kernelkit/elementwise/functors.cuh"

namespace {

// The adapter: every call this file makes into kernelkit goes through the function(s) below,
// so an API change (e.g. a workspace overload) is one line here (bench/NOTES.md "Timing").
template <typename T>
cudaError_t kk_add(int64_t n, T* out, const T* a, const T* b, cudaStream_t s) {
  return kernelkit::binary(kernelkit::Add{}, n, out, a, b, s);
}
template <typename R, typename A>
cudaError_t kk_cast(int64_t n, R* out, const A* in, cudaStream_t s) {
  return kernelkit::unary(kernelkit::Cast{}, n, out, in, s);
}
template <typename T>
cudaError_t kk_gelu(int64_t n, T* out, const T* in, cudaStream_t s) {
  return kernelkit::unary(kernelkit::GeluErf{}, n, out, in, s);
}

constexpr int64_t kSizes[] = {65536, 1048576, 4194305, 16777216, 67108864, 268435456};

using kkbench::FlatShape;

// Registers one case. op(stream, n, out, in...) -> cudaError_t launches it; ref(double...)
// is the float64 reference; the result must be within rtol of ref rounded to R.
template <typename R, typename... Args, typename Op, typename Ref, size_t... I>
void add_ew_case_impl(const std::string& name, FlatShape sh, Op op, Ref ref, double rtol,
                      std::index_sequence<I...>) {
  const int64_t n = sh.n, off = sh.offset;
  const kkbench::Traffic traffic{double(n) * double((sizeof(Args) + ... + 0)),
                                 double(n) * double(sizeof(R))};
  kkbench::add_case(name, traffic, 0, [=](cudaStream_t s) -> kkbench::Launch {
    // Inputs in [-2, 2): every functor here is defined and finite there.
    auto ins = std::make_tuple(kkbench::random_array<Args>(size_t(n + off), 101 + I, -2.0, 2.0)...);
    auto out = kkbench::poisoned_array<R>(size_t(n + off));
    auto launch = [ins, out, n, off, op](cudaStream_t st) {
      BENCH_CUDA(op(st, n, out->p + off, static_cast<const Args*>(std::get<I>(ins)->p + off)...));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    const auto idx = kkbench::sample_indices(size_t(n), 2048);
    const auto got = kkbench::to_doubles(kkbench::gather(out->p + off, idx));
    const auto in =
        std::make_tuple(kkbench::to_doubles(kkbench::gather(std::get<I>(ins)->p + off, idx))...);
    std::vector<double> want(idx.size());
    for (size_t j = 0; j < idx.size(); ++j)
      want[j] = kernelkit::convert<double>(kernelkit::convert<R>(ref(std::get<I>(in)[j]...)));
    kkbench::verify(name, got, want, rtol);
    return launch;
  });
}

template <typename R, typename... Args, typename Op, typename Ref>
void add_ew_case(const std::string& name, FlatShape sh, Op op, Ref ref, double rtol) {
  add_ew_case_impl<R, Args...>(name, sh, op, ref, rtol, std::index_sequence_for<Args...>{});
}

// CUB takes 32-bit offsets when n fits, as the engine indexes in 32 bits there.
template <typename F, typename R, typename... Args>
cudaError_t cub_transform(F f, cudaStream_t s, int64_t n, R* out, const Args*... in) {
  if (n <= INT_MAX) {
    return cub::DeviceTransform::Transform(::cuda::std::make_tuple(in...), out, static_cast<int>(n),
                                           f, s);
  }
  return cub::DeviceTransform::Transform(::cuda::std::make_tuple(in...), out, n, f, s);
}

double add_ref(double a, double b) {
  return a + b;
}
double cast_ref(double x) {
  return x;
}
double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2));
}

template <typename T>
double ulp_tol() {  // about one unit in the last place
  if constexpr (std::is_same_v<T, float>) return 1e-6;
  if constexpr (std::is_same_v<T, __half>) return 0x1.0p-10;
  return 0x1.0p-7;
}

template <typename T>
void add_add_cases(FlatShape sh) {
  const std::string shape = sh.name();
  add_ew_case<T, T, T>(
      kkbench::case_name<T>("elementwise.add", "kernelkit", shape), sh,
      [](cudaStream_t s, int64_t m, T* o, const T* a, const T* b) { return kk_add(m, o, a, b, s); },
      add_ref, ulp_tol<T>());
  add_ew_case<T, T, T>(
      kkbench::case_name<T>("elementwise.add", "cub", shape), sh,
      [](cudaStream_t s, int64_t m, T* o, const T* a, const T* b) {
        return cub_transform(kernelkit::Add{}, s, m, o, a, b);
      },
      add_ref, ulp_tol<T>());
}

using bf16 = __nv_bfloat16;

void add_cast_cases(FlatShape sh) {
  const std::string tail = "/" + std::string(kernelkit::type_name<float>()) + "-" +
                           kernelkit::type_name<bf16>() + "/" + sh.name();
  add_ew_case<bf16, float>(
      "elementwise.cast/kernelkit" + tail, sh,
      [](cudaStream_t s, int64_t m, bf16* o, const float* a) { return kk_cast(m, o, a, s); },
      cast_ref, 0.0);
  add_ew_case<bf16, float>(
      "elementwise.cast/cub" + tail, sh,
      [](cudaStream_t s, int64_t m, bf16* o, const float* a) {
        return cub_transform(kernelkit::Cast{}, s, m, o, a);
      },
      cast_ref, 0.0);
}

void add_gelu_case(FlatShape sh) {
  add_ew_case<bf16, bf16>(
      kkbench::case_name<bf16>("elementwise.gelu", "kernelkit", sh.name()), sh,
      [](cudaStream_t s, int64_t m, bf16* o, const bf16* a) { return kk_gelu(m, o, a, s); },
      gelu_ref, ulp_tol<bf16>());
}

KKBENCH_CASES {
  for (int64_t n : kSizes)
    add_add_cases<float>({n, 0});
  for (int64_t n : kSizes)
    add_add_cases<__half>({n, 0});
  for (int64_t n : kSizes)
    add_add_cases<bf16>({n, 0});
  for (int64_t n : kSizes)
    add_cast_cases({n, 0});
  for (int64_t n : kSizes)
    add_gelu_case({n, 0});
}

// sizes drawn by the bytes of the widest operand
KKBENCH_GENERATED("elementwise", gen) {
  for (const FlatShape& sh : gen.flat(12, sizeof(float)))
    add_add_cases<float>(sh);
  for (const FlatShape& sh : gen.flat(12, sizeof(__half)))
    add_add_cases<__half>(sh);
  for (const FlatShape& sh : gen.flat(12, sizeof(bf16)))
    add_add_cases<bf16>(sh);
  for (const FlatShape& sh : gen.flat(12, sizeof(float)))
    add_cast_cases(sh);
  for (const FlatShape& sh : gen.flat(12, sizeof(bf16)))
    add_gelu_case(sh);
}

}  // namespace
