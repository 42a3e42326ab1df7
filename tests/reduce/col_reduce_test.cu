// SPDX-License-Identifier: Apache-2.0
// col_reduce / col_sum / col_max / col_min against float64 (exact: small-integer inputs for
// sums, elements for max / min) references: every type, outer / n / inner in {1, 2, 31, 33,
// primes, large}, aligned and offset input (single-element loads), without a workspace and
// with one full of 0xFF bytes (the split path), the listed benchmark shapes, determinism, bad
// arguments, past 2^31 elements; and row_reduce with a row stride (ld = cols + pad, offset
// pointers, every path).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/reduce/col_reduce.cuh"

namespace {

using kernelkit::ReduceOp;
using kktest::check_near;
using kktest::DeviceBuffer;
using kktest::Tolerance;

const char* op_name(ReduceOp op) {
  return op == ReduceOp::kSum ? "sum" : op == ReduceOp::kMax ? "max" : "min";
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

template <typename T>
std::vector<T> make_input(size_t n, uint64_t seed, ReduceOp op) {
  if (op == ReduceOp::kSum) return kktest::small_int_vector<T>(n, seed);
  if constexpr (std::is_integral_v<T>) {
    return kktest::random_vector<T>(n, seed, -1000000, 1000000);
  } else {
    return kktest::random_vector<T>(n, seed, -1.0, 1.0);
  }
}

// float64 reference: out[o * inner + i] = op(init, in[o][k][i] over k).
template <typename T>
std::vector<double> col_reference(const std::vector<T>& h, int64_t outer, int64_t n, int64_t inner,
                                  ReduceOp op, double init) {
  std::vector<double> ref(outer * inner, init);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < inner; ++i)
        ref[o * inner + i] = kktest::reduce_step(op, ref[o * inner + i],
                                                 kktest::to_double(h[(o * n + k) * inner + i]));
  return ref;
}

template <typename T, typename Acc>
cudaError_t call(ReduceOp op, const T* in, int64_t outer, int64_t n, int64_t inner, Acc* out,
                 void* ws, size_t bytes) {
  switch (op) {
    case ReduceOp::kSum:
      return kernelkit::col_sum(in, outer, n, inner, out, ws, bytes);
    case ReduceOp::kMax:
      return kernelkit::col_max(in, outer, n, inner, out, ws, bytes);
    default:
      return kernelkit::col_min(in, outer, n, inner, out, ws, bytes);
  }
}

// One case: poisoned output, input `offset` elements past an aligned allocation, with no
// workspace or with col_reduce_workspace_bytes of 0xFF bytes.
template <typename T, typename Acc = kernelkit::compute_t<T>>
void run_case(int64_t outer, int64_t n, int64_t inner, ReduceOp op, int offset, uint64_t seed,
              bool with_ws) {
  const size_t count = static_cast<size_t>(outer * n * inner);
  auto h = make_input<T>(count + offset, seed, op);
  auto d_in = kktest::to_device(h);
  h.erase(h.begin(), h.begin() + offset);
  DeviceBuffer<Acc> d_out(std::max<int64_t>(outer * inner, 1));
  d_out.poison();
  DeviceBuffer<unsigned char> ws(std::max<size_t>(
      with_ws ? kernelkit::col_reduce_workspace_bytes<T, Acc>(outer, n, inner) : 0, 16));
  ws.poison();
  const std::string label = std::string(kktest::type_name<T>()) + "->" + kktest::type_name<Acc>() +
                            " " + op_name(op) + " " + std::to_string(outer) + "x" +
                            std::to_string(n) + "x" + std::to_string(inner) + " offset " +
                            std::to_string(offset) + " seed " + std::to_string(seed) +
                            (with_ws ? " dirty workspace" : "");
  ASSERT_EQ(call(op, d_in.get() + offset, outer, n, inner, d_out.get(),
                 with_ws ? static_cast<void*>(ws.get()) : nullptr, with_ws ? ws.size() : 0),
            cudaSuccess)
      << label;
  CUDA_CHECK(cudaDeviceSynchronize());
  auto got = d_out.download();
  got.resize(outer * inner);
  EXPECT_TRUE(check_near(got, col_reference(h, outer, n, inner, op, init_of<Acc>(op)),
                         Tolerance::Exact(), label));
}

class ColReduce : public kktest::GpuTest {};

template <typename T>
class ColReduceTyped : public kktest::GpuTest {};

using ColTypes = ::testing::Types<float, double, __half, __nv_bfloat16, int32_t, int64_t>;
TYPED_TEST_SUITE(ColReduceTyped, ColTypes);

// outer x n x inner over {1, 2, 31, 33, primes, larger}; offsets 0 and 1 (single elements);
// with a workspace the shapes of few tiles split.
TYPED_TEST(ColReduceTyped, Sweep) {
  uint64_t seed = 3300;
  int64_t index = 0;
  for (int64_t outer : {1, 2, 31, 33})
    for (int64_t n : {0, 1, 2, 31, 33, 97, 1000, 4099})
      for (int64_t inner : {1, 2, 3, 4, 8, 17, 31, 33, 64, 257, 1024, 4100}) {
        if (outer * n * inner > (int64_t{1} << 22)) continue;
        for (int offset : {0, 1})
          for (bool ws : {false, true}) {
            const ReduceOp op = index % 3 == 0   ? ReduceOp::kSum
                                : index % 3 == 1 ? ReduceOp::kMax
                                                 : ReduceOp::kMin;
            ++index;
            if (!kktest::sanitize_keep(index, 7)) continue;
            run_case<TypeParam>(outer, n, inner, op, offset, ++seed, ws);
          }
      }
}

// Long n with few columns: the split path's many blocks per tile, and narrow slices (a warp
// over several rows).
TYPED_TEST(ColReduceTyped, LongColumns) {
  uint64_t seed = 3900;
  for (bool ws : {false, true}) {
    for (int64_t inner : {2, 3, 4, 8, 17, 32, 1000, 4096}) {
      // wide rows: fewer of them (still 4..60 splits a tile with the workspace)
      const int64_t n = inner <= 32 ? 100003 : 4001;
      run_case<TypeParam>(1, n, inner, ReduceOp::kSum, 0, ++seed, ws);
      run_case<TypeParam>(3, n / 5, inner, ReduceOp::kMax, 1, ++seed, ws);
    }
  }
}

// The listed benchmark shapes (f32 and bf16), every op, with and without a workspace.
TEST_F(ColReduce, BenchmarkShapes) {
  uint64_t seed = 4000;
  struct Shape {
    int64_t outer, n, inner;
  };
  for (const Shape s : {Shape{1, 8192, 4096}, Shape{1, 65536, 1024}, Shape{32, 256, 3136},
                        Shape{16, 4096, 1}, Shape{1, 1 << 20, 4}}) {
    // the benchmark's calls (a workspace), and a maximum without one, misaligned
    run_case<float>(s.outer, s.n, s.inner, ReduceOp::kSum, 0, ++seed, true);
    run_case<__nv_bfloat16>(s.outer, s.n, s.inner, ReduceOp::kSum, 0, ++seed, true);
    run_case<float>(s.outer, s.n, s.inner, ReduceOp::kMax, 1, ++seed, false);
  }
}

// Real sums: a float64 reference within the type's tolerance; the same bits twice (with a
// workspace, whose contents differ between the calls).
TEST_F(ColReduce, RealSumsDeterministic) {
  const int64_t outer = 3, n = 5001, inner = 769;
  auto h = kktest::random_vector<float>(outer * n * inner, 77, -1.0, 1.0);
  auto d_in = kktest::to_device(h);
  DeviceBuffer<float> d_out(outer * inner);
  const size_t bytes = kernelkit::col_reduce_workspace_bytes<float>(outer, n, inner);
  DeviceBuffer<unsigned char> ws(std::max<size_t>(bytes, 16));
  ws.poison();
  ASSERT_EQ(kernelkit::col_sum(d_in.get(), outer, n, inner, d_out.get(), ws.get(), ws.size()),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto first = d_out.download();
  EXPECT_TRUE(check_near(first, col_reference(h, outer, n, inner, ReduceOp::kSum, 0.0),
                         Tolerance::Rel(1e-5, 1e-6 * double(n)), "real sums"));
  CUDA_CHECK(cudaMemset(ws.get(), 0x3c, ws.size()));
  d_out.poison();
  ASSERT_EQ(kernelkit::col_sum(d_in.get(), outer, n, inner, d_out.get(), ws.get(), ws.size()),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(first, d_out.download()));
}

TEST_F(ColReduce, InitAndNaN) {
  DeviceBuffer<float> d_out(6);
  d_out.poison();
  // n == 0: init everywhere
  ASSERT_EQ(kernelkit::col_reduce(static_cast<const float*>(nullptr), 2, 0, 3, d_out.get(),
                                  ReduceOp::kSum, 5.0f),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(
      check_near(d_out.download(), std::vector<double>(6, 5.0), Tolerance::Exact(), "empty n"));
  std::vector<float> h(2 * 40 * 3, 1.0f);
  h[(1 * 40 + 17) * 3 + 2] = std::nanf("");
  auto d_in = kktest::to_device(h);
  ASSERT_EQ(kernelkit::col_max(d_in.get(), 2, 40, 3, d_out.get()), cudaSuccess);
  const auto got = d_out.download();
  for (int j = 0; j < 6; ++j)
    EXPECT_EQ(std::isnan(got[j]), j == 5) << j;
}

TEST_F(ColReduce, BadArguments) {
  DeviceBuffer<float> d_in(64);
  DeviceBuffer<float> d_out(16);
  d_out.poison();
  const auto before = d_out.download();
  const float* no_in = nullptr;
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), -1, 2, 2, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, -1, 2, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, 2, -1, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_sum(no_in, 2, 2, 2, d_out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, 2, 2, static_cast<float*>(nullptr)),
            cudaErrorInvalidValue);
  EXPECT_EQ(
      kernelkit::col_sum(d_in.get(), std::numeric_limits<int64_t>::max() / 2, 1, 3, d_out.get()),
      cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_reduce(d_in.get(), 2, 2, 2, d_out.get(), static_cast<ReduceOp>(9), 0.f),
            cudaErrorInvalidValue);
  const float* in_odd =
      reinterpret_cast<const float*>(reinterpret_cast<const char*>(d_in.get()) + 2);
  EXPECT_EQ(kernelkit::col_sum(in_odd, 2, 2, 2, d_out.get()), cudaErrorInvalidValue);
  DeviceBuffer<unsigned char> ws(4096);
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, 4, 8, d_out.get(), nullptr, 64),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, 4, 8, d_out.get(), ws.get() + 4, 64),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, 4, 8, d_out.get(), d_out.get(), 64),
            cudaErrorInvalidValue);
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, 4, 8, d_out.get(), d_in.get() + 16, 64),
            cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, d_out.download()));
  // the output inside the input (which must stay as it was)
  d_in.poison();
  const auto in_before = d_in.download();
  EXPECT_EQ(kernelkit::col_sum(d_in.get(), 2, 4, 8, d_in.get() + 30), cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(in_before, d_in.download()));
}

