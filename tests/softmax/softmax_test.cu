// softmax / log_softmax against a float64 reference: every dispatch path (row in registers
// with 1..32 lanes, row in shared memory, cluster / online for long rows), every type,
// special values in the same sweep, in place, misaligned pointers, bad arguments, and the
// ladder versions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "ladder/softmax/registry.cuh"

namespace kk = kernelkit;
using kktest::DeviceBuffer;
using kktest::Tolerance;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kSweepCols[] = {1,    2,    3,    31,   32,    33,    127,    128,   1000,
                                  1024, 1025, 2048, 4097, 16384, 16385, 100003, 262144};
constexpr int64_t kSweepRows[] = {1, 3, 1000};
// Keep each case at most this many elements (the CPU reference is float64, and the suite
// also runs under compute-sanitizer): long rows run with fewer rows. ClusterGridStride and
// the Large_ test cover the row loops that wrap around the grid.
constexpr int64_t kMaxCaseElems = int64_t{1} << 22;

// float64 reference of one matrix (x as the device sees it, i.e. already rounded to T).
std::vector<double> reference(const std::vector<double>& x, int64_t rows, int64_t cols, bool log) {
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
      for (int64_t c = 0; c < cols; ++c)
        o[c] = std::numeric_limits<double>::quiet_NaN();
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

// Per type: softmax within 2 ulps of T (f32: a relative bound, the sum of up to 2^18 terms
// in float); log_softmax also gets an absolute bound for the float rounding of x - m and
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

// Inputs uniform in [lo, hi); with specials (rows >= 3): row 0 has two -inf, row 1 is all
// -inf, row 2 has a NaN (as the last element).
template <typename T>
std::vector<T> make_input(int64_t rows, int64_t cols, uint64_t seed, bool specials,
                          double lo = -8.0, double hi = 8.0) {
  auto h = kktest::random_vector<T>(static_cast<size_t>(rows * cols), seed, lo, hi);
  if (specials && rows >= 3) {
    const T ninf = kk::convert<T>(-kInf);
    h[0] = ninf;
    h[cols / 2] = ninf;
    if (cols > 1) {
      for (int64_t c = 0; c < cols; ++c)
        h[cols + c] = ninf;
    }
    h[2 * cols + cols - 1] = kk::convert<T>(std::numeric_limits<double>::quiet_NaN());
  }
  return h;
}

enum class Mode { kOutOfPlace, kInPlace, kMisaligned };

template <typename T>
::testing::AssertionResult run_case(int64_t rows, int64_t cols, bool log, Mode mode, uint64_t seed,
                                    bool specials = true, double lo = -8.0, double hi = 8.0) {
  const auto h_in = make_input<T>(rows, cols, seed, specials, lo, hi);
  const size_t n = h_in.size();
  const int64_t shift = mode == Mode::kMisaligned ? 1 : 0;
  DeviceBuffer<T> in(n + shift), out(n + shift);
  out.poison();
  {
    std::vector<T> staged(n + shift, kk::convert<T>(0.0));
    std::copy(h_in.begin(), h_in.end(), staged.begin() + shift);
    in.upload(staged);
  }
  const T* src = in.get() + shift;
  T* dst = mode == Mode::kInPlace ? in.get() : out.get() + shift;
  const cudaError_t err =
      log ? kk::log_softmax(src, dst, rows, cols) : kk::softmax(src, dst, rows, cols);
  const std::string label = std::string(kktest::type_name<T>()) +
                            (log ? " log_softmax" : " softmax") + " rows=" + std::to_string(rows) +
                            " cols=" + std::to_string(cols) + " mode=" + std::to_string(int(mode)) +
                            " seed=" + std::to_string(seed);
  if (err != cudaSuccess)
    return ::testing::AssertionFailure() << label << ": " << cudaGetErrorString(err);
  CUDA_CHECK(cudaDeviceSynchronize());
  auto all = (mode == Mode::kInPlace ? in : out).download();
  std::vector<T> got(all.begin() + shift, all.end());
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = kktest::to_double(h_in[i]);
  const auto ref = reference(x, rows, cols, log);
  auto res = kktest::check_near(got, ref, tolerance<T>(log), label);
  if (!res) return res;
  // finite rows sum to 1
  for (int64_t r = 0; r < rows; ++r) {
    if (std::isnan(ref[r * cols])) continue;
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = kktest::to_double(got[r * cols + c]);
      s += log ? std::exp(v) : v;
    }
    if (std::fabs(s - 1.0) > row_sum_tolerance<T>())
      return ::testing::AssertionFailure() << label << ": row " << r << " sums to " << s;
  }
  return ::testing::AssertionSuccess();
}

