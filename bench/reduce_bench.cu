// Device-wide reduction: kernelkit::sum / max against cub::DeviceReduce (temp storage
// allocated once in setup, not timed), and every version of the reduction ladder at 2^24.
// bytes = n * sizeof(T) read + one output written. Inputs smaller than 128 MB are rotated
// over copies that together exceed the 50 MB L2, so no case reads from a warm L2.
#include <cub/device/device_reduce.cuh>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "harness.cuh"
#include "kernelkit/reduce/device_reduce.cuh"
#include "ladder/reduce/registry.cuh"

namespace {

enum class Impl { kKernelkit, kCub, kLadder };

template <typename T>
const char* dtype() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, __half>) return "f16";
  if constexpr (std::is_same_v<T, int64_t>) return "i64";
  return "?";
}

constexpr double kRotateBytes = 128.0 * (1 << 20);

// One case: op (kSum or kMax) over n elements of T into Acc, by impl.
template <typename T, typename Acc, bool IsSum, Impl I>
void add_reduce_case(int64_t n, kernelkit::ladder::reduce::LadderFn<T> ladder_fn = nullptr,
                     const std::string& ladder_name = "") {
  constexpr bool is_sum = IsSum;
  constexpr Impl impl = I;
  const std::string impl_name = impl == Impl::kKernelkit ? "kernelkit"
                                : impl == Impl::kCub     ? "cub"
                                                         : "ladder." + ladder_name;
  const std::string name = std::string(is_sum ? "reduce.sum/" : "reduce.max/") + impl_name + "/" +
                           dtype<T>() + "/" + kkbench::dims(n);
  const double bytes = double(n) * sizeof(T) + sizeof(Acc);
  kkbench::add_case(name, bytes, 0, [=](cudaStream_t stream) -> kkbench::Launch {
    const double in_bytes = double(n) * sizeof(T);
    const int64_t copies =
        in_bytes >= kRotateBytes ? 1 : int64_t(std::ceil(kRotateBytes / in_bytes));
    constexpr bool integral = std::is_integral_v<T>;
    auto in = kkbench::random_array<T>(size_t(n * copies), 2024, integral ? -1e12 : -1.0,
                                       integral ? 1e12 : 1.0);
    auto out = kkbench::poisoned_array<Acc>(1);
    size_t ws_bytes = 0;
    if constexpr (impl == Impl::kKernelkit) {
      ws_bytes = kernelkit::reduce_workspace_bytes<T, Acc>(n);
    } else if constexpr (impl == Impl::kLadder) {
      ws_bytes = kernelkit::ladder::reduce::registry_workspace_bytes<T>(n);
    } else if constexpr (is_sum) {
      BENCH_CUDA(cub::DeviceReduce::Sum(nullptr, ws_bytes, in->p, out->p, n, stream));
    } else {
      BENCH_CUDA(cub::DeviceReduce::Max(nullptr, ws_bytes, in->p, out->p, n, stream));
    }
    auto ws = std::make_shared<kkbench::DeviceArray<unsigned char>>(std::max<size_t>(ws_bytes, 16));
    BENCH_CUDA(cudaMemset(ws->p, 0, ws->n));  // kernelkit's contract: zero once
    // (legacy stream; the launches run on a non-blocking stream that does not wait for it)
    BENCH_CUDA(cudaDeviceSynchronize());
    auto next = std::make_shared<int64_t>(0);
    kkbench::Launch launch = [=](cudaStream_t s) {
      const T* p = in->p + (*next % copies) * n;
      *next += 1;
      size_t wb = ws->n;
      if constexpr (impl == Impl::kKernelkit) {
        if constexpr (is_sum) {
          BENCH_CUDA(kernelkit::sum(p, n, out->p, ws->p, wb, s));
        } else {
          BENCH_CUDA(kernelkit::max(p, n, out->p, ws->p, wb, s));
        }
      } else if constexpr (impl == Impl::kLadder) {
        static_assert(std::is_same_v<T, Acc>, "the ladder sums in T");
        BENCH_CUDA(ladder_fn(p, n, out->p, ws->p, wb, s));
      } else if constexpr (is_sum) {
        BENCH_CUDA(cub::DeviceReduce::Sum(ws->p, wb, p, out->p, n, s));
      } else {
        BENCH_CUDA(cub::DeviceReduce::Max(ws->p, wb, p, out->p, n, s));
      }
    };
    launch(stream);  // copy 0
    BENCH_CUDA(cudaStreamSynchronize(stream));
    const auto h = in->download(size_t(n));
    double ref = is_sum ? 0.0 : -INFINITY, abs_sum = 0;
    for (const T& x : h) {
      const double v = kernelkit::convert<double>(x);
      abs_sum += std::fabs(v);
      ref = is_sum ? ref + v : std::max(ref, v);
    }
    const Acc got_raw = out->download(1)[0];
    if constexpr (integral) {
      int64_t exact = 0;  // a float64 sum would round past 2^53
      for (const T& x : h)
        exact += static_cast<int64_t>(x);
      if (static_cast<int64_t>(got_raw) != exact)
        throw std::runtime_error(name + ": got " + std::to_string(static_cast<int64_t>(got_raw)) +
                                 ", want " + std::to_string(exact));
      return launch;
    } else {
      const double got = kernelkit::convert<double>(got_raw);
      if (is_sum && !integral) {
        std::fprintf(stderr, "%s: sum %.10g, float64 %.10g, relative error %.3g\n", name.c_str(),
                     got, ref, std::fabs(got - ref) / std::fabs(ref));
      }
      // floats: within 2e-5 of sum |x| (the ladder's v0 adds everything into one float),
      // 2e-7 for the library; the 2^28 sums (f32, f16) must meet 1e-5 of the sum itself
      double rtol = 0, atol = 0;
      if constexpr (is_sum && !integral) {
        if (impl == Impl::kKernelkit && n == (int64_t{1} << 28)) {
          rtol = 1e-5;
        } else {
          atol = (impl == Impl::kKernelkit ? 2e-7 : 2e-5) * abs_sum;
        }
      }
      kkbench::verify(name, {got}, {ref}, rtol, atol);
    }
    return launch;
  });
}

KKBENCH_CASES {
  const int64_t k28 = int64_t{1} << 28, k24 = int64_t{1} << 24, k20 = int64_t{1} << 20;
  for (int64_t n : {k28, k24, k20}) {
    add_reduce_case<float, float, true, Impl::kKernelkit>(n);
    add_reduce_case<float, float, true, Impl::kCub>(n);
  }
  add_reduce_case<float, float, false, Impl::kKernelkit>(k28);
  add_reduce_case<float, float, false, Impl::kCub>(k28);
  add_reduce_case<int64_t, int64_t, true, Impl::kKernelkit>(k24);
  add_reduce_case<int64_t, int64_t, true, Impl::kCub>(k24);
  add_reduce_case<__half, float, true, Impl::kKernelkit>(k28);
  for (const auto& e : kernelkit::ladder::reduce::kLadder<float>) {
    if (std::string(e.name) != "library")
      add_reduce_case<float, float, true, Impl::kLadder>(k24, e.fn, e.name);
  }
  for (const auto& e : kernelkit::ladder::reduce::kLadder<int64_t>) {
    if (std::string(e.name) != "library")
      add_reduce_case<int64_t, int64_t, true, Impl::kLadder>(k24, e.fn, e.name);
  }
}

}  // namespace
