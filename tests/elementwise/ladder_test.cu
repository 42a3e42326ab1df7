// Every step of the elementwise ladder (f32 add, relu, sigmoid) with the library op's
// cases: the size sweep, each pointer misaligned, in place, specials, bad arguments, and
// one size past 2^31 elements (Large_*).
#include <cmath>
#include <string>

#include "elementwise/ew_test_util.cuh"
#include "ladder/elementwise/registry.cuh"

namespace {

using kernelkit::ladder::elementwise::kSteps;
using kernelkit::ladder::elementwise::Step;
using kktest::Tolerance;

class ElementwiseLadder : public kktest::GpuTest {};

TEST_F(ElementwiseLadder, Add) {
  for (const Step& step : kSteps) {
    ewtest::run_op<float, float, float>(
        std::string(step.name) + " add",
        [&step](int64_t n, float* o, const float* a, const float* b) {
          return step.add(kernelkit::Add{}, n, o, a, b, nullptr);
        },
        [](double a, double b) { return a + b; }, Tolerance::Ulps(1));
  }
}

TEST_F(ElementwiseLadder, Relu) {
  for (const Step& step : kSteps) {
    ewtest::run_op<float, float>(
        std::string(step.name) + " relu",
        [&step](int64_t n, float* o, const float* a) {
          return step.relu(kernelkit::Relu{}, n, o, a, nullptr);
        },
        [](double x) { return x < 0 ? 0.0 : x; }, Tolerance::Exact());
  }
}

TEST_F(ElementwiseLadder, Sigmoid) {
  for (const Step& step : kSteps) {
    ewtest::run_op<float, float>(
        std::string(step.name) + " sigmoid",
        [&step](int64_t n, float* o, const float* a) {
          return step.sigmoid(kernelkit::Sigmoid{}, n, o, a, nullptr);
        },
        [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, Tolerance{1e-6, 4e-6, 0},
        ewtest::Options{-3.0, 3.0, true});
  }
}

TEST_F(ElementwiseLadder, BadArgumentsWriteNothing) {
  for (const Step& step : kSteps) {
    ewtest::check_bad_args<float, float, float>(
        std::string(step.name) + " add",
        [&step](int64_t n, float* o, const float* a, const float* b) {
          return step.add(kernelkit::Add{}, n, o, a, b, nullptr);
        });
    ewtest::check_bad_args<float, float>(std::string(step.name) + " relu",
                                         [&step](int64_t n, float* o, const float* a) {
                                           return step.relu(kernelkit::Relu{}, n, o, a, nullptr);
                                         });
  }
}

// x_i = (i % 251) - 125, so relu(x_i) is known from i alone.
__global__ void fill_pattern_kernel(float* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<float>(i % 251) - 125.f;
}

__global__ void count_relu_mismatch_kernel(const float* out, int64_t n, unsigned long long* bad) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    local += out[i] != fmaxf(static_cast<float>(i % 251) - 125.f, 0.f);
  if (local) atomicAdd(bad, local);
}

// relu in place on 2^31 + 33 floats (8.6 GB), each step, checked on the device.
TEST_F(ElementwiseLadder, KK_LARGE(ReluPast2To31)) {
  const int64_t n = (int64_t{1} << 31) + 33;
  kktest::DeviceBuffer<float> x(n);
  kktest::DeviceBuffer<unsigned long long> bad(1);
  for (const Step& step : kSteps) {
    SCOPED_TRACE(step.name);
    fill_pattern_kernel<<<4096, 256>>>(x.get(), n);
    CUDA_CHECK(cudaGetLastError());
    ASSERT_EQ(step.relu(kernelkit::Relu{}, n, x.get(), x.get(), nullptr), cudaSuccess);
    CUDA_CHECK(cudaMemset(bad.get(), 0, sizeof(unsigned long long)));
    count_relu_mismatch_kernel<<<4096, 256>>>(x.get(), n, bad.get());
    CUDA_CHECK(cudaGetLastError());
    EXPECT_EQ(bad.download()[0], 0ull) << "of " << n << " elements";
  }
}

}  // namespace
