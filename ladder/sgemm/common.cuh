// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the sgemm ladder: the launcher signature, which arguments a step takes,
// the element accessor for op(A) / op(B) and the store through core's alpha/beta epilogue.
// Every step computes C = alpha * op(A) op(B) + beta * C, row-major, as kernelkit::sgemm
// does, and checks its arguments with kernelkit::sgemm_args_ok.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/blas/sgemm.cuh"
#include "kernelkit/core/epilogue.cuh"

namespace kernelkit::ladder::sgemm {

using kernelkit::BlasOp;

using Fn = cudaError_t (*)(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                           float* C, int64_t ldc, cudaStream_t stream);
// Whether a step accepts these arguments (it returns cudaErrorInvalidValue otherwise).
using SupportsFn = bool (*)(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                            const float* A, int64_t lda, const float* B, int64_t ldb,
                            const float* C, int64_t ldc);

// Row r, column c of op(X) where X is stored row-major with leading dimension ld.
__device__ __forceinline__ float op_at(const float* X, bool trans, int64_t r, int64_t c,
                                       int64_t ld) {
  return trans ? X[c * ld + r] : X[r * ld + c];
}

// C[i][j] = alpha * acc + beta * C[i][j] (core's epilogue: C is not read when beta == 0).
__device__ __forceinline__ void store_c(float* C, int64_t ldc, int64_t i, int64_t j, float alpha,
                                        float acc, float beta) {
  float* c = C + i * ldc + j;
  *c = kernelkit::axpby(alpha, acc, beta, c);
}

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Steps v0..v4: every op, shape and alignment (grid limits aside).
inline bool supports_any(BlasOp, BlasOp, int64_t, int64_t, int64_t, const float*, int64_t,
                         const float*, int64_t, const float*, int64_t) {
  return true;
}

// Steps v5, v6: BlasOp::N for both, m and n multiples of 128, k of 8, 16-byte aligned rows.
inline bool supports_aligned_nn(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                const float* A, int64_t lda, const float* B, int64_t ldb,
                                const float* C, int64_t ldc) {
  return op_a == BlasOp::N && op_b == BlasOp::N && m % 128 == 0 && n % 128 == 0 && k % 8 == 0 &&
         lda % 4 == 0 && ldb % 4 == 0 && ldc % 4 == 0 && aligned16(A) && aligned16(B) &&
         aligned16(C);
}

}  // namespace kernelkit::ladder::sgemm
