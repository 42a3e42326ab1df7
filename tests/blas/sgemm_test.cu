// SPDX-License-Identifier: Apache-2.0
// kernelkit::sgemm against a float64 CPU reference: shape sweep over all four op
// combinations, padded leading dimensions, pointers offset by one element (4-byte copy
// paths), alpha/beta in {0, 1, -1.5}, NaN in C with beta == 0, alpha == 0 with NaN in A,
// bit-exact results with small-integer inputs, argument checks, and one Large_ case past
// 2^31 elements of A. Every path of the plan: the tiled kernel with every tile, stage count
// and split (plain split-K and the split tail, forced through hand-made plans, with a
// workspace full of 0xFF), the split chosen by the library with a dirty workspace, the gemv
// path (one row or one column of C), the skinny path (m or n <= 32, both orientations), the
// pack of op(B) = B^T into the workspace (forced with every tile and split, and chosen by the
// library; the direct kernel when the workspace is short or B cannot be packed).
// The runner here is shared with sgemm_ladder_test.cu.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernelkit/blas/sgemm.cuh"
#include "kernelkit/blas/sgemm_plan.cuh"

#include "common/test_util.cuh"
#include "ladder/sgemm/registry.cuh"

#include "blas/sgemm_case.cuh"
#include "blas/sgemm_config_case.cuh"

namespace sgemm_testing {

using kernelkit::BlasOp;
using kktest::DeviceBuffer;
using kktest::Tolerance;

std::string describe(const std::string& name, const SgemmCase& c, uint64_t seed) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s op=%c%c m=%lld n=%lld k=%lld pad=%lld,%lld,%lld off=%d alpha=%g beta=%g "
                "ints=%d seed=%llu",
                name.c_str(), c.op_a == BlasOp::N ? 'N' : 'T', c.op_b == BlasOp::N ? 'N' : 'T',
                (long long)c.m, (long long)c.n, (long long)c.k, (long long)c.pad_a,
                (long long)c.pad_b, (long long)c.pad_c, c.offset, c.alpha, c.beta,
                int(c.small_ints), (unsigned long long)seed);
  return buf;
}

namespace {
std::vector<float> make_input(size_t n, uint64_t seed, bool small_ints) {
  auto v = kktest::random_vector<float>(n, seed, small_ints ? -4 : -1, small_ints ? 5 : 1);
  if (small_ints)
    for (auto& e : v)
      e = std::floor(e);
  return v;
}
}  // namespace

void run_call(const std::string& name, const SgemmCall& call, SupportsFn supports,
              const SgemmCase& c, uint64_t seed) {
  const std::string label = describe(name, c, seed);
  const int64_t a_rows = c.op_a == BlasOp::N ? c.m : c.k, a_cols = c.op_a == BlasOp::N ? c.k : c.m;
  const int64_t b_rows = c.op_b == BlasOp::N ? c.k : c.n, b_cols = c.op_b == BlasOp::N ? c.n : c.k;
  const int64_t lda = std::max<int64_t>(1, a_cols + c.pad_a);
  const int64_t ldb = std::max<int64_t>(1, b_cols + c.pad_b);
  const int64_t ldc = std::max<int64_t>(1, c.n + c.pad_c);
  const size_t a_size = size_t(a_rows * lda) + c.offset, b_size = size_t(b_rows * ldb) + c.offset;
  const size_t c_size = size_t(c.m * ldc) + c.offset;

  auto hA = make_input(a_size, seed, c.small_ints);
  auto hB = make_input(b_size, seed + 1, c.small_ints);
  auto hC = make_input(c_size, seed + 2, c.small_ints);
  if (c.nan_in_a && a_size > size_t(c.offset)) hA[c.offset] = std::nanf("");
  if (c.beta == 0.f) {  // C is write-only: start from all-NaN (0xFF bytes)
    uint32_t all_ones = 0xFFFFFFFFu;
    float nan_bits;
    std::memcpy(&nan_bits, &all_ones, 4);
    std::fill(hC.begin(), hC.end(), nan_bits);
  }
  auto dA = kktest::to_device(hA);
  auto dB = kktest::to_device(hB);
  auto dC = kktest::to_device(hC);
  const float* A = dA.get() ? dA.get() + c.offset : nullptr;
  const float* B = dB.get() ? dB.get() + c.offset : nullptr;
  float* C = dC.get() ? dC.get() + c.offset : nullptr;

  if (!supports(c.op_a, c.op_b, c.m, c.n, c.k, A, lda, B, ldb, C, ldc)) {
    EXPECT_EQ(call(c, A, lda, B, ldb, C, ldc), cudaErrorInvalidValue) << label;
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(dC.download(), hC)) << label << ": C written";
    return;
  }
  ASSERT_EQ(call(c, A, lda, B, ldb, C, ldc), cudaSuccess) << label;
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto got_all = dC.download();

  // rows checked against the reference: all of them for small problems, a spread
  // (first, last, tile edges, evenly spaced) for big ones
  std::vector<int64_t> rows;
  if (double(c.m) * c.n * c.k <= 1 << 26) {
    for (int64_t i = 0; i < c.m; ++i)
      rows.push_back(i);
  } else {
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{127}, int64_t{128},
                      c.m - 2, c.m - 1})
      if (i >= 0 && i < c.m) rows.push_back(i);
    for (int r = 0; r < 40; ++r)
      rows.push_back(int64_t(double(r) * (c.m - 1) / 39.0));
  }

  // op(B) as a dense k x n float64 matrix (and |op(B)|)
  std::vector<double> Bd(size_t(c.k * c.n));
  for (int64_t p = 0; p < c.k; ++p)
    for (int64_t j = 0; j < c.n; ++j)
      Bd[p * c.n + j] =
          c.op_b == BlasOp::N ? hB[c.offset + p * ldb + j] : hB[c.offset + j * ldb + p];

  std::vector<float> got;
  std::vector<double> ref;
  double max_mag = 0;
  std::vector<double> acc(c.n), mag(c.n);
  const bool alpha_zero = c.alpha == 0.f;
  for (int64_t i : rows) {
    std::fill(acc.begin(), acc.end(), 0.0);
    std::fill(mag.begin(), mag.end(), 0.0);
    if (!alpha_zero) {
      for (int64_t p = 0; p < c.k; ++p) {
        const double a =
            c.op_a == BlasOp::N ? hA[c.offset + i * lda + p] : hA[c.offset + p * lda + i];
        const double* brow = &Bd[p * c.n];
        for (int64_t j = 0; j < c.n; ++j) {
          acc[j] += a * brow[j];
          mag[j] += std::fabs(a * brow[j]);
        }
      }
    }
    for (int64_t j = 0; j < c.n; ++j) {
      const double old = hC[c.offset + i * ldc + j];
      const double r = double(c.alpha) * acc[j] + (c.beta == 0.f ? 0.0 : double(c.beta) * old);
      max_mag = std::max(max_mag, std::fabs(double(c.alpha)) * mag[j] +
                                      (c.beta == 0.f ? 0.0 : std::fabs(double(c.beta) * old)));
      ref.push_back(r);
      got.push_back(got_all[c.offset + i * ldc + j]);
    }
  }
  // fp32 accumulation of k products: |error| <= (k + 2) u sum |alpha a b| + |beta c| terms
  const Tolerance tol =
      c.small_ints ? Tolerance::Exact()
                   : Tolerance::Rel(0, double(c.k + 4) * std::ldexp(1.0, -24) * max_mag + 1e-30);
  EXPECT_TRUE(kktest::check_near(got, ref, tol, label));

  // every element of C outside the checked rows is finite (written, for beta == 0); the
  // padding between n and ldc and the elements before C are untouched
  size_t bad_pad = 0, non_finite = 0;
  for (size_t e = 0; e < got_all.size(); ++e) {
    const bool before = e < size_t(c.offset);
    const int64_t j = before ? 0 : int64_t(e - c.offset) % ldc;
    if (before || j >= c.n) {
      bad_pad += std::memcmp(&got_all[e], &hC[e], 4) != 0;
    } else if (!c.nan_in_a || alpha_zero) {
      non_finite += !std::isfinite(got_all[e]);
    }
  }
  EXPECT_EQ(bad_pad, 0u) << label << ": padding / elements before C written";
  EXPECT_EQ(non_finite, 0u) << label << ": non-finite (unwritten?) elements of C";
}

