// The device-wide reduction kernel: one launch, a grid of at most one wave of resident
// blocks, each reducing a grid-strided share of the input into one partial, and the last
// block to finish (a counter in the workspace) reducing the partials in a fixed order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../block/block_reduce.cuh"
#include "../../core/pack.cuh"
#include "../../core/types.cuh"

namespace kernelkit {
namespace detail {

// Tuning of the device-wide reduction. 256 threads x 4 resident blocks per SM (1024
// threads, <= 64 registers each) with 8 packs of 16 bytes in flight per thread: 128 KB of
// loads in flight per SM, far above the ~20 KB that HBM latency x bandwidth needs.
inline constexpr int kDeviceReduceBlock = 256;
inline constexpr int kDeviceReduceMinBlocksPerSm = 4;
inline constexpr int kDeviceReduceUnroll = 8;
// Most partials the workspace holds (the grid never exceeds it): 512 SMs x 4 blocks.
inline constexpr int kDeviceReduceMaxGrid = 2048;
// The counter sits in the first bytes of the workspace; partials start at this offset.
inline constexpr size_t kDeviceReduceHeaderBytes = 256;

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

// in:        the input, shifted so that `body` = in + head is aligned to Pack * sizeof(T)
// head:      elements before body (< Pack), reduced by the first threads of block 0
// num_packs: full packs of the body; the tail (< Pack elements) follows them
// partials:  gridDim.x slots; counter: zero on entry, left zero on exit
// out[0] = op(init, reduction of all n elements). Bits depend only on n, the alignment
// of `in` and gridDim.x (the combine order is fixed).
template <int BlockSize, int PackSize, int Unroll, typename T, typename Acc, typename Op>
__global__ void __launch_bounds__(BlockSize, kDeviceReduceMinBlocksPerSm)
    device_reduce_kernel(const T* __restrict__ in, int head, int64_t num_packs, int tail,
                         Acc* __restrict__ out, Op op, Acc init, Acc* __restrict__ partials,
                         unsigned int* __restrict__ counter) {
  static_assert(BlockSize % kWarpSize == 0 && BlockSize <= 1024,
                "block size must be a multiple of the warp size, at most 1024");
  static_assert(Unroll >= 1, "at least one pack per iteration");
  const Acc kIdentity = reduce_identity<Op, Acc>();
  const T* __restrict__ body = in + head;

  // each thread keeps one accumulator per pack lane
  Acc acc[PackSize];
#pragma unroll
  for (int k = 0; k < PackSize; ++k)
    acc[k] = kIdentity;

  const int64_t stride = int64_t{gridDim.x} * BlockSize * Unroll;
  int64_t i = int64_t{blockIdx.x} * BlockSize * Unroll + threadIdx.x;
  // full iterations: Unroll independent 16-byte loads in flight, then the adds
  for (; i + int64_t{Unroll - 1} * BlockSize < num_packs; i += stride) {
    Pack<T, PackSize> p[Unroll];
#pragma unroll
    for (int j = 0; j < Unroll; ++j)
      p[j] = load_pack<PackSize>(body, i + int64_t{j} * BlockSize);
#pragma unroll
    for (int j = 0; j < Unroll; ++j) {
#pragma unroll
      for (int k = 0; k < PackSize; ++k)
        acc[k] = op(acc[k], convert<Acc>(p[j].elem[k]));
    }
  }
  // the one partial iteration left (i + stride is past the end)
#pragma unroll
  for (int j = 0; j < Unroll; ++j) {
    const int64_t idx = i + int64_t{j} * BlockSize;
    if (idx < num_packs) {
      const Pack<T, PackSize> p = load_pack<PackSize>(body, idx);
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
  v = block_reduce<BlockSize>(v, op);  // thread 0 holds the block's partial

  if (gridDim.x == 1) {
    if (threadIdx.x == 0) *out = op(init, v);
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    // release: the partial is visible device-wide before the counter says so
    __threadfence();
    const unsigned int done = atomicAdd(counter, 1u);
    is_last = done == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;
  // acquire: every other block's partial (fenced before its increment) is visible now
  __threadfence();
  // fixed order: thread t combines partials t, t + BlockSize, ... then the block tree
  Acc w = kIdentity;
  for (int b = threadIdx.x; b < static_cast<int>(gridDim.x); b += BlockSize)
    w = op(w, load_reduce_partial(partials + b));
  w = block_reduce<BlockSize>(w, op);
  if (threadIdx.x == 0) {
    *out = op(init, w);
    *counter = 0u;  // ready for the next launch (and graph replay)
  }
}

}  // namespace detail
}  // namespace kernelkit
