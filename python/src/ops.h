// SPDX-License-Identifier: Apache-2.0
// The host-side entry points of the Python extension: one translation unit per op family
// (ops_*.cu, compiled by nvcc) instantiates only the kernelkit calls the bindings expose and
// exports them through these plain declarations, so module.cpp (nanobind, host compiler)
// never includes a CUDA kernel. Every function returns kernelkit's cudaError_t unchanged,
// and checks nothing of its own: kernelkit's argument check answers cudaErrorInvalidValue,
// and so does a DType, Unary, Binary or Reduce value outside a function's list (the
// dispatch of kernelkit/core/dispatch.cuh). The Python layer checks every argument first.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace kkpy {

// The element types of the float ops (transpose takes an element size instead: bits are
// moved unchanged); kI32 / kI64: cross_entropy's targets only. kOther: a type no op takes
// (cudaErrorInvalidValue, 0 workspace bytes).
enum class DType { kF32, kF16, kBF16, kOther, kI32, kI64 };

enum class Unary { kRelu, kGelu, kGeluTanh, kSigmoid };
enum class Binary { kAdd, kMul };
enum class Reduce { kSum, kMax, kMin };

// softmax / log_softmax over rows of cols elements (f32, f16, bf16): row r of in at in + r *
// ld_in, of out at out + r * ld_out (ld >= cols; ld == cols: contiguous rows).
cudaError_t softmax(DType t, bool log, const void* in, int64_t ld_in, void* out, int64_t ld_out,
                    int64_t rows, int64_t cols, cudaStream_t s);
// dx = the gradient of softmax (log: of log_softmax) from its output y and y's gradient dy,
// over rows at their leading dimensions (kernelkit's fused softmax_backward /
// log_softmax_backward: one read of y and dy, one write of dx).
cudaError_t softmax_backward(DType t, bool log, const void* y, int64_t ld_y, const void* dy,
                             int64_t ld_dy, void* dx, int64_t ld_dx, int64_t rows, int64_t cols,
                             cudaStream_t s);

// softmax / log_softmax over the middle axis of a contiguous (outer, n, inner) array, read in
// place (kernelkit's softmax_inner / log_softmax_inner; out may be exactly in), and their
// backward (softmax_inner_backward / log_softmax_inner_backward: dx must not overlap y, may be
// exactly dy). softmax_inner_workspace_bytes: the workspace that lets tall columns split over
// blocks (0: none needed; less or none still runs, unsplit).
size_t softmax_inner_workspace_bytes(DType t, int64_t outer, int64_t n, int64_t inner);
cudaError_t softmax_inner(DType t, bool log, const void* in, void* out, int64_t outer, int64_t n,
                          int64_t inner, void* workspace, size_t workspace_bytes, cudaStream_t s);
cudaError_t softmax_inner_backward(DType t, bool log, const void* y, const void* dy, void* dx,
                                   int64_t outer, int64_t n, int64_t inner, void* workspace,
                                   size_t workspace_bytes, cudaStream_t s);

// Workspaces: every op that may take one has a *_workspace_bytes function (kernelkit's
// figure); the Python layer allocates that many uninitialized bytes with the caller's
// framework (none when it is 0) and passes them to the op, which is correct whatever they hold.

// out[r] (float) = sum / max / min of row r, row r at in + r * ld (ld >= cols; ld == cols:
// contiguous rows) (in: f32, f16, bf16).
size_t row_reduce_workspace_bytes(DType t, int64_t rows, int64_t cols);
cudaError_t row_reduce(DType t, Reduce op, const void* in, int64_t rows, int64_t cols, int64_t ld,
                       float* out, void* workspace, size_t workspace_bytes, cudaStream_t s);

// out[o * inner + i] (float) = sum / max / min over k < n of in[(o * n + k) * inner + i]: the
// middle axis of a contiguous (outer, n, inner) array (in: f32, f16, bf16).
size_t col_reduce_workspace_bytes(DType t, int64_t outer, int64_t n, int64_t inner);
cudaError_t col_reduce(DType t, Reduce op, const void* in, int64_t outer, int64_t n, int64_t inner,
                       float* out, void* workspace, size_t workspace_bytes, cudaStream_t s);

// out[0] (float) = sum / max / min of in[0..n) (f32, f16, bf16); the workspace holds
// reduce_workspace_bytes(t, n) bytes, whatever they hold.
size_t reduce_workspace_bytes(DType t, int64_t n);
cudaError_t reduce(DType t, Reduce op, const void* in, int64_t n, float* out, void* workspace,
                   size_t workspace_bytes, cudaStream_t s);

// out (cols x rows) = in (rows x cols) transposed; any element of 1, 2, 4 or 8 bytes.
cudaError_t transpose(size_t elem_bytes, const void* in, void* out, int64_t rows, int64_t cols,
                      cudaStream_t s);