void run_case(const char* name, Fn fn, SupportsFn supports, const SgemmCase& c, uint64_t seed) {
  const SgemmCall call = [fn](const SgemmCase& c, const float* A, int64_t lda, const float* B,
                              int64_t ldb, float* C, int64_t ldc) {
    return fn(c.op_a, c.op_b, c.m, c.n, c.k, c.alpha, A, lda, B, ldb, c.beta, C, ldc, nullptr);
  };
  run_call(name, call, supports, c, seed);
}

}  // namespace sgemm_testing

namespace {

using kernelkit::BlasOp;
using kktest::DeviceBuffer;
using sgemm_testing::SgemmCase;

class SgemmTest : public kktest::GpuTest {};

constexpr BlasOp kOps[] = {BlasOp::N, BlasOp::T};

void run_lib(const SgemmCase& c, uint64_t seed) {
  const auto& lib = kernelkit::ladder::sgemm::kLibrary;
  sgemm_testing::run_case(lib.name, lib.fn, lib.supports, c, seed);
}

bool any_args(BlasOp, BlasOp, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
              int64_t, const float*, int64_t) {
  return true;
}

// Bytes filled with `fill` (0xFF: every float NaN), for the workspace.
DeviceBuffer<unsigned char> dirty_bytes(size_t n, int fill) {
  DeviceBuffer<unsigned char> b(n);
  if (n > 0) CUDA_CHECK(cudaMemset(b.get(), fill, n));
  return b;
}

// The library with a workspace of `bytes` bytes (sgemm_workspace_bytes(m, n, k) when
// SIZE_MAX) that start `skew` bytes into an allocation filled with `fill`.
sgemm_testing::SgemmCall library_with_workspace(int fill = 0xFF, size_t skew = 0,
                                                size_t ws_bytes = SIZE_MAX) {
  return [=](const SgemmCase& c, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
             int64_t ldc) {
    const size_t bytes =
        ws_bytes == SIZE_MAX ? kernelkit::sgemm_workspace_bytes(c.m, c.n, c.k) : ws_bytes;
    auto ws = dirty_bytes(bytes + skew + 1, fill);
    const cudaError_t e = kernelkit::sgemm(c.op_a, c.op_b, c.m, c.n, c.k, c.alpha, A, lda, B, ldb,
                                           c.beta, C, ldc, ws.get() + skew, bytes);
    CUDA_CHECK(cudaDeviceSynchronize());
    return e;
  };
}

void run_lib_ws(const SgemmCase& c, uint64_t seed, int fill = 0xFF) {
  sgemm_testing::run_call("kernelkit+workspace", library_with_workspace(fill), any_args, c, seed);
}

// A tiled plan made by hand on the current device: `tile` (128 x 64 where the load modes
// allow no other), computing C^T = op(B)^T op(A)^T where `trans` asks or where the table has
// the tile only with the two copy modes swapped, `stages`, the last `split_tiles` tiles (all
// of them when larger than the tile count) computed in `splits` parts of K, op(B) packed first
// where `pack` asks and B allows it (not with C^T); launched with a workspace full of 0xFF.
sgemm_testing::SgemmCall forced_tiled(kernelkit::SgemmTile tile, int stages, int64_t split_tiles,
                                      int splits, bool pack = false, bool trans = false) {
  namespace kd = kernelkit::detail;
  return [=](const SgemmCase& c, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
             int64_t ldc) -> cudaError_t {
    kernelkit::DeviceInfo d;
    KERNELKIT_RETURN_IF_ERROR(kernelkit::current_device_info(&d));
    const kernelkit::SgemmAlignment al{kernelkit::alignment_of(A), kernelkit::alignment_of(B),
                                       kernelkit::alignment_of(C)};
    kd::SgemmTiledChoice ch;
    ch.pack_b = pack && !trans && kd::sgemm_can_pack_b(c.op_b, c.n, c.k, ldb);
    // the kernel's copies, computing C or (tr, never with the pack) C^T
    const auto loads = [&](bool tr) {
      return kd::sgemm_kernel_loads(c.op_a, c.op_b, c.n, lda, ldb, al, ch.pack_b && !tr, tr);
    };
    const auto allowed = [&](kernelkit::SgemmTile t, bool tr) {
      return !(tr && ch.pack_b) && kernelkit::sgemm_tile_allowed(t, loads(tr).a, loads(tr).b, tr);
    };
    ch.tile = allowed(tile, trans) || allowed(tile, !trans) ? tile : kernelkit::SgemmTile::k128x64;
    ch.trans_c = allowed(ch.tile, trans) ? trans : !trans;
    ch.load_b = loads(ch.trans_c).b;
    const kd::SgemmTileFit fit = kd::sgemm_fit_tile(ch.tile, d);
    ch.fit = {std::min(stages, fit.stages), fit.blocks_per_sm};
    const auto s = kernelkit::sgemm_tile_shape(ch.tile);
    const int64_t km = ch.trans_c ? c.n : c.m, kn = ch.trans_c ? c.m : c.n;
    const int64_t tiles =
        kernelkit::ceil_div<int64_t>(km, s.bm) * kernelkit::ceil_div<int64_t>(kn, s.bn);
    const int64_t k_tiles = kernelkit::ceil_div<int64_t>(c.k, kernelkit::kSgemmBK);
    ch.split_tiles = splits > 1 && k_tiles >= 2 ? std::min(split_tiles, tiles) : 0;
    ch.dp_tiles = tiles - ch.split_tiles;
    if (ch.split_tiles > 0) {
      ch.split_k_tiles = kernelkit::ceil_div<int64_t>(k_tiles, splits);
      ch.splits = static_cast<int>(kernelkit::ceil_div<int64_t>(k_tiles, ch.split_k_tiles));
    }
    const int64_t k_used = c.alpha == 0.f ? 0 : c.k;
    kernelkit::SgemmPlan plan =
        kd::sgemm_tiled_plan(ch, c.op_a, c.op_b, c.m, c.n, c.k, lda, ldb, ldc, al, d);
    if (k_used == 0 || c.m == 0 || c.n == 0)  // the library's own plan (kScale / kNone)
      plan = kernelkit::plan_sgemm(c.op_a, c.op_b, c.m, c.n, k_used, lda, ldb, ldc, al, 0, d);
    auto ws = dirty_bytes(plan.workspace_used + 16, 0xFF);
    const cudaError_t e = kernelkit::launch_sgemm(plan, c.m, c.n, k_used, c.alpha, A, lda, B, ldb,
                                                  c.beta, C, ldc, ws.get(), nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    return e;
  };
}

// The plan the library makes for case c on the current device (ld as in run_call; operands
// 16-byte aligned unless c.offset) with a workspace of `ws_bytes` (SIZE_MAX:
// sgemm_workspace_bytes).
kernelkit::SgemmPlan library_plan(const SgemmCase& c, size_t ws_bytes = SIZE_MAX) {
  kernelkit::DeviceInfo d;
  CUDA_CHECK(kernelkit::current_device_info(&d));
  const int64_t lda = std::max<int64_t>(1, (c.op_a == BlasOp::N ? c.k : c.m) + c.pad_a);
  const int64_t ldb = std::max<int64_t>(1, (c.op_b == BlasOp::N ? c.n : c.k) + c.pad_b);
  const int64_t ldc = std::max<int64_t>(1, c.n + c.pad_c);
  const kernelkit::Alignment at(int64_t{4} * c.offset);  // (buffers are 256-byte aligned)
  return kernelkit::plan_sgemm(
      c.op_a, c.op_b, c.m, c.n, c.k, lda, ldb, ldc, {at, at, at},
      ws_bytes == SIZE_MAX ? kernelkit::sgemm_workspace_bytes(c.m, c.n, c.k) : ws_bytes, d);
}

TEST_F(SgemmTest, ShapeSweepAllOps) {
  const int64_t shapes[][3] = {{1, 1, 1},     {1, 300, 1},     {300, 1, 200},  {127, 131, 137},
                               {31, 33, 32},  {33, 31, 17},    {128, 128, 16}, {129, 257, 65},
                               {256, 64, 48}, {1000, 1000, 1}, {5, 7, 0},      {0, 5, 5},
                               {5, 0, 5},     {2, 517, 3},     {515, 3, 1029}};
  uint64_t seed = 100;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (const auto& s : shapes) {
        SgemmCase c{oa, ob, s[0], s[1], s[2]};
        run_lib(c, seed++);
        if (kktest::sanitizer_run()) continue;  // sanitizer: same kernels as above, other values
        c.small_ints = true;
        run_lib(c, seed++);
      }
}

TEST_F(SgemmTest, AlphaBetaAllOps) {
  uint64_t seed = 300;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (float alpha : {0.f, 1.f, -1.5f})
        for (float beta : {0.f, 1.f, -1.5f})
          for (bool ints : {false, true}) {
            if (ints && kktest::sanitizer_run()) continue;  // sanitizer: same kernels, other values
            SgemmCase c{oa, ob, 127, 131, 137};
            c.alpha = alpha, c.beta = beta, c.small_ints = ints;
            run_lib(c, seed++);
          }
}

TEST_F(SgemmTest, PaddedLeadingDimensionsAndOffsets) {
  // pad 3: ld % 4 != 0 (4-byte copy path); offset 1: 4-byte aligned pointers only
  uint64_t seed = 500;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (int64_t pad : {1, 3, 4, 9})
        for (int offset : {0, 1}) {
          SgemmCase c{oa, ob, 67, 133, 45};
          c.pad_a = pad, c.pad_b = pad + 1, c.pad_c = pad + 2, c.offset = offset;
          c.beta = 1.f;
          run_lib(c, seed++);
          c.small_ints = true, c.beta = -1.5f;
          run_lib(c, seed++);
        }
}

TEST_F(SgemmTest, TileShapesEveryDispatchPath) {
  // On 132 SMs: 128 x 64 tiles (640 x 576: 25 tiles of 128 x 128), 128 x 256 (1537 x 1795:
  // 195 tiles of 128 x 128, 104 of 128 x 256, one wave each) and 128 x 128 (1000 x 4097:
  // 264 tiles are one wave at two a SM, 136 of 128 x 256 would be two); partial edge tiles
  uint64_t seed = 700;
  int64_t index = 0;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (const auto& s :
           {std::array<int64_t, 3>{640, 576, 100}, std::array<int64_t, 3>{1537, 1795, 33},
            std::array<int64_t, 3>{1000, 4097, 33}}) {
        if (!kktest::sanitize_keep(index++, 2)) continue;  // each shape twice, every op
        SgemmCase c{oa, ob, s[0], s[1], s[2]};
        c.small_ints = true, c.beta = 1.f;
        run_lib(c, seed++);
      }
}

// The benchmark's ragged shape; Large_ only to keep it out of the sanitizer runs (34 GFLOP
// per call, 5 calls), not because it passes 2^31 elements.
TEST_F(SgemmTest, KK_LARGE(Shape4095x4097x1023)) {
  uint64_t seed = 900;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps) {
      SgemmCase c{oa, ob, 4095, 4097, 1023};
      c.alpha = -1.5f, c.beta = 1.f;
      run_lib(c, seed++);
    }
  SgemmCase c{BlasOp::N, BlasOp::N, 4095, 4097, 1023};
  c.small_ints = true;
  run_lib(c, seed++);
}

TEST_F(SgemmTest, AlphaZeroDoesNotReadAB) {
  for (float beta : {0.f, 1.f, -1.5f}) {
    SgemmCase c{BlasOp::N, BlasOp::T, 40, 50, 60};
    c.alpha = 0.f, c.beta = beta, c.nan_in_a = true;
    run_lib(c, 1000);
  }
}

TEST_F(SgemmTest, BadArgumentsLeaveCUntouched) {
  // A and B hold values: the valid calls below read them (initcheck)
  auto a = kktest::to_device(kktest::random_vector<float>(64 * 64, 31));
  auto b = kktest::to_device(kktest::random_vector<float>(64 * 64, 37));
  DeviceBuffer<float> c(64 * 64);
  c.poison();
  const auto before = c.download();
  const float *A = a.get(), *B = b.get();
  float* C = c.get();
  auto call = [&](BlasOp oa, BlasOp ob, int64_t m, int64_t n, int64_t k, const float* pa,
                  int64_t lda, const float* pb, int64_t ldb, float* pc, int64_t ldc) {
    return kernelkit::sgemm(oa, ob, m, n, k, 1.f, pa, lda, pb, ldb, 0.f, pc, ldc);
  };
  const auto kBad = cudaErrorInvalidValue;
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, -1, 8, 8, A, 8, B, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, -1, 8, A, 8, B, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, -1, A, 8, B, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 9, A, 8, B, 8, C, 8), kBad);  // lda < k
  EXPECT_EQ(call(BlasOp::T, BlasOp::N, 9, 8, 8, A, 8, B, 8, C, 8), kBad);  // lda < m (A^T)
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 9, 8, A, 8, B, 8, C, 9), kBad);  // ldb < n
  EXPECT_EQ(call(BlasOp::N, BlasOp::T, 8, 8, 9, A, 9, B, 8, C, 8), kBad);  // ldb < k (B^T)
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 9, 8, A, 8, B, 9, C, 8), kBad);  // ldc < n
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, nullptr, 8, B, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, nullptr, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, B, 8, nullptr, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 0, A, 0, B, 8, C, 8), kBad);  // ld >= 1
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, int64_t{1} << 62, 8, 8, A, 8, B, 8, C, 8),
            kBad);  // overflow
  // unknown ops (an out-of-range value must not run as T)
  EXPECT_EQ(call(static_cast<BlasOp>(2), BlasOp::N, 8, 8, 8, A, 8, B, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, static_cast<BlasOp>(-1), 8, 8, 8, A, 8, B, 8, C, 8), kBad);
  // pointers not aligned to a float
  const auto skew = [](const float* p) {
    return reinterpret_cast<float*>(reinterpret_cast<uintptr_t>(p) + 1);
  };
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, skew(A), 8, B, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, skew(B), 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, B, 8, skew(C), 8), kBad);
  // C overlapping A or B (exactly or partly)
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, C, 8, B, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, C + 60, 8, C, 8), kBad);
  EXPECT_EQ(call(BlasOp::T, BlasOp::T, 8, 8, 8, C + 7, 8, B, 8, C, 8), kBad);
  // a workspace: null with bytes, or overlapping C, A or B
  DeviceBuffer<float> w(1024);
  auto call_ws = [&](const float* pa, const float* pb, float* pc, void* ws, size_t bytes) {
    return kernelkit::sgemm(BlasOp::N, BlasOp::N, 8, 8, 8, 1.f, pa, 8, pb, 8, 0.f, pc, 8, ws,
                            bytes);
  };
  EXPECT_EQ(call_ws(A, B, C, nullptr, 256), kBad);
  EXPECT_EQ(call_ws(A, B, C, C + 32, 256), kBad);
  EXPECT_EQ(call_ws(w.get(), B, C, w.get() + 32, 256), kBad);
  EXPECT_EQ(call_ws(A, w.get(), C, w.get(), 256), kBad);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(c.download(), before));
  EXPECT_EQ(call_ws(A, B, C, w.get(), 4096), cudaSuccess);  // a workspace that fits nowhere
  EXPECT_EQ(call_ws(A, B, C, nullptr, 0), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  c.poison();
  // empty problems are valid and write nothing
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 0, 8, 8, A, 8, B, 8, C, 8), cudaSuccess);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 0, 8, A, 8, B, 8, C, 1), cudaSuccess);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 0, 0, 0, nullptr, 1, nullptr, 1, nullptr, 1), cudaSuccess);
  EXPECT_EQ(call(BlasOp::N, BlasOp::N, 8, 8, 0, nullptr, 1, nullptr, 8, C, 8),
            cudaSuccess);  // C = 0
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto after = c.download();
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(after[i * 8 + j], 0.f);
}

