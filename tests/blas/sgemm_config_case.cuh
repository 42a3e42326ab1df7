// SPDX-License-Identifier: Apache-2.0
// One small call per entry of kSgemmConfigs, found by its plan: the GPU test runs each entry's
// plan (sgemm_test.cu, SgemmTest.EveryConfiguration), the plan test checks that every test
// device finds them all.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "kernelkit/blas/sgemm_plan.cuh"

namespace sgemm_config_test {

// Most multiply-adds of a case (its float64 reference runs on the host).
inline constexpr int64_t kMaxCaseMacs = int64_t{1} << 27;

// A call whose plan is one entry of kSgemmConfigs: ld = the stored row length + pad; every
// pointer 16-byte aligned (offset 0) or offset by one float (offset 1: none is); a workspace
// of ws_bytes.
struct ConfigCase {
  bool found = false;
  kernelkit::BlasOp op_a = kernelkit::BlasOp::N, op_b = kernelkit::BlasOp::N;
  int64_t m = 0, n = 0, k = 0;
  int64_t pad = 0;
  int offset = 0;
  size_t ws_bytes = 0;
  kernelkit::SgemmPlan plan;
  kernelkit::DeviceInfo device;  // the device it was planned for
};

// For each entry of kSgemmConfigs, the first call (fewest multiply-adds, then the ops, the
// padding, the offset, the workspace and the device in order) whose plan is that entry on
// base or on base with 2 SMs (the tiles' split and wave rules at small sizes); `found` false
// where none is.
inline std::vector<ConfigCase> config_cases(const kernelkit::DeviceInfo& base) {
  using kernelkit::BlasOp;
  kernelkit::DeviceInfo two = base;
  two.sm_count = std::min(base.sm_count, 2);
  const kernelkit::DeviceInfo devices[] = {base, two};
  // 101: an odd m a 128-row tile covers (TN 101x300x129 on 2 SMs is the smallest 128 x 256
  // call with 4-byte copies of A and 16-byte ones of B since 4-byte stores count in the plan)
  const int64_t mn[] = {0, 1, 2, 5, 8, 9, 31, 33, 64, 100, 101, 129, 257, 300, 513, 1000, 2048};
  const int64_t ks[] = {0, 1, 17, 64, 129, 300, 1024, 4096};
  struct Shape {
    int64_t m, n, k;
  };
  std::vector<Shape> shapes;
  for (const int64_t m : mn)
    for (const int64_t n : mn)
      for (const int64_t k : ks)
        if (m * n * k <= kMaxCaseMacs) shapes.push_back({m, n, k});
  std::stable_sort(shapes.begin(), shapes.end(), [](const Shape& a, const Shape& b) {
    return a.m * a.n * a.k + a.m * a.n < b.m * b.n * b.k + b.m * b.n;
  });
  std::vector<ConfigCase> cases(std::size(kernelkit::kSgemmConfigs));
  for (const Shape& s : shapes)
    for (const BlasOp oa : {BlasOp::N, BlasOp::T})
      for (const BlasOp ob : {BlasOp::N, BlasOp::T})
        for (const int64_t pad : {0, 1})
          for (const int offset : {0, 1}) {
            const int64_t lda = std::max<int64_t>(1, (oa == BlasOp::N ? s.k : s.m) + pad);
            const int64_t ldb = std::max<int64_t>(1, (ob == BlasOp::N ? s.n : s.k) + pad);
            const int64_t ldc = std::max<int64_t>(1, s.n + pad);
            const kernelkit::Alignment at(int64_t{4} * offset);
            const kernelkit::SgemmAlignment al{at, at, at};
            const size_t bound = kernelkit::sgemm_workspace_bytes(oa, ob, s.m, s.n, s.k);
            for (const size_t ws : {size_t{0}, bound})
              for (const kernelkit::DeviceInfo& d : devices) {
                const kernelkit::SgemmPlan p =
                    kernelkit::plan_sgemm(oa, ob, s.m, s.n, s.k, lda, ldb, ldc, al, ws, d);
                const int i =
                    kernelkit::config_index(kernelkit::kSgemmConfigs, kernelkit::sgemm_config(p));
                if (i < 0 || cases[i].found) continue;
                cases[i] = ConfigCase{true, oa, ob, s.m, s.n, s.k, pad, offset, ws, p, d};
              }
          }
  return cases;
}

}  // namespace sgemm_config_test
