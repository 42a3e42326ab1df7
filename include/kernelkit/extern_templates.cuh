// SPDX-License-Identifier: Apache-2.0
/// @file
/// The instantiations that kernelkit::kernelkit_compiled (a static library, src/) holds, and,
/// when `KERNELKIT_COMPILED` is defined, their `extern template` declarations: a translation
/// unit that calls one of these then compiles no kernel of it and links the library's copy
/// instead. A call with other types (or another functor) still instantiates the header's
/// template, as without the library.
///
/// `KERNELKIT_COMPILED` is not defined by any header: linking the CMake target
/// kernelkit::kernelkit_compiled defines it (an INTERFACE compile definition), so a program
/// that links the library gets the declarations and one that does not stays header-only.
/// Defining it without linking the library leaves these calls unresolved at link time.
///
/// The KERNELKIT_INSTANTIATE_* lists below are the only place the set is written: src/*.cu
/// expand them with `template`, this header with `extern template`, so a declaration cannot
/// drift from its definition. Adding an op or a type to the compiled library means adding it
/// to one of these lists (tests/compile/compiled_calls.cu checks that a call of it then
/// compiles no kernel). The umbrella header includes this file; a file that includes single
/// op headers includes it as well to get the declarations. The KERNELKIT_DETAIL_* macros are
/// the lists' internals.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/blas/sgemm.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"
#include "kernelkit/loss/cross_entropy.cuh"
#include "kernelkit/norm/norm.cuh"
#include "kernelkit/reduce/reduce.cuh"
#include "kernelkit/reduce/row_reduce.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "kernelkit/transpose/transpose.cuh"

// Each KERNELKIT_INSTANTIATE_<MODULE>(KW) expands to declarations inside namespace kernelkit,
// each prefixed by KW: `template` (explicit instantiation definitions) or `extern template`.
// Expand one inside `namespace kernelkit { ... }`.

// ---- softmax, log_softmax (with and without ld), their backward: f32, f16, bf16 -------------
#define KERNELKIT_DETAIL_SOFTMAX(KW, T)                                                           \
  KW cudaError_t softmax<T>(const T*, T*, int64_t, int64_t, cudaStream_t);                        \
  KW cudaError_t log_softmax<T>(const T*, T*, int64_t, int64_t, cudaStream_t);                    \
  KW cudaError_t softmax<T>(const T*, int64_t, T*, int64_t, int64_t, int64_t, cudaStream_t);      \
  KW cudaError_t log_softmax<T>(const T*, int64_t, T*, int64_t, int64_t, int64_t, cudaStream_t);  \
  KW cudaError_t softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, cudaStream_t);     \
  KW cudaError_t log_softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, cudaStream_t); \
  KW cudaError_t softmax_backward<T>(const T*, int64_t, const T*, int64_t, T*, int64_t, int64_t,  \
                                     int64_t, cudaStream_t);                                      \
  KW cudaError_t log_softmax_backward<T>(const T*, int64_t, const T*, int64_t, T*, int64_t,       \
                                         int64_t, int64_t, cudaStream_t);
/// softmax and log_softmax (with and without leading dimensions), softmax_backward and
/// log_softmax_backward (with and without) for float, __half and __nv_bfloat16, each
/// declaration prefixed by KW (`template` or `extern template`).
#define KERNELKIT_INSTANTIATE_SOFTMAX(KW) \
  KERNELKIT_DETAIL_SOFTMAX(KW, float)     \
  KERNELKIT_DETAIL_SOFTMAX(KW, __half)    \
  KERNELKIT_DETAIL_SOFTMAX(KW, __nv_bfloat16)

// ---- norms -----------------------------------------------------------------------------
// One (x type, weight type) pair's norm declarations, prefixed by KW.
#define KERNELKIT_DETAIL_NORM(KW, T, W)                                                            \
  KW cudaError_t rms_norm<T, W>(const T*, const W*, T*, float*, int64_t, int64_t, float,           \
                                cudaStream_t);                                                     \
  KW cudaError_t layer_norm<T, W>(const T*, const W*, const W*, T*, float*, float*, int64_t,       \
                                  int64_t, float, cudaStream_t);                                   \
  KW cudaError_t add_rms_norm<T, W>(const T*, const T*, const W*, T*, T*, float*, int64_t,         \
                                    int64_t, float, cudaStream_t);                                 \
  KW cudaError_t rms_norm_backward<T, W>(const T*, const T*, const W*, const float*, T*, W*,       \
                                         int64_t, int64_t, void*, size_t, cudaStream_t);           \
  KW cudaError_t layer_norm_backward<T, W>(const T*, const T*, const W*, const float*,             \
                                           const float*, T*, W*, W*, int64_t, int64_t, void*,      \
                                           size_t, cudaStream_t);                                  \
  KW cudaError_t add_rms_norm_backward<T, W>(const T*, const T*, const T*, const W*, const float*, \
                                             T*, W*, int64_t, int64_t, void*, size_t,              \
                                             cudaStream_t);
