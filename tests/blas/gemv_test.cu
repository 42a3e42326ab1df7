// SPDX-License-Identifier: Apache-2.0
// kernelkit::gemv against a float64 CPU reference: both ops, with and without a workspace
// (always dirty: 0xFF bytes), a sweep of shapes, every path of plan_gemv (lane groups,
// split rows with the workspace, clusters or one block, dot products, scaled copies, short
// rows and columns staged in shared memory, few-row, wide and tiled column kernels, strided
// tiles of an lda that is not a multiple of 4), lda > n, misaligned base pointers, alpha/beta
// special values, exact small-integer sums, NaN in y with beta == 0, untouched elements around y,
// determinism whatever the workspace held, argument checks, and sizes past 2^31 elements.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "blas/gemv_case.cuh"
#include "common/test_util.cuh"
#include "kernelkit/blas/gemv.cuh"

namespace {

using kernelkit::BlasOp;
using kernelkit::GemvPath;
using kernelkit::GemvPlan;
using kernelkit::GemvTile;
using kktest::DeviceBuffer;
using kktest::Tolerance;

const char* op_name(BlasOp op) {
  return op == BlasOp::N ? "N" : "T";
}

// y_ref = alpha * op(A) x + beta * y (beta == 0: y ignored), in float64.
std::vector<double> reference(BlasOp op, int64_t m, int64_t n, double alpha,
                              const std::vector<float>& A, int64_t lda, const std::vector<float>& x,
                              double beta, const std::vector<float>& y) {
  const int64_t out = op == BlasOp::N ? m : n;
  std::vector<double> acc(out, 0.0);
  if (op == BlasOp::N) {
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t j = 0; j < n; ++j)
        s += double(A[i * lda + j]) * x[j];
      acc[i] = s;
    }
  } else {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        acc[j] += double(A[i * lda + j]) * x[i];
  }
  std::vector<double> ref(out);
  for (int64_t k = 0; k < out; ++k)
    ref[k] = alpha * acc[k] + (beta == 0 ? 0.0 : beta * double(y[k]));
  return ref;
}

// |a|, |x| <= 1: a float sum of `inner` products errs by at most ~inner * eps * |alpha|.
Tolerance tolerance_for(int64_t inner, double alpha) {
  return Tolerance{2.0 * (inner + 2) * FLT_EPSILON * std::fabs(alpha) + 1e-30, 4 * FLT_EPSILON, 0};
}

// The workspace a case passes: none (the overload without one), gemv_workspace_bytes, too
// little for most splits (12 bytes), or the case's ws_bytes. Always filled with 0xFF bytes
// before the call.
enum class Ws { kNone, kFull, kSmall, kBytes };

struct Case {
  BlasOp op;
  int64_t m, n, lda;
  float alpha, beta;
  int a_offset = 0, x_offset = 0, y_offset = 0;  // elements: forces the narrow-pack paths
  bool small_ints = false;                       // exact integer sums
  Ws ws = Ws::kNone;
  size_t ws_bytes = 0;  // Ws::kBytes
};

const char* ws_name(Ws w) {
  return w == Ws::kNone ? "none" : w == Ws::kFull ? "full" : w == Ws::kSmall ? "small" : "bytes";
}

std::string label(const Case& c, uint64_t seed) {
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "op=%s m=%lld n=%lld lda=%lld alpha=%g beta=%g offsets=%d,%d,%d ints=%d ws=%s "
                "seed=%llu",
                op_name(c.op), (long long)c.m, (long long)c.n, (long long)c.lda, c.alpha, c.beta,
                c.a_offset, c.x_offset, c.y_offset, int(c.small_ints), ws_name(c.ws),
                (unsigned long long)seed);
  return buf;
}

size_t ws_bytes_for(const Case& c) {
  return c.ws == Ws::kNone    ? 0
         : c.ws == Ws::kSmall ? 12
         : c.ws == Ws::kBytes ? c.ws_bytes
                              : kernelkit::gemv_workspace_bytes(c.op, c.m, c.n);
}

// The plan the call below makes on this device (for the path checks).
GemvPlan plan_on_device(const Case& c, const float* A, const float* x, const float* y) {
  kernelkit::DeviceInfo d;
  CUDA_CHECK(kernelkit::current_device_info(&d));
  const bool reads = c.alpha != 0.f && c.m > 0 && c.n > 0;
  return kernelkit::plan_gemv(c.op, !reads && c.op == BlasOp::T ? 0 : c.m,
                              !reads && c.op == BlasOp::N ? 0 : c.n, c.lda,
                              kernelkit::gemv_alignment(A, x, y), ws_bytes_for(c), d);
}

constexpr int kGuard = 5;  // floats after y that must stay untouched

