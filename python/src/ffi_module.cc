// SPDX-License-Identifier: Apache-2.0
// kernelkit._ffi: kernelkit's ops as XLA FFI handlers, so that JAX runs them under jax.jit on
// XLA's own stream, with XLA's buffers and no synchronization (kernelkit/_jax.py registers
// them with jax.ffi.register_ffi_target and calls them with jax.ffi.ffi_call). A module of its
// own, built only when jax (whose wheel ships XLA's FFI headers) is importable at build time:
// kernelkit._C stays free of XLA.
//
// Each handler reads the shapes XLA gives it (row-major buffers, as kernelkit/_jax.py lays
// them out: it reshapes, which costs XLA nothing, so that a handler sees the rank it reads),
// takes XLA's CUDA stream from the platform stream context, its scalars as attributes and its
// workspace from XLA's scratch allocator, and calls the same kernelkit entry points as
// kernelkit._C (ops.h). Arguments are checked once, in Python (kernelkit/_ops.py's checks run
// on the traced shapes and dtypes); kernelkit's answer is turned into an XLA FFI error:
// cudaErrorInvalidValue -> InvalidArgument, any other CUDA error -> Internal, both with
// cudaGetErrorString's text.
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "ops.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
namespace nb = nanobind;

namespace kkpy {
namespace {

using Stream = ffi::PlatformStream<cudaStream_t>;
// (aliases: a comma inside a type would split XLA_FFI_DEFINE_HANDLER_SYMBOL's arguments)
using Matrix = ffi::Buffer<ffi::F32, 2>;
using Vector = ffi::Buffer<ffi::F32, 1>;

ffi::Error answer(cudaError_t e, const char* op) {
  if (e == cudaSuccess) return ffi::Error::Success();
  std::string msg =
      std::string("kernelkit.") + op + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  if (e == cudaErrorInvalidValue) return ffi::Error::InvalidArgument(std::move(msg));
  return ffi::Error::Internal(std::move(msg));
}

// XLA's element type as ops.h's DType (kOther: a type no op takes, answered InvalidArgument).
DType dtype(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::F32:
      return DType::kF32;
    case ffi::DataType::F16:
      return DType::kF16;
    case ffi::DataType::BF16:
      return DType::kBF16;
    default:
      return DType::kOther;
  }
}

int64_t numel(const ffi::AnyBuffer& b) {
  int64_t n = 1;
  for (int64_t d : b.dimensions())
    n *= d;
  return n;
}

// The buffer as rows x cols: cols = the last dimension (1 for a 0-d buffer), rows = the
// product of the others.
void rows_cols(const ffi::AnyBuffer& b, int64_t* rows, int64_t* cols) {
  auto dims = b.dimensions();
  *cols = dims.size() ? dims[dims.size() - 1] : 1;
  int64_t r = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i)
    r *= dims[i];
  *rows = r;
}

// A workspace of `bytes` from XLA's scratch allocator (nullptr when none is needed). false:
// the allocator refused (its diagnostic is XLA's error).
bool scratch(ffi::ScratchAllocator& alloc, size_t bytes, void** out) {
  *out = nullptr;
  if (!bytes) return true;
  // XLA's allocator refuses alignments past 16; kernelkit's workspaces need 16
  std::optional<void*> p = alloc.Allocate(bytes, 16);
  if (!p) return false;
  *out = *p;
  return true;
}

ffi::Error no_scratch(const char* op, size_t bytes) {
  return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                    std::string("kernelkit.") + op + ": XLA's scratch allocator refused " +
                        std::to_string(bytes) + " workspace bytes");
}

// ---- softmax, reductions, transpose ------------------------------------------------------

// y = softmax (log: log_softmax) of x over its last dimension; x and y of one float type.
ffi::Error softmax_impl(cudaStream_t s, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y,
                        int64_t log) {
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  if (y->element_type() != x.element_type()) return answer(cudaErrorInvalidValue, "softmax");
  return answer(softmax(dtype(x.element_type()), log != 0, x.untyped_data(), cols,
                        y->untyped_data(), cols, rows, cols, s),
                log ? "log_softmax" : "softmax");
}

