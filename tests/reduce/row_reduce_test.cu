// row_reduce / row_sum / row_max / row_min against float64 (exact integer) references:
// every type, cols in {0, 1, 2, 3, 31, 32, 33, 127, 128, 129, 1024, 1025, 2049, 4097, 2^20}, rows
// in {1, 7, 1000} (fewer rows for 2^20), aligned and one-element-offset input, NaN / inf, int64
// sums past 2^32, determinism, bad arguments, and the launch plan on the host.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/reduce/row_reduce.cuh"

namespace {

using kernelkit::ReduceOp;
using kktest::check_near;
using kktest::DeviceBuffer;
using kktest::Tolerance;

const float* const kNoFloats = nullptr;
float* const kNoOut = nullptr;

const char* op_name(ReduceOp op) {
  return op == ReduceOp::kSum ? "sum" : op == ReduceOp::kMax ? "max" : "min";
}

// float64 reference of out[r] = op(init, row r).
template <typename T>
std::vector<double> reference(const std::vector<T>& h, int64_t rows, int64_t cols, ReduceOp op,
                              double init) {
  std::vector<double> ref(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double acc = init;
    for (int64_t c = 0; c < cols; ++c) {
      const double x = kktest::to_double(h[r * cols + c]);
      if (op == ReduceOp::kSum) {
        acc += x;
      } else if (std::isnan(acc) || std::isnan(x)) {
        acc = std::numeric_limits<double>::quiet_NaN();
      } else {
        acc = op == ReduceOp::kMax ? std::max(acc, x) : std::min(acc, x);
      }
    }
    ref[r] = acc;
  }
  return ref;
}

template <typename T>
using AccOf = kernelkit::compute_t<T>;

// Calls the public function that matches op (row_sum / row_max / row_min).
template <typename T, typename Acc>
cudaError_t call(ReduceOp op, const T* in, int64_t rows, int64_t cols, Acc* out) {
  switch (op) {
    case ReduceOp::kSum:
      return kernelkit::row_sum(in, rows, cols, out);
    case ReduceOp::kMax:
      return kernelkit::row_max(in, rows, cols, out);
    default:
      return kernelkit::row_min(in, rows, cols, out);
  }
}

template <typename Acc>
double init_of(ReduceOp op) {
  const double inf = std::numeric_limits<double>::infinity();
  if (op == ReduceOp::kSum) return 0.0;
  if constexpr (std::is_integral_v<Acc>) {
    return op == ReduceOp::kMax ? double(std::numeric_limits<Acc>::lowest())
                                : double(std::numeric_limits<Acc>::max());
  } else {
    return op == ReduceOp::kMax ? -inf : inf;
  }
}

// Inputs: small integers for sums (exact in every type and every summation order, so the
// comparison is exact and a missed or doubled element shows), reals in [-1, 1) for
// max/min (also exact: they return an element).
template <typename T>
std::vector<T> make_input(size_t n, uint64_t seed, ReduceOp op) {
  if (op == ReduceOp::kSum) return kktest::small_int_vector<T>(n, seed);
  if constexpr (std::is_integral_v<T>) {
    return kktest::random_vector<T>(n, seed, -1000000, 1000000);
  } else {
    return kktest::random_vector<T>(n, seed, -1.0, 1.0);
  }
}

// One case: poisoned output, input at `offset` elements past an aligned allocation.
template <typename T>
void run_case(int64_t rows, int64_t cols, ReduceOp op, int offset, uint64_t seed) {
  using Acc = AccOf<T>;
  const size_t n = static_cast<size_t>(rows * cols);
  auto h = make_input<T>(n + offset, seed, op);
  auto d_in = kktest::to_device(h);
  h.erase(h.begin(), h.begin() + offset);
  DeviceBuffer<Acc> d_out(rows);
  d_out.poison();
  const T* in = n + offset > 0 ? d_in.get() + offset : nullptr;
  ASSERT_EQ(call(op, in, rows, cols, d_out.get()), cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto ref = reference(h, rows, cols, op, init_of<Acc>(op));
  const std::string label = std::string(kktest::type_name<T>()) + " " + op_name(op) + " " +
                            std::to_string(rows) + "x" + std::to_string(cols) + " offset " +
                            std::to_string(offset) + " seed " + std::to_string(seed);
  EXPECT_TRUE(check_near(d_out.download(), ref, Tolerance::Exact(), label));
}

class RowReduce : public kktest::GpuTest {};

template <typename T>
class RowReduceTyped : public kktest::GpuTest {};

using RowTypes = ::testing::Types<float, double, __half, __nv_bfloat16, int32_t, int64_t>;
TYPED_TEST_SUITE(RowReduceTyped, RowTypes);

// 128 | 129: narrow group | warp (f32); 2048 | 2049: warp | block (f32)
const std::vector<int64_t> kCols = {0, 1, 2, 3, 31, 32, 33, 127, 128, 129, 1024, 1025, 2049, 4097};
const std::vector<int64_t> kRows = {1, 7, 1000};

TYPED_TEST(RowReduceTyped, SweepAllOps) {
  uint64_t seed = 100;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin})
    for (int64_t rows : kRows)
      for (int64_t cols : kCols)
        for (int offset : {0, 1})
          run_case<TypeParam>(rows, cols, op, offset, ++seed);
}