// Runs one case on fresh random inputs with y poisoned (beta == 0) or random, checks it, and
// returns the plan it ran: gemv's, or `forced` (launched with launch_gemv; a plan for these
// operands' alignment and workspace, on this GPU or a smaller one like it).
GemvPlan run_case(const Case& c, uint64_t seed, const GemvPlan* forced = nullptr) {
  const std::string what = label(c, seed);
  const int64_t xs = c.op == BlasOp::N ? c.n : c.m;
  const int64_t ys = c.op == BlasOp::N ? c.m : c.n;
  const int64_t a_elems = c.m == 0 ? 0 : (c.m - 1) * c.lda + c.n;
  const double lo = c.small_ints ? -4 : -1, hi = c.small_ints ? 5 : 1;
  std::vector<float> hA = kktest::random_vector<float>(a_elems + c.a_offset, seed, lo, hi);
  std::vector<float> hx = kktest::random_vector<float>(xs + c.x_offset, seed + 1, lo, hi);
  std::vector<float> hy = kktest::random_vector<float>(ys + c.y_offset + kGuard, seed + 2, lo, hi);
  if (c.small_ints) {
    for (auto* v : {&hA, &hx, &hy})
      for (auto& e : *v)
        e = std::floor(e);
  }
  auto dA = kktest::to_device(hA);
  auto dx = kktest::to_device(hx);
  std::vector<float> A(hA.begin() + c.a_offset, hA.end());
  std::vector<float> x(hx.begin() + c.x_offset, hx.end());
  std::vector<float> y0(hy.begin() + c.y_offset, hy.end() - kGuard);
  if (c.beta == 0.f) {
    // beta == 0 must not read y: poison it (NaN), guards included, and expect no NaN out
    for (auto& e : hy)
      e = std::numeric_limits<float>::quiet_NaN();
  }
  auto dy = kktest::to_device(hy);
  const size_t ws_bytes = ws_bytes_for(c);
  DeviceBuffer<unsigned char> ws(ws_bytes);
  ws.poison();
  const auto ref = reference(c.op, c.m, c.n, c.alpha, A, c.lda, x, c.beta, y0);
  const float* pA = dA.get() + c.a_offset;
  const float* px = dx.get() + c.x_offset;
  float* py = dy.get() + c.y_offset;
  const GemvPlan plan = forced != nullptr ? *forced : plan_on_device(c, pA, px, py);
  const cudaError_t err =
      forced != nullptr
          ? kernelkit::launch_gemv(*forced, c.alpha, pA, px, c.beta, py, ws.get(), nullptr)
      : c.ws == Ws::kNone
          ? kernelkit::gemv(c.op, c.m, c.n, c.alpha, pA, c.lda, px, c.beta, py)
          : kernelkit::gemv(c.op, c.m, c.n, c.alpha, pA, c.lda, px, c.beta, py, ws.get(), ws_bytes);
  EXPECT_EQ(err, cudaSuccess) << what;
  if (err != cudaSuccess) return plan;
  CUDA_CHECK(cudaDeviceSynchronize());
  auto got_all = dy.download();
  std::vector<float> got(got_all.begin() + c.y_offset, got_all.end() - kGuard);
  const Tolerance tol =
      c.small_ints ? Tolerance::Exact() : tolerance_for(c.op == BlasOp::N ? c.n : c.m, c.alpha);
  EXPECT_TRUE(kktest::check_near(got, ref, tol, what));
  // elements before and after y are untouched
  std::vector<float> before(got_all.begin(), got_all.begin() + c.y_offset);
  std::vector<float> after(got_all.end() - kGuard, got_all.end());
  EXPECT_TRUE(kktest::same_bits(before, std::vector<float>(hy.begin(), hy.begin() + c.y_offset)))
      << what;
  EXPECT_TRUE(kktest::same_bits(after, std::vector<float>(hy.end() - kGuard, hy.end()))) << what;
  return plan;
}

const int64_t kDims[] = {1, 3, 31, 32, 33, 1024, 4097, 65536};

class Gemv : public kktest::GpuTest {};

TEST_F(Gemv, ShapeSweep) {
  uint64_t seed = 100;
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (int64_t m : kDims)
      for (int64_t n : kDims) {
        if (m * n > (int64_t{1} << 26)) continue;  // 65536 x 65536 and 65536 x 4097: too big
        // sanitizer: at most 2^22 floats (every dim still meets 1 .. 33; EveryPath runs each path)
        if (kktest::sanitizer_run() && m * n > (int64_t{1} << 22)) continue;
        for (Ws ws : {Ws::kNone, Ws::kFull})
          run_case({op, m, n, n, -0.5f, 1.f, 0, 0, 0, false, ws}, seed++);
      }
}

TEST_F(Gemv, AlphaBetaCombinations) {
  uint64_t seed = 200;
  const int64_t shapes[][2] = {{33, 4097}, {4097, 33}, {1024, 65536}, {3, 65536}, {65536, 3},
                               {31, 1024}, {1, 1},     {1, 100003},   {100003, 1}};
  int64_t index = 0;
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes)
      for (float alpha : {0.f, 1.f, -0.5f})
        for (float beta : {0.f, 1.f, -0.5f}) {
          // sanitizer: 3 of the 9 pairs a shape (each alpha and each beta once), turning; of
          // those, 1024 x 65536 (98% of the work) only the one with alpha -0.5
          const int64_t i = index++;
          const bool big = s[0] * s[1] > (int64_t{1} << 24);
          if (kktest::sanitizer_run() &&
              ((i / 9 + i % 9 / 3 + i % 3) % 3 != 0 || (big && alpha != -0.5f))) {
            ++seed;
            continue;
          }
          run_case({op, s[0], s[1], s[1], alpha, beta, 0, 0, 0, false, Ws::kFull}, seed++);
        }
}

