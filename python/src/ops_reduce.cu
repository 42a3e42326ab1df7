// SPDX-License-Identifier: Apache-2.0
// Row-wise (row stride ld), middle-axis (col_reduce) and device-wide sum / max / min of f32,
// f16, bf16 inputs, accumulated in and written as float: 27 instantiations.
//
// Workspaces (ops.h): each op's *_workspace_bytes is kernelkit's figure; the Python layer
// allocates that many uninitialized bytes (none when 0) with the caller's framework.
#include "dtype.cuh"
#include "kernelkit/reduce/col_reduce.cuh"
#include "kernelkit/reduce/reduce.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace kkpy {

namespace {

// f(kernelkit's op, its float identity) for op: the public entry points taking both (what
// row_sum, col_max, min ... call), so each binding below is one call.
template <typename F>
cudaError_t with_op(Reduce op, F&& f) {
  using namespace kernelkit;
  switch (op) {
    case Reduce::kSum:
      return f(ReduceOp::kSum, identity<Sum, float>());
    case Reduce::kMax:
      return f(ReduceOp::kMax, identity<Max, float>());
    case Reduce::kMin:
      return f(ReduceOp::kMin, identity<Min, float>());
  }
  return cudaErrorInvalidValue;
}

}  // namespace

size_t row_reduce_workspace_bytes(DType t, int64_t rows, int64_t cols) {
  size_t bytes = 0;
  (void)with_float_type(t, [&](auto tag) {
    bytes = kernelkit::row_reduce_workspace_bytes<typename decltype(tag)::type, float>(rows, cols);
    return cudaSuccess;
  });
  return bytes;
}

cudaError_t row_reduce(DType t, Reduce op, const void* in, int64_t rows, int64_t cols, int64_t ld,
                       float* out, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    const auto* x = static_cast<const typename decltype(tag)::type*>(in);
    return with_op(op, [&](kernelkit::ReduceOp o, float init) {
      return kernelkit::row_reduce(x, rows, cols, ld, out, o, init, workspace, workspace_bytes, s);
    });
  });
}

size_t col_reduce_workspace_bytes(DType t, int64_t outer, int64_t n, int64_t inner) {
  size_t bytes = 0;
  (void)with_float_type(t, [&](auto tag) {
    bytes =
        kernelkit::col_reduce_workspace_bytes<typename decltype(tag)::type, float>(outer, n, inner);
    return cudaSuccess;
  });
  return bytes;
}

cudaError_t col_reduce(DType t, Reduce op, const void* in, int64_t outer, int64_t n, int64_t inner,
                       float* out, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    const auto* x = static_cast<const typename decltype(tag)::type*>(in);
    return with_op(op, [&](kernelkit::ReduceOp o, float init) {
      return kernelkit::col_reduce(x, outer, n, inner, out, o, init, workspace, workspace_bytes, s);
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
    const auto* x = static_cast<const typename decltype(tag)::type*>(in);
    return with_op(op, [&](kernelkit::ReduceOp o, float init) {
      return kernelkit::reduce(x, n, out, o, init, workspace, workspace_bytes, s);
    });
  });
}

}  // namespace kkpy
