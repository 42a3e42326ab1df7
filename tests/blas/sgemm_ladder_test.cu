// SPDX-License-Identifier: Apache-2.0
// Every sgemm ladder step and the library under the ladder signature, with the library's
// cases: shapes (ragged and tile multiples), all four op combinations, alpha/beta values,
// padded leading dimensions, offset pointers and small-integer (exact) inputs. A step that
// refuses a case (supports() false) must answer cudaErrorInvalidValue and leave C as it
// was. The runner lives in sgemm_test.cu.
#include <algorithm>
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
  // sanitizer (racecheck ran v2's and v3's shared-memory tiles for over 200 s each): K at most
  // 40 (2 k-tiles of v2, 5 of v3-v6, the library's last partial), one case per op and shape
  // (256 x 384 and 384 x 128 NN only: the shapes v5/v6 take), alpha/beta 3 of 9 pairs (each
  // value once), 128 x 128 for the padded NN cases, no 512 x 384 x 520
  const bool san = kktest::sanitizer_run();
  std::vector<SgemmCase> cases;
  const int64_t shapes[][3] = {{1, 1, 1},      {1, 300, 1},     {300, 1, 200}, {127, 131, 137},
                               {33, 31, 17},   {5, 7, 0},       {0, 5, 5},     {128, 128, 8},
                               {256, 384, 64}, {384, 128, 200}, {129, 257, 65}};
  for (BlasOp oa : {BlasOp::N, BlasOp::T})
    for (BlasOp ob : {BlasOp::N, BlasOp::T})
      for (const auto& s : shapes) {
        if (san && s[0] * s[1] > 40000 && (oa == BlasOp::T || ob == BlasOp::T)) continue;
        SgemmCase c{oa, ob, s[0], s[1], san ? std::min<int64_t>(s[2], 40) : s[2]};
        cases.push_back(c);
        if (san) continue;
        c.small_ints = true, c.alpha = -1.5f, c.beta = 1.f;
        cases.push_back(c);
      }
  int64_t index = 0;
  for (float alpha : {0.f, 1.f, -1.5f})
    for (float beta : {0.f, 1.f, -1.5f}) {
      if (!kktest::sanitize_keep(index++, 4)) continue;
      SgemmCase c{BlasOp::N, BlasOp::N, 256, 128, san ? 40 : 136};
      c.alpha = alpha, c.beta = beta;
      cases.push_back(c);
      c.m = 127, c.n = 131, c.k = san ? 37 : 137, c.small_ints = true;
      cases.push_back(c);
    }
  for (int64_t pad : {0, 3, 4})
    for (int offset : {0, 1}) {
      SgemmCase c{BlasOp::N, BlasOp::N, san ? 128 : 256, san ? 128 : 256, san ? 40 : 64};
      c.pad_a = pad, c.pad_b = pad, c.pad_c = pad, c.offset = offset, c.beta = 1.f;
      cases.push_back(c);
      c.op_a = BlasOp::T, c.op_b = BlasOp::T, c.m = 67, c.n = 45, c.k = 33;
      cases.push_back(c);
    }
  SgemmCase big{BlasOp::N, BlasOp::N, 512, 384, 520};  // many k-tiles, sampled rows
  big.beta = -1.5f;
  if (!san) cases.push_back(big);
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
