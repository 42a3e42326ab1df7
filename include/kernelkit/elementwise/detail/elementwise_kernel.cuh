// The elementwise kernel: one variadic kernel for every arity, moving 16-byte packs.
//
// Layout of the work. The n elements are split into num_packs = n / Pack whole packs plus a
// tail of n % Pack (< Pack) elements. A block iteration ("tile") covers Block * Unroll
// consecutive packs: thread t of the block takes packs tile_start + u * Block + t for
// u = 0..Unroll-1, so each of the Unroll accesses of a warp is one contiguous 512-byte run.
// Every thread loads all Unroll packs of every input into registers before the first use
// (up to Unroll * arity * 16 bytes per thread in flight; ptxas may start computing after
// the first few loads when registers are short, as for f32 add: 5 of 8 loads first). Blocks stride
// over tiles (grid-stride loop); only the last tile is partial and takes the guarded path. The tail
// elements are done by the first threads of the grid in the same launch.
//
// Index is int32_t when every index the kernel forms (up to n + one grid stride) fits,
// int64_t otherwise; the dispatcher in elementwise.cuh decides.
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"

namespace kernelkit {
namespace detail {

// HasApply2<F, R, Args...>: F has a member Apply2(R* out, const Args*... in) that computes
// two consecutive results from two consecutive elements of each input (paired half2 /
// bf162 math).
template <typename Void, typename F, typename R, typename... Args>
struct HasApply2Impl : std::false_type {};
template <typename F, typename R, typename... Args>
struct HasApply2Impl<std::void_t<decltype(std::declval<const F&>().Apply2(
                         std::declval<R*>(), std::declval<const Args*>()...))>,
                     F, R, Args...> : std::true_type {};
template <typename F, typename R, typename... Args>
inline constexpr bool kHasApply2 = HasApply2Impl<void, F, R, Args...>::value;

// Wraps a functor value as a factory, so the kernel has a single form: it builds its
// functor on the device with factory().
template <typename F>
struct EwFunctorFactory {
  F f;
  __device__ __forceinline__ F operator()() const { return f; }
};

// One result element from one element of each input; the functor's result is converted
// to R (round to nearest even for narrowing floating conversions).
template <typename R, typename F, typename... Args>
__device__ __forceinline__ R ew_apply_one(const F& f, Args... in) {
  return convert<R>(f(in...));
}

// Pack of N results from packs of N elements; pairs go through Apply2 when F has it.
template <typename R, int N, typename F, typename... Args>
__device__ __forceinline__ Pack<R, N> ew_apply_pack(const F& f, const Pack<Args, N>&... in) {
  Pack<R, N> out;
  if constexpr (N % 2 == 0 && kHasApply2<F, R, Args...>) {
#pragma unroll
    for (int j = 0; j < N; j += 2)
      f.Apply2(out.elem + j, (in.elem + j)...);
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j)
      out.elem[j] = ew_apply_one<R>(f, in.elem[j]...);
  }
  return out;
}

// Unroll packs of each input type, held in registers: the loads of a whole tile land here
// before any of them is used.
template <int N, int Unroll, typename... Ts>
struct EwPackRegs {};
template <int N, int Unroll, typename T, typename... Ts>
struct EwPackRegs<N, Unroll, T, Ts...> {
  Pack<T, N> v[Unroll];
  EwPackRegs<N, Unroll, Ts...> rest;
};

// The packs of input K: EwRegsOf<K>::get(regs).
template <size_t K>
struct EwRegsOf {
  template <typename Regs>
  __device__ __forceinline__ static const auto& get(const Regs& r) {
    return EwRegsOf<K - 1>::get(r.rest);
  }
};
template <>
struct EwRegsOf<0> {
  template <typename Regs>
  __device__ __forceinline__ static const auto& get(const Regs& r) {
    return r.v;
  }
};

// Memory-access policy of the engine. kDefault: plain loads and stores (what the library
// uses). The others are measured alternatives: kStreamingStore writes with st.global.cs
// (evict-first); kAsyncCopy stages the full tiles' input packs through shared memory with
// cp.async (LDGSTS, one 16-byte slot per input, pack and thread; each thread reads back
// only its own slots, so no block barrier). ptxas cannot defer those copies behind the
// math, as it does with plain loads when the functor is costly (gelu bf16, Unroll 4: each
// pack's LDG is issued only after the previous pack's ~200 instructions of math).
enum class EwCache { kDefault, kStreamingStore, kAsyncCopy };

// The same bytes as a Pack<T, N>, as the vector type the cache-hint intrinsics take.
template <int Bytes>
struct EwRaw;
template <>
struct EwRaw<16> {
  using type = int4;
};
template <>
struct EwRaw<8> {
  using type = int2;
};
template <>
struct EwRaw<4> {
  using type = int;
};
template <>
struct EwRaw<2> {
  using type = short;
};
template <>
struct EwRaw<1> {
  using type = signed char;
};

template <EwCache Cache, int N, typename T>
__device__ __forceinline__ void ew_store_pack(T* p, int64_t i, const Pack<T, N>& v) {
  if constexpr (Cache == EwCache::kStreamingStore && sizeof(T) * N != 1) {
    using Raw = typename EwRaw<int{sizeof(T) * N}>::type;
    Raw raw;
    memcpy(&raw, &v, sizeof(v));
    __stcs(reinterpret_cast<Raw*>(p) + i, raw);
  } else {
    store_pack(p, i, v);
  }
}

// kAsyncCopy: whether every input's pack can go through cp.async (4, 8 or 16 bytes).
template <EwCache Cache, int N, typename... Args>
inline constexpr bool kEwStaged = Cache == EwCache::kAsyncCopy &&
                                  ((sizeof(Pack<Args, N>) >= 4) && ...);

// Shared-memory bytes of the staging buffer: one 16-byte slot per input, pack and thread.
template <int Block, int Unroll, int Arity>
inline constexpr int kEwStageBytes = 16 * (Block * Unroll * Arity);

// Starts the copies of packs first + u * Block, u < Unroll, of every input into the slots
// [input][u][threadIdx.x] of stage (each thread reads back only its own slots).
template <int Block, int N, int Unroll, typename Index>
__device__ __forceinline__ void ew_stage_tile(unsigned char*, Index) {}
template <int Block, int N, int Unroll, typename Index, typename T, typename... Ts>
__device__ __forceinline__ void ew_stage_tile(unsigned char* stage, Index first, const T* p,
                                              const Ts*... ps) {
  auto* slots = reinterpret_cast<Pack<T, N>*>(stage);
  const auto* src = reinterpret_cast<const Pack<T, N>*>(p);
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    __pipeline_memcpy_async(slots + u * Block * (16 / sizeof(Pack<T, N>)) + threadIdx.x,
                            src + first + u * Block, sizeof(Pack<T, N>));
  }
  ew_stage_tile<Block, N, Unroll>(stage + 16 * Block * Unroll, first, ps...);
}

