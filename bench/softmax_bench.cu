// SPDX-License-Identifier: Apache-2.0
// softmax (f32, f16, bf16) and log_softmax (f32, bf16) over the listed shapes of issue 14
// and generated ones (bench/shapes.h; no baseline). bytes = rows * cols * sizeof(T) read + the
// same written. Strided rows (softmax f32 / bf16 with ld = cols + pad, or logits[:, -1, :]):
// the same bytes (the rows only). softmax_backward and log_softmax_backward (f32, bf16, issue
// 33): y and dy read, dx written, 3 x rows * cols * sizeof(T) (2 read, 1 written), listed and
// generated shapes. Each case is verified once on sampled rows (up to 16, at most ~8M elements
// read back) against a float64 reference.
#include <string>
#include <vector>

#include "checks.cuh"
#include "harness.cuh"
#include "shapes.h"
#include "kernelkit/softmax/softmax.cuh"

namespace {

// The adapter: every call this file makes into kernelkit goes through the function(s) below,
// so an API change (e.g. a workspace overload) is one line here (bench/NOTES.md "Timing").
template <typename T>
cudaError_t kk_softmax(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t s) {
  return kernelkit::softmax(in, out, rows, cols, s);
}
template <typename T>
cudaError_t kk_log_softmax(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t s) {
  return kernelkit::log_softmax(in, out, rows, cols, s);
}
template <typename T>
cudaError_t kk_softmax_ld(const T* in, int64_t ld_in, T* out, int64_t ld_out, int64_t rows,
                          int64_t cols, cudaStream_t s) {
  return kernelkit::softmax(in, ld_in, out, ld_out, rows, cols, s);
}
template <typename T>
cudaError_t kk_softmax_backward(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols,
                                bool log, cudaStream_t s) {
  return log ? kernelkit::log_softmax_backward(y, dy, dx, rows, cols, s)
             : kernelkit::softmax_backward(y, dy, dx, rows, cols, s);
}

using Shape = kkbench::RowsShape;

// rows = round(2^25 / cols) for the first 18, then the awkward ones
const Shape kSoftmaxShapes[] = {
    {1048576, 32}, {349525, 96},  {67109, 500}, {33554, 1000}, {32768, 1024}, {22370, 1500},
    {16384, 2048}, {11185, 3000}, {8192, 4096}, {6711, 5000},  {4096, 8192},  {3355, 10000},
    {2048, 16384}, {1049, 32000}, {512, 65536}, {336, 100000}, {221, 151936}, {128, 262144},
    {4096, 50257}, {1, 1048576},  {4, 500000},  {32, 250000},  {16, 2097152}};
const Shape kLogSoftmaxShapes[] = {
    {1048576, 32}, {32768, 1024}, {4096, 50257}, {512, 65536}, {32, 250000}};

template <typename T>
void add_softmax_case(const Shape& sh, bool log) {
  const int64_t rows = sh.rows, cols = sh.cols, off = sh.offset;
  const std::string name =
      kkbench::case_name<T>(log ? "log_softmax" : "softmax", "kernelkit", sh.name());
  const double bytes = double(rows) * double(cols) * sizeof(T);
  kkbench::add_case(name, {bytes, bytes}, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * cols + off);
    auto in = kkbench::random_array<T>(n, 11, -8.0, 8.0);
    auto out = kkbench::poisoned_array<T>(n);
    auto launch = [=](cudaStream_t st) {
      if (log) {
        BENCH_CUDA(kk_log_softmax(in->p + off, out->p + off, rows, cols, st));
      } else {
        BENCH_CUDA(kk_softmax(in->p + off, out->p + off, rows, cols, st));
      }
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    kkbench::check_softmax(name, in->p + off, out->p + off, rows, cols, log);
    return launch;
  });
}

// The backward: LLM vocabularies (training rows), 4096x4096, 65536x1024, decode-like few rows,
// short and odd rows.
const Shape kBackwardShapes[] = {
    {1048576, 32}, {349525, 96},  {67109, 500},  {32768, 1024}, {65536, 1024}, {16384, 2048},
    {8192, 4096},  {4096, 4096},  {4096, 8192},  {2048, 16384}, {1049, 32000}, {512, 65536},
    {4096, 50257}, {221, 151936}, {128, 262144}, {8, 128256},   {1, 151936},   {32, 250000}};
const Shape kLogBackwardShapes[] = {
    {1048576, 32}, {32768, 1024}, {4096, 50257}, {512, 65536}, {32, 250000}};

template <typename T>
void add_backward_case(const Shape& sh, bool log) {
  const int64_t rows = sh.rows, cols = sh.cols, off = sh.offset;
  const std::string name = kkbench::case_name<T>(log ? "log_softmax_backward" : "softmax_backward",
                                                 "kernelkit", sh.name());
  const double bytes = double(rows) * double(cols) * sizeof(T);
  kkbench::add_case(name, {2 * bytes, bytes}, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * cols + off);
    // y: probabilities (softmax) or log-probabilities (log_softmax) scaled like a real row
    auto y = log ? kkbench::random_array<T>(n, 21, -12.0, -2.0)
                 : kkbench::random_array<T>(n, 21, 0.0, 2.0 / double(cols));
    auto dy = kkbench::random_array<T>(n, 22, -1.0, 1.0);
    auto dx = kkbench::poisoned_array<T>(n);
    auto launch = [=](cudaStream_t st) {
      BENCH_CUDA(kk_softmax_backward(y->p + off, dy->p + off, dx->p + off, rows, cols, log, st));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    kkbench::check_softmax_backward(name, y->p + off, dy->p + off, dx->p + off, rows, cols, log);
    return launch;
  });
}

