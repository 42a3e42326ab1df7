// SPDX-License-Identifier: Apache-2.0
// Shared by the transpose tests: the implementations under test, random inputs, and the one
// check every case goes through (every element against a float64 reference and its bits
// against a host transpose; nothing written before or past the output).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/transpose/transpose.cuh"
#include "ladder/transpose/registry.cuh"

namespace transpose_test {

using kktest::DeviceBuffer;
using kktest::Tolerance;

template <typename T>
using Fn = kernelkit::ladder::transpose::Fn<T>;
template <typename T>
using Impls = std::vector<std::pair<std::string, Fn<T>>>;

template <typename T>
cudaError_t library_fn(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t s) {
  return kernelkit::transpose(in, out, rows, cols, s);
}

template <typename T>
Impls<T> library_only() {
  return {{"kernelkit", &library_fn<T>}};
}

// Random values (integers of the type's range for integers), or random bits (NaNs with
// payloads, infinities, subnormals: transpose must move them unchanged).
template <typename T>
std::vector<T> random_input(size_t n, uint64_t seed, bool random_bits = false) {
  if (random_bits) {
    std::mt19937_64 gen(seed);
    std::vector<T> v(n);
    for (auto& x : v) {
      const uint64_t b = gen();
      std::memcpy(&x, &b, sizeof(T));
    }
    return v;
  }
  if constexpr (std::is_integral_v<T>) {
    const double lim = sizeof(T) == 1 ? 128.0 : 1e6;
    return kktest::random_vector<T>(n, seed, -lim, lim);
  } else {
    return kktest::random_vector<T>(n, seed, -100.0, 100.0);
  }
}

// Runs every implementation on one rows x cols input placed in_off elements into its buffer,
// writing out_off elements into a poisoned output buffer; checks every element against the
// float64 reference (exact), the bits against a host transpose, and that the out_off leading
// elements and the guard element past the matrix were not written.
template <typename T>
void check_transpose(const Impls<T>& impls, int64_t rows, int64_t cols, int64_t in_off = 0,
                     int64_t out_off = 0, bool random_bits = false) {
  const size_t n = static_cast<size_t>(rows * cols);
  const uint64_t seed = 1000003ull * rows + 7919ull * cols + sizeof(T) + 31 * in_off + out_off;
  const std::string shape = std::string(kktest::type_name<T>()) + " " + std::to_string(rows) + "x" +
                            std::to_string(cols) + " in_off " + std::to_string(in_off) +
                            " out_off " + std::to_string(out_off) +
                            (random_bits ? " random bits" : "") + " seed " + std::to_string(seed);
  const std::vector<T> h_in = random_input<T>(n + in_off, seed, random_bits);
  auto d_in = kktest::to_device(h_in);
  std::vector<T> want(n);
  std::vector<double> ref(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const T x = h_in[in_off + r * cols + c];
      want[c * rows + r] = x;
      ref[c * rows + r] = kktest::to_double(x);
    }
  DeviceBuffer<T> d_out(n + out_off + 1);  // one guard element past the matrix
  for (const auto& [impl, fn] : impls) {
    const std::string label = impl + " " + shape;
    d_out.poison();
    const auto before = d_out.download();
    ASSERT_EQ(fn(d_in.get() + in_off, d_out.get() + out_off, rows, cols, nullptr), cudaSuccess)
        << label;
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto all = d_out.download();
    const std::vector<T> got(all.begin() + out_off, all.begin() + out_off + n);
    if (!random_bits) EXPECT_TRUE(kktest::check_near(got, ref, Tolerance::Exact(), label));
    EXPECT_TRUE(kktest::same_bits(got, want)) << label << ": bits differ";
    const std::vector<T> lead_got(all.begin(), all.begin() + out_off);
    const std::vector<T> lead_before(before.begin(), before.begin() + out_off);
    EXPECT_TRUE(kktest::same_bits(lead_got, lead_before)) << label << ": wrote before the output";
    EXPECT_TRUE(kktest::same_bits(std::vector<T>{all.back()}, std::vector<T>{before.back()}))
        << label << ": wrote past the output";
  }
}

// Small and medium shapes: degenerate ones, odd and prime sizes, multiples of 8 with full and
// partial tiles, a few rows / columns (thin paths), rows a multiple of 4 (tile path).
inline const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {1, 1},     {1, 257},   {257, 1},   {1000, 1},  {1, 1000},  {2, 1000},  {1000, 3},
    {31, 33},   {33, 31},   {32, 32},   {33, 33},   {64, 64},   {128, 128}, {256, 256},
    {136, 264}, {264, 136}, {96, 200},  {8, 1032},  {1032, 8},  {257, 129}, {1009, 1013},
    {36, 68},   {68, 36},   {130, 258}, {34, 66},   {4, 4},     {260, 132}, {7, 4099},
    {4099, 7},  {12, 1000}, {100, 300}, {300, 100}, {32, 1000}, {1000, 32}, {9, 9}};