template <typename T>
class SoftmaxTest : public kktest::GpuTest {};
using Types = ::testing::Types<float, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(SoftmaxTest, Types);

TYPED_TEST(SoftmaxTest, SweepMatchesReference) {
  uint64_t seed = 1;
  for (const int64_t cols : kSweepCols) {
    for (const int64_t rows0 : kSweepRows) {
      const int64_t rows = std::max<int64_t>(std::min<int64_t>(rows0, kMaxCaseElems / cols),
                                             std::min<int64_t>(rows0, 3));
      for (const bool log : {false, true})
        EXPECT_TRUE(run_case<TypeParam>(rows, cols, log, Mode::kOutOfPlace, seed++));
    }
  }
}

TYPED_TEST(SoftmaxTest, InPlace) {
  uint64_t seed = 100;
  for (const int64_t cols : {int64_t{3}, int64_t{32}, int64_t{1024}, int64_t{4097}, int64_t{16384},
                             int64_t{100003}, int64_t{262144}})
    for (const bool log : {false, true})
      EXPECT_TRUE(run_case<TypeParam>(std::min<int64_t>(37, kMaxCaseElems / cols + 3), cols, log,
                                      Mode::kInPlace, seed++));
}

// Pointers one element off 16-byte alignment: the scalar-pack paths.
TYPED_TEST(SoftmaxTest, MisalignedPointers) {
  uint64_t seed = 200;
  for (const int64_t cols : {int64_t{1}, int64_t{8}, int64_t{32}, int64_t{33}, int64_t{1024},
                             int64_t{2048}, int64_t{16384}, int64_t{16385}, int64_t{100003}})
    for (const bool log : {false, true})
      EXPECT_TRUE(run_case<TypeParam>(std::min<int64_t>(37, kMaxCaseElems / cols + 3), cols, log,
                                      Mode::kMisaligned, seed++));
}

// |x| up to 1e4: exp(x - max) never overflows.
TYPED_TEST(SoftmaxTest, LargeMagnitudeInputs) {
  uint64_t seed = 300;
  for (const int64_t cols :
       {int64_t{7}, int64_t{128}, int64_t{1000}, int64_t{4096}, int64_t{100003}})
    for (const bool log : {false, true})
      EXPECT_TRUE(run_case<TypeParam>(5, cols, log, Mode::kOutOfPlace, seed++, false, -1e4, 1e4));
}

// Small spread: every element contributes (no underflow hides a wrong sum).
TYPED_TEST(SoftmaxTest, NarrowInputs) {
  uint64_t seed = 400;
  for (const int64_t cols : {int64_t{64}, int64_t{1024}, int64_t{16385}, int64_t{262144}})
    for (const bool log : {false, true})
      EXPECT_TRUE(run_case<TypeParam>(4, cols, log, Mode::kOutOfPlace, seed++, false, -0.5, 0.5));
}

