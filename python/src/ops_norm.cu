// SPDX-License-Identifier: Apache-2.0
// rms_norm, layer_norm, add_rms_norm and their backward passes for f32, f16, bf16 rows, with
// a weight (and bias) of x's type or float32, or none: five (x, weight) type pairs per op.
//
// Workspaces (ops.h): the *_backward_workspace_bytes are kernelkit's figures; the Python
// layer allocates that many uninitialized bytes with the caller's framework when dweight (or
// dbias) is wanted (none otherwise).
#include "dtype.cuh"
#include "kernelkit/norm/norm.cuh"

namespace kkpy {
namespace {

// f(Tag<T>{}, Tag<W>{}) for x's type T named by t and the weight's type W named by w (x's
// type or float32); cudaErrorInvalidValue for any other pair.
template <typename F>
cudaError_t with_norm_types(DType t, DType w, F&& f) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (w == DType::kF32) return f(tag, Tag<float>{});
    if constexpr (!std::is_same_v<T, float>) {
      if (w == t) return f(tag, tag);
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace

cudaError_t rms_norm(DType t, DType w, const void* x, const void* weight, void* y, float* rstd,
                     int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  return with_norm_types(t, w, [&](auto tt, auto wt) {
    using T = typename decltype(tt)::type;
    using W = typename decltype(wt)::type;
    return kernelkit::rms_norm(static_cast<const T*>(x), static_cast<const W*>(weight),
                               static_cast<T*>(y), rstd, rows, cols, eps, s);
  });
}

cudaError_t layer_norm(DType t, DType w, const void* x, const void* weight, const void* bias,
                       void* y, float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                       cudaStream_t s) {
  return with_norm_types(t, w, [&](auto tt, auto wt) {
    using T = typename decltype(tt)::type;
    using W = typename decltype(wt)::type;
    return kernelkit::layer_norm(static_cast<const T*>(x), static_cast<const W*>(weight),
                                 static_cast<const W*>(bias), static_cast<T*>(y), mean, rstd, rows,
                                 cols, eps, s);
  });
}

cudaError_t add_rms_norm(DType t, DType w, const void* x, const void* residual, const void* weight,
                         void* y, void* sum, float* rstd, int64_t rows, int64_t cols, float eps,
                         cudaStream_t s) {
  return with_norm_types(t, w, [&](auto tt, auto wt) {
    using T = typename decltype(tt)::type;
    using W = typename decltype(wt)::type;
    return kernelkit::add_rms_norm(static_cast<const T*>(x), static_cast<const T*>(residual),
                                   static_cast<const W*>(weight), static_cast<T*>(y),
                                   static_cast<T*>(sum), rstd, rows, cols, eps, s);
  });
}

size_t rms_norm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  return kernelkit::rms_norm_backward_workspace_bytes(rows, cols);
}

cudaError_t rms_norm_backward(DType t, DType w, const void* dy, const void* x, const void* weight,
                              const float* rstd, void* dx, void* dweight, int64_t rows,
                              int64_t cols, void* workspace, size_t workspace_bytes,
                              cudaStream_t s) {
  return with_norm_types(t, w, [&](auto tt, auto wt) {
    using T = typename decltype(tt)::type;
    using W = typename decltype(wt)::type;
    return kernelkit::rms_norm_backward(
        static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<const W*>(weight), rstd,
        static_cast<T*>(dx), static_cast<W*>(dweight), rows, cols, workspace, workspace_bytes, s);
  });
}

size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  return kernelkit::layer_norm_backward_workspace_bytes(rows, cols);
}

cudaError_t layer_norm_backward(DType t, DType w, const void* dy, const void* x, const void* weight,
                                const float* mean, const float* rstd, void* dx, void* dweight,
                                void* dbias, int64_t rows, int64_t cols, void* workspace,
                                size_t workspace_bytes, cudaStream_t s) {
  return with_norm_types(t, w, [&](auto tt, auto wt) {
    using T = typename decltype(tt)::type;
    using W = typename decltype(wt)::type;
    return kernelkit::layer_norm_backward(
        static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<const W*>(weight), mean,
        rstd, static_cast<T*>(dx), static_cast<W*>(dweight), static_cast<W*>(dbias), rows, cols,
        workspace, workspace_bytes, s);
  });
}

size_t add_rms_norm_backward_workspace_bytes(int64_t rows, int64_t cols) {
  return kernelkit::add_rms_norm_backward_workspace_bytes(rows, cols);
}

cudaError_t add_rms_norm_backward(DType t, DType w, const void* dy, const void* sum,
                                  const void* dsum, const void* weight, const float* rstd, void* dx,
                                  void* dweight, int64_t rows, int64_t cols, void* workspace,
                                  size_t workspace_bytes, cudaStream_t s) {
  return with_norm_types(t, w, [&](auto tt, auto wt) {
    using T = typename decltype(tt)::type;
    using W = typename decltype(wt)::type;
    return kernelkit::add_rms_norm_backward(
        static_cast<const T*>(sum), static_cast<const T*>(dy), static_cast<const T*>(dsum),
        static_cast<const W*>(weight), rstd, static_cast<T*>(dx), static_cast<W*>(dweight), rows,
        cols, workspace, workspace_bytes, s);
  });
}

}  // namespace kkpy