TEST_F(Gemv, LeadingDimensionAndMisalignment) {
  uint64_t seed = 300;
  const int64_t shapes[][2] = {{33, 1024},  {1024, 33}, {7, 4097},   {4097, 7},    {2, 65536},
                               {65536, 2},  {32, 32},   {3, 100003}, {100003, 3},  {1, 100003},
                               {100003, 1}, {4099, 8},  {8, 40000},  {1500, 4095}, {4095, 1500}};
  int64_t block = 0;
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes)
      for (Ws ws : {Ws::kNone, Ws::kFull}) {
        const int64_t m = s[0], n = s[1];
        // sanitizer: one of the 7 variants per shape and workspace, turning (each runs 8+ times)
        int variant = 0;
        const auto run = [&](const Case& c) {
          if (!kktest::sanitizer_run() || (variant + block) % 7 == 0) run_case(c, seed);
          ++variant, ++seed;
        };
        run({op, m, n, n + 3, 1.f, -0.5f, 0, 0, 0, false, ws});  // odd lda
        run({op, m, n, n + 4, 1.f, -0.5f, 0, 0, 0, false, ws});  // still 16-byte rows
        run({op, m, n, n + 2, 1.f, -0.5f, 2, 0, 0, false, ws});  // rows 2 floats apart in phase
        run({op, m, n, n, 1.f, -0.5f, 1, 0, 0, false, ws});
        run({op, m, n, n, 1.f, -0.5f, 0, 1, 1, false, ws});
        run({op, m, n, n + 1, -0.5f, 0.f, 3, 2, 1, false, ws});
        run({op, m, n, n, 1.f, 0.f, 1, 1, 1, false, ws});  // equally misaligned
        ++block;
      }
}

TEST_F(Gemv, SmallIntegersAreExact) {
  uint64_t seed = 400;
  const int64_t shapes[][2] = {{1024, 65536}, {65536, 1024}, {4097, 4097}, {3, 65536},
                               {65536, 3},    {33, 31},      {8192, 8192}, {1, 65536},
                               {65536, 1},    {4096, 4096},  {64, 65536},  {65536, 64}};
  // sanitizer: no shape over 2^24 floats, and one beta per workspace (-0.5 without, 0 with)
  const bool san = kktest::sanitizer_run();
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes)
      for (Ws ws : {Ws::kNone, Ws::kFull}) {
        Case c{op, s[0], s[1], s[1], 1.f, -0.5f};
        c.small_ints = true;
        c.ws = ws;
        const bool big = s[0] * s[1] > (int64_t{1} << 24);
        if (!san || (!big && ws == Ws::kNone)) run_case(c, seed);
        ++seed;
        c.beta = 0.f;
        if (!san || (!big && ws == Ws::kFull)) run_case(c, seed);
        ++seed;
      }
}

