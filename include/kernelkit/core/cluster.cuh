// SPDX-License-Identifier: Apache-2.0
/// @file
/// Thread-block clusters (sm_90 and later): the block's rank in its cluster, the cluster-wide
/// barrier and another block's shared memory, through the CUDA runtime's cluster intrinsics.
/// The one place kernels reach them; the plans launch clusters only for kernels compiled for
/// sm_90 or later (DeviceInfo::clusters()), so each use sits behind __CUDA_ARCH__ >= 900.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace kernelkit {

/// Most blocks a cluster may hold (the non-portable size on sm_90 and sm_100).
inline constexpr int kClusterMaxBlocks = 16;

/// A cluster-wide exchange of one 8-byte value a block, once a round (a kernel's row loop):
/// each block pushes its value into every block's slots with st.async, which counts the bytes
/// on the receiving block's mbarrier, and waits on its own mbarrier for all of them. Against
/// cluster_sync() and reading the others' slots: one one-way trip instead of a barrier and a
/// read, and no release of the caller's earlier writes (a cluster barrier's arrive waits for
/// this thread's global stores to complete: the previous row's output, on the critical path
/// of every round). Two rounds' slots alternate: a block cannot be two rounds ahead of any
/// other (round r + 1 needs every block's value of round r), and a block reads round r's
/// slots before it sends round r + 1's value. Lives in shared memory; cluster_push_init
/// first, and a block may exit only after cluster_push_exit.
struct ClusterPush {
  unsigned long long bar[2];                      ///< the mbarrier of even and of odd rounds
  unsigned long long slot[2][kClusterMaxBlocks];  ///< by round parity, each block's value by rank
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

/// This block's rank in its cluster, 0 .. cluster size - 1.
__device__ __forceinline__ int cluster_rank() {
  return static_cast<int>(__clusterRelativeBlockRank());
}

/// The cluster barrier in its two halves: every thread of every block arrives, then waits for
/// every other arrival. cluster_arrive releases this thread's earlier writes (shared memory of
/// any block of the cluster, global memory) to the threads whose cluster_wait follows it;
/// cluster_arrive_relaxed orders nothing (it only says "this block has started").
__device__ __forceinline__ void cluster_arrive() {
  __cluster_barrier_arrive();
}
__device__ __forceinline__ void cluster_arrive_relaxed() {
  __cluster_barrier_arrive_relaxed();
}
__device__ __forceinline__ void cluster_wait() {
  __cluster_barrier_wait();
}

/// cluster_arrive then cluster_wait: the writes before it are visible to every block of the
/// cluster after it.
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

/// The address of `p` (in this block's shared memory) in the shared memory of the block of
/// rank `rank` of this cluster.
template <typename T>
__device__ __forceinline__ T* cluster_map(T* p, int rank) {
  return static_cast<T*>(__cluster_map_shared_rank(p, static_cast<unsigned>(rank)));
}

/// Every thread of every block: the mbarriers set up and every block of the cluster started
/// (a barrier) before any value is pushed.
__device__ __forceinline__ void cluster_push_init(ClusterPush* x) {
  if (threadIdx.x == 0) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const auto a = static_cast<unsigned>(__cvta_generic_to_shared(&x->bar[i]));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(a) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  cluster_arrive_relaxed();
  cluster_wait();
}

/// Round `round`'s value of this block to the `n` blocks of the cluster (only the round's two
/// low bits matter: a 32-bit count may wrap). Every thread calls it; threads 0 .. n - 1 send,
/// one block each; thread 0 also tells its own mbarrier to expect n values.
__device__ __forceinline__ void cluster_push_send(ClusterPush* x, unsigned round,
                                                  unsigned long long value, int n) {
  const int t = static_cast<int>(threadIdx.x);
  if (t >= n) return;
  const auto base = static_cast<unsigned>(__cvta_generic_to_shared(x));
  const unsigned p = round & 1u;
  const unsigned bar = base + p * 8u;
  if (t == 0) {
    asm volatile(
        "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}" ::"r"(bar),
        "r"(static_cast<unsigned>(n * 8))
        : "memory");
  }
  const unsigned slot = base + static_cast<unsigned>(offsetof(ClusterPush, slot)) +
                        (p * kClusterMaxBlocks + static_cast<unsigned>(cluster_rank())) * 8u;
  unsigned rslot, rbar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rslot) : "r"(slot), "r"(t));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(bar), "r"(t));
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];" ::"r"(rslot),
      "l"(value), "r"(rbar)
      : "memory");
}

/// Waits (every thread) for round `round`'s values of all n blocks; returns rank r's value.
__device__ __forceinline__ unsigned long long cluster_push_wait(const ClusterPush* x,
                                                                unsigned round, int r) {
  const auto base = static_cast<unsigned>(__cvta_generic_to_shared(x));
  const unsigned p = round & 1u;
  const unsigned phase = (round >> 1) & 1u;
  // the retry loop inside the asm (a scope's labels are its own)
  asm volatile(
      "{\n.reg .pred q;\nwait:\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 q, "
      "[%0], %1;\n@!q bra wait;\n}" ::"r"(base + p * 8u),
      "r"(phase)
      : "memory");
  unsigned long long v;
  asm volatile("ld.shared::cta.b64 %0, [%1];"
               : "=l"(v)
               : "r"(base + static_cast<unsigned>(offsetof(ClusterPush, slot)) +
                     (p * kClusterMaxBlocks + static_cast<unsigned>(r)) * 8u));
  return v;
}

/// Before a block exits: every block has received every value (a relaxed barrier: the pushes
/// into a block land before it passes its last wait, and no block exits while one of its own
/// pushes might still be on its way).
__device__ __forceinline__ void cluster_push_exit() {
  cluster_arrive_relaxed();
  cluster_wait();
}

#endif

}  // namespace kernelkit
