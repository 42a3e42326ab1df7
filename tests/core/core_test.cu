// SPDX-License-Identifier: Apache-2.0
// Tests of core/: pack-size selection, pack heads, operand alignment, the integer helpers,
// grid sizing, occupancy, the run-time to template dispatch, limits and identities, argument
// checks, the bounded host cache, the cluster fallback (host), and the device facts and
// once-per-kernel setup (GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include <thread>
#include <vector>

#include "common/devices.cuh"
#include "common/test_util.cuh"
#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/math.cuh"
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
  const kk::DeviceInfo d = kktest::h100();  // 132 SMs x 2048 threads
  // 256 threads per block: 1056 blocks per wave
  EXPECT_EQ(kk::grid_size_for(0, 256, d, 32), 1);
  EXPECT_EQ(kk::grid_size_for(1, 256, d, 32), 1);
  EXPECT_EQ(kk::grid_size_for(256, 256, d, 32), 1);
  EXPECT_EQ(kk::grid_size_for(257, 256, d, 32), 2);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 20, 256, d, 32), 4096);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 256, d, 32), 1056 * 32);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 256, d, 1), 1056);
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 1024, d, 2), 528);
  // a plan that knows its occupancy: 3 blocks per SM
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 512, d, 1, 3), 396);
  // a T4 holds 1024 threads per SM
  EXPECT_EQ(kk::grid_size_for(int64_t{1} << 40, 256, kktest::t4(), 1), 160);
}

TEST(GridSize, OneBlockPerTileIsClamped) {
  EXPECT_EQ(kk::grid_one_block_per_tile(0), 1);
  EXPECT_EQ(kk::grid_one_block_per_tile(77), 77);
  EXPECT_EQ(kk::grid_one_block_per_tile(int64_t{1} << 40), INT32_MAX);
}

TEST(Occupancy, FollowsEachDevicesLimits) {
  const kk::DeviceInfo h = kktest::h100();
  EXPECT_EQ(kk::blocks_per_sm(h, 256, 32, 0), 8);      // threads
  EXPECT_EQ(kk::blocks_per_sm(h, 256, 64, 0), 4);      // registers
  EXPECT_EQ(kk::blocks_per_sm(h, 256, 255, 0), 1);     // 255 -> 256 a thread
  EXPECT_EQ(kk::blocks_per_sm(h, 1024, 128, 0), 0);    // 128 K registers do not fit
  EXPECT_EQ(kk::blocks_per_sm(h, 32, 16, 0), 32);      // the block limit
  EXPECT_EQ(kk::blocks_per_sm(h, 512, 32, 65536), 3);  // 64 KiB + 1 KiB reserve, 228 KiB
  EXPECT_EQ(kk::blocks_per_sm(h, 512, 32, 232448), 1);
  EXPECT_EQ(kk::blocks_per_sm(h, 512, 32, 232449), 0);  // over the opt-in limit
  EXPECT_EQ(kk::blocks_per_sm(h, 2048, 16, 0), 0);      // over 1024 threads a block
  // an L4 holds 1536 threads, a T4 1024 and 64 KiB of shared memory
  EXPECT_EQ(kk::blocks_per_sm(kktest::l4(), 512, 32, 0), 3);
  EXPECT_EQ(kk::blocks_per_sm(kktest::t4(), 512, 32, 0), 2);
  EXPECT_EQ(kk::blocks_per_sm(kktest::t4(), 256, 32, 32768), 2);
  EXPECT_EQ(kk::blocks_per_sm(kktest::t4(), 256, 32, 65537), 0);
}

TEST(Dispatch, PicksTheMatchingValueOrRefuses) {
  auto twice = [](auto v) {
    return static_cast<cudaError_t>(2 * decltype(v)::value == 8 ? cudaSuccess
                                                                : cudaErrorInvalidValue);
  };
  EXPECT_EQ((kk::dispatch<1, 2, 4>(4, twice)), cudaSuccess);
  EXPECT_EQ((kk::dispatch<1, 2, 4>(2, twice)), cudaErrorInvalidValue);
  EXPECT_EQ((kk::dispatch<1, 2, 4>(3, twice)), cudaErrorInvalidValue);  // not offered
  int seen = 0;
  auto record = [&](auto v) {
    seen = decltype(v)::value;
    return cudaSuccess;
  };
  EXPECT_EQ((kk::dispatch_pow2<1, 32>(16, record)), cudaSuccess);
  EXPECT_EQ(seen, 16);
  EXPECT_EQ((kk::dispatch_pow2<1, 32>(12, record)), cudaErrorInvalidValue);
  EXPECT_EQ((kk::dispatch_pow2<1, 32>(64, record)), cudaErrorInvalidValue);
  bool flag = false;
  EXPECT_EQ((kk::dispatch<false, true>(true,
                                       [&](auto b) {
                                         flag = decltype(b)::value;
                                         return cudaSuccess;
                                       })),
            cudaSuccess);
  EXPECT_TRUE(flag);
}

