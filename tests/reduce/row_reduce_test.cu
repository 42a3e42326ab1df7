// SPDX-License-Identifier: Apache-2.0
// row_reduce / row_sum / row_max / row_min against float64 (exact integer) references:
// every type, every path (short rows of 1..8 columns, flat, narrow groups, a warp, a block, a
// cluster or a split per row), cols in {0, 1, 2, 3, 31, 32, 33, 127, 128, 129, 1024, 1025,
// 2049, 4097, 2^20}, rows in {1, 7, 1000} (fewer rows for 2^20), aligned and offset input,
// with no workspace and with one full of 0xFF bytes, NaN / inf, int64 sums past 2^32,
// f16/bf16 inputs with float sums, determinism, graph capture, bad arguments, > 2^31 elements.
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
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
    for (int64_t c = 0; c < cols; ++c)
      acc = kktest::reduce_step(op, acc, kktest::to_double(h[r * cols + c]));
    ref[r] = acc;
  }
  return ref;
}

template <typename T>
using AccOf = kernelkit::compute_t<T>;

// Calls the public function that matches op (row_sum / row_max / row_min), without a
// workspace or with ws (bytes of it).
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
template <typename T, typename Acc>
cudaError_t call(ReduceOp op, const T* in, int64_t rows, int64_t cols, Acc* out, void* ws,
                 size_t bytes) {
  switch (op) {
    case ReduceOp::kSum:
      return kernelkit::row_sum(in, rows, cols, out, ws, bytes);
    case ReduceOp::kMax:
      return kernelkit::row_max(in, rows, cols, out, ws, bytes);
    default:
      return kernelkit::row_min(in, rows, cols, out, ws, bytes);
  }
}

// How a case gets its workspace: none, or row_reduce_workspace_bytes of 0xFF bytes.
enum class Ws { kNone, kDirty };

