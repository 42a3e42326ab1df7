// SPDX-License-Identifier: Apache-2.0
// The benchmark harness. A case is a name `<op>/<impl>/<dtype>/<shape>`, the bytes it must
// move (its inputs read once, its outputs written once), the flops it does (gemm/gemv), and a
// setup function that allocates and fills its inputs, runs and verifies the operation once
// against a float64 reference, and returns the launch to time. A wrong result throws, and the
// case is reported as an error.
//
// Timing (harness.cu; bench/NOTES.md "Timing"): cold samples as nvbench takes them. Before
// each sample the L2 is flushed (a kernel reads twice its size) and a one-thread kernel holds the
// stream on a host-mapped flag while the host enqueues start event, the launch, stop event;
// then the host releases the flag. The launch is queued when the GPU reaches it, so a sample
// is the work's own time (ramp and tail included) without the host's launch latency. A case's
// time is the median of its samples. Two references are timed the same way in the same run,
// each once per distinct byte count:
//   - sol_ratio (memory-bound cases): the speed-of-light kernel, which reads exactly the
//     case's input bytes once and writes exactly its output bytes once (16-byte streaming
//     loads and stores, one full wave of blocks), over the case's time;
//   - copy_ratio (every case with bytes): a device-to-device cudaMemcpyAsync of bytes / 2
//     (half read, half written) over the case's time.
//
// Shapes: every op registers its LISTED shapes (KKBENCH_CASES) and its GENERATED ones
// (KKBENCH_GENERATED, drawn by bench/shapes.h from the run's seed, --kk_seed); a generated
// case carries the counter generated = 1.
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

// How a case's samples are taken.
enum class Timing {
  kCold,  // flushed L2 (clean lines only), stream held until the launch is queued (every case)
  kOld,   // the previous method, kept for the timing/old/* cases: event, launch, event,
          // synchronize, L2 as the last launch left it; host launch latency inside
};

// The fewest bytes one launch must move: every input read once, every output written once.
struct Traffic {
  double read = 0, written = 0;
  double total() const { return read + written; }
};

// Whether a case is held to the speed-of-light kernel (sol_ratio) or is compute-bound (GEMMs,
// block-level primitives: copy_ratio and flops only).
enum class Bound { kMemory, kCompute };

struct Case {
  std::string name;  // <op>/<impl>/<dtype>/<shape>
  Traffic traffic;   // bytes one launch must move (0: no sol_ratio or copy_ratio)
  double flops = 0;  // floating-point operations per launch (0: no flops_per_second)
  Setup setup;       // allocates, runs once, verifies (throws when wrong), returns the launch
  Bound bound = Bound::kMemory;
  Timing timing = Timing::kCold;
  bool optional = false;        // registered only when no other case has this name
  bool copy_reference = false;  // the copy itself: its time also serves as the copy of its bytes
  bool generated = false;       // drawn by the shape generator (set by the harness)
};

// Queues a case (listed cases register at static initialisation, generated ones when
// register_cases() runs the generators; register_cases() hands them to Google Benchmark,
// memcpy first, the ladder last, duplicates rejected).
void add(Case c);
inline void add_case(const std::string& name, Traffic traffic, double flops, Setup setup,
                     Bound bound = Bound::kMemory) {
  Case c{name, traffic, flops, std::move(setup)};
  c.bound = bound;
  add(std::move(c));
}

class ShapeGen;
// Queues a generator: register_cases() calls it with a ShapeGen seeded from the run's seed
// and `stream` (so one op's shapes do not depend on another's), and every case it adds is
// marked generated.
void add_generator(const char* stream, void (*generate)(ShapeGen&));

// Registers every queued case with Google Benchmark, after running the generators with
// `seed`. Returns false (after printing why) when two non-optional cases share a name.
bool register_cases(uint64_t seed);

