// SPDX-License-Identifier: Apache-2.0
// rms_norm, layer_norm and add_rms_norm (f32, bf16; weights and bias of x's type, the saved
// statistics as floats) over the listed shapes of issue 34 and generated ones (bench/shapes.h,
// kNormRange; no baseline in C++: torch and Liger are timed by the Python benchmark). bytes =
// the fewest a call moves (kernelkit::norm_fewest_bytes): x (and residual), the weight (and
// bias) read once; y (and x + residual) and the saved statistics written once. Each case is
// verified once on sampled rows against a float64 reference.
#include <cmath>
#include <string>
#include <vector>

#include "checks.cuh"
#include "harness.cuh"
#include "shapes.h"
#include "kernelkit/norm/norm.cuh"

namespace {

// The adapter: every call this file makes into kernelkit goes through the function below,
// so an API change is one line here (bench/NOTES.md "Timing").
template <typename T>
cudaError_t kk_norm(kernelkit::NormKind kind, const T* x, const T* res, const T* w, const T* b,
                    T* y, T* sum, float* mean, float* rstd, int64_t rows, int64_t cols,
                    cudaStream_t s) {
  switch (kind) {
    case kernelkit::NormKind::kRms:
      return kernelkit::rms_norm(x, w, y, rstd, rows, cols, 1e-6f, s);
    case kernelkit::NormKind::kLayer:
      return kernelkit::layer_norm(x, w, b, y, mean, rstd, rows, cols, 1e-5f, s);
    default:
      return kernelkit::add_rms_norm(x, res, w, y, sum, rstd, rows, cols, 1e-6f, s);
  }
}

template <typename T>
cudaError_t kk_rms_norm_backward(const T* dy, const T* x, const T* w, const float* rstd, T* dx,
                                 T* dw, int64_t rows, int64_t cols, void* ws, size_t ws_bytes,
                                 cudaStream_t s) {
  return kernelkit::rms_norm_backward(dy, x, w, rstd, dx, dw, rows, cols, ws, ws_bytes, s);
}

using Shape = kkbench::RowsShape;
using kernelkit::NormKind;

const Shape kNormShapes[] = {{8192, 4096}, {32768, 8192}, {4096, 16384},
                             {1, 4096},    {64, 8192},    {65536, 768}};

const char* op_name(NormKind k) {
  return k == NormKind::kRms ? "rms_norm" : (k == NormKind::kLayer ? "layer_norm" : "add_rms_norm");
}

template <typename T>
void add_norm_case(const Shape& sh, NormKind kind) {
  const int64_t rows = sh.rows, cols = sh.cols, off = sh.offset;
  const std::string name = kkbench::case_name<T>(op_name(kind), "kernelkit", sh.name());
  const bool add = kind == NormKind::kAddRms, layer = kind == NormKind::kLayer;
  const double matrix = double(rows) * double(cols) * sizeof(T);
  const double vec = double(cols) * sizeof(T);
  const double stats = double(rows) * 4 * (layer ? 2 : 1);
  const kkbench::Traffic traffic{matrix * (add ? 2 : 1) + vec * (layer ? 2 : 1),
                                 matrix * (add ? 2 : 1) + stats};
  kkbench::add_case(name, traffic, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * cols + off);
    auto x = kkbench::random_array<T>(n, 21, -2.0, 2.0);
    auto res = kkbench::random_array<T>(add ? n : 0, 22, -2.0, 2.0);
    auto w = kkbench::random_array<T>(static_cast<size_t>(cols), 23, 0.5, 1.5);
    auto b = kkbench::random_array<T>(layer ? static_cast<size_t>(cols) : 0, 24);
    auto y = kkbench::poisoned_array<T>(n);
    auto sum = kkbench::poisoned_array<T>(add ? n : 0);
    auto mean = kkbench::poisoned_array<float>(layer ? static_cast<size_t>(rows) : 0);
    auto rstd = kkbench::poisoned_array<float>(static_cast<size_t>(rows));
    auto launch = [=](cudaStream_t st) {
      BENCH_CUDA(kk_norm<T>(kind, x->p + off, add ? res->p + off : nullptr, w->p,
                            layer ? b->p : nullptr, y->p + off, add ? sum->p + off : nullptr,
                            layer ? mean->p : nullptr, rstd->p, rows, cols, st));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    kkbench::check_norm<T>(name, kind, x->p + off, add ? res->p + off : nullptr, w->p,
                           layer ? b->p : nullptr, y->p + off, add ? sum->p + off : nullptr, rows,
                           cols);
    return launch;
  });
}

