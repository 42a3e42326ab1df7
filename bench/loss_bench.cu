// SPDX-License-Identifier: Apache-2.0
// cross_entropy and cross_entropy_backward (f32, bf16 logits; int64 targets; reduction mean,
// ignore_index -100, no label smoothing) over the listed shapes of issue 34 and generated ones
// (bench/shapes.h, kCrossEntropyRange; no baseline in C++: torch and Liger are timed by the
// Python benchmark). bytes = the fewest a call moves: forward, the logits and targets read once,
// lse (a float a row) and the loss written once; backward, the logits, targets, lse and dloss
// read once, dlogits written once (a separate array, at the logits' offset). Each case is
// verified once: the forward on sampled rows (loss and lse, from a reduction-none call) against
// float64, the mean against those rows' losses; the backward on sampled rows.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness.cuh"
#include "shapes.h"
#include "kernelkit/loss/cross_entropy.cuh"

namespace {

constexpr int64_t kIgnore = -100;

// The adapter: every call this file makes into kernelkit goes through the functions below, so
// an API change is one line here (bench/NOTES.md "Timing").
template <typename T>
cudaError_t kk_cross_entropy(const T* x, const int64_t* t, int64_t rows, int64_t vocab,
                             kernelkit::LossReduction red, float* loss, float* lse, void* ws,
                             size_t ws_bytes, cudaStream_t s) {
  return kernelkit::cross_entropy(x, t, rows, vocab, kIgnore, 0.f, red, loss, lse, ws, ws_bytes, s);
}
template <typename T>
cudaError_t kk_cross_entropy_backward(const T* x, const int64_t* t, const float* lse,
                                      const float* dloss, int64_t rows, int64_t vocab, T* dx,
                                      cudaStream_t s) {
  return kernelkit::cross_entropy_backward(x, t, lse, dloss, rows, vocab, kIgnore, 0.f,
                                           kernelkit::LossReduction::kMean, dx, s);
}

using Shape = kkbench::RowsShape;

const Shape kCrossEntropyShapes[] = {
    {8192, 32000}, {4096, 128256}, {1, 128256}, {16, 151936}, {32768, 50257}};

// Sampled rows of the logits: their lse and loss in float64.
template <typename T>
void check_rows(const std::string& what, const T* x, const int64_t* t, const float* loss,
                const float* lse, int64_t rows, int64_t vocab) {
  std::vector<T> row(vocab);
  std::vector<float> hl(rows), hs(rows);
  std::vector<int64_t> ht(rows);
  BENCH_CUDA(cudaMemcpy(hl.data(), loss, rows * 4, cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(hs.data(), lse, rows * 4, cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(ht.data(), t, rows * 8, cudaMemcpyDeviceToHost));
  std::vector<double> got, ref;
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 23) / vocab, 2, 16);
  for (size_t r : kkbench::sample_indices(size_t(rows), size_t(count))) {
    BENCH_CUDA(
        cudaMemcpy(row.data(), x + int64_t(r) * vocab, vocab * sizeof(T), cudaMemcpyDeviceToHost));
    double m = -INFINITY, s = 0;
    for (const T& v : row)
      m = std::max(m, kernelkit::convert<double>(v));
    for (const T& v : row)
      s += std::exp(kernelkit::convert<double>(v) - m);
    const double l = m + std::log(s);
    ref.push_back(l);
    got.push_back(hs[r]);
    ref.push_back(l - kernelkit::convert<double>(row[size_t(ht[r])]));
    got.push_back(hl[r]);
  }
  kkbench::verify(what, got, ref, std::is_same_v<T, float> ? 1e-5 : 1e-4, 1e-5);
}

template <typename T>
void add_forward_case(const Shape& sh) {
  const int64_t rows = sh.rows, vocab = sh.cols, off = sh.offset;
  const std::string name = kkbench::case_name<T>("cross_entropy", "kernelkit", sh.name());
  const double logits = double(rows) * double(vocab) * sizeof(T);
  const kkbench::Traffic traffic{logits + double(rows) * 8, double(rows) * 4 + 4};
  kkbench::add_case(name, traffic, 0, [=](cudaStream_t s) -> kkbench::Launch {
    auto x = kkbench::random_array<T>(static_cast<size_t>(rows * vocab + off), 41, -8.0, 8.0);
    auto t = kkbench::random_array<int64_t>(static_cast<size_t>(rows), 42, 0.0, double(vocab));
    auto loss = kkbench::poisoned_array<float>(static_cast<size_t>(rows));
    auto lse = kkbench::poisoned_array<float>(static_cast<size_t>(rows));
    const size_t ws_bytes = kernelkit::cross_entropy_workspace_bytes(rows, vocab);
    auto ws = kkbench::zeroed_workspace(ws_bytes);
    // the check: a reduction-none call, then the timed mean against its rows
    BENCH_CUDA(kk_cross_entropy<T>(x->p + off, t->p, rows, vocab, kernelkit::LossReduction::kNone,
                                   loss->p, lse->p, ws->p, ws_bytes, s));
    BENCH_CUDA(cudaStreamSynchronize(s));
    check_rows<T>(name, x->p + off, t->p, loss->p, lse->p, rows, vocab);
    std::vector<float> per_row(rows);
    BENCH_CUDA(cudaMemcpy(per_row.data(), loss->p, rows * 4, cudaMemcpyDeviceToHost));
    double mean = 0;
    for (float v : per_row)
      mean += v;
    mean /= double(rows);
    auto launch = [=](cudaStream_t st) {
      BENCH_CUDA(kk_cross_entropy<T>(x->p + off, t->p, rows, vocab, kernelkit::LossReduction::kMean,
                                     loss->p, lse->p, ws->p, ws_bytes, st));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    float got = 0;
    BENCH_CUDA(cudaMemcpy(&got, loss->p, 4, cudaMemcpyDeviceToHost));
    kkbench::verify(name + " mean", {double(got)}, {mean}, 1e-4);
    return launch;
  });
}

template <typename T>
void add_backward_case(const Shape& sh) {
  const int64_t rows = sh.rows, vocab = sh.cols, off = sh.offset;
  const std::string name = kkbench::case_name<T>("cross_entropy_backward", "kernelkit", sh.name());
  const double logits = double(rows) * double(vocab) * sizeof(T);
  const kkbench::Traffic traffic{logits + double(rows) * 12 + 4, logits};
  kkbench::add_case(name, traffic, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * vocab + off);
    auto x = kkbench::random_array<T>(n, 51, -8.0, 8.0);
    auto t = kkbench::random_array<int64_t>(static_cast<size_t>(rows), 52, 0.0, double(vocab));
    auto lse = kkbench::poisoned_array<float>(static_cast<size_t>(rows));
    auto loss = kkbench::poisoned_array<float>(1);
    auto dloss = kkbench::random_array<float>(1, 53, 0.5, 1.5);
    auto dx = kkbench::poisoned_array<T>(n);
    const size_t ws_bytes = kernelkit::cross_entropy_workspace_bytes(rows, vocab);
    auto ws = kkbench::zeroed_workspace(ws_bytes);
    BENCH_CUDA(kk_cross_entropy<T>(x->p + off, t->p, rows, vocab, kernelkit::LossReduction::kMean,
                                   loss->p, lse->p, ws->p, ws_bytes, s));
    auto launch = [=](cudaStream_t st) {
      BENCH_CUDA(kk_cross_entropy_backward<T>(x->p + off, t->p, lse->p, dloss->p, rows, vocab,
                                              dx->p + off, st));
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    // sampled rows against float64 from the saved lse
    std::vector<T> hx(vocab), hd(vocab);
    std::vector<float> hs(rows);
    std::vector<int64_t> ht(rows);
    float g = 0;
    BENCH_CUDA(cudaMemcpy(hs.data(), lse->p, rows * 4, cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(ht.data(), t->p, rows * 8, cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(&g, dloss->p, 4, cudaMemcpyDeviceToHost));
    std::vector<double> got, ref;
    const int64_t count = std::clamp<int64_t>((int64_t{1} << 22) / vocab, 2, 16);
    for (size_t r : kkbench::sample_indices(size_t(rows), size_t(count))) {
      const int64_t o = int64_t(r) * vocab + off;
      BENCH_CUDA(cudaMemcpy(hx.data(), x->p + o, vocab * sizeof(T), cudaMemcpyDeviceToHost));
      BENCH_CUDA(cudaMemcpy(hd.data(), dx->p + o, vocab * sizeof(T), cudaMemcpyDeviceToHost));
      for (size_t c : kkbench::sample_indices(size_t(vocab), 256)) {
        const double p = std::exp(kernelkit::convert<double>(hx[c]) - double(hs[r]));
        ref.push_back(double(g) / double(rows) * (p - (int64_t(c) == ht[r] ? 1.0 : 0.0)));
        got.push_back(kernelkit::convert<double>(hd[c]));
      }
      // the target's column too
      const size_t c = size_t(ht[r]);
      const double p = std::exp(kernelkit::convert<double>(hx[c]) - double(hs[r]));
      ref.push_back(double(g) / double(rows) * (p - 1.0));
      got.push_back(kernelkit::convert<double>(hd[c]));
    }
    kkbench::verify(name, got, ref, std::is_same_v<T, float> ? 1e-4 : 1.6e-2, 1e-9);
    return launch;
  });
}

KKBENCH_CASES {
  for (const Shape& sh : kCrossEntropyShapes) {
    add_forward_case<float>(sh);
    add_forward_case<__nv_bfloat16>(sh);
    add_backward_case<float>(sh);
    add_backward_case<__nv_bfloat16>(sh);
  }
}

// 24 shapes a type: what the goals ask of cross_entropy (../shared/tools/goals)
KKBENCH_GENERATED("cross_entropy", gen) {
  for (const Shape& sh : gen.rows(24, sizeof(float), kkbench::kCrossEntropyRange))
    add_forward_case<float>(sh);
  for (const Shape& sh : gen.rows(24, sizeof(__nv_bfloat16), kkbench::kCrossEntropyRange))
    add_forward_case<__nv_bfloat16>(sh);
}

KKBENCH_GENERATED("cross_entropy_backward", gen) {
  for (const Shape& sh : gen.rows(12, sizeof(float), kkbench::kCrossEntropyRange))
    add_backward_case<float>(sh);
  for (const Shape& sh : gen.rows(12, sizeof(__nv_bfloat16), kkbench::kCrossEntropyRange))
    add_backward_case<__nv_bfloat16>(sh);
}

}  // namespace
