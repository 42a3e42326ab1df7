// SPDX-License-Identifier: Apache-2.0
// rms_norm, layer_norm and add_rms_norm (f32, bf16; weights and bias of x's type, the saved
// statistics as floats) and their backward passes (rms_norm_backward, layer_norm_backward,
// add_rms_norm_backward) over the listed shapes of issue 34 and generated ones (bench/shapes.h,
// kNormRange; no baseline in C++: torch and Liger are timed by the Python benchmark). bytes =
// the fewest a call moves (kernelkit::norm_fewest_bytes, norm_backward_fewest_bytes): every
// input read once, every output written once. Each case is verified once on sampled rows
// against a float64 reference.
#include <algorithm>
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

// The forward's implementations: the library's plan, and two forced plans (outside the goals):
//  - kWarpARow ("kernelkit.warp"): main's plan of a warp a row, to see whether the groups of
//    lanes that short rows take (several rows a warp) keep their place, 3 % ahead of it
//    (bench/NOTES.md, norm). plan_norm on a device of as many SMs as need a warp a row for every
//    row count (its fill rule then sets 32 lanes: the entry of the fewest registers holding the
//    row, main's), the grid sized for the real device as plan_norm sizes it;
//  - kPhasedShort ("kernelkit.phased"): off-grid rows of at most 128 columns on the phased
//    16-byte kWarp entries (groups of lanes at each row's phase) instead of the one-element ones
//    plan_norm gives them, to see whether those rows should move to 16-byte packs now that
//    several rows share a warp (main measured the phased access 2.9x slower there on a warp a
//    row). plan_norm for a row on the grid as wide as the row's span at its worst phase with an
//    operand off the grid (so the phased kWarp entry holding that span).
// Both launch on the real operands.
enum class Impl { kPlan, kWarpARow, kPhasedShort };

template <typename T>
cudaError_t kk_norm_forced(Impl impl, kernelkit::NormKind kind, const T* x, const T* res,
                           const T* w, const T* b, T* y, T* sum, float* mean, float* rstd,
                           int64_t rows, int64_t cols, cudaStream_t s) {
  namespace kk = kernelkit;
  kk::DeviceInfo d;
  BENCH_CUDA(kk::current_device_info(&d));
  const kk::detail::NormArgs<T, T> a{
      x, res, w, b, y, sum, mean, rstd, rows, cols, kind == kk::NormKind::kLayer ? 1e-5f : 1e-6f};
  if (impl == Impl::kPhasedShort) {
    constexpr int64_t kFull = 16 / sizeof(T);
    const int64_t span = (cols + 2 * kFull - 2) / kFull * kFull;  // columns of the worst phase
    const kk::NormPlan p = kk::plan_norm(kind, rows, span, sizeof(T), kk::Alignment(),
                                         kk::Alignment(int64_t{sizeof(T)}), 0, d);
    return kk::launch_norm(p, kind, a, s);
  }
  const kk::Alignment x_at =
      kk::common_alignment(kk::alignment_of(x), kk::Alignment(cols * int64_t{sizeof(T)}));
  const kk::Alignment all_at =
      kk::common_alignment(x_at, kk::alignment_of(y), kk::alignment_of(res), kk::alignment_of(sum),
                           kk::alignment_of(w), kk::alignment_of(b));
  const int64_t fewest = kk::norm_fewest_bytes(kind, rows, cols, sizeof(T), w ? sizeof(T) : 0,
                                               b ? sizeof(T) : 0, mean != nullptr, rstd != nullptr);
  kk::DeviceInfo wide = d;
  wide.sm_count = static_cast<int>(std::min<int64_t>(INT32_MAX / 128, rows + 1));
  kk::NormPlan p = kk::plan_norm(kind, rows, cols, sizeof(T), x_at, all_at, fewest, wide);
  if (p.path == kk::NormPath::kWarp) {
    const int64_t blocks = (rows + 128 / p.lanes - 1) / (128 / p.lanes);
    p.shape.grid = dim3(static_cast<unsigned>(kk::grid_size_for(
        blocks * p.shape.block.x, p.shape.block.x, d, kk::kDefaultWaves, p.blocks_per_sm)));
  } else {
    p = kk::plan_norm(kind, rows, cols, sizeof(T), x_at, all_at, fewest, d);
  }
  return kk::launch_norm(p, kind, a, s);
}

