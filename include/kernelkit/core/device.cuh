// SPDX-License-Identifier: Apache-2.0
/// @file
/// What plans know about the GPU: the cached device facts (DeviceInfo), the cached facts of a
/// compiled kernel (KernelFacts), the pure occupancy rule, the per-architecture thread limit
/// that __launch_bounds__ use, and the one host cache every per-device and per-kernel fact
/// goes through.
///
/// Nothing here assumes a particular GPU: plans read SMs, threads, registers and shared
/// memory from DeviceInfo, and are host-tested with DeviceInfo values of several devices.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/math.cuh"

/// @def KERNELKIT_ARCH_THREADS_PER_SM
/// Resident threads per SM of the architecture being compiled for (device passes; 2048 in
/// the host pass, where __launch_bounds__ are not used): sm_75 1024; sm_86, sm_87, sm_89,
/// sm_120 and sm_121 1536; sm_80, sm_90, sm_100 and sm_103 2048. Kernels derive their
/// __launch_bounds__ minimum blocks from this, never from one GPU's number.
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ == 750
#define KERNELKIT_ARCH_THREADS_PER_SM 1024
#elif __CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 || \
    __CUDA_ARCH__ == 1200 || __CUDA_ARCH__ == 1210
#define KERNELKIT_ARCH_THREADS_PER_SM 1536
#else
#define KERNELKIT_ARCH_THREADS_PER_SM 2048
#endif
#else
#define KERNELKIT_ARCH_THREADS_PER_SM 2048
#endif

/// @def KERNELKIT_ARCH_BLOCKS_PER_SM
/// Resident blocks per SM of the architecture being compiled for (device passes; 32 in the
/// host pass): sm_75, sm_86, sm_87 16; sm_89, sm_120, sm_121 24; the others 32. ptxas
/// rejects a __launch_bounds__ minimum above it (small blocks: 32 threads x 48 blocks).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 750 || __CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870)
#define KERNELKIT_ARCH_BLOCKS_PER_SM 16
#elif defined(__CUDA_ARCH__) && \
    (__CUDA_ARCH__ == 890 || __CUDA_ARCH__ == 1200 || __CUDA_ARCH__ == 1210)
#define KERNELKIT_ARCH_BLOCKS_PER_SM 24
#else
#define KERNELKIT_ARCH_BLOCKS_PER_SM 32
#endif

namespace kernelkit {

/// @var kernelkit::kCompiledArch
/// The architecture being compiled for (device passes: sm_XY -> XY; 0 in the host pass, where
/// __launch_bounds__ are not used). Kernels whose register budget must differ on one
/// architecture (a spill there) name it from this; plans compare DeviceInfo::code_arch.
#if defined(__CUDA_ARCH__)
inline constexpr int kCompiledArch = __CUDA_ARCH__ / 10;
#else
inline constexpr int kCompiledArch = 0;
#endif

/// Blocks of `block` threads that fill an SM of the architecture being compiled for, capped
/// at `cap` and at the architecture's resident blocks (for __launch_bounds__(block,
/// min_blocks_per_sm(block, cap))): always >= 1.
__host__ __device__ constexpr int min_blocks_per_sm(int block, int cap = 32) {
  int fill = KERNELKIT_ARCH_THREADS_PER_SM / block;
  fill = fill < KERNELKIT_ARCH_BLOCKS_PER_SM ? fill : KERNELKIT_ARCH_BLOCKS_PER_SM;
  return fill < 1 ? 1 : (fill < cap ? fill : cap);
}

/// The device facts plans decide from, read once per device (current_device_info) or
/// written out for host tests (tests/common/devices.cuh: H100, A100, L4, T4).
struct DeviceInfo {
  int sm_count = 0;  ///< streaming multiprocessors
  /// Compute capability, major: 9 on sm_90 (cc_minor: 0).
  int cc_major = 0, cc_minor = 0;    ///< compute capability, minor: 0 on sm_90
  int max_threads_per_sm = 0;        ///< resident threads per SM
  int max_threads_per_block = 1024;  ///< threads a block may have
  int max_blocks_per_sm = 0;         ///< resident blocks per SM
  int regs_per_sm = 0;               ///< 32-bit registers per SM
  int regs_per_block = 0;            ///< 32-bit registers a block may use
  int smem_per_block = 0;            ///< bytes a block gets without opting in (48 KiB)
  int smem_per_block_optin = 0;      ///< bytes a block may ask for after opting in
  int smem_per_sm = 0;               ///< bytes of shared memory per SM (largest carveout)
  int smem_reserved_per_block = 0;   ///< bytes the system keeps per resident block (1 KiB sm_80+)
  int l2_bytes = 0;                  ///< bytes of L2 cache
  bool cluster_launch = false;       ///< the device can launch thread-block clusters (sm_90+)
  /// Plans may use clusters past the portable 8 blocks where the architecture has them
  /// (max_cluster()); plan_and_launch clears it when such a cluster cannot be placed (MPS,
  /// MIG, a smaller SM partition) and plans again.
  bool nonportable_clusters = true;
  /// The device can launch cooperative grids (every block resident at once, grid-wide
  /// barriers: grid_sync(), core/grid.cuh).
  bool cooperative_launch = false;
  /// The virtual architecture (80, 90, ...) kernelkit's kernels in this program were compiled
  /// for, read from a probe kernel's ptxVersion: a build holding only compute_80 PTX that
  /// the driver compiles for an H100 reports 80, and its kernels hold no cluster code.
  int code_arch = 0;