// Sampling settings (kernelkit-bench --kk_* flags, parsed by main()).
struct Options {
  int min_samples = 10;           // at least this many samples per case
  int max_samples = 1000;         // at most this many
  double min_time = 0.1;          // sample until the samples add up to this many seconds (or max)
  Timing timing = Timing::kCold;  // --kk_timing=old times every case the old way (profilers)
  double spin_timeout_s = 1.0;    // the hold kernel gives up after this long
  uint64_t seed = 1;              // --kk_seed=N|random: the shape generator's seed
  bool generated = true;          // --kk_generated=false: listed shapes only
};
Options& options();

// Registers cases at static-initialisation time: KKBENCH_CASES { add_case(...); }
#define KKBENCH_CONCAT2(a, b) a##b
#define KKBENCH_CONCAT(a, b) KKBENCH_CONCAT2(a, b)
#define KKBENCH_CASES                                              \
  static void KKBENCH_CONCAT(kkbench_register_, __LINE__)();       \
  static const int KKBENCH_CONCAT(kkbench_registered_, __LINE__) = \
      (KKBENCH_CONCAT(kkbench_register_, __LINE__)(), 0);          \
  static void KKBENCH_CONCAT(kkbench_register_, __LINE__)()

// Registers a generator of cases: KKBENCH_GENERATED("softmax", gen) { ... gen.rows(...) ... }
// (`stream` names the generator's own random stream; see add_generator).
#define KKBENCH_GENERATED(stream, gen)                                                  \
  static void KKBENCH_CONCAT(kkbench_generate_, __LINE__)(kkbench::ShapeGen&);          \
  static const int KKBENCH_CONCAT(kkbench_generator_, __LINE__) =                       \
      (kkbench::add_generator(stream, KKBENCH_CONCAT(kkbench_generate_, __LINE__)), 0); \
  static void KKBENCH_CONCAT(kkbench_generate_, __LINE__)(kkbench::ShapeGen & gen)

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
  std::vector<T> download(size_t first, size_t count) const {
    std::vector<T> h(count);
    if (count)
      BENCH_CUDA(cudaMemcpy(h.data(), p + first, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  std::vector<T> download() const { return download(0, n); }
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

template <typename T>
__global__ void gather_kernel(const T* p, const int64_t* idx, int64_t count, T* out) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < count;
       j += int64_t{gridDim.x} * blockDim.x)
    out[j] = p[idx[j]];
}

// Per-block float64 partial sums of p[0..n) and of |p|; integers: exact int64 sums (two's
// complement wrap, as every integer sum here).
template <typename T, typename S>
__global__ void partial_sums_kernel(const T* p, int64_t n, S* sums, double* abs_sums) {
  __shared__ S s_sum[256];
  __shared__ double s_abs[256];
  S s = 0;
  double a = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    if constexpr (std::is_integral_v<S>) {
      const S v = static_cast<S>(p[i]);
      s = static_cast<S>(static_cast<uint64_t>(s) + static_cast<uint64_t>(v));
      a += fabs(static_cast<double>(v));
    } else {
      const double v = kernelkit::convert<double>(p[i]);
      s += v;
      a += fabs(v);
    }
  }
  s_sum[threadIdx.x] = s;
  s_abs[threadIdx.x] = a;
  __syncthreads();
  if (threadIdx.x == 0) {
    S ts = 0;
    double ta = 0;
    for (int t = 0; t < blockDim.x; ++t) {
      if constexpr (std::is_integral_v<S>) {
        ts = static_cast<S>(static_cast<uint64_t>(ts) + static_cast<uint64_t>(s_sum[t]));
      } else {
        ts += s_sum[t];
      }
      ta += s_abs[t];
    }
    sums[blockIdx.x] = ts;
    abs_sums[blockIdx.x] = ta;
  }
}
}  // namespace detail