// The streamed backward kernel forced onto a shape the plan gives a register entry (impl
// "kernelkit.streamed", outside the goals): whether the register path keeps its place, 3 %
// ahead of it (bench/NOTES.md, norm). Its plan as plan_norm_backward makes it past the register
// entries (cudaMalloc'd buffers, offset 0: 16-byte packs).
template <typename T>
cudaError_t kk_norm_backward_streamed(kernelkit::NormKind kind, const T* x, const T* dy,
                                      const T* ds, const T* w, const float* mean, const float* rstd,
                                      T* dx, T* dw, T* db, int64_t rows, int64_t cols, void* ws,
                                      cudaStream_t s) {
  kernelkit::DeviceInfo d;
  BENCH_CUDA(kernelkit::current_device_info(&d));
  const int gradients = 1 + (db != nullptr ? 1 : 0);
  kernelkit::NormBackwardPlan p =
      kernelkit::plan_norm_backward(rows, cols, sizeof(T), sizeof(T), kernelkit::Alignment(),
                                    kernelkit::Alignment(), gradients, 0, d);
  p.packs = 0;
  p.threads = 256;
  p.split = 1;
  p.shape.cooperative = false;
  p.parts = std::min(rows, kernelkit::kNormBackwardParts);
  p.shape.block = dim3(256);
  p.shape.grid = dim3(static_cast<unsigned>(p.parts));
  float* part = static_cast<float*>(ws);
  const int64_t part_floats = std::min(rows, kernelkit::norm_backward_parts_cap(cols)) * cols;
  const kernelkit::detail::NormBackwardArgs<T, T> a{
      dy, x, w, mean, rstd, ds, dx, dw, db, part, db ? part + part_floats : nullptr, rows, cols};
  return kernelkit::launch_norm_backward(p, kind, a, s);
}

// x: x, or add_rms_norm's saved sum; mean, db: layer_norm only; ds: add_rms_norm only.
template <typename T>
cudaError_t kk_norm_backward(kernelkit::NormKind kind, const T* x, const T* dy, const T* ds,
                             const T* w, const float* mean, const float* rstd, T* dx, T* dw, T* db,
                             int64_t rows, int64_t cols, void* ws, size_t ws_bytes,
                             cudaStream_t s) {
  switch (kind) {
    case kernelkit::NormKind::kRms:
      return kernelkit::rms_norm_backward(x, dy, w, rstd, dx, dw, rows, cols, ws, ws_bytes, s);
    case kernelkit::NormKind::kLayer:
      return kernelkit::layer_norm_backward(x, dy, w, mean, rstd, dx, dw, db, rows, cols, ws,
                                            ws_bytes, s);
    default:
      return kernelkit::add_rms_norm_backward(x, dy, ds, w, rstd, dx, dw, rows, cols, ws, ws_bytes,
                                              s);
  }
}

using Shape = kkbench::RowsShape;
using kernelkit::NormKind;

const Shape kNormShapes[] = {{8192, 4096}, {32768, 8192}, {4096, 16384},
                             {1, 4096},    {64, 8192},    {65536, 768}};

const char* op_name(NormKind k) {
  return k == NormKind::kRms ? "rms_norm" : (k == NormKind::kLayer ? "layer_norm" : "add_rms_norm");
}

template <typename T>
void add_norm_case(const Shape& sh, NormKind kind, Impl impl = Impl::kPlan) {
  const int64_t rows = sh.rows, cols = sh.cols, off = sh.offset;
  const char* impl_name = impl == Impl::kWarpARow      ? "kernelkit.warp"
                          : impl == Impl::kPhasedShort ? "kernelkit.phased"
                                                       : "kernelkit";
  const std::string name = kkbench::case_name<T>(op_name(kind), impl_name, sh.name());
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
      if (impl != Impl::kPlan) {
        BENCH_CUDA(kk_norm_forced<T>(impl, kind, x->p + off, add ? res->p + off : nullptr, w->p,
                                     layer ? b->p : nullptr, y->p + off,
                                     add ? sum->p + off : nullptr, layer ? mean->p : nullptr,
                                     rstd->p, rows, cols, st));
      } else {
        BENCH_CUDA(kk_norm<T>(kind, x->p + off, add ? res->p + off : nullptr, w->p,
                              layer ? b->p : nullptr, y->p + off, add ? sum->p + off : nullptr,
                              layer ? mean->p : nullptr, rstd->p, rows, cols, st));
      }
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    kkbench::check_norm<T>(name, kind, x->p + off, add ? res->p + off : nullptr, w->p,
                           layer ? b->p : nullptr, y->p + off, add ? sum->p + off : nullptr, rows,
                           cols);
    return launch;
  });
}