TEST(Pack, HeadCountsElementsBeforeTheFirstAlignedPack) {
  EXPECT_EQ((kk::pack_head<4>(at_byte<float>(0), 100)), 0);
  EXPECT_EQ((kk::pack_head<4>(at_byte<float>(4), 100)), 3);
  EXPECT_EQ((kk::pack_head<4>(at_byte<float>(12), 100)), 1);
  EXPECT_EQ((kk::pack_head<4>(at_byte<float>(4), 2)), 2);  // capped at n
  EXPECT_EQ((kk::pack_head<8>(at_byte<__half>(2), 100)), 7);
  EXPECT_EQ((kk::pack_head<2>(at_byte<double>(8), 100)), 1);
  EXPECT_EQ((kk::pack_head<1>(at_byte<double>(8), 100)), 0);
}

TEST(Pack, AlignmentIsTheOffsetWithinSixteenBytes) {
  EXPECT_EQ(kk::alignment_of(at_byte<float>(0)), kk::Alignment());
  EXPECT_EQ(kk::alignment_of(at_byte<float>(36)).offset, 4);
  EXPECT_EQ(kk::alignment_of(at_byte<__half>(14)).offset, 14);
  EXPECT_EQ(kk::Alignment(16 * 7 + 6).offset, 6);
  EXPECT_EQ(kk::Alignment(-4).offset, 12);  // 4 bytes before a boundary
  EXPECT_NE(kk::Alignment(4), kk::Alignment(12));
  // the packs an operand allows from its start
  for (int offset = 0; offset < 16; ++offset)
    for (int bytes = 1; bytes <= 16; bytes *= 2)
      EXPECT_EQ(kk::Alignment(offset).fits(bytes), offset % bytes == 0) << offset << " " << bytes;
  EXPECT_EQ(kk::Alignment(12).elements(4), 3);
  EXPECT_EQ(kk::Alignment(12).elements(8), 1);
  EXPECT_EQ(kk::Alignment(0).elements(2), 0);
}

TEST(Pack, CommonAlignmentFitsWhatEveryOperandFits) {
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b)
      for (int c = 0; c < 16; c += 3) {
        const kk::Alignment all =
            kk::common_alignment(kk::Alignment(a), kk::Alignment(b), kk::Alignment(c));
        for (int bytes = 1; bytes <= 16; bytes *= 2)
          EXPECT_EQ(all.fits(bytes), a % bytes == 0 && b % bytes == 0 && c % bytes == 0)
              << a << " " << b << " " << c << " " << bytes;
      }
  // a 16-byte aligned base with rows of 1000 floats (4000 bytes): every row 16-byte aligned;
  // rows of 1001 floats: 4-byte aligned only
  EXPECT_TRUE(kk::common_alignment(kk::Alignment(), kk::Alignment(4000)).fits(16));
  EXPECT_FALSE(kk::common_alignment(kk::Alignment(), kk::Alignment(4004)).fits(8));
  EXPECT_EQ(kk::common_alignment(kk::Alignment(8)), kk::Alignment(8));
  EXPECT_EQ(kk::common_alignment(kk::Alignment(12), kk::Alignment(8)), kk::Alignment(4));
}

