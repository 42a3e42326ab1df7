// SPDX-License-Identifier: Apache-2.0
// softmax_inner (softmax over the middle axis of (outer, n, inner): channel softmax of NCHW,
// softmax over any axis) and softmax_inner_backward, f32 / f16 / bf16 (log_softmax_inner and its
// backward: f32, bf16), over listed and generated shapes (issue 33; no baseline). bytes: forward
// x read + y written (2 x outer x n x inner x sizeof(T)); backward y and dy read, dx written (3x).
// Each call gets softmax_inner_workspace_bytes of workspace. Each case is verified once on
// sampled columns (up to 16, ~4M elements read back) against a float64 reference.
//
// Generated shapes: the row ops' generator (bench/shapes.h, kSoftmaxRange, this op's own stream):
// a draw rows x cols (+ offset) becomes, in turn, (rows / m, m, cols) with m = 2 + rows % 127 (a
// channel axis of m), (1, rows, cols) (x.softmax(0): tall columns) and (rows, cols / m, m) with m
// = 2 + cols % 15 (a few columns: nearly rows).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "checks.cuh"
#include "harness.cuh"
#include "kernelkit/softmax/softmax_inner.cuh"
#include "shapes.h"

namespace {

struct InnerShape {
  int64_t outer = 1, n = 1, inner = 1, offset = 0;
  std::string name() const {
    return std::to_string(outer) + "x" + std::to_string(n) + "x" + std::to_string(inner) +
           (offset ? "+" + std::to_string(offset) : "");
  }
  int64_t elems() const { return outer * n * inner; }
};

// The adapter: every call this file makes into kernelkit.
template <typename T>
cudaError_t kk_forward(const T* x, T* y, const InnerShape& s, bool log, void* ws, size_t wsb,
                       cudaStream_t st) {
  return log ? kernelkit::log_softmax_inner(x, y, s.outer, s.n, s.inner, ws, wsb, st)
             : kernelkit::softmax_inner(x, y, s.outer, s.n, s.inner, ws, wsb, st);
}
template <typename T>
cudaError_t kk_backward(const T* y, const T* dy, T* dx, const InnerShape& s, bool log, void* ws,
                        size_t wsb, cudaStream_t st) {
  return log ? kernelkit::log_softmax_inner_backward(y, dy, dx, s.outer, s.n, s.inner, ws, wsb, st)
             : kernelkit::softmax_inner_backward(y, dy, dx, s.outer, s.n, s.inner, ws, wsb, st);
}

// Column (o, i) of an (outer, n, inner) device array, as doubles.
template <typename T>
std::vector<double> column(const T* d, const InnerShape& s, int64_t o, int64_t i) {
  std::vector<T> c(s.n);
  BENCH_CUDA(cudaMemcpy2D(c.data(), sizeof(T), d + o * s.n * s.inner + i, s.inner * sizeof(T),
                          sizeof(T), s.n, cudaMemcpyDeviceToHost));
  std::vector<double> v(s.n);
  for (int64_t k = 0; k < s.n; ++k)
    v[k] = kernelkit::convert<double>(c[k]);
  return v;
}

template <typename T>
double out_rtol() {
  return std::is_same_v<T, float> ? 1e-5 : (std::is_same_v<T, __half> ? 2e-3 : 1.6e-2);
}

// Sampled columns against float64: forward from x; backward from y and dy.
template <typename T>
void check_columns(const std::string& what, const InnerShape& s, bool bwd, bool log, const T* x,
                   const T* dy, const T* out) {
  const int64_t columns = s.outer * s.inner;
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(s.n, 1), 2, 16);
  std::vector<double> got, ref;
  for (size_t j : kkbench::sample_indices(size_t(columns), size_t(count))) {
    const int64_t o = int64_t(j) / s.inner, i = int64_t(j) % s.inner;
    const auto xv = column(x, s, o, i), ov = column(out, s, o, i);
    std::vector<double> r(s.n);
    if (!bwd) {
      double m = -INFINITY, sum = 0;
      for (double v : xv)
        m = std::max(m, v);
      for (double v : xv)
        sum += std::exp(v - m);
      for (int64_t k = 0; k < s.n; ++k)
        r[k] = log ? (xv[k] - m) - std::log(sum) : std::exp(xv[k] - m) / sum;
    } else {
      const auto dv = column(dy, s, o, i);
      double sum = 0;
      for (int64_t k = 0; k < s.n; ++k)
        sum += log ? dv[k] : xv[k] * dv[k];
      for (int64_t k = 0; k < s.n; ++k)
        r[k] = log ? dv[k] - std::exp(xv[k]) * sum : xv[k] * (dv[k] - sum);
    }
    got.insert(got.end(), ov.begin(), ov.end());
    ref.insert(ref.end(), r.begin(), r.end());
  }
  const double atol = bwd ? (std::is_same_v<T, float> ? 1e-5 : 1e-2) : (log ? 1e-4 : 1e-7);
  kkbench::verify(what, got, ref, out_rtol<T>(), atol);
}