// Uniform random values in [lo, hi) (integers: floor of that), generated on the device.
template <typename T>
Array<T> random_array(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  auto a = std::make_shared<DeviceArray<T>>(n);
  if (n) {
    detail::fill_uniform_kernel<T><<<2048, 256>>>(a->p, static_cast<int64_t>(n), seed, lo, hi);
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

// A zero-filled workspace of at least `bytes` (16 when 0), 256-byte aligned (cudaMalloc).
inline Array<unsigned char> zeroed_workspace(size_t bytes) {
  auto a = std::make_shared<DeviceArray<unsigned char>>(bytes < 16 ? 16 : bytes);
  BENCH_CUDA(cudaMemset(a->p, 0, a->n));
  BENCH_CUDA(cudaDeviceSynchronize());
  return a;
}

// p[idx[j]] for every j, copied to the host in one transfer.
template <typename T>
std::vector<T> gather(const T* p, const std::vector<size_t>& idx) {
  std::vector<int64_t> h(idx.begin(), idx.end());
  DeviceArray<int64_t> d_idx(h.size());
  DeviceArray<T> d_out(h.size());
  if (h.empty()) return {};
  BENCH_CUDA(cudaMemcpy(d_idx.p, h.data(), h.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  detail::gather_kernel<T><<<64, 256>>>(p, d_idx.p, static_cast<int64_t>(h.size()), d_out.p);
  BENCH_CUDA(cudaGetLastError());
  BENCH_CUDA(cudaDeviceSynchronize());
  return d_out.download();
}

// The float64 sum of p[0..n) and of |p[0..n)| (integers: the exact int64 sum, as a double
// only in abs_sum), computed on the device in a fixed order.
struct Sums {
  double sum = 0, abs_sum = 0;
  int64_t exact = 0;  // integers only
};
template <typename T>
Sums sums_f64(const T* p, int64_t n) {
  using S = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  constexpr int kBlocks = 1024;
  DeviceArray<S> d_sum(kBlocks);
  DeviceArray<double> d_abs(kBlocks);
  detail::partial_sums_kernel<T, S><<<kBlocks, 256>>>(p, n, d_sum.p, d_abs.p);
  BENCH_CUDA(cudaGetLastError());
  BENCH_CUDA(cudaDeviceSynchronize());
  const auto s = d_sum.download();
  const auto a = d_abs.download();
  Sums r;
  uint64_t exact = 0;
  for (int b = 0; b < kBlocks; ++b) {
    if constexpr (std::is_integral_v<S>) {
      exact += static_cast<uint64_t>(s[b]);
    } else {
      r.sum += s[b];
    }
    r.abs_sum += a[b];
  }
  r.exact = static_cast<int64_t>(exact);
  if constexpr (std::is_integral_v<S>) r.sum = static_cast<double>(r.exact);
  return r;
}

// Float64 dot products sum_{p < len} X[x0 + p * xs] * Y[y0 + p * ys], one per spec, on the
// device (the reference of gemv and sgemm at sampled outputs).
struct Dot {
  int64_t x0, xs, y0, ys, len;
};
std::vector<double> dots_f64(const float* X, const float* Y, const std::vector<Dot>& dots);

// Checks got against the float64 reference: |got - ref| <= atol + rtol * |ref|, NaN only where
// the reference is NaN. Throws with the first mismatch.
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

// Shape names used in case names.
inline std::string dims(int64_t a) {
  return std::to_string(a);
}
inline std::string dims(int64_t a, int64_t b) {
  return std::to_string(a) + "x" + std::to_string(b);
}
inline std::string dims(int64_t a, int64_t b, int64_t c) {
  return dims(a, b) + "x" + std::to_string(c);
}

// `<op>/<impl>/<dtype>/<shape>` with the dtype from kernelkit::type_name<T>().
template <typename T>
std::string case_name(const std::string& op, const std::string& impl, const std::string& shape) {
  return op + "/" + impl + "/" + kernelkit::type_name<T>() + "/" + shape;
}

}  // namespace kkbench