// Every path of plan_gemv at a shape that takes it on the H100 (other devices take other
// paths, also checked): each with a dirty workspace, without one (clusters on Hopper, else
// one block), and with one too small for the split. On a 132-SM device with clusters every
// path, combine and tile kernel must have run.
TEST_F(Gemv, EveryPath) {
  struct Shape {
    BlasOp op;
    int64_t m, n, lda;
    int a_offset, x_offset, y_offset;
  };
  const Shape shapes[] = {
      {BlasOp::N, 1, 1000003, 1000003, 0, 0, 0},  // dot product
      {BlasOp::N, 1, 1000003, 1000003, 1, 0, 3},  // dot product, A and x aligned differently
      {BlasOp::N, 1, 50, 50, 0, 0, 0},            // one short row
      {BlasOp::T, 1000003, 1, 1, 0, 0, 0},        // dot product (A's only column)
      {BlasOp::T, 1000003, 1, 1, 2, 2, 0},
      {BlasOp::N, 1000003, 1, 1, 0, 0, 0},        // scaled copy, 16-byte
      {BlasOp::N, 1000003, 1, 1, 1, 0, 2},        // scaled copy, A and y aligned differently
      {BlasOp::N, 100003, 1, 3, 0, 0, 0},         // scaled strided copy
      {BlasOp::T, 1, 1000003, 1000003, 3, 0, 3},  // scaled copy of the row, both 3 past
      {BlasOp::N, 3, 1000003, 1000003, 0, 0, 0},  // split rows
      {BlasOp::N, 8, 262147, 262147, 0, 0, 0},    // split rows, rows not 16-byte aligned
      {BlasOp::N, 64, 65536, 65536, 0, 0, 0},
      {BlasOp::N, 3, 1000004, 1000004, 0, 0, 0},  // a group of 3 rows sharing x, split
      {BlasOp::N, 4, 300001, 300004, 0, 0, 0},    // a group of 4 rows, scalar tail
      {BlasOp::N, 7, 100004, 100004, 0, 0, 0},    // 7 aligned rows: a block per row, split
      {BlasOp::N, 2, 500002, 500004, 0, 0, 0},    // a group of 2 rows, 2-float tail
      {BlasOp::N, 600, 8192, 8192, 0, 0, 0},      // a block per row
      {BlasOp::N, 600, 8192, 8192, 0, 1, 0},      // x misaligned
      {BlasOp::N, 1500, 12000, 12000, 0, 0, 0},   // pairs of rows, 2 packs a row a trip
      {BlasOp::N, 9001, 4100, 4100, 0, 0, 0},     // many rows: pairs, odd last row, tail
      {BlasOp::N, 2001, 4099, 4100, 0, 0, 1},     // a block per pair of rows, odd last row, tail
      {BlasOp::N, 1600, 8192, 8192, 0, 0, 0},     // a block per pair of rows, 4 packs a trip
      {BlasOp::N, 100003, 3, 3, 0, 0, 0},         // short rows
      {BlasOp::N, 65537, 8, 8, 1, 0, 0},
      {BlasOp::N, 4099, 64, 64, 0, 0, 0},  // aligned: 8-lane groups
      {BlasOp::N, 4099, 64, 64, 1, 0, 0},  // not aligned: short rows
      {BlasOp::N, 4099, 33, 36, 0, 0, 0},  // aligned, 33 floats: 4-lane groups
      {BlasOp::N, 20011, 5, 7, 0, 3, 0},
      {BlasOp::N, 4099, 29, 31, 0, 0, 0},  // short rows, odd lda near 32: one bank a column
      {BlasOp::N, 4099, 32, 35, 1, 0, 0},
      {BlasOp::N, 4099, 29, 36, 0, 0, 0},       // even lda: rows start at rotated columns
      {BlasOp::N, 286, 4352, 4352, 0, 0, 0},    // a cluster of 2 a row (a trip a block)
      {BlasOp::N, 10007, 1001, 1001, 0, 0, 0},  // lane groups, a head per row
      {BlasOp::N, 20000, 200, 200, 0, 0, 0},    // 8- and 16-lane groups
      {BlasOp::N, 20000, 100, 100, 0, 0, 0},
      {BlasOp::N, 20000, 40, 100, 0, 0, 0},  // 4-lane groups (wide lda)
      {BlasOp::T, 100003, 3, 3, 0, 0, 0},    // short columns
      {BlasOp::T, 100003, 3, 3, 0, 1, 0},    // short columns, x read from a pack head
      {BlasOp::T, 30011, 2, 2, 3, 3, 0},     // short columns, 1024-row tiles
      {BlasOp::T, 65537, 8, 8, 0, 0, 1},
      {BlasOp::T, 4099, 64, 64, 1, 0, 0},
      {BlasOp::T, 100003, 5, 7, 1, 2, 0},  // short columns, lda > n, 576-row tiles, partial last
      {BlasOp::T, 70001, 1, 4, 3, 1, 0},   // short columns, one column (1 lane, 256 groups)
      {BlasOp::T, 4099, 33, 40, 2, 3, 0},  // short columns, 64 lanes for 33 columns
      {BlasOp::T, 3, 1000003, 1000003, 0, 0, 0},  // few rows, strided (lda % 4 == 3)
      {BlasOp::T, 3, 600000, 600000, 0, 0, 0},    // few rows, aligned, no split
      {BlasOp::T, 8, 262144, 262144, 0, 0, 0},    // few rows, aligned, a cluster of 2
      {BlasOp::T, 64, 65536, 65536, 0, 0, 2},
      {BlasOp::T, 5, 100002, 100002, 0, 0, 0},  // few rows, strided (lda % 4 == 2)
      {BlasOp::T, 54, 7677, 7677, 0, 0, 0},     // few rows, strided, a cluster of 8
      {BlasOp::T, 2048, 2304, 2304, 0, 0, 0},   // one 1024-thread block per SM, 32 columns
      {BlasOp::T, 1024, 4608, 4608, 1, 0, 0},   // 64 columns
      {BlasOp::T, 512, 9000, 9000, 0, 0, 0},    // 128 columns
      {BlasOp::T, 4097, 4095, 4095, 0, 0, 0},   // strided tiles, split
      {BlasOp::T, 20000, 1000, 1000, 0, 0, 0},  // 64-column tiles, split
      {BlasOp::T, 70001, 1024, 1024, 0, 0, 0},  // long: a thread's 4 columns over a split
      {BlasOp::T, 40001, 1800, 1800, 0, 0, 1},  // long, a partial last tile, y misaligned
      {BlasOp::T, 600, 32768, 32768, 0, 0, 0},  // 64-column tiles, no split
      {BlasOp::T, 600, 32767, 32767, 0, 0, 0},  // strided tiles, a cluster of 2
      {BlasOp::T, 30001, 501, 501, 0, 0, 0},
      {BlasOp::T, 100, 70000, 70000, 0, 0, 0},  // 64-column tiles filling the device: no split
      {BlasOp::T, 100, 70001, 70001, 0, 0, 0},  // strided tiles, no split
      {BlasOp::T, 777, 3086, 3086, 0, 0, 0},    // strided tiles, a cluster of 8
  };
  // sanitizer: of a shape's workspace variants those that plan alike run once, with one beta
  // (turning with the shape): every path, combine, tile, group and unroll still runs
  const bool san = kktest::sanitizer_run();
  kernelkit::DeviceInfo dev;
  CUDA_CHECK(kernelkit::current_device_info(&dev));
  std::set<std::string> planned;
  std::set<std::string> seen;
  // a path as the checks below name it: path/combine[/tile][/g][/u4], the enums' values
  const auto path_of = [](const GemvPlan& p) {
    return std::to_string(int(p.path)) + "/" + std::to_string(int(p.combine)) +
           (p.path == GemvPath::kColumns ? "/" + std::to_string(int(p.tile)) : "") +
           (p.group > 1 ? "/g" : "") +
           (p.path == GemvPath::kRowPairs && p.unroll == 4 ? "/u4" : "");
  };
  uint64_t seed = 600;
  for (const Shape& s : shapes)
    for (Ws ws : {Ws::kFull, Ws::kNone, Ws::kSmall})
      for (float beta : {0.f, -0.5f}) {
        if (san) {  // buffers are 256-byte aligned: the offsets give the alignment
          const int64_t i = &s - shapes;
          const Case c{s.op, s.m, s.n, s.lda, -0.75f, beta, 0, 0, 0, false, ws};
          const GemvPlan q = kernelkit::plan_gemv(
              s.op, s.m, s.n, s.lda,
              gemv_test::alignment({s.a_offset % 4, s.x_offset % 4, s.y_offset % 4}),
              ws_bytes_for(c), dev);
          const std::string key = std::to_string(i) + ":" + std::to_string(int(q.path)) + "/" +
                                  std::to_string(int(q.combine)) + "/" +
                                  std::to_string(int(q.tile)) + "/" + std::to_string(q.group) +
                                  "/" + std::to_string(q.unroll) + "/" + std::to_string(q.width);
          // shapes of more than 2^25 floats only for a path no smaller shape ran (long T
          // matrices split over a second kernel need that many on the H100)
          const bool big_and_seen = s.m * s.n > (int64_t{1} << 25) && seen.count(path_of(q));
          if (big_and_seen || beta != (i % 2 == 0 ? 0.f : -0.5f) || !planned.insert(key).second) {
            ++seed;
            continue;
          }
        }
        const GemvPlan p = run_case(
            {s.op, s.m, s.n, s.lda, -0.75f, beta, s.a_offset, s.x_offset, s.y_offset, false, ws},
            seed++);
        seen.insert(path_of(p));
      }
  kernelkit::DeviceInfo d;
  CUDA_CHECK(kernelkit::current_device_info(&d));
  std::string all;
  for (const auto& k : seen)
    all += k + " ";
  std::printf("paths run (path/combine[/tile]): %s\n", all.c_str());
  if (d.sm_count == 132 && d.clusters()) {
    // path/combine[/tile] as the enums' values
    for (const char* want :
         {"1/0",   "2/0",   "3/0",   "3/1",   "3/3",   "4/0",   "5/0/0",  "5/0/1",
          "5/1/1", "5/3/1", "5/0/2", "5/0/3", "5/0/4", "5/3/0", "5/1/0",  "5/0/5",
          "5/1/5", "5/3/5", "5/0/6", "5/1/6", "6/3",   "7/0",   "7/0/u4", "3/3/g"})
      EXPECT_TRUE(seen.count(want)) << "no case ran " << want;
  }
}

