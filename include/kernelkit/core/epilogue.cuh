// SPDX-License-Identifier: Apache-2.0
/// @file
/// The alpha/beta epilogue of the BLAS-style ops (gemv, sgemm and their ladders):
/// y = alpha * acc + beta * y, where y is never read when beta == 0 (a NaN in y is then
/// overwritten, as BLAS does).
#pragma once

#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"

namespace kernelkit {

/// alpha * acc + beta * y[0]; y is read only when beta != 0.
template <typename T>
__device__ __forceinline__ T axpby(T alpha, T acc, T beta, const T* y) {
  return beta == T(0) ? alpha * acc : alpha * acc + beta * *y;
}

/// The same for a pack of N consecutive results; y (aligned to the pack) is read with one
/// wide load, only when beta != 0.
template <int N, typename T>
__device__ __forceinline__ Pack<T, N> axpby(T alpha, const Pack<T, N>& acc, T beta, const T* y) {
  Pack<T, N> out;
  if (beta == T(0)) {
#pragma unroll
    for (int k = 0; k < N; ++k)
      out.elem[k] = alpha * acc.elem[k];
  } else {
    const Pack<T, N> old = load_pack<N>(y, 0);
#pragma unroll
    for (int k = 0; k < N; ++k)
      out.elem[k] = alpha * acc.elem[k] + beta * old.elem[k];
  }
  return out;
}

}  // namespace kernelkit
