// sgemm, f32, row-major, C = A B (alpha = 1, beta = 0, BlasOp::N for both): kernelkit against
// cublasSgemm (CUBLAS_DEFAULT_MATH: TF32 off; row-major C = A B computed as the
// column-major C^T = B^T A^T), at 1024^3 .. 8192^3 and 4095x4097x1023, and every ladder step
// at 4096^3 (the three slowest at 2048^3). bytes = A + B + C once each; flops = 2 m n k
// (flops_per_second is the figure of merit).
#include <cublas_v2.h>

#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cublas_util.cuh"
#include "harness.cuh"
#include "kernelkit/blas/sgemm.cuh"
#include "ladder/sgemm/registry.cuh"

namespace {

using kernelkit::BlasOp;

using kkbench::make_cublas;

// C against a float64 reference at 64 sampled elements (row of A, column of B each).
void verify_sgemm(const std::string& what, int64_t m, int64_t n, int64_t k, const float* A,
                  const float* B, const float* C) {
  std::vector<float> arow(k), bcol(k);
  std::vector<double> got, ref;
  for (size_t e : kkbench::sample_indices(size_t(m * n), 64)) {
    const int64_t i = int64_t(e) / n, j = int64_t(e) % n;
    BENCH_CUDA(cudaMemcpy(arow.data(), A + i * k, k * sizeof(float), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy2D(bcol.data(), sizeof(float), B + j, n * sizeof(float), sizeof(float), k,
                            cudaMemcpyDeviceToHost));
    float c = 0;
    BENCH_CUDA(cudaMemcpy(&c, C + e, sizeof(float), cudaMemcpyDeviceToHost));
    double s = 0;
    for (int64_t p = 0; p < k; ++p)
      s += double(arow[p]) * bcol[p];
    ref.push_back(s);
    got.push_back(c);
  }
  // |a|, |b| <= 1: fp32 summation error ~ k u |partial sums|, far below 1e-6 k
  kkbench::verify(what, got, ref, 1e-5, 1e-6 * double(k));
}

enum class Impl { kKernelkit, kCublas, kLadder };

void add_sgemm_case(Impl impl, int64_t m, int64_t n, int64_t k, int step = 0) {
  std::string impl_name = impl == Impl::kKernelkit ? "kernelkit" : "cublas";
  if (impl == Impl::kLadder)
    impl_name = std::string("ladder.") + kernelkit::ladder::sgemm::kSteps[step].name;
  const std::string name = "sgemm/" + impl_name + "/f32/" + kkbench::dims(m, n, k);
  const double bytes = double(m * k + k * n + m * n) * sizeof(float);
  const double flops = 2.0 * double(m) * double(n) * double(k);
  kkbench::add_case(name, bytes, flops, [=](cudaStream_t s) -> kkbench::Launch {
    auto A = kkbench::random_array<float>(m * k, 71);
    auto B = kkbench::random_array<float>(k * n, 72);
    auto C = kkbench::poisoned_array<float>(m * n);
    kkbench::Launch launch;
    if (impl == Impl::kKernelkit) {
      launch = [=](cudaStream_t st) {
        BENCH_CUDA(
            kernelkit::sgemm(BlasOp::N, BlasOp::N, m, n, k, 1.f, A->p, k, B->p, n, 0.f, C->p, n, st));
      };
    } else if (impl == Impl::kLadder) {
      const auto fn = kernelkit::ladder::sgemm::kSteps[step].fn;
      launch = [=](cudaStream_t st) {
        BENCH_CUDA(fn(BlasOp::N, BlasOp::N, m, n, k, 1.f, A->p, k, B->p, n, 0.f, C->p, n, st));
      };
    } else {
      // row-major X (r x c) is the column-major X^T: C^T (n x m) = B^T (n x k) A^T (k x m)
      auto handle = make_cublas();
      launch = [=](cudaStream_t st) {
        const float alpha = 1.f, beta = 0.f;
        BENCH_CUBLAS(cublasSetStream(handle.get(), st));
        BENCH_CUBLAS(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                                 static_cast<int>(m), static_cast<int>(k), &alpha, B->p,
                                 static_cast<int>(n), A->p, static_cast<int>(k), &beta, C->p,
                                 static_cast<int>(n)));
      };
    }
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    verify_sgemm(name, m, n, k, A->p, B->p, C->p);
    return launch;
  });
}

KKBENCH_CASES {
  const int64_t shapes[][3] = {{1024, 1024, 1024},
                               {2048, 2048, 2048},
                               {4096, 4096, 4096},
                               {8192, 8192, 8192},
                               {4095, 4097, 1023}};
  for (const auto& sh : shapes) {
    add_sgemm_case(Impl::kKernelkit, sh[0], sh[1], sh[2]);
    add_sgemm_case(Impl::kCublas, sh[0], sh[1], sh[2]);
  }
  for (int step = 0; step < kernelkit::ladder::sgemm::kNumSteps; ++step) {
    const int64_t size = step < 3 ? 2048 : 4096;  // v0..v2 take 0.1-1 s at 4096^3
    add_sgemm_case(Impl::kLadder, size, size, size, step);
  }
}

}  // namespace
