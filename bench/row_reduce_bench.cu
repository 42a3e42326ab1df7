// SPDX-License-Identifier: Apache-2.0
// row_reduce.sum over rows x cols matrices: f32 against CUB's DeviceSegmentedReduce::Sum (one
// block per segment; offsets r * cols), and f16 / bf16 summed into float, over the listed
// shapes of issue 14 and generated ones (bench/shapes.h). bytes = rows * cols * sizeof(T)
// read + rows * sizeof(Acc) written. Each case is
// verified once on sampled rows against float64 sums of those rows.
#include <cub/device/device_segmented_reduce.cuh>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "checks.cuh"
#include "harness.cuh"
#include "shapes.h"
#include "kernelkit/reduce/row_reduce.cuh"

// row_reduce's workspace overload (`row_sum(in, rows, cols, out, workspace, workspace_bytes,
// stream)` with `row_reduce_workspace_bytes<T, Acc>(rows, cols)`) is used when the included
// library has it, else the plain call (a tree from before the overload, through
// KERNELKIT_BENCH_INCLUDE_OVERRIDE). The name is called unqualified from a namespace with a
// using-directive for kernelkit; the never-viable global template of the same name keeps
// it a template name (for the explicit template arguments) when kernelkit has none.
struct KkBenchNever;
template <typename T, typename Acc>
void row_reduce_workspace_bytes(KkBenchNever*);

namespace kkbench_detect {
using namespace kernelkit;
template <typename T, typename Acc, typename I, typename = void>
struct HasRowWorkspace : std::false_type {};
template <typename T, typename Acc, typename I>
struct HasRowWorkspace<T, Acc, I,
                       std::void_t<decltype(size_t{row_reduce_workspace_bytes<T, Acc>(
                           std::declval<I>(), std::declval<I>())})>> : std::true_type {};
template <typename T, typename Acc, typename I>
size_t row_workspace(I rows, I cols) {
  return row_reduce_workspace_bytes<T, Acc>(rows, cols);
}
}  // namespace kkbench_detect

