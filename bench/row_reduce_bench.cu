// row_reduce.sum over rows x cols f32 matrices: kernelkit::row_sum, CUB's
// DeviceSegmentedReduce::Sum (one block per segment; offsets array r * cols), and every
// row-ladder version. bytes = rows * cols * 4 read + rows * 4 written. Every input is at
// least 128 MB (> 50 MB L2), so each launch reads from HBM.
#include <cub/device/device_segmented_reduce.cuh>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.cuh"
#include "kernelkit/reduce/row_reduce.cuh"
#include "ladder/row_reduce/registry.cuh"

namespace {

struct Shape {
  int64_t rows, cols;
};
const Shape kShapes[] = {{1048576, 32}, {262144, 128}, {65536, 1024}, {4096, 16384}, {64, 4194304}};

// Checks out (rows sums) on 64 sampled rows against float64 sums of those rows (copied
// row by row, so the 1 GB inputs are not downloaded whole).
void verify_rows(const std::string& what, const float* d_in, const float* d_out, int64_t rows,
                 int64_t cols) {
  std::vector<double> got, ref;
  std::vector<float> row(cols), out(rows);
  BENCH_CUDA(cudaMemcpy(out.data(), d_out, rows * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t r : kkbench::sample_indices(rows, 64)) {
    BENCH_CUDA(
        cudaMemcpy(row.data(), d_in + r * cols, cols * sizeof(float), cudaMemcpyDeviceToHost));
    double s = 0;
    for (float x : row)
      s += x;
    ref.push_back(s);
    got.push_back(out[r]);
  }
  // |error| of an f32 sum of values in [-1, 1) stays far below 1e-6 * cols
  kkbench::verify(what, got, ref, 1e-5, 1e-6 * double(cols));
}

std::string case_name(const std::string& impl, const Shape& s) {
  return "row_reduce.sum/" + impl + "/f32/" + kkbench::dims(s.rows, s.cols);
}

double case_bytes(const Shape& s) {
  return double(s.rows) * double(s.cols) * sizeof(float) + double(s.rows) * sizeof(float);
}

// kernelkit::row_sum or a ladder version (same signature).
void add_fn_case(const std::string& impl, Shape s,
                 kernelkit::ladder::row_reduce::RowSumFn<float> fn) {
  kkbench::add_case(case_name(impl, s), case_bytes(s), 0,
                    [s, fn, impl](cudaStream_t stream) -> kkbench::Launch {
                      auto in = kkbench::random_array<float>(s.rows * s.cols, 42);
                      auto out = kkbench::poisoned_array<float>(s.rows);
                      kkbench::Launch launch = [in, out, s, fn](cudaStream_t st) {
                        BENCH_CUDA(fn(in->p, s.rows, s.cols, out->p, st));
                      };
                      launch(stream);
                      BENCH_CUDA(cudaStreamSynchronize(stream));
                      verify_rows(case_name(impl, s), in->p, out->p, s.rows, s.cols);
                      return launch;
                    });
}

cudaError_t kk_row_sum(const float* in, int64_t rows, int64_t cols, float* out,
                       cudaStream_t stream) {
  return kernelkit::row_sum(in, rows, cols, out, stream);
}

void add_cub_case(Shape s) {
  kkbench::add_case(
      case_name("cub", s), case_bytes(s), 0, [s](cudaStream_t stream) -> kkbench::Launch {
        auto in = kkbench::random_array<float>(s.rows * s.cols, 42);
        auto out = kkbench::poisoned_array<float>(s.rows);
        // segment r is [offsets[r], offsets[r + 1]); every shape here has < 2^31 elements
        if (s.rows * s.cols > INT32_MAX) throw std::runtime_error("cub case: int offsets overflow");
        std::vector<int> h_offsets(s.rows + 1);
        for (int64_t r = 0; r <= s.rows; ++r)
          h_offsets[r] = static_cast<int>(r * s.cols);
        auto offsets = std::make_shared<kkbench::DeviceArray<int>>(h_offsets.size());
        // On the case's stream and waited for: a plain cudaMemcpy from pageable memory runs
        // on the legacy stream and may return before its DMA lands, and the harness stream
        // is non-blocking, so CUB could read offsets not yet written (it did at 65536x1024:
        // segment 0 read as empty, sum 0).
        BENCH_CUDA(cudaMemcpyAsync(offsets->p, h_offsets.data(), h_offsets.size() * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
        BENCH_CUDA(cudaStreamSynchronize(stream));
        size_t temp_bytes = 0;
        BENCH_CUDA(cub::DeviceSegmentedReduce::Sum(nullptr, temp_bytes, in->p, out->p,
                                                   static_cast<int>(s.rows), offsets->p,
                                                   offsets->p + 1, stream));
        auto temp = std::make_shared<kkbench::DeviceArray<char>>(std::max<size_t>(temp_bytes, 1));
        kkbench::Launch launch = [in, out, offsets, temp, temp_bytes, s](cudaStream_t st) {
          size_t bytes = temp_bytes;
          BENCH_CUDA(cub::DeviceSegmentedReduce::Sum(temp->p, bytes, in->p, out->p,
                                                     static_cast<int>(s.rows), offsets->p,
                                                     offsets->p + 1, st));
        };
        launch(stream);
        BENCH_CUDA(cudaStreamSynchronize(stream));
        verify_rows(case_name("cub", s), in->p, out->p, s.rows, s.cols);
        return launch;
      });
}

KKBENCH_CASES {
  for (const Shape& s : kShapes) {
    add_fn_case("kernelkit", s, &kk_row_sum);
    add_cub_case(s);
  }
  // the ladder: impl "ladder.v<k>_<name>" (registry names without the "row_" prefix)
  for (const auto& e : kernelkit::ladder::row_reduce::row_ladder<float>()) {
    const std::string name = e.name;
    if (name.rfind("row_ladder.", 0) != 0) continue;  // the library itself is added above
    for (const Shape& s : kShapes)
      add_fn_case(name.substr(4), s, e.fn);
  }
}

}  // namespace
