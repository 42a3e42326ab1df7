// kernelkit::transpose and the transpose ladder: every element size, shapes that hit the
// chunked and the scalar kernels with full and partial tiles, misaligned pointers, bad
// arguments, and (Large_) matrices past 2^31 elements.
#include <cstdint>
#include <string>
#include <vector>

#include "common/test_util.cuh"
#include "kernelkit/transpose/transpose.cuh"
#include "ladder/transpose/registry.cuh"

namespace {

using kktest::DeviceBuffer;
using kktest::Tolerance;

template <typename T>
using Fn = kernelkit::ladder::transpose::Fn<T>;

template <typename T>
cudaError_t library_fn(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t s) {
  return kernelkit::transpose(in, out, rows, cols, s);
}

// The library first, then each ladder step.
template <typename T>
std::vector<std::pair<std::string, Fn<T>>> all_impls() {
  std::vector<std::pair<std::string, Fn<T>>> v{{"kernelkit", &library_fn<T>}};
  for (const auto& e : kernelkit::ladder::transpose::registry<T>())
    v.emplace_back(std::string("ladder.") + e.name, e.fn);
  return v;
}

template <typename T>
std::vector<T> random_input(size_t n, uint64_t seed) {
  if constexpr (std::is_integral_v<T>) {
    const double lim = sizeof(T) == 1 ? 128.0 : 1e6;
    return kktest::random_vector<T>(n, seed, -lim, lim);
  } else {
    return kktest::random_vector<T>(n, seed, -100.0, 100.0);
  }
}

// Runs every implementation on one rows x cols input placed in_off elements into its
// buffer, writing out_off elements into a poisoned output buffer; checks every element
// against the float64 reference (exact), the bits against a host transpose, and that the
// out_off leading elements and nothing past the matrix were written.
template <typename T>
void check_transpose(const std::vector<std::pair<std::string, Fn<T>>>& impls, int64_t rows,
                     int64_t cols, int64_t in_off = 0, int64_t out_off = 0) {
  const size_t n = static_cast<size_t>(rows * cols);
  const uint64_t seed = 1000003ull * rows + 7919ull * cols + sizeof(T) + 31 * in_off + out_off;
  const std::string shape = std::string(kktest::type_name<T>()) + " size " +
                            std::to_string(sizeof(T)) + " " + std::to_string(rows) + "x" +
                            std::to_string(cols) + " in_off " + std::to_string(in_off) +
                            " out_off " + std::to_string(out_off) + " seed " + std::to_string(seed);
  const std::vector<T> h_in = random_input<T>(n + in_off, seed);
  auto d_in = kktest::to_device(h_in);
  std::vector<T> want(n);
  std::vector<double> ref(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const T x = h_in[in_off + r * cols + c];
      want[c * rows + r] = x;
      ref[c * rows + r] = kktest::to_double(x);
    }
  DeviceBuffer<T> d_out(n + out_off + 1);  // one guard element past the matrix
  for (const auto& [impl, fn] : impls) {
    const std::string label = impl + " " + shape;
    d_out.poison();
    const auto before = d_out.download();
    ASSERT_EQ(fn(d_in.get() + in_off, d_out.get() + out_off, rows, cols, nullptr), cudaSuccess)
        << label;
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto all = d_out.download();
    const std::vector<T> got(all.begin() + out_off, all.begin() + out_off + n);
    EXPECT_TRUE(kktest::check_near(got, ref, Tolerance::Exact(), label));
    EXPECT_TRUE(kktest::same_bits(got, want)) << label << ": bits differ";
    const std::vector<T> lead_got(all.begin(), all.begin() + out_off);
    const std::vector<T> lead_before(before.begin(), before.begin() + out_off);
    EXPECT_TRUE(kktest::same_bits(lead_got, lead_before)) << label << ": wrote before the output";
    EXPECT_TRUE(kktest::same_bits(std::vector<T>{all.back()}, std::vector<T>{before.back()}))
        << label << ": wrote past the output";
  }
}

// Small and medium shapes: degenerate ones, odd and prime sizes (scalar kernel), multiples
// of 8 (chunked kernel for every element size) with full and partial tiles.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {1, 1},     {1, 257},   {257, 1},   {1000, 1}, {1, 1000}, {2, 1000},  {1000, 3},
    {31, 33},   {33, 31},   {32, 32},   {33, 33},  {64, 64},  {128, 128}, {256, 256},
    {136, 264}, {264, 136}, {96, 200},  {8, 1032}, {1032, 8}, {257, 129}, {1009, 1013},
    {36, 68},   {68, 36},   {130, 258}, {34, 66},  {4, 4},    {260, 132}};

