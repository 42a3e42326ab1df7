// SPDX-License-Identifier: Apache-2.0
// The elementwise engine with kernelkit's built-in functors: relu, gelu (erf and tanh
// forms), sigmoid, add, mul on f32 / f16 / bf16, and cast between any two of those.
#include "dtype.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"

namespace kkpy {

cudaError_t unary(Unary f, DType t, int64_t n, void* out, const void* a, cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    return kernelkit::dispatch<Unary::kRelu, Unary::kGelu, Unary::kGeluTanh, Unary::kSigmoid>(
        f, [&](auto u) {
          constexpr Unary kF = decltype(u)::value;
          if constexpr (kF == Unary::kRelu) return kernelkit::unary(kernelkit::Relu{}, n, y, x, s);
          if constexpr (kF == Unary::kGelu)
            return kernelkit::unary(kernelkit::GeluErf{}, n, y, x, s);
          if constexpr (kF == Unary::kGeluTanh)
            return kernelkit::unary(kernelkit::GeluTanh{}, n, y, x, s);
          if constexpr (kF == Unary::kSigmoid)
            return kernelkit::unary(kernelkit::Sigmoid{}, n, y, x, s);
        });
  });
}

cudaError_t binary(Binary f, DType t, int64_t n, void* out, const void* a, const void* b,
                   cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = static_cast<T*>(out);
    const T* x0 = static_cast<const T*>(a);
    const T* x1 = static_cast<const T*>(b);
    return kernelkit::dispatch<Binary::kAdd, Binary::kMul>(f, [&](auto o) {
      if constexpr (decltype(o)::value == Binary::kAdd)
        return kernelkit::binary(kernelkit::Add{}, n, y, x0, x1, s);
      if constexpr (decltype(o)::value == Binary::kMul)
        return kernelkit::binary(kernelkit::Mul{}, n, y, x0, x1, s);
    });
  });
}

cudaError_t cast(DType from, DType to, int64_t n, void* out, const void* a, cudaStream_t s) {
  return with_float_type(from, [&](auto in_tag) {
    using A = typename decltype(in_tag)::type;
    return with_float_type(to, [&](auto out_tag) {
      using R = typename decltype(out_tag)::type;
      return kernelkit::unary(kernelkit::Cast{}, n, static_cast<R*>(out), static_cast<const A*>(a),
                              s);
    });
  });
}

}  // namespace kkpy
