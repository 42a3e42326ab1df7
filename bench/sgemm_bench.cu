// SPDX-License-Identifier: Apache-2.0
// sgemm, f32, row-major, C = op(A) op(B) (alpha = 1, beta = 0): kernelkit against cublasSgemm
// (CUBLAS_DEFAULT_MATH: TF32 off; row-major C = op(A) op(B) computed as the column-major
// C^T = op(B)^T op(A)^T, with the same op flags), over the listed shapes of issue 14
// (m x n x k, leading dimensions the stored row lengths) and generated ones (bench/shapes.h:
// odd sizes, small M, long K, "_ldAxBxC": padded lda, ldb, ldc): sgemm (NN) and sgemm_tn /
// _nt / _tt. bytes = A + B + C once each; flops = 2 m n k (flops_per_second is the figure of
// merit; compute-bound, so no sol_ratio). Each case is verified once at 64 sampled elements
// of C against float64 dot products.
#include <cublas_v2.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cublas_util.cuh"
#include "checks.cuh"
#include "harness.cuh"
#include "kernelkit/blas/sgemm.cuh"
#include "shapes.h"

// sgemm's workspace overload (`sgemm(..., C, ldc, workspace, workspace_bytes, stream)` with
// `sgemm_workspace_bytes(m, n, k)`) is used when the included library has it: an unqualified
// call, dependent on I, that ordinary lookup finds through the using-directive when the
// function is declared, and nothing finds when it is not (a tree from before the overload,
// through KERNELKIT_BENCH_INCLUDE_OVERRIDE).
namespace kkbench_detect {
using namespace kernelkit;
template <typename I, typename = void>
struct HasSgemmWorkspace : std::false_type {};
template <typename I>
struct HasSgemmWorkspace<I, std::void_t<decltype(sgemm_workspace_bytes(
                                std::declval<I>(), std::declval<I>(), std::declval<I>()))>>
    : std::true_type {};
template <typename I>
size_t sgemm_workspace(I m, I n, I k) {
  return sgemm_workspace_bytes(m, n, k);
}
}  // namespace kkbench_detect