// A workspace of row_reduce_workspace_bytes<T, Acc>(rows, cols) bytes filled with 0xFF (a
// call must be correct whatever it holds); at least one byte so that the pointer is real.
template <typename T, typename Acc>
DeviceBuffer<unsigned char> dirty_workspace(int64_t rows, int64_t cols) {
  DeviceBuffer<unsigned char> ws(
      std::max<size_t>(kernelkit::row_reduce_workspace_bytes<T, Acc>(rows, cols), 16));
  ws.poison();
  return ws;
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

// One case: poisoned output, input at `offset` elements past an aligned allocation, Acc the
// output type (float for half / bf16 inputs by default).
template <typename T, typename Acc = AccOf<T>>
void run_case(int64_t rows, int64_t cols, ReduceOp op, int offset, uint64_t seed,
              Ws ws_mode = Ws::kNone) {
  const size_t n = static_cast<size_t>(rows * cols);
  auto h = make_input<T>(n + offset, seed, op);
  auto d_in = kktest::to_device(h);
  h.erase(h.begin(), h.begin() + offset);
  DeviceBuffer<Acc> d_out(rows);
  d_out.poison();
  const T* in = n + offset > 0 ? d_in.get() + offset : nullptr;
  const std::string label = std::string(kktest::type_name<T>()) + "->" + kktest::type_name<Acc>() +
                            " " + op_name(op) + " " + std::to_string(rows) + "x" +
                            std::to_string(cols) + " offset " + std::to_string(offset) + " seed " +
                            std::to_string(seed) +
                            (ws_mode == Ws::kDirty ? " dirty workspace" : "");
  if (ws_mode == Ws::kNone) {
    ASSERT_EQ(call(op, in, rows, cols, d_out.get()), cudaSuccess) << label;
  } else {
    auto ws = dirty_workspace<T, Acc>(rows, cols);
    ASSERT_EQ(call(op, in, rows, cols, d_out.get(), ws.get(), ws.size()), cudaSuccess) << label;
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto ref = reference(h, rows, cols, op, init_of<Acc>(op));
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

// 2^20 columns: without a workspace the cluster path on an H100 (1 and 7 rows: clusters of
// 8 blocks per row; 200 rows of 2^16: a block per row, 53 rows: clusters of 5), with one
// the split path (528 / 75 / 2 / 9 blocks per row).
TYPED_TEST(RowReduceTyped, LongRows) {
  uint64_t seed = 500;
  for (Ws ws : {Ws::kNone, Ws::kDirty}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      // sanitizer: sums without the workspace, maxima with it (each path and op once)
      if (kktest::sanitizer_run() && (op == ReduceOp::kMax) != (ws == Ws::kDirty)) {
        seed += 6;
        continue;
      }
      for (int64_t rows : {1, 7})
        for (int offset : {0, 1})
          run_case<TypeParam>(rows, int64_t{1} << 20, op, offset, ++seed, ws);
      run_case<TypeParam>(200, int64_t{1} << 16, op, 1, ++seed, ws);
      run_case<TypeParam>(53, int64_t{1} << 16, op, 0, ++seed, ws);
    }
    run_case<TypeParam>(3, (int64_t{1} << 20) + 5, ReduceOp::kMin, 3, ++seed, ws);
  }
}

// Rows of up to 128 bytes (the short path when they are not whole aligned packs): 1..8
// columns, odd and even lengths past them (whole packs take the padded stage), the longest;
// every misalignment of the base pointer, row counts around a tile (2048 packs) and its halo.
TYPED_TEST(RowReduceTyped, ShortRows) {
  constexpr int P = kernelkit::kMaxPackSize<TypeParam>;
  uint64_t seed = 1500;
  for (int64_t cols : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{6},
                       int64_t{7}, int64_t{8}, int64_t{2 * P + 1}, int64_t{4 * P - 2},
                       int64_t{4 * P}, int64_t{8 * P - 1}, int64_t{8 * P}}) {
    const int64_t tile_rows = 2048 * P / cols;  // rows per tile, about
    for (int64_t rows : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{255}, int64_t{257},
                         tile_rows - 1, tile_rows, tile_rows + 1, 3 * tile_rows + 7}) {
      for (int offset : {0, 1, P - 1}) {
        run_case<TypeParam>(rows, cols, ReduceOp::kSum, offset, ++seed);
        run_case<TypeParam>(rows, cols, ReduceOp::kMax, offset, ++seed);
      }
    }
    for (int offset = 0; offset < P; ++offset)
      run_case<TypeParam>(100003, cols, ReduceOp::kMin, offset, ++seed);
  }
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
  int64_t index = 0;
  for (int64_t k : {1, 2, 3, 5, 8, 12, 17, 31, 32}) {
    int64_t width = 1;
    while (width < k)
      width *= 2;
    const int64_t tile = 256 / width * kernelkit::detail::kRowFlatSteps;
    for (int64_t rows : {int64_t{1}, int64_t{7}, tile - 1, tile, tile + 1, 3 * tile + 5}) {
      // sanitizer: every 3rd case (two of three row counts a width, the op turning)
      for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin})
        if (kktest::sanitize_keep(index++, 3))
          run_case<TypeParam>(rows, k * P, op, 0, seed + (op == ReduceOp::kSum ? 1 : 2));
      seed += 2;
    }
  }
  run_case<TypeParam>(100003, 8 * P, ReduceOp::kSum, 0, ++seed);
  run_case<TypeParam>(100003, 8 * P, ReduceOp::kMax, 0, ++seed);
}

// Plans run with a smaller grid than they chose (as on more tiles than INT32_MAX blocks):
// the flat, short, group and block kernels stride over their tiles / rows.
void run_small_grid(int64_t rows, int64_t cols, unsigned grid, uint64_t seed, int offset = 0) {
  auto h = kktest::small_int_vector<float>(rows * cols + offset, seed);
  auto d_in = kktest::to_device(h);
  h.erase(h.begin(), h.begin() + offset);
  DeviceBuffer<float> d_out(rows);
  d_out.poison();
  kernelkit::DeviceInfo d;
  ASSERT_EQ(kernelkit::current_device_info(&d), cudaSuccess);
  auto plan = kernelkit::plan_row_reduce(rows, cols, 4, 4,
                                         kernelkit::alignment_of(d_in.get() + offset), 0, d);
  if (plan.path == kernelkit::RowReducePath::kCluster) return;  // its grid is fixed by rows
  plan.shape.grid.x = grid;
  ASSERT_EQ(kernelkit::launch_row_reduce<kernelkit::Sum>(plan, d_in.get() + offset, rows, cols,
                                                         d_out.get(), 0.0f, nullptr, nullptr),
            cudaSuccess);
  EXPECT_TRUE(check_near(
      d_out.download(), reference(h, rows, cols, ReduceOp::kSum, 0.0), Tolerance::Exact(),
      "grid " + std::to_string(grid) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
          " offset " + std::to_string(offset) + " seed " + std::to_string(seed)));
}

