// SPDX-License-Identifier: Apache-2.0
// kernelkit::transpose on the GPU: every element size through every path (copy, tile with every
// tile shape, thin rows, thin cols with direct and staged stores, the gather kernel's tiles of
// out rows with rows staged one by one and as one run and its flat runs of out), full and
// partial tiles, odd and prime shapes, pointers that are element-aligned but not 16-byte
// aligned, bad arguments (misaligned element pointers, overlap), NaN payloads, streams and
// graphs, and (Large_) matrices past 2^31 elements.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/devices.cuh"
#include "transpose/transpose_check.cuh"

namespace {

using kernelkit::TransposePath;
using kernelkit::TransposePlan;
using kktest::DeviceBuffer;
using kktest::Tolerance;
using transpose_test::check_transpose;
using transpose_test::Impls;
using transpose_test::library_only;

template <typename T>
class TransposeTest : public kktest::GpuTest {};
class TransposeStreamTest : public kktest::GpuTest {};

using ElementTypes =
    ::testing::Types<int8_t, __half, __nv_bfloat16, float, int32_t, double, int64_t>;
TYPED_TEST_SUITE(TransposeTest, ElementTypes);

// One element type per size: the kernels move bits, so these cover every kernel.
template <typename T>
class TransposeSizeTest : public kktest::GpuTest {};
using SizeTypes = ::testing::Types<int8_t, __half, float, double>;
TYPED_TEST_SUITE(TransposeSizeTest, SizeTypes);

TYPED_TEST(TransposeTest, Shapes) {
  for (const auto& [rows, cols] : transpose_test::kShapes)
    check_transpose<TypeParam>(library_only<TypeParam>(), rows, cols);
}

// Pointers one element, 4 bytes or 8 bytes off 16-byte alignment on shapes of every path.
TYPED_TEST(TransposeTest, Misaligned) {
  transpose_test::check_misaligned<TypeParam>(library_only<TypeParam>(), {{136, 264},
                                                                          {31, 33},
                                                                          {256, 256},
                                                                          {1, 100},
                                                                          {36, 68},
                                                                          {3, 200},
                                                                          {200, 3},
                                                                          {32, 72},
                                                                          {72, 32}});
}

TYPED_TEST(TransposeTest, BadArgumentsWriteNothing) {
  transpose_test::check_bad_arguments<TypeParam>(library_only<TypeParam>());
}

// Random bits in: NaNs with payloads, infinities and subnormals come out unchanged, on every
// path.
TYPED_TEST(TransposeTest, BitsPreserved) {
  const auto impls = library_only<TypeParam>();
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {256, 256}, {31, 33}, {3, 1000}, {1000, 5}, {32, 1000}, {1, 77}, {100, 300}})
    for (const int64_t off : {0, 1})
      check_transpose<TypeParam>(impls, rows, cols, off, 0, /*random_bits=*/true);
}

// The thin paths: 2..8 rows or columns, long sides that fill no tile, exactly one, and more
// than two (kLong is 256 x 2 x kVec elements for 2 and 3 rows), with every phase of in and out
// (the windows of unaligned rows, the staged runs of an unaligned out).
TYPED_TEST(TransposeSizeTest, ThinShapes) {
  constexpr int64_t kVec = 16 / sizeof(TypeParam);
  const auto impls = library_only<TypeParam>();
  const std::vector<std::pair<int64_t, int64_t>> offsets = {{0, 0}, {1, 0}, {3, 5}};
  for (int64_t s = 2; s <= kernelkit::kTransposeThinMax; ++s) {
    const int64_t k_long = 256 * (s < 4 ? 2 : 1) * kVec;
    for (const int64_t len : {int64_t{17}, k_long, 2 * k_long + 5}) {
      for (const auto& [in_off, out_off] : offsets) {
        check_transpose<TypeParam>(impls, s, len, in_off, out_off);
        check_transpose<TypeParam>(impls, len, s, in_off, out_off);
      }
    }
  }
}

// The tile path with the tile shapes the plan picks for a few rows or columns (all rows or all
// columns in one tile); with in offset or cols not a multiple of kVec the same shapes take the
// gather kernel.
TYPED_TEST(TransposeSizeTest, TileShapes) {
  constexpr int64_t kVec = sizeof(TypeParam) == 1 ? 8 : 16 / sizeof(TypeParam);
  const auto impls = library_only<TypeParam>();
  for (const int64_t rv : {2, 3, 5, 8, 25, 33}) {
    const int64_t rows = rv * kVec;
    if (rows <= kernelkit::kTransposeThinMax) continue;
    for (const int64_t cols :
         {int64_t{9}, int64_t{12}, int64_t{100}, 8 * kVec + 3, int64_t{1000}}) {
      for (const int64_t in_off : {0, 1}) {
        check_transpose<TypeParam>(impls, rows, cols, in_off, 0);
        if (cols % kVec == 0) check_transpose<TypeParam>(impls, cols, rows, in_off, 0);
      }
    }
  }
}

