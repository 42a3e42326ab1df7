// SPDX-License-Identifier: Apache-2.0
// block/ primitives: block_reduce and block_all_reduce for every type and a range of block
// sizes (including warp counts that are not powers of two), against a CPU reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/test_util.cuh"
#include "kernelkit/block/block_reduce.cuh"

namespace kk = kernelkit;
using kktest::DeviceBuffer;
using kktest::Tolerance;

namespace {

constexpr int kBlocks = 5;

// out[block] = block_reduce (thread 0); all[block * Block + t] = block_all_reduce (every
// thread), then a second all-reduce with another op right after it, to check that
// back-to-back calls need no barrier from the caller.
template <int Block, typename T, typename Acc, typename Op, typename Op2>
__global__ void __launch_bounds__(Block)
    block_prim_kernel(const T* in, Acc* out, Acc* all, Acc* all2) {
  const int i = blockIdx.x * Block + threadIdx.x;
  const Acc v = kk::convert<Acc>(in[i]);
  const Acc r = kk::block_reduce<Block>(v, Op{});
  if (threadIdx.x == 0) out[blockIdx.x] = r;
  all[i] = kk::block_all_reduce<Block>(v, Op{});
  all2[i] = kk::block_all_reduce<Block>(v, Op2{});
}

template <typename T>
std::vector<T> inputs(size_t n, uint64_t seed, bool specials) {
  std::vector<T> h;
  if constexpr (std::is_same_v<T, int64_t>) {
    h = kktest::random_vector<T>(n, seed, -1099511627776.0, 1099511627776.0);
  } else if constexpr (std::is_integral_v<T>) {
    h = kktest::random_vector<T>(n, seed, -1000, 1000);
  } else {
    h = kktest::random_vector<T>(n, seed, -1.0, 1.0);
    if (specials) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      h[n / 2] = kk::convert<T>(INFINITY);       // block 2: +inf
      h[n / 2 + 1] = kk::convert<T>(-INFINITY);  // and -inf
      h[n - 1] = kk::convert<T>(nan);            // last block: NaN in its last lane
      h[0] = kk::convert<T>(-INFINITY);          // block 0: -inf only
    }
  }
  return h;
}

template <int Block, typename T, typename Acc, typename Op, typename Op2>
void check_block(bool specials) {
  constexpr int n = kBlocks * Block;
  const uint64_t seed = 77 + Block;
  const auto h = inputs<T>(n, seed, specials);
  auto d_in = kktest::to_device(h);
  DeviceBuffer<Acc> out(kBlocks), all(n), all2(n);
  out.poison();
  all.poison();
  all2.poison();
  block_prim_kernel<Block, T, Acc, Op, Op2>
      <<<kBlocks, Block>>>(d_in.get(), out.get(), all.get(), all2.get());
  CUDA_CHECK(cudaGetLastError());

  std::vector<double> ref(kBlocks), ref_all(n), ref_all2(n);
  for (int b = 0; b < kBlocks; ++b) {
    double acc = kktest::to_double(kk::convert<Acc>(h[b * Block]));
    double acc2 = acc;
    for (int t = 1; t < Block; ++t) {
      const double x = kktest::to_double(kk::convert<Acc>(h[b * Block + t]));
      acc = Op{}(acc, x);
      acc2 = Op2{}(acc2, x);
    }
    ref[b] = acc;
    for (int t = 0; t < Block; ++t) {
      ref_all[b * Block + t] = acc;
      ref_all2[b * Block + t] = acc2;
    }
  }
  auto tol_for = [](auto op) {
    if constexpr (std::is_same_v<decltype(op), kk::Sum> && !std::is_integral_v<Acc>) {
      // Block terms in [-1, 1): the tree's rounding stays far below Block * 1e-6
      return Tolerance::Rel(0, std::is_same_v<Acc, double> ? 1e-12 : Block * 1e-6);
    }
    return Tolerance::Exact();
  };
  const std::string label = std::string(kktest::type_name<T>()) + " block " +
                            std::to_string(Block) + " seed " + std::to_string(seed);
  EXPECT_TRUE(kktest::check_near(out.download(), ref, tol_for(Op{}), label + " block_reduce"));
  EXPECT_TRUE(kktest::check_near(all.download(), ref_all, tol_for(Op{}), label + " all_reduce"));
  EXPECT_TRUE(kktest::check_near(all2.download(), ref_all2, tol_for(Op2{}), label + " 2nd"));
}

template <typename T>
class BlockTest : public kktest::GpuTest {};
using Types = ::testing::Types<int32_t, int64_t, float, double, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(BlockTest, Types);

template <int Block, typename T>
void check_block_size() {
  using Acc = kk::compute_t<T>;
  check_block<Block, T, Acc, kk::Sum, kk::Max>(false);
  check_block<Block, T, T, kk::Max, kk::Min>(true);
  check_block<Block, T, T, kk::Min, kk::Max>(false);
}

TYPED_TEST(BlockTest, Block32) {
  check_block_size<32, TypeParam>();
}
TYPED_TEST(BlockTest, Block64) {
  check_block_size<64, TypeParam>();
}
TYPED_TEST(BlockTest, Block96) {
  check_block_size<96, TypeParam>();
}
TYPED_TEST(BlockTest, Block256) {
  check_block_size<256, TypeParam>();
}
TYPED_TEST(BlockTest, Block608) {
  check_block_size<608, TypeParam>();
}
TYPED_TEST(BlockTest, Block1024) {
  check_block_size<1024, TypeParam>();
}

}  // namespace
