// SPDX-License-Identifier: Apache-2.0
// col_reduce.sum over (outer, n, inner) row-major inputs (out[o, i] = sum over k of
// in[o, k, i]), f32 and bf16 summed into float, over listed shapes (bias gradients x.sum(0),
// channel sums of NCHW-like layouts, thin and decode-like shapes) and generated ones; and
// row_reduce.sum over strided rows (ld = cols + pad). bytes = the input read once + the output
// written once. No vendor baseline: CUB's DeviceSegmentedReduce takes contiguous segments (or
// iterators, one thread block per segment: a strided column per block would read one element
// per row at a stride, not the op), and DeviceReduce::ReduceByKey needs keys in input order;
// none reduces columns in place.
//
// Generated shapes come from the generator every row op draws from (bench/shapes.h,
// ShapeGen::rows with row_reduce's range, on this op's own stream): a draw of rows x cols
// (+ offset) is the x.sum(0) of that matrix, (1, rows, cols); every third draw folds its rows
// into an outer axis, (rows / m, m, cols) with m = 1 + rows % 61, the reduction over the middle
// of a 3-D tensor. Each case is verified once on sampled outputs against float64 sums.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "checks.cuh"
#include "harness.cuh"
#include "kernelkit/reduce/col_reduce.cuh"
#include "shapes.h"

namespace {

struct ColShape {
  int64_t outer = 1, n = 1, inner = 1, offset = 0;
  std::string name() const {
    return std::to_string(outer) + "x" + std::to_string(n) + "x" + std::to_string(inner) +
           (offset ? "+" + std::to_string(offset) : "");
  }
};

// Sampled outputs (2..32) against float64 sums of their columns (a strided copy each).
template <typename T, typename Acc>
void check_col_sums(const std::string& what, const T* d_in, const Acc* d_out, const ColShape& s) {
  const int64_t outputs = s.outer * s.inner;
  std::vector<double> got, ref;
  std::vector<T> col(s.n);
  std::vector<Acc> one(1);
  // up to 32 columns, ~4M elements read back in all (a column is one strided copy)
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(s.n, 1), 2, 32);
  for (size_t j : kkbench::sample_indices(size_t(outputs), size_t(count))) {
    const int64_t o = int64_t(j) / s.inner, i = int64_t(j) % s.inner;
    BENCH_CUDA(cudaMemcpy2D(col.data(), sizeof(T), d_in + o * s.n * s.inner + i,
                            s.inner * sizeof(T), sizeof(T), s.n, cudaMemcpyDeviceToHost));
    double sum = 0;
    for (const T& x : col)
      sum += kernelkit::convert<double>(x);
    ref.push_back(sum);
    BENCH_CUDA(cudaMemcpy(one.data(), d_out + j, sizeof(Acc), cudaMemcpyDeviceToHost));
    got.push_back(kernelkit::convert<double>(one[0]));
  }
  kkbench::verify(what, got, ref, 1e-5, 1e-6 * double(s.n));
}

