// The device-wide reduction kernel: one launch; each block reduces a grid-strided share of
// the input (tiles of Block x Unroll packs) into one partial, and the last block to finish
// (a counter in the workspace) reduces the partials in a fixed order. The tuning (block
// size, occupancy, packs per thread, grid waves) is a policy type, see DeviceReducePolicy.
#pragma once

#include <cuda/atomic>

#include <cstdint>
#include <type_traits>

#include "../../block/block_reduce.cuh"
#include "../../core/pack.cuh"
#include "../../core/types.cuh"

namespace kernelkit {
namespace detail {

// Tuning of the device-wide reduction, as one policy type so that the tests can run
// alternatives of the same kernel (grids over every tile, one pack per thread).
//   Block, MinBlocksPerSm: threads per block and the resident blocks per SM the kernel is
//     built for (__launch_bounds__; 256 x 4 = 1024 threads, <= 64 registers each).
//   Unroll: packs of 16 bytes each thread loads per tile (all issued before the adds).
//   Waves: the grid is at most Waves waves of resident blocks (1: a grid-stride loop over
//     one wave; more: the block scheduler hands out tiles as blocks finish).
//   MaxGrid: most blocks (and partials in the workspace), whatever the device.
template <int Block, int MinBlocksPerSm, int Unroll, int Waves = 1, int MaxGrid = 2048>
struct DeviceReducePolicy {
  static_assert(Block % 32 == 0 && Block <= 1024,
                "block size must be a multiple of the warp size, at most 1024");
  static_assert(MinBlocksPerSm >= 1 && Unroll >= 1 && Waves >= 1 && MaxGrid >= 1,
                "positive tuning parameters");
  static constexpr int kBlock = Block;
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr int kUnroll = Unroll;
  static constexpr int kWaves = Waves;
  static constexpr int kMaxGrid = MaxGrid;
};

// The library's policy: 256 threads x 4 resident blocks per SM with 8 packs of 16 bytes in
// flight per thread (128 KB of loads in flight per SM), one wave, grid-stride loop.
using DeviceReduceDefaultPolicy = DeviceReducePolicy<256, 4, 8>;
inline constexpr int kDeviceReduceBlock = DeviceReduceDefaultPolicy::kBlock;
inline constexpr int kDeviceReduceMinBlocksPerSm = DeviceReduceDefaultPolicy::kMinBlocksPerSm;
inline constexpr int kDeviceReduceUnroll = DeviceReduceDefaultPolicy::kUnroll;
// Most partials the workspace holds (the grid never exceeds it): 512 SMs x 4 blocks.
inline constexpr int kDeviceReduceMaxGrid = DeviceReduceDefaultPolicy::kMaxGrid;
// The counter sits in the first bytes of the workspace; partials start at this offset.
inline constexpr size_t kDeviceReduceHeaderBytes = 256;
// Partials each thread of the last block loads before it combines them (one round trip
// to L2 for up to Block x this many partials): 16, fewer where the policy leaves a thread
// at most 32 registers (8 for 4-byte Acc, 4 for 8-byte Acc).
template <typename Policy, typename Acc>
inline constexpr int kDeviceReduceCombineUnroll =
    65536 / (Policy::kBlock * Policy::kMinBlocksPerSm) >= 64 ? 16 : (sizeof(Acc) > 4 ? 4 : 8);

// The identity of Op on Acc: what each thread starts from (init is applied once, at the
// end, so a sum's init is added exactly once). Written without std::numeric_limits so that
// it needs no --expt-relaxed-constexpr in device code.
template <typename Acc>
__host__ __device__ __forceinline__ Acc reduce_highest() {
  if constexpr (std::is_integral_v<Acc>) {
    using U = std::make_unsigned_t<Acc>;
    return std::is_signed_v<Acc> ? static_cast<Acc>(static_cast<U>(~U{0}) >> 1)
                                 : static_cast<Acc>(~U{0});
  } else {
    return convert<Acc>(__builtin_huge_val());  // +inf
  }
}

template <typename Acc>
__host__ __device__ __forceinline__ Acc reduce_lowest() {
  if constexpr (std::is_integral_v<Acc>) {
    return std::is_signed_v<Acc> ? static_cast<Acc>(-reduce_highest<Acc>() - 1) : Acc(0);
  } else {
    return convert<Acc>(-__builtin_huge_val());  // -inf
  }
}

template <typename Op, typename Acc>
__host__ __device__ __forceinline__ Acc reduce_identity() {
  if constexpr (std::is_same_v<Op, Sum>) {
    return convert<Acc>(0);
  } else if constexpr (std::is_same_v<Op, Max>) {
    return reduce_lowest<Acc>();
  } else {
    static_assert(std::is_same_v<Op, Min>, "reduce_identity: Op must be Sum, Max or Min");
    return reduce_highest<Acc>();
  }
}

// A load that bypasses L1 (partials written by other SMs); other types load plainly.
template <typename Acc>
__device__ __forceinline__ Acc load_reduce_partial(const Acc* p) {
  if constexpr (std::is_same_v<Acc, float> || std::is_same_v<Acc, double> ||
                std::is_same_v<Acc, int> || std::is_same_v<Acc, long long> ||
                std::is_same_v<Acc, unsigned int> || std::is_same_v<Acc, unsigned long long>) {
    return __ldcg(p);
  } else if constexpr (std::is_integral_v<Acc> && sizeof(Acc) == 8) {
    return static_cast<Acc>(__ldcg(reinterpret_cast<const long long*>(p)));
  } else {
    return *static_cast<const volatile Acc*>(p);
  }
}

// Adds a thread's Unroll packs of one tile to acc, lane by lane.
template <int Unroll, typename Acc, typename Op, typename T, int PackSize>
__device__ __forceinline__ void device_reduce_add_tile(Acc (&acc)[PackSize],
                                                       const Pack<T, PackSize> (&p)[Unroll],
                                                       Op op) {
#pragma unroll
  for (int j = 0; j < Unroll; ++j) {
#pragma unroll
    for (int k = 0; k < PackSize; ++k)
      acc[k] = op(acc[k], convert<Acc>(p[j].elem[k]));
  }
}

// in:        the input, shifted so that `body` = in + head is aligned to Pack * sizeof(T)
// head:      elements before body (< Pack), reduced by the first threads of block 0
// num_packs: full packs of the body; the tail (< Pack elements) follows them
// partials:  gridDim.x slots; counter: zero on entry, left zero on exit
// out[0] = op(init, reduction of all n elements). Bits depend only on n, the alignment
// of `in` and gridDim.x (the combine order is fixed).
template <typename Policy, int PackSize, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(Policy::kBlock, Policy::kMinBlocksPerSm)
    device_reduce_kernel(const T* __restrict__ in, int head, int64_t num_packs, int tail,
                         Acc* __restrict__ out, Op op, Acc init, Acc* __restrict__ partials,
                         unsigned int* __restrict__ counter) {
  constexpr int kBlock = Policy::kBlock;
  constexpr int kUnroll = Policy::kUnroll;
  using P = Pack<T, PackSize>;
  const Acc kIdentity = reduce_identity<Op, Acc>();
  const T* __restrict__ body = in + head;

  // each thread keeps one accumulator per pack lane
  Acc acc[PackSize];
#pragma unroll
  for (int k = 0; k < PackSize; ++k)
    acc[k] = kIdentity;

  // tiles of kBlock * kUnroll packs; thread t of a tile loads packs t + j * kBlock
  const int64_t stride = int64_t{gridDim.x} * kBlock * kUnroll;
  const int64_t last_full = num_packs - int64_t{kUnroll - 1} * kBlock;  // i < last_full: full
  int64_t i = int64_t{blockIdx.x} * kBlock * kUnroll + threadIdx.x;
  // full tiles: kUnroll independent 16-byte loads in flight, then the adds
#pragma unroll 1
  for (; i < last_full; i += stride) {
    P p[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j)
      p[j] = load_pack<PackSize>(body, i + int64_t{j} * kBlock);
    device_reduce_add_tile<kUnroll>(acc, p, op);
  }
  // the one partial tile left (i + stride is past the end). Written as load-then-add per
  // pack: ptxas still predicates and batches these loads, and (unlike an explicit
  // all-loads-first form) keeps the main loop's kUnroll loads ahead of its adds.
#pragma unroll
  for (int j = 0; j < kUnroll; ++j) {
    const int64_t idx = i + int64_t{j} * kBlock;
    if (idx < num_packs) {
      const P p = load_pack<PackSize>(body, idx);
#pragma unroll
      for (int k = 0; k < PackSize; ++k)
        acc[k] = op(acc[k], convert<Acc>(p.elem[k]));
    }
  }
  Acc v = acc[0];
#pragma unroll
  for (int k = 1; k < PackSize; ++k)
    v = op(v, acc[k]);
  // the unaligned head and the tail: fewer than PackSize elements each, block 0
  if (blockIdx.x == 0) {
    if (static_cast<int>(threadIdx.x) < head) v = op(v, convert<Acc>(in[threadIdx.x]));
    if (static_cast<int>(threadIdx.x) < tail)
      v = op(v, convert<Acc>(body[num_packs * PackSize + threadIdx.x]));
  }
  v = block_reduce<kBlock>(v, op);  // thread 0 holds the block's partial

  if (gridDim.x == 1) {
    if (threadIdx.x == 0) *out = op(init, v);
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    // release: this block's partial is visible before its increment; acquire (for the
    // last block): every other block's partial, released before its increment, is visible
    // to this thread, and through the barrier below to the whole block
    cuda::atomic_ref<unsigned int, cuda::thread_scope_device> count(*counter);
    const unsigned int done = count.fetch_add(1u, cuda::memory_order_acq_rel);
    is_last = done == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;
  // fixed order: thread t combines partials t, t + kBlock, t + 2 kBlock, ..., then the
  // block tree. Every load of a chunk is issued before the adds: one round trip to L2 per
  // chunk of kBlock x kCombineUnroll partials.
  const int grid = static_cast<int>(gridDim.x);
  Acc w = kIdentity;
  constexpr int kCombineUnroll = kDeviceReduceCombineUnroll<Policy, Acc>;
  for (int base = threadIdx.x; base < grid; base += kBlock * kCombineUnroll) {
    Acc q[kCombineUnroll];
#pragma unroll
    for (int k = 0; k < kCombineUnroll; ++k) {
      const int b = base + k * kBlock;
      if (b < grid) q[k] = load_reduce_partial(partials + b);
    }
#pragma unroll
    for (int k = 0; k < kCombineUnroll; ++k) {
      if (base + k * kBlock < grid) w = op(w, q[k]);
    }
  }
  w = block_reduce<kBlock>(w, op);
  if (threadIdx.x == 0) {
    *out = op(init, w);
    *counter = 0u;  // ready for the next launch (and graph replay)
  }
}

}  // namespace detail
}  // namespace kernelkit
