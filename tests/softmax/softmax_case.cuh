// SPDX-License-Identifier: Apache-2.0
// Shared by the softmax GPU tests and the ladder test: the float64 reference, tolerances,
// inputs with special values, and run_case, which runs one call (the public function, a
// given plan through launch_softmax, or a ladder step) over contiguous or strided rows with the
// output poisoned and checks every element, the row sums, and that nothing outside the output
// (guards, the gaps between strided rows) was written.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/softmax/softmax.cuh"

namespace softmax_test {

namespace kk = kernelkit;
using kk::SoftmaxKind;
using kk::SoftmaxPath;
using kktest::DeviceBuffer;
using kktest::Tolerance;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Elements of one case at most in the non-Large tests (the float64 reference runs on the
// host, and these tests also run under compute-sanitizer): wide rows run with fewer rows.
constexpr int64_t kMaxCaseElems = int64_t{1} << 16;
constexpr int64_t kGuard = 16;  // poisoned elements before and after the output

// float64 reference of one matrix (x as the device sees it, i.e. already rounded to T).
inline std::vector<double> reference(const std::vector<double>& x, int64_t rows, int64_t cols,
                                     bool log) {
  std::vector<double> ref(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * cols;
    double* o = ref.data() + r * cols;
    double m = -kInf;
    bool nan = false;
    for (int64_t c = 0; c < cols; ++c) {
      if (std::isnan(xr[c])) nan = true;
      m = std::max(m, xr[c]);
    }
    if (nan || m == -kInf) {
      std::fill(o, o + cols, kNaN);
      continue;
    }
    double s = 0;
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(xr[c] - m);
    const double log_s = std::log(s);
    for (int64_t c = 0; c < cols; ++c)
      o[c] = log ? (xr[c] - m) - log_s : std::exp(xr[c] - m) / s;
  }
  return ref;
}

// Per type: softmax within 2 ulps of T (f32: a relative bound, float sums of up to 2^21
// terms); log_softmax also gets an absolute bound for the float rounding of x - m and
// log(s) (|x - m| and |log s| up to ~20 here).
template <typename T>
Tolerance tolerance(bool log) {
  if constexpr (std::is_same_v<T, float>) {
    return log ? Tolerance{2e-5, 2e-6, 0} : Tolerance{1e-37, 2e-5, 4};
  } else {
    return log ? Tolerance{2e-5, 0, 2} : Tolerance{1e-37, 0, 2};
  }
}

template <typename T>
double row_sum_tolerance() {
  if constexpr (std::is_same_v<T, float>) return 1e-4;
  if constexpr (std::is_same_v<T, __half>) return 4e-3;
  return 2e-2;
}

// Inputs uniform in [lo, hi); with specials: row 0 has two -inf, row 1 is all -inf, row 2
// ends with a NaN, row 3 has a NaN a third of the way in (rows that exist).
template <typename T>
std::vector<T> make_input(int64_t rows, int64_t cols, uint64_t seed, bool specials,
                          double lo = -8.0, double hi = 8.0) {
  auto h = kktest::random_vector<T>(static_cast<size_t>(rows * cols), seed, lo, hi);
  if (specials) {
    const T ninf = kk::convert<T>(-kInf), nan = kk::convert<T>(kNaN);
    if (rows >= 1) {
      h[0] = ninf;
      h[cols / 2] = ninf;
    }
    if (rows >= 2 && cols > 1) std::fill(h.begin() + cols, h.begin() + 2 * cols, ninf);
    if (rows >= 3) h[2 * cols + cols - 1] = nan;
    if (rows >= 4) h[3 * cols + cols / 3] = nan;
  }
  return h;
}

// Where in and out sit: element offsets from 256-byte aligned buffers, or in place; their
// leading dimensions cols + ld_pad (in place: out's is in's).
struct Layout {
  int64_t in_shift = 0, out_shift = 0;
  bool in_place = false;
  int64_t ld_pad_in = 0, ld_pad_out = 0;
  int64_t ld_in(int64_t cols) const { return cols + ld_pad_in; }
  int64_t ld_out(int64_t cols) const { return cols + (in_place ? ld_pad_in : ld_pad_out); }
};
constexpr Layout kAligned{};
constexpr Layout kInPlace{0, 0, true};

// What runs: the public function, a given plan through launch_softmax, or (f32 softmax)
// a ladder step.
using LadderFn = cudaError_t (*)(const float*, float*, int64_t, int64_t, cudaStream_t);
struct Runner {
  const kk::SoftmaxPlan* plan = nullptr;
  LadderFn ladder = nullptr;
};

// (ld_in, ld_out: the rows' strides; a ladder step takes contiguous rows only)
template <typename T>
cudaError_t call(const Runner& run, bool log, const T* in, int64_t ld_in, T* out, int64_t ld_out,
                 int64_t rows, int64_t cols, cudaStream_t stream = nullptr) {
  if constexpr (std::is_same_v<T, float>) {
    if (run.ladder != nullptr) {
      if (ld_in != cols || ld_out != cols) return cudaErrorNotSupported;
      return run.ladder(in, out, rows, cols, stream);
    }
  }
  if (run.plan != nullptr) {
    return kk::launch_softmax(*run.plan, log ? SoftmaxKind::kLogSoftmax : SoftmaxKind::kSoftmax, in,
                              ld_in, out, ld_out, rows, cols, stream);
  }
  if (ld_in == cols && ld_out == cols) {
    return log ? kk::log_softmax(in, out, rows, cols, stream)
               : kk::softmax(in, out, rows, cols, stream);
  }
  return log ? kk::log_softmax(in, ld_in, out, ld_out, rows, cols, stream)
             : kk::softmax(in, ld_in, out, ld_out, rows, cols, stream);
}
template <typename T>
cudaError_t call(const Runner& run, bool log, const T* in, T* out, int64_t rows, int64_t cols,
                 cudaStream_t stream = nullptr) {
  return call<T>(run, log, in, cols, out, cols, rows, cols, stream);
}

template <typename T>
std::string label_of(int64_t rows, int64_t cols, bool log, const Layout& l, uint64_t seed) {
  return std::string(kk::type_name<T>()) + (log ? " log_softmax " : " softmax ") +
         std::to_string(rows) + "x" + std::to_string(cols) + " in+" + std::to_string(l.in_shift) +
         " out+" + std::to_string(l.out_shift) + (l.in_place ? " in place" : "") +
         (l.ld_pad_in != 0 || l.ld_pad_out != 0
              ? " ld " + std::to_string(l.ld_in(cols)) + "/" + std::to_string(l.ld_out(cols))
              : std::string()) +
         " seed=" + std::to_string(seed);
}

// Runs one case and checks every output element against the reference, that finite rows
// sum to 1, and that the poisoned guards around the output are untouched.
template <typename T>
::testing::AssertionResult run_case(int64_t rows, int64_t cols, bool log, const Layout& layout,
                                    uint64_t seed, const Runner& run = {}, bool specials = true,
                                    double lo = -8.0, double hi = 8.0) {
  const auto h_in = make_input<T>(rows, cols, seed, specials, lo, hi);
  const int64_t n = rows * cols;
  const std::string label = label_of<T>(rows, cols, log, layout, seed);
  const int64_t ld_in = layout.ld_in(cols), ld_out = layout.ld_out(cols);
  const int64_t span_in = (rows - 1) * ld_in + cols, span_out = (rows - 1) * ld_out + cols;
  // in: [guard][shift][span][guard]; out the same, or in itself (the gaps between strided
  // rows poisoned too)
  DeviceBuffer<T> in_buf(span_in + 2 * kGuard + 8),
      out_buf(layout.in_place ? 0 : span_out + 2 * kGuard + 8);
  in_buf.poison();
  if (!layout.in_place) out_buf.poison();
  const int64_t in_at = kGuard + layout.in_shift;
  const int64_t out_at = layout.in_place ? in_at : kGuard + layout.out_shift;
  T* in = in_buf.get() + in_at;
  if (ld_in == cols) {
    CUDA_CHECK(cudaMemcpy(in, h_in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  } else {
    CUDA_CHECK(cudaMemcpy2D(in, ld_in * sizeof(T), h_in.data(), cols * sizeof(T), cols * sizeof(T),
                            rows, cudaMemcpyHostToDevice));
  }
  DeviceBuffer<T>& out_owner = layout.in_place ? in_buf : out_buf;
  T* out = out_owner.get() + out_at;
  const cudaError_t err = call<T>(run, log, in, ld_in, out, ld_out, rows, cols);
  if (err != cudaSuccess)
    return ::testing::AssertionFailure() << label << ": " << cudaGetErrorString(err);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto all = out_owner.download();
  // every element of the output matrix to `got`; every other one (guards, gaps) still holds
  // the poison (0xFF bytes)
  std::vector<T> got(n);
  for (int64_t i = 0; i < int64_t(all.size()); ++i) {
    const int64_t rel = i - out_at;
    if (rel >= 0 && rel < span_out && rel % ld_out < cols) {
      got[rel / ld_out * cols + rel % ld_out] = all[i];
      continue;
    }
    uint16_t bits16 = 0;
    uint32_t bits32 = 0;
    bool poisoned;
    if constexpr (sizeof(T) == 4) {
      std::memcpy(&bits32, &all[i], 4);
      poisoned = bits32 == 0xFFFFFFFFu;
    } else {
      std::memcpy(&bits16, &all[i], 2);
      poisoned = bits16 == 0xFFFFu;
    }
    if (!poisoned)
      return ::testing::AssertionFailure()
             << label << ": element " << rel << " outside the output was written";
  }
  std::vector<double> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = kktest::to_double(h_in[i]);
  const auto ref = reference(x, rows, cols, log);
  auto res = kktest::check_near(got, ref, tolerance<T>(log), label);
  if (!res) return res;
  // Row sums, against the sum of the reference rounded to T (1 up to rounding): where the
  // outputs are subnormal in T their rounding does not average out (an f16 softmax row of
  // 26.4 M values in [-8, 8) has every output below 6.1e-7, on a grid of 6e-8: the float64
  // reference rounded to f16 sums to 0.966), and a correct kernel's sum is that one's.
  for (int64_t r = 0; r < rows; ++r) {
    if (std::isnan(ref[r * cols])) continue;
    double s = 0, want = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = kktest::to_double(got[r * cols + c]);
      const double w = kktest::to_double(kk::convert<T>(ref[r * cols + c]));
      s += log ? std::exp(v) : v;
      want += log ? std::exp(w) : w;
    }
    if (std::fabs(s - want) > row_sum_tolerance<T>())
      return ::testing::AssertionFailure() << label << ": row " << r << " sums to " << s
                                           << ", the reference rounded to T to " << want;
  }
  return ::testing::AssertionSuccess();
}

inline int64_t rows_for(int64_t want, int64_t cols) {
  return std::max<int64_t>(1, std::min<int64_t>(want, kMaxCaseElems / cols));
}

inline kk::DeviceInfo device() {
  kk::DeviceInfo d;
  CUDA_CHECK(kk::current_device_info(&d));
  return d;
}

// A device like d (this one: small_device) with `sms` SMs and `smem` bytes of shared memory per SM
// (and per block), with or without clusters and cooperative launches: plans for it are launchable
// here and reach the wide paths at small sizes.
inline kk::DeviceInfo small_device_of(kk::DeviceInfo d, int sms, int smem, bool clusters,
                                      bool cooperative) {
  d.sm_count = std::min(d.sm_count, sms);
  d.smem_per_block_optin = std::min(d.smem_per_block_optin, smem);
  d.smem_per_sm = d.smem_per_block_optin + d.smem_reserved_per_block;
  d.cluster_launch = d.cluster_launch && clusters;
  d.cooperative_launch = d.cooperative_launch && cooperative;
  return d;
}
inline kk::DeviceInfo small_device(int sms, int smem, bool clusters, bool cooperative) {
  return small_device_of(device(), sms, smem, clusters, cooperative);
}

// (max_cluster: 0 = the device's largest cluster; 8 = the portable size only, the device as
// plan_and_launch plans it again after a cluster of 16 did not fit)
template <typename T>
kk::SoftmaxPlan plan_for(int64_t rows, int64_t cols, const Layout& l, kk::DeviceInfo d,
                         int max_cluster = 0) {
  const int in_off = static_cast<int>(((kGuard + l.in_shift) * sizeof(T)) % 16);
  const int out_off =
      static_cast<int>(((kGuard + (l.in_place ? l.in_shift : l.out_shift)) * sizeof(T)) % 16);
  if (max_cluster == 8) d.nonportable_clusters = false;
  return kk::plan_softmax(rows, cols, sizeof(T), kk::Alignment(in_off), l.ld_in(cols),
                          kk::Alignment(out_off), l.ld_out(cols), d);
}

// One small case for each entry of kSoftmaxConfigs for T: the narrowest, then shortest,
// matrix (rows x cols <= kMaxCaseElems) whose plan is that entry on base or on a small device
// like it (for the chunk paths), for some layout (strided: only layouts whose rows are strided,
// ld > cols); `found` false where none is (entries that need clusters on a device without them;
// strided, the kTile entries: contiguous rows only). The GPU tests run each plan; the plan tests
// check that an H100 finds every entry (strided: every one but kTile's).
struct ConfigCase {
  bool found = false;
  int64_t rows = 0, cols = 0;
  Layout layout;
  kk::SoftmaxPlan plan;
};
template <typename T>
std::vector<ConfigCase> config_cases(const kk::DeviceInfo& base, bool strided = false) {
  constexpr int kSmem = 12 * 1024;
  struct Dev {
    kk::DeviceInfo d;
    int max_cluster;
  };
  const Dev devices[] = {{base, 0},
                         {small_device_of(base, 2, 1 << 30, false, false), 0},
                         {small_device_of(base, 8, kSmem, true, false), 0},
                         {small_device_of(base, 8, kSmem, true, false), 8},
                         {small_device_of(base, 6, kSmem, false, true), 0},
                         {small_device_of(base, 8, kSmem, false, false), 0}};
  // aligned; off the 16-byte grid; on the 8-byte grid only (2-byte types); in and out at
  // different offsets within 16 bytes. Strided (P: the elements of 16 bytes): rows on the
  // 16-byte grid (lds P and 2P past cols), rows at several offsets (3 and 3 + P: every row of in
  // and out alike), 2-byte rows on the 8-byte grid (lds 8 bytes past), in and out at different
  // offsets (lds 1 and 0 past), in place (P past).
  constexpr int64_t P = 16 / sizeof(T);
  const Layout contiguous[] = {kAligned, Layout{1, 1, false}, Layout{4, 4, false},
                               Layout{1, 0, false}};
  const Layout strides[] = {Layout{0, 0, false, P, 2 * P}, Layout{1, 1, false, 3, 3 + P},
                            Layout{4, 4, false, 4, 4}, Layout{1, 0, false, 1, 0},
                            Layout{0, 0, true, P, 0}};
  const int64_t widths[] = {1,     2,     3,     4,     5,     8,     9,     12,    16,
                            17,    24,    32,    33,    48,    64,    65,    96,    128,
                            129,   200,   256,   257,   500,   512,   1000,  1024,  1025,
                            1500,  2048,  2049,  3000,  4096,  4097,  6000,  8192,  8193,
                            10000, 12000, 16384, 16385, 20000, 24000, 32768, 40000, 65536};
  const kk::ConfigRange range = kk::softmax_configs_of(sizeof(T));
  std::vector<ConfigCase> cases(range.end - range.begin);
  for (const int64_t cols : widths) {
    for (const int64_t rows : {1, 2, 3, 5, 23, 129}) {
      if (rows * cols > kMaxCaseElems || (strided && rows == 1)) continue;  // one row: contiguous
      for (const Layout& l :
           strided ? std::vector<Layout>(std::begin(strides), std::end(strides))
                   : std::vector<Layout>(std::begin(contiguous), std::end(contiguous))) {
        for (const Dev& dev : devices) {
          const kk::SoftmaxPlan p = plan_for<T>(rows, cols, l, dev.d, dev.max_cluster);
          const int i = kk::config_index(kk::kSoftmaxConfigs, kk::softmax_config(p, sizeof(T)),
                                         range.begin, range.end);
          if (i < 0 || cases[i - range.begin].found) continue;
          cases[i - range.begin] = ConfigCase{true, rows, cols, l, p};
        }
      }
    }
  }
  return cases;
}

// The backward tests' bounds and poison (softmax_rows_test, softmax_inner_test).
// Per-type relative bound of the output's rounding (and the float arithmetic before it).
template <typename T>
double out_rel() {
  if constexpr (std::is_same_v<T, float>) return 1e-6;
  if constexpr (std::is_same_v<T, __half>) return 1.2e-3;
  return 8e-3;
}

// Half the spacing of T's subnormals (f16 outputs below 2^-14 round on a 2^-24 grid); ~0 else.
template <typename T>
constexpr double kSubnormalHalfUlp = std::is_same_v<T, __half> ? 0x1p-25 : 1e-30;

// An output element still holding the 0xFF poison bytes (nothing written there).
template <typename T>
bool poisoned(const T& v) {
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b == 0xFFFFFFFFu;
  } else {
    uint16_t b;
    std::memcpy(&b, &v, 2);
    return b == 0xFFFFu;
  }
}

}  // namespace softmax_test
