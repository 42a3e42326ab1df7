// SPDX-License-Identifier: Apache-2.0
// The one-time checks every case runs before it is timed (library, baseline and ladder cases
// of an op share them): each compares the case's output with a float64 reference at sampled
// rows / elements (all of them where that is cheap) and throws std::runtime_error when one is
// off, so the case is reported as an error instead of being timed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.cuh"
#include "kernelkit/blas/blas.cuh"
#include "kernelkit/norm/norm_plan.cuh"

namespace kkbench {

// ---- elementwise: out = a + b (the ladder's op), at 2048 sampled indices ----
template <typename T>
void check_add(const std::string& what, const T* a, const T* b, const T* out, int64_t n,
               double rtol) {
  const auto idx = sample_indices(size_t(n), 2048);
  const auto ha = to_doubles(gather(a, idx)), hb = to_doubles(gather(b, idx));
  std::vector<double> want(idx.size());
  for (size_t j = 0; j < idx.size(); ++j)
    want[j] = kernelkit::convert<double>(kernelkit::convert<T>(ha[j] + hb[j]));
  verify(what, to_doubles(gather(out, idx)), want, rtol);
}

// ---- reduce: one sum of in[0..n) ----
// exact for integers; floats within rtol of the sum, or (rtol == 0) within
// abs_tol * sum |x|
template <typename T, typename Acc>
void check_sum(const std::string& what, const T* in, int64_t n, const Acc* out, double rtol,
               double abs_tol) {
  const Sums ref = sums_f64(in, n);
  Acc got;
  BENCH_CUDA(cudaMemcpy(&got, out, sizeof(Acc), cudaMemcpyDeviceToHost));
  if constexpr (std::is_integral_v<Acc>) {
    if (static_cast<int64_t>(got) != ref.exact)
      throw std::runtime_error(what + ": got " + std::to_string(static_cast<int64_t>(got)) +
                               ", want " + std::to_string(ref.exact));
  } else {
    verify(what, {kernelkit::convert<double>(got)}, {ref.sum}, rtol,
           rtol > 0 ? 0.0 : abs_tol * ref.abs_sum);
  }
}

// ---- row_reduce: out[r] = sum of row r, on sampled rows (up to 64, ~8M elements read) ----
template <typename T, typename Acc>
void check_row_sums(const std::string& what, const T* d_in, const Acc* d_out, int64_t rows,
                    int64_t cols) {
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 23) / std::max<int64_t>(cols, 1), 1, 64);
  const auto idx = sample_indices(size_t(rows), size_t(count));
  const auto got = to_doubles(gather(d_out, idx));
  std::vector<double> ref;
  std::vector<T> row(cols);
  for (size_t r : idx) {
    BENCH_CUDA(cudaMemcpy(row.data(), d_in + r * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
    double s = 0;
    for (const T& x : row)
      s += kernelkit::convert<double>(x);
    ref.push_back(s);
  }
  // |error| of a float sum of values in [-1, 1) stays far below 1e-6 * cols
  verify(what, got, ref, 1e-5, 1e-6 * double(cols));
}

// ---- softmax / log_softmax, on sampled rows (up to 16, ~8M elements read) ----
// (ld_in / ld_out: the rows' strides in elements; 0: cols)
template <typename T>
void check_softmax(const std::string& what, const T* d_in, const T* d_out, int64_t rows,
                   int64_t cols, bool log, int64_t ld_in = 0, int64_t ld_out = 0) {
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 23) / cols, 2, 16);
  if (ld_in == 0) ld_in = cols;
  if (ld_out == 0) ld_out = cols;
  std::vector<double> got, ref;
  std::vector<T> xin(cols), xout(cols);
  for (size_t r : sample_indices(size_t(rows), size_t(count))) {
    BENCH_CUDA(cudaMemcpy(xin.data(), d_in + r * ld_in, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(
        cudaMemcpy(xout.data(), d_out + r * ld_out, cols * sizeof(T), cudaMemcpyDeviceToHost));
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, kernelkit::convert<double>(xin[c]));
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(kernelkit::convert<double>(xin[c]) - m);
    for (size_t c : sample_indices(size_t(cols), 256)) {
      const double x = kernelkit::convert<double>(xin[c]);
      ref.push_back(log ? (x - m) - std::log(s) : std::exp(x - m) / s);
      got.push_back(kernelkit::convert<double>(xout[c]));
    }
  }
  double rtol = 1.6e-2;  // bf16
  if constexpr (std::is_same_v<T, float>) rtol = 1e-4;
  if constexpr (std::is_same_v<T, __half>) rtol = 2e-3;
  // f16 outputs below 2^-14 are subnormal: their spacing is 2^-24 absolute
  const double atol = log ? 1e-4 : (std::is_same_v<T, __half> ? 0x1p-24 : 1e-9);
  verify(what, got, ref, rtol, atol);
}

