// cuBLAS for the baseline cases: a status check that throws (the harness turns it into a
// skipped case) and a shared handle with the default math mode (no TF32).
#pragma once

#include <cublas_v2.h>

#include <memory>
#include <stdexcept>
#include <string>

#define BENCH_CUBLAS(expr)                                               \
  do {                                                                   \
    const cublasStatus_t kk_s_ = (expr);                                 \
    if (kk_s_ != CUBLAS_STATUS_SUCCESS)                                  \
      throw std::runtime_error(std::string(#expr) + ": cuBLAS status " + \
                               std::to_string(static_cast<int>(kk_s_))); \
  } while (0)

namespace kkbench {
inline std::shared_ptr<cublasContext> make_cublas() {
  cublasHandle_t h = nullptr;
  BENCH_CUBLAS(cublasCreate(&h));
  BENCH_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // no TF32
  return std::shared_ptr<cublasContext>(h, [](cublasHandle_t p) { cublasDestroy(p); });
}
}  // namespace kkbench
