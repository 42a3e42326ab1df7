// Device-wide reduction: out[0] = op-reduction of in[0..n), accumulated in Acc.
//
// One launch. The grid is at most one wave of resident blocks (chosen from n and the
// device only); each block reduces a grid-strided share of the input with 16-byte loads
// into one partial in the workspace, and the last block to finish (a counter in the
// workspace, which the kernel resets itself) reduces the partials in a fixed order. The
// result is deterministic: the same input (same n, same pointer alignment) gives the same
// bits on every run. No floating-point atomics.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/pack.cuh"
#include "../core/types.cuh"
#include "detail/device_reduce_kernel.cuh"

namespace kernelkit {

namespace detail {
// Blocks the reduction of n elements of T uses at most under Policy: one thread per Unroll
// packs, at most Policy::kMaxGrid blocks. Device-independent, so the workspace size is too.
template <typename T, typename Policy = DeviceReduceDefaultPolicy>
constexpr int64_t device_reduce_max_blocks(int64_t n) {
  constexpr int64_t per_block = int64_t{Policy::kBlock} * Policy::kUnroll * kMaxPackSize<T>;
  const int64_t blocks = (n + per_block - 1) / per_block;
  return blocks < Policy::kMaxGrid ? blocks : Policy::kMaxGrid;
}

// Workspace bytes of n elements of T accumulated in Acc under Policy (0 for n <= 0).
template <typename T, typename Acc, typename Policy = DeviceReduceDefaultPolicy>
constexpr size_t device_reduce_workspace_bytes(int64_t n) {
  if (n <= 0) return 0;
  return kDeviceReduceHeaderBytes +
         static_cast<size_t>(device_reduce_max_blocks<T, Policy>(n)) * sizeof(Acc);
}

// The grid for n elements of T on a device: the shared grid rule with Policy::kWaves waves
// of Policy::kMinBlocksPerSm blocks per SM (the occupancy the kernel is built for).
template <typename T, typename Policy = DeviceReduceDefaultPolicy>
inline int device_reduce_grid(int64_t n, const DeviceInfo& d) {
  const int64_t work = ceil_div<int64_t>(n, int64_t{Policy::kUnroll} * kMaxPackSize<T>);
  const int resident_threads =
      std::min(d.max_threads_per_sm, Policy::kBlock * Policy::kMinBlocksPerSm);
  const int grid =
      grid_size_for(work, Policy::kBlock, d.sm_count, resident_threads, Policy::kWaves);
  return static_cast<int>(std::min<int64_t>(grid, device_reduce_max_blocks<T, Policy>(n)));
}

// The launch, arguments already checked (n > 0; the workspace holds
// device_reduce_workspace_bytes<T, Acc, Policy>(n) bytes, counter zero).
template <typename Policy = DeviceReduceDefaultPolicy, typename T, typename Acc, typename Op>
cudaError_t launch_device_reduce(const T* in, int64_t n, Acc* out, Op op, Acc init, void* workspace,
                                 cudaStream_t stream) {
  constexpr int kPack = kMaxPackSize<T>;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const int grid = device_reduce_grid<T, Policy>(n, d);
  // elements before the first 16-byte boundary go to the scalar head
  int head = 0;
  while (head < n && pack_size_for(in + head) != kPack)
    ++head;
  if (head == kPack) head = 0;  // never aligned (odd address): not reachable for a T*
  const int64_t num_packs = (n - head) / kPack;
  const int tail = static_cast<int>(n - head - num_packs * kPack);
  auto* counter = static_cast<unsigned int*>(workspace);
  auto* partials = reinterpret_cast<Acc*>(static_cast<char*>(workspace) + kDeviceReduceHeaderBytes);
  device_reduce_kernel<Policy, kPack><<<grid, Policy::kBlock, 0, stream>>>(
      in, head, num_packs, tail, out, op, init, partials, counter);
  return cudaGetLastError();
}

}  // namespace detail

// Bytes of workspace reduce() needs for n elements of T accumulated in Acc (0 for n <= 0).
// The workspace holds the last-block counter and one partial per block.
template <typename T, typename Acc = compute_t<T>>
constexpr size_t reduce_workspace_bytes(int64_t n) {
  return detail::device_reduce_workspace_bytes<T, Acc>(n);
}

namespace detail {
// Writes init to out (the reduction of nothing).
template <typename Acc>
__global__ void device_reduce_fill_kernel(Acc* out, Acc init) {
  *out = init;
}

// The argument checks of every public entry point, then the launch with the functor Op.
template <typename T, typename Acc, typename Op>
cudaError_t checked_device_reduce(const T* in, int64_t n, Acc* out, Op op, Acc init,
                                  void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  KERNELKIT_REQUIRE(n >= 0);
  KERNELKIT_REQUIRE(out != nullptr);
  if (n == 0) {
    device_reduce_fill_kernel<<<1, 1, 0, stream>>>(out, init);
    return cudaGetLastError();
  }
  KERNELKIT_REQUIRE(in != nullptr);
  KERNELKIT_REQUIRE(reinterpret_cast<std::uintptr_t>(in) % alignof(T) == 0);
  KERNELKIT_REQUIRE(workspace != nullptr);
  KERNELKIT_REQUIRE(reinterpret_cast<std::uintptr_t>(workspace) % 16 == 0);
  KERNELKIT_REQUIRE((workspace_bytes >= reduce_workspace_bytes<T, Acc>(n)));
  return launch_device_reduce(in, n, out, op, init, workspace, stream);
}
}  // namespace detail

// out[0] = op(init, in[0] op in[1] op ... op in[n-1]), accumulated in Acc.
// Types: T in {float, double, __half, __nv_bfloat16, int32_t, int64_t} (half and bf16
// are converted to Acc, normally float); Acc any of those. Max and Min propagate NaN.
// n == 0 writes init. `in` must be aligned to sizeof(T); any element offset is fine.
// workspace: device memory of at least reduce_workspace_bytes<T, Acc>(n) bytes, 16-byte
// aligned, ZERO-FILLED BEFORE ITS FIRST USE (e.g. cudaMemsetAsync once after allocating);
// every call leaves it zeroed again, so it can be reused by later calls (and graph
// replays) on the same stream. Calls that run concurrently need separate workspaces.
// out must not overlap in or the workspace. Asynchronous; capturable in a CUDA graph.
// Returns cudaErrorInvalidValue, before any launch and without writing, for n < 0, an
// unknown op, a null in/out/workspace where needed, or a too-small workspace.
template <typename T, typename Acc>
[[nodiscard]] cudaError_t reduce(const T* in, int64_t n, Acc* out, ReduceOp op, Acc init,
                                 void* workspace, size_t workspace_bytes,
                                 cudaStream_t stream = nullptr) {
  switch (op) {
    case ReduceOp::kSum:
      return detail::checked_device_reduce(in, n, out, Sum{}, init, workspace, workspace_bytes,
                                           stream);
    case ReduceOp::kMax:
      return detail::checked_device_reduce(in, n, out, Max{}, init, workspace, workspace_bytes,
                                           stream);
    case ReduceOp::kMin:
      return detail::checked_device_reduce(in, n, out, Min{}, init, workspace, workspace_bytes,
                                           stream);
  }
  return cudaErrorInvalidValue;
}

// out[0] = init + sum of in[0..n). Same contract as reduce().
template <typename T, typename Acc>
[[nodiscard]] cudaError_t sum(const T* in, int64_t n, Acc* out, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream = nullptr,
                              Acc init = Acc(0)) {
  return detail::checked_device_reduce(in, n, out, Sum{}, init, workspace, workspace_bytes, stream);
}

// out[0] = max(init, in[0..n)); NaN wins. init defaults to -inf (lowest for integers).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t max(const T* in, int64_t n, Acc* out, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream = nullptr,
                              Acc init = detail::reduce_lowest<Acc>()) {
  return detail::checked_device_reduce(in, n, out, Max{}, init, workspace, workspace_bytes, stream);
}

// out[0] = min(init, in[0..n)); NaN wins. init defaults to +inf (max for integers).
template <typename T, typename Acc>
[[nodiscard]] cudaError_t min(const T* in, int64_t n, Acc* out, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream = nullptr,
                              Acc init = detail::reduce_highest<Acc>()) {
  return detail::checked_device_reduce(in, n, out, Min{}, init, workspace, workspace_bytes, stream);
}

}  // namespace kernelkit
