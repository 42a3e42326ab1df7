// Every version of the row-reduction ladder (ladder/row_reduce/registry.cuh) with the
// library's row_sum cases: f32 and i64, cols in {0, 1, 2, 3, 31, 32, 33, 127, 1024, 1025,
// 4097, 2^20}, rows in {1, 7, 1000}, aligned and offset input, bad arguments.
#include <cstdint>
#include <limits>
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

// Small-integer inputs: every summation order gives the exact sum, so the check is exact.
template <typename T>
void run_ladder_case(const kernelkit::ladder::row_reduce::RowLadderEntry<T>& e, int64_t rows,
                     int64_t cols, int offset, uint64_t seed) {
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
  for (const auto& e : kernelkit::ladder::row_reduce::row_ladder<TypeParam>()) {
    uint64_t seed = 1;
    for (int64_t rows : {1, 7, 1000})
      for (int64_t cols : cols_list)
        for (int offset : {0, 1})
          run_ladder_case<TypeParam>(e, rows, cols, offset, ++seed);
    for (int64_t rows : {1, 7})
      for (int offset : {0, 1})
        run_ladder_case<TypeParam>(e, rows, int64_t{1} << 20, offset, ++seed);
  }
}

TYPED_TEST(RowLadder, BadArguments) {
  DeviceBuffer<TypeParam> d_in(64);
  DeviceBuffer<TypeParam> d_out(8);
  d_out.poison();
  const auto before = d_out.download();
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  for (const auto& e : kernelkit::ladder::row_reduce::row_ladder<TypeParam>()) {
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

}  // namespace
