// Launch configuration: a per-device cache of the properties kernels size themselves by,
// and the one grid-sizing rule every op uses.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>

#include "error.cuh"

namespace kernelkit {

// The device properties that launch decisions need, read once per device.
struct DeviceInfo {
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int l2_bytes = 0;
  int smem_per_block_optin = 0;  // bytes a block may ask for after opting in
  int smem_per_sm = 0;
  int cc_major = 0;
  int cc_minor = 0;
};

namespace detail {
inline constexpr int kMaxDevices = 64;

struct DeviceInfoCache {
  std::once_flag once[kMaxDevices];
  DeviceInfo info[kMaxDevices];
  cudaError_t status[kMaxDevices] = {};
};

inline DeviceInfoCache& device_info_cache() {
  static DeviceInfoCache cache;
  return cache;
}

inline cudaError_t read_device_info(int device, DeviceInfo* out) {
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.sm_count, cudaDevAttrMultiProcessorCount, device));
  KERNELKIT_RETURN_IF_ERROR(cudaDeviceGetAttribute(&d.max_threads_per_sm,
                                                   cudaDevAttrMaxThreadsPerMultiProcessor, device));
  KERNELKIT_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.max_blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor, device));
  KERNELKIT_RETURN_IF_ERROR(cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, device));
  KERNELKIT_RETURN_IF_ERROR(cudaDeviceGetAttribute(
      &d.smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  KERNELKIT_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  KERNELKIT_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, device));
  KERNELKIT_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, device));
  *out = d;
  return cudaSuccess;
}
}  // namespace detail

// Properties of the current device, read on first use and cached per device (thread-safe).
inline cudaError_t current_device_info(DeviceInfo* out) {
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  if (device < 0 || device >= detail::kMaxDevices) return detail::read_device_info(device, out);
  auto& cache = detail::device_info_cache();
  std::call_once(cache.once[device], [&] {
    cache.status[device] = detail::read_device_info(device, &cache.info[device]);
  });
  if (cache.status[device] != cudaSuccess) return cache.status[device];
  *out = cache.info[device];
  return cudaSuccess;
}

// The grid-sizing rule: enough blocks of block_size threads to give each of `work_items`
// one thread, but no more than `waves` full waves of resident threads on the device
// (sm_count * max_threads_per_sm / block_size blocks per wave); grid-stride loops cover
// the rest. Always at least one block. Pure, so it is tested on the host.
inline int grid_size_for(int64_t work_items, int block_size, int sm_count, int max_threads_per_sm,
                         int waves) {
  const int64_t needed = (std::max<int64_t>(work_items, 1) + block_size - 1) / block_size;
  const int64_t per_wave =
      std::max<int64_t>(1, int64_t{sm_count} * max_threads_per_sm / block_size);
  const int64_t cap = per_wave * std::max(waves, 1);
  return static_cast<int>(std::clamp<int64_t>(needed, 1, std::min<int64_t>(cap, INT32_MAX)));
}

inline constexpr int kDefaultWaves = 32;

// grid_size_for on the current device.
inline cudaError_t grid_size(int64_t work_items, int block_size, int* grid,
                             int waves = kDefaultWaves) {
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  *grid = grid_size_for(work_items, block_size, d.sm_count, d.max_threads_per_sm, waves);
  return cudaSuccess;
}

namespace detail {
struct KernelSetupRegistry {
  std::mutex mu;
  std::set<std::pair<int, const void*>> done;  // (device, kernel) pairs already set up
};

inline KernelSetupRegistry& kernel_setup_registry() {
  static KernelSetupRegistry registry;
  return registry;
}
}  // namespace detail

// Runs setup() (kernel attributes: cudaFuncSetAttribute costs ~0.4 us of host time a call,
// inside every timed launch) once per device and kernel. Keyed by the kernel's address, not
// by a flag per template instantiation: without relocatable device code every translation
// unit that launches a __global__ template registers its own copy of the kernel, with its
// own address and its own attributes, while a static flag in an inline function is one
// flag for the whole program (the sgemm tests caught exactly that: the second translation
// unit's copy launched without its shared-memory opt-in). A setup that failed is not
// recorded and runs again on the next call; concurrent first calls may both run it
// (setting attributes is idempotent).
template <typename Setup>
cudaError_t once_per_kernel(const void* kernel, Setup setup) {
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  auto& registry = detail::kernel_setup_registry();
  const auto key = std::make_pair(device, kernel);
  {
    std::lock_guard<std::mutex> lock(registry.mu);
    if (registry.done.count(key) != 0) return cudaSuccess;
  }
  KERNELKIT_RETURN_IF_ERROR(setup());
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.done.insert(key);
  return cudaSuccess;
}

// Ceiling division for non-negative integers.
template <typename T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

}  // namespace kernelkit
