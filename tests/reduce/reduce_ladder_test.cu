// SPDX-License-Identifier: Apache-2.0
// Every step of the reduction ladder and kLibrary (ladder/reduce/registry.cuh) with the
// library's cases: f32 against a float64 reference, i64 exactly, any n, misaligned input, a
// workspace of workspace_bytes<T>(n) full of 0xFF bytes (no step may need it zeroed).
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "ladder/reduce/registry.cuh"

namespace {

namespace ladder = kernelkit::ladder::reduce;
using kktest::DeviceBuffer;
using kktest::Tolerance;

// 2^24 runs in its own test (Size2To24) so sanitizer runs can leave it out.
const std::vector<int64_t> kSizes = {0, 1, 31, 32, 33, 1023, 1025, 1000003};

// Every step, then the library.
template <typename T>
std::vector<ladder::Step<T>> all_steps() {
  std::vector<ladder::Step<T>> steps(std::begin(ladder::kSteps<T>), std::end(ladder::kSteps<T>));
  steps.push_back(ladder::kLibrary<T>);
  return steps;
}

template <typename T>
void check_entry(const ladder::Step<T>& e, int64_t n, size_t offset) {
  const uint64_t seed = 4242 + n;
  const auto h = std::is_integral_v<T> ? kktest::random_vector<T>(n + 1, seed, -1e12, 1e12)
                                       : kktest::random_vector<T>(n + 1, seed, -1, 1);
  auto d_in = kktest::to_device(h);
  DeviceBuffer<unsigned char> ws(std::max<size_t>(ladder::workspace_bytes<T>(n), 1));
  ws.poison();
  ASSERT_TRUE(e.supports(n)) << e.name;
  DeviceBuffer<T> out(1);
  out.poison();
  const std::string label = std::string(e.name) + " " + kktest::type_name<T>() +
                            " n=" + std::to_string(n) + " offset=" + std::to_string(offset) +
                            " seed=" + std::to_string(seed);
  ASSERT_EQ(e.fn(d_in.get() + offset, n, out.get(), ws.get(), ws.size(), nullptr), cudaSuccess)
      << label;
  CUDA_CHECK(cudaDeviceSynchronize());
  if constexpr (std::is_integral_v<T>) {
    int64_t ref = 0;  // exact (a float64 sum of these would round past 2^53)
    for (int64_t i = 0; i < n; ++i)
      ref += h[offset + i];
    EXPECT_EQ(static_cast<int64_t>(out.download()[0]), ref) << label;
  } else {
    double ref = 0, abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      ref += kktest::to_double(h[offset + i]);
      abs_sum += std::fabs(kktest::to_double(h[offset + i]));
    }
    // float sums: bounded relative to sum |x| (v0 adds 2^24 values into one accumulator)
    EXPECT_TRUE(kktest::check_near(out.download(), {ref}, Tolerance::Rel(0, 2e-5 * abs_sum + 1e-30),
                                   label));
  }
}

template <typename T>
void sweep_ladder(const std::vector<int64_t>& sizes = kSizes) {
  size_t step = 0;
  for (const auto& e : all_steps<T>()) {
    for (int64_t n : sizes)
      for (size_t offset : {0, 1})
        // sanitizer: 1000003 (98% of the work) at one offset, turning with the step
        if (!kktest::sanitizer_run() || n < 100000 || offset == step % 2)
          check_entry<T>(e, n, offset);
    ++step;
  }
}

class ReduceLadderTest : public kktest::GpuTest {};

TEST_F(ReduceLadderTest, F32) {
  sweep_ladder<float>();
}
TEST_F(ReduceLadderTest, I64) {
  sweep_ladder<int64_t>();
}

TEST_F(ReduceLadderTest, Size2To24) {
  if (kktest::sanitizer_run()) {
    // sanitizer: the library only (its plan depends on n); each step's kernels and passes
    // (two or three, ping-ponging the workspace) run at 1000003 in F32 and I64
    for (size_t offset : {0, 1}) {
      check_entry<float>(ladder::kLibrary<float>, int64_t{1} << 24, offset);
      check_entry<int64_t>(ladder::kLibrary<int64_t>, int64_t{1} << 24, offset);
    }
    return;
  }
  sweep_ladder<float>({int64_t{1} << 24});
  sweep_ladder<int64_t>({int64_t{1} << 24});
}

// Bad arguments: invalid value, nothing written.
TEST_F(ReduceLadderTest, BadArguments) {
  DeviceBuffer<float> in(1000), out(1);
  DeviceBuffer<unsigned char> ws(ladder::workspace_bytes<float>(1000));
  for (const auto& e : all_steps<float>()) {
    out.poison();
    EXPECT_EQ(e.fn(in.get(), -1, out.get(), ws.get(), ws.size(), nullptr), cudaErrorInvalidValue)
        << e.name;
    EXPECT_EQ(e.fn(nullptr, 1000, out.get(), ws.get(), ws.size(), nullptr), cudaErrorInvalidValue)
        << e.name;
    EXPECT_EQ(e.fn(in.get(), 1000, nullptr, ws.get(), ws.size(), nullptr), cudaErrorInvalidValue)
        << e.name;
    CUDA_CHECK(cudaDeviceSynchronize());
    const float got = out.download()[0];
    EXPECT_TRUE(std::isnan(got)) << e.name << " wrote the output";
  }
}

TEST(ReduceLadderHost, NamesInOrder) {
  const char* expected[] = {
      "v0_atomic",          "v1_smem_halving",       "v2_sequential_addressing",
      "v3_add_during_load", "v4_unrolled_last_warp", "v5_warp_shuffle",
      "v6_shuffle_float4"};
  ASSERT_EQ(std::size(ladder::kSteps<float>), 7u);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_STREQ(ladder::kSteps<int64_t>[i].name, expected[i]);
    EXPECT_STREQ(ladder::kSteps<float>[i].name, expected[i]);
  }
  EXPECT_STREQ(ladder::kLibrary<float>.name, "kernelkit");
  // the library is never a step
  for (const auto& e : ladder::kSteps<float>)
    EXPECT_NE(e.fn, ladder::kLibrary<float>.fn) << e.name;
  // the workspace serves every step and the library
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{1} << 24, (int64_t{1} << 31) + 9}) {
    EXPECT_GE(ladder::workspace_bytes<float>(n),
              (kernelkit::reduce_workspace_bytes<float, float>(n)));
    EXPECT_GE(ladder::workspace_bytes<float>(n), ladder::ladder_workspace_bytes<float>(n));
  }
}

}  // namespace