// layer_norm_backward and add_rms_norm_backward on sampled rows of dx and sampled columns of
// dweight (and dbias) against float64 from the saved statistics; rms_norm_backward's check is
// kkbench::check_rms_norm_backward.
template <typename T>
void check_norm_backward(const std::string& what, NormKind kind, const T* x, const T* dy,
                         const T* ds, const T* w, const float* mean, const float* rstd, const T* dx,
                         const T* dw, const T* db, int64_t rows, int64_t cols) {
  using kernelkit::convert;
  const bool layer = kind == NormKind::kLayer;
  std::vector<T> hdy(cols), hx(cols), hdx(cols), hw(cols), hds(ds ? cols : 0);
  std::vector<float> hr(rows), hm(rows, 0.f);
  BENCH_CUDA(cudaMemcpy(hw.data(), w, cols * sizeof(T), cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(hr.data(), rstd, rows * sizeof(float), cudaMemcpyDeviceToHost));
  if (layer) BENCH_CUDA(cudaMemcpy(hm.data(), mean, rows * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<double> got, ref;
  const int64_t count = std::clamp<int64_t>((int64_t{1} << 22) / cols, 2, 16);
  for (size_t r : kkbench::sample_indices(size_t(rows), size_t(count))) {
    const int64_t o = int64_t(r) * cols;
    BENCH_CUDA(cudaMemcpy(hdy.data(), dy + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(hx.data(), x + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(hdx.data(), dx + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    if (ds) BENCH_CUDA(cudaMemcpy(hds.data(), ds + o, cols * sizeof(T), cudaMemcpyDeviceToHost));
    const double rs = hr[r], mu = hm[r];
    double sg = 0, sgx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double g = convert<double>(hdy[c]) * convert<double>(hw[c]);
      sg += g;
      sgx += g * (convert<double>(hx[c]) - mu) * rs;
    }
    const double mg = layer ? sg / double(cols) : 0.0, mgx = sgx / double(cols);
    for (size_t c : kkbench::sample_indices(size_t(cols), 256)) {
      const double g = convert<double>(hdy[c]) * convert<double>(hw[c]);
      const double xhat = (convert<double>(hx[c]) - mu) * rs;
      ref.push_back(rs * (g - mg - xhat * mgx) + (ds ? convert<double>(hds[c]) : 0.0));
      got.push_back(convert<double>(hdx[c]));
    }
  }
  // dweight (and dbias) at up to 8 columns, each summed over every row (strided gathers)
  for (size_t c : kkbench::sample_indices(size_t(cols), rows * cols > (int64_t{1} << 26) ? 2 : 8)) {
    std::vector<size_t> idx(rows);
    for (int64_t r = 0; r < rows; ++r)
      idx[r] = size_t(r * cols) + c;
    const auto gy = kkbench::to_doubles(kkbench::gather(dy, idx));
    const auto gx = kkbench::to_doubles(kkbench::gather(x, idx));
    double acc_w = 0, acc_b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      acc_w += gy[r] * (gx[r] - hm[r]) * hr[r];
      acc_b += gy[r];
    }
    T one;
    BENCH_CUDA(cudaMemcpy(&one, dw + c, sizeof(T), cudaMemcpyDeviceToHost));
    ref.push_back(acc_w);
    got.push_back(convert<double>(one));
    if (db != nullptr) {
      BENCH_CUDA(cudaMemcpy(&one, db + c, sizeof(T), cudaMemcpyDeviceToHost));
      ref.push_back(acc_b);
      got.push_back(convert<double>(one));
    }
  }
  const double rtol = std::is_same_v<T, float> ? 1e-4 : 1.6e-2;
  kkbench::verify(what, got, ref, rtol, std::is_same_v<T, float> ? 1e-3 : 2e-2);
}

const char* backward_name(NormKind k) {
  return k == NormKind::kRms
             ? "rms_norm_backward"
             : (k == NormKind::kLayer ? "layer_norm_backward" : "add_rms_norm_backward");
}

// The backward passes, with a weight and every weight gradient (layer_norm: dweight and dbias;
// add_rms_norm with dsum): bytes = the fewest a call moves (kernelkit::norm_backward_fewest_bytes):
// dy, x (the sum), dsum, the weight, rstd (and mean) read once; dx, dweight (and dbias) written
// once. The workspace's partials are not counted: they are the kernel's cost. Verified on
// sampled rows of dx and sampled columns of the weight gradients.
template <typename T>
void add_norm_backward_case(const Shape& sh, NormKind kind, bool streamed = false) {
  const int64_t rows = sh.rows, cols = sh.cols, off = sh.offset;
  const std::string name = kkbench::case_name<T>(
      backward_name(kind), streamed ? "kernelkit.streamed" : "kernelkit", sh.name());
  const bool layer = kind == NormKind::kLayer, add = kind == NormKind::kAddRms;
  const double matrix = double(rows) * double(cols) * sizeof(T);
  const double vec = double(cols) * sizeof(T);
  const kkbench::Traffic traffic{(add ? 3 : 2) * matrix + vec + double(rows) * 4 * (layer ? 2 : 1),
                                 matrix + vec * (layer ? 2 : 1)};
  kkbench::add_case(name, traffic, 0, [=](cudaStream_t s) -> kkbench::Launch {
    const size_t n = static_cast<size_t>(rows * cols + off);
    auto dy = kkbench::random_array<T>(n, 31, -1.0, 1.0);
    auto x = kkbench::random_array<T>(n, 32, -2.0, 2.0);
    auto ds = kkbench::random_array<T>(add ? n : 0, 35, -1.0, 1.0);
    auto w = kkbench::random_array<T>(static_cast<size_t>(cols), 33, 0.5, 1.5);
    auto mean = kkbench::random_array<float>(layer ? static_cast<size_t>(rows) : 0, 36, -0.2, 0.2);
    auto rstd = kkbench::random_array<float>(static_cast<size_t>(rows), 34, 0.5, 1.5);
    auto dx = kkbench::poisoned_array<T>(n);
    auto dw = kkbench::poisoned_array<T>(static_cast<size_t>(cols));
    auto db = kkbench::poisoned_array<T>(layer ? static_cast<size_t>(cols) : 0);
    const size_t ws_bytes = kernelkit::norm_backward_workspace_bytes(kind, rows, cols);
    auto ws = kkbench::zeroed_workspace(ws_bytes);
    auto launch = [=](cudaStream_t st) {
      if (streamed) {
        BENCH_CUDA(
            kk_norm_backward_streamed<T>(kind, x->p + off, dy->p + off, add ? ds->p + off : nullptr,
                                         w->p, layer ? mean->p : nullptr, rstd->p, dx->p + off,
                                         dw->p, layer ? db->p : nullptr, rows, cols, ws->p, st));
      } else {
        BENCH_CUDA(kk_norm_backward<T>(kind, x->p + off, dy->p + off, add ? ds->p + off : nullptr,
                                       w->p, layer ? mean->p : nullptr, rstd->p, dx->p + off, dw->p,
                                       layer ? db->p : nullptr, rows, cols, ws->p, ws_bytes, st));
      }
    };
    launch(s);
    BENCH_CUDA(cudaStreamSynchronize(s));
    if (kind == NormKind::kRms) {
      kkbench::check_rms_norm_backward<T>(name, dy->p + off, x->p + off, w->p, rstd->p, dx->p + off,
                                          dw->p, rows, cols);
    } else {
      check_norm_backward<T>(name, kind, x->p + off, dy->p + off, add ? ds->p + off : nullptr, w->p,
                             layer ? mean->p : nullptr, rstd->p, dx->p + off, dw->p,
                             layer ? db->p : nullptr, rows, cols);
    }
    return launch;
  });
}

KKBENCH_CASES {
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const Shape& sh : kNormShapes)
      add_norm_backward_case<float>(sh, kind);
    for (const Shape& sh : kNormShapes)
      add_norm_backward_case<__nv_bfloat16>(sh, kind);
  }
  // the streamed kernel on the listed shapes the register path takes (up to 8192 columns)
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer}) {
    for (const Shape& sh : kNormShapes) {
      if (sh.cols > 8192) continue;
      add_norm_backward_case<float>(sh, kind, true);
      add_norm_backward_case<__nv_bfloat16>(sh, kind, true);
    }
  }
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
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const Shape& sh : gen.rows(12, sizeof(float), kkbench::kNormRange))
      add_norm_backward_case<float>(sh, kind);
    for (const Shape& sh : gen.rows(12, sizeof(__nv_bfloat16), kkbench::kNormRange))
      add_norm_backward_case<__nv_bfloat16>(sh, kind);
  }
}

