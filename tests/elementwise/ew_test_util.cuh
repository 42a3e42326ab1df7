// SPDX-License-Identifier: Apache-2.0
// The elementwise test driver: runs one op over the size sweep, with every pointer one
// element past a 16-byte boundary (the scalar head, then packs), with each pointer in turn
// misaligned by one element (one element per access), in place, with NaN / +-inf / extreme
// inputs, and compares every element against a float64 reference rounded to the output
// type; bad arguments (sizes, nulls, misaligned elements, partial overlap) write nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/elementwise/elementwise.cuh"

namespace ewtest {

using kktest::DeviceBuffer;
using kktest::Tolerance;

inline constexpr int64_t kSizes[] = {0, 1, 3, 7, 8, 9, 31, 33, 1000003};

// The largest finite value of T, as a double.
template <typename T>
double max_finite() {
  if constexpr (std::is_same_v<T, __half>) return 65504.0;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return 0x1.FEp127;
  if constexpr (std::is_same_v<T, float>) return 0x1.FFFFFEp127;
  return 0x1.FFFFFFFFFFFFFp1023;
}

// Special inputs written over the random ones: NaN, +inf, -inf, -0, +-largest finite.
template <typename T>
std::vector<T> specials() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> d = {std::nan(""), inf, -inf, -0.0, max_finite<T>(), -max_finite<T>()};
  std::vector<T> v;
  for (double x : d)
    v.push_back(kernelkit::convert<T>(x));
  return v;
}

struct Options {
  double lo = -1.0, hi = 1.0;  // range of the random inputs
  bool special_values = true;  // overwrite some inputs with specials()
};

// Reads the bytes of a device range back.
template <typename T>
std::vector<T> download(const T* p, size_t n) {
  std::vector<T> h(n);
  if (n) CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// ref applied to element i of every input, as doubles.
template <typename Ref, typename Tuple, size_t... I>
double call_ref(Ref& ref, const Tuple& h, size_t i, std::index_sequence<I...>) {
  return ref(kktest::to_double(std::get<I>(h)[i])...);
}

// Pointer placement of one run: every pointer 256-byte aligned (kAligned), every pointer one
// element past it (kAllShifted: same offset within a pack, the head path), or the output
// (0) or input k - 1 (k >= 1) alone one element past it (pointers at different offsets).
inline constexpr int kAligned = -1;
inline constexpr int kAllShifted = -2;

// mis: the placement above. in_place: out is the first input (R must be that input's type).
// shift: elements a shifted pointer sits past its 256-byte aligned buffer start.
template <typename R, typename... Args, typename Launch, typename Ref, size_t... I>
void run_one_impl(const std::string& what, Launch& launch, Ref& ref, Tolerance tol,
                  const Options& opt, int64_t n, int mis, bool in_place, int shift,
                  std::index_sequence<I...>) {
  const uint64_t seed = std::hash<std::string>{}(what) ^ (uint64_t(n) * 1315423911u) ^
                        (uint64_t(mis + 2) << 56) ^ (uint64_t(shift) << 48) ^
                        (in_place ? 0x5555 : 0);
  const std::string label = what + " n=" + std::to_string(n) +
                            (mis == kAligned      ? std::string(" aligned")
                             : mis == kAllShifted ? " all shifted by " + std::to_string(shift)
                                                  : " shifted operand " + std::to_string(mis)) +
                            (in_place ? " in-place" : "") + " seed=" + std::to_string(seed);
  std::tuple<std::vector<Args>...> h{
      kktest::random_vector<Args>(size_t(n), seed + 17 * I, opt.lo, opt.hi)...};
  if (opt.special_values && n >= 8) {
    // Input k gets the specials at positions shifted by k, so specials meet each other
    // and ordinary values.
    (
        [&] {
          const auto sp = specials<Args>();
          for (size_t s = 0; s < sp.size(); ++s)
            std::get<I>(h)[(s * 5 + I * 2) % size_t(n)] = sp[s];
        }(),
        ...);
  }
  // Device inputs, `shift` spare elements in front for the shifted cases.
  std::tuple<DeviceBuffer<Args>...> d{DeviceBuffer<Args>(size_t(n) + size_t(shift))...};
  std::tuple<Args*...> p{
      (std::get<I>(d).get() + (mis == int(I) + 1 || mis == kAllShifted ? shift : 0))...};
  (
      [&] {
        if (n)
          CUDA_CHECK(cudaMemcpy(std::get<I>(p), std::get<I>(h).data(), size_t(n) * sizeof(Args),
                                cudaMemcpyHostToDevice));
      }(),
      ...);
  // Output with 16 guard bytes in front (keeps the aligned case aligned) and at least one
  // guard element behind, all poisoned.
  constexpr size_t kGuard = sizeof(R) >= 16 ? 1 : 16 / sizeof(R);
  DeviceBuffer<R> out_buf(size_t(n) + kGuard + 1 + size_t(shift));
  out_buf.poison();
  R* out = out_buf.get() + kGuard + (mis == 0 || mis == kAllShifted ? shift : 0);
  if (in_place) {
    if constexpr (sizeof...(Args) > 0 &&
                  std::is_same_v<R, std::tuple_element_t<0, std::tuple<Args...>>>) {
      out = std::get<0>(p);
    }
  }
  ASSERT_EQ(launch(n, out, static_cast<const Args*>(std::get<I>(p))...), cudaSuccess) << label;
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaGetLastError());

  std::vector<double> r(static_cast<size_t>(n));
  for (size_t i = 0; i < size_t(n); ++i)
    r[i] =
        kktest::to_double(kernelkit::convert<R>(call_ref(ref, h, i, std::index_sequence<I...>{})));
  EXPECT_TRUE(kktest::check_near(download(out, size_t(n)), r, tol, label));
  if (!in_place) {
    // Nothing written around the output range.
    const auto all = out_buf.download();
    const size_t off = size_t(out - out_buf.get());
    std::vector<unsigned char> ff(sizeof(R), 0xFF);
    for (size_t i = 0; i < all.size(); ++i) {
      if (i >= off && i < off + size_t(n)) continue;
      EXPECT_EQ(std::memcmp(&all[i], ff.data(), sizeof(R)), 0)
          << label << ": element " << i << " of the guarded buffer written";
    }
  }
}

