// kernelkit-bench: every registered case, plus the device-to-device copy that every figure
// is quoted against.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "harness.cuh"

namespace {

KKBENCH_CASES {
  constexpr int64_t n = int64_t{1} << 28;
  kkbench::add_case(
      "memcpy/cuda/f32/" + kkbench::dims(n), 2.0 * n * sizeof(float), 0,
      [](cudaStream_t s) -> kkbench::Launch {
        auto src = kkbench::random_array<float>(n, 1);
        auto dst = kkbench::poisoned_array<float>(n);
        BENCH_CUDA(cudaMemcpyAsync(dst->p, src->p, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
        BENCH_CUDA(cudaStreamSynchronize(s));
        std::vector<double> got, ref;
        for (size_t i : kkbench::sample_indices(n, 4096)) {
          float a, b;
          BENCH_CUDA(cudaMemcpy(&a, src->p + i, 4, cudaMemcpyDeviceToHost));
          BENCH_CUDA(cudaMemcpy(&b, dst->p + i, 4, cudaMemcpyDeviceToHost));
          ref.push_back(a);
          got.push_back(b);
        }
        kkbench::verify("memcpy", got, ref, 0.0);
        return [src, dst](cudaStream_t st) {
          cudaMemcpyAsync(dst->p, src->p, n * sizeof(float), cudaMemcpyDeviceToDevice, st);
        };
      });
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "kernelkit-bench: no CUDA device visible; the benchmark needs a GPU\n");
    return 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  benchmark::AddCustomContext("gpu", prop.name);
  benchmark::AddCustomContext("sm_count", std::to_string(prop.multiProcessorCount));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
