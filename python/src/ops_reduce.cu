// Row-wise and device-wide sum / max / min of f32, f16, bf16 inputs, accumulated in and
// written as float: 18 instantiations.
//
// Workspaces (ops.h): the device-wide reduction takes one; the row reductions take none yet.
// When kernelkit's row_sum / row_max / row_min gain their workspace overloads
// (`..., out, workspace, workspace_bytes, stream)` with row_reduce_workspace_bytes<T, Acc>),
// the lines marked "overloads:" below change, nothing else.
#include "dtype.cuh"
#include "kernelkit/reduce/device_reduce.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kkpy {

size_t row_reduce_workspace_bytes(DType t, int64_t rows, int64_t cols) {
  (void)t, (void)rows, (void)cols;
  return 0;  // overloads: kernelkit::row_reduce_workspace_bytes<T, float>(rows, cols) for t's T
}

cudaError_t row_reduce(DType t, Reduce op, const void* in, int64_t rows, int64_t cols, float* out,
                       void* workspace, size_t workspace_bytes, cudaStream_t s) {
  (void)workspace, (void)workspace_bytes;  // overloads: passed before s in the three calls
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in);
    return kernelkit::dispatch<Reduce::kSum, Reduce::kMax, Reduce::kMin>(op, [&](auto o) {
      if constexpr (decltype(o)::value == Reduce::kSum)
        return kernelkit::row_sum(x, rows, cols, out, s);
      if constexpr (decltype(o)::value == Reduce::kMax)
        return kernelkit::row_max(x, rows, cols, out, s);
      if constexpr (decltype(o)::value == Reduce::kMin)
        return kernelkit::row_min(x, rows, cols, out, s);
    });
  });
}

size_t reduce_workspace_bytes(DType t, int64_t n) {
  size_t bytes = 0;
  (void)with_float_type(t, [&](auto tag) {
    bytes = kernelkit::reduce_workspace_bytes<typename decltype(tag)::type, float>(n);
    return cudaSuccess;
  });
  return bytes;
}

cudaError_t reduce(DType t, Reduce op, const void* in, int64_t n, float* out, void* workspace,
                   size_t workspace_bytes, cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in);
    return kernelkit::dispatch<Reduce::kSum, Reduce::kMax, Reduce::kMin>(op, [&](auto o) {
      if constexpr (decltype(o)::value == Reduce::kSum)
        return kernelkit::sum(x, n, out, workspace, workspace_bytes, s);
      if constexpr (decltype(o)::value == Reduce::kMax)
        return kernelkit::max(x, n, out, workspace, workspace_bytes, s);
      if constexpr (decltype(o)::value == Reduce::kMin)
        return kernelkit::min(x, n, out, workspace, workspace_bytes, s);
    });
  });
}

}  // namespace kkpy