TEST(Math, CeilDivRoundUpAndPowersOfTwo) {
  static_assert(kk::ceil_div(7, 2) == 4 && kk::ceil_div(8, 2) == 4 && kk::ceil_div(0, 5) == 0);
  static_assert(kk::round_up(17, 16) == 32 && kk::round_up(32, 16) == 32 &&
                kk::round_up(0, 16) == 0);
  static_assert(kk::round_up<int64_t>(int64_t{1} << 40, 128) == int64_t{1} << 40);
  static_assert(kk::is_pow2(1) && kk::is_pow2(64) && !kk::is_pow2(0) && !kk::is_pow2(12) &&
                !kk::is_pow2(-4));
  static_assert(kk::ceil_log2(1) == 0 && kk::ceil_log2(2) == 1 && kk::ceil_log2(5) == 3 &&
                kk::ceil_log2(0) == 0);
  for (int64_t v = -2; v <= 4100; ++v) {
    int64_t up = 1, down = 1;
    while (up < v)
      up *= 2;
    while (down * 2 <= v)
      down *= 2;
    EXPECT_EQ(kk::pow2_ceil(v), up) << v;
    EXPECT_EQ(kk::pow2_floor(v), down) << v;
    EXPECT_EQ(kk::is_pow2(v), v >= 1 && up == v) << v;
  }
  EXPECT_EQ(kk::pow2_floor(int64_t{1} << 62), int64_t{1} << 62);
  EXPECT_EQ(kk::pow2_floor(std::numeric_limits<int64_t>::max()), int64_t{1} << 62);
}

