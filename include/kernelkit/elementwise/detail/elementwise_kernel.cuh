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

#include <cuda_runtime.h>

#include <cstdint>
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
template <int Block, typename R, int N, int Unroll, typename Index, typename F, typename... Args,
          size_t... I>
__device__ __forceinline__ void ew_compute_store_tile(const F& f, R* out, Index first,
                                                      const EwPackRegs<N, Unroll, Args...>& r,
                                                      std::index_sequence<I...>) {
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    store_pack(out, first + u * Block, ew_apply_pack<R, N>(f, EwRegsOf<I>::get(r)[u]...));
}

template <int Block, int Unroll, int N, typename Index, typename Factory, typename R,
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
      // Whole tile: every load of the Unroll packs of every input is issued before the
      // first use (Unroll * 16 bytes per input in flight per thread), then compute + store.
      EwPackRegs<N, Unroll, Args...> regs;
      ew_load_tile<Block>(regs, first, in...);
      ew_compute_store_tile<Block, R>(f, out, first, regs, std::index_sequence_for<Args...>{});
    } else {
      // The last, partial tile: each pack guarded.
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const Index p = first + u * Block;
        if (p < num_packs) store_pack(out, p, ew_apply_pack<R, N>(f, load_pack<N>(in, p)...));
      }
    }
  }
}

}  // namespace detail
}  // namespace kernelkit