// Every configuration of kGemvConfigs, each on the small input planned for it (config_cases:
// on this GPU, or on one like it with 2 SMs), with beta 0 (y poisoned) and beta != 0 in turn.
TEST_F(Gemv, EveryConfiguration) {
  kernelkit::DeviceInfo d;
  CUDA_CHECK(kernelkit::current_device_info(&d));
  const std::vector<gemv_test::ConfigCase> cases = gemv_test::config_cases(d);
  uint64_t seed = 9000;
  for (size_t i = 0; i < cases.size(); ++i) {
    const gemv_test::ConfigCase& k = cases[i];
    const kernelkit::GemvConfig& e = kernelkit::kGemvConfigs[i];
    const std::string what =
        "entry " + std::to_string(i) + ": path " + std::to_string(int(e.path)) + " aligned " +
        std::to_string(e.aligned) + " width " + std::to_string(e.width) + " group " +
        std::to_string(e.group) + " unroll " + std::to_string(e.unroll) + " tile " +
        std::to_string(int(e.tile)) + " combine_cols " + std::to_string(e.combine_cols);
    ASSERT_TRUE(k.found) << "no case plans " << what;
    Case c{k.op,      k.m,       k.n,       k.lda, -0.75f,     i % 2 == 0 ? 0.f : -0.5f,
           k.align.a, k.align.x, k.align.y, false, Ws::kBytes, k.ws_bytes};
    SCOPED_TRACE(what);
    run_case(c, seed++, &k.plan);
  }
}