// The f16/bf16 row-in-registers block paths (256 x 2, 512 x 2, 512 x 4 packs per row) at
// and around their column limits, with and without specials, and in place.
TYPED_TEST(SoftmaxTest, BlockRegisterPathBoundaries) {
  uint64_t seed = 800;
  for (const int64_t cols : {int64_t{1032}, int64_t{2056}, int64_t{4096}, int64_t{4104},
                             int64_t{8192}, int64_t{8200}, int64_t{12288}, int64_t{16376}}) {
    for (const bool log : {false, true}) {
      EXPECT_TRUE(run_case<TypeParam>(37, cols, log, Mode::kOutOfPlace, seed++));
      EXPECT_TRUE(run_case<TypeParam>(3, cols, log, Mode::kInPlace, seed++));
      EXPECT_TRUE(run_case<TypeParam>(1, cols, log, Mode::kOutOfPlace, seed++, false, -1e4, 1e4));
    }
  }
}

// Block shapes of the block-register kernel that the f16/bf16 dispatch does not pick
// today (128 x 4 and 1024 x 2 packs), called directly so that a later switch is already
// tested.
template <typename T, typename Launch>
void check_direct(int64_t rows, int64_t cols, bool log, uint64_t seed, Launch launch,
                  const std::string& what) {
  const auto h_in = make_input<T>(rows, cols, seed, true);
  auto in = kktest::to_device(h_in);
  DeviceBuffer<T> out(h_in.size());
  out.poison();
  ASSERT_EQ(launch(in.get(), out.get(), rows, cols, nullptr), cudaSuccess) << what;
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> x(h_in.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = kktest::to_double(h_in[i]);
  EXPECT_TRUE(kktest::check_near(out.download(), reference(x, rows, cols, log), tolerance<T>(log),
                                 what + " " + kktest::type_name<T>() + (log ? " log" : "") +
                                     " rows=" + std::to_string(rows) +
                                     " cols=" + std::to_string(cols)));
}

template <typename T, kk::detail::SoftmaxAlgo A>
void check_variants(bool log, uint64_t seed) {
  namespace kd = kk::detail;
  for (const int64_t cols : {int64_t{1032}, int64_t{4096}, int64_t{4104}, int64_t{16384}}) {
    if (cols <= 4096)
      check_direct<T>(37, cols, log, seed++, kd::softmax_launch_block_reg<T, A, 8, 128, 4>,
                      "reg128x4");
    check_direct<T>(37, cols, log, seed++, kd::softmax_launch_block_reg<T, A, 8, 1024, 2>,
                    "reg1024x2");
  }
}

TEST(SoftmaxHalfVariants, MatchReference) {
  if (!kktest::have_gpu()) GTEST_SKIP() << "no CUDA device visible";
  check_variants<__half, kk::detail::SoftmaxAlgo::kSoftmax>(false, 900);
  check_variants<__half, kk::detail::SoftmaxAlgo::kLogSoftmax>(true, 950);
  check_variants<__nv_bfloat16, kk::detail::SoftmaxAlgo::kSoftmax>(false, 1000);
  check_variants<__nv_bfloat16, kk::detail::SoftmaxAlgo::kLogSoftmax>(true, 1050);
}

// The online (two-pass) kernel with 16-byte packs: the dispatch takes it on sm_90 only
// when no cluster fits, so it is called directly here (the misaligned tests cover N = 1).
TYPED_TEST(SoftmaxTest, OnlinePathWithWidePacks) {
  using T = TypeParam;
  constexpr int kN = kk::kMaxPackSize<T>;
  uint64_t seed = 700;
  for (const int64_t cols : {int64_t{kN}, int64_t{1024}, int64_t{40000}, int64_t{262144}}) {
    for (const bool log : {false, true}) {
      const int64_t rows = std::min<int64_t>(1000, kMaxCaseElems / cols);
      const auto h_in = make_input<T>(rows, cols, seed++, true);
      auto in = kktest::to_device(h_in);
      DeviceBuffer<T> out(h_in.size());
      out.poison();
      const cudaError_t err =
          log ? kk::detail::softmax_launch_online<T, kk::detail::SoftmaxAlgo::kLogSoftmax, kN>(
                    in.get(), out.get(), rows, cols, nullptr)
              : kk::detail::softmax_launch_online<T, kk::detail::SoftmaxAlgo::kSoftmax, kN>(
                    in.get(), out.get(), rows, cols, nullptr);
      ASSERT_EQ(err, cudaSuccess);
      CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<double> x(h_in.size());
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = kktest::to_double(h_in[i]);
      EXPECT_TRUE(kktest::check_near(out.download(), reference(x, rows, cols, log),
                                     tolerance<T>(log),
                                     std::string("online ") + kktest::type_name<T>() +
                                         (log ? " log" : "") + " cols=" + std::to_string(cols)));
    }
  }
}

// More rows than the cluster path launches clusters (at most the resident 2-block
// clusters: ~200 on an H100), so the cluster's row loop wraps; f32 only (18M elements).
TEST(SoftmaxGridStride, ClusterRowsWrapAroundTheGrid) {
  if (!kktest::have_gpu()) GTEST_SKIP() << "no CUDA device visible";
  EXPECT_TRUE(run_case<float>(1100, 16388, false, Mode::kOutOfPlace, 600));
  EXPECT_TRUE(run_case<float>(1100, 16388, true, Mode::kInPlace, 601));
}

TYPED_TEST(SoftmaxTest, EmptyIsANoOp) {
  DeviceBuffer<TypeParam> buf(4);
  buf.poison();
  const auto before = buf.download();
  EXPECT_EQ(kk::softmax<TypeParam>(nullptr, nullptr, 0, 5), cudaSuccess);
  EXPECT_EQ(kk::softmax<TypeParam>(nullptr, nullptr, 5, 0), cudaSuccess);
  EXPECT_EQ(kk::log_softmax(buf.get(), buf.get(), 0, 4), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, buf.download()));
}

