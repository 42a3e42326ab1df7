// The elementwise engine: out[i] = f(a[i], b[i], ...) for i in [0, n), at the copy's speed.
//
// A functor F is any copyable object with a __device__ call operator taking one element of
// each input (in its storage type: float, __half, ...); its result is converted to the
// output type with kernelkit::convert (round to nearest even, overflow to +-inf). F may
// also define
//   __device__ void Apply2(R* out, const A* a, const B* b, ...) const
// writing two consecutive results from two consecutive elements of each input (paired
// __half2 / __nv_bfloat162 math); the engine uses it whenever the pack holds an even number
// of elements. The *_with_factory forms take a factory instead: `factory()` is called on
// the device, once per thread, and returns the functor (for functors that hold device
// state or are cheaper to build on the device).
// F may set `static constexpr int kPacksPerThread`: how many 16-byte packs of each input a
// thread loads before computing (default 1; 2 with three inputs). Costly functors (gelu)
// ask for 4 so that loads stay in flight behind their math. F may also set
// `static constexpr bool kStageInputs = true`: the packs of a whole tile are then copied
// into shared memory with cp.async first (ptxas cannot sink those copies behind the
// math of the previous pack, as it does with plain loads for costly functors).
//
// Memory access: 16-byte packs when every pointer is aligned to the widest pack of its
// types (pack = min over operand types of 16 / sizeof(T)); otherwise one element per
// access. The tail (n not a multiple of the pack) is done in the same launch. Indexing is
// 32-bit when n is small enough and 64-bit otherwise, so any n >= 0 works.
//
// Aliasing: out may be exactly one of the inputs (in place); no other overlap of out with
// an input is allowed. Inputs may alias each other freely.
// Errors: n < 0, or a null pointer with n > 0 -> cudaErrorInvalidValue, nothing launched.
// n == 0 does nothing and returns cudaSuccess. Asynchronous on `stream`; no allocation, no
// synchronization (capturable in a CUDA graph).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/elementwise/detail/elementwise_kernel.cuh"