// BlasOp::T one-wave paths: partial last pack, lda > n, beta 0 on a NaN y, row counts that
// are not a multiple of the row groups or of the unrolled loop.
TEST_F(Gemv, TransposeOneWavePaths) {
  uint64_t seed = 500;
  run_case({BlasOp::T, 1031, 16383, 16384, -0.5f, 1.f}, seed++);
  run_case({BlasOp::T, 1024, 16384, 16384, 1.f, 0.f}, seed++);
  run_case({BlasOp::T, 2053, 8190, 8192, 1.f, 0.f}, seed++);
  run_case({BlasOp::T, 2048, 8192, 8196, -0.5f, -0.5f}, seed++);
  run_case({BlasOp::T, 4099, 4093, 4096, -0.5f, 0.f, 1, 0, 0}, seed++);
  Case c{BlasOp::T, 2049, 8192, 8192, 1.f, -0.5f};
  c.small_ints = true;
  run_case(c, seed++);
}

TEST_F(Gemv, BetaZeroIgnoresNanAndAlphaZeroSkipsMatrix) {
  for (BlasOp op : {BlasOp::N, BlasOp::T}) {
    const int64_t m = 37, n = 1029;
    const int64_t ys = op == BlasOp::N ? m : n;
    auto hy = kktest::random_vector<float>(ys, 7);
    // alpha == 0: A and x are never read (null is accepted); y = beta * y
    auto dy = kktest::to_device(hy);
    ASSERT_EQ(kernelkit::gemv(op, m, n, 0.f, nullptr, n, nullptr, -0.5f, dy.get()), cudaSuccess);
    std::vector<double> ref(ys);
    for (int64_t k = 0; k < ys; ++k)
      ref[k] = -0.5 * hy[k];
    EXPECT_TRUE(kktest::check_near(dy.download(), ref, Tolerance::Exact(), op_name(op)));
    // alpha == 0, beta == 0 on a NaN y: zeros
    dy.poison();
    ASSERT_EQ(kernelkit::gemv(op, m, n, 0.f, nullptr, n, nullptr, 0.f, dy.get()), cudaSuccess);
    EXPECT_TRUE(kktest::check_near(dy.download(), std::vector<double>(ys, 0.0), Tolerance::Exact(),
                                   op_name(op)));
    // alpha == 0 with a NaN matrix: the NaNs are not read
    DeviceBuffer<float> dA(m * n), dx(op == BlasOp::N ? n : m);
    dA.poison();
    dx.poison();
    dy.upload(hy);
    ASSERT_EQ(kernelkit::gemv(op, m, n, 0.f, dA.get(), n, dx.get(), 1.f, dy.get()), cudaSuccess);
    EXPECT_TRUE(kktest::same_bits(dy.download(), hy));
    // ... also through the workspace overload
    DeviceBuffer<float> ws(1024);
    ASSERT_EQ(kernelkit::gemv(op, m, n, 0.f, dA.get(), n, dx.get(), -0.5f, dy.get(), ws.get(),
                              ws.size() * sizeof(float)),
              cudaSuccess);
    EXPECT_TRUE(kktest::check_near(dy.download(), ref, Tolerance::Exact(), op_name(op)));
    // empty inner dimension: y = beta * y
    dy.upload(hy);
    ASSERT_EQ(kernelkit::gemv(op, op == BlasOp::N ? m : 0, op == BlasOp::N ? 0 : n, 1.f, nullptr, n,
                              nullptr, -0.5f, dy.get()),
              cudaSuccess);
    EXPECT_TRUE(kktest::check_near(dy.download(), ref, Tolerance::Exact(), op_name(op)));
  }
}

TEST_F(Gemv, Deterministic) {
  const int64_t shapes[][2] = {{1024, 65536}, {65536, 1024}, {4, 65536},  {8192, 8192},
                               {1, 1000003},  {1000003, 3},  {3, 100003}, {4097, 4095}};
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes)
      for (bool with_ws : {false, true}) {
        const int64_t m = s[0], n = s[1];
        // sanitizer: no shape over 2^24 floats; one repeat (on random workspace bytes)
        if (kktest::sanitizer_run() && m * n > (int64_t{1} << 24)) continue;
        auto dA = kktest::to_device(kktest::random_vector<float>(m * n, 11));
        auto dx = kktest::to_device(kktest::random_vector<float>(op == BlasOp::N ? n : m, 12));
        DeviceBuffer<float> dy(op == BlasOp::N ? m : n);
        const size_t ws_bytes = with_ws ? kernelkit::gemv_workspace_bytes(op, m, n) : 0;
        DeviceBuffer<unsigned char> ws(ws_bytes);
        const auto call = [&] {
          return with_ws ? kernelkit::gemv(op, m, n, 1.f, dA.get(), n, dx.get(), 0.f, dy.get(),
                                           ws.get(), ws_bytes)
                         : kernelkit::gemv(op, m, n, 1.f, dA.get(), n, dx.get(), 0.f, dy.get());
        };
        dy.poison();
        ws.poison();
        ASSERT_EQ(call(), cudaSuccess);
        const auto first = dy.download();
        for (int rep = kktest::sanitizer_run() ? 2 : 0; rep < 3; ++rep) {
          // whatever the workspace held (0xFF, the previous call's partials, random bytes)
          dy.poison();
          if (rep == 2 && ws_bytes > 0)
            ws.upload(kktest::random_vector<unsigned char>(ws_bytes, 99 + rep, 0, 256));
          ASSERT_EQ(call(), cudaSuccess);
          EXPECT_TRUE(kktest::same_bits(dy.download(), first))
              << op_name(op) << " " << m << "x" << n << " ws=" << ws_bytes;
        }
      }
}

