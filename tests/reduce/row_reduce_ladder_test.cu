// SPDX-License-Identifier: Apache-2.0
// Every step of the row-reduction ladder and kLibrary (ladder/row_reduce/registry.cuh) with
// the library's row_sum cases: f32 through the registry, and the same steps instantiated
// for int64_t; cols in {0, 1, 2, 3, 31, 32, 33, 127, 1024, 1025, 4097, 2^20}, rows in {1, 7,
// 1000}, aligned and offset input, bad arguments.
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "ladder/row_reduce/registry.cuh"

namespace {

using kktest::check_near;
using kktest::DeviceBuffer;
using kktest::Tolerance;

template <typename T>
std::vector<double> row_sums(const std::vector<T>& h, int64_t rows, int64_t cols) {
  std::vector<double> ref(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ref[r] += kktest::to_double(h[r * cols + c]);
  return ref;
}

namespace ladder = kernelkit::ladder::row_reduce;

// A step of element type T: the registry's for float, the same templates for int64_t.
template <typename T>
struct Entry {
  const char* name;
  cudaError_t (*fn)(const T*, int64_t, int64_t, T*, cudaStream_t);
};

template <typename T>
std::vector<Entry<T>> all_steps() {
  if constexpr (std::is_same_v<T, float>) {
    std::vector<Entry<T>> steps;
    for (const auto& s : ladder::kSteps)
      steps.push_back({s.name, s.fn});
    steps.push_back({ladder::kLibrary.name, ladder::kLibrary.fn});
    return steps;
  } else {
    return {{"v0_warp_per_row", &ladder::v0_warp_per_row<T>},
            {"v1_block_per_row", &ladder::v1_block_per_row<T>},
            {"v2_warp_per_row_packed", &ladder::v2_warp_per_row_packed<T>},
            {"v3_block_per_row_packed", &ladder::v3_block_per_row_packed<T>},
            {"v4_cub_block_reduce", &ladder::v4_cub_block_reduce<T>},
            {"kernelkit", [](const T* in, int64_t rows, int64_t cols, T* out, cudaStream_t s) {
               return kernelkit::row_sum(in, rows, cols, out, s);
             }}};
  }
}

// Small-integer inputs: every summation order gives the exact sum, so the check is exact.
template <typename T>
void run_ladder_case(const Entry<T>& e, int64_t rows, int64_t cols, int offset, uint64_t seed) {
  const size_t n = static_cast<size_t>(rows * cols);
  auto h = kktest::small_int_vector<T>(n + offset, seed);
  auto d_in = kktest::to_device(h);
  h.erase(h.begin(), h.begin() + offset);
  DeviceBuffer<T> d_out(rows);
  d_out.poison();
  const T* in = n + offset > 0 ? d_in.get() + offset : nullptr;
  ASSERT_EQ(e.fn(in, rows, cols, d_out.get(), nullptr), cudaSuccess) << e.name;
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(check_near(d_out.download(), row_sums(h, rows, cols), Tolerance::Exact(),
                         std::string(e.name) + " " + kktest::type_name<T>() + " " +
                             std::to_string(rows) + "x" + std::to_string(cols) + " offset " +
                             std::to_string(offset) + " seed " + std::to_string(seed)));
}

template <typename T>
class RowLadder : public kktest::GpuTest {};

using LadderTypes = ::testing::Types<float, int64_t>;
TYPED_TEST_SUITE(RowLadder, LadderTypes);

TYPED_TEST(RowLadder, Sweep) {
  const std::vector<int64_t> cols_list = {0, 1, 2, 3, 31, 32, 33, 127, 1024, 1025, 4097};
  for (const auto& e : all_steps<TypeParam>()) {
    uint64_t seed = 1;
    // sanitizer: no 1000 x 4097 and no 7 x 2^20 (a step's kernel is the same at every shape,
    // and 1000 x 1025, 7 x 4097 and 1 x 2^20 still run; the library's paths run in
    // row_reduce_test.cu)
    const bool san = kktest::sanitizer_run();
    for (int64_t rows : {1, 7, 1000})
      for (int64_t cols : cols_list)
        for (int offset : {0, 1}) {
          ++seed;
          if (!san || rows * cols < 2000000)
            run_ladder_case<TypeParam>(e, rows, cols, offset, seed);
        }
    for (int64_t rows : {1, 7})
      for (int offset : {0, 1}) {
        ++seed;
        if (!san || rows == 1) run_ladder_case<TypeParam>(e, rows, int64_t{1} << 20, offset, seed);
      }
  }
}

TYPED_TEST(RowLadder, BadArguments) {
  DeviceBuffer<TypeParam> d_in(64);
  DeviceBuffer<TypeParam> d_out(8);
  d_out.poison();
  const auto before = d_out.download();
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  for (const auto& e : all_steps<TypeParam>()) {
    EXPECT_EQ(e.fn(d_in.get(), -1, 8, d_out.get(), nullptr), cudaErrorInvalidValue) << e.name;
    EXPECT_EQ(e.fn(d_in.get(), 8, -1, d_out.get(), nullptr), cudaErrorInvalidValue) << e.name;
    EXPECT_EQ(e.fn(nullptr, 8, 8, d_out.get(), nullptr), cudaErrorInvalidValue) << e.name;
    EXPECT_EQ(e.fn(d_in.get(), 8, 8, nullptr, nullptr), cudaErrorInvalidValue) << e.name;
    EXPECT_EQ(e.fn(d_in.get(), big, 3, d_out.get(), nullptr), cudaErrorInvalidValue) << e.name;
    EXPECT_EQ(e.fn(nullptr, 0, 8, nullptr, nullptr), cudaSuccess) << e.name;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, d_out.download()));
}

TEST(RowLadderHost, NamesInOrder) {
  const char* expected[] = {"v0_warp_per_row", "v1_block_per_row", "v2_warp_per_row_packed",
                            "v3_block_per_row_packed", "v4_cub_block_reduce"};
  ASSERT_EQ(std::size(ladder::kSteps), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_STREQ(ladder::kSteps[i].name, expected[i]);
    EXPECT_TRUE(ladder::kSteps[i].supports(1000, 1000));
    EXPECT_NE(ladder::kSteps[i].fn, ladder::kLibrary.fn);
  }
  EXPECT_STREQ(ladder::kLibrary.name, "kernelkit");
}

}  // namespace