// ---- rms_norm, layer_norm, add_rms_norm: y (and x + residual) of sampled rows ----
// against float64, from the device's x, residual, weight and bias (eps as the cases pass it)
template <typename T>
void check_norm(const std::string& what, kernelkit::NormKind kind, const T* x, const T* res,
                const T* w, const T* b, const T* y, const T* sum, int64_t rows, int64_t cols) {
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 22) / cols, 2, 16);
  const double eps = kind == kernelkit::NormKind::kLayer ? 1e-5 : 1e-6;
  std::vector<T> hx(cols), hr(cols), hw(cols), hb(cols), hy(cols), hs(cols);
  BENCH_CUDA(cudaMemcpy(hw.data(), w, cols * sizeof(T), cudaMemcpyDeviceToHost));
  if (b) BENCH_CUDA(cudaMemcpy(hb.data(), b, cols * sizeof(T), cudaMemcpyDeviceToHost));
  std::vector<double> got, ref, row(cols);
  for (size_t r : sample_indices(size_t(rows), size_t(count))) {
    const int64_t o = int64_t(r) * cols;
    BENCH_CUDA(cudaMemcpy(hx.data(), x + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(hy.data(), y + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    if (kind == kernelkit::NormKind::kAddRms) {
      BENCH_CUDA(cudaMemcpy(hr.data(), res + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
      BENCH_CUDA(cudaMemcpy(hs.data(), sum + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    }
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = kernelkit::convert<double>(hx[c]);
      if (kind == kernelkit::NormKind::kAddRms) {
        const T s = kernelkit::convert<T>(kernelkit::convert<float>(hx[c]) +
                                          kernelkit::convert<float>(hr[c]));
        row[c] = kernelkit::convert<double>(s);
        got.push_back(kernelkit::convert<double>(hs[c]));
        ref.push_back(row[c]);
      }
      mean += row[c];
    }
    mean = kind == kernelkit::NormKind::kLayer ? mean / double(cols) : 0.0;
    for (int64_t c = 0; c < cols; ++c)
      var += (row[c] - mean) * (row[c] - mean);
    const double rstd = 1.0 / std::sqrt(var / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) {
      double v = (row[c] - mean) * rstd * kernelkit::convert<double>(hw[c]);
      if (b) v += kernelkit::convert<double>(hb[c]);
      ref.push_back(v);
      got.push_back(kernelkit::convert<double>(hy[c]));
    }
  }
  const double rtol = std::is_same_v<T, float> ? 1e-4 : 1.6e-2;
  verify(what, got, ref, rtol, std::is_same_v<T, float> ? 1e-5 : 1e-2);
}

// ---- rms_norm_backward: dx of sampled rows, dweight at sampled columns (over every row) ----
template <typename T>
void check_rms_norm_backward(const std::string& what, const T* dy, const T* x, const T* w,
                             const float* rstd, const T* dx, const T* dw, int64_t rows,
                             int64_t cols) {
  std::vector<T> hdy(cols), hx(cols), hdx(cols), hw(cols);
  std::vector<float> hr(rows);
  BENCH_CUDA(cudaMemcpy(hw.data(), w, cols * sizeof(T), cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(hr.data(), rstd, rows * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<double> got, ref;
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 22) / cols, 2, 16);
  for (size_t r : sample_indices(size_t(rows), size_t(count))) {
    const int64_t o = int64_t(r) * cols;
    BENCH_CUDA(cudaMemcpy(hdy.data(), dy + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(hx.data(), x + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(hdx.data(), dx + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    double s = 0;
    for (int64_t c = 0; c < cols; ++c)
      s += kernelkit::convert<double>(hdy[c]) * kernelkit::convert<double>(hw[c]) *
           kernelkit::convert<double>(hx[c]);
    const double rs = hr[r];
    for (size_t c : sample_indices(size_t(cols), 256)) {
      const double g = kernelkit::convert<double>(hdy[c]) * kernelkit::convert<double>(hw[c]);
      ref.push_back(rs * g - kernelkit::convert<double>(hx[c]) * rs * rs * rs * s / double(cols));
      got.push_back(kernelkit::convert<double>(hdx[c]));
    }
  }
  // dweight at up to 8 columns, each summed over every row (strided gathers)
  for (size_t c : sample_indices(size_t(cols), rows * cols > (int64_t{1} << 26) ? 2 : 8)) {
    std::vector<size_t> idx(rows);
    for (int64_t r = 0; r < rows; ++r)
      idx[r] = size_t(r * cols) + c;
    const auto gy = to_doubles(gather(dy, idx)), gx = to_doubles(gather(x, idx));
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r)
      acc += gy[r] * gx[r] * hr[r];
    T one;
    BENCH_CUDA(cudaMemcpy(&one, dw + c, sizeof(T), cudaMemcpyDeviceToHost));
    ref.push_back(acc);
    got.push_back(kernelkit::convert<double>(one));
  }
  const double rtol = std::is_same_v<T, float> ? 1e-4 : 1.6e-2;
  verify(what, got, ref, rtol, std::is_same_v<T, float> ? 1e-3 : 2e-2);
}

// ---- softmax_backward / log_softmax_backward, on sampled rows (up to 16, ~8M elements) ----
// dx = y (dy - sum y dy), or dy - exp(y) sum dy (dx not in place: y and dy read after the call)
template <typename T>
void check_softmax_backward(const std::string& what, const T* d_y, const T* d_dy, const T* d_dx,
                            int64_t rows, int64_t cols, bool log) {
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 23) / cols, 2, 16);
  std::vector<double> got, ref;
  std::vector<T> ys(cols), dys(cols), dxs(cols);
  double rtol = 1.6e-2;  // bf16
  if constexpr (std::is_same_v<T, float>) rtol = 1e-4;
  if constexpr (std::is_same_v<T, __half>) rtol = 2e-3;
  double atol = 0;
  for (size_t r : sample_indices(size_t(rows), size_t(count))) {
    BENCH_CUDA(cudaMemcpy(ys.data(), d_y + r * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(dys.data(), d_dy + r * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(dxs.data(), d_dx + r * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
    double s = 0, mag = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double y = kernelkit::convert<double>(ys[c]);
      const double d = kernelkit::convert<double>(dys[c]);
      s += log ? d : y * d;
      mag += std::fabs(log ? d : y * d);
    }
    // the float sum's error (a chain of cols / 64 + 64 additions), times |y| or exp(y) <= 1
    atol = std::max(atol, 1.2e-7 * (double(cols) / 64 + 64) * mag + 1e-6);
    for (size_t c : sample_indices(size_t(cols), 256)) {
      const double y = kernelkit::convert<double>(ys[c]);
      const double d = kernelkit::convert<double>(dys[c]);
      ref.push_back(log ? d - std::exp(y) * s : y * (d - s));
      got.push_back(kernelkit::convert<double>(dxs[c]));
    }
  }
  verify(what, got, ref, rtol, atol);
}

// ---- transpose: every element, bit for bit, on the device ----
namespace detail {
template <typename U>
__global__ void count_mismatches_kernel(const U* in, const U* out, int64_t rows, int64_t cols,
                                        unsigned long long* bad) {
  unsigned long long local = 0;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < rows * cols;
       o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = o / rows, r = o - c * rows;
    local += out[o] != in[r * cols + c];
  }
  if (local) atomicAdd(bad, local);
}
}  // namespace detail

template <typename T>
void check_transpose(const std::string& what, const T* in, const T* out, int64_t rows,
                     int64_t cols) {
  using U = kernelkit::bits_t<sizeof(T)>;
  auto bad = zeroed_workspace(sizeof(unsigned long long));
  auto* count = reinterpret_cast<unsigned long long*>(bad->p);
  detail::count_mismatches_kernel<U><<<2048, 256>>>(
      reinterpret_cast<const U*>(in), reinterpret_cast<const U*>(out), rows, cols, count);
  BENCH_CUDA(cudaGetLastError());
  BENCH_CUDA(cudaDeviceSynchronize());
  unsigned long long wrong = 0;
  BENCH_CUDA(cudaMemcpy(&wrong, count, sizeof(wrong), cudaMemcpyDeviceToHost));
  if (wrong != 0)
    throw std::runtime_error(what + ": " + std::to_string(wrong) + " elements misplaced");
}

// ---- gemv: y = op(A) x (alpha 1, beta 0), row-major A (m x n, lda >= n), 64 sampled outputs
inline void check_gemv(const std::string& what, kernelkit::BlasOp op, int64_t m, int64_t n,
                       const float* A, int64_t lda, const float* x, const float* y) {
  const bool N = op == kernelkit::BlasOp::N;
  const int64_t inner = N ? n : m, outs = N ? m : n;
  const auto idx = sample_indices(size_t(outs), 64);
  std::vector<Dot> dots;
  for (size_t k : idx)  // row k of A . x, or column k of A . x
    dots.push_back(N ? Dot{int64_t(k) * lda, 1, 0, 1, inner} : Dot{int64_t(k), lda, 0, 1, inner});
  // |a|, |x| <= 1: float summation error stays below inner * eps
  verify(what, to_doubles(gather(y, idx)), dots_f64(A, x, dots), 1e-5, 1.2e-7 * double(inner));
}

// ---- sgemm: C = op(A) op(B) (alpha 1, beta 0), row-major, 64 sampled elements of C ----
inline void check_sgemm(const std::string& what, kernelkit::BlasOp op_a, kernelkit::BlasOp op_b,
                        int64_t m, int64_t n, int64_t k, const float* A, int64_t lda,
                        const float* B, int64_t ldb, const float* C, int64_t ldc) {
  const bool an = op_a == kernelkit::BlasOp::N, bn = op_b == kernelkit::BlasOp::N;
  std::vector<size_t> idx;
  std::vector<Dot> dots;
  for (size_t e : sample_indices(size_t(m * n), 64)) {
    const int64_t i = int64_t(e) / n, j = int64_t(e) % n;
    idx.push_back(size_t(i * ldc + j));
    // op(A)(i, p) . op(B)(p, j)
    dots.push_back(Dot{an ? i * lda : i, an ? 1 : lda, bn ? j : j * ldb, bn ? ldb : 1, k});
  }
  // |a|, |b| <= 1: fp32 summation error ~ k u |partial sums|, far below 1e-6 k
  verify(what, to_doubles(gather(C, idx)), dots_f64(A, B, dots), 1e-5, 1e-6 * double(k));
}

}  // namespace kkbench
