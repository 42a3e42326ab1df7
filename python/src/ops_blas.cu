// f32 gemv and sgemm.
//
// Workspaces (ops.h): none yet. When kernelkit's gemv / sgemm gain their workspace overloads
// (`..., y / C, ldc, workspace, workspace_bytes, stream)` with gemv_workspace_bytes(op, m, n)
// and sgemm_workspace_bytes(m, n, k)), the lines marked "overloads:" change, nothing else.
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
  (void)trans, (void)m, (void)n;
  return 0;  // overloads: kernelkit::gemv_workspace_bytes(blas_op(trans), m, n)
}

cudaError_t gemv(bool trans, int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                 const float* x, float beta, float* y, void* workspace, size_t workspace_bytes,
                 cudaStream_t s) {
  (void)workspace, (void)workspace_bytes;  // overloads: passed before s
  return kernelkit::gemv(blas_op(trans), m, n, alpha, A, lda, x, beta, y, s);
}

size_t sgemm_workspace_bytes(int64_t m, int64_t n, int64_t k) {
  (void)m, (void)n, (void)k;
  return 0;  // overloads: kernelkit::sgemm_workspace_bytes(m, n, k)
}

cudaError_t sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  (void)workspace, (void)workspace_bytes;  // overloads: passed before s
  return kernelkit::sgemm(blas_op(trans_a), blas_op(trans_b), m, n, k, alpha, A, lda, B, ldb, beta,
                          C, ldc, s);
}

}  // namespace kkpy
