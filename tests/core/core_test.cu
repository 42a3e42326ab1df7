// Tests of core/: pack-size selection, grid sizing, conversions and operators (host), and
// the once-per-kernel setup of kernel attributes (GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "common/test_util.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"

namespace kk = kernelkit;

namespace {

alignas(64) unsigned char g_storage[256];

template <typename T>
const T* at_byte(size_t offset) {
  return reinterpret_cast<const T*>(g_storage + offset);
}

TEST(Pack, MaxPackSizeIsSixteenBytesOfTheWidestType) {
  EXPECT_EQ(kk::kMaxPackSize<float>, 4);
  EXPECT_EQ(kk::kMaxPackSize<__half>, 8);
  EXPECT_EQ(kk::kMaxPackSize<double>, 2);
  EXPECT_EQ(kk::kMaxPackSize<int8_t>, 16);
  EXPECT_EQ((kk::kMaxPackSize<__half, float>), 4);
  EXPECT_EQ((kk::kMaxPackSize<__nv_bfloat16, double, float>), 2);
  EXPECT_EQ((sizeof(kk::Pack<float, 4>)), 16u);
  EXPECT_EQ((alignof(kk::Pack<float, 4>)), 16u);
  EXPECT_EQ((alignof(kk::Pack<__half, 2>)), 4u);
}

TEST(Pack, AlignedPointersGetTheWidestPack) {
  EXPECT_EQ(kk::pack_size_for(at_byte<float>(0)), 4);
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(0)), 8);
  EXPECT_EQ(kk::pack_size_for(at_byte<double>(16)), 2);
  EXPECT_EQ(kk::pack_size_for(at_byte<float>(0), at_byte<float>(32), at_byte<float>(64)), 4);
}

TEST(Pack, MisalignedByOneElementNarrowsThePack) {
  EXPECT_EQ(kk::pack_size_for(at_byte<float>(4)), 1);
  EXPECT_EQ(kk::pack_size_for(at_byte<float>(8)), 2);
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(2)), 1);
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(4)), 2);
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(8)), 4);
  EXPECT_EQ(kk::pack_size_for(at_byte<double>(8)), 1);
  // one misaligned operand narrows the whole operation
  EXPECT_EQ(kk::pack_size_for(at_byte<float>(0), at_byte<float>(4)), 1);
  EXPECT_EQ(kk::pack_size_for(at_byte<float>(0), at_byte<float>(40)), 2);
}

TEST(Pack, MixedTypesTakeTheNarrowestLegalPack) {
  // half out, float in: at most 4 elements (16 bytes of float)
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(0), at_byte<float>(0)), 4);
  // the half pointer 8-byte aligned allows 4 halves; the float pointer allows 4 floats
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(8), at_byte<float>(16)), 4);
  // half pointer off by one element
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(2), at_byte<float>(0)), 1);
  // float pointer at 8 bytes: pack 2
  EXPECT_EQ(kk::pack_size_for(at_byte<__half>(0), at_byte<float>(8)), 2);
  // null pointers do not constrain
  EXPECT_EQ(kk::pack_size_for(at_byte<float>(0), static_cast<const double*>(nullptr)), 2);
}

TEST(GridSize, CoversSmallWorkAndCapsAtWaves) {
  // 132 SMs x 2048 threads, 256 threads per block: 1056 blocks per wave
  EXPECT_EQ(kk::grid_size_for(0, 256, 132, 2048, 32), 1);
  EXPECT_EQ(kk::grid_size_for(1, 256, 132, 2048, 32), 1);
  EXPECT_EQ(kk::grid_size_for(256, 256, 132, 2048, 32), 1);
  EXPECT_EQ(kk::grid_size_for(257, 256, 132, 2048, 32), 2);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 20, 256, 132, 2048, 32), 4096);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 256, 132, 2048, 32), 1056 * 32);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 256, 132, 2048, 1), 1056);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 1024, 132, 2048, 2), 528);
}

TEST(Types, ComputeTypeIsFloatForHalfAndBf16) {
  static_assert(std::is_same_v<kk::compute_t<__half>, float>);
  static_assert(std::is_same_v<kk::compute_t<__nv_bfloat16>, float>);
  static_assert(std::is_same_v<kk::compute_t<double>, double>);
  static_assert(std::is_same_v<kk::compute_t<int64_t>, int64_t>);
  EXPECT_EQ(kk::convert<float>(kk::convert<__half>(1.5f)), 1.5f);
  EXPECT_EQ(kk::convert<float>(kk::convert<__nv_bfloat16>(-2.25f)), -2.25f);
  // overflow to inf, round to nearest even
  EXPECT_TRUE(std::isinf(kk::convert<float>(kk::convert<__half>(70000.f))));
  EXPECT_EQ(kk::convert<float>(kk::convert<__half>(2049.f)), 2048.f);
  EXPECT_EQ(kk::convert<float>(kk::convert<__half>(2051.f)), 2052.f);
}

TEST(Types, MaxAndMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(kk::Max{}(nan, 1.f)));
  EXPECT_TRUE(std::isnan(kk::Max{}(1.f, nan)));
  EXPECT_TRUE(std::isnan(kk::Min{}(nan, 1.f)));
  EXPECT_TRUE(std::isnan(kk::Min{}(1.f, nan)));
  EXPECT_EQ(kk::Max{}(-INFINITY, 3.f), 3.f);
  EXPECT_EQ(kk::Min{}(int64_t{5}, int64_t{-7}), -7);
  EXPECT_TRUE(kk::is_nan(kk::Max{}(kk::convert<__half>(nan), kk::convert<__half>(2.f))));
}

class OncePerKernel : public kktest::GpuTest {};

__global__ void setup_probe_kernel_a() {}
__global__ void setup_probe_kernel_b() {}

TEST_F(OncePerKernel, RunsOncePerKernelAndRetriesAFailedSetup) {
  const void* a = reinterpret_cast<const void*>(setup_probe_kernel_a);
  const void* b = reinterpret_cast<const void*>(setup_probe_kernel_b);
  int calls = 0;
  auto ok = [&] {
    ++calls;
    return cudaSuccess;
  };
  EXPECT_EQ(kk::once_per_kernel(a, ok), cudaSuccess);
  EXPECT_EQ(kk::once_per_kernel(a, ok), cudaSuccess);
  EXPECT_EQ(calls, 1);
  // another kernel (another translation unit's copy of the same template, say) is set up
  // on its own
  EXPECT_EQ(kk::once_per_kernel(b, ok), cudaSuccess);
  EXPECT_EQ(calls, 2);

  // a failing setup is reported and not recorded: the next call runs it again
  const void* c = &calls;  // any address works as a key
  int tries = 0;
  auto bad = [&] {
    ++tries;
    return cudaErrorInvalidValue;
  };
  EXPECT_EQ(kk::once_per_kernel(c, bad), cudaErrorInvalidValue);
  EXPECT_EQ(kk::once_per_kernel(c, bad), cudaErrorInvalidValue);
  EXPECT_EQ(tries, 2);
  EXPECT_EQ(kk::once_per_kernel(c, ok), cudaSuccess);
  EXPECT_EQ(kk::once_per_kernel(c, bad), cudaSuccess);
  EXPECT_EQ(tries, 2);
}

}  // namespace
