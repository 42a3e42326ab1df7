// SPDX-License-Identifier: Apache-2.0
// Every step of the softmax ladder and the library (kLibrary) through the same cases as the
// library's own tests: widths around the warp, a prime, pack +- 1; special values; pointers
// one element off alignment; in place; bad arguments answered with cudaErrorInvalidValue
// and nothing written.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "ladder/softmax/registry.cuh"
#include "softmax/softmax_case.cuh"

namespace {

namespace ladder = kernelkit::ladder::softmax;
using namespace softmax_test;

class SoftmaxLadderTest : public kktest::GpuTest {};

void check_step(const ladder::Step& step, uint64_t seed) {
  SCOPED_TRACE(step.name);
  const Runner run{nullptr, step.fn};
  for (const int64_t cols :
       {int64_t{1}, int64_t{3}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{1000}, int64_t{1024},
        int64_t{1025}, int64_t{4097}, int64_t{100003}}) {
    for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{37}}) {
      const int64_t r = rows_for(rows, cols);
      ASSERT_TRUE(step.supports(nullptr, nullptr, r, cols));
      EXPECT_TRUE(run_case<float>(r, cols, false, kAligned, seed++, run));
    }
    EXPECT_TRUE(run_case<float>(rows_for(5, cols), cols, false, Layout{1, 1, false}, seed++, run));
    EXPECT_TRUE(run_case<float>(rows_for(5, cols), cols, false, Layout{1, 0, false}, seed++, run));
    EXPECT_TRUE(run_case<float>(rows_for(5, cols), cols, false, kInPlace, seed++, run));
  }
  // bad arguments: nothing written
  DeviceBuffer<float> in(64), out(64);
  in.upload(kktest::random_vector<float>(64, seed));
  out.poison();
  const auto before = out.download();
  EXPECT_EQ(step.fn(nullptr, out.get(), 4, 4, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(step.fn(in.get(), out.get(), -1, 4, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(step.fn(in.get(), in.get() + 1, 4, 4, nullptr), cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, out.download()));
  EXPECT_EQ(step.fn(nullptr, nullptr, 0, 4, nullptr), cudaSuccess);
}

TEST_F(SoftmaxLadderTest, EveryStepMatchesReference) {
  uint64_t seed = 500;
  for (const auto& step : ladder::kSteps) {
    check_step(step, seed);
    seed += 1000;
  }
}

TEST_F(SoftmaxLadderTest, LibraryMatchesReference) {
  check_step(ladder::kLibrary, 9000);
}

TEST(SoftmaxLadder, NamesAndShape) {
  for (const auto& step : ladder::kSteps) {
    EXPECT_EQ(std::string(step.name).rfind('v', 0), 0u) << step.name;
    EXPECT_NE(std::string(step.name), "kernelkit");
    EXPECT_NE(step.fn, ladder::kLibrary.fn);
  }
  EXPECT_EQ(std::string(ladder::kLibrary.name), "kernelkit");
}

}  // namespace
