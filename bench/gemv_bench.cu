// gemv (y = A x) and gemv_t (y = A^T x), f32, row-major A: kernelkit against cublasSgemv
// (called directly, row-major A read as the column-major A^T), and the gemv ladder at
// 8192x8192. alpha = 1, beta = 0, so bytes = A + x + y (each read or written once);
// flops = 2 m n. A is 256 MB or more, far past the 50 MB L2.
#include <cublas_v2.h>

#include <memory>
#include <string>
#include <vector>

#include "cublas_util.cuh"
#include "harness.cuh"
#include "kernelkit/blas/gemv.cuh"
#include "ladder/gemv/registry.cuh"

namespace {

using kernelkit::BlasOp;

using kkbench::make_cublas;

// Checks y against a float64 reference at up to 64 sampled outputs, reading only the
// rows (BlasOp::N) or columns (BlasOp::T) of A it needs.
void verify_gemv(const std::string& what, BlasOp op, int64_t m, int64_t n, const float* A,
                 const float* x, const float* y) {
  const int64_t xs = op == BlasOp::N ? n : m, ys = op == BlasOp::N ? m : n;
  std::vector<float> hx(xs), hy(ys), line(xs);
  BENCH_CUDA(cudaMemcpy(hx.data(), x, xs * sizeof(float), cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(hy.data(), y, ys * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<double> got, ref;
  for (size_t k : kkbench::sample_indices(ys, 64)) {
    if (op == BlasOp::N) {  // row k of A
      BENCH_CUDA(cudaMemcpy(line.data(), A + k * n, n * sizeof(float), cudaMemcpyDeviceToHost));
    } else {  // column k of A: m floats, lda apart
      BENCH_CUDA(cudaMemcpy2D(line.data(), sizeof(float), A + k, n * sizeof(float), sizeof(float),
                              m, cudaMemcpyDeviceToHost));
    }
    double s = 0;
    for (int64_t i = 0; i < xs; ++i)
      s += double(line[i]) * hx[i];
    ref.push_back(s);
    got.push_back(hy[k]);
  }
  // |a|, |x| <= 1: float summation error stays below inner * eps
  kkbench::verify(what, got, ref, 1e-5, 1.2e-7 * double(xs));
}

enum class Impl { kKernelkit, kCublas, kLadder };

void add_gemv_case(BlasOp op, Impl impl, int64_t m, int64_t n, int ladder_step = 0) {
  const std::string op_name = op == BlasOp::N ? "gemv" : "gemv_t";
  std::string impl_name = impl == Impl::kKernelkit ? "kernelkit" : "cublas";
  if (impl == Impl::kLadder)
    impl_name = std::string("ladder.") + kernelkit::ladder::gemv::kSteps[ladder_step].name;
  const std::string name = op_name + "/" + impl_name + "/f32/" + kkbench::dims(m, n);
  const int64_t xs = op == BlasOp::N ? n : m, ys = op == BlasOp::N ? m : n;
  const double bytes = double(m * n + xs + ys) * sizeof(float);
  kkbench::add_case(
      name, bytes, 2.0 * double(m) * double(n), [=](cudaStream_t s) -> kkbench::Launch {
        auto A = kkbench::random_array<float>(m * n, 61);
        auto x = kkbench::random_array<float>(xs, 62);
        auto y = kkbench::poisoned_array<float>(ys);
        kkbench::Launch launch;
        if (impl == Impl::kKernelkit) {
          launch = [=](cudaStream_t st) {
            BENCH_CUDA(kernelkit::gemv(op, m, n, 1.f, A->p, n, x->p, 0.f, y->p, st));
          };
        } else if (impl == Impl::kLadder) {
          const auto fn = kernelkit::ladder::gemv::kSteps[ladder_step].fn;
          launch = [=](cudaStream_t st) {
            BENCH_CUDA(fn(m, n, 1.f, A->p, n, x->p, 0.f, y->p, st));
          };
        } else {
          // row-major A (m x n, lda n) is the column-major n x m matrix A^T:
          // A x = (A^T)^T x -> CUBLAS_OP_T on (n, m); A^T x -> CUBLAS_OP_N on (n, m)
          auto handle = make_cublas();
          const cublasOperation_t cop = op == BlasOp::N ? CUBLAS_OP_T : CUBLAS_OP_N;
          launch = [=](cudaStream_t st) {
            const float alpha = 1.f, beta = 0.f;
            BENCH_CUBLAS(cublasSetStream(handle.get(), st));
            BENCH_CUBLAS(cublasSgemv(handle.get(), cop, static_cast<int>(n), static_cast<int>(m),
                                     &alpha, A->p, static_cast<int>(n), x->p, 1, &beta, y->p, 1));
          };
        }
        launch(s);
        BENCH_CUDA(cudaStreamSynchronize(s));
        verify_gemv(name, op, m, n, A->p, x->p, y->p);
        return launch;
      });
}

KKBENCH_CASES {
  const int64_t shapes[][2] = {{8192, 8192}, {16384, 16384}, {65536, 1024}, {1024, 65536}};
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& sh : shapes) {
      add_gemv_case(op, Impl::kKernelkit, sh[0], sh[1]);
      add_gemv_case(op, Impl::kCublas, sh[0], sh[1]);
    }
  constexpr int kSteps =
      sizeof(kernelkit::ladder::gemv::kSteps) / sizeof(kernelkit::ladder::gemv::kSteps[0]);
  for (int k = 0; k < kSteps; ++k)
    add_gemv_case(BlasOp::N, Impl::kLadder, 8192, 8192, k);
}

}  // namespace