/// rms_norm, layer_norm, add_rms_norm and their backward passes for x of float, __half,
/// __nv_bfloat16 with a float weight (and bias) or one of x's type, each declaration prefixed by
/// KW.
#define KERNELKIT_INSTANTIATE_NORM(KW)            \
  KERNELKIT_DETAIL_NORM(KW, float, float)         \
  KERNELKIT_DETAIL_NORM(KW, __half, float)        \
  KERNELKIT_DETAIL_NORM(KW, __half, __half)       \
  KERNELKIT_DETAIL_NORM(KW, __nv_bfloat16, float) \
  KERNELKIT_DETAIL_NORM(KW, __nv_bfloat16, __nv_bfloat16)

// ---- cross-entropy ---------------------------------------------------------------------------
// One (logit type, target type) pair's declarations (both overloads of each op), prefixed by KW.
#define KERNELKIT_DETAIL_CROSS_ENTROPY(KW, T, Tgt)                                                \
  KW cudaError_t cross_entropy<T, Tgt>(const T*, int64_t, const Tgt*, int64_t, int64_t, int64_t,  \
                                       float, LossReduction, float*, float*, void*, size_t,       \
                                       cudaStream_t);                                             \
  KW cudaError_t cross_entropy<T, Tgt>(const T*, const Tgt*, int64_t, int64_t, int64_t, float,    \
                                       LossReduction, float*, float*, void*, size_t,              \
                                       cudaStream_t);                                             \
  KW cudaError_t cross_entropy_backward<T, Tgt>(const T*, int64_t, const Tgt*, const float*,      \
                                                const float*, int64_t, int64_t, int64_t, float,   \
                                                LossReduction, T*, int64_t, cudaStream_t);        \
  KW cudaError_t cross_entropy_backward<T, Tgt>(const T*, const Tgt*, const float*, const float*, \
                                                int64_t, int64_t, int64_t, float, LossReduction,  \
                                                T*, cudaStream_t);
/// cross_entropy and cross_entropy_backward for float, __half and __nv_bfloat16 logits with int32
/// and int64 targets, each declaration prefixed by KW.
#define KERNELKIT_INSTANTIATE_CROSS_ENTROPY(KW)              \
  KERNELKIT_DETAIL_CROSS_ENTROPY(KW, float, int32_t)         \
  KERNELKIT_DETAIL_CROSS_ENTROPY(KW, float, int64_t)         \
  KERNELKIT_DETAIL_CROSS_ENTROPY(KW, __half, int32_t)        \
  KERNELKIT_DETAIL_CROSS_ENTROPY(KW, __half, int64_t)        \
  KERNELKIT_DETAIL_CROSS_ENTROPY(KW, __nv_bfloat16, int32_t) \
  KERNELKIT_DETAIL_CROSS_ENTROPY(KW, __nv_bfloat16, int64_t)

// ---- reductions: (input, output) pairs -------------------------------------------------------
// Each input with its compute type as the output: f32, f16 and bf16 into float; f64, i32 and
// i64 into themselves. reduce_workspace_bytes and row_reduce_workspace_bytes are constexpr
// arithmetic (no kernel) and stay in the header.
#define KERNELKIT_DETAIL_REDUCE_PAIRS(M, KW) \
  M(KW, float, float)                        \
  M(KW, __half, float)                       \
  M(KW, __nv_bfloat16, float)                \
  M(KW, double, double)                      \
  M(KW, int32_t, int32_t)                    \
  M(KW, int64_t, int64_t)