// Shapes from the issue that take a while on the host (tested by Large_IssueShapes).
const std::vector<std::pair<int64_t, int64_t>> kBigShapes = {{8191, 8193}, {4096, 4096}};

template <typename T>
class TransposeTest : public kktest::GpuTest {};
class TransposeStreamTest : public kktest::GpuTest {};

using ElementTypes =
    ::testing::Types<int8_t, __half, __nv_bfloat16, float, int32_t, double, int64_t>;
TYPED_TEST_SUITE(TransposeTest, ElementTypes);

TYPED_TEST(TransposeTest, Shapes) {
  for (const auto& [rows, cols] : kShapes)
    check_transpose<TypeParam>(all_impls<TypeParam>(), rows, cols);
}

// Large_ although under 2^31 elements: 28 transposes of 67M elements are too slow under
// racecheck, so sanitizer runs (-*Large*) leave them out.
TYPED_TEST(TransposeTest, Large_IssueShapes) {
  for (const auto& [rows, cols] : kBigShapes)
    check_transpose<TypeParam>(all_impls<TypeParam>(), rows, cols);
}

// Pointers one element, 4 bytes or 8 bytes off 16-byte alignment: the scalar kernel, or
// for 1- and 2-byte types at 4 or 8 bytes the 4-byte chunks, on shapes that would
// otherwise take the widest chunks.
TYPED_TEST(TransposeTest, Misaligned) {
  constexpr int64_t kOff4 = sizeof(TypeParam) >= 4 ? 1 : 4 / sizeof(TypeParam);
  constexpr int64_t kOff8 = sizeof(TypeParam) >= 8 ? 1 : 8 / sizeof(TypeParam);
  const auto impls = all_impls<TypeParam>();
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {136, 264}, {31, 33}, {256, 256}, {1, 100}, {36, 68}}) {
    check_transpose<TypeParam>(impls, rows, cols, 1, 0);
    check_transpose<TypeParam>(impls, rows, cols, 0, 1);
    check_transpose<TypeParam>(impls, rows, cols, 1, 1);
    check_transpose<TypeParam>(impls, rows, cols, kOff4, kOff4);
    check_transpose<TypeParam>(impls, rows, cols, kOff8, 0);
  }
}

TYPED_TEST(TransposeTest, BadArgumentsWriteNothing) {
  using T = TypeParam;
  constexpr int64_t kN = 64;
  auto d_in = kktest::to_device(random_input<T>(kN, 5));
  DeviceBuffer<T> d_out(kN);
  for (const auto& [name, fn] : all_impls<T>()) {
    d_out.poison();
    const auto before = d_out.download();
    T* in = d_in.get();
    T* out = d_out.get();
    const int64_t huge = int64_t{1} << 32;
    const int64_t big_bytes = INT64_MAX / static_cast<int64_t>(sizeof(T)) / 2 + 1;
    struct Case {
      const char* what;
      const T* in;
      T* out;
      int64_t rows, cols;
    };
    const Case cases[] = {
        {"negative rows", in, out, -1, 8},
        {"negative cols", in, out, 8, -1},
        {"null in", nullptr, out, 8, 8},
        {"null out", in, nullptr, 8, 8},
        {"in == out", out, out, 8, 8},
        {"overlap (out = in + 1)", out, out + 1, 7, 8},
        {"rows * cols overflows", in, out, huge, huge},
        {"bytes overflow", in, out, big_bytes, 2},
    };
    for (const auto& c : cases) {
      EXPECT_EQ(fn(c.in, c.out, c.rows, c.cols, nullptr), cudaErrorInvalidValue)
          << name << " " << kktest::type_name<T>() << ": " << c.what;
    }
    // Empty matrices are valid and write nothing (even with null pointers).
    EXPECT_EQ(fn(in, out, 0, 8, nullptr), cudaSuccess) << name;
    EXPECT_EQ(fn(in, out, 8, 0, nullptr), cudaSuccess) << name;
    EXPECT_EQ(fn(nullptr, nullptr, 0, 0, nullptr), cudaSuccess) << name;
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kktest::same_bits(d_out.download(), before)) << name << ": output was written";
  }
}