TYPED_TEST(SoftmaxTest, BadArgumentsWriteNothing) {
  using T = TypeParam;
  DeviceBuffer<T> in(64), out(64);
  in.upload(kktest::random_vector<T>(64, 5));
  out.poison();
  const auto before = out.download();
  const int64_t big = int64_t{1} << 40;
  for (const bool log : {false, true}) {
    auto call = [&](const T* a, T* b, int64_t r, int64_t c) {
      return log ? kk::log_softmax(a, b, r, c) : kk::softmax(a, b, r, c);
    };
    EXPECT_EQ(call(in.get(), out.get(), -1, 8), cudaErrorInvalidValue);
    EXPECT_EQ(call(in.get(), out.get(), 8, -1), cudaErrorInvalidValue);
    EXPECT_EQ(call(nullptr, out.get(), 8, 8), cudaErrorInvalidValue);
    EXPECT_EQ(call(in.get(), nullptr, 8, 8), cudaErrorInvalidValue);
    EXPECT_EQ(call(in.get(), out.get(), big, big), cudaErrorInvalidValue);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, out.download()));
}

TYPED_TEST(SoftmaxTest, Deterministic) {
  using T = TypeParam;
  for (const int64_t cols : {int64_t{1000}, int64_t{16384}, int64_t{262144}}) {
    const int64_t rows = 8;
    auto in = kktest::to_device(make_input<T>(rows, cols, 9, false));
    DeviceBuffer<T> a(rows * cols), b(rows * cols);
    ASSERT_EQ(kk::softmax(in.get(), a.get(), rows, cols), cudaSuccess);
    ASSERT_EQ(kk::softmax(in.get(), b.get(), rows, cols), cudaSuccess);
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(a.download(), b.download())) << "cols=" << cols;
  }
}

// Past 2^31 elements (f16, in place, 4 GiB): values from a formula, so the reference of a
// few sampled rows is computed on the host without the whole matrix.
__global__ void fill_pattern_kernel(__half* p, int64_t rows, int64_t cols) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows * cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    p[i] = __float2half(float((r * 31 + c * 17) % 97) / 16.f - 3.f);
  }
}

class SoftmaxLargeTest : public kktest::GpuTest {};

