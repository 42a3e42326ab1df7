// SPDX-License-Identifier: Apache-2.0
/// @file
/// The elementwise engine: out[i] = f(a[i], b[i], ...) for i in [0, n), at the copy's speed.
///
/// A functor F is any copyable object with a __device__ call operator taking one element of
/// each input (in its storage type: float, __half, ...); its result is converted to the
/// output type with kernelkit::convert (round to nearest even, overflow to +-inf). F may
/// also define
///   __device__ void Apply2(R* out, const A* a, const B* b, ...) const
/// writing two consecutive results from two consecutive elements of each input (paired
/// __half2 / __nv_bfloat162 math); the engine uses it whenever the pack holds an even number
/// of elements. The *_with_factory forms take a factory instead: `factory()` is called on
/// the device, once per thread, and returns the functor (for functors that hold device
/// state or are cheaper to build on the device).
/// F may set `static constexpr int kPacksPerThread` (1, 2 or 4): how many 16-byte packs of
/// each input a thread loads before computing at large n (default 1; 2 with three inputs;
/// costly functors such as gelu ask for 4 so that loads stay in flight behind their math),
/// and `static constexpr bool kStageInputs = true`: with several packs per thread the inputs
/// of a tile are then copied into shared memory with cp.async first (ptxas cannot sink those
/// copies behind the math of the previous pack, as it does with plain loads).
///
/// Memory access (plan_elementwise, elementwise_plan.cuh): 16-byte packs when every pointer
/// sits at the same offset within a pack, after a scalar head that brings them to a pack
/// boundary; pointers at different offsets take one element per access. The head and the
/// tail (n - head not a multiple of the pack) are done in the same launch. 64-bit indices
/// where 32-bit ones would overflow, so any n >= 0 works.
///
/// Aliasing: out may be exactly one of the inputs (in place: same address and same element
/// size); any other overlap of out with an input -> cudaErrorInvalidValue. Inputs may alias
/// each other freely.
/// Errors: n < 0, a null pointer with n > 0, a pointer not aligned to its element type, or a
/// partial overlap -> cudaErrorInvalidValue, nothing launched. n == 0 does nothing and
/// returns cudaSuccess. Asynchronous on `stream`; no allocation, no synchronization
/// (capturable in a CUDA graph).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/elementwise/detail/elementwise_kernels.cuh"
#include "kernelkit/elementwise/elementwise_plan.cuh"

