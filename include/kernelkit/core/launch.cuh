// SPDX-License-Identifier: Apache-2.0
/// @file
/// Launching: the one grid rule (waves of resident blocks, or one block per tile), the
/// launch shape a plan produces, and the one launcher, which also launches thread-block
/// clusters after checking that one can be resident, with the fallback that re-plans
/// without clusters.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/math.cuh"

namespace kernelkit {

/// Full waves of resident blocks grid_size_for allows by default; grid-stride loops cover
/// the rest.
inline constexpr int kDefaultWaves = 32;

/// The grid-sizing rule: enough blocks of `block` threads to give each of `work_items` one
/// thread, but no more than `waves` full waves of resident blocks (resident blocks per SM:
/// `blocks_per_sm` when the plan knows it, else what the thread limit allows); grid-stride
/// loops cover the rest. At least one block, at most INT32_MAX. Pure.
inline int grid_size_for(int64_t work_items, int block, const DeviceInfo& d,
                         int waves = kDefaultWaves, int blocks_per_sm = 0) {
  const int64_t needed = ceil_div<int64_t>(std::max<int64_t>(work_items, 1), block);
  const int64_t per_sm =
      blocks_per_sm > 0 ? blocks_per_sm : std::max(1, d.max_threads_per_sm / block);
  const int64_t cap = std::max<int64_t>(1, per_sm * d.sm_count) * std::max(waves, 1);
  return static_cast<int>(std::clamp<int64_t>(needed, 1, std::min<int64_t>(cap, INT32_MAX)));
}

/// One block per tile: `tiles` blocks, clamped to [1, INT32_MAX] (a kernel that strides by
/// gridDim.x covers the tiles past the limit). Pure.
inline int grid_one_block_per_tile(int64_t tiles) {
  return static_cast<int>(std::clamp<int64_t>(tiles, 1, INT32_MAX));
}

/// How a plan launches one kernel. cluster: the thread-block cluster's dimensions ({1, 1, 1}:
/// no cluster); the grid must be a multiple of it in each dimension.
struct LaunchShape {
  dim3 grid{1, 1, 1};     ///< blocks of the grid
  dim3 block{1, 1, 1};    ///< threads of a block
  size_t smem = 0;        ///< dynamic shared memory, bytes
  dim3 cluster{1, 1, 1};  ///< blocks of a cluster ({1, 1, 1}: no cluster)
  /// Programmatic dependent launch (sm_90+): the kernel may be scheduled while the kernel
  /// before it in the stream is finishing, and must run griddepcontrol.wait
  /// (cudaGridDependencySynchronize) before it touches anything that kernel writes. Plans set
  /// it only for kernels compiled with that wait, when d.cc_major >= 9 and d.code_arch >= 90.
  bool overlap_previous = false;
  /// Cooperative launch: every block of the grid is resident at once, so the kernel may use
  /// grid-wide barriers (grid_sync(), core/grid.cuh). Plans set it only when
  /// d.cooperative_launch and size the grid to the blocks that fit at once.
  bool cooperative = false;

  /// The launch uses a cluster of more than one block.
  constexpr bool is_cluster() const { return cluster.x * cluster.y * cluster.z > 1; }
};

/// How the blocks that share one output (a row, a column tile, the whole input) combine their
/// parts of it. Each op plans a subset of these, listed where it names them: reduce all four,
/// row_reduce kNone, kCluster, kGrid and kSecondKernel by path, gemv kNone, kCluster and
/// kSecondKernel, softmax's chunk kernel kNone, kCluster and kGrid.
enum class BlockCombine {
  kNone,          ///< one block per output: it writes the output itself
  kCluster,       ///< the blocks are one thread-block cluster (LaunchShape::cluster): their
                  ///< parts meet in distributed shared memory
  kGrid,          ///< a cooperative grid (LaunchShape::cooperative): parts parked in global
                  ///< memory meet after a grid barrier, in the same launch
  kSecondKernel,  ///< parts in the workspace, combined by a second kernel launched after the first
};

namespace detail {
// attr: room for three attributes (cluster dimension, programmatic serialization,
// cooperative).
inline cudaLaunchConfig_t launch_config(const LaunchShape& s, cudaStream_t stream,
                                        cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t config = {};
  config.gridDim = s.grid;
  config.blockDim = s.block;
  config.dynamicSmemBytes = s.smem;
  config.stream = stream;
  unsigned n = 0;
  if (s.is_cluster()) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = s.cluster.x;
    attr[n].val.clusterDim.y = s.cluster.y;
    attr[n].val.clusterDim.z = s.cluster.z;
    ++n;
  }
  if (s.overlap_previous) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (s.cooperative) {
    attr[n].id = cudaLaunchAttributeCooperative;
    attr[n].val.cooperative = 1;
    ++n;
  }
  config.attrs = attr;
  config.numAttrs = n;
  return config;
}

// (device, kernel, cluster size, block threads, dynamic smem) -> clusters resident at once.
using ClusterKey = std::tuple<int, const void*, unsigned, unsigned, size_t>;
inline HostCache<ClusterKey, int>& cluster_occupancy_cache() {
  static HostCache<ClusterKey, int> cache;
  return cache;
}

// (device, kernel, block threads, dynamic smem) -> blocks resident per SM.
using BlocksKey = std::tuple<int, const void*, unsigned, size_t>;
inline HostCache<BlocksKey, int>& resident_blocks_cache() {
  static HostCache<BlocksKey, int> cache;
  return cache;
}
}  // namespace detail