// ---- row_reduce with a row stride ---------------------------------------------------------

// rows x cols read at stride ld from a buffer whose padding holds large values (a read of
// the padding shows in every op); input `offset` elements past an aligned allocation.
template <typename T, typename Acc = kernelkit::compute_t<T>>
void run_strided(int64_t rows, int64_t cols, int64_t ld, ReduceOp op, int offset, uint64_t seed,
                 bool with_ws) {
  const int64_t span = rows == 0 ? 0 : (rows - 1) * ld + cols;
  auto h = make_input<T>(static_cast<size_t>(span + offset), seed, op);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols; c < ld && r * ld + c < span; ++c)
      h[offset + r * ld + c] = kernelkit::convert<T>(op == ReduceOp::kMin ? -100 : 100);
  auto d_in = kktest::to_device(h);
  std::vector<T> dense(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dense[r * cols + c] = h[offset + r * ld + c];
  DeviceBuffer<Acc> d_out(std::max<int64_t>(rows, 1));
  d_out.poison();
  DeviceBuffer<unsigned char> ws(
      std::max<size_t>(kernelkit::row_reduce_workspace_bytes<T, Acc>(rows, cols), 16));
  ws.poison();
  const std::string label = std::string(kktest::type_name<T>()) + " " + op_name(op) + " " +
                            std::to_string(rows) + "x" + std::to_string(cols) + " ld " +
                            std::to_string(ld) + " offset " + std::to_string(offset) +
                            (with_ws ? " ws" : "");
  // row_reduce with an explicit init for sums and maxima (0, lowest: exact in double), row_min
  // (the identity implied) for minima, whose init INT64_MAX a double cannot hold
  const T* in = d_in.get() + offset;
  void* w = with_ws ? static_cast<void*>(ws.get()) : nullptr;
  const size_t wb = with_ws ? ws.size() : 0;
  const cudaError_t err =
      op == ReduceOp::kMin
          ? kernelkit::row_min(in, rows, cols, ld, d_out.get(), w, wb)
          : kernelkit::row_reduce(in, rows, cols, ld, d_out.get(), op,
                                  kernelkit::convert<Acc>(init_of<Acc>(op)), w, wb);
  ASSERT_EQ(err, cudaSuccess) << label;
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> ref(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double acc = init_of<Acc>(op);
    for (int64_t c = 0; c < cols; ++c)
      acc = kktest::reduce_step(op, acc, kktest::to_double(dense[r * cols + c]));
    ref[r] = acc;
  }
  auto got = d_out.download();
  got.resize(rows);
  EXPECT_TRUE(check_near(got, ref, Tolerance::Exact(), label));
}