namespace kernelkit {

namespace detail {

// The functor a factory builds.
template <typename Factory>
using ew_functor_t = std::decay_t<decltype(std::declval<const Factory&>()())>;

template <typename F, typename = void>
struct EwHasPacksPerThread : std::false_type {};
template <typename F>
struct EwHasPacksPerThread<F, std::void_t<decltype(F::kPacksPerThread)>> : std::true_type {};
template <typename F, typename = void>
struct EwHasStageInputs : std::false_type {};
template <typename F>
struct EwHasStageInputs<F, std::void_t<decltype(F::kStageInputs)>> : std::true_type {};

}  // namespace detail

/// What functor F asks of the plan: its kPacksPerThread and kStageInputs, where it has them.
template <typename F>
constexpr EwFunctorTraits ew_functor_traits() {
  EwFunctorTraits t;
  if constexpr (detail::EwHasPacksPerThread<F>::value) t.packs_per_thread = F::kPacksPerThread;
  if constexpr (detail::EwHasStageInputs<F>::value) t.stage_inputs = F::kStageInputs;
  return t;
}

/// The argument checks of every elementwise call (shared with the ladder): n >= 0 and n
/// elements of every operand addressable; for n > 0 no null pointer, every pointer aligned
/// to its element type, and out either disjoint from each input or exactly it (same
/// address, same element size).
template <typename R, typename... Args>
bool elementwise_args_ok(int64_t n, const R* out, const Args*... in) {
  if (n < 0) return false;
  if (n == 0) return true;
  constexpr int64_t kWidest = std::max({int64_t{sizeof(R)}, int64_t{sizeof(Args)}...});
  if (n > std::numeric_limits<int64_t>::max() / kWidest) return false;
  if (out == nullptr || ((in == nullptr) || ...)) return false;
  if (!is_element_aligned(out) || !(is_element_aligned(in) && ...)) return false;
  const int64_t out_bytes = n * int64_t{sizeof(R)};
  return !(partial_overlap(out, out_bytes, in, n * int64_t{sizeof(Args)}) || ...);
}

/// Launches plan p (from plan_elementwise for these operands and Factory's functor): the one
/// place the plan's pack, packs per thread, staging and index width become template
/// arguments, those of its entry of kEwConfigs (ew_config). Only the entries these operand
/// types and this functor allow are instantiated (ew_configs_of); any other plan answers
/// cudaErrorInvalidValue.
template <typename Factory, typename R, typename... Args>
cudaError_t launch_elementwise(const EwPlan& p, Factory factory, cudaStream_t stream, int64_t n,
                               R* out, const Args*... in) {
  // The operands' element sizes and the functor's traits, as the plan saw them.
  static constexpr EwOperands kOps{
      1 + int{sizeof...(Args)},
      {EwOperand{int{sizeof(R)}, Alignment()}, EwOperand{int{sizeof(Args)}, Alignment()}...}};
  static constexpr EwFunctorTraits kTraits = ew_functor_traits<detail::ew_functor_t<Factory>>();
  static constexpr ConfigRange kEntries = ew_configs_of(kTraits, kOps);
  static_assert(kEntries.begin < kEntries.end,
                "the entries of kEwConfigs a call can take are contiguous (and there are some)");
  constexpr int kMaxPack = ew_max_pack(kOps);
  return dispatch_table<kEwConfigs, kEntries.begin, kEntries.end>(ew_config(p), [&](auto i) {
    constexpr EwConfig c = kEwConfigs[decltype(i)::value];
    constexpr int kPack = c.packed ? kMaxPack : 1;
    constexpr int kUnroll = c.packed ? c.packs_per_thread : ew_unit_packs_per_thread(kMaxPack);
    using Index = std::conditional_t<c.index64, int64_t, int32_t>;
    return launch(detail::elementwise_kernel<kPack, kUnroll, c.staged, Index, Factory, R, Args...>,
                  p.shape, stream, factory, static_cast<Index>(n), static_cast<Index>(p.head), out,
                  in...);
  });
}

/// out[i] = f(a[i]) for i in [0, n), with the functor built on the device by factory() (a
/// __device__ call operator of a copyable Factory), once per thread. Any storage types the
/// functor and convert<R> accept (float, double, __half, __nv_bfloat16, integers). out == a
/// allowed (same element size).
template <typename Factory, typename R, typename A>
[[nodiscard]] cudaError_t unary_with_factory(Factory factory, int64_t n, R* out, const A* a,
                                             cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(elementwise_args_ok(n, out, a));
  if (n == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const EwPlan plan = plan_elementwise(n, ew_operands(out, a),
                                       ew_functor_traits<detail::ew_functor_t<Factory>>(), d);
  return launch_elementwise(plan, factory, stream, n, out, a);
}

/// out[i] = f(a[i], b[i]) for i in [0, n), functor from factory(). out may be a or b.
template <typename Factory, typename R, typename A, typename B>
[[nodiscard]] cudaError_t binary_with_factory(Factory factory, int64_t n, R* out, const A* a,
                                              const B* b, cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(elementwise_args_ok(n, out, a, b));
  if (n == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const EwPlan plan = plan_elementwise(n, ew_operands(out, a, b),
                                       ew_functor_traits<detail::ew_functor_t<Factory>>(), d);
  return launch_elementwise(plan, factory, stream, n, out, a, b);
}

/// out[i] = f(a[i], b[i], c[i]) for i in [0, n), functor from factory(). out may be a, b or c.
template <typename Factory, typename R, typename A, typename B, typename C>
[[nodiscard]] cudaError_t ternary_with_factory(Factory factory, int64_t n, R* out, const A* a,
                                               const B* b, const C* c,
                                               cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(elementwise_args_ok(n, out, a, b, c));
  if (n == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const EwPlan plan = plan_elementwise(n, ew_operands(out, a, b, c),
                                       ew_functor_traits<detail::ew_functor_t<Factory>>(), d);
  return launch_elementwise(plan, factory, stream, n, out, a, b, c);
}

/// out[i] = f(a[i]) for i in [0, n). Types, aliasing and errors as unary_with_factory.
/// @tparam F the functor (see the file comment); f is copied to the device
/// @param f the functor
/// @param n elements (>= 0; 0 does nothing)
/// @param out device pointer to n elements of R, aligned to R
/// @param a device pointer to n elements of its type, aligned to it
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when elementwise_args_ok fails (negative n, n times the widest
/// element overflowing int64, a null or misaligned pointer, out partly overlapping an input);
/// otherwise the error of reading the device's facts or of the launch.
template <typename F, typename R, typename A>
[[nodiscard]] cudaError_t unary(F f, int64_t n, R* out, const A* a, cudaStream_t stream = nullptr) {
  return unary_with_factory(detail::EwFunctorFactory<F>{f}, n, out, a, stream);
}

/// out[i] = f(a[i], b[i]) for i in [0, n). out may be a or b.
/// @tparam F the functor (see the file comment); f is copied to the device
/// @param f the functor
/// @param n elements (>= 0; 0 does nothing)
/// @param out device pointer to n elements of R, aligned to R
/// @param a device pointer to n elements of its type, aligned to it
/// @param b device pointer to n elements of its type, aligned to it
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when elementwise_args_ok fails (negative n, n times the widest
/// element overflowing int64, a null or misaligned pointer, out partly overlapping an input);
/// otherwise the error of reading the device's facts or of the launch.
template <typename F, typename R, typename A, typename B>
[[nodiscard]] cudaError_t binary(F f, int64_t n, R* out, const A* a, const B* b,
                                 cudaStream_t stream = nullptr) {
  return binary_with_factory(detail::EwFunctorFactory<F>{f}, n, out, a, b, stream);
}

/// out[i] = f(a[i], b[i], c[i]) for i in [0, n). out may be a, b or c.
/// @tparam F the functor (see the file comment); f is copied to the device
/// @param f the functor
/// @param n elements (>= 0; 0 does nothing)
/// @param out device pointer to n elements of R, aligned to R
/// @param a device pointer to n elements of its type, aligned to it
/// @param b device pointer to n elements of its type, aligned to it
/// @param c device pointer to n elements of its type, aligned to it
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when elementwise_args_ok fails (negative n, n times the widest
/// element overflowing int64, a null or misaligned pointer, out partly overlapping an input);
/// otherwise the error of reading the device's facts or of the launch.
template <typename F, typename R, typename A, typename B, typename C>
[[nodiscard]] cudaError_t ternary(F f, int64_t n, R* out, const A* a, const B* b, const C* c,
                                  cudaStream_t stream = nullptr) {
  return ternary_with_factory(detail::EwFunctorFactory<F>{f}, n, out, a, b, c, stream);
}

}  // namespace kernelkit