// dx = the gradient of softmax (log: log_softmax) over the last dimension from its output y and
// y's gradient dy; y, dy, dx of one float type and shape.
ffi::Error softmax_backward_impl(cudaStream_t s, ffi::AnyBuffer y, ffi::AnyBuffer dy,
                                 ffi::Result<ffi::AnyBuffer> dx, int64_t log) {
  int64_t rows, cols;
  rows_cols(y, &rows, &cols);
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  if (dy.element_type() != y.element_type() || dx->element_type() != y.element_type() ||
      numel(dy) != numel(y))
    return answer(cudaErrorInvalidValue, op);
  return answer(softmax_backward(dtype(y.element_type()), log != 0, y.untyped_data(), cols,
                                 dy.untyped_data(), cols, dx->untyped_data(), cols, rows, cols, s),
                op);
}

// y = softmax (log: log_softmax) over the middle dimension of x (outer, n, inner), read in place
// (kernelkit's softmax_inner; tall columns split through a workspace from XLA's scratch
// allocator).
ffi::Error softmax_inner_impl(cudaStream_t s, ffi::ScratchAllocator alloc, ffi::AnyBuffer x,
                              ffi::Result<ffi::AnyBuffer> y, int64_t log) {
  const char* op = log ? "log_softmax" : "softmax";
  auto dims = x.dimensions();
  if (dims.size() != 3 || y->element_type() != x.element_type())
    return answer(cudaErrorInvalidValue, op);
  const DType t = dtype(x.element_type());
  const size_t bytes = softmax_inner_workspace_bytes(t, dims[0], dims[1], dims[2]);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch(op, bytes);
  return answer(softmax_inner(t, log != 0, x.untyped_data(), y->untyped_data(), dims[0], dims[1],
                              dims[2], ws, bytes, s),
                op);
}

// dx = the gradient of softmax_inner (log: log_softmax_inner) from its output y and y's
// gradient dy, all (outer, n, inner) of one float type.
ffi::Error softmax_inner_backward_impl(cudaStream_t s, ffi::ScratchAllocator alloc,
                                       ffi::AnyBuffer y, ffi::AnyBuffer dy,
                                       ffi::Result<ffi::AnyBuffer> dx, int64_t log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  auto dims = y.dimensions();
  if (dims.size() != 3 || dy.element_type() != y.element_type() ||
      dx->element_type() != y.element_type() || numel(dy) != numel(y))
    return answer(cudaErrorInvalidValue, op);
  const DType t = dtype(y.element_type());
  const size_t bytes = softmax_inner_workspace_bytes(t, dims[0], dims[1], dims[2]);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch(op, bytes);
  return answer(softmax_inner_backward(t, log != 0, y.untyped_data(), dy.untyped_data(),
                                       dx->untyped_data(), dims[0], dims[1], dims[2], ws, bytes, s),
                op);
}

// out (float32, rows) = op over the last dimension of x (rows x cols: x reshaped by _jax).
ffi::Error row_reduce_impl(cudaStream_t s, ffi::ScratchAllocator alloc, ffi::AnyBuffer x,
                           ffi::Result<ffi::Buffer<ffi::F32>> out, int64_t op) {
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  const DType t = dtype(x.element_type());
  const size_t bytes = row_reduce_workspace_bytes(t, rows, cols);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("row_reduce", bytes);
  return answer(row_reduce(t, static_cast<Reduce>(op), x.untyped_data(), rows, cols, cols,
                           out->typed_data(), ws, bytes, s),
                "row_reduce");
}

