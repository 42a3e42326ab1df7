// SPDX-License-Identifier: Apache-2.0
// The sgemm test case shared by sgemm_test.cu (which defines run_call) and
// sgemm_ladder_test.cu.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kernelkit/blas/blas.cuh"
#include "ladder/sgemm/registry.cuh"

namespace sgemm_testing {
using Fn = kernelkit::ladder::sgemm::Fn;
using SupportsFn = kernelkit::ladder::sgemm::SupportsFn;
struct SgemmCase {
  kernelkit::BlasOp op_a, op_b;
  int64_t m, n, k;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // leading dimension - row length
  float alpha = 1.f, beta = 0.f;
  int offset = 0;           // elements added to the A, B and C pointers (1: only 4-byte aligned)
  bool small_ints = false;  // integers in [-4, 4]: exact result expected
  bool nan_in_a = false;    // A[0][0] = NaN (for alpha == 0: must not propagate)
};
// One call of an sgemm implementation on the case's operands (device pointers, the case's
// leading dimensions), on the default stream.
using SgemmCall = std::function<cudaError_t(const SgemmCase& c, const float* A, int64_t lda,
                                            const float* B, int64_t ldb, float* C, int64_t ldc)>;
// Runs call on fresh inputs for case c and checks C against the float64 reference (or, where
// supports() refuses the arguments, checks cudaErrorInvalidValue and an untouched C).
void run_call(const std::string& name, const SgemmCall& call, SupportsFn supports,
              const SgemmCase& c, uint64_t seed);
// run_call for a function with the ladder's signature.
void run_case(const char* name, Fn fn, SupportsFn supports, const SgemmCase& c, uint64_t seed);
}  // namespace sgemm_testing
