// SPDX-License-Identifier: Apache-2.0
// DType -> C++ element type, through kernelkit's one runtime-to-template helper.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/dispatch.cuh"
#include "ops.h"

namespace kkpy {

template <typename T>
struct Tag {
  using type = T;
};

template <DType>
struct ctype;
template <>
struct ctype<DType::kF32> {
  using type = float;
};
template <>
struct ctype<DType::kF16> {
  using type = __half;
};
template <>
struct ctype<DType::kBF16> {
  using type = __nv_bfloat16;
};

// f(Tag<T>{}) for the float type T named by t; cudaErrorInvalidValue for any other t.
template <typename F>
cudaError_t with_float_type(DType t, F&& f) {
  return kernelkit::dispatch<DType::kF32, DType::kF16, DType::kBF16>(
      t, [&](auto d) { return f(Tag<typename ctype<decltype(d)::value>::type>{}); });
}

}  // namespace kkpy
