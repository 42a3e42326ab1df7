// SPDX-License-Identifier: Apache-2.0
// transpose over the listed shapes of issue 14 and generated ones (bench/shapes.h; "+o": in
// and out start o elements past an aligned address): f32 against cublasSgeam (C = A^T with
// the row-major <-> column-major mapping), f16 / i8 / f64 (f64 also against cublasDgeam on
// the listed shapes); and the gather kernel forced onto the listed shapes the thin and tile
// kernels take (impl kernelkit.gather). bytes = rows x cols elements read once + written once.
// Every case is verified once on the device, every element bit for bit against its source.
#include <cublas_v2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cublas_util.cuh"
#include "checks.cuh"
#include "harness.cuh"
#include "kernelkit/transpose/transpose.cuh"
#include "shapes.h"

namespace {

// The adapter: every call this file makes into kernelkit goes through the function(s) below,
// so an API change (e.g. a workspace overload) is one line here (bench/NOTES.md "Timing").
template <typename T>
cudaError_t kk_transpose(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t s) {
  return kernelkit::transpose(in, out, rows, cols, s);
}

using Shape = kkbench::RowsShape;

const Shape kF32Shapes[] = {{2, 16777216}, {16777216, 2}, {3, 8388608},  {8388608, 3},
                            {7, 4194304},  {4194304, 7},  {32, 1048576}, {1048576, 32},
                            {100, 300000}, {300000, 100}, {1000, 33554}, {4096, 8192},
                            {8192, 8192},  {16385, 4097}};
const Shape kOtherShapes[] = {{8192, 8192}, {3, 8388608}, {8388608, 3}, {1000, 33554}};

using Op = std::function<void(const void* in, void* out, cudaStream_t s)>;

template <typename T>
void add_transpose_case(const std::string& impl, Shape sh, Op op) {
  const std::string name = kkbench::case_name<T>("transpose", impl, sh.name());
  const double bytes = double(sh.rows) * double(sh.cols) * sizeof(T);
  kkbench::add_case(name, {bytes, bytes}, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(sh.rows * sh.cols + sh.offset);
    auto in = std::is_integral_v<T> ? kkbench::random_array<T>(n, 42, -100.0, 100.0)
                                    : kkbench::random_array<T>(n, 42);
    auto out = kkbench::poisoned_array<T>(n);
    const int64_t off = sh.offset;
    auto launch = [in, out, op, off](cudaStream_t st) { op(in->p + off, out->p + off, st); };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    kkbench::check_transpose(name, in->p + off, out->p + off, sh.rows, sh.cols);
    return launch;
  });
}

template <typename T>
Op library_op(Shape sh) {
  return [sh](const void* in, void* out, cudaStream_t st) {
    BENCH_CUDA(kk_transpose(static_cast<const T*>(in), static_cast<T*>(out), sh.rows, sh.cols, st));
  };
}

// The gather kernel forced onto a shape the plan sends to another kernel (impl
// "kernelkit.gather", outside the goals): whether the tile and thin kernels keep their place, 3 %
// ahead of it on their shapes (bench/NOTES.md, transpose). Its mode and tiles as the plan would
// choose them for the shape (cudaMalloc'd buffers: aligned).
template <typename T>
Op gather_op(Shape sh) {
  return [sh](const void* in, void* out, cudaStream_t st) {
    kernelkit::DeviceInfo d;
    BENCH_CUDA(kernelkit::current_device_info(&d));
    kernelkit::TransposePlan p;
    p.path = kernelkit::TransposePath::kGather;
    p.elem_bytes = sizeof(T);
    p.chunk_bytes = 16;
    p.flat_out = kernelkit::detail::transpose_gather_flat_out(sh.rows, sizeof(T));
    p.gather.flat_in = sh.cols <= 64;
    p = kernelkit::detail::finish_transpose_plan(p, sh.rows, sh.cols, d);
    kernelkit::detail::transpose_set_order(
        &p, kernelkit::detail::transpose_col_order(p, sh.rows, sh.cols, d));
    BENCH_CUDA(kernelkit::launch_transpose(p, static_cast<const T*>(in), static_cast<T*>(out),
                                           sh.rows, sh.cols, st));
  };
}