TEST_F(RowReduce, FlatPathLoopsOverTiles) {
  for (unsigned grid : {1u, 3u}) {
    run_small_grid(10007, 8 * 4, grid, 1300 + grid);  // flat, 8 lanes
    run_small_grid(2003, 25 * 4, grid, 1310 + grid);  // flat, 32 lanes
    run_small_grid(5003, 4, grid, 1320 + grid);       // flat, 1 lane
    run_small_grid(30011, 3, grid, 1330 + grid, 1);   // short
    run_small_grid(9001, 77, grid, 1340 + grid, 1);   // narrow group
    run_small_grid(3001, 600, grid, 1350 + grid);     // a warp per row
    run_small_grid(700, 3000, grid, 1360 + grid);     // a block per row
  }
}

// A block per row in one batch of loads (kBlockOnce: rows of <= 1024 packs): both sides of
// the 1024-pack limit and of 512 packs, with a wave of rows or more, aligned and offset.
TYPED_TEST(RowReduceTyped, BlockOncePath) {
  constexpr int64_t P = kernelkit::kMaxPackSize<TypeParam>;
  uint64_t seed = 2100;
  for (int64_t cols : {512 * P + 1, 1024 * P - 1, 1024 * P, 1024 * P + 1})
    for (int offset : {0, 1}) {
      run_case<TypeParam>(600, cols, ReduceOp::kSum, offset, ++seed);
      run_case<TypeParam>(600, cols, ReduceOp::kMax, offset, ++seed, Ws::kDirty);
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

// The same call gives the same bits, ten times, on every path (short, group, flat, warp,
// block, cluster without a workspace; split with one, refilled with 0xFF between runs).
TEST_F(RowReduce, RowReduceDeterministic) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {4099, 7}, {4099, 32}, {1031, 1000}, {300, 40000}, {3, 3 << 20}, {1, 1 << 22}};
  for (auto [rows, cols] : shapes) {
    auto h = kktest::random_vector<float>(rows * cols, rows + cols, -1.0, 1.0);
    auto d_in = kktest::to_device(h);
    for (Ws mode : {Ws::kNone, Ws::kDirty}) {
      auto ws = dirty_workspace<float, float>(rows, cols);
      const size_t bytes = mode == Ws::kNone ? 0 : ws.size();
      DeviceBuffer<float> d_out(rows);
      ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get(), ws.get(), bytes),
                cudaSuccess);
      const auto first = d_out.download();
      EXPECT_TRUE(check_near(first, reference(h, rows, cols, ReduceOp::kSum, 0.0),
                             Tolerance::Rel(1e-4, 1e-5 * double(cols)), "determinism reference"));
      for (int run = 0; run < 10; ++run) {
        d_out.poison();
        ws.poison();
        ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get(), ws.get(), bytes),
                  cudaSuccess);
        EXPECT_TRUE(kktest::same_bits(first, d_out.download()))
            << rows << "x" << cols << " run " << run << (bytes ? " workspace" : "");
      }
    }
  }
}

// Few rows of any length, with a workspace (full of 0xFF bytes, then of the previous call's
// partials): the split path, one row being the device-wide reduction; workspaces smaller
// than the planned split's (3 partials a row; 1: no split at all); f32 and f16 -> f32.
template <typename T>
void run_split(int64_t rows, int64_t cols, int offset, size_t ws_bytes, uint64_t seed) {
  auto h = kktest::small_int_vector<T>(rows * cols + offset, seed);
  auto d_in = kktest::to_device(h);
  h.erase(h.begin(), h.begin() + offset);
  const auto ref = reference(h, rows, cols, ReduceOp::kSum, 0.0);
  DeviceBuffer<unsigned char> ws(std::max<size_t>(ws_bytes, 16));
  ws.poison();
  const std::string label = std::string(kktest::type_name<T>()) + " " + std::to_string(rows) + "x" +
                            std::to_string(cols) + " offset " + std::to_string(offset) +
                            " workspace " + std::to_string(ws_bytes) + " seed " +
                            std::to_string(seed);
  for (int rep = 0; rep < 2; ++rep) {
    DeviceBuffer<float> d_out(rows);
    d_out.poison();
    ASSERT_EQ(kernelkit::row_sum(d_in.get() + offset, rows, cols, d_out.get(), ws.get(), ws_bytes),
              cudaSuccess)
        << label;
    EXPECT_TRUE(check_near(d_out.download(), ref, Tolerance::Exact(),
                           label + " rep " + std::to_string(rep)));
  }
}

