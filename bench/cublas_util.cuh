// SPDX-License-Identifier: Apache-2.0
// cuBLAS for the baseline cases: a status check that throws (the harness turns it into an
// error case) and one handle for the whole run, with the default math mode (no TF32). Each
// launch sets the handle's stream to its own.
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

#include "kernelkit/blas/blas.cuh"

#define BENCH_CUBLAS(expr)                                               \
  do {                                                                   \
    const cublasStatus_t kk_s_ = (expr);                                 \
    if (kk_s_ != CUBLAS_STATUS_SUCCESS)                                  \
      throw std::runtime_error(std::string(#expr) + ": cuBLAS status " + \
                               std::to_string(static_cast<int>(kk_s_))); \
  } while (0)

namespace kkbench {

// The run's handle, created on first use (never destroyed: it lives until the process ends).
inline cublasHandle_t cublas() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    BENCH_CUBLAS(cublasCreate(&h));
    BENCH_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // no TF32
    return h;
  }();
  return handle;
}

inline cublasOperation_t cublas_op(kernelkit::BlasOp op) {
  return op == kernelkit::BlasOp::N ? CUBLAS_OP_N : CUBLAS_OP_T;
}

}  // namespace kkbench
