// SPDX-License-Identifier: Apache-2.0
// Shared by the layer_norm ladder steps: the argument check (the library's norm_args_ok for
// NormKind::kLayer, so a step answers exactly the calls the library answers) and the
// per-element epilogue. Every step computes, per row r of a rows x cols f32 matrix,
//   mean_r = sum_c x[r][c] / cols,  var_r = sum_c (x[r][c] - mean_r)^2 / cols (biased),
//   y[r][c] = (x[r][c] - mean_r) * rsqrt(var_r + eps) * weight[c] + bias[c],
// with weight and bias optional (null: no scale / no shift) and mean / rstd saved where
// non-null, as kernelkit::layer_norm does. y may be exactly x (in place).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/norm/norm.cuh"

namespace kernelkit::ladder::layer_norm {

// The library's check of a layer_norm call (sizes, eps, null and misaligned pointers,
// overlaps other than y == x).
inline bool args_ok(const float* x, const float* weight, const float* bias, const float* y,
                    const float* mean, const float* rstd, int64_t rows, int64_t cols, float eps) {
  const kernelkit::detail::NormArgs<float, float> a{x,
                                                    nullptr,
                                                    weight,
                                                    bias,
                                                    const_cast<float*>(y),
                                                    nullptr,
                                                    const_cast<float*>(mean),
                                                    const_cast<float*>(rstd),
                                                    rows,
                                                    cols,
                                                    eps};
  return kernelkit::norm_args_ok(NormKind::kLayer, a);
}

// One output element: (v - mean) * rstd, scaled by weight[c] and shifted by bias[c] where
// they are given.
__device__ __forceinline__ float affine(float v, float mean, float rstd, const float* weight,
                                        const float* bias, int64_t c) {
  float out = (v - mean) * rstd;
  if (weight != nullptr) out *= weight[c];
  if (bias != nullptr) out += bias[c];
  return out;
}

}  // namespace kernelkit::ladder::layer_norm
