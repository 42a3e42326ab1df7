// kernelkit::gemv against a float64 CPU reference: both ops, a sweep of shapes (every
// dispatch path: lane groups, warps, blocks, clusters; 16-byte and scalar loads), lda > n,
// misaligned pointers, alpha/beta special values, exact small-integer sums, NaN in y with
// beta == 0, determinism, and argument checks.
#include <cfloat>
#include <cstdint>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/blas/gemv.cuh"

namespace {

using kernelkit::BlasOp;
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

struct Case {
  BlasOp op;
  int64_t m, n, lda;
  float alpha, beta;
  int a_offset = 0, x_offset = 0, y_offset = 0;  // elements: forces the narrow-pack path
  bool small_ints = false;                       // exact integer sums
};

std::string label(const Case& c, uint64_t seed) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "op=%s m=%lld n=%lld lda=%lld alpha=%g beta=%g offsets=%d,%d,%d ints=%d seed=%llu",
                op_name(c.op), (long long)c.m, (long long)c.n, (long long)c.lda, c.alpha, c.beta,
                c.a_offset, c.x_offset, c.y_offset, int(c.small_ints), (unsigned long long)seed);
  return buf;
}

// Runs one case on fresh random inputs with y poisoned or random and checks it.
void run_case(const Case& c, uint64_t seed) {
  const int64_t xs = c.op == BlasOp::N ? c.n : c.m;
  const int64_t ys = c.op == BlasOp::N ? c.m : c.n;
  const int64_t a_elems = c.m == 0 ? 0 : (c.m - 1) * c.lda + c.n;
  const double lo = c.small_ints ? -4 : -1, hi = c.small_ints ? 5 : 1;
  std::vector<float> hA = kktest::random_vector<float>(a_elems + c.a_offset, seed, lo, hi);
  std::vector<float> hx = kktest::random_vector<float>(xs + c.x_offset, seed + 1, lo, hi);
  std::vector<float> hy = kktest::random_vector<float>(ys + c.y_offset, seed + 2, lo, hi);
  if (c.small_ints) {
    for (auto* v : {&hA, &hx, &hy})
      for (auto& e : *v)
        e = std::floor(e);
  }
  auto dA = kktest::to_device(hA);
  auto dx = kktest::to_device(hx);
  auto dy = kktest::to_device(hy);
  std::vector<float> A(hA.begin() + c.a_offset, hA.end());
  std::vector<float> x(hx.begin() + c.x_offset, hx.end());
  std::vector<float> y0(hy.begin() + c.y_offset, hy.end());
  if (c.beta == 0.f && ys > 0) {
    // beta == 0 must not read y: poison it (NaN) and expect no NaN out
    dy.poison();
  }
  const auto ref = reference(c.op, c.m, c.n, c.alpha, A, c.lda, x, c.beta, y0);
  ASSERT_EQ(kernelkit::gemv(c.op, c.m, c.n, c.alpha, dA.get() + c.a_offset, c.lda,
                            dx.get() + c.x_offset, c.beta, dy.get() + c.y_offset),
            cudaSuccess)
      << label(c, seed);
  CUDA_CHECK(cudaDeviceSynchronize());
  auto got_all = dy.download();
  std::vector<float> got(got_all.begin() + c.y_offset, got_all.end());
  const Tolerance tol =
      c.small_ints ? Tolerance::Exact() : tolerance_for(c.op == BlasOp::N ? c.n : c.m, c.alpha);
  EXPECT_TRUE(kktest::check_near(got, ref, tol, label(c, seed)));
  // elements before the offset y pointer are untouched
  for (int k = 0; k < c.y_offset; ++k) {
    if (c.beta != 0.f) EXPECT_EQ(got_all[k], hy[k]) << label(c, seed);
  }
}

const int64_t kDims[] = {1, 3, 31, 32, 33, 1024, 4097, 65536};

class Gemv : public kktest::GpuTest {};

TEST_F(Gemv, ShapeSweep) {
  uint64_t seed = 100;
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (int64_t m : kDims)
      for (int64_t n : kDims) {
        if (m * n > (int64_t{1} << 26)) continue;  // 65536 x 65536 and 65536 x 4097: too big
        run_case({op, m, n, n, -0.5f, 1.f}, seed++);
      }
}