// Bad arguments answer cudaErrorInvalidValue and write nothing; empty matrices are valid and
// write nothing (even with null pointers). Run for every implementation.
template <typename T>
void check_bad_arguments(const Impls<T>& impls) {
  constexpr int64_t kN = 64;
  auto d_in = kktest::to_device(random_input<T>(kN, 5));
  DeviceBuffer<T> d_out(kN);
  for (const auto& [name, fn] : impls) {
    d_out.poison();
    const auto before = d_out.download();
    T* in = d_in.get();
    T* out = d_out.get();
    const int64_t huge = int64_t{1} << 32;
    const int64_t big_bytes = INT64_MAX / static_cast<int64_t>(sizeof(T)) / 2 + 1;
    struct Case {
      const char* what;
      const T* in;
      T* out;
      int64_t rows, cols;
    };
    std::vector<Case> cases = {
        {"negative rows", in, out, -1, 8},
        {"negative cols", in, out, 8, -1},
        {"null in", nullptr, out, 8, 8},
        {"null out", in, nullptr, 8, 8},
        {"in == out", out, out, 8, 8},
        {"overlap (out = in + 1)", out, out + 1, 7, 8},
        {"overlap (in = out + 7)", out + 7, out, 7, 8},
        {"overlap, one row (copy path)", out, out + 3, 1, 8},
        {"overlap, two rows (thin path)", out, out + 5, 2, 8},
        {"rows * cols overflows", in, out, huge, huge},
        {"bytes overflow", in, out, big_bytes, 2},
    };
    if constexpr (sizeof(T) > 1) {
      // A pointer not aligned to its element: answered, not faulted (a misaligned access
      // would kill the context with a sticky error).
      const T* in_odd = reinterpret_cast<const T*>(reinterpret_cast<const char*>(in) + 1);
      T* out_odd = reinterpret_cast<T*>(reinterpret_cast<char*>(out) + 1);
      cases.push_back({"in misaligned by 1 byte", in_odd, out, 8, 4});
      cases.push_back({"out misaligned by 1 byte", in, out_odd, 4, 8});
      cases.push_back({"in misaligned, one row", in_odd, out, 1, 8});
      cases.push_back({"out misaligned, thin", in, out_odd, 3, 8});
    }
    for (const auto& c : cases) {
      EXPECT_EQ(fn(c.in, c.out, c.rows, c.cols, nullptr), cudaErrorInvalidValue)
          << name << " " << kktest::type_name<T>() << ": " << c.what;
    }
    EXPECT_EQ(fn(in, out, 0, 8, nullptr), cudaSuccess) << name;
    EXPECT_EQ(fn(in, out, 8, 0, nullptr), cudaSuccess) << name;
    EXPECT_EQ(fn(nullptr, nullptr, 0, 0, nullptr), cudaSuccess) << name;
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(d_out.download(), before)) << name << ": output was written";
  }
}

// Every implementation on each shape with pointers one element, 4 bytes and 8 bytes off
// 16-byte alignment (in, out and both).
template <typename T>
void check_misaligned(const Impls<T>& impls,
                      const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  constexpr int64_t kOff4 = sizeof(T) >= 4 ? 1 : 4 / sizeof(T);
  constexpr int64_t kOff8 = sizeof(T) >= 8 ? 1 : 8 / sizeof(T);
  // sanitizer: every 3rd case (one or two of a shape's five offset pairs, turning)
  int64_t index = 0;
  const auto check = [&](int64_t rows, int64_t cols, int64_t in_off, int64_t out_off) {
    if (kktest::sanitize_keep(index++, 3)) check_transpose<T>(impls, rows, cols, in_off, out_off);
  };
  for (const auto& [rows, cols] : shapes) {
    check(rows, cols, 1, 0);
    check(rows, cols, 0, 1);
    check(rows, cols, 1, 1);
    check(rows, cols, kOff4, kOff4);
    check(rows, cols, kOff8, 0);
  }
}

}  // namespace transpose_test
