// SPDX-License-Identifier: Apache-2.0
// gemv (y = A x) and gemv_t (y = A^T x), f32, row-major A (m x n, lda >= n): kernelkit against
// cublasSgemv (row-major A read as the column-major A^T), over the listed shapes of issue 14
// (lda = n) and generated ones (bench/shapes.h; "_ldL": lda = L > n). alpha = 1, beta = 0, so
// bytes = A's m x n elements + x + y (each read or written once); flops = 2 m n. Each case is
// verified once at 64 sampled outputs against float64 dot products.
#include <cublas_v2.h>

#include <memory>
#include <type_traits>
#include <string>
#include <vector>

#include "cublas_util.cuh"
#include "checks.cuh"
#include "harness.cuh"
#include "kernelkit/blas/gemv.cuh"
#include "shapes.h"

namespace {

// The adapter: every call this file makes into kernelkit goes through the two functions
// below, so an API change is one line here (bench/NOTES.md "Timing"). gemv's workspace
// overload (`gemv(..., y, workspace, workspace_bytes, stream)` with `gemv_workspace_bytes(op,
// m, n)`) is used when the included library has it, else the plain call: the same harness
// then times a tree from before the overload (KERNELKIT_BENCH_INCLUDE_OVERRIDE). The check
// is an unqualified call on BlasOp, found by argument-dependent lookup if it is declared.
template <typename Op, typename = void>
struct HasGemvWorkspace : std::false_type {};
template <typename Op>
struct HasGemvWorkspace<
    Op, std::void_t<decltype(gemv_workspace_bytes(std::declval<Op>(), int64_t{}, int64_t{}))>>
    : std::true_type {};

template <typename Op = kernelkit::BlasOp>
size_t kk_gemv_workspace_bytes(Op op, int64_t m, int64_t n) {
  if constexpr (HasGemvWorkspace<Op>::value) {
    return gemv_workspace_bytes(op, m, n);
  } else {
    return 0;
  }
}
template <typename Op = kernelkit::BlasOp>
cudaError_t kk_gemv(Op op, int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                    const float* x, float beta, float* y, void* ws, size_t ws_bytes,
                    cudaStream_t s) {
  if constexpr (HasGemvWorkspace<Op>::value) {
    return kernelkit::gemv(op, m, n, alpha, A, lda, x, beta, y, ws, ws_bytes, s);
  } else {
    return kernelkit::gemv(op, m, n, alpha, A, lda, x, beta, y, s);
  }
}

using kernelkit::BlasOp;

using kkbench::GemvShape;

const GemvShape kShapes[] = {{1, 33554432}, {33554432, 1}, {3, 8388608},  {8388608, 3},
                             {8, 4194304},  {4194304, 8},  {64, 524288},  {524288, 64},
                             {1024, 32768}, {4096, 4096},  {8192, 8192},  {14336, 4096},
                             {4096, 14336}, {32000, 4096}, {50257, 4096}, {151936, 4096}};

void add_gemv_case(BlasOp op, bool cublas, GemvShape sh) {
  const int64_t m = sh.m, n = sh.n, lda = sh.lda();
  const std::string name = kkbench::case_name<float>(op == BlasOp::N ? "gemv" : "gemv_t",
                                                     cublas ? "cublas" : "kernelkit", sh.name());
  const int64_t xs = op == BlasOp::N ? n : m, ys = op == BlasOp::N ? m : n;
  const kkbench::Traffic traffic{(double(m) * double(n) + double(xs)) * sizeof(float),
                                 double(ys) * sizeof(float)};
  kkbench::add_case(
      name, traffic, 2.0 * double(m) * double(n), [=](cudaStream_t s) -> kkbench::Launch {
        auto A = kkbench::random_array<float>(size_t((m - 1) * lda + n), 61);
        auto x = kkbench::random_array<float>(size_t(xs), 62);
        auto y = kkbench::poisoned_array<float>(size_t(ys));
        kkbench::Launch launch;
        if (!cublas) {
          auto ws = kkbench::zeroed_workspace(kk_gemv_workspace_bytes(op, m, n));
          launch = [=](cudaStream_t st) {
            BENCH_CUDA(kk_gemv(op, m, n, 1.f, A->p, lda, x->p, 0.f, y->p, ws->p, ws->n, st));
          };
        } else {
          // row-major A (m x n, lda n) is the column-major n x m matrix A^T:
          // A x = (A^T)^T x -> CUBLAS_OP_T on (n, m); A^T x -> CUBLAS_OP_N on (n, m)
          const cublasOperation_t cop = op == BlasOp::N ? CUBLAS_OP_T : CUBLAS_OP_N;
          launch = [=](cudaStream_t st) {
            cublasHandle_t h = kkbench::cublas();
            const float alpha = 1.f, beta = 0.f;
            BENCH_CUBLAS(cublasSetStream(h, st));
            BENCH_CUBLAS(cublasSgemv(h, cop, static_cast<int>(n), static_cast<int>(m), &alpha, A->p,
                                     static_cast<int>(lda), x->p, 1, &beta, y->p, 1));
          };
        }
        launch(s);
        BENCH_CUDA(cudaStreamSynchronize(s));
        kkbench::check_gemv(name, op, m, n, A->p, lda, x->p, y->p);
        return launch;
      });
}

KKBENCH_CASES {
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const GemvShape& sh : kShapes) {
      add_gemv_case(op, false, sh);
      add_gemv_case(op, true, sh);
    }
}

KKBENCH_GENERATED("gemv", gen) {
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const GemvShape& sh : gen.gemv(24)) {
      add_gemv_case(op, false, sh);
      add_gemv_case(op, true, sh);
    }
}

}  // namespace