TEST_F(Gemv, AlphaBetaCombinations) {
  uint64_t seed = 200;
  const int64_t shapes[][2] = {{33, 4097}, {4097, 33}, {1024, 65536}, {3, 65536},
                               {65536, 3}, {31, 1024}, {1, 1}};
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes)
      for (float alpha : {0.f, 1.f, -0.5f})
        for (float beta : {0.f, 1.f, -0.5f})
          run_case({op, s[0], s[1], s[1], alpha, beta}, seed++);
}

TEST_F(Gemv, LeadingDimensionAndMisalignment) {
  uint64_t seed = 300;
  const int64_t shapes[][2] = {{33, 1024}, {1024, 33}, {7, 4097}, {4097, 7},
                               {2, 65536}, {65536, 2}, {32, 32}};
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes) {
      const int64_t m = s[0], n = s[1];
      run_case({op, m, n, n + 3, 1.f, -0.5f}, seed++);  // odd lda: scalar loads
      run_case({op, m, n, n + 4, 1.f, -0.5f}, seed++);  // lda > n, still 16-byte rows
      run_case({op, m, n, n, 1.f, -0.5f, 1, 0, 0}, seed++);
      run_case({op, m, n, n, 1.f, -0.5f, 0, 1, 1}, seed++);
      run_case({op, m, n, n + 1, -0.5f, 0.f, 3, 2, 1}, seed++);
    }
}

TEST_F(Gemv, SmallIntegersAreExact) {
  uint64_t seed = 400;
  const int64_t shapes[][2] = {{1024, 65536}, {65536, 1024}, {4097, 4097}, {3, 65536},
                               {65536, 3},    {33, 31},      {8192, 8192}};
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes) {
      Case c{op, s[0], s[1], s[1], 1.f, -0.5f};
      c.small_ints = true;
      run_case(c, seed++);
      c.beta = 0.f;
      run_case(c, seed++);
    }
}

// BlasOp::T one-wave paths (no cluster, 1024-thread blocks that own their columns over every
// row): on a 132-SM device n ~ 16384 runs 64-column tiles and n ~ 8192 32-column tiles
// (other devices take other paths, also correct). Partial last pack, lda > n, beta 0 on a
// NaN y, row counts that are not a multiple of the row groups or of the unrolled loop.
TEST_F(Gemv, TransposeOneWavePaths) {
  uint64_t seed = 500;
  run_case({BlasOp::T, 1031, 16383, 16384, -0.5f, 1.f}, seed++);
  run_case({BlasOp::T, 1024, 16384, 16384, 1.f, 0.f}, seed++);
  run_case({BlasOp::T, 2053, 8190, 8192, 1.f, 0.f}, seed++);
  run_case({BlasOp::T, 2048, 8192, 8196, -0.5f, -0.5f}, seed++);
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
    // empty inner dimension: y = beta * y
    dy.upload(hy);
    ASSERT_EQ(kernelkit::gemv(op, op == BlasOp::N ? m : 0, op == BlasOp::N ? 0 : n, 1.f, nullptr, n,
                              nullptr, -0.5f, dy.get()),
              cudaSuccess);
    EXPECT_TRUE(kktest::check_near(dy.download(), ref, Tolerance::Exact(), op_name(op)));
  }
}

TEST_F(Gemv, Deterministic) {
  const int64_t shapes[][2] = {{1024, 65536}, {65536, 1024}, {4, 65536}, {8192, 8192}};
  for (BlasOp op : {BlasOp::N, BlasOp::T})
    for (const auto& s : shapes) {
      const int64_t m = s[0], n = s[1];
      auto dA = kktest::to_device(kktest::random_vector<float>(m * n, 11));
      auto dx = kktest::to_device(kktest::random_vector<float>(op == BlasOp::N ? n : m, 12));
      DeviceBuffer<float> dy(op == BlasOp::N ? m : n);
      dy.poison();
      ASSERT_EQ(kernelkit::gemv(op, m, n, 1.f, dA.get(), n, dx.get(), 0.f, dy.get()), cudaSuccess);
      const auto first = dy.download();
      for (int rep = 0; rep < 3; ++rep) {
        dy.poison();
        ASSERT_EQ(kernelkit::gemv(op, m, n, 1.f, dA.get(), n, dx.get(), 0.f, dy.get()),
                  cudaSuccess);
        EXPECT_TRUE(kktest::same_bits(dy.download(), first)) << op_name(op) << " " << m << "x" << n;
      }
    }
}