TEST(Types, LimitsAndIdentities) {
  EXPECT_TRUE(std::isinf(kk::highest<float>()) && kk::highest<float>() > 0);
  EXPECT_TRUE(std::isinf(kk::lowest<double>()) && kk::lowest<double>() < 0);
  EXPECT_EQ(kk::highest<int32_t>(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(kk::lowest<int32_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(kk::highest<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(kk::lowest<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(kk::lowest<uint32_t>(), 0u);
  EXPECT_TRUE(std::isinf(kk::convert<float>(kk::lowest<__half>())));
  EXPECT_TRUE(std::isinf(kk::convert<float>(kk::highest<__nv_bfloat16>())));
  EXPECT_EQ((kk::identity<kk::Sum, float>()), 0.f);
  EXPECT_EQ((kk::identity<kk::Max, int64_t>()), std::numeric_limits<int64_t>::min());
  EXPECT_EQ((kk::identity<kk::Min, int32_t>()), std::numeric_limits<int32_t>::max());
  EXPECT_TRUE(std::isnan(kk::Max{}(kk::identity<kk::Max, float>(), NAN)));
  static_assert(std::is_same_v<kk::bits_t<2>, uint16_t>);
  static_assert(std::is_same_v<kk::bits_t<8>, uint64_t>);
  EXPECT_STREQ(kk::type_name<__nv_bfloat16>(), "bf16");
  EXPECT_STREQ(kk::type_name<int64_t>(), "i64");
}

TEST(Checks, AlignmentAndOverlap) {
  EXPECT_TRUE(kk::is_element_aligned(at_byte<float>(8)));
  EXPECT_FALSE(kk::is_element_aligned(at_byte<float>(2)));
  EXPECT_FALSE(kk::is_element_aligned(at_byte<double>(4)));
  EXPECT_TRUE(kk::is_element_aligned(at_byte<int8_t>(3)));
  const char* base = reinterpret_cast<const char*>(g_storage);
  EXPECT_TRUE(kk::ranges_overlap(base, 16, base + 8, 16));
  EXPECT_FALSE(kk::ranges_overlap(base, 8, base + 8, 16));  // adjacent
  EXPECT_FALSE(kk::ranges_overlap(base, 0, base, 16));      // empty
  EXPECT_FALSE(kk::partial_overlap(base, 16, base, 16));    // exactly in place
  EXPECT_TRUE(kk::partial_overlap(base, 16, base, 12));
  EXPECT_TRUE(kk::partial_overlap(base + 4, 16, base, 16));
  EXPECT_EQ(kk::matrix_span_bytes(3, 5, 8, 4), (2 * 8 + 5) * 4);
  EXPECT_EQ(kk::matrix_span_bytes(0, 5, 8, 4), 0);
}

TEST(HostCache, IsBoundedAndSafeFromManyThreads) {
  kk::detail::HostCache<int, int, 64> cache;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 20000; ++i) {
        const int key = t * 20000 + i;
        cache.insert(key, key * 2);
        int v = 0;
        if (cache.find(key, &v)) EXPECT_EQ(v, key * 2);
      }
    });
  }
  for (auto& th : threads)
    th.join();
  int v = 0;
  int found = 0;
  for (int key = 0; key < 8 * 20000; ++key)
    found += cache.find(key, &v);
  EXPECT_LE(found, 64);
}

// A plan's cluster past the portable 8 blocks that cannot be placed (MPS, MIG): the plan is
// made again with clusters of at most 8 before clusters are given up.
TEST(PlanAndLaunch, ReplansWithPortableClustersFirst) {
  struct Plan {
    kk::LaunchShape shape;
  };
  const kk::DeviceInfo d = kktest::h100();
  ASSERT_EQ(d.max_cluster(), 16);
  std::vector<int> planned_with;  // the device's max_cluster() at each plan
  auto plan = [&](const kk::DeviceInfo& dev) {
    planned_with.push_back(dev.max_cluster());
    Plan p;
    p.shape.cluster.x = dev.max_cluster();
    return p;
  };
  auto fits_8 = [](const Plan& p) {
    return p.shape.cluster.x <= 8 ? cudaSuccess : kk::kClusterDoesNotFit;
  };
  EXPECT_EQ(kk::plan_and_launch(d, plan, fits_8), cudaSuccess);
  EXPECT_EQ(planned_with, (std::vector<int>{16, 8}));
  // nothing fits: 16, then 8, then no cluster
  planned_with.clear();
  auto fits_1 = [](const Plan& p) {
    return p.shape.cluster.x == 1 ? cudaSuccess : kk::kClusterDoesNotFit;
  };
  EXPECT_EQ(kk::plan_and_launch(d, plan, fits_1), cudaSuccess);
  EXPECT_EQ(planned_with, (std::vector<int>{16, 8, 1}));
  // the portable size everywhere else
  EXPECT_EQ(kktest::a100().max_cluster(), 1);
  kk::DeviceInfo sm120 = d;
  sm120.cc_major = 12;
  EXPECT_EQ(sm120.max_cluster(), 8);
}

TEST(PlanAndLaunch, ReplansWithoutClustersWhenNoneFits) {
  kk::DeviceInfo d = kktest::h100();
  std::vector<bool> planned_with;
  auto plan = [&](const kk::DeviceInfo& dev) {
    planned_with.push_back(dev.cluster_launch);
    return dev.clusters() ? 8 : 1;  // a cluster of 8, or none
  };
  auto launch_ok = [](int cluster) { return cluster == 1 ? cudaSuccess : kk::kClusterDoesNotFit; };
  EXPECT_EQ(kk::plan_and_launch(d, plan, launch_ok), cudaSuccess);
  ASSERT_EQ(planned_with.size(), 2u);
  EXPECT_TRUE(planned_with[0]);
  EXPECT_FALSE(planned_with[1]);
  // other errors are returned as they are, with no second plan
  planned_with.clear();
  auto launch_bad = [](int) { return cudaErrorInvalidValue; };
  EXPECT_EQ(kk::plan_and_launch(d, plan, launch_bad), cudaErrorInvalidValue);
  EXPECT_EQ(planned_with.size(), 1u);
  // a compute_80 build on the H100 plans no cluster in the first place
  EXPECT_FALSE(kktest::h100_compute80().clusters());
  EXPECT_TRUE(kktest::h100().clusters());
  EXPECT_FALSE(kktest::a100().clusters());
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

class DeviceFacts : public kktest::GpuTest {};

TEST_F(DeviceFacts, ReadsThisDeviceAndTheArchitectureTheKernelsWereBuiltFor) {
  kk::DeviceInfo d;
  ASSERT_EQ(kk::current_device_info(&d), cudaSuccess);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GE(d.max_threads_per_sm, 1024);
  EXPECT_GE(d.smem_per_block_optin, d.smem_per_block);
  EXPECT_GE(d.arch(), 75);
  // the program's kernels were compiled for a virtual architecture the device can run
  EXPECT_GE(d.code_arch, 75);
  EXPECT_LE(d.code_arch, d.arch());
  EXPECT_EQ(d.cluster_launch, d.cc_major >= 9);
  kk::KernelFacts f;
  ASSERT_EQ(kk::kernel_facts(reinterpret_cast<const void*>(kk::detail::arch_probe_kernel<>), &f),
            cudaSuccess);
  EXPECT_EQ(f.ptx_arch, d.code_arch);
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