// out (float32, outer x inner) = op over the middle dimension of x (outer, n, inner).
ffi::Error col_reduce_impl(cudaStream_t s, ffi::ScratchAllocator alloc, ffi::AnyBuffer x,
                           ffi::Result<ffi::Buffer<ffi::F32>> out, int64_t op) {
  auto dims = x.dimensions();
  if (dims.size() != 3) return answer(cudaErrorInvalidValue, "col_reduce");
  const DType t = dtype(x.element_type());
  const size_t bytes = col_reduce_workspace_bytes(t, dims[0], dims[1], dims[2]);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("col_reduce", bytes);
  return answer(col_reduce(t, static_cast<Reduce>(op), x.untyped_data(), dims[0], dims[1], dims[2],
                           out->typed_data(), ws, bytes, s),
                "col_reduce");
}

// out[0] (float32) = op over every element of x (kernelkit's device-wide reduction).
ffi::Error reduce_impl(cudaStream_t s, ffi::ScratchAllocator alloc, ffi::AnyBuffer x,
                       ffi::Result<ffi::Buffer<ffi::F32>> out, int64_t op) {
  const DType t = dtype(x.element_type());
  const int64_t n = numel(x);
  const size_t bytes = reduce_workspace_bytes(t, n);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("reduce", bytes);
  return answer(
      reduce(t, static_cast<Reduce>(op), x.untyped_data(), n, out->typed_data(), ws, bytes, s),
      "reduce");
}

// y (cols x rows) = x (rows x cols) transposed; any element of 1, 2, 4 or 8 bytes.
ffi::Error transpose_impl(cudaStream_t s, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  auto dims = x.dimensions();
  if (dims.size() != 2) return answer(cudaErrorInvalidValue, "transpose");
  const size_t elem = numel(x) ? x.size_bytes() / numel(x) : 1;
  return answer(transpose(elem, x.untyped_data(), y->untyped_data(), dims[0], dims[1], s),
                "transpose");
}

// ---- cross_entropy ------------------------------------------------------------------------------

// XLA's integer element type of a target as ops.h's DType (kOther: refused by the op).
DType target_dtype(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::S32:
      return DType::kI32;
    case ffi::DataType::S64:
      return DType::kI64;
    default:
      return DType::kOther;
  }
}

// loss (rows float32 for reduction 0 = none, else one) and the per-row lse (rows float32,
// always written: the custom_vjp's forward saves it, the plain call discards it) of logits
// (rows x vocab) against target (rows int32 / int64).
ffi::Error cross_entropy_impl(cudaStream_t s, ffi::ScratchAllocator alloc, ffi::AnyBuffer logits,
                              ffi::AnyBuffer target, ffi::Result<ffi::Buffer<ffi::F32>> loss,
                              ffi::Result<kkpy::Vector> lse, int64_t ignore_index,
                              int64_t reduction, float label_smoothing) {
  auto dims = logits.dimensions();
  if (dims.size() != 2 || numel(target) != dims[0])
    return answer(cudaErrorInvalidValue, "cross_entropy");
  const int64_t rows = dims[0], vocab = dims[1];
  const size_t bytes = cross_entropy_workspace_bytes(rows, vocab);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("cross_entropy", bytes);
  return answer(cross_entropy(dtype(logits.element_type()), target_dtype(target.element_type()),
                              logits.untyped_data(), vocab, target.untyped_data(), rows, vocab,
                              ignore_index, label_smoothing, static_cast<int>(reduction),
                              loss->typed_data(), lse->typed_data(), ws, bytes, s),
                "cross_entropy");
}

// dlogits (rows x vocab, the logits' type) from the logits, target, the forward's lse and the
// loss's cotangent dloss (rows float32 for none, else one).
ffi::Error cross_entropy_backward_impl(cudaStream_t s, ffi::AnyBuffer logits, ffi::AnyBuffer target,
                                       kkpy::Vector lse, ffi::Buffer<ffi::F32> dloss,
                                       ffi::Result<ffi::AnyBuffer> dlogits, int64_t ignore_index,
                                       int64_t reduction, float label_smoothing) {
  auto dims = logits.dimensions();
  if (dims.size() != 2 || numel(target) != dims[0] ||
      dlogits->element_type() != logits.element_type())
    return answer(cudaErrorInvalidValue, "cross_entropy_backward");
  const int64_t rows = dims[0], vocab = dims[1];
  return answer(
      cross_entropy_backward(dtype(logits.element_type()), target_dtype(target.element_type()),
                             logits.untyped_data(), vocab, target.untyped_data(), lse.typed_data(),
                             dloss.typed_data(), rows, vocab, ignore_index, label_smoothing,
                             static_cast<int>(reduction), dlogits->untyped_data(), vocab, s),
      "cross_entropy_backward");
}

