// SPDX-License-Identifier: Apache-2.0
// reduce.sum, device-wide: kernelkit against cub::DeviceReduce::Sum (f32, i64; temp storage
// allocated in setup, not timed), and f16 / bf16 summed in float (no baseline), over the
// listed sizes of issue 14 and generated ones (bench/shapes.h). bytes = n * sizeof(T) read +
// one result written. Each case is verified
// once against the float64 sum of its input (integers: the exact int64 sum).
#include <cub/device/device_reduce.cuh>

#include <string>
#include <vector>

#include "checks.cuh"
#include "harness.cuh"
#include "shapes.h"
// the op's header (kernelkit/reduce/device_reduce.cuh in trees from before the rename, timed
// through KERNELKIT_BENCH_INCLUDE_OVERRIDE)
#if __has_include("kernelkit/reduce/reduce.cuh")
#include "kernelkit/reduce/reduce.cuh"
#else
#include "kernelkit/reduce/device_reduce.cuh"
#endif

namespace {

// The adapter: every call this file makes into kernelkit goes through the function(s) below,
// so an API change (e.g. a workspace overload) is one line here (bench/NOTES.md "Timing").
template <typename T, typename Acc>
size_t kk_reduce_sum_workspace_bytes(int64_t n) {
  return kernelkit::reduce_workspace_bytes<T, Acc>(n);
}
template <typename T, typename Acc>
cudaError_t kk_reduce_sum(const T* in, int64_t n, Acc* out, void* ws, size_t ws_bytes,
                          cudaStream_t s) {
  return kernelkit::reduce(in, n, out, kernelkit::ReduceOp::kSum, Acc(0), ws, ws_bytes, s);
}

enum class Impl { kKernelkit, kCub };

template <typename T, typename Acc, Impl I>
void add_reduce_case(kkbench::FlatShape sh) {
  const int64_t n = sh.n;
  const std::string name =
      kkbench::case_name<T>("reduce.sum", I == Impl::kKernelkit ? "kernelkit" : "cub", sh.name());
  const kkbench::Traffic traffic{double(n) * sizeof(T), sizeof(Acc)};
  kkbench::add_case(name, traffic, 0, [=](cudaStream_t stream) -> kkbench::Launch {
    constexpr bool integral = std::is_integral_v<T>;
    auto buf = kkbench::random_array<T>(size_t(n + sh.offset), 2024, integral ? -1e12 : -1.0,
                                        integral ? 1e12 : 1.0);
    const T* in = buf->p + sh.offset;
    auto out = kkbench::poisoned_array<Acc>(1);
    size_t ws_bytes = 0;
    if constexpr (I == Impl::kKernelkit) {
      ws_bytes = kk_reduce_sum_workspace_bytes<T, Acc>(n);
    } else {
      BENCH_CUDA(cub::DeviceReduce::Sum(nullptr, ws_bytes, in, out->p, n, stream));
    }
    auto ws = kkbench::zeroed_workspace(ws_bytes);  // kernelkit's contract: zero once
    kkbench::Launch launch = [=](cudaStream_t s) {
      size_t wb = ws->n;
      if constexpr (I == Impl::kKernelkit) {
        BENCH_CUDA(kk_reduce_sum(in, n, out->p, ws->p, wb, s));
      } else {
        BENCH_CUDA(cub::DeviceReduce::Sum(ws->p, wb, in, out->p, n, s));
      }
      (void)buf;
    };
    launch(stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    // kernelkit: within 2e-7 of sum |x|, and at 2^28 within 1e-5 of the sum itself (its
    // accuracy goal); CUB: within 2e-5 of sum |x|; integers exact
    const bool strict = I == Impl::kKernelkit && n == (int64_t{1} << 28);
    kkbench::check_sum(name, in, n, out->p, strict ? 1e-5 : 0.0,
                       I == Impl::kKernelkit ? 2e-7 : 2e-5);
    return launch;
  });
}

// kernelkit's case, and CUB's beside it where CUB sums T into Acc (f32, i64)
template <typename T, typename Acc, bool Cub>
void add_reduce_cases(kkbench::FlatShape sh) {
  add_reduce_case<T, Acc, Impl::kKernelkit>(sh);
  if constexpr (Cub) add_reduce_case<T, Acc, Impl::kCub>(sh);
}

KKBENCH_CASES {
  for (int64_t n :
       {1024, 65536, 1048576, 1000003, 4194304, 16777216, 67108864, 100000007, 268435456})
    add_reduce_cases<float, float, true>({n, 0});
  for (int64_t n : {1048576, 16777216, 67108864})
    add_reduce_cases<int64_t, int64_t, true>({n, 0});
  for (int64_t n : {16777216, 268435456})
    add_reduce_cases<__half, float, false>({n, 0});
  for (int64_t n : {16777216, 268435456})
    add_reduce_cases<__nv_bfloat16, float, false>({n, 0});
}

KKBENCH_GENERATED("reduce", gen) {
  for (const kkbench::FlatShape& sh : gen.flat(12, sizeof(float)))
    add_reduce_cases<float, float, true>(sh);
  for (const kkbench::FlatShape& sh : gen.flat(6, sizeof(int64_t)))
    add_reduce_cases<int64_t, int64_t, true>(sh);
  for (const kkbench::FlatShape& sh : gen.flat(6, sizeof(__half)))
    add_reduce_cases<__half, float, false>(sh);
  for (const kkbench::FlatShape& sh : gen.flat(6, sizeof(__nv_bfloat16)))
    add_reduce_cases<__nv_bfloat16, float, false>(sh);
}

}  // namespace
