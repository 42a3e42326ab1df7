// Every sgemm ladder step and the library under the ladder signature, with the library's
// cases: shapes (ragged and tile multiples), all four op combinations, alpha/beta values,
// padded leading dimensions, offset pointers and small-integer (exact) inputs. A step that
// refuses a case (supports() false) must answer cudaErrorInvalidValue and leave C as it
// was. The runner lives in sgemm_test.cu.
#include <cstdint>

#include "common/test_util.cuh"
#include "ladder/sgemm/registry.cuh"

#include "blas/sgemm_case.cuh"

namespace {

namespace ls = kernelkit::ladder::sgemm;
using kernelkit::BlasOp;
using sgemm_testing::SgemmCase;

class SgemmLadderTest : public kktest::GpuTest, public ::testing::WithParamInterface<int> {};

std::vector<SgemmCase> ladder_cases() {
  std::vector<SgemmCase> cases;
  const int64_t shapes[][3] = {{1, 1, 1},      {1, 300, 1},     {300, 1, 200}, {127, 131, 137},
                               {33, 31, 17},   {5, 7, 0},       {0, 5, 5},     {128, 128, 8},
                               {256, 384, 64}, {384, 128, 200}, {129, 257, 65}};
  for (BlasOp oa : {BlasOp::N, BlasOp::T})
    for (BlasOp ob : {BlasOp::N, BlasOp::T})
      for (const auto& s : shapes) {
        SgemmCase c{oa, ob, s[0], s[1], s[2]};
        cases.push_back(c);
        c.small_ints = true, c.alpha = -1.5f, c.beta = 1.f;
        cases.push_back(c);
      }
  for (float alpha : {0.f, 1.f, -1.5f})
    for (float beta : {0.f, 1.f, -1.5f}) {
      SgemmCase c{BlasOp::N, BlasOp::N, 256, 128, 136};
      c.alpha = alpha, c.beta = beta;
      cases.push_back(c);
      c.m = 127, c.n = 131, c.k = 137, c.small_ints = true;
      cases.push_back(c);
    }
  for (int64_t pad : {0, 3, 4})
    for (int offset : {0, 1}) {
      SgemmCase c{BlasOp::N, BlasOp::N, 256, 256, 64};
      c.pad_a = pad, c.pad_b = pad, c.pad_c = pad, c.offset = offset, c.beta = 1.f;
      cases.push_back(c);
      c.op_a = BlasOp::T, c.op_b = BlasOp::T, c.m = 67, c.n = 45, c.k = 33;
      cases.push_back(c);
    }
  SgemmCase big{BlasOp::N, BlasOp::N, 512, 384, 520};  // many k-tiles, sampled rows
  big.beta = -1.5f;
  cases.push_back(big);
  return cases;
}

TEST_P(SgemmLadderTest, LibraryCases) {
  const int idx = GetParam();
  const ls::Step& step = idx < ls::kNumSteps ? ls::kSteps[idx] : ls::kLibrary;
  uint64_t seed = 5000 + 1000 * idx;
  for (const SgemmCase& c : ladder_cases())
    sgemm_testing::run_case(step.name, step.fn, step.supports, c, seed++);
}

TEST_P(SgemmLadderTest, BadArguments) {
  const int idx = GetParam();
  const ls::Step& step = idx < ls::kNumSteps ? ls::kSteps[idx] : ls::kLibrary;
  kktest::DeviceBuffer<float> a(128 * 128), b(128 * 128), c(128 * 128);
  c.poison();
  const auto before = c.download();
  const auto kBad = cudaErrorInvalidValue;
  EXPECT_EQ(step.fn(BlasOp::N, BlasOp::N, -1, 128, 8, 1.f, a.get(), 8, b.get(), 128, 0.f, c.get(),
                    128, nullptr),
            kBad);
  EXPECT_EQ(step.fn(BlasOp::N, BlasOp::N, 128, 128, 8, 1.f, a.get(), 4, b.get(), 128, 0.f, c.get(),
                    128, nullptr),
            kBad);
  EXPECT_EQ(step.fn(BlasOp::N, BlasOp::N, 128, 128, 8, 1.f, nullptr, 8, b.get(), 128, 0.f, c.get(),
                    128, nullptr),
            kBad);
  EXPECT_EQ(step.fn(BlasOp::N, BlasOp::N, 128, 128, 8, 1.f, a.get(), 8, b.get(), 128, 0.f, c.get(),
                    64, nullptr),
            kBad);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(c.download(), before)) << step.name;
}

INSTANTIATE_TEST_SUITE_P(Steps, SgemmLadderTest, ::testing::Range(0, ls::kNumSteps + 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param < ls::kNumSteps
                                                  ? ls::kSteps[info.param].name
                                                  : ls::kLibrary.name);
                         });

}  // namespace