TEST_F(RowReduce, SplitRows) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1, (1 << 22) + 3},  {2, 1 << 21}, {3, 1000003}, {5, 654321},
      {32, (1 << 16) + 1}, {1, 8193},    {1, 8192},    {7, 20000}};
  uint64_t seed = 2000;
  for (auto [rows, cols] : shapes) {
    const size_t full = kernelkit::row_reduce_workspace_bytes<float, float>(rows, cols);
    const size_t full_half = kernelkit::row_reduce_workspace_bytes<__half, float>(rows, cols);
    for (int offset : {0, 1}) {
      for (size_t bytes : {full, size_t(rows * 4 * 3), size_t(rows * 4)}) {
        run_split<float>(rows, cols, offset, bytes, ++seed);
      }
      run_split<__half>(rows, cols, offset + 2, full_half, ++seed);
      run_split<__nv_bfloat16>(rows, cols, offset, full_half, ++seed);
    }
  }
}

// The split path's two combines, the float pack's two kSplit entries of kRowReduceConfigs: a
// grid sync in one cooperative launch (this GPU's plan) and the combine kernel (the plan for
// a device without cooperative launches), give the same bits, exact on small integers; real
// values too.
TEST_F(RowReduce, SplitCombinesAgree) {
  uint64_t seed = 2400;
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {1, (1 << 22) + 3}, {3, 1000003}, {32, (1 << 16) + 1}}) {
    for (bool ints : {true, false}) {
      auto h = ints ? kktest::small_int_vector<float>(rows * cols, ++seed)
                    : kktest::random_vector<float>(rows * cols, ++seed, -1.0, 1.0);
      auto d_in = kktest::to_device(h);
      const size_t bytes = kernelkit::row_reduce_workspace_bytes<float, float>(rows, cols);
      DeviceBuffer<unsigned char> ws(bytes);
      kernelkit::DeviceInfo d;
      ASSERT_EQ(kernelkit::current_device_info(&d), cudaSuccess);
      std::vector<std::vector<float>> got;
      const kernelkit::ConfigRange entries = kernelkit::row_reduce_configs_of(4);
      for (size_t i = entries.begin; i < entries.end; ++i) {
        const kernelkit::RowReduceConfig c = kernelkit::kRowReduceConfigs[i];
        if (c.path != kernelkit::RowReducePath::kSplit) continue;
        const bool coop = c.combine == kernelkit::BlockCombine::kGrid;
        if (coop && !d.cooperative_launch) continue;  // this GPU cannot run it
        kernelkit::DeviceInfo dev = d;
        dev.cooperative_launch = coop;
        const auto plan =
            kernelkit::plan_row_reduce(rows, cols, 4, 4, kernelkit::Alignment(), bytes, dev);
        ASSERT_TRUE(kernelkit::row_reduce_config(plan) == c) << "entry " << i;
        ws.poison();
        DeviceBuffer<float> d_out(rows);
        d_out.poison();
        ASSERT_EQ(kernelkit::launch_row_reduce<kernelkit::Sum>(
                      plan, d_in.get(), rows, cols, d_out.get(), 0.0f, ws.get(), nullptr),
                  cudaSuccess);
        got.push_back(d_out.download());
        const auto ref = reference(h, rows, cols, ReduceOp::kSum, 0.0);
        EXPECT_TRUE(check_near(got.back(), ref, ints ? Tolerance::Exact() : Tolerance::Rel(0, 1e-2),
                               std::to_string(rows) + "x" + std::to_string(cols) +
                                   (coop ? " grid sync" : " combine kernel")));
      }
      ASSERT_FALSE(got.empty());
      for (size_t k = 1; k < got.size(); ++k)
        EXPECT_TRUE(kktest::same_bits(got[0], got[k])) << rows << "x" << cols;
    }
  }
}