TEST_F(SoftmaxLargeTest, KK_LARGE(PastInt32Elements)) {
  for (const int64_t cols : {int64_t{1024}, int64_t{4096}}) {
    const int64_t rows = ((int64_t{1} << 31) / cols) + 3;
    DeviceBuffer<__half> buf(rows * cols);
    fill_pattern_kernel<<<4096, 256>>>(buf.get(), rows, cols);
    CUDA_CHECK(cudaGetLastError());
    ASSERT_EQ(kk::softmax(buf.get(), buf.get(), rows, cols), cudaSuccess);
    CUDA_CHECK(cudaDeviceSynchronize());
    for (const int64_t r : {int64_t{0}, rows / 2, rows - 2, rows - 1}) {
      std::vector<__half> got(cols);
      CUDA_CHECK(cudaMemcpy(got.data(), buf.get() + r * cols, cols * sizeof(__half),
                            cudaMemcpyDeviceToHost));
      std::vector<double> x(cols);
      for (int64_t c = 0; c < cols; ++c)
        x[c] = kktest::to_double(__float2half(float((r * 31 + c * 17) % 97) / 16.f - 3.f));
      EXPECT_TRUE(kktest::check_near(got, reference(x, 1, cols, false), tolerance<__half>(false),
                                     "row " + std::to_string(r) + " cols " + std::to_string(cols)));
    }
  }
}

class SoftmaxLadderTest : public kktest::GpuTest {};

TEST_F(SoftmaxLadderTest, EveryVersionMatchesReference) {
  uint64_t seed = 500;
  for (const auto& v : kk::ladder::kSoftmaxVersions) {
    for (const int64_t cols : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{1000},
                               int64_t{1024}, int64_t{4097}, int64_t{100003}}) {
      for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{1000}}) {
        const int64_t r = std::max<int64_t>(std::min<int64_t>(rows, kMaxCaseElems / 4 / cols), 1);
        const auto h_in = make_input<float>(r, cols, seed++, true);
        auto in = kktest::to_device(h_in);
        DeviceBuffer<float> out(h_in.size());
        out.poison();
        ASSERT_EQ(v.fn(in.get(), out.get(), r, cols, nullptr), cudaSuccess) << v.name;
        CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<double> x(h_in.begin(), h_in.end());
        EXPECT_TRUE(kktest::check_near(
            out.download(), reference(x, r, cols, false), tolerance<float>(false),
            std::string(v.name) + " rows=" + std::to_string(r) + " cols=" + std::to_string(cols)));
      }
    }
    // bad arguments
    EXPECT_EQ(v.fn(nullptr, nullptr, 4, 4, nullptr), cudaErrorInvalidValue) << v.name;
    EXPECT_EQ(v.fn(nullptr, nullptr, -1, 4, nullptr), cudaErrorInvalidValue) << v.name;
  }
}

