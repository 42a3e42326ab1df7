// SPDX-License-Identifier: Apache-2.0
// One small input per entry of kGemvConfigs, found by its plan: the GPU test runs each entry's
// plan (gemv_test.cu, Gemv.EveryConfiguration), the plan test checks an H100 finds them all.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "kernelkit/blas/gemv.cuh"

namespace gemv_test {

// Most floats of A a case holds.
inline constexpr int64_t kMaxCaseFloats = int64_t{1} << 20;

// Where a test puts A, x and y: floats past a 16-byte boundary (0..3).
struct FloatOffsets {
  int a = 0, x = 0, y = 0;
};

// The GemvAlignment of operands at those offsets.
inline kernelkit::GemvAlignment alignment(const FloatOffsets& o) {
  const auto at = [](int floats) { return kernelkit::Alignment(int64_t{floats} * 4); };
  return {at(o.a), at(o.x), at(o.y)};
}

// An input whose plan is one entry of kGemvConfigs. Its operands are `align` floats past a
// 16-byte boundary; its workspace holds ws_bytes.
struct ConfigCase {
  bool found = false;
  kernelkit::BlasOp op = kernelkit::BlasOp::N;
  int64_t m = 0, n = 0, lda = 1;
  FloatOffsets align;
  size_t ws_bytes = 0;
  kernelkit::GemvPlan plan;
  kernelkit::DeviceInfo device;  // the device it was planned for
};

// For each entry of kGemvConfigs, the first input (ops, then the smallest A, then the
// layouts, workspaces and devices in order) whose plan is that entry on base, or on base with
// 2 SMs (small shapes take the split and one-wave rules there), with or without clusters
// (also base without clusters: where base would take a cluster, the workspace's split);
// `found` false where none is (cluster-free entries are found on every device; a GPU
// without clusters finds no cluster plans, which are of the same kernels). The plans are for
// alpha != 0: launchable on base's GPU.
inline std::vector<ConfigCase> config_cases(const kernelkit::DeviceInfo& base) {
  using kernelkit::BlasOp;
  kernelkit::DeviceInfo two = base;
  two.sm_count = std::min(base.sm_count, 2);
  kernelkit::DeviceInfo two_no_clusters = two;
  two_no_clusters.cluster_launch = false;
  kernelkit::DeviceInfo base_no_clusters = base;
  base_no_clusters.cluster_launch = false;
  const kernelkit::DeviceInfo devices[] = {base, two, two_no_clusters, base_no_clusters};
  const int64_t sizes[] = {0,    1,     2,     3,     4,      5,      8,      16,
                           17,   32,    33,    48,    64,     65,     100,    128,
                           200,  256,   512,   1000,  1024,   2048,   4096,   4097,
                           8192, 16384, 32768, 65536, 131072, 262144, 1048576};
  const FloatOffsets aligns[] = {{0, 0, 0}, {1, 2, 3}, {0, 1, 0}, {3, 0, 3}};
  struct Shape {
    int64_t m, n;
  };
  std::vector<Shape> shapes;
  for (const int64_t m : sizes)
    for (const int64_t n : sizes)
      if (m * n <= kMaxCaseFloats && m + n > 0) shapes.push_back({m, n});
  std::stable_sort(shapes.begin(), shapes.end(),
                   [](const Shape& a, const Shape& b) { return a.m * a.n < b.m * b.n; });
  std::vector<ConfigCase> cases(std::size(kernelkit::kGemvConfigs));
  for (const BlasOp op : {BlasOp::N, BlasOp::T})
    for (const Shape& s : shapes) {
      if ((op == BlasOp::N ? s.m : s.n) == 0) continue;  // no output: nothing planned
      const size_t bound = kernelkit::gemv_workspace_bytes(op, s.m, s.n);
      for (const int64_t lda :
           {std::max<int64_t>(1, s.n), s.n + 1, s.n + 2, 4 * s.n + 1, 4 * s.n + 4})
        for (const FloatOffsets& al : aligns)
          for (const size_t ws : {size_t{0}, size_t{12}, size_t{200}, size_t{520}, bound})
            for (const kernelkit::DeviceInfo& d : devices) {
              const kernelkit::GemvPlan p =
                  kernelkit::plan_gemv(op, s.m, s.n, lda, alignment(al), ws, d);
              const int i =
                  kernelkit::config_index(kernelkit::kGemvConfigs, kernelkit::gemv_config(p));
              if (i < 0 || cases[i].found) continue;
              cases[i] = ConfigCase{true, op, s.m, s.n, lda, al, ws, p, d};
            }
    }
  return cases;
}

}  // namespace gemv_test