// On a created stream and inside a captured CUDA graph (no hidden sync or allocation),
// for the chunked, scalar and copy paths; the graph is replayed twice.
TEST_F(TransposeStreamTest, StreamAndGraphCapture) {
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{136, 264}, {31, 33}, {1, 100}}) {
    const size_t n = static_cast<size_t>(rows * cols);
    const auto h_in = random_input<float>(n, 77);
    auto d_in = kktest::to_device(h_in);
    DeviceBuffer<float> d_out(n);
    std::vector<double> ref(n);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ref[c * rows + r] = h_in[r * cols + c];
    const std::string label = "graph " + std::to_string(rows) + "x" + std::to_string(cols);

    // d_in was uploaded with cudaMemcpy on the legacy default stream, which a non-blocking
    // stream does not wait for (a pageable upload may still be in flight on return).
    CUDA_CHECK(cudaDeviceSynchronize());

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    const cudaError_t status = kernelkit::transpose(d_in.get(), d_out.get(), rows, cols, stream);
    CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    ASSERT_EQ(status, cudaSuccess) << label;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int rep = 0; rep < 2; ++rep) {
      // Poison in stream order: DeviceBuffer::poison's cudaMemset runs on the legacy default
      // stream, unordered with this non-blocking stream, and could land after the graph.
      CUDA_CHECK(cudaMemsetAsync(d_out.get(), 0xFF, n * sizeof(float), stream));
      CUDA_CHECK(cudaGraphLaunch(exec, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      EXPECT_TRUE(kktest::check_near(d_out.download(), ref, Tolerance::Exact(), label));
    }
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// The shifted-chunk kernel directly, on every shape and offset: also on aligned shapes,
// where every chunk is whole (the library takes the chunked kernel there).
template <typename T>
cudaError_t shift_fn(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows <= 1 || cols <= 1) return kernelkit::transpose(in, out, rows, cols, s);
  return kernelkit::detail::launch_transpose_shift<uint32_t>(
      reinterpret_cast<const uint32_t*>(in), reinterpret_cast<uint32_t*>(out), rows, cols, s);
}

TEST_F(TransposeStreamTest, FourByteShiftKernel) {
  const std::vector<std::pair<std::string, Fn<float>>> impls = {{"shift", &shift_fn<float>}};
  for (const auto& [rows, cols] : kShapes)
    check_transpose<float>(impls, rows, cols);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {136, 264}, {31, 33}, {256, 256}, {67, 65}, {5, 131}, {131, 5}, {2, 2}, {3, 2}})
    for (const int64_t in_off : {0, 1, 2, 3})
      for (const int64_t out_off : {0, 1, 3})
        check_transpose<float>(impls, rows, cols, in_off, out_off);
}