// One run: n elements, pointers placed as `mis` says, in place or not.
template <typename R, typename... Args, typename Launch, typename Ref>
void run_one(const std::string& what, Launch launch, Ref ref, Tolerance tol, Options opt, int64_t n,
             int mis, bool in_place = false, int shift = 1) {
  run_one_impl<R, Args...>(what, launch, ref, tol, opt, n, mis, in_place, shift,
                           std::index_sequence_for<Args...>{});
}

// The full sweep for one op: every size; every pointer aligned, every pointer shifted by one
// element, each pointer alone shifted in turn; in place, aligned and shifted (when the output
// type is the first input's); specials. launch(n, out, in...) -> cudaError_t;
// ref(double...) -> double (rounded to R before the comparison).
template <typename R, typename... Args, typename Launch, typename Ref>
void run_op(const std::string& what, Launch launch, Ref ref, Tolerance tol, Options opt = {},
            const std::vector<int64_t>& sizes = {std::begin(kSizes), std::end(kSizes)}) {
  constexpr int kArity = int(sizeof...(Args));
  for (const int64_t size : sizes) {
    // sanitizer: sizes past 65539 cut to it (the same kernels over many blocks, with a head and
    // a tail; 1000003 was ~99% of each functor test's racecheck time)
    const int64_t n = kktest::sanitizer_run() ? std::min<int64_t>(size, 65539) : size;
    for (int mis = kAllShifted; mis <= kArity; ++mis)
      run_one<R, Args...>(what, launch, ref, tol, opt, n, mis);
    if constexpr (std::is_same_v<R, std::tuple_element_t<0, std::tuple<Args...>>>) {
      run_one<R, Args...>(what, launch, ref, tol, opt, n, kAligned, true);
      run_one<R, Args...>(what, launch, ref, tol, opt, n, kAllShifted, true);
    }
  }
}

