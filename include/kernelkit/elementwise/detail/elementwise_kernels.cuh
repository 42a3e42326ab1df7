// SPDX-License-Identifier: Apache-2.0
// The elementwise kernel: one variadic kernel for every arity, moving packs of up to 16 bytes.
// The plan (elementwise_plan.cuh) picks every template argument and the launch shape.
//
// Layout of the work. The n elements are split into
//   head       elements [0, head), before the first address where every pointer is aligned
//              to a whole pack (all pointers share the same element offset within a pack);
//   num_packs  whole packs of Pack elements, from element head on;
//   tail       the last (n - head) % Pack elements.
// head + tail < 2 * Pack elements are done one per thread by the first threads of block 0.
// A block iteration ("tile") covers blockDim.x * Unroll consecutive packs; warp w takes
// the w-th run of 32 * Unroll of them, lane l packs l + u * 32 of that run (u < Unroll), so
// each access of a warp is one contiguous run of 32 packs. The plan launches one block per tile;
// the loop strides by the grid only when the grid was clamped. Only the last tile is partial and
// takes the guarded path.
//
// Pack == 1 is the path for pointers at different offsets within a pack: one element per
// access, Unroll elements of each input in flight per thread, no head and no tail.
//
// Staged: the full tiles' input packs are copied into shared memory with cp.async
// (LDGSTS; one 16-byte slot per input, pack and thread; each thread reads back only its own
// slots, so no block barrier), for costly functors: ptxas defers plain loads of later packs
// behind the math of earlier ones, cp.async copies it cannot (bench notes: gelu bf16 2^28
// 0.963 -> 0.985 of the copy). Before sm_80 the copies are plain loads and stores
// (cuda_pipeline_primitives.h), still correct.
//
// Index is int32_t when every index the kernel forms (below 2 n + one tile) fits, int64_t
// otherwise; the plan decides.
#pragma once

#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/elementwise/elementwise_plan.cuh"

namespace kernelkit::detail {

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

// The staging buffer of the staged path (dynamic shared memory, kEwSlotBytes * blockDim.x *
// Unroll bytes per input): the slot of a pack sits at the pack's position within the tile.
extern __shared__ __align__(16) unsigned char kk_ew_stage[];

// A thread's packs within a tile: warp w of the block owns packs [w * 32 * Unroll,
// (w + 1) * 32 * Unroll) of the tile and lane l takes packs l + u * 32, u < Unroll, so each
// access of a warp is one contiguous run of 32 packs (512 bytes of 16-byte packs) and a
// thread's packs are a constant stride apart whatever the block size.
inline constexpr int kEwWarp = 32;

// Starts the copies of packs first + u * 32, u < Unroll, of every input into the slots at
// local + u * 32 of that input's region (input_bytes bytes each).
template <int N, int Unroll, typename Index>
__device__ __forceinline__ void ew_stage_tile(unsigned char*, int, int, Index) {}
template <int N, int Unroll, typename Index, typename T, typename... Ts>
__device__ __forceinline__ void ew_stage_tile(unsigned char* stage, int input_bytes, int local,
                                              Index first, const T* p, const Ts*... ps) {
  const auto* src = reinterpret_cast<const Pack<T, N>*>(p) + first;
  unsigned char* slot = stage + kEwSlotBytes * local;
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    __pipeline_memcpy_async(slot + kEwSlotBytes * kEwWarp * u, src + kEwWarp * u,
                            sizeof(Pack<T, N>));
  ew_stage_tile<N, Unroll>(stage + input_bytes, input_bytes, local, first, ps...);
}

// Reads this thread's staged packs back into registers.
template <int N, int Unroll>
__device__ __forceinline__ void ew_unstage_tile(EwPackRegs<N, Unroll>&, const unsigned char*, int,
                                                int) {}
template <int N, int Unroll, typename T, typename... Ts>
__device__ __forceinline__ void ew_unstage_tile(EwPackRegs<N, Unroll, T, Ts...>& r,
                                                const unsigned char* stage, int input_bytes,
                                                int local) {
  const unsigned char* slot = stage + kEwSlotBytes * local;
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    r.v[u] = *reinterpret_cast<const Pack<T, N>*>(slot + kEwSlotBytes * kEwWarp * u);
  ew_unstage_tile(r.rest, stage + input_bytes, input_bytes, local);
}

// Loads packs first + u * 32, u < Unroll, of every input.
template <int N, int Unroll, typename Index>
__device__ __forceinline__ void ew_load_tile(EwPackRegs<N, Unroll>&, Index) {}
template <int N, int Unroll, typename Index, typename T, typename... Ts>
__device__ __forceinline__ void ew_load_tile(EwPackRegs<N, Unroll, T, Ts...>& r, Index first,
                                             const T* p, const Ts*... ps) {
  const T* base = p + first * N;
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    r.v[u] = load_pack<N>(base, kEwWarp * u);
  ew_load_tile(r.rest, first, ps...);
}

// Computes and stores the Unroll result packs of a tile from the loaded inputs.
template <typename R, int N, int Unroll, typename Index, typename F, typename... Args, size_t... I>
__device__ __forceinline__ void ew_compute_store_tile(const F& f, R* out, Index first,
                                                      const EwPackRegs<N, Unroll, Args...>& r,
                                                      std::index_sequence<I...>) {
  R* base = out + first * N;
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    store_pack<N>(base, kEwWarp * u, ew_apply_pack<R, N>(f, EwRegsOf<I>::get(r)[u]...));
}

// The packed body: num_packs packs from out / in (every pointer aligned to a pack).
template <int N, int Unroll, bool Staged, typename Index, typename F, typename R, typename... Args>
__device__ __forceinline__ void ew_body(const F& f, Index num_packs, R* out, const Args*... in) {
  const int threads = static_cast<int>(blockDim.x);
  const Index tile = static_cast<Index>(threads) * Unroll;  // packs per block iteration
  const Index stride = static_cast<Index>(gridDim.x) * tile;
  const int lane = static_cast<int>(threadIdx.x) % kEwWarp;
  const int local = static_cast<int>(threadIdx.x) / kEwWarp * (kEwWarp * Unroll) + lane;
  for (Index start = static_cast<Index>(blockIdx.x) * tile; start < num_packs; start += stride) {
    const Index first = start + local;  // this thread's packs: first + u * 32
    if (start + tile <= num_packs) {
      // Whole tile: every load of the Unroll packs of every input is written before the
      // first use, then compute + store.
      EwPackRegs<N, Unroll, Args...> regs;
      if constexpr (Staged) {
        const int input_bytes = kEwSlotBytes * Unroll * threads;
        ew_stage_tile<N, Unroll>(kk_ew_stage, input_bytes, local, first, in...);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        ew_unstage_tile(regs, kk_ew_stage, input_bytes, local);
      } else {
        ew_load_tile(regs, first, in...);
      }
      ew_compute_store_tile<R>(f, out, first, regs, std::index_sequence_for<Args...>{});
    } else {
      // The last, partial tile: each pack guarded.
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const Index p = first + kEwWarp * u;
        if (p < num_packs) store_pack<N>(out, p, ew_apply_pack<R, N>(f, load_pack<N>(in, p)...));
      }
    }
  }
}

