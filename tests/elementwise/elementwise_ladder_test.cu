// SPDX-License-Identifier: Apache-2.0
// Every step of the elementwise ladder (f32 add) and the library through the registry, with
// the library op's cases: the size sweep, every pointer shifted by one element, each pointer
// alone shifted, in place, specials, bad arguments, and one size past 2^31 elements (Large_*).
#include <cmath>
#include <string>
#include <vector>

#include "elementwise/ew_test_util.cuh"
#include "ladder/elementwise/registry.cuh"

namespace {

using kernelkit::ladder::elementwise::kLibrary;
using kernelkit::ladder::elementwise::kSteps;
using kernelkit::ladder::elementwise::Step;
using kktest::Tolerance;

// The teaching steps, then the library.
std::vector<Step> steps_and_library() {
  std::vector<Step> all(std::begin(kSteps), std::end(kSteps));
  all.push_back(kLibrary);
  return all;
}

class ElementwiseLadder : public kktest::GpuTest {};

TEST(ElementwiseLadderHost, RegistryShape) {
  EXPECT_EQ(std::size(kSteps), 2u);
  for (const Step& s : kSteps) {
    EXPECT_EQ(std::string(s.name).rfind('v', 0), 0u) << s.name;
    EXPECT_NE(std::string(s.name), kLibrary.name);
    EXPECT_NE(s.fn, kLibrary.fn);
  }
  EXPECT_EQ(std::string(kLibrary.name), "kernelkit");
}

TEST_F(ElementwiseLadder, Add) {
  for (const Step& step : steps_and_library()) {
    ewtest::run_op<float, float, float>(
        std::string(step.name) + " add",
        [&step](int64_t n, float* o, const float* a, const float* b) {
          EXPECT_TRUE(step.supports(n, o, a, b));
          return step.fn(n, o, a, b, nullptr);
        },
        [](double a, double b) { return a + b; }, Tolerance::Ulps(1));
  }
}

TEST_F(ElementwiseLadder, BadArgumentsWriteNothing) {
  for (const Step& step : steps_and_library()) {
    ewtest::check_bad_args<float, float, float>(
        std::string(step.name) + " add",
        [&step](int64_t n, float* o, const float* a, const float* b) {
          return step.fn(n, o, a, b, nullptr);
        });
  }
}

// x_i = (i % 251) - 125, so 2 x_i is known from i alone.
__global__ void fill_pattern_kernel(float* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<float>(i % 251) - 125.f;
}

__global__ void count_double_mismatch_kernel(const float* out, int64_t n, unsigned long long* bad) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    local += out[i] != 2.f * (static_cast<float>(i % 251) - 125.f);
  if (local) atomicAdd(bad, local);
}

// x = x + x in place on 2^31 + 33 floats (8.6 GB), each step and the library, checked on the
// device.
TEST_F(ElementwiseLadder, KK_LARGE(AddPast2To31)) {
  const int64_t n = (int64_t{1} << 31) + 33;
  kktest::DeviceBuffer<float> x(n);
  kktest::DeviceBuffer<unsigned long long> bad(1);
  for (const Step& step : steps_and_library()) {
    SCOPED_TRACE(step.name);
    fill_pattern_kernel<<<4096, 256>>>(x.get(), n);
    CUDA_CHECK(cudaGetLastError());
    ASSERT_EQ(step.fn(n, x.get(), x.get(), x.get(), nullptr), cudaSuccess);
    CUDA_CHECK(cudaMemset(bad.get(), 0, sizeof(unsigned long long)));
    count_double_mismatch_kernel<<<4096, 256>>>(x.get(), n, bad.get());
    CUDA_CHECK(cudaGetLastError());
    EXPECT_EQ(bad.download()[0], 0ull) << "of " << n << " elements";
  }
}

}  // namespace