// Row-major in (rows x cols) is column-major A (cols x rows, lda = cols); row-major out
// (cols x rows) is column-major C (rows x cols, ldc = rows); C = 1 * A^T + 0 * C (B = C,
// ldb = ldc, transb = N: cuBLAS's documented in-place form, B unread with beta = 0).
template <typename T>
Op cublas_geam(Shape sh) {
  return [sh](const void* in, void* out, cudaStream_t st) {
    cublasHandle_t h = kkbench::cublas();
    BENCH_CUBLAS(cublasSetStream(h, st));
    const int m = static_cast<int>(sh.rows), n = static_cast<int>(sh.cols);
    const T alpha = 1, beta = 0;
    T* c = static_cast<T*>(out);
    if constexpr (std::is_same_v<T, float>) {
      BENCH_CUBLAS(cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &alpha, static_cast<const T*>(in),
                               n, &beta, c, m, c, m));
    } else {
      BENCH_CUBLAS(cublasDgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &alpha, static_cast<const T*>(in),
                               n, &beta, c, m, c, m));
    }
  };
}

KKBENCH_CASES {
  for (const Shape& sh : kF32Shapes) {
    add_transpose_case<float>("kernelkit", sh, library_op<float>(sh));
    add_transpose_case<float>("cublas", sh, cublas_geam<float>(sh));
  }
  for (const Shape& sh : kOtherShapes)
    add_transpose_case<__half>("kernelkit", sh, library_op<__half>(sh));
  for (const Shape& sh : kOtherShapes)
    add_transpose_case<int8_t>("kernelkit", sh, library_op<int8_t>(sh));
  for (const Shape& sh : kOtherShapes) {
    add_transpose_case<double>("kernelkit", sh, library_op<double>(sh));
    add_transpose_case<double>("cublas", sh, cublas_geam<double>(sh));
  }
  // The gather kernel on the thin kernels' shapes (2, 3, 7 rows or columns) and the tile
  // kernel's (squares, 32 / 100 rows or columns).
  for (const Shape& sh : kF32Shapes)
    if (sh.rows != 1000 && sh.rows != 16385 && sh.rows != 4096)
      add_transpose_case<float>("kernelkit.gather", sh, gather_op<float>(sh));
  for (const Shape& sh : kOtherShapes)
    if (sh.rows != 1000) {
      add_transpose_case<__half>("kernelkit.gather", sh, gather_op<__half>(sh));
      add_transpose_case<int8_t>("kernelkit.gather", sh, gather_op<int8_t>(sh));
      add_transpose_case<double>("kernelkit.gather", sh, gather_op<double>(sh));
    }
  // Small thin shapes (the thin kernels' tiles give them 1.3 waves of blocks): the same shapes
  // as seed 2's generated f32 5x132379, f16 8x352263 and i8 5x816271, whose library cases run
  // the thin kernels in the same run.
  add_transpose_case<float>("kernelkit.gather", {5, 132379}, gather_op<float>({5, 132379}));
  add_transpose_case<__half>("kernelkit.gather", {8, 352263}, gather_op<__half>({8, 352263}));
  add_transpose_case<int8_t>("kernelkit.gather", {5, 816271}, gather_op<int8_t>({5, 816271}));
}

KKBENCH_GENERATED("transpose", gen) {
  for (const Shape& sh : gen.rows(24, sizeof(float), kkbench::kTransposeRange)) {
    add_transpose_case<float>("kernelkit", sh, library_op<float>(sh));
    add_transpose_case<float>("cublas", sh, cublas_geam<float>(sh));
  }
  for (const Shape& sh : gen.rows(12, sizeof(__half), kkbench::kTransposeRange))
    add_transpose_case<__half>("kernelkit", sh, library_op<__half>(sh));
  for (const Shape& sh : gen.rows(12, sizeof(int8_t), kkbench::kTransposeRange))
    add_transpose_case<int8_t>("kernelkit", sh, library_op<int8_t>(sh));
  for (const Shape& sh : gen.rows(12, sizeof(double), kkbench::kTransposeRange))
    add_transpose_case<double>("kernelkit", sh, library_op<double>(sh));
}

}  // namespace