template <typename T>
class RowReduceStrided : public kktest::GpuTest {};
TYPED_TEST_SUITE(RowReduceStrided, ColTypes);

// Every row path with ld = cols + pad: short rows (group kernel when strided), flat (ld on
// the pack grid), groups, a warp, a block, a split / cluster.
TYPED_TEST(RowReduceStrided, Paths) {
  constexpr int P = kernelkit::kMaxPackSize<TypeParam>;
  uint64_t seed = 4400;
  for (int64_t cols : {int64_t{1}, int64_t{3}, int64_t{7}, int64_t{P}, int64_t{8 * P}, int64_t{33},
                       int64_t{1000}, int64_t{5000}}) {
    for (int64_t pad : {int64_t{1}, int64_t{P}, int64_t{3 * P + 1}}) {
      for (int offset : {0, 1}) {
        run_strided<TypeParam>(1000, cols, cols + pad, ReduceOp::kSum, offset, ++seed, false);
        run_strided<TypeParam>(7, cols, cols + pad, ReduceOp::kMax, offset, ++seed, true);
      }
    }
  }
  run_strided<TypeParam>(3, 1 << 20, (1 << 20) + P, ReduceOp::kSum, 0, ++seed, false);
  run_strided<TypeParam>(3, 1 << 20, (1 << 20) + 1, ReduceOp::kMin, 1, ++seed, true);
}

