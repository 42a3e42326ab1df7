// The benchmark harness: a case is a name, the fewest bytes it must move (and the flops it
// does, for gemm/gemv), and a setup function that allocates and fills its inputs, runs and
// verifies the operation once, and returns the launch to time. Timing uses CUDA events on
// a stream the harness owns, after a warm-up; the rate counters are computed from the
// event times (not Google Benchmark's CPU clock).
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernelkit/core/types.cuh"

#define BENCH_CUDA(expr)                                                               \
  do {                                                                                 \
    const cudaError_t kk_e_ = (expr);                                                  \
    if (kk_e_ != cudaSuccess)                                                          \
      throw std::runtime_error(std::string(#expr) + ": " + cudaGetErrorString(kk_e_)); \
  } while (0)

namespace kkbench {

using Launch = std::function<void(cudaStream_t)>;
using Setup = std::function<Launch(cudaStream_t)>;

// Registers a case. bytes: fewest bytes moved per launch; flops: floating-point operations
// per launch (0 when not meaningful). setup(stream) prepares inputs, verifies one run
// (throwing std::runtime_error on a wrong result) and returns the launch to time.
void add_case(const std::string& name, double bytes, double flops, Setup setup);

// Registers cases at static-initialisation time: KKBENCH_CASES { add_case(...); }
#define KKBENCH_CONCAT2(a, b) a##b
#define KKBENCH_CONCAT(a, b) KKBENCH_CONCAT2(a, b)
#define KKBENCH_CASES                                              \
  static void KKBENCH_CONCAT(kkbench_register_, __LINE__)();       \
  static const int KKBENCH_CONCAT(kkbench_registered_, __LINE__) = \
      (KKBENCH_CONCAT(kkbench_register_, __LINE__)(), 0);          \
  static void KKBENCH_CONCAT(kkbench_register_, __LINE__)()

// Owning device allocation, shared by the setup and the launch closure.
template <typename T>
struct DeviceArray {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceArray(size_t count) : n(count) {
    if (n) BENCH_CUDA(cudaMalloc(&p, n * sizeof(T)));
  }
  ~DeviceArray() {
    if (p) cudaFree(p);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  std::vector<T> download(size_t count) const {
    std::vector<T> h(count);
    BENCH_CUDA(cudaMemcpy(h.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  std::vector<T> download() const { return download(n); }
};

template <typename T>
using Array = std::shared_ptr<DeviceArray<T>>;

namespace detail {
__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void fill_uniform_kernel(T* p, int64_t n, uint64_t seed, double lo, double hi) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const double u = (mix64(seed * 0x100000001B3ull + i) >> 11) * 0x1.0p-53;
    const double v = lo + (hi - lo) * u;
    if constexpr (std::is_integral_v<T>) {
      p[i] = static_cast<T>(floor(v));
    } else {
      p[i] = kernelkit::convert<T>(v);
    }
  }
}
}  // namespace detail

// Uniform random values in [lo, hi) (integers: floor of that), generated on the device.
template <typename T>
Array<T> random_array(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  auto a = std::make_shared<DeviceArray<T>>(n);
  if (n) {
    detail::fill_uniform_kernel<T><<<1024, 256>>>(a->p, static_cast<int64_t>(n), seed, lo, hi);
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaDeviceSynchronize());
  }
  return a;
}

// An output array with every byte 0xFF (NaN / -1), so an unwritten element shows. The fill
// runs on the legacy default stream and the cases launch on a non-blocking stream, which
// does not wait for it: without the synchronize, the tail of the fill could land after the
// first launch wrote (seen once: transpose/ladder.v0_naive reported 4 elements misplaced).
template <typename T>
Array<T> poisoned_array(size_t n) {
  auto a = std::make_shared<DeviceArray<T>>(n);
  if (n) {
    BENCH_CUDA(cudaMemset(a->p, 0xFF, n * sizeof(T)));
    BENCH_CUDA(cudaDeviceSynchronize());
  }
  return a;
}

// Checks got against the float64 reference at `count` evenly spaced indices (all when
// count >= size): |got - ref| <= atol + rtol * |ref|, NaN only where the reference is NaN.
// Throws with the first mismatch.
void verify(const std::string& what, const std::vector<double>& got, const std::vector<double>& ref,
            double rtol, double atol = 0.0);

template <typename T>
std::vector<double> to_doubles(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    d[i] = kernelkit::convert<double>(v[i]);
  return d;
}

// Indices spread over [0, n): `count` of them, first and last included.
std::vector<size_t> sample_indices(size_t n, size_t count);

// Size names used in case names.
inline std::string dims(int64_t a) {
  return std::to_string(a);
}
inline std::string dims(int64_t a, int64_t b) {
  return std::to_string(a) + "x" + std::to_string(b);
}
inline std::string dims(int64_t a, int64_t b, int64_t c) {
  return dims(a, b) + "x" + std::to_string(c);
}

}  // namespace kkbench