namespace kernelkit {
namespace detail {

inline constexpr int kElementwiseBlock = 256;

// Waves for grid_size: large enough that the grid covers every tile (each block does one
// tile, no partial last wave of grid-stride trips) up to ~2^26 blocks of 256 threads.
inline constexpr int kElementwiseWaves = 1 << 16;

// Packs per thread and tile, by arity: one 16-byte pack per input for one or two inputs, 2
// for three inputs. Measured on the H100 (bench/NOTES.md): 4 packs per thread under a
// 32-wave grid-stride cap ran 2% behind CUB at 2^28 for adds, while one pack per thread
// with a grid that covers every tile ran at CUB's speed.
template <int Arity>
inline constexpr int kElementwiseUnroll = Arity <= 2 ? 1 : 2;

// A functor may ask for more packs per thread with `static constexpr int kPacksPerThread`:
// costly functors (gelu: ~25 instructions per element, 8 elements per bf16 pack) need
// several packs' loads in flight per thread to hide their latency behind the math.
template <typename F, typename = void>
struct EwPacksPerThread {
  static constexpr int value = 0;  // not set: the arity's default
};
template <typename F>
struct EwPacksPerThread<F, std::void_t<decltype(F::kPacksPerThread)>> {
  static constexpr int value = F::kPacksPerThread;
};

// A functor may ask for its inputs to be staged through shared memory with
// `static constexpr bool kStageInputs = true` (EwCache::kAsyncCopy).
template <typename F, typename = void>
struct EwCacheFor {
  static constexpr EwCache value = EwCache::kDefault;
};
template <typename F>
struct EwCacheFor<F, std::void_t<decltype(F::kStageInputs)>> {
  static constexpr EwCache value = F::kStageInputs ? EwCache::kAsyncCopy : EwCache::kDefault;
};

// The functor a factory builds.
template <typename Factory>
using ew_functor_t = std::decay_t<decltype(std::declval<const Factory&>()())>;

// Launch shape of one elementwise kernel: threads per block, packs per thread and tile,
// cache policy. The library derives it with EwDefaultConfig; the benchmark instantiates
// others to measure alternatives.
template <int Block, int Unroll, EwCache Cache = EwCache::kDefault>
struct EwConfig {
  static_assert(Block % 32 == 0 && Block <= 1024, "block must be whole warps, at most 1024");
  static_assert(Unroll >= 1 && Unroll <= 16, "1 to 16 packs per thread");
  static constexpr int kBlock = Block;
  static constexpr int kUnroll = Unroll;
  static constexpr EwCache kCache = Cache;
};

template <typename Factory, int Arity>
using EwDefaultConfig = EwConfig<kElementwiseBlock,
                                 (EwPacksPerThread<ew_functor_t<Factory>>::value > 0
                                      ? EwPacksPerThread<ew_functor_t<Factory>>::value
                                      : kElementwiseUnroll<Arity>),
                                 EwCacheFor<ew_functor_t<Factory>>::value>;

template <typename Config, int N, typename Factory, typename R, typename... Args>
cudaError_t launch_elementwise_packed(Factory factory, cudaStream_t stream, int64_t n, R* out,
                                      const Args*... in) {
  constexpr int kBlock = Config::kBlock;
  constexpr int kUnroll = Config::kUnroll;
  constexpr EwCache kCache = Config::kCache;
  constexpr int64_t kTile = int64_t{kBlock} * kUnroll;  // packs per block iteration
  const int64_t tiles = ceil_div<int64_t>(n / N, kTile);
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(tiles * kBlock, kBlock, &grid, kElementwiseWaves));
  // Largest element index the kernel forms: below n + one grid stride + one tile.
  const int64_t max_index = n + (int64_t{grid} + 1) * kTile * N;
  if (max_index <= INT32_MAX) {
    elementwise_kernel<kBlock, kUnroll, N, int32_t, kCache>
        <<<grid, kBlock, 0, stream>>>(factory, static_cast<int32_t>(n), out, in...);
  } else {
    elementwise_kernel<kBlock, kUnroll, N, int64_t, kCache>
        <<<grid, kBlock, 0, stream>>>(factory, n, out, in...);
  }
  return cudaGetLastError();
}

// The one variadic launcher behind unary / binary / ternary, with an explicit launch shape:
// checks the arguments, picks the widest pack every pointer allows (or one element per
// access), launches.
template <typename Config, typename Factory, typename R, typename... Args>
cudaError_t launch_elementwise_with(Factory factory, cudaStream_t stream, int64_t n, R* out,
                                    const Args*... in) {
  KERNELKIT_REQUIRE(n >= 0);
  if (n == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(out != nullptr);
  KERNELKIT_REQUIRE(((in != nullptr) && ...));
  constexpr int kMaxPack = kMaxPackSize<R, Args...>;
  if (kMaxPack > 1 && pack_size_for<R, Args...>(out, in...) == kMaxPack) {
    return launch_elementwise_packed<Config, kMaxPack>(factory, stream, n, out, in...);
  }
  return launch_elementwise_packed<Config, 1>(factory, stream, n, out, in...);
}

// The launcher with the library's launch shape for this functor and arity.
template <typename Factory, typename R, typename... Args>
cudaError_t launch_elementwise(Factory factory, cudaStream_t stream, int64_t n, R* out,
                               const Args*... in) {
  return launch_elementwise_with<EwDefaultConfig<Factory, int{sizeof...(Args)}>>(factory, stream, n,
                                                                                 out, in...);
}

}  // namespace detail

// out[i] = f(a[i]) for i in [0, n). Any storage types the functor and convert<R> accept
// (float, double, __half, __nv_bfloat16, integers). out == a allowed.
template <typename F, typename R, typename A>
[[nodiscard]] cudaError_t unary(F f, int64_t n, R* out, const A* a, cudaStream_t stream = nullptr) {
  return detail::launch_elementwise(detail::EwFunctorFactory<F>{f}, stream, n, out, a);
}

// out[i] = f(a[i], b[i]) for i in [0, n). out may be a or b.
template <typename F, typename R, typename A, typename B>
[[nodiscard]] cudaError_t binary(F f, int64_t n, R* out, const A* a, const B* b,
                                 cudaStream_t stream = nullptr) {
  return detail::launch_elementwise(detail::EwFunctorFactory<F>{f}, stream, n, out, a, b);
}

// out[i] = f(a[i], b[i], c[i]) for i in [0, n). out may be a, b or c.
template <typename F, typename R, typename A, typename B, typename C>
[[nodiscard]] cudaError_t ternary(F f, int64_t n, R* out, const A* a, const B* b, const C* c,
                                  cudaStream_t stream = nullptr) {
  return detail::launch_elementwise(detail::EwFunctorFactory<F>{f}, stream, n, out, a, b, c);
}

// As unary / binary / ternary, with the functor built on the device by factory() (a
// __device__ call operator of a copyable Factory), once per thread.
template <typename Factory, typename R, typename A>
[[nodiscard]] cudaError_t unary_with_factory(Factory factory, int64_t n, R* out, const A* a,
                                             cudaStream_t stream = nullptr) {
  return detail::launch_elementwise(factory, stream, n, out, a);
}

template <typename Factory, typename R, typename A, typename B>
[[nodiscard]] cudaError_t binary_with_factory(Factory factory, int64_t n, R* out, const A* a,
                                              const B* b, cudaStream_t stream = nullptr) {
  return detail::launch_elementwise(factory, stream, n, out, a, b);
}

template <typename Factory, typename R, typename A, typename B, typename C>
[[nodiscard]] cudaError_t ternary_with_factory(Factory factory, int64_t n, R* out, const A* a,
                                               const B* b, const C* c,
                                               cudaStream_t stream = nullptr) {
  return detail::launch_elementwise(factory, stream, n, out, a, b, c);
}

}  // namespace kernelkit
