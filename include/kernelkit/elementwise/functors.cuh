// SPDX-License-Identifier: Apache-2.0
/// @file
/// Functors for the elementwise engine (elementwise.cuh). Each takes elements in their
/// storage type, computes in compute_t (float for __half / __nv_bfloat16, the type itself
/// otherwise; with mixed inputs the common compute type), and returns a compute-type value
/// that the engine rounds to the output type. Functors with a paired hardware path define
/// Apply2 for __half and __nv_bfloat16 (two elements per instruction).
///
/// NaN propagates as in PyTorch: relu(NaN) = NaN, and every formula below returns NaN for
/// a NaN input. Infinities follow the formula as written (e.g. sigmoid(-inf) = 0,
/// silu(-inf) = -inf / inf = NaN, as PyTorch's x / (1 + exp(-x))).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "kernelkit/core/math.cuh"
#include "kernelkit/core/types.cuh"

namespace kernelkit::detail {

// The type arithmetic on a mix of storage types is done in.
template <typename... Ts>
using ew_common_compute_t = std::common_type_t<compute_t<Ts>...>;

// The paired vector type of __half / __nv_bfloat16.
template <typename T>
struct ew_vec2;
template <>
struct ew_vec2<__half> {
  using type = __half2;
};
template <>
struct ew_vec2<__nv_bfloat16> {
  using type = __nv_bfloat162;
};
template <typename T>
using ew_vec2_t = typename ew_vec2<T>::type;

template <typename T>
__device__ __forceinline__ ew_vec2_t<T> ew_load2(const T* p) {
  return *reinterpret_cast<const ew_vec2_t<T>*>(p);
}
template <typename T>
__device__ __forceinline__ void ew_store2(T* p, ew_vec2_t<T> v) {
  *reinterpret_cast<ew_vec2_t<T>*>(p) = v;
}

// Enables a member template for T = __half / __nv_bfloat16 only.
template <typename T>
using ew_if_half_like = std::enable_if_t<is_half_like_v<T>, int>;

// Float and double overloads of the math the functors use (accurate library versions).
__device__ __forceinline__ float ew_exp(float x) {
  return expf(x);
}
__device__ __forceinline__ double ew_exp(double x) {
  return exp(x);
}
__device__ __forceinline__ float ew_tanh(float x) {
  return tanhf(x);
}
__device__ __forceinline__ double ew_tanh(double x) {
  return tanh(x);
}
__device__ __forceinline__ float ew_erf(float x) {
  return erff(x);
}
__device__ __forceinline__ double ew_erf(double x) {
  return erf(x);
}

// gelu(x) = x * Phi(x) in float, accurate in relative terms for every x (no cancellation
// in the negative tail, where 1 + erf(x / sqrt 2) loses every digit below x ~ -4).
//   Phi(-|x|) = erfc(z) / 2, z = |x| / sqrt 2;  erfc(z) = t exp(P(t) - z^2), t = 1 / (1 + z / 2),
// with P of degree 9 fitted to ln(erfc(z) / t) + z^2 over t in (0, 1] (weighted least squares
// in long double; max error of P 1e-7). Evaluated as Phi(-|x|) = t * e * e, e = 2^y,
// y = log2(e) (P(t) - z^2 - ln 2) / 2 (the coefficients below are the fit's times log2(e), so
// the exponential is one ex2): e stays a normal float down to Phi(-|x|) ~ 2^-252, so the
// product rounds into the subnormal range correctly, and the flush-to-zero MUFU forms (core
// math.cuh) give the same values as the IEEE ones wherever the result is not 0 (t = 0 only
// past |x| ~ 2^127, where the result is x or -0). Relative error below 1e-5 for every float x
// (7.5e-6 in the far tail, from the rounding of z^2; ~1e-7 for |x| < 3): every bf16 input gives
// the correctly rounded bf16 result, every f16 input one within an ulp of it (checked
// exhaustively on the host against erfc in double; GPU test GeluErfEveryHalfAndBf16Value).
// Used for half / bf16 inputs: 2 MUFU and 17 FP32 instructions an element (erff: ~29, 12 of
// them on the half-rate ALU pipe); the H200 runs bf16 gelu issue-bound (bench/NOTES.md).

__device__ __forceinline__ float ew_gelu_erfc_form(float x) {
  const float a = fabsf(x);
  const float t = rcp_approx_ftz(fmaf(a, 0.353553390593273762f, 1.0f));  // 1 / (1 + z / 2)
  // log2(e) (P(t) - ln 2) / 2, Horner.
  float p = 0.121735029f;
  p = fmaf(p, t, -0.586689651f);
  p = fmaf(p, t, 1.06272876f);
  p = fmaf(p, t, -0.808703125f);
  p = fmaf(p, t, 0.195739433f);
  p = fmaf(p, t, -0.132703856f);
  p = fmaf(p, t, 0.0695294142f);
  p = fmaf(p, t, 0.269874156f);
  p = fmaf(p, t, 0.721363842f);
  p = fmaf(p, t, -1.4128741f);
  // e = 2^y; log2(e) z^2 / 2 = log2(e) x^2 / 4
  const float e = ex2_approx_ftz(fmaf(a * -0.360673755f, a, p));
  const float q = (t * e) * e;  // Phi(-|x|) = t exp(P(t) - z^2) / 2
  return x * (x < 0.0f ? q : 1.0f - q);
}

}  // namespace kernelkit::detail

