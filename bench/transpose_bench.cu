// transpose: kernelkit against cublasSgeam (C = A^T with the row-major <-> column-major
// mapping) and the ladder steps. bytes = rows x cols elements read once + written once.
// Every case is verified once: all elements on the device (bit-exact) and sampled
// elements against a float64 reference through kkbench::verify.
#include <cublas_v2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cublas_util.cuh"
#include "harness.cuh"
#include "kernelkit/transpose/transpose.cuh"
#include "ladder/transpose/registry.cuh"

namespace {

template <typename T>
const char* dtype() {
  return sizeof(T) == 2 ? "f16" : "f32";
}

// Counts out elements (cols x rows) whose bits differ from their source in in.
template <typename U>
__global__ void count_mismatches_kernel(const U* in, const U* out, int64_t rows, int64_t cols,
                                        unsigned long long* bad) {
  unsigned long long local = 0;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < rows * cols;
       o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = o / rows, r = o - c * rows;
    local += out[o] != in[r * cols + c];
  }
  if (local) atomicAdd(bad, local);
}

template <typename T>
T fetch(const T* p, size_t i) {
  T v;
  BENCH_CUDA(cudaMemcpy(&v, p + i, sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

template <typename T>
void verify_transpose(const std::string& name, const T* in, const T* out, int64_t rows,
                      int64_t cols) {
  using U = kernelkit::detail::transpose_bits_t<sizeof(T)>;
  auto bad = kkbench::poisoned_array<unsigned long long>(1);
  BENCH_CUDA(cudaMemset(bad->p, 0, sizeof(unsigned long long)));
  count_mismatches_kernel<U><<<2048, 256>>>(reinterpret_cast<const U*>(in),
                                            reinterpret_cast<const U*>(out), rows, cols, bad->p);
  BENCH_CUDA(cudaGetLastError());
  BENCH_CUDA(cudaDeviceSynchronize());
  const unsigned long long wrong = bad->download(1)[0];
  if (wrong != 0)
    throw std::runtime_error(name + ": " + std::to_string(wrong) + " elements misplaced");
  std::vector<double> got, ref;
  for (size_t o : kkbench::sample_indices(static_cast<size_t>(rows * cols), 2048)) {
    const size_t c = o / rows, r = o % rows;
    got.push_back(kernelkit::convert<double>(fetch(out, o)));
    ref.push_back(kernelkit::convert<double>(fetch(in, r * cols + c)));
  }
  kkbench::verify(name, got, ref, 0.0);
}

using Op = std::function<void(const void* in, void* out, cudaStream_t s)>;

// Registers one case: allocates rows x cols inputs, runs op once, verifies it.
template <typename T>
void add_transpose_case(const std::string& impl, int64_t rows, int64_t cols,
                        std::function<Op(cudaStream_t)> make_op) {
  const std::string name = "transpose/" + impl + "/" + dtype<T>() + "/" + kkbench::dims(rows, cols);
  const double bytes = 2.0 * rows * cols * sizeof(T);
  kkbench::add_case(name, bytes, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * cols);
    auto in = kkbench::random_array<T>(n, 42);
    auto out = kkbench::poisoned_array<T>(n);
    Op op = make_op(s);
    auto launch = [in, out, op](cudaStream_t st) { op(in->p, out->p, st); };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    verify_transpose<T>(name, in->p, out->p, rows, cols);
    return launch;
  });
}

template <typename T>
std::function<Op(cudaStream_t)> library_op(int64_t rows, int64_t cols) {
  return [=](cudaStream_t) -> Op {
    return [=](const void* in, void* out, cudaStream_t st) {
      BENCH_CUDA(
          kernelkit::transpose(static_cast<const T*>(in), static_cast<T*>(out), rows, cols, st));
    };
  };
}

std::function<Op(cudaStream_t)> ladder_op(kernelkit::ladder::transpose::Fn<float> fn, int64_t rows,
                                          int64_t cols) {
  return [=](cudaStream_t) -> Op {
    return [=](const void* in, void* out, cudaStream_t st) {
      BENCH_CUDA(fn(static_cast<const float*>(in), static_cast<float*>(out), rows, cols, st));
    };
  };
}

// Row-major in (rows x cols) is column-major A (cols x rows, lda = cols); row-major out
// (cols x rows) is column-major C (rows x cols, ldc = rows); C = 1 * A^T + 0 * C (B = C,
// ldb = ldc, transb = N: cuBLAS's documented in-place form, B unread with beta = 0).
std::function<Op(cudaStream_t)> cublas_op(int64_t rows, int64_t cols) {
  return [=](cudaStream_t s) -> Op {
    auto handle = kkbench::make_cublas();
    BENCH_CUBLAS(cublasSetStream(handle.get(), s));
    const int m = static_cast<int>(rows), n = static_cast<int>(cols);
    return [=](const void* in, void* out, cudaStream_t st) {
      BENCH_CUBLAS(cublasSetStream(handle.get(), st));
      const float alpha = 1.f, beta = 0.f;
      float* c = static_cast<float*>(out);
      BENCH_CUBLAS(cublasSgeam(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, &alpha,
                               static_cast<const float*>(in), n, &beta, c, m, c, m));
    };
  };
}

KKBENCH_CASES {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {8192, 8192}, {16384, 16384}, {4096, 65536}, {8191, 8193}};
  for (const auto& [rows, cols] : shapes) {
    add_transpose_case<float>("kernelkit", rows, cols, library_op<float>(rows, cols));
    add_transpose_case<float>("cublas", rows, cols, cublas_op(rows, cols));
  }
  for (const auto& e : kernelkit::ladder::transpose::registry<float>())
    add_transpose_case<float>(std::string("ladder.") + e.name, 8192, 8192,
                              ladder_op(e.fn, 8192, 8192));
  add_transpose_case<__half>("kernelkit", 8192, 8192, library_op<__half>(8192, 8192));
}

}  // namespace