// Reads this thread's staged packs back into registers.
template <int Block, int N, int Unroll>
__device__ __forceinline__ void ew_unstage_tile(EwPackRegs<N, Unroll>&, const unsigned char*) {}
template <int Block, int N, int Unroll, typename T, typename... Ts>
__device__ __forceinline__ void ew_unstage_tile(EwPackRegs<N, Unroll, T, Ts...>& r,
                                                const unsigned char* stage) {
  const auto* slots = reinterpret_cast<const Pack<T, N>*>(stage);
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    r.v[u] = slots[u * Block * (16 / sizeof(Pack<T, N>)) + threadIdx.x];
  ew_unstage_tile<Block, N, Unroll>(r.rest, stage + 16 * Block * Unroll);
}

// Loads packs first + u * Block, u < Unroll, of every input.
template <int Block, int N, int Unroll, typename Index>
__device__ __forceinline__ void ew_load_tile(EwPackRegs<N, Unroll>&, Index) {}
template <int Block, int N, int Unroll, typename Index, typename T, typename... Ts>
__device__ __forceinline__ void ew_load_tile(EwPackRegs<N, Unroll, T, Ts...>& r, Index first,
                                             const T* p, const Ts*... ps) {
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    r.v[u] = load_pack<N>(p, first + u * Block);
  ew_load_tile<Block>(r.rest, first, ps...);
}

// Computes and stores the Unroll result packs of a tile from the loaded inputs.
template <int Block, EwCache Cache, typename R, int N, int Unroll, typename Index, typename F,
          typename... Args, size_t... I>
__device__ __forceinline__ void ew_compute_store_tile(const F& f, R* out, Index first,
                                                      const EwPackRegs<N, Unroll, Args...>& r,
                                                      std::index_sequence<I...>) {
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    ew_store_pack<Cache>(out, first + u * Block, ew_apply_pack<R, N>(f, EwRegsOf<I>::get(r)[u]...));
}

template <int Block, int Unroll, int N, typename Index, EwCache Cache, typename Factory, typename R,
          typename... Args>
__global__ void __launch_bounds__(Block)
    elementwise_kernel(Factory factory, Index n, R* out, const Args*... in) {
  static_assert(Block % 32 == 0, "block must be whole warps");
  static_assert(Unroll >= 1, "at least one pack per thread and tile");
  static_assert(N >= 1 && (N & (N - 1)) == 0, "pack size must be a power of two");
  auto f = factory();
  const Index num_packs = n / N;
  const int tid = threadIdx.x;

  // Tail: elements [num_packs * N, n), fewer than N, one per thread of block 0.
  if (blockIdx.x == 0 && tid < n - num_packs * N) {
    const Index i = num_packs * N + tid;
    out[i] = ew_apply_one<R>(f, in[i]...);
  }

  constexpr Index kTile = Index{Block} * Unroll;  // packs per block iteration
  const Index stride = static_cast<Index>(gridDim.x) * kTile;
  for (Index tile = static_cast<Index>(blockIdx.x) * kTile; tile < num_packs; tile += stride) {
    const Index first = tile + tid;  // this thread's packs: first + u * Block
    if (tile + kTile <= num_packs) {
      // Whole tile: every load of the Unroll packs of every input is written before the
      // first use (Unroll * 16 bytes per input in flight per thread), then compute + store.
      // ptxas may still defer plain loads behind a costly functor's math (see EwCache);
      // kAsyncCopy's copies cannot be deferred past their wait.
      EwPackRegs<N, Unroll, Args...> regs;
      if constexpr (kEwStaged<Cache, N, Args...>) {
        __shared__ alignas(16) unsigned char stage[kEwStageBytes<Block, Unroll, sizeof...(Args)>];
        ew_stage_tile<Block, N, Unroll>(stage, first, in...);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        ew_unstage_tile<Block, N, Unroll>(regs, stage);
      } else {
        ew_load_tile<Block>(regs, first, in...);
      }
      ew_compute_store_tile<Block, Cache, R>(f, out, first, regs,
                                             std::index_sequence_for<Args...>{});
    } else {
      // The last, partial tile: each pack guarded.
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const Index p = first + u * Block;
        if (p < num_packs) {
          ew_store_pack<Cache>(out, p, ew_apply_pack<R, N>(f, load_pack<N>(in, p)...));
        }
      }
    }
  }
}

}  // namespace detail
}  // namespace kernelkit
