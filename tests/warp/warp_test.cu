// SPDX-License-Identifier: Apache-2.0
// warp/ primitives: every primitive x type x width (1 to 32 lanes) against a CPU reference, and
// the widths kValidWidth accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/test_util.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kk = kernelkit;
using kktest::DeviceBuffer;
using kktest::Tolerance;

namespace {

enum class Prim { kReduce, kAllReduce, kBroadcast, kInclusiveScan, kExclusiveScan, kReduceFirst };

// The group widths: the powers of two from a lane to a warp, nothing else.
static_assert(kk::kValidWidth<1> && kk::kValidWidth<2> && kk::kValidWidth<4> &&
              kk::kValidWidth<8> && kk::kValidWidth<16> && kk::kValidWidth<32>);
static_assert(!kk::kValidWidth<0> && !kk::kValidWidth<-1> && !kk::kValidWidth<3> &&
              !kk::kValidWidth<6> && !kk::kValidWidth<31> && !kk::kValidWidth<64>);

constexpr int kThreads = 128;  // 4 warps
constexpr int kBlocks = 3;
constexpr int kN = kThreads * kBlocks;

// Each thread loads one value as Acc, applies the primitive, stores its lane's result. arg:
// src_lane of the broadcast, `valid` of warp_reduce_first.
template <Prim P, int Width, typename T, typename Acc, typename Op>
__global__ void warp_prim_kernel(const T* in, Acc* out, int arg) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const Acc v = kk::convert<Acc>(in[i]);
  Acc r;
  if constexpr (P == Prim::kReduce) {
    r = kk::warp_reduce<Width>(v, Op{});
  } else if constexpr (P == Prim::kAllReduce) {
    r = kk::warp_all_reduce<Width>(v, Op{});
  } else if constexpr (P == Prim::kBroadcast) {
    r = kk::warp_broadcast<Width>(v, arg);
  } else if constexpr (P == Prim::kInclusiveScan) {
    r = kk::warp_inclusive_scan<Width>(v, Op{});
  } else if constexpr (P == Prim::kExclusiveScan) {
    r = kk::warp_exclusive_scan<Width>(v, Op{}, kk::convert<Acc>(3));
  } else {
    r = kk::warp_reduce_first<Width>(v, Op{}, arg);
  }
  out[i] = r;
}

// The same on the host in double: which lanes hold a defined result, and its value.
template <Prim P, int Width, typename Op>
std::vector<double> reference(const std::vector<double>& x, int arg, std::vector<bool>* defined) {
  std::vector<double> ref(x.size(), 0.0);
  defined->assign(x.size(), true);
  // kReduceFirst: the first `arg` lanes of the group; else all of them
  const int terms = P == Prim::kReduceFirst ? arg : Width;
  for (size_t g = 0; g < x.size(); g += Width) {
    double acc = x[g];
    for (int l = 1; l < terms; ++l)
      acc = Op{}(acc, x[g + l]);
    double running = 0;
    for (int l = 0; l < Width; ++l) {
      const size_t i = g + l;
      switch (P) {
        case Prim::kReduce:
        case Prim::kReduceFirst:
          ref[i] = acc;
          (*defined)[i] = (l == 0);
          break;
        case Prim::kAllReduce:
          ref[i] = acc;
          break;
        case Prim::kBroadcast:
          ref[i] = x[g + arg];
          break;
        case Prim::kInclusiveScan:
          running = l == 0 ? x[i] : Op{}(running, x[i]);
          ref[i] = running;
          break;
        case Prim::kExclusiveScan:
          ref[i] = l == 0 ? 3.0 : Op{}(3.0, running);
          running = l == 0 ? x[i] : Op{}(running, x[i]);
          break;
      }
    }
  }
  return ref;
}

template <typename T>
std::vector<T> inputs(uint64_t seed, bool specials) {
  std::vector<T> h;
  if constexpr (std::is_same_v<T, int64_t>) {
    h = kktest::random_vector<T>(kN, seed, -1099511627776.0, 1099511627776.0);  // +-2^40
  } else if constexpr (std::is_integral_v<T>) {
    h = kktest::random_vector<T>(kN, seed, -1000, 1000);
  } else {
    h = kktest::random_vector<T>(kN, seed, -1.0, 1.0);
    if (specials) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      h[5] = kk::convert<T>(nan);
      h[40] = kk::convert<T>(INFINITY);
      h[41] = kk::convert<T>(-INFINITY);
      h[77] = kk::convert<T>(-INFINITY);
      h[130] = kk::convert<T>(INFINITY);
      h[200] = kk::convert<T>(nan);
      h[201] = kk::convert<T>(INFINITY);
    }
  }
  return h;
}