// out[i] = f(in[i]...) for i < n: the head and tail elements by block 0, the packs from
// element head on by every block (see the top of this file). head < Pack, and every pointer
// plus head elements is aligned to a pack.
//
// __launch_bounds__ gives the most threads a block has and no minimum of resident blocks:
// ptxas then takes the registers the kernel needs (sm_90: 16-32 for every f32/f16/bf16
// kernel with one pack per thread, 38 for gelu bf16 with 4 staged packs, 6 blocks of 256
// resident). With a minimum it fills the budget or spills: min_blocks_per_sm(256) (8 on
// sm_90, 32 registers) spills gelu's staged kernel, a minimum of 6 (40 registers) too, and
// a minimum of 4 makes it use all 64 registers.
template <int Pack, int Unroll, bool Staged, typename Index, typename Factory, typename R,
          typename... Args>
__global__ void __launch_bounds__(kEwMaxBlock)
    elementwise_kernel(Factory factory, Index n, Index head, R* out, const Args*... in) {
  static_assert(is_pow2(Pack), "pack size must be a power of two");
  static_assert(Unroll >= 1, "at least one pack per thread and tile");
  static_assert(!Staged || (Pack > 1 && ((sizeof(kernelkit::Pack<Args, Pack>) >= 4) && ...)),
                "staging copies whole packs of 4, 8 or 16 bytes");
  const auto f = factory();
  const Index num_packs = (n - head) / Pack;
  const Index edges = n - num_packs * Pack;  // head + tail, < 2 * Pack
  if (blockIdx.x == 0 && static_cast<Index>(threadIdx.x) < edges) {
    const Index t = static_cast<Index>(threadIdx.x);
    const Index i = t < head ? t : num_packs * Pack + t;  // the tail starts at head + packs
    out[i] = ew_apply_one<R>(f, in[i]...);
  }
  ew_body<Pack, Unroll, Staged>(f, num_packs, out + head, (in + head)...);
}

}  // namespace kernelkit::detail