namespace kernelkit {

// ---- unary -------------------------------------------------------------------------

/// x, converted to the output type by the engine (also the cast functor).
struct Identity {
  /// x converted to its compute type.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    return convert<compute_t<T>>(x);
  }
};

/// Conversion between f32, f16, bf16 and f64 (and integers): the engine converts the input
/// to the output type through convert (round to nearest even, overflow to +-inf). Paired
/// float -> half / bf16 conversions use the two-wide hardware instruction.
struct Cast {
  /// x unchanged; the engine converts it to the output type.
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const {
    return x;
  }
  /// Two floats to two __half with one paired conversion (round to nearest even).
  __device__ __forceinline__ void Apply2(__half* out, const float* in) const {
    detail::ew_store2(out, __float22half2_rn(make_float2(in[0], in[1])));
  }
  /// Two floats to two __nv_bfloat16 with one paired conversion (round to nearest even).
  __device__ __forceinline__ void Apply2(__nv_bfloat16* out, const float* in) const {
    detail::ew_store2(out, __float22bfloat162_rn(make_float2(in[0], in[1])));
  }
};

/// alpha * x.
template <typename S = float>
struct Scale {
  S alpha;  ///< the scale
  /// alpha * x in the common compute type of T and S.
  template <typename T>
  __device__ __forceinline__ detail::ew_common_compute_t<T, S> operator()(T x) const {
    using C = detail::ew_common_compute_t<T, S>;
    return convert<C>(alpha) * convert<C>(x);
  }
};

/// max(x, 0), NaN for NaN.
struct Relu {
  /// max(x, 0) in the compute type; NaN for NaN.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    const auto c = convert<compute_t<T>>(x);
    return c < compute_t<T>(0) ? compute_t<T>(0) : c;  // NaN < 0 is false: NaN passes
  }
  /// Two __half or two __nv_bfloat16 elements at once: max(x, 0) with __hmax2_nan (NaN passes).
  template <typename T, detail::ew_if_half_like<T> = 0>
  __device__ __forceinline__ void Apply2(T* out, const T* in) const {
    const auto zero = detail::ew_vec2_t<T>(convert<T>(0.f), convert<T>(0.f));
    detail::ew_store2(out, __hmax2_nan(detail::ew_load2(in), zero));
  }
};

/// 1 / (1 + exp(-x)).
struct Sigmoid {
  /// 1 / (1 + exp(-x)) in the compute type.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    using C = compute_t<T>;
    return C(1) / (C(1) + detail::ew_exp(-convert<C>(x)));
  }
};

/// x * sigmoid(x), computed as x / (1 + exp(-x)).
struct Silu {
  /// x / (1 + exp(-x)) in the compute type.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    using C = compute_t<T>;
    const C c = convert<C>(x);
    return c / (C(1) + detail::ew_exp(-c));
  }
};

/// tanh(x) (tanhf / tanh).
struct Tanh {
  /// tanh(x) in the compute type.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    return detail::ew_tanh(convert<compute_t<T>>(x));
  }
};

/// exp(x) (expf / exp).
struct Exp {
  /// exp(x) in the compute type.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    return detail::ew_exp(convert<compute_t<T>>(x));
  }
};

/// gelu, erf form (PyTorch's default): 0.5 * x * (1 + erf(x / sqrt(2))). float and double
/// inputs evaluate that formula with erff / erf; half and bf16 inputs go through the erfc
/// form (detail::ew_gelu_erfc_form: cheaper, and accurate in the negative tail).
/// 4 packs per thread: ~25 instructions per element, 8 elements per bf16 pack; staged
/// through shared memory so that all 4 packs' loads are in flight before the math (bf16
/// 2^28 on the H100: 0.963 of the copy with plain loads, 0.985 staged; bench/NOTES.md).
struct GeluErf {
  static constexpr int kPacksPerThread = 4;   ///< 16-byte packs a thread handles (see unary())
  static constexpr bool kStageInputs = true;  ///< the packs are staged through shared memory
  /// gelu(x), erf form, in the compute type.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    using C = compute_t<T>;
    const C c = convert<C>(x);
    if constexpr (is_half_like_v<T>) {
      return detail::ew_gelu_erfc_form(c);
    } else {
      return C(0.5) * c * (C(1) + detail::ew_erf(c * C(0.70710678118654752440)));
    }
  }
};

/// gelu, tanh form (approximate='tanh'): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
struct GeluTanh {
  static constexpr int kPacksPerThread = 4;  ///< 16-byte packs a thread handles (see unary())
  /// gelu(x), tanh form, in the compute type.
  template <typename T>
  __device__ __forceinline__ compute_t<T> operator()(T x) const {
    using C = compute_t<T>;
    const C c = convert<C>(x);
    const C inner = C(0.79788456080286535588) * (c + C(0.044715) * c * c * c);
    return C(0.5) * c * (C(1) + detail::ew_tanh(inner));
  }
};