template <Prim P, int Width, typename T, typename Acc, typename Op>
void check_prim(bool specials, int arg = 0) {
  const uint64_t seed = 1000 + Width * 10 + static_cast<int>(P);
  const auto h = inputs<T>(seed, specials);
  auto d_in = kktest::to_device(h);
  DeviceBuffer<Acc> d_out(kN);
  d_out.poison();
  warp_prim_kernel<P, Width, T, Acc, Op><<<kBlocks, kThreads>>>(d_in.get(), d_out.get(), arg);
  CUDA_CHECK(cudaGetLastError());
  auto got = d_out.download();

  std::vector<double> x(kN);
  for (int i = 0; i < kN; ++i)
    x[i] = kktest::to_double(kk::convert<Acc>(h[i]));
  std::vector<bool> defined;
  auto ref = reference<P, Width, Op>(x, arg, &defined);
  std::vector<Acc> got_def;
  std::vector<double> ref_def;
  for (int i = 0; i < kN; ++i) {
    if (defined[i]) {
      got_def.push_back(got[i]);
      ref_def.push_back(ref[i]);
    }
  }
  Tolerance tol = Tolerance::Exact();
  if constexpr (std::is_same_v<Op, kk::Sum> && !std::is_integral_v<Acc>) {
    // a Width-term sum of values in [-1, 1): error well under Width^2 ulps of 1
    tol = Tolerance::Rel(0, std::is_same_v<Acc, double> ? 1e-13 : 1e-4);
  }
  std::string label = std::string(kktest::type_name<T>()) + " width " + std::to_string(Width) +
                      " prim " + std::to_string(static_cast<int>(P)) + " arg " +
                      std::to_string(arg) + " seed " + std::to_string(seed);
  EXPECT_TRUE(kktest::check_near(got_def, ref_def, tol, label));
}

template <typename T>
class WarpTest : public kktest::GpuTest {};
using Types = ::testing::Types<int32_t, int64_t, float, double, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(WarpTest, Types);

template <int Width, typename T>
void check_all_prims() {
  using Acc = kk::compute_t<T>;  // sums and scans accumulate in float for half and bf16
  check_prim<Prim::kReduce, Width, T, Acc, kk::Sum>(false);
  check_prim<Prim::kAllReduce, Width, T, Acc, kk::Sum>(false);
  // max / min on the storage type itself, with NaN and +-inf mixed in
  check_prim<Prim::kReduce, Width, T, T, kk::Max>(true);
  check_prim<Prim::kReduce, Width, T, T, kk::Min>(true);
  check_prim<Prim::kAllReduce, Width, T, T, kk::Max>(true);
  check_prim<Prim::kAllReduce, Width, T, T, kk::Min>(true);
  check_prim<Prim::kBroadcast, Width, T, T, kk::Sum>(true, Width - 1);
  check_prim<Prim::kBroadcast, Width, T, T, kk::Sum>(false, Width / 2);
  check_prim<Prim::kInclusiveScan, Width, T, Acc, kk::Sum>(false);
  check_prim<Prim::kExclusiveScan, Width, T, Acc, kk::Sum>(false);
  check_prim<Prim::kInclusiveScan, Width, T, T, kk::Max>(true);
  // the first `valid` lanes: all, all but one, and one
  check_prim<Prim::kReduceFirst, Width, T, Acc, kk::Sum>(false, Width);
  check_prim<Prim::kReduceFirst, Width, T, T, kk::Max>(true, Width > 1 ? Width - 1 : 1);
  check_prim<Prim::kReduceFirst, Width, T, T, kk::Min>(true, 1);
}

// Width 1: every lane is its own group (the value itself; the exclusive scan: init).
TYPED_TEST(WarpTest, Width1) {
  check_all_prims<1, TypeParam>();
}
TYPED_TEST(WarpTest, Width2) {
  check_all_prims<2, TypeParam>();
}
TYPED_TEST(WarpTest, Width4) {
  check_all_prims<4, TypeParam>();
}
TYPED_TEST(WarpTest, Width8) {
  check_all_prims<8, TypeParam>();
}
TYPED_TEST(WarpTest, Width16) {
  check_all_prims<16, TypeParam>();
}
TYPED_TEST(WarpTest, Width32) {
  check_all_prims<32, TypeParam>();
}

}  // namespace