// 2^20 columns: the cluster path (1 and 7 rows: clusters of 8 blocks per row); 200 rows
// of 2^16: clusters of 2 on 132 SMs.
TYPED_TEST(RowReduceTyped, LongRows) {
  uint64_t seed = 500;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    for (int64_t rows : {1, 7})
      for (int offset : {0, 1})
        run_case<TypeParam>(rows, int64_t{1} << 20, op, offset, ++seed);
    run_case<TypeParam>(200, int64_t{1} << 16, op, 1, ++seed);
    run_case<TypeParam>(53, int64_t{1} << 16, op, 0, ++seed);  // clusters of 5 on 132 SMs
  }
  run_case<TypeParam>(3, (int64_t{1} << 20) + 5, ReduceOp::kMin, 3, ++seed);
}

// Wide-but-not-long rows and many rows: grid-stride over rows in every path.
TYPED_TEST(RowReduceTyped, ManyRows) {
  run_case<TypeParam>(100003, 5, ReduceOp::kSum, 0, 900);
  run_case<TypeParam>(20011, 200, ReduceOp::kSum, 1, 901);
  run_case<TypeParam>(3001, 3001, ReduceOp::kMax, 1, 902);
  run_case<TypeParam>(9000011, 1, ReduceOp::kSum, 0, 903);  // group path loops over rows
}

// The flat kernel (16-byte aligned input, cols a multiple of the pack, at most 32 packs per
// row): every group width 1..32, packs per row that are not a power of two (idle lanes
// must add nothing: a sum would count their clamped re-read twice), and rows around a
// tile (256 / width * kRowFlatSteps rows), where rows past the end re-read the last row.
TYPED_TEST(RowReduceTyped, FlatPath) {
  constexpr int64_t P = kernelkit::kMaxPackSize<TypeParam>;
  uint64_t seed = 1200;
  for (int64_t k : {1, 2, 3, 5, 8, 12, 17, 31, 32}) {
    int64_t width = 1;
    while (width < k)
      width *= 2;
    const int64_t tile = 256 / width * kernelkit::detail::kRowFlatSteps;
    for (int64_t rows : {int64_t{1}, int64_t{7}, tile - 1, tile, tile + 1, 3 * tile + 5}) {
      run_case<TypeParam>(rows, k * P, ReduceOp::kSum, 0, ++seed);
      run_case<TypeParam>(rows, k * P, ReduceOp::kMin, 0, ++seed);
    }
  }
  run_case<TypeParam>(100003, 8 * P, ReduceOp::kSum, 0, ++seed);
  run_case<TypeParam>(100003, 8 * P, ReduceOp::kMax, 0, ++seed);
}

// The flat kernel on grids smaller than its tile count: blocks loop over tiles.
template <int Width>
void run_flat_small_grid(int64_t k, int64_t rows, int grid, uint64_t seed) {
  constexpr int P = kernelkit::kMaxPackSize<float>;
  const int64_t cols = k * P;
  auto h = kktest::small_int_vector<float>(rows * cols, seed);
  auto d_in = kktest::to_device(h);
  DeviceBuffer<float> d_out(rows);
  d_out.poison();
  ASSERT_EQ((kernelkit::detail::launch_row_flat<Width, kernelkit::detail::kRowFlatSteps, P, float,
                                                float, kernelkit::Sum>(
                d_in.get(), rows, cols, d_out.get(), 0.0f, grid, nullptr)),
            cudaSuccess);
  EXPECT_TRUE(check_near(d_out.download(), reference(h, rows, cols, ReduceOp::kSum, 0.0),
                         Tolerance::Exact(),
                         "flat grid " + std::to_string(grid) + " " + std::to_string(rows) + "x" +
                             std::to_string(cols) + " seed " + std::to_string(seed)));
}