TEST_F(ColReduce, StridedRowBadArguments) {
  DeviceBuffer<float> d_in(64);
  DeviceBuffer<float> d_out(8);
  d_out.poison();
  const auto before = d_out.download();
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 4, 8, 7, d_out.get()), cudaErrorInvalidValue);
  // the output inside the strided span
  EXPECT_EQ(kernelkit::row_sum(d_in.get(), 4, 8, 16, d_in.get() + 50), cudaErrorInvalidValue);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(before, d_out.download()));
}

// ---- past 2^31 elements -------------------------------------------------------------------

__global__ void fill_mod7_kernel(__half* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = __float2half(float(i % 7 - 3));
}

// f16 values (e % 7) - 3 of the flat index e; column sums exact in float.
void run_large(int64_t outer, int64_t n, int64_t inner, bool with_ws) {
  const int64_t count = outer * n * inner;
  ASSERT_GT(count, int64_t{1} << 31);
  DeviceBuffer<__half> d_in(count);
  fill_mod7_kernel<<<1024, 256>>>(d_in.get(), count);
  CUDA_CHECK(cudaGetLastError());
  DeviceBuffer<float> d_out(outer * inner);
  d_out.poison();
  DeviceBuffer<unsigned char> ws(
      std::max<size_t>(kernelkit::col_reduce_workspace_bytes<__half, float>(outer, n, inner), 16));
  ASSERT_EQ(
      kernelkit::col_sum(d_in.get(), outer, n, inner, d_out.get(),
                         with_ws ? static_cast<void*>(ws.get()) : nullptr, with_ws ? ws.size() : 0),
      cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> ref(outer * inner, 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < inner; ++i)
        ref[o * inner + i] += double(((o * n + k) * inner + i) % 7 - 3);
  EXPECT_TRUE(check_near(d_out.download(), ref, Tolerance::Exact(),
                         "large " + std::to_string(outer) + "x" + std::to_string(n) + "x" +
                             std::to_string(inner) + (with_ws ? " ws" : "")));
}

TEST_F(ColReduce, KK_LARGE(HalfPastTwoTo31)) {
  run_large(1, (int64_t{1} << 21) + 3, 1024, true);  // split path
  run_large(3, (int64_t{1} << 20) + 1, 700, false);  // single elements, tiles past 2^31
}

}  // namespace