// ---- binary ------------------------------------------------------------------------

/// a + b in the common compute type of the inputs.
struct Add {
  /// a + b in the common compute type of A and B.
  template <typename A, typename B>
  __device__ __forceinline__ detail::ew_common_compute_t<A, B> operator()(A a, B b) const {
    using C = detail::ew_common_compute_t<A, B>;
    return convert<C>(a) + convert<C>(b);
  }
  /// Two __half or two __nv_bfloat16 elements at once: a + b with __hadd2.
  template <typename T, detail::ew_if_half_like<T> = 0>
  __device__ __forceinline__ void Apply2(T* out, const T* a, const T* b) const {
    detail::ew_store2(out, __hadd2(detail::ew_load2(a), detail::ew_load2(b)));
  }
};

/// a - b in the common compute type of the inputs.
struct Sub {
  /// a - b in the common compute type of A and B.
  template <typename A, typename B>
  __device__ __forceinline__ detail::ew_common_compute_t<A, B> operator()(A a, B b) const {
    using C = detail::ew_common_compute_t<A, B>;
    return convert<C>(a) - convert<C>(b);
  }
  /// Two __half or two __nv_bfloat16 elements at once: a - b with __hsub2.
  template <typename T, detail::ew_if_half_like<T> = 0>
  __device__ __forceinline__ void Apply2(T* out, const T* a, const T* b) const {
    detail::ew_store2(out, __hsub2(detail::ew_load2(a), detail::ew_load2(b)));
  }
};

/// a * b in the common compute type of the inputs.
struct Mul {
  /// a * b in the common compute type of A and B.
  template <typename A, typename B>
  __device__ __forceinline__ detail::ew_common_compute_t<A, B> operator()(A a, B b) const {
    using C = detail::ew_common_compute_t<A, B>;
    return convert<C>(a) * convert<C>(b);
  }
  /// Two __half or two __nv_bfloat16 elements at once: a * b with __hmul2.
  template <typename T, detail::ew_if_half_like<T> = 0>
  __device__ __forceinline__ void Apply2(T* out, const T* a, const T* b) const {
    detail::ew_store2(out, __hmul2(detail::ew_load2(a), detail::ew_load2(b)));
  }
};

/// a / b (IEEE division in the compute type; half and bf16 divide in float).
struct Div {
  /// a / b in the common compute type of A and B.
  template <typename A, typename B>
  __device__ __forceinline__ detail::ew_common_compute_t<A, B> operator()(A a, B b) const {
    using C = detail::ew_common_compute_t<A, B>;
    return convert<C>(a) / convert<C>(b);
  }
};

/// alpha * a + beta * b.
template <typename S = float>
struct Axpby {
  /// the scale of a (beta: of b)
  S alpha, beta;  ///< the scale of b
  /// alpha * a + beta * b in the common compute type of A, B and S.
  template <typename A, typename B>
  __device__ __forceinline__ detail::ew_common_compute_t<A, B, S> operator()(A a, B b) const {
    using C = detail::ew_common_compute_t<A, B, S>;
    return convert<C>(alpha) * convert<C>(a) + convert<C>(beta) * convert<C>(b);
  }
};

// ---- ternary -----------------------------------------------------------------------

/// a * b + c with one rounding (fused multiply-add in the compute type; the paired half /
/// bf16 path is the hardware's fused __hfma2, also one rounding; bf16 before sm_80 rounds
/// the float fma to bf16, as the scalar path does).
struct Fma {
  /// a * b + c, one rounding (fma for floating compute types; a * b + c for integers).
  template <typename A, typename B, typename C>
  __device__ __forceinline__ detail::ew_common_compute_t<A, B, C> operator()(A a, B b, C c) const {
    using T = detail::ew_common_compute_t<A, B, C>;
    if constexpr (std::is_floating_point_v<T>) {
      return fma(convert<T>(a), convert<T>(b), convert<T>(c));
    } else {
      return convert<T>(a) * convert<T>(b) + convert<T>(c);
    }
  }
  /// Two __half or two __nv_bfloat16 elements at once: __hfma2 (bf16 before sm_80: fmaf in float,
  /// rounded to bf16).
  template <typename T, detail::ew_if_half_like<T> = 0>
  __device__ __forceinline__ void Apply2(T* out, const T* a, const T* b, const T* c) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      // No bf16 arithmetic before sm_80: fmaf in float (exact product, one float rounding),
      // then rounded to bf16.
      for (int j = 0; j < 2; ++j)
        out[j] = convert<T>(fmaf(convert<float>(a[j]), convert<float>(b[j]), convert<float>(c[j])));
    } else
#endif
    {
      detail::ew_store2(out,
                        __hfma2(detail::ew_load2(a), detail::ew_load2(b), detail::ew_load2(c)));
    }
  }
};

}  // namespace kernelkit
