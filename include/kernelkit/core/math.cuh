// SPDX-License-Identifier: Apache-2.0
/// @file
/// The integer helpers of every plan and launcher: ceiling division, rounding up to a
/// multiple, and powers of two (host and device, constexpr); and the one-instruction
/// approximations of the special-function unit that kernels take for 2-byte outputs (device).
#pragma once

namespace kernelkit {

/// Ceiling division for non-negative integers (b > 0).
template <typename T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

/// a rounded up to a multiple of m (a >= 0, m > 0).
template <typename T>
__host__ __device__ constexpr T round_up(T a, T m) {
  return ceil_div(a, m) * m;
}

/// v is a power of two (1, 2, 4, ...).
template <typename T>
__host__ __device__ constexpr bool is_pow2(T v) {
  return v > 0 && (v & (v - 1)) == 0;
}

/// The smallest l with 2^l >= v (0 for v <= 1): log2 of v when v is a power of two.
template <typename T>
__host__ __device__ constexpr int ceil_log2(T v) {
  int l = 0;
  while ((T{1} << l) < v)
    ++l;
  return l;
}

/// The smallest power of two >= v (1 for v <= 1).
template <typename T>
__host__ __device__ constexpr T pow2_ceil(T v) {
  return T{1} << ceil_log2(v);
}

/// The largest power of two <= v (1 for v <= 1).
template <typename T>
__host__ __device__ constexpr T pow2_floor(T v) {
  T p = 1;
  while (p <= v / 2)
    p *= 2;
  return p;
}

/// @name MUFU approximations (one special-function instruction each, flush-to-zero)
/// rcp.approx.ftz, ex2.approx.ftz and lg2.approx.ftz: relative error near 2^-22 (lg2: absolute
/// 2^-22), subnormal inputs and results read as 0. Written as inline PTX because the CUDA
/// intrinsics without ftz (__expf, __fdividef) come out with a rescale for subnormal operands
/// around the MUFU (an FSETP and two predicated FMULs, or an FSEL and an FMUL, in the sm_90
/// SASS). 1 / 0 = inf, 2^-inf = 0, log2(0) = -inf; NaN stays NaN.
/// @{
/// 1 / x, rcp.approx.ftz.f32.
__device__ __forceinline__ float rcp_approx_ftz(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
/// 2^x, ex2.approx.ftz.f32.
__device__ __forceinline__ float ex2_approx_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
/// log2(x), lg2.approx.ftz.f32.
__device__ __forceinline__ float lg2_approx_ftz(float x) {
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
/// @}

}  // namespace kernelkit