// Every entry of T's range of kRowReduceConfigs runs: for each, the smallest case (rows x
// cols from a list, input aligned or one element off, no workspace or the bound's) whose plan
// on this GPU, or on this GPU without cooperative launches or clusters, is that entry; the
// plan runs here through launch_row_reduce. A cluster entry is skipped only on a GPU or build
// without clusters, a cooperative one only on a GPU without cooperative launches.
TYPED_TEST(RowReduceTyped, EveryConfiguration) {
  using T = TypeParam;
  using Acc = AccOf<T>;
  kernelkit::DeviceInfo here;
  ASSERT_EQ(kernelkit::current_device_info(&here), cudaSuccess);
  kernelkit::DeviceInfo no_coop = here, no_cluster = here;
  no_coop.cooperative_launch = false;
  no_cluster.cluster_launch = false;
  const kernelkit::DeviceInfo devices[] = {here, no_cluster, no_coop};
  const int64_t wave = kernelkit::detail::reduce_wave(here);
  const int64_t rows_list[] = {1, 2, 3, 7, 33, wave, wave + 1};
  const int64_t cols_list[] = {0,    1,    2,    3,    4,     8,     16,    17,    32,     40,
                               64,   100,  128,  200,  256,   300,   512,   600,   1000,   2000,
                               4096, 5000, 8192, 9000, 16384, 20000, 40000, 65536, 100000, 300000};
  constexpr int64_t kMaxElems = int64_t{1} << 23;
  const kernelkit::ConfigRange entries =
      kernelkit::row_reduce_configs_of(kernelkit::kMaxPackSize<T>);
  uint64_t seed = 2600;
  for (size_t i = entries.begin; i < entries.end; ++i) {
    const kernelkit::RowReduceConfig c = kernelkit::kRowReduceConfigs[i];
    bool found = false;
    int64_t best_rows = 0, best_cols = 0, best_ld = 0;
    bool best_aligned = true;
    size_t best_ws = 0;
    kernelkit::RowReducePlan best;
    for (const auto& dev : devices)
      for (int64_t rows : rows_list)
        for (int64_t cols : cols_list)
          for (bool aligned : {true, false})
            for (bool with_ws : {false, true})
              for (int64_t ld : {cols, cols + 1}) {  // (short strided rows: the group kernel)
                if (rows * ld > kMaxElems) continue;
                if (found && rows * ld >= best_rows * best_ld) continue;
                const size_t ws =
                    with_ws ? kernelkit::row_reduce_workspace_bytes<T, Acc>(rows, cols) : 0;
                const kernelkit::Alignment at =
                    aligned ? kernelkit::Alignment() : kernelkit::Alignment(sizeof(T));
                const auto plan =
                    kernelkit::plan_row_reduce(rows, cols, ld, sizeof(T), sizeof(Acc), at, ws, dev);
                if (!(kernelkit::row_reduce_config(plan) == c)) continue;
                found = true;
                best_rows = rows, best_cols = cols, best_ld = ld, best_aligned = aligned;
                best_ws = ws;
                best = plan;
              }
    const std::string label = std::string(kktest::type_name<T>()) + " entry " + std::to_string(i) +
                              " " + std::to_string(best_rows) + "x" + std::to_string(best_cols) +
                              " ld " + std::to_string(best_ld) + (best_aligned ? "" : " offset");
    if (!found) {
      // only what this GPU or build cannot launch
      if (c.path == kernelkit::RowReducePath::kCluster) {
        EXPECT_FALSE(here.clusters()) << label;
      } else {
        EXPECT_TRUE(c.combine == kernelkit::BlockCombine::kGrid && !here.cooperative_launch)
            << label;
      }
      continue;
    }
    const int offset = best_aligned ? 0 : 1;
    const size_t n = static_cast<size_t>(best_rows * best_ld);
    auto h = make_input<T>(n + offset, ++seed, ReduceOp::kSum);
    auto d_in = kktest::to_device(h);
    h.erase(h.begin(), h.begin() + offset);
    for (int64_t r = 0; r < best_rows; ++r)  // the rows' elements, contiguous
      std::copy_n(h.begin() + r * best_ld, best_cols, h.begin() + r * best_cols);
    h.resize(static_cast<size_t>(best_rows * best_cols));
    DeviceBuffer<Acc> d_out(best_rows);
    d_out.poison();
    DeviceBuffer<unsigned char> ws(std::max<size_t>(best_ws, 16));
    ws.poison();
    ASSERT_EQ(kernelkit::launch_row_reduce<kernelkit::Sum>(best, d_in.get() + offset, best_rows,
                                                           best_cols, best_ld, d_out.get(), Acc(0),
                                                           ws.get(), nullptr),
              cudaSuccess)
        << label;
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(check_near(d_out.download(),
                           reference(h, best_rows, best_cols, ReduceOp::kSum, 0.0),
                           Tolerance::Exact(), label));
  }
}