namespace {

// The adapter: every call this file makes into kernelkit goes through the two functions
// below, so an API change is one line here (bench/NOTES.md "Timing").
template <typename I = int64_t>
size_t kk_sgemm_workspace_bytes(kernelkit::BlasOp /*op_a*/, kernelkit::BlasOp /*op_b*/, I m, I n,
                                I k) {
  if constexpr (kkbench_detect::HasSgemmWorkspace<I>::value) {
    return kkbench_detect::sgemm_workspace(m, n, k);
  } else {
    return 0;
  }
}
template <typename I = int64_t>
cudaError_t kk_sgemm(kernelkit::BlasOp op_a, kernelkit::BlasOp op_b, I m, I n, I k, float alpha,
                     const float* A, I lda, const float* B, I ldb, float beta, float* C, I ldc,
                     void* ws, size_t ws_bytes, cudaStream_t s) {
  if constexpr (kkbench_detect::HasSgemmWorkspace<I>::value) {
    return kernelkit::sgemm(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, ws, ws_bytes,
                            s);
  } else {
    return kernelkit::sgemm(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, s);
  }
}

using kernelkit::BlasOp;

using kkbench::GemmShape;

const GemmShape kNnShapes[] = {
    {512, 512, 512},     {1000, 1000, 1000},  {1024, 1024, 1024},  {2000, 2000, 2000},
    {2048, 2048, 2048},  {3000, 3000, 3000},  {4096, 4096, 4096},  {6000, 6000, 6000},
    {8192, 8192, 8192},  {4096, 11008, 4096}, {4096, 4096, 11008}, {4096, 14336, 4096},
    {4096, 1024, 4096},  {1, 4096, 4096},     {8, 4096, 4096},     {32, 4096, 4096},
    {128, 4096, 4096},   {1, 14336, 4096},    {8192, 8192, 32},    {8192, 8192, 256},
    {1024, 1024, 32768}, {256, 256, 262144}};
const GemmShape kOpShapes[] = {{2048, 2048, 2048}, {3000, 3000, 3000}};

std::string op_name(BlasOp a, BlasOp b) {
  if (a == BlasOp::N && b == BlasOp::N) return "sgemm";
  return std::string("sgemm_") + (a == BlasOp::N ? "n" : "t") + (b == BlasOp::N ? "n" : "t");
}

// Row-major storage: op(A) is m x k (A stored m x k, lda >= k, or k x m, lda >= m when
// transposed); op(B) is k x n (B stored k x n, ldb >= n, or n x k, ldb >= k); C is m x n,
// ldc >= n. The shape gives each leading dimension (its stored row length plus a pad).
struct Layout {
  int64_t lda, ldb, ldc;
  int64_t a_rows, b_rows;  // stored rows of A and B
};
Layout layout(BlasOp a, BlasOp b, const GemmShape& sh) {
  const bool ta = a == BlasOp::T, tb = b == BlasOp::T;
  return {sh.lda(ta), sh.ldb(tb), sh.ldc(), ta ? sh.k : sh.m, tb ? sh.n : sh.k};
}
// elements spanned by `rows` rows of length `cols` with leading dimension ld
size_t span(int64_t rows, int64_t cols, int64_t ld) {
  return size_t((rows - 1) * ld + cols);
}

void add_sgemm_case(BlasOp op_a, BlasOp op_b, bool cublas, GemmShape sh) {
  const int64_t m = sh.m, n = sh.n, k = sh.k;
  const bool ta = op_a == BlasOp::T, tb = op_b == BlasOp::T;
  const std::string name = kkbench::case_name<float>(
      op_name(op_a, op_b), cublas ? "cublas" : "kernelkit", sh.name(ta, tb));
  const kkbench::Traffic traffic{(double(m) * k + double(k) * n) * sizeof(float),
                                 double(m) * n * sizeof(float)};
  const double flops = 2.0 * double(m) * double(n) * double(k);
  kkbench::add_case(
      name, traffic, flops,
      [=](cudaStream_t s) -> kkbench::Launch {
        const Layout l = layout(op_a, op_b, sh);
        auto A = kkbench::random_array<float>(span(l.a_rows, ta ? m : k, l.lda), 71);
        auto B = kkbench::random_array<float>(span(l.b_rows, tb ? k : n, l.ldb), 72);
        auto C = kkbench::poisoned_array<float>(span(m, n, l.ldc));
        kkbench::Launch launch;
        if (!cublas) {
          auto ws = kkbench::zeroed_workspace(kk_sgemm_workspace_bytes(op_a, op_b, m, n, k));
          launch = [=](cudaStream_t st) {
            BENCH_CUDA(kk_sgemm(op_a, op_b, m, n, k, 1.f, A->p, l.lda, B->p, l.ldb, 0.f, C->p,
                                l.ldc, ws->p, ws->n, st));
          };
        } else {
          // row-major X is the column-major X^T: C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m)
          launch = [=](cudaStream_t st) {
            cublasHandle_t h = kkbench::cublas();
            const float alpha = 1.f, beta = 0.f;
            BENCH_CUBLAS(cublasSetStream(h, st));
            BENCH_CUBLAS(cublasSgemm(
                h, kkbench::cublas_op(op_b), kkbench::cublas_op(op_a), static_cast<int>(n),
                static_cast<int>(m), static_cast<int>(k), &alpha, B->p, static_cast<int>(l.ldb),
                A->p, static_cast<int>(l.lda), &beta, C->p, static_cast<int>(l.ldc)));
          };
        }
        launch(s);
        BENCH_CUDA(cudaStreamSynchronize(s));
        kkbench::check_sgemm(name, op_a, op_b, m, n, k, A->p, l.lda, B->p, l.ldb, C->p, l.ldc);
        return launch;
      },
      kkbench::Bound::kCompute);
}

void add_sgemm_cases(BlasOp op_a, BlasOp op_b, const GemmShape& sh) {
  add_sgemm_case(op_a, op_b, false, sh);
  add_sgemm_case(op_a, op_b, true, sh);
}

constexpr std::pair<BlasOp, BlasOp> kOtherOps[] = {
    {BlasOp::T, BlasOp::N}, {BlasOp::N, BlasOp::T}, {BlasOp::T, BlasOp::T}};

KKBENCH_CASES {
  for (const GemmShape& sh : kNnShapes)
    add_sgemm_cases(BlasOp::N, BlasOp::N, sh);
  for (const auto& ops : kOtherOps)
    for (const GemmShape& sh : kOpShapes)
      add_sgemm_cases(ops.first, ops.second, sh);
}

KKBENCH_GENERATED("sgemm", gen) {
  for (const GemmShape& sh : gen.gemm(48, false, false))
    add_sgemm_cases(BlasOp::N, BlasOp::N, sh);
  for (const auto& ops : kOtherOps)
    for (const GemmShape& sh : gen.gemm(16, ops.first == BlasOp::T, ops.second == BlasOp::T))
      add_sgemm_cases(ops.first, ops.second, sh);
}

}  // namespace