template <typename T, typename Acc>
void add_col_case(const ColShape& s) {
  const std::string name = kkbench::case_name<T>("col_reduce.sum", "kernelkit", s.name());
  const kkbench::Traffic traffic{double(s.outer) * double(s.n) * double(s.inner) * sizeof(T),
                                 double(s.outer) * double(s.inner) * sizeof(Acc)};
  kkbench::add_case(name, traffic, 0, [s, name](cudaStream_t stream) {
    auto in = kkbench::random_array<T>(size_t(s.outer * s.n * s.inner + s.offset), 42);
    auto out = kkbench::poisoned_array<Acc>(size_t(s.outer * s.inner));
    auto ws = kkbench::zeroed_workspace(
        kernelkit::col_reduce_workspace_bytes<T, Acc>(s.outer, s.n, s.inner));
    kkbench::Launch launch = [in, out, ws, s](cudaStream_t st) {
      BENCH_CUDA(
          kernelkit::col_sum(in->p + s.offset, s.outer, s.n, s.inner, out->p, ws->p, ws->n, st));
    };
    launch(stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    check_col_sums(name, in->p + s.offset, out->p, s);
    return launch;
  });
}

// row_reduce.sum of rows x cols at stride ld = cols + pad (shape "RxC_ldL").
template <typename T, typename Acc>
void add_strided_row_case(int64_t rows, int64_t cols, int64_t pad) {
  const int64_t ld = cols + pad;
  const std::string shape =
      std::to_string(rows) + "x" + std::to_string(cols) + "_ld" + std::to_string(ld);
  const std::string name = kkbench::case_name<T>("row_reduce.sum", "kernelkit", shape);
  const kkbench::Traffic traffic{double(rows) * double(cols) * sizeof(T),
                                 double(rows) * sizeof(Acc)};
  kkbench::add_case(name, traffic, 0, [rows, cols, ld, name](cudaStream_t stream) {
    auto in = kkbench::random_array<T>(size_t(rows * ld), 42);
    auto out = kkbench::poisoned_array<Acc>(size_t(rows));
    auto ws = kkbench::zeroed_workspace(kernelkit::row_reduce_workspace_bytes<T, Acc>(rows, cols));
    kkbench::Launch launch = [in, out, ws, rows, cols, ld](cudaStream_t st) {
      BENCH_CUDA(kernelkit::row_sum(in->p, rows, cols, ld, out->p, ws->p, ws->n, st));
    };
    launch(stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    // the sampled rows' sums: the strided rows are the columns 0..cols of an (rows, ld) matrix
    std::vector<double> got, ref;
    std::vector<T> row(cols);
    std::vector<Acc> one(1);
    for (size_t r : kkbench::sample_indices(size_t(rows), 16)) {
      BENCH_CUDA(cudaMemcpy(row.data(), in->p + r * ld, cols * sizeof(T), cudaMemcpyDeviceToHost));
      double s = 0;
      for (const T& x : row)
        s += kernelkit::convert<double>(x);
      ref.push_back(s);
      BENCH_CUDA(cudaMemcpy(one.data(), out->p + r, sizeof(Acc), cudaMemcpyDeviceToHost));
      got.push_back(kernelkit::convert<double>(one[0]));
    }
    kkbench::verify(name, got, ref, 1e-5, 1e-6 * double(cols));
    return launch;
  });
}

// Bias gradients x.sum(0) of (tokens, hidden) activations, a wide and a tall one, channel
// sums over C of NCHW (N=32, C=256, HW=56x56), a 3-D middle axis, thin columns (inner 2..17),
// a decode-like (16, 4096, 1) that is a row reduction, and misaligned starts.
const ColShape kListed[] = {{1, 8192, 4096, 0},  {1, 65536, 1024, 0}, {1, 4096, 16384, 0},
                            {32, 256, 3136, 0},  {64, 512, 768, 0},   {1, 1048576, 4, 0},
                            {1, 1048576, 17, 0}, {16, 4096, 1, 0},    {1, 8192, 4095, 1},
                            {8, 4099, 1031, 3}};

KKBENCH_CASES {
  for (const ColShape& s : kListed) {
    add_col_case<float, float>(s);
    add_col_case<__nv_bfloat16, float>(s);
  }
  add_strided_row_case<float, float>(8192, 4096, 4);
  add_strided_row_case<float, float>(65536, 1000, 24);
  add_strided_row_case<float, float>(32, 128000, 1);
  add_strided_row_case<__nv_bfloat16, float>(8192, 4096, 8);
}

std::vector<ColShape> col_shapes(kkbench::ShapeGen& gen, int count, int elem_bytes) {
  std::vector<ColShape> shapes;
  int i = 0;
  for (const kkbench::RowsShape& r : gen.rows(count, elem_bytes, kkbench::kRowReduceRange)) {
    ColShape s{1, r.rows, r.cols, r.offset};
    if (i++ % 3 == 2) {
      const int64_t m = 1 + r.rows % 61;
      if (r.rows / m >= 1) s = {m, r.rows / m, r.cols, r.offset};
    }
    shapes.push_back(s);
  }
  return shapes;
}

KKBENCH_GENERATED("col_reduce", gen) {
  for (const ColShape& s : col_shapes(gen, 24, sizeof(float)))
    add_col_case<float, float>(s);
  for (const ColShape& s : col_shapes(gen, 12, sizeof(__nv_bfloat16)))
    add_col_case<__nv_bfloat16, float>(s);
}

}  // namespace