TEST_F(RowReduce, FlatPathLoopsOverTiles) {
  for (int grid : {1, 3}) {
    run_flat_small_grid<8>(8, 10007, grid, 1300 + grid);
    run_flat_small_grid<32>(25, 2003, grid, 1310 + grid);
    run_flat_small_grid<1>(1, 5003, grid, 1320 + grid);
  }
}

// More rows than resident blocks * waves on the block-per-row path: blocks loop over rows.
TEST_F(RowReduce, BlockPathLoopsOverRows) {
  run_case<float>(34003, 2053, ReduceOp::kSum, 1, 904);
}

// Real-valued sums: no cancellation (values in [0, 1)), relative tolerance of the type.
template <typename T>
void run_real_sum(int64_t rows, int64_t cols, uint64_t seed, double rel) {
  using Acc = AccOf<T>;
  auto h = kktest::random_vector<T>(rows * cols, seed, 0.0, 1.0);
  auto d_in = kktest::to_device(h);
  DeviceBuffer<Acc> d_out(rows);
  d_out.poison();
  ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get()), cudaSuccess);
  const auto ref = reference(h, rows, cols, ReduceOp::kSum, 0.0);
  EXPECT_TRUE(check_near(d_out.download(), ref, Tolerance::Rel(rel),
                         std::string(kktest::type_name<T>()) + " real sum " + std::to_string(rows) +
                             "x" + std::to_string(cols) + " seed " + std::to_string(seed)));
}

TEST_F(RowReduce, RowReduceRealSums) {
  for (int64_t cols : {33, 1025, 65537}) {
    run_real_sum<float>(37, cols, 7 + cols, 1e-5);
    run_real_sum<double>(37, cols, 8 + cols, 1e-12);
    run_real_sum<__half>(37, cols, 9 + cols, 1e-5);
  }
}

// int64 sums past 2^32: values up to 2^40.
TEST_F(RowReduce, RowReduceInt64PastTwoTo32) {
  const int64_t rows = 9, cols = 70001;
  auto h = kktest::random_vector<int64_t>(rows * cols, 77, 0, double(int64_t{1} << 40));
  auto d_in = kktest::to_device(h);
  DeviceBuffer<int64_t> d_out(rows);
  d_out.poison();
  ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get()), cudaSuccess);
  const auto got = d_out.download();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t want = 0;
    for (int64_t c = 0; c < cols; ++c)
      want += h[r * cols + c];
    ASSERT_GT(want, int64_t{1} << 32);
    EXPECT_EQ(got[r], want) << "row " << r;
  }
}

// NaN wins in max/min wherever it sits (head, packs, tail); +-inf are ordinary values.
template <typename T>
void run_nan_inf() {
  using Acc = AccOf<T>;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t cols : {1, 3, 32, 33, 1025, 70001}) {
    const int64_t rows = 6;
    auto h = kktest::random_vector<T>(rows * cols + 1, 3 + cols, -1.0, 1.0);
    // row 0: NaN first, row 1: NaN last, row 2: +inf, row 3: -inf, row 4: NaN and inf,
    // row 5: plain
    auto set = [&](int64_t r, int64_t c, double v) {
      h[1 + r * cols + c] = kernelkit::convert<T>(v);
    };
    set(0, 0, nan);
    set(1, cols - 1, nan);
    set(2, cols / 2, inf);
    set(3, cols / 3, -inf);
    set(4, cols - 1, inf);
    set(4, 0, nan);
    auto d_in = kktest::to_device(h);
    std::vector<T> hv(h.begin() + 1, h.end());
    for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
      DeviceBuffer<Acc> d_out(rows);
      d_out.poison();
      ASSERT_EQ(call(op, d_in.get() + 1, rows, cols, d_out.get()), cudaSuccess);
      EXPECT_TRUE(check_near(d_out.download(), reference(hv, rows, cols, op, init_of<Acc>(op)),
                             Tolerance::Exact(),
                             std::string(kktest::type_name<T>()) + " nan/inf " + op_name(op) +
                                 " cols " + std::to_string(cols)));
    }
  }
}

TEST_F(RowReduce, RowReduceNanInf) {
  run_nan_inf<float>();
  run_nan_inf<double>();
  run_nan_inf<__half>();
  run_nan_inf<__nv_bfloat16>();
}