// Which kernel a call takes (host-only, always runs): the chunk size, 0 = scalar kernel.
TEST(TransposeDispatch, ChunkNeedsAlignedRowsAndPointers) {
  using kernelkit::detail::transpose_chunk_bytes;
  alignas(16) static uint8_t buf[64];
  EXPECT_EQ(transpose_chunk_bytes<uint32_t>(buf, buf + 16, 8192, 8192), 16);
  EXPECT_EQ(transpose_chunk_bytes<uint32_t>(buf, buf + 16, 8191, 8193), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint32_t>(buf, buf + 16, 8192, 8194), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint32_t>(buf + 4, buf + 16, 8192, 8192), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint32_t>(buf, buf + 8, 8192, 8192), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint16_t>(buf, buf + 32, 8192, 8192), 16);
  EXPECT_EQ(transpose_chunk_bytes<uint16_t>(buf, buf + 32, 8192, 8196), 4);
  EXPECT_EQ(transpose_chunk_bytes<uint16_t>(buf + 4, buf + 32, 8192, 8192), 4);
  EXPECT_EQ(transpose_chunk_bytes<uint16_t>(buf + 2, buf + 32, 8192, 8192), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint16_t>(buf, buf + 32, 8191, 8192), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint8_t>(buf + 8, buf + 24, 8, 16), 8);
  EXPECT_EQ(transpose_chunk_bytes<uint8_t>(buf + 4, buf + 24, 8, 16), 4);
  EXPECT_EQ(transpose_chunk_bytes<uint8_t>(buf, buf + 24, 12, 16), 4);
  EXPECT_EQ(transpose_chunk_bytes<uint8_t>(buf, buf + 24, 14, 16), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint8_t>(buf + 2, buf + 24, 8, 16), 0);
  EXPECT_EQ(transpose_chunk_bytes<uint64_t>(buf, buf + 16, 2, 6), 16);
  EXPECT_EQ(transpose_chunk_bytes<uint64_t>(buf + 8, buf + 16, 2, 6), 0);
}

TEST(TransposeDispatch, RangesOverlap) {
  using kernelkit::detail::transpose_ranges_overlap;
  static char buf[64];
  EXPECT_TRUE(transpose_ranges_overlap(buf, buf, 1));
  EXPECT_TRUE(transpose_ranges_overlap(buf, buf + 7, 8));
  EXPECT_FALSE(transpose_ranges_overlap(buf, buf + 8, 8));
  EXPECT_FALSE(transpose_ranges_overlap(buf + 8, buf, 8));
}

// ---- Past 2^31 elements: inputs made and outputs checked on the device. ----

__host__ __device__ inline uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 31)) * 0x7FB5D329728EA185ull;
  x = (x ^ (x >> 27)) * 0x81DADEF4BC2DD44Dull;
  return x ^ (x >> 33);
}

template <typename U>
__global__ void fill_index_hash_kernel(U* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<U>(mix(i));
}

// Counts out elements (out is cols x rows) that do not hold the hash of their source index.
template <typename U>
__global__ void count_wrong_kernel(const U* out, int64_t rows, int64_t cols,
                                   unsigned long long* wrong) {
  unsigned long long local = 0;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < rows * cols;
       o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = o / rows, r = o - c * rows;
    local += out[o] != static_cast<U>(mix(r * cols + c));
  }
  if (local) atomicAdd(wrong, local);
}

template <typename U>
void check_large(int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  ASSERT_GT(n, int64_t{1} << 31);
  size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < 2 * n * sizeof(U) + (size_t{1} << 30)) GTEST_SKIP() << "not enough memory";
  DeviceBuffer<U> in(n), out(n);
  DeviceBuffer<unsigned long long> wrong(1);
  CUDA_CHECK(cudaMemset(wrong.get(), 0, sizeof(unsigned long long)));
  out.poison();
  fill_index_hash_kernel<U><<<4096, 256>>>(in.get(), n);
  CUDA_CHECK(cudaGetLastError());
  ASSERT_EQ(kernelkit::transpose(in.get(), out.get(), rows, cols), cudaSuccess);
  count_wrong_kernel<U><<<4096, 256>>>(out.get(), rows, cols, wrong.get());
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(wrong.download()[0], 0ull)
      << sizeof(U) << "-byte " << rows << "x" << cols << " elements misplaced";
}

class TransposeLargeTest : public kktest::GpuTest {};

// 46349 x 46351 = 2148322499 > 2^31, odd: the shifted-chunk kernel.
TEST_F(TransposeLargeTest, KK_LARGE(FourByteOddPast2e31)) {
  check_large<uint32_t>(46349, 46351);
}
// 48000 x 48000 bytes, multiples of 8: the chunked kernel.
TEST_F(TransposeLargeTest, KK_LARGE(OneBytePast2e31)) {
  check_large<uint8_t>(48000, 48000);
}
// 40000 x 56000 two-byte elements: the chunked kernel.
TEST_F(TransposeLargeTest, KK_LARGE(TwoBytePast2e31)) {
  check_large<uint16_t>(40000, 56000);
}

}  // namespace
