// SPDX-License-Identifier: Apache-2.0
// DeviceInfo values of the GPUs plan tests run on the host: what current_device_info reads
// on an H100 SXM, an A100 SXM, an L4 and a T4 (CUDA 12/13 drivers), compiled for their own
// architecture. h100_compute80() is an H100 running a build that holds only compute_80 PTX:
// the device has clusters, the kernels do not.
#pragma once

#include <vector>

#include "kernelkit/core/device.cuh"

namespace kktest {

namespace detail {
// A DeviceInfo from what the GPUs below differ in; they share the rest: 1024 threads and 64 Ki
// registers per block, 64 Ki registers per SM, 48 KiB of shared memory per block without
// opting in, cooperative launches, and kernels compiled for the device's own architecture.
inline kernelkit::DeviceInfo device(int sm_count, int cc_major, int cc_minor,
                                    int max_threads_per_sm, int max_blocks_per_sm,
                                    int smem_per_block_optin, int smem_per_sm,
                                    int smem_reserved_per_block, int l2_bytes,
                                    bool cluster_launch) {
  kernelkit::DeviceInfo d;
  d.sm_count = sm_count;
  d.cc_major = cc_major, d.cc_minor = cc_minor;
  d.max_threads_per_sm = max_threads_per_sm;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = max_blocks_per_sm;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.smem_per_block = 49152;
  d.smem_per_block_optin = smem_per_block_optin;
  d.smem_per_sm = smem_per_sm;
  d.smem_reserved_per_block = smem_reserved_per_block;
  d.l2_bytes = l2_bytes;
  d.cluster_launch = cluster_launch;
  d.cooperative_launch = true;
  d.code_arch = d.arch();
  return d;
}
}  // namespace detail

// 227 KiB of shared memory per block opted in, 228 KiB per SM, 50 MiB of L2, clusters.
inline kernelkit::DeviceInfo h100() {
  return detail::device(/*sm_count=*/132, /*cc=*/9, 0, /*max_threads_per_sm=*/2048,
                        /*max_blocks_per_sm=*/32, /*smem_per_block_optin=*/232448,
                        /*smem_per_sm=*/233472, /*smem_reserved_per_block=*/1024,
                        /*l2_bytes=*/52428800, /*cluster_launch=*/true);
}

inline kernelkit::DeviceInfo h100_compute80() {
  kernelkit::DeviceInfo d = h100();
  d.code_arch = 80;
  return d;
}

// 163 KiB per block opted in, 164 KiB per SM, 40 MiB of L2.
inline kernelkit::DeviceInfo a100() {
  return detail::device(/*sm_count=*/108, /*cc=*/8, 0, /*max_threads_per_sm=*/2048,
                        /*max_blocks_per_sm=*/32, /*smem_per_block_optin=*/166912,
                        /*smem_per_sm=*/167936, /*smem_reserved_per_block=*/1024,
                        /*l2_bytes=*/41943040, /*cluster_launch=*/false);
}

// 99 KiB per block opted in, 100 KiB per SM, 48 MiB of L2.
inline kernelkit::DeviceInfo l4() {
  return detail::device(/*sm_count=*/58, /*cc=*/8, 9, /*max_threads_per_sm=*/1536,
                        /*max_blocks_per_sm=*/24, /*smem_per_block_optin=*/101376,
                        /*smem_per_sm=*/102400, /*smem_reserved_per_block=*/1024,
                        /*l2_bytes=*/50331648, /*cluster_launch=*/false);
}

// 64 KiB per block and per SM, no per-block reserve, 4 MiB of L2.
inline kernelkit::DeviceInfo t4() {
  return detail::device(/*sm_count=*/40, /*cc=*/7, 5, /*max_threads_per_sm=*/1024,
                        /*max_blocks_per_sm=*/16, /*smem_per_block_optin=*/65536,
                        /*smem_per_sm=*/65536, /*smem_reserved_per_block=*/0,
                        /*l2_bytes=*/4194304, /*cluster_launch=*/false);
}

// Every device above, for loops over devices in plan tests.
struct NamedDevice {
  const char* name;
  kernelkit::DeviceInfo info;
};
inline std::vector<NamedDevice> all_devices() {
  return {{"H100", h100()},
          {"H100-compute80", h100_compute80()},
          {"A100", a100()},
          {"L4", l4()},
          {"T4", t4()}};
}

}  // namespace kktest