// The same call gives the same bits, ten times, on every path (group, flat, warp, block,
// cluster).
TEST_F(RowReduce, RowReduceDeterministic) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {4099, 7}, {4099, 32}, {1031, 1000}, {300, 40000}, {3, 3 << 20}};
  for (auto [rows, cols] : shapes) {
    auto h = kktest::random_vector<float>(rows * cols, rows + cols, -1.0, 1.0);
    auto d_in = kktest::to_device(h);
    DeviceBuffer<float> d_out(rows);
    ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get()), cudaSuccess);
    const auto first = d_out.download();
    EXPECT_TRUE(check_near(first, reference(h, rows, cols, ReduceOp::kSum, 0.0),
                           Tolerance::Rel(1e-4, 1e-5 * double(cols)), "determinism reference"));
    for (int run = 0; run < 10; ++run) {
      d_out.poison();
      ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get()), cudaSuccess);
      EXPECT_TRUE(kktest::same_bits(first, d_out.download()))
          << rows << "x" << cols << " run " << run;
    }
  }
}

// A non-default init is combined once per row; rows == 0 writes nothing; cols == 0
// writes init.
TEST_F(RowReduce, RowReduceInitAndEmpty) {
  const int64_t rows = 5, cols = 1000;
  auto h = kktest::small_int_vector<float>(rows * cols, 11);
  auto d_in = kktest::to_device(h);
  DeviceBuffer<float> d_out(rows);
  d_out.poison();
  ASSERT_EQ(kernelkit::row_reduce(d_in.get(), rows, cols, d_out.get(), ReduceOp::kSum, 10.0f),
            cudaSuccess);
  EXPECT_TRUE(check_near(d_out.download(), reference(h, rows, cols, ReduceOp::kSum, 10.0),
                         Tolerance::Exact(), "init 10"));
  d_out.poison();
  ASSERT_EQ(kernelkit::row_reduce(d_in.get(), rows, cols, d_out.get(), ReduceOp::kMax, 100.0f),
            cudaSuccess);
  EXPECT_TRUE(check_near(d_out.download(), std::vector<double>(rows, 100.0), Tolerance::Exact(),
                         "max init 100"));
  d_out.poison();
  ASSERT_EQ(kernelkit::row_reduce(kNoFloats, rows, 0, d_out.get(), ReduceOp::kMin, -3.0f),
            cudaSuccess);
  EXPECT_TRUE(
      check_near(d_out.download(), std::vector<double>(rows, -3.0), Tolerance::Exact(), "cols 0"));
  EXPECT_EQ(kernelkit::row_sum(kNoFloats, 0, 5, kNoOut), cudaSuccess);
}

// Captured in a CUDA graph (warp path and cluster path) and replayed: same results.
TEST_F(RowReduce, RowReduceGraphCapture) {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1000, 1000}, {5, 1 << 20}}) {
    auto h = kktest::small_int_vector<float>(rows * cols, 31 + rows);
    auto d_in = kktest::to_device(h);
    DeviceBuffer<float> d_out(rows);
    d_out.poison();
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const cudaError_t launched = kernelkit::row_sum(d_in.get(), rows, cols, d_out.get(), stream);
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    ASSERT_EQ(launched, cudaSuccess);
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
      d_out.poison();
      CUDA_CHECK(cudaGraphLaunch(exec, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      EXPECT_TRUE(check_near(d_out.download(), reference(h, rows, cols, ReduceOp::kSum, 0.0),
                             Tolerance::Exact(),
                             "graph " + std::to_string(rows) + "x" + std::to_string(cols)));
    }
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaStreamDestroy(stream));
  }
}

// Bad arguments: cudaErrorInvalidValue and the output untouched.
TEST_F(RowReduce, RowReduceBadArguments) {
  DeviceBuffer<float> d_in(64);
  DeviceBuffer<float> d_out(8);
  d_out.poison();
  const auto before = d_out.download();
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), -1, 8, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 8, -1, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(kNoFloats, 8, 8, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 8, 8, kNoOut), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), big, 3, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_reduce(d_in.get(), 8, 8, d_out.get(), static_cast<ReduceOp>(7), 0.f),
            cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, d_out.download()));
}