// rms_norm_backward: reads dy, x, the weight and rstd once, writes dx and dweight once (the
// workspace's partials are not counted: they are the kernel's cost); verified on sampled rows
// of dx and sampled columns of dweight.
template <typename T>
void add_norm_backward_case(const Shape& sh) {
  const int64_t rows = sh.rows, cols = sh.cols, off = sh.offset;
  const std::string name = kkbench::case_name<T>("rms_norm_backward", "kernelkit", sh.name());
  const double matrix = double(rows) * double(cols) * sizeof(T);
  const double vec = double(cols) * sizeof(T);
  const kkbench::Traffic traffic{2 * matrix + vec + double(rows) * 4, matrix + vec};
  kkbench::add_case(name, traffic, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * cols + off);
    auto dy = kkbench::random_array<T>(n, 31, -1.0, 1.0);
    auto x = kkbench::random_array<T>(n, 32, -2.0, 2.0);
    auto w = kkbench::random_array<T>(static_cast<size_t>(cols), 33, 0.5, 1.5);
    auto rstd = kkbench::random_array<float>(static_cast<size_t>(rows), 34, 0.5, 1.5);
    auto dx = kkbench::poisoned_array<T>(n);
    auto dw = kkbench::poisoned_array<T>(static_cast<size_t>(cols));
    const size_t ws_bytes = kernelkit::rms_norm_backward_workspace_bytes(rows, cols);
    auto ws = kkbench::zeroed_workspace(ws_bytes);
    auto launch = [=](cudaStream_t st) {
      BENCH_CUDA(kk_rms_norm_backward<T>(dy->p + off, x->p + off, w->p, rstd->p, dx->p + off, dw->p,
                                         rows, cols, ws->p, ws_bytes, st));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    kkbench::check_rms_norm_backward<T>(name, dy->p + off, x->p + off, w->p, rstd->p, dx->p + off,
                                        dw->p, rows, cols);
    return launch;
  });
}

KKBENCH_CASES {
  for (const Shape& sh : kNormShapes)
    add_norm_backward_case<float>(sh);
  for (const Shape& sh : kNormShapes)
    add_norm_backward_case<__nv_bfloat16>(sh);
}

KKBENCH_CASES {
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const Shape& sh : kNormShapes)
      add_norm_case<float>(sh, kind);
    for (const Shape& sh : kNormShapes)
      add_norm_case<__nv_bfloat16>(sh, kind);
  }
}

KKBENCH_GENERATED("norm_backward", gen) {
  for (const Shape& sh : gen.rows(12, sizeof(float), kkbench::kNormRange))
    add_norm_backward_case<float>(sh);
  for (const Shape& sh : gen.rows(12, sizeof(__nv_bfloat16), kkbench::kNormRange))
    add_norm_backward_case<__nv_bfloat16>(sh);
}

KKBENCH_GENERATED("norm", gen) {
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const Shape& sh : gen.rows(12, sizeof(float), kkbench::kNormRange))
      add_norm_case<float>(sh, kind);
    for (const Shape& sh : gen.rows(12, sizeof(__nv_bfloat16), kkbench::kNormRange))
      add_norm_case<__nv_bfloat16>(sh, kind);
  }
}

}  // namespace
