// SPDX-License-Identifier: Apache-2.0
// plan_elementwise on the host (no GPU): a table of shapes x devices -> expected plans, and
// invariants over many sizes, operand types, pointer offsets, functors and devices: every
// element covered exactly once by head + packs + tail (checked by walking the kernel's index
// map), every pointer aligned where the packs start, a legal grid and block, shared memory
// within the device's limit, and only plans launch_elementwise has a kernel for.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"

namespace {

using kernelkit::DeviceInfo;
using kernelkit::EwFunctorTraits;
using kernelkit::EwOperand;
using kernelkit::EwOperands;
using kernelkit::EwPlan;
using kernelkit::plan_elementwise;

// Operands of a call: element sizes (output first) and each pointer's byte offset from a
// 256-byte aligned base (as cudaMalloc returns): its alignment.
EwOperands operands(std::vector<int> elem_bytes, std::vector<int> offsets = {}) {
  EwOperands ops;
  ops.count = static_cast<int>(elem_bytes.size());
  for (int k = 0; k < ops.count; ++k) {
    const int off = k < static_cast<int>(offsets.size()) ? offsets[k] : 0;
    ops.op[k] = EwOperand{elem_bytes[k], kernelkit::Alignment(off)};
  }
  return ops;
}

std::string describe(const EwPlan& p) {
  return "pack " + std::to_string(p.pack) + " head " + std::to_string(p.head) + " packs " +
         std::to_string(p.num_packs) + " tail " + std::to_string(p.tail) + " ppt " +
         std::to_string(p.packs_per_thread) + (p.staged ? " staged" : "") +
         (p.index64 ? " index64" : "") + " block " + std::to_string(p.shape.block.x) + " grid " +
         std::to_string(p.shape.grid.x) + " smem " + std::to_string(p.shape.smem);
}

constexpr EwFunctorTraits kCheap{};
constexpr EwFunctorTraits kGelu = kernelkit::ew_functor_traits<kernelkit::GeluErf>();

// ---- the functors' traits ----

TEST(ElementwisePlan, FunctorTraits) {
  constexpr auto add = kernelkit::ew_functor_traits<kernelkit::Add>();
  static_assert(add.packs_per_thread == 0 && !add.stage_inputs);
  static_assert(kGelu.packs_per_thread == 4 && kGelu.stage_inputs);
  constexpr auto tanh = kernelkit::ew_functor_traits<kernelkit::GeluTanh>();
  static_assert(tanh.packs_per_thread == 4 && !tanh.stage_inputs);
  // Packs per thread at large n: the functor's, else 2 with one input or three, 1 with two;
  // at most 4.
  static_assert(kernelkit::ew_max_packs_per_thread(add, 1) == 2);
  static_assert(kernelkit::ew_max_packs_per_thread(add, 2) == 1);
  static_assert(kernelkit::ew_max_packs_per_thread(add, 3) == 2);
  static_assert(kernelkit::ew_max_packs_per_thread(kGelu, 1) == 4);
  static_assert(kernelkit::ew_max_packs_per_thread(EwFunctorTraits{3, false}, 1) == 2);
  static_assert(kernelkit::ew_max_packs_per_thread(EwFunctorTraits{64, false}, 1) == 4);
  // Which functors take the paired path.
  static_assert(kernelkit::detail::kHasApply2<kernelkit::Add, __half, __half, __half>);
  static_assert(
      kernelkit::detail::kHasApply2<kernelkit::Add, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16>);
  static_assert(!kernelkit::detail::kHasApply2<kernelkit::Add, float, float, float>);
  static_assert(!kernelkit::detail::kHasApply2<kernelkit::Add, float, __half, __half>);
  static_assert(kernelkit::detail::kHasApply2<kernelkit::Cast, __half, float>);
  static_assert(kernelkit::detail::kHasApply2<kernelkit::Cast, __nv_bfloat16, float>);
  static_assert(!kernelkit::detail::kHasApply2<kernelkit::Cast, float, __half>);
  static_assert(kernelkit::detail::kHasApply2<kernelkit::Relu, __half, __half>);
  static_assert(!kernelkit::detail::kHasApply2<kernelkit::GeluErf, __nv_bfloat16, __nv_bfloat16>);
  static_assert(kernelkit::detail::kHasApply2<kernelkit::Fma, __half, __half, __half, __half>);
}

TEST(ElementwisePlan, PackSizesOfOperandTypes) {
  EXPECT_EQ(kernelkit::ew_max_pack(operands({4, 4, 4})), 4);
  EXPECT_EQ(kernelkit::ew_max_pack(operands({2, 4})), 4);
  EXPECT_EQ(kernelkit::ew_max_pack(operands({2, 2, 2})), 8);
  EXPECT_EQ(kernelkit::ew_max_pack(operands({1, 1})), 16);
  EXPECT_EQ(kernelkit::ew_max_pack(operands({8, 8, 8, 8})), 2);
  EXPECT_EQ(kernelkit::ew_max_pack(operands({12, 4})), 1);
  EXPECT_EQ((kernelkit::kMaxPackSize<float, float, float>), 4);
  EXPECT_EQ((kernelkit::kMaxPackSize<__nv_bfloat16, __nv_bfloat16>), 8);
}

// ---- expected plans ----

struct Expected {
  const char* what;
  const char* device;
  int64_t n;
  EwOperands ops;
  EwFunctorTraits f;
  int pack;
  int64_t head;
  int tail;
  int ppt;
  bool staged;
  int block;
  unsigned grid;
  bool index64;
};

DeviceInfo device_named(const std::string& name) {
  for (const auto& d : kktest::all_devices())
    if (name == d.name) return d.info;
  ADD_FAILURE() << "no device " << name;
  return {};
}

TEST(ElementwisePlan, ExpectedPlans) {
  const auto f32x3 = operands({4, 4, 4});
  const auto bf16x3 = operands({2, 2, 2});
  const auto bf16x2 = operands({2, 2});
  const Expected table[] = {
      // Large aligned adds: one pack per thread, one 256-thread block per tile.
      {"add f32 2^28", "H100", 1 << 28, f32x3, kCheap, 4, 0, 0, 1, false, 256, 262144, false},
      {"add bf16 2^28", "H100", 1 << 28, bf16x3, kCheap, 8, 0, 0, 1, false, 256, 131072, false},
      {"add f32 2^28", "T4", 1 << 28, f32x3, kCheap, 4, 0, 0, 1, false, 256, 262144, false},
      // Odd n: the tail in the same launch.
      {"add f32 odd", "H100", 4194305, f32x3, kCheap, 4, 0, 1, 1, false, 256, 4096, false},
      // Every pointer one element past a 16-byte boundary: a 3-element head, then packs.
      {"add f32 +1", "H100", 4194305, operands({4, 4, 4}, {4, 4, 4}), kCheap, 4, 3, 2, 1, false,
       256, 4096, false},
      // (one input: 2 packs a thread)
      {"cast f32->bf16 +1", "A100", 4194305, operands({2, 4}, {2, 4}), kCheap, 4, 3, 2, 2, false,
       256, 2048, false},
      // Pointers at different offsets: one element per access, 4 (a pack's worth) per thread.
      {"add f32 out+1", "H100", 4194305, operands({4, 4, 4}, {4, 0, 0}), kCheap, 1, 0, 0, 4, false,
       256, 4097, false},
      // Offsets that agree modulo the pack but not the 16 bytes (bf16 +16 bytes): aligned.
      {"add bf16 +16B", "L4", 1 << 20, operands({2, 2, 2}, {16, 0, 48}), kCheap, 8, 0, 0, 1, false,
       256, 512, false},
      // Small n: fewer threads per block while there would be fewer blocks than SMs.
      {"add f32 64K", "H100", 65536, f32x3, kCheap, 4, 0, 0, 1, false, 64, 256, false},
      {"add f32 64K", "A100", 65536, f32x3, kCheap, 4, 0, 0, 1, false, 128, 128, false},
      {"add f32 64K", "T4", 65536, f32x3, kCheap, 4, 0, 0, 1, false, 256, 64, false},
      {"add f32 n=5 +1", "H100", 5, operands({4, 4, 4}, {4, 4, 4}), kCheap, 4, 3, 2, 1, false, 64,
       1, false},
      // gelu: 4 staged packs per thread at large n, fewer while a wave is not filled (H100: 132
      // SMs x 8 resident blocks).
      {"gelu bf16 2^28", "H100", 1 << 28, bf16x2, kGelu, 8, 0, 0, 4, true, 256, 32768, false},
      {"gelu bf16 2^24", "H100", 1 << 24, bf16x2, kGelu, 8, 0, 0, 4, true, 256, 2048, false},
      {"gelu bf16 4M+1", "H100", 4194305, bf16x2, kGelu, 8, 0, 1, 1, false, 256, 2048, false},
      {"gelu bf16 2^20", "H100", 1 << 20, bf16x2, kGelu, 8, 0, 0, 1, false, 256, 512, false},
      {"gelu bf16 4M+1", "T4", 4194305, bf16x2, kGelu, 8, 0, 1, 4, true, 256, 512, false},
      {"gelu bf16 2^20", "T4", 1 << 20, bf16x2, kGelu, 8, 0, 0, 2, true, 256, 256, false},
      {"gelu bf16 3x2^17", "T4", 3 << 17, bf16x2, kGelu, 8, 0, 0, 1, false, 256, 192, false},
      // Three inputs: 2 packs per thread by default.
      {"fma f32 2^28", "H100", 1 << 28, operands({4, 4, 4, 4}), kCheap, 4, 0, 0, 2, false, 256,
       131072, false},
      // Past 2^30 elements: 64-bit indices.
      {"u8 2^31+33 +1", "H100", (int64_t{1} << 31) + 33, operands({1, 1}, {1, 1}), kCheap, 16, 15,
       2, 2, false, 256, 262145, true},
      {"f32 2^29", "H100", int64_t{1} << 29, f32x3, kCheap, 4, 0, 0, 1, false, 256, 524288, false},
      {"f32 2^30", "H100", int64_t{1} << 30, f32x3, kCheap, 4, 0, 0, 1, false, 256, 1048576, true},
  };
  for (const Expected& e : table) {
    const EwPlan p = plan_elementwise(e.n, e.ops, e.f, device_named(e.device));
    const std::string label = std::string(e.what) + " on " + e.device + ": " + describe(p);
    EXPECT_EQ(p.pack, e.pack) << label;
    EXPECT_EQ(p.head, e.head) << label;
    EXPECT_EQ(p.tail, e.tail) << label;
    EXPECT_EQ(p.packs_per_thread, e.ppt) << label;
    EXPECT_EQ(p.staged, e.staged) << label;
    EXPECT_EQ(p.shape.block.x, unsigned(e.block)) << label;
    EXPECT_EQ(p.shape.grid.x, e.grid) << label;
    EXPECT_EQ(p.index64, e.index64) << label;
    EXPECT_EQ(p.shape.smem,
              e.staged ? size_t{16} * e.block * e.ppt * size_t(e.ops.arity()) : size_t{0})
        << label;
  }
}

// ---- invariants ----

// Walks the kernel's index map (elementwise_kernels.cuh) for plan p: block 0's first
// head + tail threads do the head and tail elements; warp w of block b, lane l, does packs
// b * tile + w * 32 * ppt + l + 32 u (u < ppt) while below num_packs, strided by the grid.
// Returns how often each element is written.
std::vector<int> coverage(const EwPlan& p, int64_t n) {
  std::vector<int> hits(static_cast<size_t>(n), 0);
  const int64_t block = p.shape.block.x;
  const int64_t num_packs = (n - p.head) / p.pack;
  const int64_t edges = n - num_packs * p.pack;
  for (int64_t t = 0; t < block; ++t) {
    if (t < edges) ++hits[static_cast<size_t>(t < p.head ? t : num_packs * p.pack + t)];
  }
  const int64_t tile = block * p.packs_per_thread;
  const int64_t stride = int64_t{p.shape.grid.x} * tile;
  for (int64_t b = 0; b < p.shape.grid.x; ++b) {
    for (int64_t start = b * tile; start < num_packs; start += stride) {
      for (int64_t t = 0; t < block; ++t) {
        const int64_t first = start + t / 32 * (32 * p.packs_per_thread) + t % 32;
        for (int u = 0; u < p.packs_per_thread; ++u) {
          const int64_t pk = first + 32 * u;
          if (pk >= num_packs) continue;
          for (int j = 0; j < p.pack; ++j)
            ++hits[static_cast<size_t>(p.head + pk * p.pack + j)];
        }
      }
    }
  }
  return hits;
}

// Checks every invariant of one plan; walks the index map when n is small enough.
void check_invariants(int64_t n, const EwOperands& ops, const EwFunctorTraits& f,
                      const kktest::NamedDevice& dev, const std::string& what) {
  const DeviceInfo& d = dev.info;
  const EwPlan p = plan_elementwise(n, ops, f, d);
  const std::string label =
      what + " n=" + std::to_string(n) + " on " + dev.name + ": " + describe(p);
  const int max_pack = kernelkit::ew_max_pack(ops);
  // Pack: a power of two of at most 16 bytes of every operand; the widest exactly when
  // every pointer sits at the same element offset within it.
  ASSERT_TRUE(p.pack >= 1 && (p.pack & (p.pack - 1)) == 0) << label;
  bool same = true;
  for (int k = 0; k < ops.count; ++k) {
    ASSERT_LE(p.pack * ops.op[k].elem_bytes, 16) << label;
    same = same && (ops.op[k].align.offset / ops.op[k].elem_bytes) % max_pack ==
                       (ops.op[0].align.offset / ops.op[0].elem_bytes) % max_pack;
  }
  EXPECT_EQ(p.pack, same ? max_pack : 1) << label;
  // Head, packs and tail partition [0, n).
  EXPECT_EQ(p.head + p.num_packs * p.pack + p.tail, n) << label;
  EXPECT_TRUE(p.head >= 0 && p.head < p.pack) << label;
  EXPECT_TRUE(p.tail >= 0 && p.tail < p.pack) << label;
  EXPECT_LE(p.head + p.tail, int64_t{p.shape.block.x}) << label << ": block 0 does the edges";
  // Every pointer is aligned to a whole pack where the packs start.
  if (p.num_packs > 0) {
    for (int k = 0; k < ops.count; ++k) {
      const int64_t at = ops.op[k].align.offset + p.head * ops.op[k].elem_bytes;
      EXPECT_EQ(at % (int64_t{p.pack} * ops.op[k].elem_bytes), 0) << label << " op " << k;
    }
  }
  // A kernel exists for it (an entry of kEwConfigs its call can take), staged exactly when the
  // rule says so.
  const kernelkit::ConfigRange r = kernelkit::ew_configs_of(f, ops);
  EXPECT_GE(kernelkit::config_index(kernelkit::kEwConfigs, kernelkit::ew_config(p), r.begin, r.end),
            0)
      << label;
  EXPECT_TRUE(kernelkit::ew_plannable(f, ops, p.pack, p.packs_per_thread)) << label;
  EXPECT_EQ(p.staged, kernelkit::ew_stages(f, ops, p.pack, p.packs_per_thread)) << label;
  EXPECT_TRUE(!p.staged || f.stage_inputs) << label;
  // A legal launch: whole warps, within the kernel's bounds and the device's; shared memory
  // within a block's default limit; at least one block resident.
  const int block = static_cast<int>(p.shape.block.x);
  EXPECT_TRUE(block == 64 || block == 128 || block == 256) << label;
  EXPECT_LE(block, d.max_threads_per_block) << label;
  EXPECT_EQ(p.shape.block.y * p.shape.block.z * p.shape.grid.y * p.shape.grid.z, 1u) << label;
  EXPECT_FALSE(p.shape.is_cluster()) << label;
  EXPECT_EQ(p.shape.smem,
            p.staged ? size_t{16} * block * p.packs_per_thread * size_t(ops.arity()) : size_t{0})
      << label;
  EXPECT_LE(p.shape.smem, size_t(d.smem_per_block)) << label;
  EXPECT_GE(kernelkit::blocks_per_sm(d, block, 0, int64_t(p.shape.smem)), 1) << label;
  // One block per tile.
  const int64_t tile = int64_t{block} * p.packs_per_thread;
  EXPECT_GE(p.shape.grid.x, 1u) << label;
  EXPECT_LE(int64_t{p.shape.grid.x}, int64_t{INT32_MAX}) << label;
  EXPECT_EQ(int64_t{p.shape.grid.x}, std::max<int64_t>(1, (p.num_packs + tile - 1) / tile))
      << label;
  // 32-bit indices only where every index formed (< 2 n + a tile) fits.
  if (!p.index64) EXPECT_LE(2 * n + tile * p.pack + 32, int64_t{INT32_MAX}) << label;
  if (n <= 70000) {
    const auto hits = coverage(p, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(hits[size_t(i)], 1) << label << ": element " << i;
  }
}

TEST(ElementwisePlan, Invariants) {
  struct Case {
    const char* what;
    std::vector<int> elem_bytes;
    EwFunctorTraits f;
  };
  const Case cases[] = {
      {"add f32", {4, 4, 4}, kCheap},
      {"add bf16", {2, 2, 2}, kCheap},
      {"cast f32->bf16", {2, 4}, kCheap},
      {"cast bf16->f32", {4, 2}, kCheap},
      {"u8", {1, 1}, kCheap},
      {"fma f64", {8, 8, 8, 8}, kCheap},
      {"gelu bf16", {2, 2}, kGelu},
      {"gelu f32", {4, 4}, kGelu},
      {"staged u8->f64", {8, 1}, kGelu},
      {"staged fma bf16", {2, 2, 2, 2}, {4, true}},
      {"add f16+f32->f32", {4, 2, 4}, kCheap},
  };
  const int64_t sizes[] = {0,
                           1,
                           2,
                           3,
                           7,
                           8,
                           9,
                           15,
                           16,
                           17,
                           31,
                           32,
                           33,
                           255,
                           257,
                           1000,
                           4097,
                           65536,
                           65539,
                           1000003,
                           4194305,
                           16777216,
                           1 << 28,
                           (1 << 30) + 7,
                           (int64_t{1} << 31) + 33,
                           int64_t{1} << 34};
  for (const auto& dev : kktest::all_devices()) {
    for (const Case& c : cases) {
      const int count = static_cast<int>(c.elem_bytes.size());
      // Offsets: all aligned, all at the same element offset, each operand alone shifted.
      std::vector<std::vector<int>> offsets = {std::vector<int>(count, 0)};
      for (int e = 1; e < 16; ++e) {
        std::vector<int> same(count);
        bool ok = true;
        for (int k = 0; k < count; ++k) {
          same[k] = e * c.elem_bytes[k];
          ok = ok && same[k] < 64;
        }
        if (ok) offsets.push_back(same);
      }
      for (int k = 0; k < count; ++k) {
        std::vector<int> one(count, 0);
        one[k] = c.elem_bytes[k];
        offsets.push_back(one);
      }
      for (const auto& off : offsets) {
        std::string what = c.what;
        what += " offsets";
        for (int o : off)
          what += " " + std::to_string(o);
        for (int64_t n : sizes)
          check_invariants(n, operands(c.elem_bytes, off), c.f, dev, what);
      }
    }
  }
}

// Packs per thread never rise as n falls, and a costly functor reaches its 4 packs at large n
// on every device; small n spreads over the SMs with smaller blocks.
TEST(ElementwisePlan, PacksPerThreadFollowSize) {
  for (const auto& dev : kktest::all_devices()) {
    int last = 0;
    for (int64_t n = 1; n <= (int64_t{1} << 32); n *= 2) {
      const EwPlan p = plan_elementwise(n, operands({2, 2}), kGelu, dev.info);
      EXPECT_GE(p.packs_per_thread, last) << dev.name << " n=" << n;
      last = p.packs_per_thread;
    }
    EXPECT_EQ(last, 4) << dev.name;
    const EwPlan small = plan_elementwise(4096, operands({4, 4, 4}), kCheap, dev.info);
    EXPECT_EQ(small.shape.block.x, 64u) << dev.name;
  }
}

// The argument checks shared with the ladder (host only: nothing is dereferenced).
TEST(ElementwisePlan, ArgsOk) {
  alignas(16) static float buf[64];
  float* out = buf;
  const float* a = buf + 16;
  const float* b = buf + 32;
  using kernelkit::elementwise_args_ok;
  EXPECT_TRUE(elementwise_args_ok(int64_t{16}, out, a, b));
  EXPECT_TRUE(elementwise_args_ok(int64_t{0}, static_cast<float*>(nullptr),
                                  static_cast<const float*>(nullptr)));
  EXPECT_FALSE(elementwise_args_ok(int64_t{-1}, out, a));
  EXPECT_FALSE(elementwise_args_ok(int64_t{1}, static_cast<float*>(nullptr), a));
  EXPECT_FALSE(elementwise_args_ok(int64_t{1}, out, a, static_cast<const float*>(nullptr)));
  // Exactly in place: allowed; partial overlap with any input: not.
  EXPECT_TRUE(elementwise_args_ok(int64_t{16}, out, static_cast<const float*>(out), b));
  EXPECT_TRUE(elementwise_args_ok(int64_t{16}, out, a, static_cast<const float*>(out)));
  EXPECT_FALSE(elementwise_args_ok(int64_t{16}, out + 1, static_cast<const float*>(out), b));
  EXPECT_FALSE(elementwise_args_ok(int64_t{16}, out, a, static_cast<const float*>(out + 8)));
  EXPECT_FALSE(elementwise_args_ok(int64_t{17}, out, a, b));  // out's last element is a[0]
  EXPECT_TRUE(elementwise_args_ok(int64_t{16}, out, a, a));   // inputs alias each other
  // Same address, different element size (cast in place): partial overlap.
  EXPECT_FALSE(elementwise_args_ok(int64_t{16}, reinterpret_cast<__nv_bfloat16*>(out),
                                   static_cast<const float*>(out)));
  // A pointer not aligned to its element type.
  const auto* mis = reinterpret_cast<const float*>(reinterpret_cast<const char*>(a) + 2);
  EXPECT_FALSE(elementwise_args_ok(int64_t{4}, out, mis));
  EXPECT_FALSE(elementwise_args_ok(
      int64_t{4}, reinterpret_cast<float*>(reinterpret_cast<char*>(buf + 48) + 1), a));
  // n whose byte count overflows.
  EXPECT_FALSE(elementwise_args_ok(INT64_MAX / 2, out, a));
}

// ---- the table of kernel configurations ----

std::string describe(const kernelkit::EwConfig& c) {
  return std::string(c.packed ? "packed" : "unit") + " ppt " + std::to_string(c.packs_per_thread) +
         (c.staged ? " staged" : "") + (c.index64 ? " index64" : "");
}

// The functors' traits a call can have: packs per thread unset (by arity), 1, 2, 4 or more
// than the engine keeps, staging asked or not.
std::vector<EwFunctorTraits> all_traits() {
  std::vector<EwFunctorTraits> v;
  for (int ppt : {0, 1, 2, 4, 8})
    for (bool stage : {false, true})
      v.push_back(EwFunctorTraits{ppt, stage});
  return v;
}

// Every element-size combination of 1 to 3 inputs (1, 2, 4, 8 and 16 bytes).
std::vector<std::vector<int>> all_elem_bytes() {
  std::vector<std::vector<int>> v;
  const int sizes[] = {1, 2, 4, 8, 16};
  for (int arity = 1; arity <= 3; ++arity)
    for (int o : sizes)
      for (int a : sizes)
        for (int b : sizes)
          for (int c : sizes) {
            if ((arity < 2 && b != 1) || (arity < 3 && c != 1)) continue;
            std::vector<int> e = {o, a, b, c};
            e.resize(size_t(arity) + 1);
            v.push_back(e);
          }
  return v;
}

TEST(EwConfigs, NoDuplicates) {
  kktest::expect_distinct_entries(kernelkit::kEwConfigs, describe);
}

// launch_elementwise instantiates the entries ew_configs_of gives (it static_asserts a
// non-empty range): for every functor and every element-size combination the entries
// ew_config_allowed accepts are contiguous, include one element per access with both index
// widths, and are those of the packs per thread the plan may pick.
TEST(EwConfigs, EveryCallsEntriesAreContiguous) {
  for (const EwFunctorTraits& f : all_traits())
    for (const auto& e : all_elem_bytes()) {
      const EwOperands ops = operands(e);
      const std::string what = "ppt " + std::to_string(f.packs_per_thread) + " stage " +
                               std::to_string(f.stage_inputs) + " arity " +
                               std::to_string(ops.arity()) + " out " + std::to_string(e[0]);
      const kernelkit::ConfigRange r = kernelkit::ew_configs_of(f, ops);
      ASSERT_LT(r.begin, r.end) << what;
      int allowed = 0;
      for (const auto& c : kernelkit::kEwConfigs)
        allowed += kernelkit::ew_config_allowed(f, ops, c);
      EXPECT_EQ(size_t(allowed), r.end - r.begin) << what;
      const int max_pack = kernelkit::ew_max_pack(ops);
      const int packed = max_pack > 1
                             ? 1 + (kernelkit::ew_max_packs_per_thread(f, ops.arity()) >= 2) +
                                   (kernelkit::ew_max_packs_per_thread(f, ops.arity()) >= 4)
                             : 0;
      EXPECT_EQ(allowed, 2 * (1 + packed)) << what;
    }
}

// Plans over sizes (tiny, odd, prime, past 2^31) x element sizes x pointer offsets (all
// aligned, all one element past, the output alone one element past) x functors x devices (and
// a 2-SM H100, also with 4 KiB of shared memory a block): each is an entry of kEwConfigs its
// call can take (what launch_elementwise instantiates for it), and every entry is some call's
// plan.
TEST(EwConfigs, EveryPlanIsAnEntryAndEveryEntryIsPlanned) {
  const int64_t sizes[] = {
      0,           1,       2,        3,         7,          8,          17,           32,
      33,          257,     1000,     1025,      4096,       10007,      65536,        100003,
      1048576,     4194304, 16777216, 100000007, 1073741823, 1073741900, 2147483647LL, 2147483659LL,
      8589934597LL};
  auto devices = kktest::all_devices();
  DeviceInfo two = kktest::h100();
  two.sm_count = 2;
  devices.push_back({"H100-2SM", two});
  two.smem_per_block = 4096;
  devices.push_back({"H100-2SM-4KiB", two});
  kktest::PlannedEntries planned(kernelkit::kEwConfigs);
  for (const auto& dev : devices)
    for (const EwFunctorTraits& f : all_traits())
      for (const auto& e : all_elem_bytes()) {
        const kernelkit::ConfigRange r = kernelkit::ew_configs_of(f, operands(e));
        for (int shift = 0; shift < 3; ++shift) {
          std::vector<int> off(e.size(), 0);
          for (size_t k = 0; k < e.size(); ++k)
            off[k] = shift == 1 || (shift == 2 && k == 0) ? e[k] : 0;
          const EwOperands ops = operands(e, off);
          for (int64_t n : sizes) {
            const EwPlan p = plan_elementwise(n, ops, f, dev.info);
            const int i = planned.count(kernelkit::ew_config(p), r.begin, r.end);
            ASSERT_GE(i, 0) << dev.name << " n=" << n << ": " << describe(p);
          }
        }
      }
  planned.expect_every_entry_planned(describe, "no call plans");
  EXPECT_GT(planned.plans(), 1000000);
}

}  // namespace