// ---- BLAS (float32) --------------------------------------------------------------------------

// y = alpha * op(A) x; A is m x n.
ffi::Error gemv_impl(cudaStream_t s, ffi::ScratchAllocator alloc, kkpy::Matrix a, kkpy::Vector x,
                     ffi::Result<kkpy::Vector> y, int64_t trans, float alpha) {
  const int64_t m = a.dimensions()[0], n = a.dimensions()[1];
  const size_t bytes = gemv_workspace_bytes(trans != 0, m, n);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("gemv", bytes);
  return answer(gemv(trans != 0, m, n, alpha, a.typed_data(), n ? n : 1, x.typed_data(), 0.0f,
                     y->typed_data(), ws, bytes, s),
                "gemv");
}

// C (m x n) = alpha * op(A) op(B), every matrix row-major and contiguous.
ffi::Error sgemm_impl(cudaStream_t s, ffi::ScratchAllocator alloc, kkpy::Matrix a, kkpy::Matrix b,
                      ffi::Result<kkpy::Matrix> c, int64_t trans_a, int64_t trans_b, float alpha) {
  const int64_t m = c->dimensions()[0], n = c->dimensions()[1];
  const int64_t k = trans_a ? a.dimensions()[0] : a.dimensions()[1];
  const int64_t lda = a.dimensions()[1], ldb = b.dimensions()[1];
  const size_t bytes = sgemm_workspace_bytes(trans_a != 0, trans_b != 0, m, n, k);
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("sgemm", bytes);
  return answer(
      sgemm(trans_a != 0, trans_b != 0, m, n, k, alpha, a.typed_data(), lda ? lda : 1,
            b.typed_data(), ldb ? ldb : 1, 0.0f, c->typed_data(), n ? n : 1, ws, bytes, s),
      "sgemm");
}

// ---- elementwise -------------------------------------------------------------------------------

ffi::Error unary_impl(cudaStream_t s, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y, int64_t op) {
  if (y->element_type() != x.element_type()) return answer(cudaErrorInvalidValue, "unary");
  return answer(unary(static_cast<Unary>(op), dtype(x.element_type()), numel(x), y->untyped_data(),
                      x.untyped_data(), s),
                "unary");
}

ffi::Error binary_impl(cudaStream_t s, ffi::AnyBuffer a, ffi::AnyBuffer b,
                       ffi::Result<ffi::AnyBuffer> y, int64_t op) {
  if (b.element_type() != a.element_type() || y->element_type() != a.element_type() ||
      numel(b) != numel(a))
    return answer(cudaErrorInvalidValue, "binary");
  return answer(binary(static_cast<Binary>(op), dtype(a.element_type()), numel(a),
                       y->untyped_data(), a.untyped_data(), b.untyped_data(), s),
                "binary");
}

// y = x converted to y's element type.
ffi::Error cast_impl(cudaStream_t s, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> y) {
  return answer(cast(dtype(x.element_type()), dtype(y->element_type()), numel(x), y->untyped_data(),
                     x.untyped_data(), s),
                "cast");
}

// ---- norms ------------------------------------------------------------------------------------
// The optional parameters arrive as optional arguments in a fixed order (weight, then bias),
// each present exactly when its has_* attribute is 1 (XLA's FFI has no "none" buffer).

struct Params {
  const void* weight = nullptr;
  const void* bias = nullptr;
  DType w = DType::kOther;
};