// Wide matrices of few tile rows, where the plan numbers tiles down the tile columns
// (transpose_col_order): the gather kernel's tiles of out rows in column order, in aligned and
// offset.
TYPED_TEST(TransposeSizeTest, ColumnOrderOnWideShapes) {
  using T = TypeParam;
  const int e = sizeof(T);
  // 1000 rows (1000 - 8000 bytes an out row), more tile columns than a wave spans in 2 KiB of
  // each out row; an odd column count.
  const int64_t rows = 1000, cols = 20003;
  for (const int64_t in_off : {0, 1}) {
    const auto in_at = kernelkit::alignment_of(reinterpret_cast<const T*>(256 + in_off * e));
    const TransposePlan p =
        kernelkit::plan_transpose(rows, cols, e, in_at, kernelkit::Alignment(), kktest::h100());
    EXPECT_EQ(p.path, TransposePath::kGather);
    EXPECT_TRUE(p.col_order) << rows << "x" << cols << " in_off " << in_off;
    // sanitizer (20M elements a call): one of the two offsets
    if (kktest::sanitize_keep(in_off + (e == 2), 2))
      check_transpose<T>(library_only<T>(), rows, cols, in_off, 0);
  }
}

// The gather kernel's out row boundaries (tiles of out rows): the 16-byte chunk that holds the
// end of one out row and the start of the next is written by two tiles, each its part as
// aligned 8-, 4-, 2-, 1-byte stores (transpose_store_tail, transpose_store_head; in the same
// unrolled passes as the whole chunks of the warp). 16 row counts from the first that
// takes tiles of out rows (129; 257 for 1-byte elements: out rows of every length mod 16
// bytes, two or three tile rows), columns staged as one run (40) and row by row (100), out at
// every byte offset 1..15 (element-aligned ones), in at another.
TYPED_TEST(TransposeSizeTest, GatherRowBoundaries) {
  using T = TypeParam;
  const int e = sizeof(T);
  const auto impls = library_only<T>();
  const int64_t first = std::max(129, 256 / e + 1);
  int64_t index = 0;
  for (int64_t rows = first; rows < first + 16; ++rows)
    for (const int64_t cols : {40, 100})
      for (int off = e; off < 16; off += e) {
        const int64_t out_off = off / e, in_off = (out_off * 5 + rows) % (16 / e);
        if (kktest::sanitize_keep(index++, 16))
          check_transpose<T>(impls, rows, cols, in_off, out_off);
      }
  EXPECT_EQ(kernelkit::plan_transpose(first, 100, e, kernelkit::Alignment(e),
                                      kernelkit::Alignment(e), kktest::h100())
                .path,
            TransposePath::kGather);
  // Wide matrices of a few hundred rows (issue 31's i8 265 x 1291313 in small: three tile rows
  // of 1-byte elements, two of them holding a matrix edge in every warp) and of 1000 rows:
  // many tile columns and a partial last one, at mixed phases.
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{first + 8, 20011}, {1000, 4099}})
    for (const auto& [in_off, out_off] :
         std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 3}, {3, 7}})
      if (kktest::sanitize_keep(index++, 3))
        check_transpose<T>(impls, rows, cols, in_off % (16 / e), out_off % (16 / e));
}

// The gather kernel (any shape the tile and thin paths do not take): every shape 1x1 .. 67x67
// (partial tiles, every rows and cols mod a sector, thin sides of 9..67 in both modes of the
// kernel, one row and one column), with in and out at mixed phases, and larger odd shapes of
// every mode: several tiles both ways, both tile orders, every out phase mod 4.
TYPED_TEST(TransposeSizeTest, GatherSweep) {
  using T = TypeParam;
  const int e = sizeof(T);
  const auto impls = library_only<T>();
  const std::vector<std::pair<int64_t, int64_t>> offsets = {{0, 0}, {1, 3}, {2, 5}, {3, 6}};
  int64_t index = 0;
  for (int64_t rows = 1; rows <= 67; ++rows)
    for (int64_t cols = 1; cols <= 67; ++cols) {
      // 4-byte elements: every shape; the others every other one (rows + cols even: every
      // row and column count still, with each offset pair); sanitizer: every 16th of those
      if (e != 4 && (rows + cols) % 2 != 0) continue;
      const auto& [in_off, out_off] = offsets[static_cast<size_t>(index % 4)];
      if (kktest::sanitize_keep(index++, 16))
        check_transpose<T>(impls, rows, cols, in_off % (16 / e), out_off);
    }
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {1025, 517}, {517, 1025}, {131, 4097}, {4097, 67},  {1001, 6001},
      {13, 50001}, {50001, 47}, {129, 3001}, {3001, 129}, {255, 1001}};
  for (const auto& [rows, cols] : shapes)
    for (const int64_t out_off : {0, 1, 4, 7})
      if (!kktest::sanitizer_run() || out_off == 1)  // (sanitizer: one offset a shape)
        check_transpose<T>(impls, rows, cols, out_off % 3, out_off);
  const auto in_at = kernelkit::alignment_of(reinterpret_cast<const T*>(256 + e));
  EXPECT_EQ(
      kernelkit::plan_transpose(1001, 33554, e, in_at, kernelkit::Alignment(), kktest::h100()).path,
      TransposePath::kGather);
  if (!kktest::sanitizer_run()) check_transpose<T>(impls, 1001, 33554, 1, 0);
}

