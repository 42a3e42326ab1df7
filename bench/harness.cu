#include "harness.cuh"

#include <algorithm>
#include <sstream>

namespace kkbench {

namespace {
struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    BENCH_CUDA(cudaEventCreate(&start));
    BENCH_CUDA(cudaEventCreate(&stop));
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

constexpr int kWarmup = 3;

void run_case(benchmark::State& state, double bytes, double flops, const Setup& setup) {
  cudaStream_t stream = nullptr;
  try {
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Launch launch = setup(stream);
    Events ev;
    for (int i = 0; i < kWarmup; ++i)
      launch(stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    BENCH_CUDA(cudaGetLastError());
    std::vector<double> times;  // seconds per launch
    for (auto _ : state) {
      BENCH_CUDA(cudaEventRecord(ev.start, stream));
      launch(stream);
      BENCH_CUDA(cudaEventRecord(ev.stop, stream));
      BENCH_CUDA(cudaEventSynchronize(ev.stop));
      float ms = 0;
      BENCH_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
      state.SetIterationTime(ms * 1e-3);
      times.push_back(ms * 1e-3);
    }
    BENCH_CUDA(cudaGetLastError());
    // Rates from the median launch: robust to the odd slow launch, and one figure per
    // case without Google Benchmark's repetition aggregates.
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    state.counters["bytes_per_second"] = bytes / median;
    state.counters["median_us"] = median * 1e6;
    if (flops > 0) state.counters["flops_per_second"] = flops / median;
    launch = nullptr;  // free the case's buffers before the next case allocates
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  if (stream) cudaStreamDestroy(stream);
}
}  // namespace

void add_case(const std::string& name, double bytes, double flops, Setup setup) {
  benchmark::RegisterBenchmark(
      name.c_str(),
      [bytes, flops, setup](benchmark::State& st) { run_case(st, bytes, flops, setup); })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

void verify(const std::string& what, const std::vector<double>& got, const std::vector<double>& ref,
            double rtol, double atol) {
  if (got.size() != ref.size()) throw std::runtime_error(what + ": size mismatch");
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    const bool ok =
        std::isnan(r) ? std::isnan(g) : (g == r || std::fabs(g - r) <= atol + rtol * std::fabs(r));
    if (!ok) {
      std::ostringstream os;
      os << what << ": wrong result at sample " << i << ": got " << g << ", want " << r;
      throw std::runtime_error(os.str());
    }
  }
}

std::vector<size_t> sample_indices(size_t n, size_t count) {
  std::vector<size_t> idx;
  if (n == 0) return idx;
  if (count >= n) {
    for (size_t i = 0; i < n; ++i)
      idx.push_back(i);
    return idx;
  }
  for (size_t k = 0; k < count; ++k)
    idx.push_back(k * (n - 1) / (count - 1));
  return idx;
}

}  // namespace kkbench