// Half and bf16 inputs summed into float outputs (the benchmark's f16/bf16 shapes, smaller),
// and into half outputs (accumulated in float, rounded once).
TEST_F(RowReduce, HalfInputs) {
  uint64_t seed = 2500;
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {4096, 32}, {512, 1024}, {128, 4096}, {4, (1 << 20) + 5}, {20000, 3}, {100000, 1}}) {
    for (Ws ws : {Ws::kNone, Ws::kDirty}) {
      run_case<__half, float>(rows, cols, ReduceOp::kSum, 0, ++seed, ws);
      run_case<__nv_bfloat16, float>(rows, cols, ReduceOp::kSum, 1, ++seed, ws);
      run_case<__nv_bfloat16, float>(rows, cols, ReduceOp::kMax, 0, ++seed, ws);
    }
  }
  for (int64_t cols : {1, 3, 100, 5000, 300000}) {
    const int64_t rows = cols > 10000 ? 3 : 1000;
    // values in [0, 0.2): every row sum (at most 60000) stays inside f16's range
    auto h = kktest::random_vector<__half>(rows * cols, 77 + cols, 0.0, 0.2);
    auto d_in = kktest::to_device(h);
    auto ws = dirty_workspace<__half, __half>(rows, cols);
    DeviceBuffer<__half> d_out(rows);
    d_out.poison();
    ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get(), ws.get(), ws.size()),
              cudaSuccess);
    // one rounding of the float sum to half (2^-11 relative), plus the float sum's own error
    EXPECT_TRUE(check_near(d_out.download(), reference(h, rows, cols, ReduceOp::kSum, 0.0),
                           Tolerance::Rel(1e-3), "f16 -> f16 sum cols " + std::to_string(cols)));
  }
}

// One column: out[r] = op(init, in[r]), a strided copy (with the conversion of the type).
TEST_F(RowReduce, OneColumn) {
  for (int offset : {0, 1, 3}) {
    const int64_t rows = (1 << 20) + 3;
    auto h = kktest::random_vector<float>(rows + offset, 91 + offset, -10.0, 10.0);
    auto d_in = kktest::to_device(h);
    h.erase(h.begin(), h.begin() + offset);
    DeviceBuffer<float> d_out(rows);
    d_out.poison();
    ASSERT_EQ(kernelkit::row_sum(d_in.get() + offset, rows, 1, d_out.get()), cudaSuccess);
    EXPECT_TRUE(kktest::same_bits(d_out.download(), h)) << "offset " << offset;
    auto hh = kktest::random_vector<__half>(rows + offset, 92 + offset, -10.0, 10.0);
    auto d_hh = kktest::to_device(hh);
    hh.erase(hh.begin(), hh.begin() + offset);
    d_out.poison();
    ASSERT_EQ(kernelkit::row_max(d_hh.get() + offset, rows, 1, d_out.get()), cudaSuccess);
    std::vector<double> ref(rows);
    for (int64_t r = 0; r < rows; ++r)
      ref[r] = kktest::to_double(hh[r]);
    EXPECT_TRUE(check_near(d_out.download(), ref, Tolerance::Exact(), "f16 -> f32 one column"));
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

// Captured in a CUDA graph (warp path, cluster path, split path with its combine kernel)
// and replayed: same results.
TEST_F(RowReduce, RowReduceGraphCapture) {
  for (auto [rows, cols, use_ws] : std::vector<std::tuple<int64_t, int64_t, bool>>{
           {1000, 1000, false}, {5, 1 << 20, false}, {5, 1 << 20, true}, {1, 1 << 22, true}}) {
    auto h = kktest::small_int_vector<float>(rows * cols, 31 + rows);
    auto d_in = kktest::to_device(h);
    DeviceBuffer<float> d_out(rows);
    d_out.poison();
    auto ws = dirty_workspace<float, float>(rows, cols);
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const cudaError_t launched = kernelkit::row_sum(d_in.get(), rows, cols, d_out.get(), ws.get(),
                                                    use_ws ? ws.size() : 0, stream);
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
  // pointers not aligned to their element
  const float* in_odd =
      reinterpret_cast<const float*>(reinterpret_cast<const char*>(d_in.get()) + 2);
  float* out_odd = reinterpret_cast<float*>(reinterpret_cast<char*>(d_out.get()) + 1);
  EXPECT_EQ(kernelkit::row_sum(in_odd, 7, 8, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 7, 8, out_odd), cudaErrorInvalidValue);
  // workspaces: bytes without a pointer, not 16-byte aligned, over the output or the input
  DeviceBuffer<unsigned char> ws(4096);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 8, 8, d_out.get(), nullptr, 64), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 8, 8, d_out.get(), ws.get() + 4, 64),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 8, 8, d_out.get(), d_out.get(), 64),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 8, 8, d_out.get(), d_in.get() + 16, 64),
            cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, d_out.download()));
  // the output inside the input (which must stay as it was)
  d_in.poison();
  const auto in_before = d_in.download();
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 4, 8, d_in.get() + 30), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::row_max(d_in.get() + 1, 1, 8, d_in.get() + 8), cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(in_before, d_in.download()));
}