// ---- every kernel on shapes the plan sends elsewhere ----------------------------------------

// The plan of table entry c in variant v when its kernel can run this call: rows x cols with
// pointers of element phase in_off / out_off (cudaMalloc aligns to 256). Variants: thin cols
// staged (0) or stored straight from registers (1); the gather kernel's tiles of out rows with
// rows staged one by one (0), the same in column order (1), with one staged run (2, at most 64
// columns); every other entry variant 0 only.
template <typename T>
bool forced_plan(const kernelkit::TransposeConfig& c, int v, int64_t rows, int64_t cols,
                 int64_t in_off, int64_t out_off, TransposePlan* plan) {
  const int e = sizeof(T);
  const int in_align = kernelkit::pack_size_for(reinterpret_cast<const T*>(256 + in_off * e)) * e;
  const int out_align = kernelkit::pack_size_for(reinterpret_cast<const T*>(256 + out_off * e)) * e;
  TransposePlan p;
  p.path = c.path;
  p.elem_bytes = e;
  p.thin = c.thin;
  p.flat_out = c.flat_out;
  p.chunk_bytes = 16;
  // (the gather kernel runs any shape, one row or column too)
  bool ok = c.elem_bytes == e && (c.path == TransposePath::kGather || (rows > 1 && cols > 1));
  switch (c.path) {
    case TransposePath::kTile: {
      const int vec = c.chunk_bytes / e;
      p.chunk_bytes = c.chunk_bytes;
      ok = ok && v == 0 && rows % vec == 0 && cols % vec == 0 && out_align >= c.chunk_bytes &&
           in_align >= c.chunk_bytes;
      break;
    }
    case TransposePath::kThinCols:
      p.out_aligned = v == 1;
      ok = ok && v <= 1 && cols == c.thin && (v == 0 || (rows % (16 / e) == 0 && out_align >= 16));
      break;
    case TransposePath::kThinRows:
      ok = ok && v == 0 && rows == c.thin;
      break;
    case TransposePath::kGather:
      p.gather.flat_in = v == 2;
      ok = ok && (c.flat_out ? v == 0 && rows <= 256 : v <= 1 || cols <= 64);
      break;
    case TransposePath::kCopy:
      ok = false;
      break;
  }
  if (!ok) return false;
  p = kernelkit::detail::finish_transpose_plan(p, rows, cols, kktest::h100());
  const bool col_order = c.path == TransposePath::kTile ? c.col_order : v == 1;
  if (col_order && c.path != TransposePath::kTile && (p.tiles_r <= 1 || p.tiles_c <= 1))
    return false;  // (one tile row or column: the same as row order)
  kernelkit::detail::transpose_set_order(&p, col_order);
  *plan = p;
  return true;
}

// A forced kernel's name in failure messages.
std::string forced_name(const kernelkit::TransposeConfig& c, int v) {
  const char* const paths[] = {"copy", "tile", "thin rows", "thin cols", "gather"};
  std::string name = paths[static_cast<int>(c.path)];
  if (c.path == TransposePath::kTile) name += " " + std::to_string(c.chunk_bytes) + "-byte chunks";
  if (c.thin) name += " " + std::to_string(c.thin);
  if (c.path == TransposePath::kThinCols) name += v == 1 ? " direct" : " staged";
  if (c.path == TransposePath::kGather)
    name += c.flat_out ? " flat out" : v == 2 ? " rows, one run" : " rows";
  if (c.col_order || (c.path == TransposePath::kGather && v == 1)) name += ", column order";
  return name;
}

// The forced plan of the current case (set before each check_transpose call).
TransposePlan g_forced;

template <typename T>
cudaError_t forced_fn(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t s) {
  if (!kernelkit::transpose_args_ok(in, out, rows, cols)) return cudaErrorInvalidValue;
  return kernelkit::launch_transpose(g_forced, in, out, rows, cols, s);
}

