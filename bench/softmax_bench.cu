// SPDX-License-Identifier: Apache-2.0
// softmax (f32, f16, bf16) and log_softmax (f32, bf16) over the listed shapes of issue 14
// and generated ones (bench/shapes.h; no baseline). bytes = rows * cols * sizeof(T) read + the
// same written. Each case is verified once on sampled rows (up to 16, at most ~8M elements
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

}  // namespace