// reduce, sum, max, min
#define KERNELKIT_DETAIL_REDUCE(KW, T, Acc)                                            \
  KW cudaError_t reduce<T, Acc>(const T*, int64_t, Acc*, ReduceOp, Acc, void*, size_t, \
                                cudaStream_t);                                         \
  KW cudaError_t sum<T, Acc>(const T*, int64_t, Acc*, void*, size_t, cudaStream_t);    \
  KW cudaError_t max<T, Acc>(const T*, int64_t, Acc*, void*, size_t, cudaStream_t);    \
  KW cudaError_t min<T, Acc>(const T*, int64_t, Acc*, void*, size_t, cudaStream_t);
/// reduce, sum, max and min for the input/output pairs f32, f16 and bf16 -> float, f64 -> f64,
/// i32 -> i32 and i64 -> i64, each declaration prefixed by KW (`template` or `extern
/// template`).
#define KERNELKIT_INSTANTIATE_REDUCE(KW) KERNELKIT_DETAIL_REDUCE_PAIRS(KERNELKIT_DETAIL_REDUCE, KW)

// row_reduce, row_sum, row_max, row_min: with and without a workspace
#define KERNELKIT_DETAIL_ROW_REDUCE(KW, T, Acc)                                                  \
  KW cudaError_t row_reduce<T, Acc>(const T*, int64_t, int64_t, Acc*, ReduceOp, Acc, void*,      \
                                    size_t, cudaStream_t);                                       \
  KW cudaError_t row_reduce<T, Acc>(const T*, int64_t, int64_t, Acc*, ReduceOp, Acc,             \
                                    cudaStream_t);                                               \
  KW cudaError_t row_sum<T, Acc>(const T*, int64_t, int64_t, Acc*, void*, size_t, cudaStream_t); \
  KW cudaError_t row_sum<T, Acc>(const T*, int64_t, int64_t, Acc*, cudaStream_t);                \
  KW cudaError_t row_max<T, Acc>(const T*, int64_t, int64_t, Acc*, void*, size_t, cudaStream_t); \
  KW cudaError_t row_max<T, Acc>(const T*, int64_t, int64_t, Acc*, cudaStream_t);                \
  KW cudaError_t row_min<T, Acc>(const T*, int64_t, int64_t, Acc*, void*, size_t, cudaStream_t); \
  KW cudaError_t row_min<T, Acc>(const T*, int64_t, int64_t, Acc*, cudaStream_t);
/// row_reduce, row_sum, row_max and row_min, with and without a workspace, for the pairs of
/// KERNELKIT_INSTANTIATE_REDUCE, each declaration prefixed by KW (`template` or `extern
/// template`).
#define KERNELKIT_INSTANTIATE_ROW_REDUCE(KW) \
  KERNELKIT_DETAIL_REDUCE_PAIRS(KERNELKIT_DETAIL_ROW_REDUCE, KW)

// ---- transpose: the usual element types of 1, 2, 4 and 8 bytes -------------------------------
// (the kernels depend only on the size, so each size's kernels are compiled once)
#define KERNELKIT_DETAIL_TRANSPOSE(KW, T) \
  KW cudaError_t transpose<T>(const T*, T*, int64_t, int64_t, cudaStream_t);
/// transpose for int8_t, uint8_t, int16_t, uint16_t, __half, __nv_bfloat16, float, int32_t,
/// uint32_t, double, int64_t and uint64_t, each declaration prefixed by KW (`template` or
/// `extern template`).
#define KERNELKIT_INSTANTIATE_TRANSPOSE(KW)     \
  KERNELKIT_DETAIL_TRANSPOSE(KW, int8_t)        \
  KERNELKIT_DETAIL_TRANSPOSE(KW, uint8_t)       \
  KERNELKIT_DETAIL_TRANSPOSE(KW, int16_t)       \
  KERNELKIT_DETAIL_TRANSPOSE(KW, uint16_t)      \
  KERNELKIT_DETAIL_TRANSPOSE(KW, __half)        \
  KERNELKIT_DETAIL_TRANSPOSE(KW, __nv_bfloat16) \
  KERNELKIT_DETAIL_TRANSPOSE(KW, float)         \
  KERNELKIT_DETAIL_TRANSPOSE(KW, int32_t)       \
  KERNELKIT_DETAIL_TRANSPOSE(KW, uint32_t)      \
  KERNELKIT_DETAIL_TRANSPOSE(KW, double)        \
  KERNELKIT_DETAIL_TRANSPOSE(KW, int64_t)       \
  KERNELKIT_DETAIL_TRANSPOSE(KW, uint64_t)

