// SPDX-License-Identifier: Apache-2.0
// Every step of the transpose ladder and the library through the registry (kSteps<T>,
// kLibrary<T>), with the library op's cases: the shape sweep, pointers off 16-byte alignment
// by one element, 4 and 8 bytes, and bad arguments, for every element size.
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "transpose/transpose_check.cuh"

namespace {

using kernelkit::ladder::transpose::kLibrary;
using kernelkit::ladder::transpose::kSteps;
using kernelkit::ladder::transpose::Step;
using transpose_test::check_transpose;
using transpose_test::Impls;

// The teaching steps, then the library.
template <typename T>
Impls<T> steps_and_library() {
  Impls<T> all;
  for (const Step<T>& s : kSteps<T>)
    all.emplace_back(s.name, s.fn);
  all.emplace_back(kLibrary<T>.name, kLibrary<T>.fn);
  return all;
}

TEST(TransposeLadderHost, RegistryShape) {
  EXPECT_EQ(std::size(kSteps<float>), 3u);
  for (const Step<float>& s : kSteps<float>) {
    EXPECT_EQ(std::string(s.name).rfind('v', 0), 0u) << s.name;
    EXPECT_NE(std::string(s.name), kLibrary<float>.name);
    EXPECT_NE(s.fn, kLibrary<float>.fn);
    EXPECT_TRUE(s.supports(nullptr, nullptr, 3, 5)) << s.name;
  }
  EXPECT_EQ(std::string(kLibrary<float>.name), "kernelkit");
}

template <typename T>
class TransposeLadder : public kktest::GpuTest {};

using ElementTypes =
    ::testing::Types<int8_t, __half, __nv_bfloat16, float, int32_t, double, int64_t>;
TYPED_TEST_SUITE(TransposeLadder, ElementTypes);

TYPED_TEST(TransposeLadder, Shapes) {
  const auto impls = steps_and_library<TypeParam>();
  for (const auto& [rows, cols] : transpose_test::kShapes)
    // sanitizer: no 1009 x 1013 (2/3 of the work; a step's kernel is the same at every shape,
    // and 257 x 129, 7 x 4099 stay ragged)
    if (!kktest::sanitizer_run() || rows * cols < 500000)
      check_transpose<TypeParam>(impls, rows, cols);
}

// Pointers one element, 4 bytes or 8 bytes off 16-byte alignment, on shapes that would
// otherwise take the widest chunks (and thin and tile shapes).
TYPED_TEST(TransposeLadder, Misaligned) {
  transpose_test::check_misaligned<TypeParam>(
      steps_and_library<TypeParam>(),
      {{136, 264}, {31, 33}, {256, 256}, {1, 100}, {36, 68}, {3, 200}, {200, 3}, {32, 72}});
}

TYPED_TEST(TransposeLadder, BadArgumentsWriteNothing) {
  transpose_test::check_bad_arguments<TypeParam>(steps_and_library<TypeParam>());
}

// Large_ although under 2^31 elements: 28 transposes of 67M elements are too slow under
// racecheck, so sanitizer runs (-*Large*) leave them out.
TYPED_TEST(TransposeLadder, Large_IssueShapes) {
  const auto impls = steps_and_library<TypeParam>();
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{8191, 8193}, {4096, 4096}})
    check_transpose<TypeParam>(impls, rows, cols);
}

}  // namespace