// ---------------------------------------------------------------------------------------
// Long rows: the cluster kernel (softmax_long.cuh) called directly in every shape the
// dispatch may pick (cluster sizes 2..16, 512 threads) and with 1024 threads; chunks that
// end mid-row, blocks with an empty chunk (cols < Cluster * pack), specials, in place, and
// a grid of 3 clusters so that the row loop wraps (both parities of the partials buffer).
// On sm_90+ every shape whose chunk fits in a block's shared memory must launch (no silent
// fallback to the online kernel); the others must not.
template <typename T, kk::detail::SoftmaxAlgo A, int Block, int Cluster>
::testing::AssertionResult run_cluster_case(int64_t rows, int64_t cols, bool in_place,
                                            int max_clusters, uint64_t seed) {
  constexpr int kN = kk::kMaxPackSize<T>;
  constexpr bool kLog = A == kk::detail::SoftmaxAlgo::kLogSoftmax;
  const auto h_in = make_input<T>(rows, cols, seed, true);
  auto in = kktest::to_device(h_in);
  DeviceBuffer<T> out(h_in.size());
  out.poison();
  bool launched = false;
  const cudaError_t err = kk::detail::softmax_launch_cluster<T, A, kN, Block, Cluster>(
      in.get(), in_place ? in.get() : out.get(), rows, cols, nullptr, &launched, max_clusters);
  const std::string label = std::string("cluster ") + kktest::type_name<T>() +
                            (kLog ? " log" : "") + " block=" + std::to_string(Block) +
                            " cluster=" + std::to_string(Cluster) +
                            " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                            " grid_clusters<=" + std::to_string(max_clusters) +
                            (in_place ? " in place" : "") + " seed=" + std::to_string(seed);
  if (err != cudaSuccess)
    return ::testing::AssertionFailure() << label << ": " << cudaGetErrorString(err);
  kk::DeviceInfo d;
  CUDA_CHECK(kk::current_device_info(&d));
  // a chunk larger than a block's shared memory cannot run as a cluster: the launcher must
  // decline it (the dispatch then takes a bigger cluster or the online kernel)
  const int64_t chunk_bytes =
      kk::ceil_div<int64_t>(kk::ceil_div<int64_t>(cols, Cluster), kN) * kN * int64_t{sizeof(T)};
  const bool fits = d.cc_major >= 9 && chunk_bytes <= d.smem_per_block_optin -
                                                          kk::detail::kSoftmaxStaticSmemReserveLong;
  if (!launched) {
    if (fits) return ::testing::AssertionFailure() << label << ": not launched";
    return ::testing::AssertionSuccess();  // below sm_90 or too big a chunk: declined
  }
  if (!fits) return ::testing::AssertionFailure() << label << ": launched a chunk that cannot fit";
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = (in_place ? in : out).download();
  std::vector<double> x(h_in.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = kktest::to_double(h_in[i]);
  return kktest::check_near(got, reference(x, rows, cols, kLog), tolerance<T>(kLog), label);
}

template <typename T, kk::detail::SoftmaxAlgo A, int Block, int Cluster>
void check_cluster_shape(uint64_t seed) {
  constexpr int64_t kN = kk::kMaxPackSize<T>;
  // cols: fewer packs than blocks (empty chunks), a chunk ending mid-row, 2^18
  for (const int64_t cols : {3 * kN, 40000 - 40000 % kN, int64_t{262144}}) {
    const int64_t rows = cols > 65536 ? 3 : 9;
    EXPECT_TRUE((run_cluster_case<T, A, Block, Cluster>(rows, cols, false, 0, seed++)));
    EXPECT_TRUE((run_cluster_case<T, A, Block, Cluster>(rows, cols, true, 2, seed++)));
  }
}

TYPED_TEST(SoftmaxTest, LongRowClusterShapes) {
  using T = TypeParam;
  namespace kd = kk::detail;
  constexpr auto kS = kd::SoftmaxAlgo::kSoftmax;
  constexpr auto kL = kd::SoftmaxAlgo::kLogSoftmax;
  check_cluster_shape<T, kS, 512, 2>(1100);
  check_cluster_shape<T, kL, 512, 4>(1110);
  check_cluster_shape<T, kS, 512, 8>(1120);
  check_cluster_shape<T, kL, 512, 8>(1130);
  check_cluster_shape<T, kS, 512, 16>(1140);
  check_cluster_shape<T, kL, 512, 16>(1150);
  check_cluster_shape<T, kS, 1024, 8>(1180);
  check_cluster_shape<T, kS, 1024, 4>(1190);
}

// The dispatch's long-row choice end to end (2^18 columns: f32 16-block clusters, f16 /
// bf16 8-block clusters; 65544 columns: 4 / 2 blocks), 4M elements at most.
TYPED_TEST(SoftmaxTest, LongRowsDispatch) {
  for (const bool log : {false, true}) {
    EXPECT_TRUE(run_case<TypeParam>(16, 262144, log, Mode::kOutOfPlace, 1200 + log));
    EXPECT_TRUE(run_case<TypeParam>(40, 65536 + 8, log, Mode::kInPlace, 1202 + log));
  }
}

}  // namespace
