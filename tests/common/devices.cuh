// DeviceInfo values of the GPUs plan tests run on the host: what current_device_info reads
// on an H100 SXM, an A100 SXM, an L4 and a T4 (CUDA 12/13 drivers), compiled for their own
// architecture. h100_compute80() is an H100 running a build that holds only compute_80 PTX:
// the device has clusters, the kernels do not.
#pragma once

#include <vector>

#include "kernelkit/core/device.cuh"

namespace kktest {

inline kernelkit::DeviceInfo h100() {
  kernelkit::DeviceInfo d;
  d.sm_count = 132;
  d.cc_major = 9, d.cc_minor = 0;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 32;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.smem_per_block = 49152;
  d.smem_per_block_optin = 232448;  // 227 KiB
  d.smem_per_sm = 233472;           // 228 KiB
  d.smem_reserved_per_block = 1024;
  d.l2_bytes = 52428800;
  d.cluster_launch = true;
  d.cooperative_launch = true;
  d.code_arch = 90;
  return d;
}

inline kernelkit::DeviceInfo h100_compute80() {
  kernelkit::DeviceInfo d = h100();
  d.code_arch = 80;
  return d;
}

inline kernelkit::DeviceInfo a100() {
  kernelkit::DeviceInfo d;
  d.sm_count = 108;
  d.cc_major = 8, d.cc_minor = 0;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 32;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.smem_per_block = 49152;
  d.smem_per_block_optin = 166912;  // 163 KiB
  d.smem_per_sm = 167936;           // 164 KiB
  d.smem_reserved_per_block = 1024;
  d.l2_bytes = 41943040;
  d.cluster_launch = false;
  d.cooperative_launch = true;
  d.code_arch = 80;
  return d;
}

inline kernelkit::DeviceInfo l4() {
  kernelkit::DeviceInfo d;
  d.sm_count = 58;
  d.cc_major = 8, d.cc_minor = 9;
  d.max_threads_per_sm = 1536;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 24;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.smem_per_block = 49152;
  d.smem_per_block_optin = 101376;  // 99 KiB
  d.smem_per_sm = 102400;           // 100 KiB
  d.smem_reserved_per_block = 1024;
  d.l2_bytes = 50331648;
  d.cluster_launch = false;
  d.cooperative_launch = true;
  d.code_arch = 89;
  return d;
}

inline kernelkit::DeviceInfo t4() {
  kernelkit::DeviceInfo d;
  d.sm_count = 40;
  d.cc_major = 7, d.cc_minor = 5;
  d.max_threads_per_sm = 1024;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 16;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.smem_per_block = 49152;
  d.smem_per_block_optin = 65536;
  d.smem_per_sm = 65536;
  d.smem_reserved_per_block = 0;
  d.l2_bytes = 4194304;
  d.cluster_launch = false;
  d.cooperative_launch = true;
  d.code_arch = 75;
  return d;
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