KKBENCH_GENERATED("norm", gen) {
  // 24 a type and op: the count the goals judge a fused op's generated shapes by
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    const auto f32 = gen.rows(24, sizeof(float), kkbench::kNormRange);
    const auto bf16 = gen.rows(24, sizeof(__nv_bfloat16), kkbench::kNormRange);
    for (const Shape& sh : f32)
      add_norm_case<float>(sh, kind);
    for (const Shape& sh : bf16)
      add_norm_case<__nv_bfloat16>(sh, kind);
    // the short rows (a warp's registers: up to 512 columns) again on a warp a row, and those
    // off the grid of at most 128 columns on the phased 16-byte entries
    const auto short_off_grid = [](const Shape& sh, int64_t elem) {
      return sh.cols <= 128 && ((sh.cols * elem) % 16 != 0 || (sh.offset * elem) % 16 != 0);
    };
    for (const Shape& sh : f32) {
      if (sh.cols <= 512) add_norm_case<float>(sh, kind, Impl::kWarpARow);
      if (short_off_grid(sh, 4)) add_norm_case<float>(sh, kind, Impl::kPhasedShort);
    }
    for (const Shape& sh : bf16) {
      if (sh.cols <= 512) add_norm_case<__nv_bfloat16>(sh, kind, Impl::kWarpARow);
      if (short_off_grid(sh, 2)) add_norm_case<__nv_bfloat16>(sh, kind, Impl::kPhasedShort);
    }
  }
}

}  // namespace