TEST_F(Gemv, BadArgumentsAreRejectedWithoutWriting) {
  DeviceBuffer<float> dA(64 * 64), dx(64), dy(64), dws(256);
  const auto hy = kktest::random_vector<float>(64, 5);
  dy.upload(hy);
  // A and x hold values: the valid calls at the end read them (initcheck)
  dA.upload(kktest::random_vector<float>(64 * 64, 6));
  dx.upload(kktest::random_vector<float>(64, 7));
  float* y = dy.get();
  const float* A = dA.get();
  const float* x = dx.get();
  void* ws = dws.get();
  const cudaError_t bad = cudaErrorInvalidValue;
  const auto byte_offset = [](const void* p, int bytes) {  // not aligned to float
    return reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(p) + bytes);
  };
  for (BlasOp op : {BlasOp::N, BlasOp::T}) {
    EXPECT_EQ(kernelkit::gemv(op, -1, 4, 1.f, A, 4, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, -1, 1.f, A, 4, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 8, 1.f, A, 7, x, 0.f, y), bad);  // lda < n
    EXPECT_EQ(kernelkit::gemv(op, 4, 0, 1.f, A, 0, x, 0.f, y), bad);  // lda < 1
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, nullptr, 4, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, nullptr, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, nullptr), bad);
    EXPECT_EQ(kernelkit::gemv(op, int64_t{1} << 40, 4, 1.f, A, int64_t{1} << 30, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 2, int64_t{1} << 62, 1.f, A, int64_t{1} << 62, x, 0.f, y), bad);
    // pointers not aligned to float
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, byte_offset(A, 2), 4, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, byte_offset(x, 1), 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, byte_offset(y, 3)), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, y, byte_offset(ws, 2), 64), bad);
    // y overlapping A or x (in place is not allowed either)
    float* a_mut = dA.get();
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, a_mut, 4, x, 0.f, a_mut + 10), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, dx.get(), 0.f, dx.get()), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, dx.get(), 0.f, dx.get() + 2), bad);
    // a workspace that is null with bytes, or overlaps A, x or y
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, y, nullptr, 64), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, y, y + 2, 64), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, y, a_mut, 64), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, y, dx.get(), 64), bad);
  }
  EXPECT_EQ(kernelkit::gemv(static_cast<BlasOp>(7), 4, 4, 1.f, A, 4, x, 0.f, y), bad);
  EXPECT_EQ(kernelkit::gemv(static_cast<BlasOp>(2), 4, 4, 1.f, A, 4, x, 0.f, y, ws, 64), bad);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(dy.download(), hy));
  // empty outputs are valid and launch nothing (null pointers allowed)
  EXPECT_EQ(kernelkit::gemv(BlasOp::N, 0, 5, 1.f, nullptr, 5, nullptr, 0.f, nullptr), cudaSuccess);
  EXPECT_EQ(kernelkit::gemv(BlasOp::T, 5, 0, 1.f, nullptr, 1, nullptr, 0.f, nullptr), cudaSuccess);
  // a workspace of 0 bytes may be null; a non-null one of 0 bytes is ignored
  EXPECT_EQ(kernelkit::gemv(BlasOp::N, 4, 4, 1.f, A, 4, x, 0.f, y, nullptr, 0), cudaSuccess);
  EXPECT_EQ(kernelkit::gemv(BlasOp::N, 4, 4, 1.f, A, 4, x, 0.f, y, y, 0), cudaSuccess);
}

// Past 2^31 elements of A: 64-bit row offsets. A[i][j] = ((i * 7 + j * 3) % 9) - 4 and
// x[k] = (k % 5) - 2 are small integers, so float sums are exact.
__global__ void fill_pattern_kernel(float* A, int64_t m, int64_t n) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < m * n;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = k / n, j = k % n;
    A[k] = static_cast<float>((i * 7 + j * 3) % 9 - 4);
  }
}

// An m x n matrix (lda = n) that `fill` writes on the device.
DeviceBuffer<float> large_matrix(int64_t m, int64_t n, void (*fill)(float*, int64_t, int64_t)) {
  DeviceBuffer<float> A(m * n);
  fill<<<4096, 256>>>(A.get(), m, n);
  CUDA_CHECK(cudaGetLastError());
  return A;
}

TEST_F(Gemv, KK_LARGE(MoreThan2Pow31Elements)) {
  const int64_t m = 32769, n = 65536;  // 2^31 + 2^16 elements, 8 GiB
  const DeviceBuffer<float> dA = large_matrix(m, n, fill_pattern_kernel);
  for (BlasOp op : {BlasOp::N, BlasOp::T}) {
    const int64_t xs = op == BlasOp::N ? n : m, ys = op == BlasOp::N ? m : n;
    std::vector<float> hx(xs);
    for (int64_t k = 0; k < xs; ++k)
      hx[k] = static_cast<float>(k % 5 - 2);
    auto dx = kktest::to_device(hx);
    DeviceBuffer<float> dy(ys);
    dy.poison();
    ASSERT_EQ(kernelkit::gemv(op, m, n, 1.f, dA.get(), n, dx.get(), 0.f, dy.get()), cudaSuccess);
    std::vector<double> ref(ys, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double a = double((i * 7 + j * 3) % 9 - 4);
        if (op == BlasOp::N) {
          ref[i] += a * hx[j];
        } else {
          ref[j] += a * hx[i];
        }
      }
    EXPECT_TRUE(kktest::check_near(dy.download(), ref, Tolerance::Exact(), op_name(op)));
  }
}

