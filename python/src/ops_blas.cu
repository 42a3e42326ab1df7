// SPDX-License-Identifier: Apache-2.0
// f32 gemv and sgemm.
//
// Workspaces (ops.h): gemv and sgemm split work through one when they are given it
// (kernelkit's *_workspace_bytes figures; the Python layer allocates them).
#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/blas/sgemm.cuh"
#include "ops.h"

namespace kkpy {

namespace {
kernelkit::BlasOp blas_op(bool trans) {
  return trans ? kernelkit::BlasOp::T : kernelkit::BlasOp::N;
}
}  // namespace

size_t gemv_workspace_bytes(bool trans, int64_t m, int64_t n) {
  return kernelkit::gemv_workspace_bytes(blas_op(trans), m, n);
}

cudaError_t gemv(bool trans, int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                 const float* x, float beta, float* y, void* workspace, size_t workspace_bytes,
                 cudaStream_t s) {
  return kernelkit::gemv(blas_op(trans), m, n, alpha, A, lda, x, beta, y, workspace,
                         workspace_bytes, s);
}

size_t sgemm_workspace_bytes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
  return kernelkit::sgemm_workspace_bytes(blas_op(trans_a), blas_op(trans_b), m, n, k);
}

cudaError_t sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  return kernelkit::sgemm(blas_op(trans_a), blas_op(trans_b), m, n, k, alpha, A, lda, B, ldb, beta,
                          C, ldc, workspace, workspace_bytes, s);
}

}  // namespace kkpy