// Launches f on n elements through launch_elementwise with the plan made for the current
// device with its SM count replaced by sm_count (1 forces the functor's most packs per
// thread and 256-thread blocks; a huge count one pack per thread and 64-thread blocks): any
// plan is correct on any device, so every path runs here. The plan goes to *seen.
template <typename F, typename R, typename... Args>
cudaError_t launch_with_sm_count(int sm_count, std::vector<kernelkit::EwPlan>* seen, F f, int64_t n,
                                 R* out, const Args*... in) {
  if (!kernelkit::elementwise_args_ok(n, out, in...)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  kernelkit::DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(kernelkit::current_device_info(&d));
  d.sm_count = sm_count;
  const kernelkit::EwPlan plan = kernelkit::plan_elementwise(n, kernelkit::ew_operands(out, in...),
                                                             kernelkit::ew_functor_traits<F>(), d);
  if (seen) seen->push_back(plan);
  return kernelkit::launch_elementwise(plan, kernelkit::detail::EwFunctorFactory<F>{f}, nullptr, n,
                                       out, in...);
}

// Bad arguments: n < 0, each null pointer with n > 0, each pointer not aligned to its
// element type, an output that partially overlaps an input (shifted by one output element,
// or at the same address with another element size) answer cudaErrorInvalidValue and write
// nothing; n == 0 with null pointers is a no-op that succeeds.
template <typename R, typename... Args, typename Launch, size_t... I>
void check_bad_args_impl(const std::string& what, Launch& launch, std::index_sequence<I...>) {
  constexpr int64_t n = 64;
  std::tuple<DeviceBuffer<Args>...> d{DeviceBuffer<Args>(n + 16)...};
  (std::get<I>(d).poison(), ...);
  const auto inputs_before = std::make_tuple(std::get<I>(d).download()...);
  DeviceBuffer<R> out(n + 16);
  out.poison();
  const auto before = out.download();
  const auto input = [&](auto k) {
    return static_cast<const std::tuple_element_t<decltype(k)::value, std::tuple<Args...>>*>(
        std::get<decltype(k)::value>(d).get());
  };
  EXPECT_EQ(launch(int64_t{-1}, out.get(), static_cast<const Args*>(std::get<I>(d).get())...),
            cudaErrorInvalidValue)
      << what << " n<0";
  EXPECT_EQ(launch(n, static_cast<R*>(nullptr), static_cast<const Args*>(std::get<I>(d).get())...),
            cudaErrorInvalidValue)
      << what << " null out";
  EXPECT_EQ(launch(int64_t{0}, static_cast<R*>(nullptr), static_cast<const Args*>(nullptr)...),
            cudaSuccess)
      << what << " n=0";
  // Input k null, the others valid.
  auto null_input = [&](auto k) {
    EXPECT_EQ(launch(n, out.get(),
                     (I == decltype(k)::value ? static_cast<const Args*>(nullptr)
                                              : static_cast<const Args*>(std::get<I>(d).get()))...),
              cudaErrorInvalidValue)
        << what << " null input " << decltype(k)::value;
  };
  (null_input(std::integral_constant<size_t, I>{}), ...);
  // The output, then input k, one byte past an element boundary.
  if constexpr (alignof(R) > 1) {
    auto* mis = reinterpret_cast<R*>(reinterpret_cast<char*>(out.get()) + 1);
    EXPECT_EQ(launch(n, mis, static_cast<const Args*>(std::get<I>(d).get())...),
              cudaErrorInvalidValue)
        << what << " output not aligned to its element";
  }
  auto misaligned_input = [&](auto k) {
    using T = std::tuple_element_t<decltype(k)::value, std::tuple<Args...>>;
    if constexpr (alignof(T) > 1) {
      const auto* mis = reinterpret_cast<const T*>(reinterpret_cast<const char*>(input(k)) + 1);
      EXPECT_EQ(
          launch(n, out.get(),
                 (I == decltype(k)::value ? reinterpret_cast<const Args*>(mis)
                                          : static_cast<const Args*>(std::get<I>(d).get()))...),
          cudaErrorInvalidValue)
          << what << " input " << decltype(k)::value << " not aligned to its element";
    }
  };
  (misaligned_input(std::integral_constant<size_t, I>{}), ...);
  // The output inside input k's range, one output element past its start; and, where the
  // element sizes differ, at its very start.
  auto overlapping = [&](auto k) {
    using T = std::tuple_element_t<decltype(k)::value, std::tuple<Args...>>;
    R* shifted = reinterpret_cast<R*>(std::get<decltype(k)::value>(d).get()) + 1;
    EXPECT_EQ(launch(n, shifted, static_cast<const Args*>(std::get<I>(d).get())...),
              cudaErrorInvalidValue)
        << what << " output overlaps input " << decltype(k)::value << " by all but one element";
    if constexpr (sizeof(T) != sizeof(R)) {
      R* same = reinterpret_cast<R*>(std::get<decltype(k)::value>(d).get());
      EXPECT_EQ(launch(n, same, static_cast<const Args*>(std::get<I>(d).get())...),
                cudaErrorInvalidValue)
          << what << " output at input " << decltype(k)::value << " with another element size";
    }
  };
  (overlapping(std::integral_constant<size_t, I>{}), ...);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(out.download(), before)) << what << ": output written";
  (
      [&] {
        EXPECT_TRUE(kktest::same_bits(std::get<I>(d).download(), std::get<I>(inputs_before)))
            << what << ": input " << I << " written";
      }(),
      ...);
}

template <typename R, typename... Args, typename Launch>
void check_bad_args(const std::string& what, Launch launch) {
  check_bad_args_impl<R, Args...>(what, launch, std::index_sequence_for<Args...>{});
}

}  // namespace ewtest