// Every configuration of kSgemmConfigs, each on the small call planned for it
// (sgemm_config_test::config_cases: on this GPU, or on one like it with 2 SMs), launched with
// launch_sgemm and a workspace full of NaN; beta 0 (C poisoned) and beta != 0 in turn.
TEST_F(SgemmTest, EveryConfiguration) {
  kernelkit::DeviceInfo d;
  CUDA_CHECK(kernelkit::current_device_info(&d));
  const std::vector<sgemm_config_test::ConfigCase> cases = sgemm_config_test::config_cases(d);
  uint64_t seed = 9000;
  for (size_t i = 0; i < cases.size(); ++i) {
    const sgemm_config_test::ConfigCase& k = cases[i];
    const kernelkit::SgemmConfig& e = kernelkit::kSgemmConfigs[i];
    const std::string name =
        "entry " + std::to_string(i) + ": path " + std::to_string(int(e.path)) + " tile " +
        std::to_string(int(e.tile)) + " loads " + std::to_string(int(e.load_a)) + "," +
        std::to_string(int(e.load_b)) + " trans_c " + std::to_string(e.trans_c) + " rows " +
        std::to_string(e.rows) + " vec " + std::to_string(e.vec) + " mode " +
        std::to_string(int(e.mode)) + " a_along_k " + std::to_string(e.a_along_k);
    ASSERT_TRUE(k.found) << "no case plans " << name;
    SgemmCase c{k.op_a, k.op_b, k.m, k.n, k.k};
    c.pad_a = c.pad_b = c.pad_c = k.pad;
    c.offset = k.offset;
    c.beta = i % 2 == 0 ? 0.f : -0.5f;
    const kernelkit::SgemmPlan plan = k.plan;
    const auto call = [plan](const SgemmCase& cc, const float* A, int64_t lda, const float* B,
                             int64_t ldb, float* C, int64_t ldc) {
      auto ws = dirty_bytes(plan.workspace_used + 16, 0xFF);
      const cudaError_t err = kernelkit::launch_sgemm(plan, cc.m, cc.n, cc.k, cc.alpha, A, lda, B,
                                                      ldb, cc.beta, C, ldc, ws.get(), nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      return err;
    };
    sgemm_testing::run_call(name, call, any_args, c, seed++);
  }
}

// Every tile, two stage counts, and the three ways of covering the tiles (whole tiles, every
// tile split in three parts of K, the last two tiles split in four behind whole ones), all
// op combinations, with partial edge tiles, op(B) = B^T read directly and packed, C and C^T
// computed (the kernel's A op(B)^T, its B op(A)^T; where the table has a tile only one way
// round, the other); a padded / offset variant takes the 4-byte copies (packed: B unpadded
// but 4-byte aligned, the transpose's shifted kernel). The workspace starts full of NaN.
TEST_F(SgemmTest, ForcedTiledPlansEveryTileStageAndSplit) {
  using kernelkit::SgemmTile;
  // sanitizer: K = 68 (5 k-tiles, the last partial) and every 5th case: each (tile, stages,
  // split) once, each tile with all op / pack / C^T combinations, all offset variants
  const int64_t k = kktest::sanitizer_run() ? 68 : 260;
  int64_t index = 0;
  uint64_t seed = 2000;
  for (SgemmTile tile : {SgemmTile::k128x256, SgemmTile::k128x128, SgemmTile::k128x64,
                         SgemmTile::k64x256, SgemmTile::k64x128})
    for (int stages : {2, 4})
      for (const auto& split : {std::array<int64_t, 2>{0, 1}, std::array<int64_t, 2>{1 << 20, 3},
                                std::array<int64_t, 2>{2, 4}})
        for (BlasOp oa : kOps)
          for (BlasOp ob : kOps)
            for (int variant = 0; variant < 3; ++variant) {  // as is, op(B) packed, C^T
              const bool pack = variant == 1, trans = variant == 2;
              if (pack && ob == BlasOp::N) continue;
              if (trans && stages == 2) continue;
              if (!kktest::sanitize_keep(index++, 5)) continue;
              SgemmCase c{oa, ob, 200, 300, k};
              c.beta = 1.f;
              const std::string name = "forced tile " + std::to_string(int(tile)) + " stages " +
                                       std::to_string(stages) + " split " +
                                       std::to_string(split[0]) + "x" + std::to_string(split[1]) +
                                       (pack ? " pack" : "") + (trans ? " C^T" : "");
              const auto call =
                  forced_tiled(tile, stages, split[0], static_cast<int>(split[1]), pack, trans);
              sgemm_testing::run_call(name, call, any_args, c, seed++);
              if (stages == 4 && (oa == ob || pack || trans)) {
                c.pad_a = 3, c.pad_b = pack ? 0 : 1, c.pad_c = 2, c.offset = 1, c.small_ints = true,
                c.beta = 0.f;
                sgemm_testing::run_call(name + " offset", call, any_args, c, seed++);
              }
            }
}

// op(B) = B^T packed into the workspace and read directly give the same bits (same tile,
// stages and split: each element's FFMA chain along K does not depend on how B reached
// shared memory, nor on which operand is the kernel's A: TT read directly computes C^T), for
// NT and TT, with B 16-byte aligned and not, every tile whole or split in the same parts.
TEST_F(SgemmTest, PackedAndDirectSameBits) {
  using kernelkit::SgemmTile;
  const int64_t m = 300, n = 516, k = kktest::sanitizer_run() ? 68 : 333;  // sanitizer: 5 k-tiles
  for (BlasOp oa : kOps)
    for (int offset : {0, 1})
      for (const auto& split : {std::array<int64_t, 2>{0, 1}, std::array<int64_t, 2>{1 << 20, 3}}) {
        SgemmCase c{oa, BlasOp::T, m, n, k};
        const int64_t lda = oa == BlasOp::N ? k : m;
        auto hA = kktest::random_vector<float>(size_t(m * k) + offset, 41);
        auto hB = kktest::random_vector<float>(size_t(n * k) + offset, 43);
        auto dA = kktest::to_device(hA), dB = kktest::to_device(hB);
        DeviceBuffer<float> c1(size_t(m * n) + offset), c2(size_t(m * n) + offset);
        c1.poison();
        c2.poison();
        const auto split_parts = static_cast<int>(split[1]);
        for (SgemmTile tile : {SgemmTile::k128x256, SgemmTile::k128x64}) {
          // sanitizer: half the cases, each of op, offset, split and tile both ways with both
          // ways of every other one
          if (kktest::sanitizer_run() &&
              ((oa == BlasOp::T) + offset + (split[0] > 0) + (tile == SgemmTile::k128x64)) % 2)
            continue;
          const auto direct = forced_tiled(tile, 4, split[0], split_parts, false);
          const auto packed = forced_tiled(tile, 4, split[0], split_parts, true);
          ASSERT_EQ(direct(c, dA.get() + offset, lda, dB.get() + offset, k, c1.get() + offset, n),
                    cudaSuccess);
          ASSERT_EQ(packed(c, dA.get() + offset, lda, dB.get() + offset, k, c2.get() + offset, n),
                    cudaSuccess);
          EXPECT_TRUE(kktest::same_bits(c1.download(), c2.download()))
              << "op " << (oa == BlasOp::N ? "NT" : "TT") << " offset " << offset << " tile "
              << int(tile) << " split " << split[0];
        }
      }
}

// The library's own pack of op(B) = B^T (NT; TT computes C^T instead) at a size where every
// test device takes it (SgemmPlan.PackOfOpB): with the whole workspace (packed; dirty), one byte
// short of the pack (the direct kernel), without one; A and C padded and every pointer 4-byte
// aligned (B's transpose takes the shifted kernel); B padded or n % 4 != 0 (never packed).
TEST_F(SgemmTest, PackedOpBLibrary) {
  const int64_t m = 1536, n = 1024, k = 256;
  const size_t pack = size_t(4 * n * k);
  // sanitizer: the packed runs only (NT and TT, and NT misaligned: the shifted transpose);
  // the direct kernels they fall back to run in ForcedTiledPlansEveryTileStageAndSplit
  const bool all = !kktest::sanitizer_run();
  uint64_t seed = 2500;
  for (BlasOp oa : kOps) {
    SgemmCase c{oa, BlasOp::T, m, n, k};
    // NT packs op(B); TT computes C^T = B A (both operands then along K: nothing to pack)
    if (oa == BlasOp::N)
      EXPECT_TRUE(library_plan(c).tiled.pack_b);
    else
      EXPECT_TRUE(library_plan(c).tiled.trans_c && !library_plan(c).tiled.pack_b);
    sgemm_testing::run_call("packed", library_with_workspace(0xFF), any_args, c, seed++);
    EXPECT_FALSE(library_plan(c, pack - 1).tiled.pack_b);
    if (all)
      sgemm_testing::run_call("short workspace", library_with_workspace(0xFF, 0, pack - 1),
                              any_args, c, seed++);
    if (all)
      sgemm_testing::run_call("no workspace", library_with_workspace(0xFF, 0, 0), any_args, c,
                              seed++);
    // a workspace that starts 4 bytes into its allocation (aligned up inside: 12 bytes lost,
    // still enough for the pack and the split)
    if (all)
      sgemm_testing::run_call("skewed workspace", library_with_workspace(0xFF, 4), any_args, c,
                              seed++);
    SgemmCase o = c;
    o.pad_a = 3, o.pad_c = 1, o.offset = 1, o.alpha = -1.5f, o.beta = 1.f, o.small_ints = true;
    if (oa == BlasOp::N) EXPECT_TRUE(library_plan(o).tiled.pack_b);  // A along K: unaffected
    if (all || oa == BlasOp::N)
      sgemm_testing::run_call("packed, misaligned", library_with_workspace(0xFF), any_args, o,
                              seed++);
    SgemmCase pb = c;
    pb.pad_b = 4, pb.beta = -1.5f;
    EXPECT_FALSE(library_plan(pb).tiled.pack_b);
    if (all)
      sgemm_testing::run_call("B padded", library_with_workspace(0xFF), any_args, pb, seed++);
    SgemmCase odd{oa, BlasOp::T, m, n - 2, k};
    EXPECT_FALSE(library_plan(odd).tiled.pack_b);
    if (all)
      sgemm_testing::run_call("n % 4 != 0", library_with_workspace(0xFF), any_args, odd, seed++);
  }
}

// The library's own split of K (plain split-K, and the split tail on a grid a little over
// whole waves) with a workspace of NaN, and the same bits with a workspace of zeros.
TEST_F(SgemmTest, WorkspaceSplitDirtyWorkspace) {
  const int64_t shapes[][3] = {
      {48, 64, 8192}, {130, 200, 4096}, {300, 260, 3000}, {1000, 100, 3000}};
  {
    const kernelkit::SgemmPlan p = library_plan(SgemmCase{BlasOp::N, BlasOp::N, 48, 64, 8192});
    ASSERT_EQ(p.path, kernelkit::SgemmPath::kTiled);
    EXPECT_GT(p.tiled.splits, 1) << "48 x 64 x 8192 must split K on every device";
  }
  // sanitizer: K / 4 (the H100 still splits every shape, in 5 to 16 parts) and every 3rd
  // op / shape pair (each op and each shape at least once)
  const int64_t k_div = kktest::sanitizer_run() ? 4 : 1;
  int64_t index = 0;
  uint64_t seed = 3000;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (const auto& s : shapes) {
        if (!kktest::sanitize_keep(index++, 3)) continue;
        SgemmCase c{oa, ob, s[0], s[1], s[2] / k_div};
        run_lib_ws(c, seed++);
        c.beta = -1.5f, c.small_ints = true, c.offset = 1, c.pad_c = 3;
        run_lib_ws(c, seed++);
      }
  // same bits whatever the workspace held
  const int64_t m = 130, n = 200, k = 4096 / k_div;
  auto hA = kktest::random_vector<float>(m * k, 11);
  auto hB = kktest::random_vector<float>(k * n, 12);
  auto dA = kktest::to_device(hA), dB = kktest::to_device(hB);
  DeviceBuffer<float> c1(m * n), c2(m * n);
  const size_t bytes = kernelkit::sgemm_workspace_bytes(m, n, k);
  auto ws1 = dirty_bytes(bytes, 0xFF), ws2 = dirty_bytes(bytes, 0x00);
  ASSERT_EQ(kernelkit::sgemm(BlasOp::N, BlasOp::N, m, n, k, 1.f, dA.get(), k, dB.get(), n, 0.f,
                             c1.get(), n, ws1.get(), bytes),
            cudaSuccess);
  ASSERT_EQ(kernelkit::sgemm(BlasOp::N, BlasOp::N, m, n, k, 1.f, dA.get(), k, dB.get(), n, 0.f,
                             c2.get(), n, ws2.get(), bytes),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(c1.download(), c2.download()));
}

// One row or one column of C: the gemv path where the vectors are contiguous, the skinny
// path where they are not (op(A) a column of A with lda > 1, C a column with ldc > 1).
TEST_F(SgemmTest, GemvShapes) {
  const int64_t shapes[][3] = {
      {1, 777, 513}, {1, 4100, 64}, {513, 1, 777}, {1, 1, 1000}, {1, 300, 1}};
  uint64_t seed = 4000;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (const auto& s : shapes)
        for (int64_t pad : {0, 3}) {
          SgemmCase c{oa, ob, s[0], s[1], s[2]};
          c.pad_a = pad, c.pad_b = pad, c.pad_c = pad;
          run_lib(c, seed++);
          c.alpha = -1.5f, c.beta = 1.f, c.offset = 1, c.small_ints = true;
          run_lib_ws(c, seed++);
        }
  EXPECT_EQ(library_plan(SgemmCase{BlasOp::N, BlasOp::N, 1, 777, 513}).path,
            kernelkit::SgemmPath::kGemv);
  EXPECT_EQ(library_plan(SgemmCase{BlasOp::T, BlasOp::T, 513, 1, 777}).path,
            kernelkit::SgemmPath::kGemv);
}

// At most 32 rows (or columns) of C: the skinny kernels, both orientations, every op
// combination (both ways of reading B'), 16-byte and 4-byte access, K split or not.
TEST_F(SgemmTest, SkinnyShapes) {
  const int64_t shapes[][3] = {{2, 300, 70},   {8, 1000, 777},  {9, 515, 1029},  {32, 333, 2000},
                               {17, 4100, 64}, {1000, 8, 777},  {515, 32, 1029}, {300, 3, 5000},
                               {5, 7, 30000},  {32, 1030, 1100}};
  EXPECT_EQ(library_plan(SgemmCase{BlasOp::N, BlasOp::N, 8, 1000, 777}).path,
            kernelkit::SgemmPath::kSkinny);
  // sanitizer: K <= 200 (4 chunks: the workspace runs still split K in two) and the shapes
  // 2 x 300, 8 x 1000, 9 x 515, 1000 x 8, 515 x 32 (both orientations, 8 and 32 rows, partial)
  const bool sanitized[] = {true, true, true, false, false, true, true, false, false, false};
  const bool san = kktest::sanitizer_run();
  uint64_t seed = 5000;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (const auto& s : shapes) {
        if (san && !sanitized[&s - shapes]) continue;
        SgemmCase c{oa, ob, s[0], s[1], san ? std::min<int64_t>(s[2], 200) : s[2]};
        run_lib(c, seed++);
        run_lib_ws(c, seed++);
        c.offset = 1, c.pad_a = 1, c.pad_b = 2, c.pad_c = 3, c.beta = -1.5f, c.small_ints = true;
        run_lib_ws(c, seed++);
      }
}

// At most 32 rows or columns of C where the plan takes the tiled kernel over the skinny ones
// (sgemm_skinny_time: short K with C^T, or B' rows not 16-byte aligned against a wide op(B)):
// every op combination, packed and padded / offset, beta 0 (C poisoned) and != 0, with and
// without a workspace (the plan test SgemmPlan.SkinnyOrTiled holds the H100's choices).
TEST_F(SgemmTest, SkinnyShapesOnTheTiledPath) {
  const int64_t shapes[][3] = {{25504, 32, 96},  {23, 37225, 87},  {18007, 19, 107},
                               {27, 17817, 101}, {9001, 31, 1055}, {17, 41717, 285},
                               {29, 30011, 33},  {12001, 20, 96},  {3, 50000, 17}};
  // sanitizer: every third case, K <= 200
  const bool san = kktest::sanitizer_run();
  uint64_t seed = 6200;
  int64_t index = 0;
  int tiled = 0, plans = 0;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (const auto& s : shapes) {
        if (!kktest::sanitize_keep(index++, 3)) continue;
        SgemmCase c{oa, ob, s[0], s[1], san ? std::min<int64_t>(s[2], 200) : s[2]};
        tiled += library_plan(c).path == kernelkit::SgemmPath::kTiled, ++plans;
        run_lib_ws(c, seed++);
        c.offset = 1, c.pad_a = 1, c.pad_b = 2, c.pad_c = 3, c.beta = -1.5f;
        tiled += library_plan(c).path == kernelkit::SgemmPath::kTiled, ++plans;
        run_lib_ws(c, seed++);
        c.beta = 0.5f, c.small_ints = true;
        run_lib(c, seed++);
      }
  std::printf("skinny shapes on the tiled path: %d of %d plans\n", tiled, plans);
}

// Every M from 1 to 256 (and every N: the same problems transposed) against a few N and K,
// every op combination, with the library's workspace (dirty): gemv, skinny and every tile
// height of the tiled path, whole or split, on C or C^T. Odd N and K (4-byte copies, partial
// tiles), a padded / offset variant of each, beta != 0 on every other case.
TEST_F(SgemmTest, EverySmallM) {
  // sanitizer: every 9th M, K <= 200
  const bool san = kktest::sanitizer_run();
  uint64_t seed = 6000;
  int64_t index = 0;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (int64_t m = 1; m <= 256; ++m) {
        if (!kktest::sanitize_keep(index++, 9)) continue;
        const bool small_n = m % 2 == 0;  // even M: the problem with N = M instead
        SgemmCase c = small_n ? SgemmCase{oa, ob, 131, m, 77} : SgemmCase{oa, ob, m, 131, 77};
        c.beta = m % 4 < 2 ? 0.f : 1.f;
        run_lib_ws(c, seed++);
        if (m % 8 == 3) {  // long K: split; padded, 4-byte aligned
          const int64_t k = san ? 200 : 1029;
          c = small_n ? SgemmCase{oa, ob, 520, m, k} : SgemmCase{oa, ob, m, 520, k};
          c.pad_a = 1, c.pad_b = 3, c.pad_c = 2, c.offset = m % 16 == 3, c.beta = -1.5f;
          run_lib_ws(c, seed++);
        }
      }
}

// Odd and padded sizes where the 64-row tiles, C^T and the 4-byte copies of every tile meet:
// a few dozen to a few hundred rows (or columns) against wide, deep or odd operands, every op
// combination, ld a few elements past the row, pointers 4-byte aligned, with and without a
// workspace, beta 0 and != 0 (in-place C).
TEST_F(SgemmTest, OddAndPaddedThinShapes) {
  const int64_t shapes[][3] = {{57, 1029, 515},  {1029, 57, 515},  {131, 2053, 777},
                               {2053, 131, 777}, {61, 1061, 2711}, {35, 579, 4099},
                               {153, 169, 163},  {513, 379, 184},  {1256, 1153, 201},
                               {64, 4096, 260},  {4096, 64, 260},  {100, 100, 100}};
  // sanitizer: K <= 200 and every third case
  const bool san = kktest::sanitizer_run();
  uint64_t seed = 6500;
  int64_t index = 0;
  for (BlasOp oa : kOps)
    for (BlasOp ob : kOps)
      for (const auto& s : shapes)
        for (int variant = 0; variant < 3; ++variant) {
          if (!kktest::sanitize_keep(index++, 3)) continue;
          SgemmCase c{oa, ob, s[0], s[1], san ? std::min<int64_t>(s[2], 200) : s[2]};
          if (variant > 0) c.pad_a = 1 + variant, c.pad_b = 3, c.pad_c = 2 * variant - 1;
          c.offset = variant == 2;
          c.beta = variant == 0 ? 0.f : -1.5f;
          c.small_ints = variant == 1;
          run_lib_ws(c, seed++);
          if (variant == 1) run_lib(c, seed++);  // no workspace: no split, no pack
        }
}

// alpha and beta on every path (beta == 0 with NaN in C, alpha == 0 with NaN in A).
TEST_F(SgemmTest, AlphaBetaEveryPath) {
  const int64_t shapes[][3] = {{1, 300, 200},  {8, 300, 200},   {300, 8, 200},
                               {64, 64, 4096}, {127, 131, 137}, {40, 50, 0}};
  uint64_t seed = 6000;
  int64_t index = 0;
  for (const auto& s : shapes)
    for (float alpha : {0.f, 1.f, -1.5f})
      for (float beta : {0.f, 1.f, -1.5f}) {
        // sanitizer: 3 of the 9 pairs a shape (each alpha and each beta once), turning
        const int64_t i = index++;
        if (kktest::sanitizer_run() && (i / 9 + i % 9 / 3 + i % 3) % 3 != 0) {
          ++seed;
          continue;
        }
        SgemmCase c{BlasOp::T, BlasOp::N, s[0], s[1], s[2]};
        c.alpha = alpha, c.beta = beta, c.nan_in_a = alpha == 0.f;
        run_lib_ws(c, seed++);
      }
}

TEST_F(SgemmTest, DeterministicBits) {
  const int64_t m = 300, n = 333, k = 257;
  auto hA = kktest::random_vector<float>(m * k, 1);
  auto hB = kktest::random_vector<float>(k * n, 2);
  auto dA = kktest::to_device(hA);
  auto dB = kktest::to_device(hB);
  DeviceBuffer<float> c1(m * n), c2(m * n);
  ASSERT_EQ(kernelkit::sgemm(BlasOp::N, BlasOp::N, m, n, k, 1.f, dA.get(), k, dB.get(), n, 0.f,
                             c1.get(), n),
            cudaSuccess);
  ASSERT_EQ(kernelkit::sgemm(BlasOp::N, BlasOp::N, m, n, k, 1.f, dA.get(), k, dB.get(), n, 0.f,
                             c2.get(), n),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(c1.download(), c2.download()));
}

// A with 65537 x 32769 > 2^31 elements (8.6 GB): 64-bit offsets in the A path. Small-integer
// inputs from a cheap hash, exact result on sampled rows.
TEST_F(SgemmTest, KK_LARGE(APast2Pow31Elements)) {
  const int64_t m = 65537, k = 32769, n = 40;
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < size_t(m * k) * 4 + (size_t(1) << 30)) GTEST_SKIP() << "not enough device memory";
  auto val = [](uint64_t x) {
    x = (x ^ (x >> 31)) * 0x9E3779B97F4A7C15ull;
    return float(int((x >> 40) % 7) - 3);
  };
  std::vector<float> hA(size_t(m * k));
  for (size_t e = 0; e < hA.size(); ++e)
    hA[e] = val(e);
  std::vector<float> hB(size_t(k * n));
  for (size_t e = 0; e < hB.size(); ++e)
    hB[e] = val(e + 12345);
  auto dA = kktest::to_device(hA);
  auto dB = kktest::to_device(hB);
  DeviceBuffer<float> dC(m * n);
  dC.poison();
  ASSERT_EQ(kernelkit::sgemm(BlasOp::N, BlasOp::N, m, n, k, 1.f, dA.get(), k, dB.get(), n, 0.f,
                             dC.get(), n),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto hC = dC.download();
  std::vector<float> got;
  std::vector<double> ref;
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{40000}, int64_t{65535}, m - 1}) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(hA[i * k + p]) * hB[p * n + j];
      ref.push_back(s);
      got.push_back(hC[i * n + j]);
    }
  }
  EXPECT_TRUE(kktest::check_near(got, ref, kktest::Tolerance::Exact(), "large A"));
}

}  // namespace
