// SPDX-License-Identifier: Apache-2.0
/// @file
/// The one place a run-time value becomes a template argument: dispatch<V0, V1, ...>(v, f)
/// calls f(std::integral_constant<decltype(Vk), Vk>{}) for the Vk equal to v and returns its
/// result; a v that is none of them returns cudaErrorInvalidValue (a plan never asks for
/// one). Works for int, bool and enum values alike; launch_<op> functions use it, e.g.
///   return dispatch<1, 2, 4, 8, 16, 32>(plan.width, [&](auto w) {
///     return launch(row_kernel<decltype(w)::value, ...>, plan.shape, stream, ...);
///   });
#pragma once

#include <cuda_runtime.h>

#include <type_traits>
#include <utility>

#include "kernelkit/core/math.cuh"

namespace kernelkit {

/// Calls f(std::integral_constant<decltype(Vk), Vk>{}) for the Vk among Vs equal to v and
/// returns its result; cudaErrorInvalidValue when v is none of them (see the file comment).
template <auto... Vs, typename V, typename F>
cudaError_t dispatch(V v, F&& f) {
  cudaError_t result = cudaErrorInvalidValue;
  (void)((v == Vs ? (result = f(std::integral_constant<decltype(Vs), Vs>{}), true) : false) || ...);
  return result;
}

/// dispatch over the powers of two Lo, 2 Lo, ..., Hi.
template <int Lo, int Hi, typename F>
cudaError_t dispatch_pow2(int v, F&& f) {
  static_assert(is_pow2(Lo) && Lo <= Hi, "powers of two from Lo to Hi");
  if (v == Lo) return f(std::integral_constant<int, Lo>{});
  if constexpr (Lo < Hi) {
    return dispatch_pow2<Lo * 2, Hi>(v, std::forward<F>(f));
  } else {
    return cudaErrorInvalidValue;
  }
}

}  // namespace kernelkit