// Every kernel of kTransposeConfigs on every shape and phase it can run, not only those the
// plan sends it.
TYPED_TEST(TransposeSizeTest, EveryKernelOnEveryShape) {
  using T = TypeParam;
  for (const auto& [rows, cols] : transpose_test::kShapes) {
    // sanitizer: no 1009 x 1013 (2/3 of the work; every kernel still meets ragged shapes such
    // as 257 x 129 and 7 x 4099)
    if (kktest::sanitizer_run() && rows * cols > 500000) continue;
    for (const auto& [in_off, out_off] :
         std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {0, 1}, {3, 2}})
      for (const kernelkit::TransposeConfig& c : kernelkit::kTransposeConfigs)
        for (int v = 0; v < 3; ++v)
          if (forced_plan<T>(c, v, rows, cols, in_off, out_off, &g_forced))
            check_transpose<T>({{forced_name(c, v), &forced_fn<T>}}, rows, cols, in_off, out_off);
  }
}

// ---- streams and graphs ----------------------------------------------------------------------

// On a created stream and inside a captured CUDA graph (no hidden sync or allocation), for
// the tile, thin and gather paths; the graph is replayed twice.
TEST_F(TransposeStreamTest, StreamAndGraphCapture) {
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {136, 264}, {31, 33}, {1, 100}, {3, 1000}, {1000, 5}, {32, 72}}) {
    const size_t n = static_cast<size_t>(rows * cols);
    const auto h_in = transpose_test::random_input<float>(n, 77);
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

// ---- past 2^31 elements: inputs made and outputs checked on the device -----------------------

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

// rows x cols of U past 2^31 elements through the library, with the path the plan must take.
template <typename U>
void check_large(int64_t rows, int64_t cols, TransposePath want) {
  const int64_t n = rows * cols;
  ASSERT_GT(n, int64_t{1} << 31);
  // The path follows from shape and alignment (cudaMalloc's pointers are 256-byte aligned).
  const TransposePlan plan = kernelkit::plan_transpose(
      rows, cols, sizeof(U), kernelkit::Alignment(), kernelkit::Alignment(), kktest::h100());
  ASSERT_EQ(static_cast<int>(plan.path), static_cast<int>(want));
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

// 46349 x 46351 = 2148322499 > 2^31, odd, and 46348 x 46351 (only the in rows not
// chunk-aligned): the gather kernel's tiles of out rows.
TEST_F(TransposeLargeTest, KK_LARGE(FourByteOddPast2e31)) {
  check_large<uint32_t>(46349, 46351, TransposePath::kGather);
  check_large<uint32_t>(46348, 46351, TransposePath::kGather);
}
// The benchmark's odd f32 shape, 16385 x 4097 (the gather kernel), every element against the
// host reference, at out offsets 0 and 1.
TEST_F(TransposeLargeTest, KK_LARGE(FourByteGatherBenchmarkShape)) {
  for (const int64_t out_off : {0, 1})
    check_transpose<float>(library_only<float>(), 16385, 4097, 0, out_off);
}
// 48000 x 48000 bytes, multiples of 8: the tile kernel.
TEST_F(TransposeLargeTest, KK_LARGE(OneBytePast2e31)) {
  check_large<uint8_t>(48000, 48000, TransposePath::kTile);
}
// 40000 x 56000 two-byte elements: the tile kernel.
TEST_F(TransposeLargeTest, KK_LARGE(TwoBytePast2e31)) {
  check_large<uint16_t>(40000, 56000, TransposePath::kTile);
}
// 1000 x 2147484 bytes: in rows not chunk-aligned: the gather kernel's tiles of out rows;
// 9 x 238609295 bytes: its flat runs of out; 2147483659 x 11 bytes: one staged run a tile.
TEST_F(TransposeLargeTest, KK_LARGE(GatherPast2e31)) {
  check_large<uint8_t>(1000, 2147484, TransposePath::kGather);
  check_large<uint8_t>(9, 238609295, TransposePath::kGather);
  check_large<uint8_t>(2147483659LL, 11, TransposePath::kGather);
}
// 3 x 715827883 bytes (rows unaligned): thin rows.
TEST_F(TransposeLargeTest, KK_LARGE(ThinRowsPast2e31)) {
  check_large<uint8_t>(3, 715827883, TransposePath::kThinRows);
}
// 715827883 x 3 bytes (out rows unaligned: staged stores) and 1073741840 x 2 (direct stores).
TEST_F(TransposeLargeTest, KK_LARGE(ThinColsPast2e31)) {
  check_large<uint8_t>(715827883, 3, TransposePath::kThinCols);
  check_large<uint8_t>(1073741840, 2, TransposePath::kThinCols);
}

}  // namespace