// Past 2^31 elements (64-bit row offsets): f16 values (i % 7) - 3, exact in float sums.
__global__ void fill_mod7_kernel(__half* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = __float2half(float(i % 7 - 3));
}

// Sum of (i % 7) - 3 over i in [r * cols, r * cols + cols): whole cycles of 7 add 0.
double mod7_row_sum(int64_t r, int64_t cols) {
  const int64_t first = r * cols + cols / 7 * 7;
  double s = 0;
  for (int64_t i = first; i < r * cols + cols; ++i)
    s += double(i % 7 - 3);
  return s;
}

void run_large(int64_t rows, int64_t cols, Ws ws_mode = Ws::kNone) {
  const int64_t n = rows * cols;
  ASSERT_GT(n, int64_t{1} << 31);
  DeviceBuffer<__half> d_in(n);
  fill_mod7_kernel<<<1024, 256>>>(d_in.get(), n);
  CUDA_CHECK(cudaGetLastError());
  DeviceBuffer<float> d_out(rows);
  d_out.poison();
  const std::string label = "large " + std::to_string(rows) + "x" + std::to_string(cols) +
                            (ws_mode == Ws::kDirty ? " workspace" : "");
  if (ws_mode == Ws::kDirty) {
    auto ws = dirty_workspace<__half, float>(rows, cols);
    ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get(), ws.get(), ws.size()),
              cudaSuccess)
        << label;
    CUDA_CHECK(cudaDeviceSynchronize());
  } else {
    ASSERT_EQ(kernelkit::row_sum(d_in.get(), rows, cols, d_out.get()), cudaSuccess) << label;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  constexpr int64_t kChunk = int64_t{1} << 22;  // rows compared at a time
  for (int64_t r0 = 0; r0 < rows; r0 += kChunk) {
    const int64_t m = std::min(kChunk, rows - r0);
    std::vector<float> got(m);
    CUDA_CHECK(cudaMemcpy(got.data(), d_out.get() + r0, m * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<double> ref(m);
    for (int64_t r = 0; r < m; ++r)
      ref[r] = mod7_row_sum(r0 + r, cols);
    ASSERT_TRUE(
        check_near(got, ref, Tolerance::Exact(), label + " rows from " + std::to_string(r0)));
  }
}

TEST_F(RowReduce, KK_LARGE(RowReduceHalfPastTwoTo31)) {
  run_large(2, (int64_t{1} << 30) + 3);              // cluster path
  run_large(2, (int64_t{1} << 30) + 3, Ws::kDirty);  // split path
  run_large(3, (int64_t{1} << 30) + 5, Ws::kDirty);  // split path, misaligned rows
  run_large((int64_t{1} << 21) + 1, 1024 + 1);       // warp path, misaligned rows
  run_large((int64_t{1} << 25) + 1, 64);             // flat path: 8 packs per row
  run_large((int64_t{1} << 31) / 3 + 5, 3);          // short path
  run_large((int64_t{1} << 31) + 3, 1);              // short path, one column
}

}  // namespace
