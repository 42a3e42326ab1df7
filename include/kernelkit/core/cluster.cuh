// SPDX-License-Identifier: Apache-2.0
/// @file
/// Thread-block clusters (sm_90 and later): the block's rank in its cluster, the cluster-wide
/// barrier and another block's shared memory, through the CUDA runtime's cluster intrinsics.
/// The one place kernels reach them; the plans launch clusters only for kernels compiled for
/// sm_90 or later (DeviceInfo::clusters()), so each use sits behind __CUDA_ARCH__ >= 900.
#pragma once

#include <cuda_runtime.h>

namespace kernelkit {

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

#endif

}  // namespace kernelkit
