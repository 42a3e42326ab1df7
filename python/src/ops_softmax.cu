// SPDX-License-Identifier: Apache-2.0
// softmax / log_softmax and their backward passes for f32, f16, bf16, over rows at leading
// dimensions (the contiguous calls are ld == cols), and over the middle axis of (outer, n,
// inner) (softmax_inner): twelve instantiations each.
#include "dtype.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "kernelkit/softmax/softmax_inner.cuh"

namespace kkpy {

cudaError_t softmax(DType t, bool log, const void* in, int64_t ld_in, void* out, int64_t ld_out,
                    int64_t rows, int64_t cols, cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    return log ? kernelkit::log_softmax(x, ld_in, y, ld_out, rows, cols, s)
               : kernelkit::softmax(x, ld_in, y, ld_out, rows, cols, s);
  });
}

cudaError_t softmax_backward(DType t, bool log, const void* y, int64_t ld_y, const void* dy,
                             int64_t ld_dy, void* dx, int64_t ld_dx, int64_t rows, int64_t cols,
                             cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* yt = static_cast<const T*>(y);
    const T* g = static_cast<const T*>(dy);
    T* d = static_cast<T*>(dx);
    return log ? kernelkit::log_softmax_backward(yt, ld_y, g, ld_dy, d, ld_dx, rows, cols, s)
               : kernelkit::softmax_backward(yt, ld_y, g, ld_dy, d, ld_dx, rows, cols, s);
  });
}

size_t softmax_inner_workspace_bytes(DType t, int64_t outer, int64_t n, int64_t inner) {
  size_t bytes = 0;
  (void)with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bytes = kernelkit::softmax_inner_workspace_bytes<T>(outer, n, inner);
    return cudaSuccess;
  });
  return bytes;
}

cudaError_t softmax_inner(DType t, bool log, const void* in, void* out, int64_t outer, int64_t n,
                          int64_t inner, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    return log ? kernelkit::log_softmax_inner(x, y, outer, n, inner, workspace, workspace_bytes, s)
               : kernelkit::softmax_inner(x, y, outer, n, inner, workspace, workspace_bytes, s);
  });
}

cudaError_t softmax_inner_backward(DType t, bool log, const void* y, const void* dy, void* dx,
                                   int64_t outer, int64_t n, int64_t inner, void* workspace,
                                   size_t workspace_bytes, cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* yt = static_cast<const T*>(y);
    const T* g = static_cast<const T*>(dy);
    T* d = static_cast<T*>(dx);
    return log ? kernelkit::log_softmax_inner_backward(yt, g, d, outer, n, inner, workspace,
                                                       workspace_bytes, s)
               : kernelkit::softmax_inner_backward(yt, g, d, outer, n, inner, workspace,
                                                   workspace_bytes, s);
  });
}

}  // namespace kkpy
