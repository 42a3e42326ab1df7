// f32 gemv and sgemm.
#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/blas/sgemm.cuh"
#include "ops.h"

namespace kkpy {

namespace {
kernelkit::BlasOp blas_op(bool trans) {
  return trans ? kernelkit::BlasOp::T : kernelkit::BlasOp::N;
}
}  // namespace

cudaError_t gemv(bool trans, int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                 const float* x, float beta, float* y, cudaStream_t s) {
  return kernelkit::gemv(blas_op(trans), m, n, alpha, A, lda, x, beta, y, s);
}

cudaError_t sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc, cudaStream_t s) {
  return kernelkit::sgemm(blas_op(trans_a), blas_op(trans_b), m, n, k, alpha, A, lda, B, ldb, beta,
                          C, ldc, s);
}

}  // namespace kkpy