TEST_F(Gemv, BadArgumentsAreRejectedWithoutWriting) {
  DeviceBuffer<float> dA(64 * 64), dx(64), dy(64);
  const auto hy = kktest::random_vector<float>(64, 5);
  dy.upload(hy);
  float* y = dy.get();
  const float* A = dA.get();
  const float* x = dx.get();
  const cudaError_t bad = cudaErrorInvalidValue;
  for (BlasOp op : {BlasOp::N, BlasOp::T}) {
    EXPECT_EQ(kernelkit::gemv(op, -1, 4, 1.f, A, 4, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, -1, 1.f, A, 4, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 8, 1.f, A, 7, x, 0.f, y), bad);  // lda < n
    EXPECT_EQ(kernelkit::gemv(op, 4, 0, 1.f, A, 0, x, 0.f, y), bad);  // lda < 1
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, nullptr, 4, x, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, nullptr, 0.f, y), bad);
    EXPECT_EQ(kernelkit::gemv(op, 4, 4, 1.f, A, 4, x, 0.f, nullptr), bad);
    EXPECT_EQ(kernelkit::gemv(op, int64_t{1} << 40, 4, 1.f, A, int64_t{1} << 30, x, 0.f, y), bad);
  }
  EXPECT_EQ(kernelkit::gemv(static_cast<BlasOp>(7), 4, 4, 1.f, A, 4, x, 0.f, y), bad);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(dy.download(), hy));
  // empty outputs are valid and launch nothing (null pointers allowed)
  EXPECT_EQ(kernelkit::gemv(BlasOp::N, 0, 5, 1.f, nullptr, 5, nullptr, 0.f, nullptr), cudaSuccess);
  EXPECT_EQ(kernelkit::gemv(BlasOp::T, 5, 0, 1.f, nullptr, 1, nullptr, 0.f, nullptr), cudaSuccess);
}

// Host-only: the cluster-size rule.
TEST(GemvHost, ClusterSizeRule) {
  using kernelkit::detail::gemv_cluster_size;
  EXPECT_EQ(gemv_cluster_size(1024, 1056, 8), 1);
  EXPECT_EQ(gemv_cluster_size(128, 1056, 8), 8);
  EXPECT_EQ(gemv_cluster_size(256, 1056, 8), 4);
  EXPECT_EQ(gemv_cluster_size(1, 1056, 8), 8);
  EXPECT_EQ(gemv_cluster_size(1, 1056, 1), 1);
}

// Host-only: the BlasOp::T one-wave rule (tiles x block threads within 90-100% of a wave).
TEST(GemvHost, TransposeOneWaveRule) {
  using kernelkit::detail::gemv_t_one_wave;
  kernelkit::DeviceInfo h100;
  h100.sm_count = 132;
  h100.max_threads_per_sm = 2048;
  EXPECT_TRUE(gemv_t_one_wave(h100, 16384, 64, 1024));   // 256 blocks of 264
  EXPECT_TRUE(gemv_t_one_wave(h100, 16383, 64, 1024));   // the partial tile counts
  EXPECT_FALSE(gemv_t_one_wave(h100, 8192, 64, 1024));   // 128 blocks: half a wave
  EXPECT_TRUE(gemv_t_one_wave(h100, 8192, 32, 1024));    // 256 blocks
  EXPECT_FALSE(gemv_t_one_wave(h100, 16384, 32, 1024));  // 512 blocks: two waves
  EXPECT_FALSE(gemv_t_one_wave(h100, 20000, 64, 1024));  // 313 blocks: 1.2 waves
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

TEST_F(Gemv, KK_LARGE(MoreThan2Pow31Elements)) {
  const int64_t m = 32769, n = 65536;  // 2^31 + 2^16 elements, 8 GiB
  DeviceBuffer<float> dA(m * n);
  fill_pattern_kernel<<<4096, 256>>>(dA.get(), m, n);
  CUDA_CHECK(cudaGetLastError());
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

}  // namespace