namespace {

// The adapter: every call this file makes into kernelkit goes through the two functions
// below, so an API change is one line here (bench/NOTES.md "Timing").
template <typename T, typename Acc, typename I = int64_t>
size_t kk_row_sum_workspace_bytes(I rows, I cols) {
  if constexpr (kkbench_detect::HasRowWorkspace<T, Acc, I>::value) {
    return kkbench_detect::row_workspace<T, Acc>(rows, cols);
  } else {
    return 0;
  }
}
template <typename T, typename Acc, typename I = int64_t>
cudaError_t kk_row_sum(const T* in, I rows, I cols, Acc* out, void* ws, size_t ws_bytes,
                       cudaStream_t s) {
  if constexpr (kkbench_detect::HasRowWorkspace<T, Acc, I>::value) {
    return kernelkit::row_sum(in, rows, cols, out, ws, ws_bytes, s);
  } else {
    return kernelkit::row_sum(in, rows, cols, out, s);
  }
}

using Shape = kkbench::RowsShape;

const Shape kF32Shapes[] = {
    {33554432, 1}, {16777216, 2}, {11184811, 3}, {6710886, 5},  {4194304, 8}, {2097152, 16},
    {699051, 48},  {335544, 100}, {100764, 333}, {33554, 1000}, {8192, 4096}, {3355, 10000},
    {512, 65536},  {32, 1048576}, {1, 33554432}, {2, 16777216}, {5, 6710886}};
const Shape kHalfShapes[] = {{1048576, 32}, {32768, 1024}, {8192, 4096}, {4, 8388608}};

template <typename T>
kkbench::Traffic case_traffic(const Shape& s, size_t acc_bytes) {
  return {double(s.rows) * double(s.cols) * sizeof(T), double(s.rows) * acc_bytes};
}

template <typename T, typename Acc>
void add_kernelkit_case(Shape s) {
  const std::string name = kkbench::case_name<T>("row_reduce.sum", "kernelkit", s.name());
  kkbench::add_case(name, case_traffic<T>(s, sizeof(Acc)), 0, [s, name](cudaStream_t stream) {
    auto in = kkbench::random_array<T>(size_t(s.rows * s.cols + s.offset), 42);
    auto out = kkbench::poisoned_array<Acc>(size_t(s.rows));
    auto ws = kkbench::zeroed_workspace(kk_row_sum_workspace_bytes<T, Acc>(s.rows, s.cols));
    kkbench::Launch launch = [in, out, ws, s](cudaStream_t st) {
      BENCH_CUDA(kk_row_sum(in->p + s.offset, s.rows, s.cols, out->p, ws->p, ws->n, st));
    };
    launch(stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    kkbench::check_row_sums(name, in->p + s.offset, out->p, s.rows, s.cols);
    return launch;
  });
}

void add_cub_case(Shape s) {
  const std::string name = kkbench::case_name<float>("row_reduce.sum", "cub", s.name());
  kkbench::add_case(name, case_traffic<float>(s, sizeof(float)), 0, [s, name](cudaStream_t stream) {
    // segment r is [offsets[r], offsets[r + 1]); every shape here has < 2^31 elements
    if (s.rows * s.cols > INT_MAX) throw std::runtime_error(name + ": int offsets overflow");
    auto in = kkbench::random_array<float>(size_t(s.rows * s.cols + s.offset), 42);
    auto out = kkbench::poisoned_array<float>(size_t(s.rows));
    std::vector<int> h_offsets(s.rows + 1);
    for (int64_t r = 0; r <= s.rows; ++r)
      h_offsets[r] = static_cast<int>(r * s.cols);
    auto offsets = std::make_shared<kkbench::DeviceArray<int>>(h_offsets.size());
    // On the case's stream and waited for: a plain cudaMemcpy from pageable memory runs on
    // the legacy stream and may return before its DMA lands, and the harness stream is
    // non-blocking, so CUB could read offsets not yet written (it did once: row 0 summed to 0).
    BENCH_CUDA(cudaMemcpyAsync(offsets->p, h_offsets.data(), h_offsets.size() * sizeof(int),
                               cudaMemcpyHostToDevice, stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    size_t temp_bytes = 0;
    BENCH_CUDA(cub::DeviceSegmentedReduce::Sum(nullptr, temp_bytes, in->p, out->p,
                                               static_cast<int>(s.rows), offsets->p, offsets->p + 1,
                                               stream));
    auto temp = kkbench::zeroed_workspace(temp_bytes);
    kkbench::Launch launch = [in, out, offsets, temp, temp_bytes, s](cudaStream_t st) {
      size_t bytes = temp_bytes;
      BENCH_CUDA(cub::DeviceSegmentedReduce::Sum(temp->p, bytes, in->p + s.offset, out->p,
                                                 static_cast<int>(s.rows), offsets->p,
                                                 offsets->p + 1, st));
    };
    launch(stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    kkbench::check_row_sums(name, in->p + s.offset, out->p, s.rows, s.cols);
    return launch;
  });
}

KKBENCH_CASES {
  for (const Shape& s : kF32Shapes) {
    add_kernelkit_case<float, float>(s);
    add_cub_case(s);
  }
  for (const Shape& s : kHalfShapes)
    add_kernelkit_case<__half, float>(s);
  for (const Shape& s : kHalfShapes)
    add_kernelkit_case<__nv_bfloat16, float>(s);
}

KKBENCH_GENERATED("row_reduce", gen) {
  for (const Shape& s : gen.rows(24, sizeof(float), kkbench::kRowReduceRange)) {
    add_kernelkit_case<float, float>(s);
    add_cub_case(s);
  }
  for (const Shape& s : gen.rows(12, sizeof(__half), kkbench::kRowReduceRange))
    add_kernelkit_case<__half, float>(s);
  for (const Shape& s : gen.rows(12, sizeof(__nv_bfloat16), kkbench::kRowReduceRange))
    add_kernelkit_case<__nv_bfloat16, float>(s);
}

}  // namespace
