// SPDX-License-Identifier: Apache-2.0
// kernelkit-bench: every registered case, plus the device-to-device copy that every figure
// is quoted against (the run's headline).
//   kernelkit-bench [--kk_min_samples=N] [--kk_max_samples=N] [--kk_min_time=SECONDS]
//                   [--kk_timing=cold|old] [--kk_seed=N|random] [--kk_generated=true|false]
//                   [Google Benchmark flags]
// Each case is measured once: samples until there are at least kk_min_samples of them and
// they add up to kk_min_time seconds, or kk_max_samples were taken; its time is their
// median. --kk_timing=old times every case the previous way (no L2 flush, no stream hold:
// for profilers that serialize launches). --benchmark_min_time and --benchmark_repetitions
// do not re-measure (they repeat the measured median). --kk_seed seeds the shape generator
// (bench/shapes.h; default 1, `random` draws one), recorded as kk_seed in the context;
// --kk_generated=false runs the listed shapes only.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "harness.cuh"

namespace {

// cudaMemcpyAsync device to device of n floats (bytes = read + write)
void add_memcpy_case(int64_t n) {
  kkbench::Case c{
      kkbench::case_name<float>("memcpy", "cuda", kkbench::dims(n)),
      kkbench::Traffic{double(n) * sizeof(float), double(n) * sizeof(float)}, 0,
      [n](cudaStream_t s) -> kkbench::Launch {
        auto src = kkbench::random_array<float>(n, 1);
        auto dst = kkbench::poisoned_array<float>(n);
        BENCH_CUDA(cudaMemcpyAsync(dst->p, src->p, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
        BENCH_CUDA(cudaStreamSynchronize(s));
        const auto idx = kkbench::sample_indices(n, 4096);
        kkbench::verify("memcpy", kkbench::to_doubles(kkbench::gather(dst->p, idx)),
                        kkbench::to_doubles(kkbench::gather(src->p, idx)), 0.0);
        return [src, dst, n](cudaStream_t st) {
          BENCH_CUDA(
              cudaMemcpyAsync(dst->p, src->p, n * sizeof(float), cudaMemcpyDeviceToDevice, st));
        };
      }};
  c.copy_reference = true;
  kkbench::add(c);
}

// 2^28 floats (2 GiB moved): the headline every rate is quoted against
KKBENCH_CASES {
  add_memcpy_case(int64_t{1} << 28);
}

// Consumes the --kk_* flags; returns false on a malformed one.
bool parse_flags(int* argc, char** argv) {
  kkbench::Options& o = kkbench::options();
  int out = 1;
  bool ok = true;
  for (int i = 1; i < *argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* flag) -> const char* {
      const size_t len = std::strlen(flag);
      return a.compare(0, len, flag) == 0 && a.size() > len && a[len] == '=' ? argv[i] + len + 1
                                                                             : nullptr;
    };
    if (const char* v = value("--kk_min_samples")) {
      o.min_samples = std::atoi(v);
      ok &= o.min_samples >= 1;
    } else if (const char* v = value("--kk_max_samples")) {
      o.max_samples = std::atoi(v);
      ok &= o.max_samples >= 1;
    } else if (const char* v = value("--kk_min_time")) {
      o.min_time = std::atof(v);
      ok &= o.min_time >= 0;
    } else if (const char* v = value("--kk_timing")) {
      ok &= std::strcmp(v, "cold") == 0 || std::strcmp(v, "old") == 0;
      o.timing = std::strcmp(v, "old") == 0 ? kkbench::Timing::kOld : kkbench::Timing::kCold;
    } else if (const char* v = value("--kk_seed")) {
      if (std::strcmp(v, "random") == 0) {
        o.seed = (uint64_t{std::random_device{}()} << 32 | std::random_device{}()) % 1000000007;
      } else {
        char* end = nullptr;
        o.seed = std::strtoull(v, &end, 10);
        ok &= *v != '\0' && *end == '\0';
      }
    } else if (const char* v = value("--kk_generated")) {
      ok &= std::strcmp(v, "true") == 0 || std::strcmp(v, "false") == 0;
      o.generated = std::strcmp(v, "true") == 0;
    } else if (a.rfind("--kk_", 0) == 0) {
      std::fprintf(stderr, "kernelkit-bench: unknown flag %s\n", argv[i]);
      ok = false;
    } else {
      argv[out++] = argv[i];
    }
  }
  if (o.max_samples < o.min_samples) o.max_samples = o.min_samples;
  *argc = out;
  argv[out] = nullptr;
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (!parse_flags(&argc, argv)) return 1;
  // listing the cases needs no GPU (cases register at static initialisation)
  bool list_only = false;
  for (int i = 1; i < argc; ++i)
    list_only |= std::strcmp(argv[i], "--benchmark_list_tests") == 0 ||
                 std::strcmp(argv[i], "--benchmark_list_tests=true") == 0;
  int devices = 0;
  if (!list_only && (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)) {
    std::fprintf(stderr, "kernelkit-bench: no CUDA device visible; the benchmark needs a GPU\n");
    return 1;
  }
  if (!kkbench::register_cases(kkbench::options().seed)) return 1;
  if (!list_only) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    benchmark::AddCustomContext("gpu", prop.name);
    benchmark::AddCustomContext("sm_count", std::to_string(prop.multiProcessorCount));
    benchmark::AddCustomContext("l2_bytes", std::to_string(prop.l2CacheSize));
    benchmark::AddCustomContext("kk_seed", std::to_string(kkbench::options().seed));
    const kkbench::Options& o = kkbench::options();
    benchmark::AddCustomContext(
        "kk_timing", std::string(o.timing == kkbench::Timing::kOld ? "old" : "cold") +
                         ": min_samples " + std::to_string(o.min_samples) + ", max_samples " +
                         std::to_string(o.max_samples) + ", min_time " +
                         std::to_string(o.min_time) + " s");
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