// Strided forward rows: row r at in + r * ld_in (pad: ld = cols + pad; the output contiguous).
struct StridedShape {
  int64_t rows, cols, ld_in;
  std::string name() const {
    return std::to_string(rows) + "x" + std::to_string(cols) + "_ld" + std::to_string(ld_in);
  }
};
// logits[:, -1, :] of (B, T = 4, V), then padded rows
const StridedShape kStridedShapes[] = {{64, 128256, 4 * 128256},
                                       {64, 32000, 4 * 32000},
                                       {4096, 4096, 4096 + 64},
                                       {65536, 1000, 1024},
                                       {32768, 1024, 1040}};

template <typename T>
void add_strided_case(const StridedShape& sh) {
  const int64_t rows = sh.rows, cols = sh.cols, ld = sh.ld_in;
  const std::string name = kkbench::case_name<T>("softmax", "kernelkit", sh.name());
  const double bytes = double(rows) * double(cols) * sizeof(T);
  kkbench::add_case(name, {bytes, bytes}, 0, [=](cudaStream_t s) -> kkbench::Launch {
    auto in = kkbench::random_array<T>(static_cast<size_t>((rows - 1) * ld + cols), 11, -8.0, 8.0);
    auto out = kkbench::poisoned_array<T>(static_cast<size_t>(rows * cols));
    auto launch = [=](cudaStream_t st) {
      BENCH_CUDA(kk_softmax_ld(in->p, ld, out->p, cols, rows, cols, st));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    kkbench::check_softmax(name, in->p, out->p, rows, cols, false, ld, cols);
    return launch;
  });
}

KKBENCH_CASES {
  for (const Shape& sh : kSoftmaxShapes)
    add_softmax_case<float>(sh, false);
  for (const Shape& sh : kSoftmaxShapes)
    add_softmax_case<__half>(sh, false);
  for (const Shape& sh : kSoftmaxShapes)
    add_softmax_case<__nv_bfloat16>(sh, false);
  for (const Shape& sh : kLogSoftmaxShapes)
    add_softmax_case<float>(sh, true);
  for (const Shape& sh : kLogSoftmaxShapes)
    add_softmax_case<__nv_bfloat16>(sh, true);
  for (const StridedShape& sh : kStridedShapes)
    add_strided_case<float>(sh);
  for (const StridedShape& sh : kStridedShapes)
    add_strided_case<__nv_bfloat16>(sh);
  for (const Shape& sh : kBackwardShapes)
    add_backward_case<float>(sh, false);
  for (const Shape& sh : kBackwardShapes)
    add_backward_case<__nv_bfloat16>(sh, false);
  for (const Shape& sh : kLogBackwardShapes)
    add_backward_case<float>(sh, true);
  for (const Shape& sh : kLogBackwardShapes)
    add_backward_case<__nv_bfloat16>(sh, true);
}

KKBENCH_GENERATED("softmax", gen) {
  for (const Shape& sh : gen.rows(24, sizeof(float), kkbench::kSoftmaxRange))
    add_softmax_case<float>(sh, false);
  for (const Shape& sh : gen.rows(24, sizeof(__half), kkbench::kSoftmaxRange))
    add_softmax_case<__half>(sh, false);
  for (const Shape& sh : gen.rows(24, sizeof(__nv_bfloat16), kkbench::kSoftmaxRange))
    add_softmax_case<__nv_bfloat16>(sh, false);
  for (const Shape& sh : gen.rows(12, sizeof(float), kkbench::kSoftmaxRange))
    add_softmax_case<float>(sh, true);
  for (const Shape& sh : gen.rows(12, sizeof(__nv_bfloat16), kkbench::kSoftmaxRange))
    add_softmax_case<__nv_bfloat16>(sh, true);
}

// The backward's generated shapes: the forward's generator and range, their own stream (so the
// forward's shapes do not move).
KKBENCH_GENERATED("softmax_backward", gen) {
  for (const Shape& sh : gen.rows(12, sizeof(float), kkbench::kSoftmaxRange))
    add_backward_case<float>(sh, false);
  for (const Shape& sh : gen.rows(12, sizeof(__nv_bfloat16), kkbench::kSoftmaxRange))
    add_backward_case<__nv_bfloat16>(sh, false);
  for (const Shape& sh : gen.rows(6, sizeof(float), kkbench::kSoftmaxRange))
    add_backward_case<float>(sh, true);
  for (const Shape& sh : gen.rows(6, sizeof(__nv_bfloat16), kkbench::kSoftmaxRange))
    add_backward_case<__nv_bfloat16>(sh, true);
}

}  // namespace