  /// The compute capability as one number: 90 for sm_90.
  constexpr int arch() const { return cc_major * 10 + cc_minor; }
  /// Thread-block clusters (and distributed shared memory) may be planned: the device can
  /// launch them and the kernels were compiled with their cluster code.
  constexpr bool clusters() const { return cluster_launch && code_arch >= 90; }
  /// The most blocks a planned cluster may have: 16 (the non-portable size) on sm_90 / sm_100,
  /// else the portable 8; 1 without clusters.
  constexpr int max_cluster() const {
    if (!clusters()) return 1;
    return nonportable_clusters && (cc_major == 9 || cc_major == 10) ? 16 : 8;
  }
  /// Resident threads the whole device holds.
  constexpr int64_t device_threads() const { return int64_t{sm_count} * max_threads_per_sm; }
};

/// Facts of one compiled kernel on the current device (cudaFuncGetAttributes).
struct KernelFacts {
  int regs = 0;         ///< registers per thread
  int static_smem = 0;  ///< bytes of static shared memory
  int max_threads = 0;  ///< most threads per block it can launch with
  int ptx_arch = 0;     ///< virtual architecture it was compiled from (80, 90, ...)
  int binary_arch = 0;  ///< architecture of the machine code that runs
};

/// Resident blocks per SM of a kernel with `threads` threads per block, `regs` registers per
/// thread and `smem` bytes of shared memory per block (static + dynamic), by the device's
/// limits on threads, blocks, registers (allocated per warp in units of 256) and shared
/// memory (allocated in units of 128 bytes, plus the per-block reserve). 0 when one block
/// does not fit. Pure: plans use it with the register count their kernels are built for.
constexpr int blocks_per_sm(const DeviceInfo& d, int threads, int regs, int64_t smem) {
  if (threads <= 0 || threads > d.max_threads_per_block) return 0;
  if (smem > d.smem_per_block_optin) return 0;
  const int warps = ceil_div(threads, 32);
  int blocks = d.max_blocks_per_sm;
  const int by_threads = d.max_threads_per_sm / (warps * 32);
  blocks = by_threads < blocks ? by_threads : blocks;
  if (regs > 0) {
    const int per_warp = round_up(regs * 32, 256);
    if (int64_t{per_warp} * warps > d.regs_per_block) return 0;
    const int by_regs = (d.regs_per_sm / per_warp) / warps;
    blocks = by_regs < blocks ? by_regs : blocks;
  }
  const int64_t per_block = round_up<int64_t>(smem, 128) + d.smem_reserved_per_block;
  if (per_block > 0) {
    const int64_t by_smem = d.smem_per_sm / per_block;
    blocks = by_smem < blocks ? static_cast<int>(by_smem) : blocks;
  }
  return blocks < 0 ? 0 : blocks;
}

namespace detail {

// The one host cache of kernelkit: a bounded map guarded by a mutex. Never throws (an
// allocation or lock failure just means "not cached"); holds at most Cap entries (when
// full it starts over), so a process that calls with ever new shapes stays bounded.
// Only successful results are stored: a failed query is asked again next time.
template <typename Key, typename Value, size_t Cap = 4096>
class HostCache {
 public:
  bool find(const Key& key, Value* out) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mu_);
      const auto it = map_.find(key);
      if (it == map_.end()) return false;
      *out = it->second;
      return true;
    } catch (...) {
      return false;
    }
  }
  void insert(const Key& key, const Value& value) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mu_);
      if (map_.size() >= Cap) map_.clear();
      map_[key] = value;
    } catch (...) {
    }
  }

 private:
  std::mutex mu_;
  std::map<Key, Value> map_;
};