Params params(DType t, std::optional<ffi::AnyBuffer> p0, std::optional<ffi::AnyBuffer> p1,
              int64_t has_weight, int64_t has_bias) {
  Params r;
  r.w = t;
  std::optional<ffi::AnyBuffer> next = p0;
  if (has_weight && next) {
    r.weight = next->untyped_data();
    r.w = dtype(next->element_type());
    next = p1;
  }
  if (has_bias && next) {
    r.bias = next->untyped_data();
    r.w = dtype(next->element_type());
  }
  return r;
}

// The forward handlers write the statistics the backward reads (rows float32 each: rstd, and
// layer_norm's mean) always: one target per norm, for the plain call (kernelkit/_jax.py
// discards them: rows x 4 bytes, nothing beside the rows x cols read and written) and for a
// jax.custom_vjp's forward (which saves them).
ffi::Error rms_norm_impl(cudaStream_t s, ffi::AnyBuffer x, std::optional<ffi::AnyBuffer> weight,
                         ffi::Result<ffi::AnyBuffer> y, ffi::Result<kkpy::Vector> rstd,
                         int64_t has_weight, float eps) {
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  const DType t = dtype(x.element_type());
  const Params p = params(t, weight, std::nullopt, has_weight, 0);
  return answer(rms_norm(t, p.w, x.untyped_data(), p.weight, y->untyped_data(), rstd->typed_data(),
                         rows, cols, eps, s),
                "rms_norm");
}

ffi::Error layer_norm_impl(cudaStream_t s, ffi::AnyBuffer x, std::optional<ffi::AnyBuffer> p0,
                           std::optional<ffi::AnyBuffer> p1, ffi::Result<ffi::AnyBuffer> y,
                           ffi::Result<kkpy::Vector> mean, ffi::Result<kkpy::Vector> rstd,
                           int64_t has_weight, int64_t has_bias, float eps) {
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  const DType t = dtype(x.element_type());
  const Params p = params(t, p0, p1, has_weight, has_bias);
  return answer(layer_norm(t, p.w, x.untyped_data(), p.weight, p.bias, y->untyped_data(),
                           mean->typed_data(), rstd->typed_data(), rows, cols, eps, s),
                "layer_norm");
}

ffi::Error add_rms_norm_impl(cudaStream_t s, ffi::AnyBuffer x, ffi::AnyBuffer residual,
                             std::optional<ffi::AnyBuffer> weight, ffi::Result<ffi::AnyBuffer> y,
                             ffi::Result<ffi::AnyBuffer> sum, ffi::Result<kkpy::Vector> rstd,
                             int64_t has_weight, float eps) {
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  const DType t = dtype(x.element_type());
  if (residual.element_type() != x.element_type())
    return answer(cudaErrorInvalidValue, "add_rms_norm");
  const Params p = params(t, weight, std::nullopt, has_weight, 0);
  return answer(
      add_rms_norm(t, p.w, x.untyped_data(), residual.untyped_data(), p.weight, y->untyped_data(),
                   sum->untyped_data(), rstd->typed_data(), rows, cols, eps, s),
      "add_rms_norm");
}

// The backward handlers: x (or add_rms_norm's sum) and dy rows x cols, the saved statistics,
// then the optional weight; the results dx, then dweight (has_dweight) and layer_norm's dbias
// (has_dbias) of the parameters' dtype (an empty result when not wanted: XLA's FFI has no
// optional result), and the workspace from XLA's scratch allocator when either is wanted.
// add_rms_norm's dsum is an optional argument (has_dsum) before the weight.
ffi::Error rms_norm_backward_impl(cudaStream_t s, ffi::ScratchAllocator alloc, ffi::AnyBuffer x,
                                  ffi::AnyBuffer dy, kkpy::Vector rstd,
                                  std::optional<ffi::AnyBuffer> weight,
                                  ffi::Result<ffi::AnyBuffer> dx,
                                  ffi::Result<ffi::AnyBuffer> dweight, int64_t has_weight,
                                  int64_t has_dweight) {
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  const DType t = dtype(x.element_type());
  const Params p = params(t, weight, std::nullopt, has_weight, 0);
  const size_t bytes = has_dweight ? rms_norm_backward_workspace_bytes(rows, cols) : 0;
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("rms_norm_backward", bytes);
  return answer(
      rms_norm_backward(t, p.w, dy.untyped_data(), x.untyped_data(), p.weight, rstd.typed_data(),
                        dx->untyped_data(), has_dweight ? dweight->untyped_data() : nullptr, rows,
                        cols, ws, bytes, s),
      "rms_norm_backward");
}