// The launch plan (host only): the path each shape takes.
TEST(RowReducePlan, PathsByShape) {
  using kernelkit::detail::choose_row_plan;
  const int sms = 132, threads = 2048;
  // aligned input, whole packs, <= 32 packs per row: the flat kernel, one tile per block
  const auto flat = choose_row_plan(1 << 20, 32, 4, sms, threads, true);
  EXPECT_EQ(flat.flat, 8);
  EXPECT_EQ(flat.grid, (1 << 20) / (256 / 8 * kernelkit::detail::kRowFlatSteps));
  const auto flat128 = choose_row_plan(1 << 18, 128, 4, sms, threads, true);
  EXPECT_EQ(flat128.flat, 32);
  EXPECT_EQ(flat128.grid, (1 << 18) / (256 / 32 * kernelkit::detail::kRowFlatSteps));
  EXPECT_EQ(choose_row_plan(1000, 12, 4, sms, threads, true).flat, 4);  // 3 packs per row
  EXPECT_EQ(choose_row_plan(1000, 4, 4, sms, threads, true).flat, 1);
  EXPECT_EQ(choose_row_plan(1000, 33, 4, sms, threads, true).flat, 0);   // not whole packs
  EXPECT_EQ(choose_row_plan(1000, 132, 4, sms, threads, true).flat, 0);  // 33 packs
  EXPECT_EQ(choose_row_plan(1000, 132, 4, sms, threads, true).width, 32);
  EXPECT_EQ(choose_row_plan(1000, 0, 4, sms, threads, true).flat, 0);  // cols 0: writes init
  EXPECT_EQ(choose_row_plan(1 << 20, 32, 4, sms, threads, false).flat, 0);
  // the grid is capped at kDefaultWaves waves; blocks loop over the remaining tiles
  EXPECT_EQ(choose_row_plan(int64_t{1} << 40, 4, 4, sms, threads, true).grid,
            sms * threads / 256 * kernelkit::kDefaultWaves);
  const auto narrow = choose_row_plan(1 << 20, 32, 4, sms, threads);
  EXPECT_EQ(narrow.width, 4);                       // 2 packs per lane
  EXPECT_EQ(narrow.grid, (1 << 20) / 2 * 4 / 256);  // 2 rows per group
  EXPECT_EQ(choose_row_plan(1 << 16, 1024, 4, sms, threads).grid, (1 << 16) * 32 / 256);
  EXPECT_EQ(choose_row_plan(1 << 20, 33, 4, sms, threads).width, 8);
  EXPECT_EQ(choose_row_plan(1 << 20, 1, 4, sms, threads).width, 1);
  EXPECT_EQ(choose_row_plan(1 << 20, 0, 4, sms, threads).width, 1);
  EXPECT_EQ(choose_row_plan(1 << 18, 128, 4, sms, threads).width, 16);
  EXPECT_EQ(choose_row_plan(1 << 18, 129, 4, sms, threads).width, 32);
  EXPECT_EQ(choose_row_plan(1 << 16, 1024, 4, sms, threads).width, 32);
  const auto block = choose_row_plan(4096, 16384, 4, sms, threads);
  EXPECT_EQ(block.width, 0);
  EXPECT_EQ(block.cluster, 1);
  const auto cluster = choose_row_plan(64, 4194304, 4, sms, threads);
  EXPECT_EQ(cluster.width, 0);
  EXPECT_EQ(cluster.cluster, 5);  // ceil(2 * 132 / 64)
  EXPECT_EQ(cluster.grid, 64 * 5);
  EXPECT_EQ(choose_row_plan(1, 1 << 24, 4, sms, threads).cluster, 8);
  EXPECT_EQ(choose_row_plan(300, 1 << 20, 4, sms, threads).cluster, 1);
  for (int64_t rows : {1, 3, 64, 100, 1000, 100000}) {
    for (int64_t cols : {1, 100, 5000, 1 << 20}) {
      const auto p = choose_row_plan(rows, cols, 4, sms, threads);
      EXPECT_GE(p.grid, 1);
      EXPECT_EQ(p.grid % p.cluster, 0);
      EXPECT_LE(p.cluster, 8);
    }
  }
}

// Past 2^31 elements (64-bit row offsets): f16 values (i % 7) - 3, exact in float sums.
__global__ void fill_mod7_kernel(__half* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = __float2half(float(i % 7 - 3));
}

void run_large(int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  ASSERT_GT(n, int64_t{1} << 31);
  DeviceBuffer<__half> d_in(n);
  fill_mod7_kernel<<<1024, 256>>>(d_in.get(), n);
  CUDA_CHECK(cudaGetLastError());
  DeviceBuffer<float> d_out(rows);
  d_out.poison();
  ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get()), cudaSuccess);
  std::vector<double> ref(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c)
      s += double((r * cols + c) % 7 - 3);
    ref[r] = s;
  }
  EXPECT_TRUE(check_near(d_out.download(), ref, Tolerance::Exact(),
                         "large " + std::to_string(rows) + "x" + std::to_string(cols)));
}

TEST_F(RowReduce, KK_LARGE(RowReduceHalfPastTwoTo31)) {
  run_large(2, (int64_t{1} << 30) + 3);         // cluster path
  run_large((int64_t{1} << 21) + 1, 1024 + 1);  // warp path, misaligned rows
  run_large((int64_t{1} << 25) + 1, 64);        // flat path: 8 packs per row
}

}  // namespace