template <typename T>
void add_case(const InnerShape& s, bool bwd, bool log) {
  const char* op = bwd ? (log ? "log_softmax_inner_backward" : "softmax_inner_backward")
                       : (log ? "log_softmax_inner" : "softmax_inner");
  const std::string name = kkbench::case_name<T>(op, "kernelkit", s.name());
  const double bytes = double(s.elems()) * sizeof(T);
  kkbench::add_case(name, {bwd ? 2 * bytes : bytes, bytes}, 0, [=](cudaStream_t st) {
    const size_t n = static_cast<size_t>(s.elems() + s.offset);
    // forward x in [-8, 8); backward y scaled like a real output, dy in [-1, 1)
    auto x = bwd ? (log ? kkbench::random_array<T>(n, 21, -12.0, -2.0)
                        : kkbench::random_array<T>(n, 21, 0.0, 2.0 / double(s.n)))
                 : kkbench::random_array<T>(n, 11, -8.0, 8.0);
    auto dy = kkbench::random_array<T>(bwd ? n : 1, 22, -1.0, 1.0);
    auto out = kkbench::poisoned_array<T>(n);
    auto ws = kkbench::zeroed_workspace(
        kernelkit::softmax_inner_workspace_bytes<T>(s.outer, s.n, s.inner));
    kkbench::Launch launch = [=](cudaStream_t t) {
      const int64_t off = s.offset;
      if (bwd) {
        BENCH_CUDA(kk_backward(x->p + off, dy->p + off, out->p + off, s, log, ws->p, ws->n, t));
      } else {
        BENCH_CUDA(kk_forward(x->p + off, out->p + off, s, log, ws->p, ws->n, t));
      }
    };
    launch(st);
    BENCH_CUDA(cudaStreamSynchronize(st));
    check_columns<T>(name, s, bwd, log, x->p + s.offset, dy->p + s.offset, out->p + s.offset);
    return launch;
  });
}

// NCHW channel softmax (N 32, C 64, 56 x 56; segmentation 8 x 21 x 128 x 128), tall columns
// (8 x 1000 x 4096; 1 x 50000 x 64: few columns, n split), short channel axes (256 x 8 x 65536),
// a few columns (nearly rows: 65536 x 17 x 7, 1M x 2 x 2), odd and misaligned ones.
const InnerShape kListed[] = {{32, 64, 3136, 0},  {8, 21, 16384, 0},   {8, 1000, 4096, 0},
                              {1, 50000, 64, 0},  {256, 8, 65536, 0},  {65536, 17, 7, 0},
                              {1048576, 2, 2, 0}, {64, 1000, 1000, 0}, {16, 127, 4099, 1},
                              {4, 100000, 256, 0}};
const InnerShape kBackwardListed[] = {{32, 64, 3136, 0},
                                      {8, 1000, 4096, 0},
                                      {1, 50000, 64, 0},
                                      {256, 8, 65536, 0},
                                      {65536, 17, 7, 0}};

KKBENCH_CASES {
  for (const InnerShape& s : kListed) {
    add_case<float>(s, false, false);
    add_case<__half>(s, false, false);
    add_case<__nv_bfloat16>(s, false, false);
  }
  for (const InnerShape& s : {kListed[0], kListed[2], kListed[3]}) {
    add_case<float>(s, false, true);
    add_case<__nv_bfloat16>(s, false, true);
  }
  for (const InnerShape& s : kBackwardListed) {
    add_case<float>(s, true, false);
    add_case<__nv_bfloat16>(s, true, false);
  }
  for (const InnerShape& s : {kBackwardListed[0], kBackwardListed[3]}) {
    add_case<float>(s, true, true);
    add_case<__nv_bfloat16>(s, true, true);
  }
}

std::vector<InnerShape> inner_shapes(kkbench::ShapeGen& gen, int count, int elem_bytes) {
  std::vector<InnerShape> shapes;
  int i = 0;
  for (const kkbench::RowsShape& r : gen.rows(count, elem_bytes, kkbench::kSoftmaxRange)) {
    InnerShape s{1, r.rows, r.cols, r.offset};
    switch (i++ % 3) {
      case 0: {
        const int64_t m = 2 + r.rows % 127;
        if (r.rows / m >= 1) s = {r.rows / m, m, r.cols, r.offset};
        break;
      }
      case 1:
        break;  // (1, rows, cols)
      default: {
        const int64_t m = 2 + r.cols % 15;
        if (r.cols / m >= 1) s = {r.rows, r.cols / m, m, r.offset};
      }
    }
    shapes.push_back(s);
  }
  return shapes;
}

KKBENCH_GENERATED("softmax_inner", gen) {
  for (const InnerShape& s : inner_shapes(gen, 18, sizeof(float)))
    add_case<float>(s, false, false);
  for (const InnerShape& s : inner_shapes(gen, 12, sizeof(__half)))
    add_case<__half>(s, false, false);
  for (const InnerShape& s : inner_shapes(gen, 12, sizeof(__nv_bfloat16)))
    add_case<__nv_bfloat16>(s, false, false);
}

KKBENCH_GENERATED("softmax_inner_backward", gen) {
  for (const InnerShape& s : inner_shapes(gen, 12, sizeof(float)))
    add_case<float>(s, true, false);
  for (const InnerShape& s : inner_shapes(gen, 6, sizeof(__nv_bfloat16)))
    add_case<__nv_bfloat16>(s, true, false);
}

}  // namespace