/// Clusters of `kernel` launched with `shape` that can be resident at once on the current
/// device (0: none can; under MPS, MIG or on a part with few SMs per GPC a valid cluster may
/// not fit). Cached per (device, kernel, cluster, block, smem); the cache is bounded.
template <typename Kernel>
cudaError_t cluster_occupancy(Kernel kernel, const LaunchShape& shape, int* clusters) {
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  const auto* fn = reinterpret_cast<const void*>(kernel);
  const unsigned csize = shape.cluster.x * shape.cluster.y * shape.cluster.z;
  const unsigned threads = shape.block.x * shape.block.y * shape.block.z;
  const detail::ClusterKey key{device, fn, csize, threads, shape.smem};
  return detail::cached(detail::cluster_occupancy_cache(), key, clusters, [&](int* n) {
    LaunchShape probe = shape;
    probe.grid = shape.cluster;  // one cluster's worth is all the query needs
    probe.overlap_previous = false;
    probe.cooperative = false;
    cudaLaunchAttribute attr[3];
    const cudaLaunchConfig_t config = detail::launch_config(probe, nullptr, attr);
    return cudaOccupancyMaxActiveClusters(n, kernel, &config);
  });
}

/// Blocks of `kernel` launched with `shape` that can be resident at once on the current
/// device (runtime occupancy query times the SMs). Cached per (device, kernel, block, smem).
template <typename Kernel>
cudaError_t resident_blocks(Kernel kernel, const LaunchShape& shape, int64_t* blocks) {
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const auto* fn = reinterpret_cast<const void*>(kernel);
  const unsigned threads = shape.block.x * shape.block.y * shape.block.z;
  const detail::BlocksKey key{device, fn, threads, shape.smem};
  int per_sm = 0;
  KERNELKIT_RETURN_IF_ERROR(
      detail::cached(detail::resident_blocks_cache(), key, &per_sm, [&](int* n) {
        return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, kernel, static_cast<int>(threads),
                                                             shape.smem);
      }));
  *blocks = int64_t{per_sm} * d.sm_count;
  return cudaSuccess;
}

/// What launch() answers, without launching, for a cluster shape of which no cluster can be
/// resident, or a cooperative grid larger than the blocks that can be resident at once; also
/// what the runtime answers for a cluster it cannot schedule.
inline constexpr cudaError_t kClusterDoesNotFit = cudaErrorInvalidClusterSize;

/// The launcher of every op: kernel<<<shape>>>(args...) on stream, as a cluster launch when
/// shape.cluster is more than one block, as a programmatic dependent launch when
/// shape.overlap_previous, and as a cooperative launch when shape.cooperative. A cluster
/// launch first checks that one cluster can be resident, a cooperative launch that the whole
/// grid can, and when not returns kClusterDoesNotFit without launching (plan_and_launch then
/// re-plans without clusters, then without cooperative grids). Returns the launch's status.
template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), const LaunchShape& shape, cudaStream_t stream,
                   Args&&... args) {
  if (shape.is_cluster()) {
    int clusters = 0;
    KERNELKIT_RETURN_IF_ERROR(cluster_occupancy(kernel, shape, &clusters));
    if (clusters < 1) return kClusterDoesNotFit;
  }
  if (shape.cooperative) {
    int64_t resident = 0;
    KERNELKIT_RETURN_IF_ERROR(resident_blocks(kernel, shape, &resident));
    if (int64_t{shape.grid.x} * shape.grid.y * shape.grid.z > resident) return kClusterDoesNotFit;
  }
  // cudaLaunchKernelEx returns this launch's own status, so a successful call leaves an
  // error the caller has not read yet where it was (a <<<>>> launch followed by
  // cudaGetLastError() would return and clear it).
  cudaLaunchAttribute attr[3];
  const cudaLaunchConfig_t config = detail::launch_config(shape, stream, attr);
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // consume the error this launch just recorded (ours)
    return err == cudaErrorCooperativeLaunchTooLarge ? kClusterDoesNotFit : err;
  }
  return cudaSuccess;
}

namespace detail {
// Blocks in a plan's cluster: its LaunchShape's, or 1 for a plan without one.
template <typename Plan, typename = void>
struct PlanCluster {
  static constexpr unsigned blocks(const Plan&) { return 1; }
};
template <typename Plan>
struct PlanCluster<Plan, std::void_t<decltype(std::declval<const Plan&>().shape.cluster)>> {
  static constexpr unsigned blocks(const Plan& p) {
    return p.shape.cluster.x * p.shape.cluster.y * p.shape.cluster.z;
  }
};
}  // namespace detail

/// plan(d) -> a plan; launch(plan) -> cudaError_t. Launches the plan made for the device;
/// when it does not fit (kClusterDoesNotFit): a cluster past the portable 8 blocks is planned
/// again with at most 8 (d.nonportable_clusters off); then the plan is made again without
/// clusters, then without cooperative grids, each launched. A valid call always runs.
template <typename PlanFn, typename LaunchFn>
cudaError_t plan_and_launch(DeviceInfo d, PlanFn&& plan, LaunchFn&& launch_plan) {
  const auto first = plan(d);
  cudaError_t err = launch_plan(first);
  if (err == kClusterDoesNotFit &&
      detail::PlanCluster<std::decay_t<decltype(first)>>::blocks(first) > 8) {
    d.nonportable_clusters = false;
    err = launch_plan(plan(d));
  }
  if (err == kClusterDoesNotFit && d.cluster_launch) {
    d.cluster_launch = false;
    err = launch_plan(plan(d));
  }
  if (err == kClusterDoesNotFit && d.cooperative_launch) {
    d.cooperative_launch = false;
    err = launch_plan(plan(d));
  }
  return err;
}

}  // namespace kernelkit