ffi::Error layer_norm_backward_impl(cudaStream_t s, ffi::ScratchAllocator alloc, ffi::AnyBuffer x,
                                    ffi::AnyBuffer dy, kkpy::Vector mean, kkpy::Vector rstd,
                                    std::optional<ffi::AnyBuffer> weight,
                                    ffi::Result<ffi::AnyBuffer> dx,
                                    ffi::Result<ffi::AnyBuffer> dweight,
                                    ffi::Result<ffi::AnyBuffer> dbias, int64_t has_weight,
                                    int64_t has_dweight, int64_t has_dbias) {
  int64_t rows, cols;
  rows_cols(x, &rows, &cols);
  const DType t = dtype(x.element_type());
  const Params p = params(t, weight, std::nullopt, has_weight, 0);
  // without a weight, the parameters' dtype is dbias's
  const DType w = has_weight ? p.w : has_dbias ? dtype(dbias->element_type()) : t;
  const size_t bytes =
      has_dweight || has_dbias ? layer_norm_backward_workspace_bytes(rows, cols) : 0;
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("layer_norm_backward", bytes);
  return answer(
      layer_norm_backward(t, w, dy.untyped_data(), x.untyped_data(), p.weight, mean.typed_data(),
                          rstd.typed_data(), dx->untyped_data(),
                          has_dweight ? dweight->untyped_data() : nullptr,
                          has_dbias ? dbias->untyped_data() : nullptr, rows, cols, ws, bytes, s),
      "layer_norm_backward");
}

ffi::Error add_rms_norm_backward_impl(cudaStream_t s, ffi::ScratchAllocator alloc,
                                      ffi::AnyBuffer sum, ffi::AnyBuffer dy, kkpy::Vector rstd,
                                      std::optional<ffi::AnyBuffer> p0,
                                      std::optional<ffi::AnyBuffer> p1,
                                      ffi::Result<ffi::AnyBuffer> dx,
                                      ffi::Result<ffi::AnyBuffer> dweight, int64_t has_dsum,
                                      int64_t has_weight, int64_t has_dweight) {
  int64_t rows, cols;
  rows_cols(sum, &rows, &cols);
  const DType t = dtype(sum.element_type());
  const void* dsum = has_dsum && p0 ? p0->untyped_data() : nullptr;
  const Params p = params(t, has_dsum ? p1 : p0, std::nullopt, has_weight, 0);
  const size_t bytes = has_dweight ? add_rms_norm_backward_workspace_bytes(rows, cols) : 0;
  void* ws;
  if (!scratch(alloc, bytes, &ws)) return no_scratch("add_rms_norm_backward", bytes);
  return answer(add_rms_norm_backward(t, p.w, dy.untyped_data(), sum.untyped_data(), dsum, p.weight,
                                      rstd.typed_data(), dx->untyped_data(),
                                      has_dweight ? dweight->untyped_data() : nullptr, rows, cols,
                                      ws, bytes, s),
                "add_rms_norm_backward");
}

}  // namespace
}  // namespace kkpy

// ---- the handler symbols ------------------------------------------------------------------------
// Each binding lists what its handler's parameters are, in order: XLA's stream first, then the
// scratch allocator (the ops that may take a workspace), the arguments, the results, the
// attributes. The handlers of one shape share one binding function.

