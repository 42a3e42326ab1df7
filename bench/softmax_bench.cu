// softmax / log_softmax: the library at the issue's shapes and types, and the ladder at
// 65536x1024 f32. bytes = rows * cols * sizeof(T) read + the same written. Each case is
// verified once on 16 sampled rows against a float64 reference.
#include <cmath>
#include <string>
#include <vector>

#include "harness.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "ladder/softmax/registry.cuh"

namespace {

template <typename T>
const char* dtype_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, __half>) return "f16";
  return "bf16";
}

template <typename T>
double rel_tol() {
  if constexpr (std::is_same_v<T, float>) return 1e-4;
  if constexpr (std::is_same_v<T, __half>) return 2e-3;
  return 1.6e-2;
}

// Checks 16 rows spread over the matrix (only those rows are copied back).
template <typename T>
void verify_rows(const std::string& what, const T* d_in, const T* d_out, int64_t rows, int64_t cols,
                 bool log) {
  std::vector<double> got, ref;
  std::vector<T> xin(cols), xout(cols);
  for (size_t r : kkbench::sample_indices(rows, 16)) {
    BENCH_CUDA(cudaMemcpy(xin.data(), d_in + r * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(xout.data(), d_out + r * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, kernelkit::convert<double>(xin[c]));
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(kernelkit::convert<double>(xin[c]) - m);
    for (size_t c : kkbench::sample_indices(cols, 256)) {
      const double x = kernelkit::convert<double>(xin[c]);
      ref.push_back(log ? (x - m) - std::log(s) : std::exp(x - m) / s);
      got.push_back(kernelkit::convert<double>(xout[c]));
    }
  }
  // f16 outputs below 2^-14 are subnormal: their spacing is 2^-24 absolute
  const double atol = log ? 1e-4 : (std::is_same_v<T, __half> ? 0x1p-24 : 1e-9);
  kkbench::verify(what, got, ref, rel_tol<T>(), atol);
}

template <typename T, typename Fn>
void add_softmax_case(const std::string& name, int64_t rows, int64_t cols, bool log, Fn fn) {
  const double bytes = 2.0 * double(rows) * double(cols) * sizeof(T);
  kkbench::add_case(name, bytes, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * cols);
    auto in = kkbench::random_array<T>(n, 11, -8.0, 8.0);
    auto out = kkbench::poisoned_array<T>(n);
    auto launch = [=](cudaStream_t st) { BENCH_CUDA(fn(in->p, out->p, rows, cols, st)); };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    verify_rows<T>(name, in->p, out->p, rows, cols, log);
    return launch;
  });
}

template <typename T>
void add_library_cases() {
  const int64_t shapes[][2] = {{1048576, 32}, {262144, 128}, {65536, 1024},
                               {16384, 4096}, {4096, 16384}, {256, 262144}};
  for (const auto& sh : shapes) {
    add_softmax_case<T>(
        std::string("softmax/kernelkit/") + dtype_name<T>() + "/" + kkbench::dims(sh[0], sh[1]),
        sh[0], sh[1], false, [](const T* a, T* b, int64_t r, int64_t c, cudaStream_t st) {
          return kernelkit::softmax(a, b, r, c, st);
        });
  }
}

KKBENCH_CASES {
  add_library_cases<float>();
  add_library_cases<__half>();
  add_library_cases<__nv_bfloat16>();
  add_softmax_case<float>("log_softmax/kernelkit/f32/65536x1024", 65536, 1024, true,
                          [](const float* a, float* b, int64_t r, int64_t c, cudaStream_t st) {
                            return kernelkit::log_softmax(a, b, r, c, st);
                          });
  // The long-row alternative the dispatch does not pick on sm_90 (online max+sum, then a
  // normalize pass: reads the input twice), against the cluster path above.
  add_softmax_case<float>("softmax/kernelkit-online/f32/256x262144", 256, 262144, false,
                          [](const float* a, float* b, int64_t r, int64_t c, cudaStream_t st) {
                            return kernelkit::detail::softmax_launch_online<
                                float, kernelkit::detail::SoftmaxAlgo::kSoftmax, 4>(a, b, r, c, st);
                          });
  add_softmax_case<__half>("softmax/kernelkit-online/f16/256x262144", 256, 262144, false,
                           [](const __half* a, __half* b, int64_t r, int64_t c, cudaStream_t st) {
                             return kernelkit::detail::softmax_launch_online<
                                 __half, kernelkit::detail::SoftmaxAlgo::kSoftmax, 8>(a, b, r, c,
                                                                                      st);
                           });
  for (const auto& v : kernelkit::ladder::kSoftmaxVersions) {
    add_softmax_case<float>(std::string("softmax/ladder.") + v.name + "/f32/65536x1024", 65536,
                            1024, false, v.fn);
  }
}

}  // namespace