// The thin paths past 2^31 elements, through the workspace (0xFF): A[i][j] = (i / 128 +
// j / 128) % 2 (0 or 1) and x[k] = 1 when k % 128 == 0, else 0, so every partial sum is an
// integer below 2^24 and exact; outputs are checked at sampled indices (first, last, and
// around the row that crosses 2^31 elements).
constexpr int64_t kSparse = 128;

__global__ void fill_sparse_kernel(float* A, int64_t m, int64_t n) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < m * n;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = k / n, j = k % n;
    A[k] = static_cast<float>((i / kSparse + j / kSparse) % 2);
  }
}

std::vector<int64_t> sample_outputs(int64_t count, int64_t around) {
  std::vector<int64_t> idx;
  for (int64_t k = 0; k < std::min<int64_t>(count, 257); ++k)
    idx.push_back(k);
  for (int64_t k = std::max<int64_t>(0, count - 257); k < count; ++k)
    idx.push_back(k);
  for (int64_t k = std::max<int64_t>(0, around - 300); k < std::min(count, around + 300); ++k)
    idx.push_back(k);
  return idx;
}

void check_large(BlasOp op, int64_t m, int64_t n, const float* A, uint64_t seed) {
  const int64_t xs = op == BlasOp::N ? n : m, ys = op == BlasOp::N ? m : n;
  std::vector<float> hx(xs);
  for (int64_t k = 0; k < xs; ++k)
    hx[k] = k % kSparse == 0 ? 1.f : 0.f;
  auto dx = kktest::to_device(hx);
  DeviceBuffer<float> dy(ys);
  dy.poison();
  const size_t ws_bytes = kernelkit::gemv_workspace_bytes(op, m, n);
  DeviceBuffer<unsigned char> ws(ws_bytes);
  ws.poison();
  ASSERT_EQ(kernelkit::gemv(op, m, n, 1.f, A, n, dx.get(), 0.f, dy.get(), ws.get(), ws_bytes),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto a_at = [](int64_t i, int64_t j) { return double((i / kSparse + j / kSparse) % 2); };
  std::vector<double> ref;
  std::vector<float> got;
  const int64_t crossing = op == BlasOp::N ? (int64_t{1} << 31) / n : ys / 2;
  for (int64_t k : sample_outputs(ys, crossing)) {
    double s = 0;
    for (int64_t i = 0; i < xs; i += kSparse)  // x is 1 at multiples of kSparse only
      s += op == BlasOp::N ? a_at(k, i) : a_at(i, k);
    ref.push_back(s);
    float v = 0;
    CUDA_CHECK(cudaMemcpy(&v, dy.get() + k, sizeof v, cudaMemcpyDeviceToHost));
    got.push_back(v);
  }
  EXPECT_TRUE(kktest::check_near(got, ref, Tolerance::Exact(),
                                 std::string(op_name(op)) + " " + std::to_string(m) + "x" +
                                     std::to_string(n) + " seed " + std::to_string(seed)));
}

// check_large on an m x n matrix of the sparse pattern, for each (op, seed) of `runs`.
void check_thin(int64_t m, int64_t n, std::initializer_list<std::pair<BlasOp, uint64_t>> runs) {
  const DeviceBuffer<float> A = large_matrix(m, n, fill_sparse_kernel);
  for (const auto& [op, seed] : runs)
    check_large(op, m, n, A.get(), seed);
}

TEST_F(Gemv, KK_LARGE(ThinShapesPast2Pow31Elements)) {
  // two rows of 2^30 + 5: N splits the rows (dot products), T runs few rows
  check_thin(2, (int64_t{1} << 30) + 5, {{BlasOp::N, 1}, {BlasOp::T, 2}});
  // three aligned rows of 2^30 + 4: N a group of 3 rows sharing x, split
  check_thin(3, (int64_t{1} << 30) + 4, {{BlasOp::N, 7}});
  // 2^19 + 1 rows of 4096 (2^31 + 4096 elements): N a block per pair of rows, the grid's
  // 65535 blocks looping over 262145 pairs
  check_thin((int64_t{1} << 19) + 1, 4096, {{BlasOp::N, 8}});
  // 2^29 + 3 rows of 4: N short rows, T short columns
  check_thin((int64_t{1} << 29) + 3, 4, {{BlasOp::N, 3}, {BlasOp::T, 4}});
  // one column of 2^31 + 7: N a scaled copy, T a dot product
  check_thin((int64_t{1} << 31) + 7, 1, {{BlasOp::N, 5}, {BlasOp::T, 6}});
}

}  // namespace