// f32 BLAS, row-major (kernelkit::gemv / kernelkit::sgemm).
size_t gemv_workspace_bytes(bool trans, int64_t m, int64_t n);
cudaError_t gemv(bool trans, int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                 const float* x, float beta, float* y, void* workspace, size_t workspace_bytes,
                 cudaStream_t s);
size_t sgemm_workspace_bytes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k);
cudaError_t sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc, void* workspace, size_t workspace_bytes, cudaStream_t s);

// Norms over the last dimension of rows x cols (x, y, residual, sum: f32, f16, bf16 of type t;
// weight, bias, dweight: of type w, t or float32, each may be 0 = none; mean, rstd: rows floats
// or 0 = not saved). kernelkit's rms_norm / layer_norm / add_rms_norm and their backward passes.
cudaError_t rms_norm(DType t, DType w, const void* x, const void* weight, void* y, float* rstd,
                     int64_t rows, int64_t cols, float eps, cudaStream_t s);
cudaError_t layer_norm(DType t, DType w, const void* x, const void* weight, const void* bias,
                       void* y, float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                       cudaStream_t s);
cudaError_t add_rms_norm(DType t, DType w, const void* x, const void* residual, const void* weight,
                         void* y, void* sum, float* rstd, int64_t rows, int64_t cols, float eps,
                         cudaStream_t s);
// dweight (with a weight) needs rms_norm_backward_workspace_bytes(rows, cols) bytes.
size_t rms_norm_backward_workspace_bytes(int64_t rows, int64_t cols);
cudaError_t rms_norm_backward(DType t, DType w, const void* dy, const void* x, const void* weight,
                              const float* rstd, void* dx, void* dweight, int64_t rows,
                              int64_t cols, void* workspace, size_t workspace_bytes,
                              cudaStream_t s);
// dweight and / or dbias (of type w) need layer_norm_backward_workspace_bytes(rows, cols)
// bytes; dbias needs no bias (it does not enter dx).
size_t layer_norm_backward_workspace_bytes(int64_t rows, int64_t cols);
cudaError_t layer_norm_backward(DType t, DType w, const void* dy, const void* x, const void* weight,
                                const float* mean, const float* rstd, void* dx, void* dweight,
                                void* dbias, int64_t rows, int64_t cols, void* workspace,
                                size_t workspace_bytes, cudaStream_t s);
// add_rms_norm's: dx (the gradient of both x and residual) = rms_norm_backward's dx of sum
// plus dsum (0: none); dweight (with a weight) needs
// add_rms_norm_backward_workspace_bytes(rows, cols) bytes.
size_t add_rms_norm_backward_workspace_bytes(int64_t rows, int64_t cols);
cudaError_t add_rms_norm_backward(DType t, DType w, const void* dy, const void* sum,
                                  const void* dsum, const void* weight, const float* rstd, void* dx,
                                  void* dweight, int64_t rows, int64_t cols, void* workspace,
                                  size_t workspace_bytes, cudaStream_t s);

// cross_entropy over rows x vocab logits (t: f32, f16, bf16; row r at logits + r * ld) against
// rows class indices (tgt: kI32 / kI64). reduction: 0 none (loss: rows floats), 1 sum, 2 mean
// (loss: one float) - kernelkit::LossReduction's order; lse: rows floats or 0 (not saved). The
// forward needs cross_entropy_workspace_bytes(rows, vocab) bytes (kernelkit's figure). The
// backward writes dlogits (t, row r at dlogits + r * ld_dlogits) from the forward's lse and
// the loss's gradient dloss (rows floats for none, one float otherwise); no workspace.
size_t cross_entropy_workspace_bytes(int64_t rows, int64_t vocab);
cudaError_t cross_entropy(DType t, DType tgt, const void* logits, int64_t ld, const void* target,
                          int64_t rows, int64_t vocab, int64_t ignore_index, float label_smoothing,
                          int reduction, float* loss, float* lse, void* workspace,
                          size_t workspace_bytes, cudaStream_t s);
cudaError_t cross_entropy_backward(DType t, DType tgt, const void* logits, int64_t ld,
                                   const void* target, const float* lse, const float* dloss,
                                   int64_t rows, int64_t vocab, int64_t ignore_index,
                                   float label_smoothing, int reduction, void* dlogits,
                                   int64_t ld_dlogits, cudaStream_t s);

// Elementwise engine with kernelkit's built-in functors (f32, f16, bf16; out of the input
// type, cast: any pair of them).
cudaError_t unary(Unary f, DType t, int64_t n, void* out, const void* a, cudaStream_t s);
cudaError_t binary(Binary f, DType t, int64_t n, void* out, const void* a, const void* b,
                   cudaStream_t s);
cudaError_t cast(DType from, DType to, int64_t n, void* out, const void* a, cudaStream_t s);

}  // namespace kkpy
