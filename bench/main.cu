// kernelkit-bench: every registered case, plus the device-to-device copy that every figure
// is quoted against.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>

#include "harness.cuh"

namespace {

// cudaMemcpyAsync device to device of n floats (bytes = read + write)
void add_memcpy_case(int64_t n) {
  kkbench::add_case(
      "memcpy/cuda/f32/" + kkbench::dims(n), 2.0 * n * sizeof(float), 0,
      [n](cudaStream_t s) -> kkbench::Launch {
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
        return [src, dst, n](cudaStream_t st) {
          cudaMemcpyAsync(dst->p, src->p, n * sizeof(float), cudaMemcpyDeviceToDevice, st);
        };
      });
}

// 2^28: the reference every rate is quoted against; 2^24 (134 MB moved, the size of the
// short-row softmax and row_reduce cases): what the copy itself reaches at that size,
// where the fixed cost of a launch is a visible part of each timed launch
KKBENCH_CASES {
  add_memcpy_case(int64_t{1} << 28);
  add_memcpy_case(int64_t{1} << 24);
}

}  // namespace

int main(int argc, char** argv) {
  // listing the cases needs no GPU (cases register at static initialisation)
  bool list_only = false;
  for (int i = 1; i < argc; ++i)
    list_only |= std::strcmp(argv[i], "--benchmark_list_tests") == 0;
  int devices = 0;
  if (!list_only && (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    std::fprintf(stderr, "kernelkit-bench: no CUDA device visible; the benchmark needs a GPU\n");
    return 1;
  }
  if (!list_only) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    benchmark::AddCustomContext("gpu", prop.name);
    benchmark::AddCustomContext("sm_count", std::to_string(prop.multiProcessorCount));
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