namespace kkpy {
namespace {

using ffi::AnyBuffer;
using Floats = ffi::Buffer<ffi::F32>;

auto on_stream() {
  return ffi::Ffi::Bind().Ctx<Stream>();
}

auto with_scratch() {
  return on_stream().Ctx<ffi::ScratchAllocator>();
}

// x -> y, one int64 attribute (softmax's "log", unary's "op"); transpose and cast: none.
auto one_to_one(const char* attr) {
  return on_stream().Arg<AnyBuffer>().Ret<AnyBuffer>().Attr<int64_t>(attr);
}

auto one_to_one() {
  return on_stream().Arg<AnyBuffer>().Ret<AnyBuffer>();
}

// (a, b) -> y, one int64 attribute (softmax_backward's "log", binary's "op").
auto two_to_one(const char* attr) {
  return on_stream().Arg<AnyBuffer>().Arg<AnyBuffer>().Ret<AnyBuffer>().Attr<int64_t>(attr);
}

// x -> float32 out through a workspace, the reduction "op" (row, column, device-wide).
auto reduction() {
  return with_scratch().Arg<AnyBuffer>().Ret<Floats>().Attr<int64_t>("op");
}

// softmax_inner: x -> y (backward: (y, dy) -> dx) through a workspace, "log".
auto inner() {
  return with_scratch().Arg<AnyBuffer>().Ret<AnyBuffer>().Attr<int64_t>("log");
}

auto inner_backward() {
  return with_scratch().Arg<AnyBuffer>().Arg<AnyBuffer>().Ret<AnyBuffer>().Attr<int64_t>("log");
}

// cross_entropy's attributes, after its operands.
template <typename B>
auto loss_options(B binding) {
  return std::move(binding)
      .template Attr<int64_t>("ignore_index")
      .template Attr<int64_t>("reduction")
      .template Attr<float>("label_smoothing");
}

}  // namespace
}  // namespace kkpy

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkSoftmax, kkpy::softmax_impl, kkpy::one_to_one("log"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkSoftmaxBackward, kkpy::softmax_backward_impl,
                              kkpy::two_to_one("log"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkSoftmaxInner, kkpy::softmax_inner_impl, kkpy::inner());
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkSoftmaxInnerBackward, kkpy::softmax_inner_backward_impl,
                              kkpy::inner_backward());
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkRowReduce, kkpy::row_reduce_impl, kkpy::reduction());
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkColReduce, kkpy::col_reduce_impl, kkpy::reduction());
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkReduce, kkpy::reduce_impl, kkpy::reduction());
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkTranspose, kkpy::transpose_impl, kkpy::one_to_one());
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkUnary, kkpy::unary_impl, kkpy::one_to_one("op"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkBinary, kkpy::binary_impl, kkpy::two_to_one("op"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkCast, kkpy::cast_impl, kkpy::one_to_one());

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkCrossEntropy, kkpy::cross_entropy_impl,
                              kkpy::loss_options(kkpy::with_scratch()
                                                     .Arg<ffi::AnyBuffer>()
                                                     .Arg<ffi::AnyBuffer>()
                                                     .Ret<kkpy::Floats>()
                                                     .Ret<kkpy::Vector>()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkCrossEntropyBackward, kkpy::cross_entropy_backward_impl,
                              kkpy::loss_options(kkpy::on_stream()
                                                     .Arg<ffi::AnyBuffer>()
                                                     .Arg<ffi::AnyBuffer>()
                                                     .Arg<kkpy::Vector>()
                                                     .Arg<kkpy::Floats>()
                                                     .Ret<ffi::AnyBuffer>()));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkGemv, kkpy::gemv_impl,
                              kkpy::with_scratch()
                                  .Arg<kkpy::Matrix>()
                                  .Arg<kkpy::Vector>()
                                  .Ret<kkpy::Vector>()
                                  .Attr<int64_t>("trans")
                                  .Attr<float>("alpha"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkSgemm, kkpy::sgemm_impl,
                              kkpy::with_scratch()
                                  .Arg<kkpy::Matrix>()
                                  .Arg<kkpy::Matrix>()
                                  .Ret<kkpy::Matrix>()
                                  .Attr<int64_t>("trans_a")
                                  .Attr<int64_t>("trans_b")
                                  .Attr<float>("alpha"));

// The norms' forward: x (add_rms_norm: and residual), the optional parameters; y (add_rms_norm:
// and the sum) and the statistics; has_* and eps.
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkRmsNorm, kkpy::rms_norm_impl,
                              kkpy::on_stream()
                                  .Arg<ffi::AnyBuffer>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<kkpy::Vector>()
                                  .Attr<int64_t>("has_weight")
                                  .Attr<float>("eps"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkLayerNorm, kkpy::layer_norm_impl,
                              kkpy::on_stream()
                                  .Arg<ffi::AnyBuffer>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<kkpy::Vector>()
                                  .Ret<kkpy::Vector>()
                                  .Attr<int64_t>("has_weight")
                                  .Attr<int64_t>("has_bias")
                                  .Attr<float>("eps"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkAddRmsNorm, kkpy::add_rms_norm_impl,
                              kkpy::on_stream()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<kkpy::Vector>()
                                  .Attr<int64_t>("has_weight")
                                  .Attr<float>("eps"));

// The norms' backward: x (sum), dy, the statistics, the optional dsum and parameters; dx and
// the parameters' gradients; has_* attributes.
XLA_FFI_DEFINE_HANDLER_SYMBOL(KkRmsNormBackward, kkpy::rms_norm_backward_impl,
                              kkpy::with_scratch()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<kkpy::Vector>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("has_weight")
                                  .Attr<int64_t>("has_dweight"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkLayerNormBackward, kkpy::layer_norm_backward_impl,
                              kkpy::with_scratch()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<kkpy::Vector>()
                                  .Arg<kkpy::Vector>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("has_weight")
                                  .Attr<int64_t>("has_dweight")
                                  .Attr<int64_t>("has_dbias"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KkAddRmsNormBackward, kkpy::add_rms_norm_backward_impl,
                              kkpy::with_scratch()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<kkpy::Vector>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .OptionalArg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("has_dsum")
                                  .Attr<int64_t>("has_weight")
                                  .Attr<int64_t>("has_dweight"));

// ---- the module ------------------------------------------------------------------------------

namespace {

template <typename Fn>
nb::capsule handler(Fn* fn) {
  return nb::capsule(reinterpret_cast<void*>(fn));
}

}  // namespace

NB_MODULE(_ffi, m) {
  m.doc() =
      "kernelkit's ops as XLA FFI handlers (kernelkit/_jax.py registers them for JAX's CUDA "
      "platform).";
  // target name -> PyCapsule of the handler, what jax.ffi.register_ffi_target takes
  nb::dict t;
  t["kernelkit_softmax"] = handler(KkSoftmax);
  t["kernelkit_softmax_backward"] = handler(KkSoftmaxBackward);
  t["kernelkit_softmax_inner"] = handler(KkSoftmaxInner);
  t["kernelkit_softmax_inner_backward"] = handler(KkSoftmaxInnerBackward);
  t["kernelkit_row_reduce"] = handler(KkRowReduce);
  t["kernelkit_col_reduce"] = handler(KkColReduce);
  t["kernelkit_reduce"] = handler(KkReduce);
  t["kernelkit_transpose"] = handler(KkTranspose);
  t["kernelkit_gemv"] = handler(KkGemv);
  t["kernelkit_sgemm"] = handler(KkSgemm);
  t["kernelkit_unary"] = handler(KkUnary);
  t["kernelkit_binary"] = handler(KkBinary);
  t["kernelkit_cast"] = handler(KkCast);
  t["kernelkit_rms_norm"] = handler(KkRmsNorm);
  t["kernelkit_layer_norm"] = handler(KkLayerNorm);
  t["kernelkit_add_rms_norm"] = handler(KkAddRmsNorm);
  t["kernelkit_cross_entropy"] = handler(KkCrossEntropy);
  t["kernelkit_cross_entropy_backward"] = handler(KkCrossEntropyBackward);
  t["kernelkit_rms_norm_backward"] = handler(KkRmsNormBackward);
  t["kernelkit_layer_norm_backward"] = handler(KkLayerNormBackward);
  t["kernelkit_add_rms_norm_backward"] = handler(KkAddRmsNormBackward);
  m.attr("targets") = t;
}