// Looks key up in cache, else computes it with query (a cudaError_t(Value*)) and stores a
// success.
template <typename Cache, typename Key, typename Value, typename Query>
cudaError_t cached(Cache& cache, const Key& key, Value* out, Query query) {
  if (cache.find(key, out)) return cudaSuccess;
  Value v{};
  KERNELKIT_RETURN_IF_ERROR(query(&v));
  cache.insert(key, v);
  *out = v;
  return cudaSuccess;
}

// An empty kernel whose compiled form tells which virtual architecture this program's
// kernels were compiled for (its ptxVersion).
template <int = 0>
__global__ void arch_probe_kernel() {}

inline cudaError_t read_kernel_facts(const void* kernel, KernelFacts* out) {
  cudaFuncAttributes a{};
  KERNELKIT_RETURN_IF_ERROR(cudaFuncGetAttributes(&a, kernel));
  out->regs = a.numRegs;
  out->static_smem = static_cast<int>(a.sharedSizeBytes);
  out->max_threads = a.maxThreadsPerBlock;
  out->ptx_arch = a.ptxVersion;
  out->binary_arch = a.binaryVersion;
  return cudaSuccess;
}

template <int = 0>
cudaError_t read_device_info(int device, DeviceInfo* out) {
  DeviceInfo d;
  const auto get = [device](int* v, cudaDeviceAttr attr) {
    return cudaDeviceGetAttribute(v, attr, device);
  };
  KERNELKIT_RETURN_IF_ERROR(get(&d.sm_count, cudaDevAttrMultiProcessorCount));
  KERNELKIT_RETURN_IF_ERROR(get(&d.cc_major, cudaDevAttrComputeCapabilityMajor));
  KERNELKIT_RETURN_IF_ERROR(get(&d.cc_minor, cudaDevAttrComputeCapabilityMinor));
  KERNELKIT_RETURN_IF_ERROR(get(&d.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor));
  KERNELKIT_RETURN_IF_ERROR(get(&d.max_threads_per_block, cudaDevAttrMaxThreadsPerBlock));
  KERNELKIT_RETURN_IF_ERROR(get(&d.max_blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor));
  KERNELKIT_RETURN_IF_ERROR(get(&d.regs_per_sm, cudaDevAttrMaxRegistersPerMultiprocessor));
  KERNELKIT_RETURN_IF_ERROR(get(&d.regs_per_block, cudaDevAttrMaxRegistersPerBlock));
  KERNELKIT_RETURN_IF_ERROR(get(&d.smem_per_block, cudaDevAttrMaxSharedMemoryPerBlock));
  KERNELKIT_RETURN_IF_ERROR(get(&d.smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin));
  KERNELKIT_RETURN_IF_ERROR(get(&d.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  KERNELKIT_RETURN_IF_ERROR(
      get(&d.smem_reserved_per_block, cudaDevAttrReservedSharedMemoryPerBlock));
  KERNELKIT_RETURN_IF_ERROR(get(&d.l2_bytes, cudaDevAttrL2CacheSize));
  int cluster = 0;
  KERNELKIT_RETURN_IF_ERROR(get(&cluster, cudaDevAttrClusterLaunch));
  d.cluster_launch = cluster != 0;
  int cooperative = 0;
  KERNELKIT_RETURN_IF_ERROR(get(&cooperative, cudaDevAttrCooperativeLaunch));
  d.cooperative_launch = cooperative != 0;
  KernelFacts probe;
  KERNELKIT_RETURN_IF_ERROR(
      read_kernel_facts(reinterpret_cast<const void*>(arch_probe_kernel<>), &probe));
  d.code_arch = probe.ptx_arch;
  *out = d;
  return cudaSuccess;
}

inline HostCache<int, DeviceInfo, 256>& device_info_cache() {
  static HostCache<int, DeviceInfo, 256> cache;
  return cache;
}

using KernelKey = std::pair<int, const void*>;  // (device, kernel)

inline HostCache<KernelKey, KernelFacts>& kernel_facts_cache() {
  static HostCache<KernelKey, KernelFacts> cache;
  return cache;
}

inline HostCache<KernelKey, bool>& kernel_setup_cache() {
  static HostCache<KernelKey, bool> cache;
  return cache;
}

}  // namespace detail

/// Facts of the current device, read on first use and cached per device (thread-safe). A
/// failed read is returned and not cached: the next call reads again.
template <int = 0>
cudaError_t current_device_info(DeviceInfo* out) {
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  return detail::cached(detail::device_info_cache(), device, out,
                        [device](DeviceInfo* d) { return detail::read_device_info(device, d); });
}

/// Facts of `kernel` (a __global__ function's address) on the current device, cached per
/// (device, kernel).
template <int = 0>
cudaError_t kernel_facts(const void* kernel, KernelFacts* out) {
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  return detail::cached(detail::kernel_facts_cache(), detail::KernelKey{device, kernel}, out,
                        [kernel](KernelFacts* f) { return detail::read_kernel_facts(kernel, f); });
}

/// Runs setup() (kernel attributes: cudaFuncSetAttribute costs ~0.4 us of host time a call,
/// inside every launch) once per device and kernel. Keyed by the kernel's address, not by a
/// flag per template instantiation: without relocatable device code every translation unit
/// that launches a __global__ template registers its own copy of the kernel, with its own
/// address and attributes. A setup that failed is returned, not recorded, and runs again on
/// the next call (plans only ask for what the device allows, so it does not fail for them).
template <typename Setup>
cudaError_t once_per_kernel(const void* kernel, Setup setup) {
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  bool done = false;
  return detail::cached(detail::kernel_setup_cache(), detail::KernelKey{device, kernel}, &done,
                        [&](bool* d) {
                          KERNELKIT_RETURN_IF_ERROR(setup());
                          *d = true;
                          return cudaSuccess;
                        });
}

/// The attributes of a kernel whose working set lives in dynamic shared memory (a row, a chunk,
/// a tile): it may ask for all a block may have but its own static shared memory (the attribute
/// counts dynamic bytes; static and dynamic together stay within the opt-in), and the largest
/// shared-memory carveout (its bytes are read from shared memory, not through L1). For
/// once_per_kernel's setup. Pure CUDA attribute calls: nothing is launched.
template <typename Kernel>
cudaError_t set_shared_memory_kernel(Kernel kernel) {
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  KernelFacts f;
  KERNELKIT_RETURN_IF_ERROR(kernel_facts(reinterpret_cast<const void*>(kernel), &f));
  KERNELKIT_RETURN_IF_ERROR(cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smem_per_block_optin - f.static_smem));
  return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                              cudaSharedmemCarveoutMaxShared);
}

/// set_shared_memory_kernel once per kernel and device (once_per_kernel): the whole setup of a
/// kernel that needs no attribute besides those.
template <typename Kernel>
cudaError_t set_shared_memory_kernel_once(Kernel kernel) {
  return once_per_kernel(reinterpret_cast<const void*>(kernel),
                         [&] { return set_shared_memory_kernel(kernel); });
}

}  // namespace kernelkit