// ---- gemv, sgemm: with and without a workspace -------------------------------------------
/// gemv and sgemm (float), each with and without a workspace, each declaration prefixed by KW
/// (`template` or `extern template`).
#define KERNELKIT_INSTANTIATE_BLAS(KW)                                                             \
  KW cudaError_t gemv<0>(BlasOp, int64_t, int64_t, float, const float*, int64_t, const float*,     \
                         float, float*, void*, size_t, cudaStream_t);                              \
  KW cudaError_t gemv<0>(BlasOp, int64_t, int64_t, float, const float*, int64_t, const float*,     \
                         float, float*, cudaStream_t);                                             \
  KW cudaError_t sgemm<0>(BlasOp, BlasOp, int64_t, int64_t, int64_t, float, const float*, int64_t, \
                          const float*, int64_t, float, float*, int64_t, void*, size_t,            \
                          cudaStream_t);                                                           \
  KW cudaError_t sgemm<0>(BlasOp, BlasOp, int64_t, int64_t, int64_t, float, const float*, int64_t, \
                          const float*, int64_t, float, float*, int64_t, cudaStream_t);

// ---- elementwise: the functors of functors.cuh on f32, f16 and bf16 --------------------------
#define KERNELKIT_DETAIL_FLOAT_TYPES(M, KW, F) \
  M(KW, F, float)                              \
  M(KW, F, __half)                             \
  M(KW, F, __nv_bfloat16)

// out and input of one type
#define KERNELKIT_DETAIL_UNARY(KW, F, T) \
  KW cudaError_t unary<F, T, T>(F, int64_t, T*, const T*, cudaStream_t);
#define KERNELKIT_DETAIL_BINARY(KW, F, T) \
  KW cudaError_t binary<F, T, T, T>(F, int64_t, T*, const T*, const T*, cudaStream_t);
// Cast between float and the 16-bit types, both ways
#define KERNELKIT_DETAIL_CAST(KW, R, A) \
  KW cudaError_t unary<Cast, R, A>(Cast, int64_t, R*, const A*, cudaStream_t);

/// unary with Identity, Scale<float>, Relu, Sigmoid, Silu, Tanh, Exp, GeluErf and GeluTanh on
/// float, __half and __nv_bfloat16 (output and input of one type), and Cast between float and
/// each 16-bit type both ways, each declaration prefixed by KW (`template` or `extern
/// template`).
#define KERNELKIT_INSTANTIATE_UNARY(KW)                                  \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, Identity)     \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, Scale<float>) \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, Relu)         \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, Sigmoid)      \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, Silu)         \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, Tanh)         \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, Exp)          \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, GeluErf)      \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_UNARY, KW, GeluTanh)     \
  KERNELKIT_DETAIL_CAST(KW, __half, float)                               \
  KERNELKIT_DETAIL_CAST(KW, __nv_bfloat16, float)                        \
  KERNELKIT_DETAIL_CAST(KW, float, __half)                               \
  KERNELKIT_DETAIL_CAST(KW, float, __nv_bfloat16)

/// binary with Add, Sub, Mul, Div and Axpby<float> on float, __half and __nv_bfloat16 (output
/// and both inputs of one type), each declaration prefixed by KW (`template` or `extern
/// template`).
#define KERNELKIT_INSTANTIATE_BINARY(KW)                         \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_BINARY, KW, Add) \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_BINARY, KW, Sub) \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_BINARY, KW, Mul) \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_BINARY, KW, Div) \
  KERNELKIT_DETAIL_FLOAT_TYPES(KERNELKIT_DETAIL_BINARY, KW, Axpby<float>)

#if defined(KERNELKIT_COMPILED)
namespace kernelkit {
KERNELKIT_INSTANTIATE_SOFTMAX(extern template)
KERNELKIT_INSTANTIATE_NORM(extern template)
KERNELKIT_INSTANTIATE_CROSS_ENTROPY(extern template)
KERNELKIT_INSTANTIATE_REDUCE(extern template)
KERNELKIT_INSTANTIATE_ROW_REDUCE(extern template)
KERNELKIT_INSTANTIATE_TRANSPOSE(extern template)
KERNELKIT_INSTANTIATE_BLAS(extern template)
KERNELKIT_INSTANTIATE_UNARY(extern template)
KERNELKIT_INSTANTIATE_BINARY(extern template)
}  // namespace kernelkit
#endif
