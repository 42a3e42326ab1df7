// SPDX-License-Identifier: Apache-2.0
// The benchmark's shape generator (bench/shapes.h), on the host: what it promises about the
// generated shapes of every family, for many seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "shapes.h"

namespace kkbench {
namespace {

constexpr int kSeeds = 64;

TEST(ShapeGen, SameSeedAndStreamSameShapes) {
  for (uint64_t seed : {1ull, 2ull, 12345ull}) {
    ShapeGen a(seed, "softmax"), b(seed, "softmax");
    const auto x = a.rows(24, 4, kSoftmaxRange), y = b.rows(24, 4, kSoftmaxRange);
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(x[i].name(), y[i].name());
  }
}

TEST(ShapeGen, SeedsAndStreamsDiffer) {
  ShapeGen a(1, "softmax"), b(2, "softmax"), c(1, "row_reduce");
  const auto x = a.rows(24, 4, kSoftmaxRange), y = b.rows(24, 4, kSoftmaxRange),
             z = c.rows(24, 4, kSoftmaxRange);
  int same_seed = 0, same_stream = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    same_seed += x[i].name() == y[i].name();
    same_stream += x[i].name() == z[i].name();
  }
  EXPECT_LT(same_seed, 2);
  EXPECT_LT(same_stream, 2);
}

TEST(ShapeGen, Primes) {
  EXPECT_EQ(next_prime(0), 2);
  EXPECT_EQ(next_prime(2), 2);
  EXPECT_EQ(next_prime(24), 29);
  EXPECT_EQ(next_prime(65536), 65537);
  EXPECT_TRUE(is_prime(2147483647));
  EXPECT_FALSE(is_prime(2147483649));
  EXPECT_FALSE(is_prime(1));
}

// Checks one call of rows(): count, unique names, sizes in range, the width, alignment and
// few-rows classes in their proportions.
void check_rows(const std::vector<RowsShape>& v, int count, int elem_bytes,
                const RowsRange& range) {
  ASSERT_EQ(int(v.size()), count);
  std::set<std::string> names;
  int odd = 0, misaligned = 0, few_rows = 0, thin = 0;
  for (const RowsShape& s : v) {
    EXPECT_TRUE(names.insert(s.name()).second) << s.name();
    EXPECT_GE(s.rows, 1);
    EXPECT_GE(s.cols, 1);
    const double bytes = double(s.rows) * double(s.cols) * elem_bytes;
    EXPECT_LE(bytes, kMaxBytes) << s.name();
    EXPECT_GE(s.offset, 0);
    EXPECT_LE(s.offset, 7);
    odd += s.cols % 2 == 1;
    misaligned += s.offset > 0;
    few_rows += s.rows <= 64;
    thin += std::min(s.rows, s.cols) <= 64;
    // only the few-rows classes may fall under 1 MiB
    if (s.rows > 64 && std::min(s.rows, s.cols) > 64) {
      EXPECT_GE(bytes, kMinBytes * 0.5) << s.name();
    }
  }
  EXPECT_GE(3 * odd, count) << "a third of the widths odd or prime";
  EXPECT_GE(4 * misaligned, count) << "a quarter misaligned";
  if (range.thin_both_sides) {
    EXPECT_GE(4 * thin, count);
  } else {
    EXPECT_GE(4 * few_rows, count) << "a quarter few-rows (decode) shapes";
  }
}

TEST(ShapeGen, RowShapesOfEveryOp) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    ShapeGen g(seed, "rows");
    for (int bytes : {4, 2})
      check_rows(g.rows(24, bytes, kSoftmaxRange), 24, bytes, kSoftmaxRange);
    check_rows(g.rows(12, 2, kSoftmaxRange), 12, 2, kSoftmaxRange);
    check_rows(g.rows(24, 4, kRowReduceRange), 24, 4, kRowReduceRange);
    for (int bytes : {4, 2})
      check_rows(g.rows(12, bytes, kCrossEntropyRange), 12, bytes, kCrossEntropyRange);
    for (int bytes : {4, 2, 1, 8})
      check_rows(g.rows(12, bytes, kTransposeRange), 12, bytes, kTransposeRange);
  }
}

TEST(ShapeGen, SoftmaxDecodeWidths) {
  int decode = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    ShapeGen g(seed, "softmax");
    for (const RowsShape& s : g.rows(24, 2, kSoftmaxRange))
      decode += s.rows <= 64 && s.cols >= 32768 && s.cols <= 262144 + 64;
  }
  EXPECT_GE(decode, kSeeds * 24 / 8);
}

TEST(ShapeGen, FlatShapes) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    ShapeGen g(seed, "flat");
    for (int count : {12, 6}) {
      for (int bytes : {4, 8, 2}) {
        const auto v = g.flat(count, bytes);
        ASSERT_EQ(int(v.size()), count);
        int odd = 0, misaligned = 0;
        for (const FlatShape& s : v) {
          EXPECT_GE(double(s.n) * bytes, kMinBytes);
          EXPECT_LE(double(s.n) * bytes, kMaxBytes);
          odd += s.n % 2 == 1;
          misaligned += s.offset > 0;
        }
        EXPECT_GE(3 * odd, count);
        EXPECT_GE(4 * misaligned, count);
      }
    }
  }
}

TEST(ShapeGen, GemvShapes) {
  int tall = 0, few_rows = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    ShapeGen g(seed, "gemv");
    const auto v = g.gemv(24);
    ASSERT_EQ(v.size(), 24u);
    int odd = 0, padded = 0;
    for (const GemvShape& s : v) {
      EXPECT_LE(double(s.m) * double(s.lda()) * 4, kMaxBytes) << s.name();
      EXPECT_GE(double(s.m) * double(s.n) * 4, kMinBytes / 2) << s.name();
      EXPECT_LE(s.pad, 7);
      odd += s.n % 2 == 1;
      padded += s.pad > 0;
      tall += s.n <= 128 && s.m >= 1024;
      few_rows += s.m <= 64;
    }
    EXPECT_GE(3 * odd, 24);
    EXPECT_GE(4 * padded, 24);
  }
  EXPECT_GE(tall, kSeeds * 24 / 8);
  EXPECT_GE(few_rows, kSeeds * 24 / 8);
}

TEST(ShapeGen, GemmShapes) {
  std::set<int64_t> small_m;
  for (uint64_t seed = 1; seed <= 8 * kSeeds; ++seed) {
    ShapeGen g(seed, "sgemm");
    for (int ops = 0; ops < 4; ++ops) {
      const bool ta = ops & 1, tb = ops & 2;
      const int count = ops == 0 ? 48 : 16;
      const auto v = g.gemm(count, ta, tb);
      ASSERT_EQ(int(v.size()), count);
      int odd = 0, padded = 0, long_k = 0;
      for (const GemmShape& s : v) {
        EXPECT_LE(2.0 * double(s.m) * double(s.n) * double(s.k), kMaxGemmFlops) << s.name(ta, tb);
        EXPECT_GE(s.lda(ta), ta ? s.m : s.k);
        EXPECT_GE(s.ldb(tb), tb ? s.k : s.n);
        EXPECT_GE(s.ldc(), s.n);
        odd += s.m % 2 && s.n % 2 && s.k % 2;
        padded += s.pad_a > 0;
        long_k += s.k >= 8192;
        if (s.m <= 256) small_m.insert(s.m);
      }
      EXPECT_GE(3 * odd, count);
      EXPECT_GE(4 * padded, count);
      EXPECT_GE(4 * long_k, count - 3);
    }
  }
  // every small M from 2 to 256 is drawn by some seed
  for (int64_t m = 2; m <= 256; ++m)
    EXPECT_TRUE(small_m.count(m)) << m;
}

}  // namespace
}  // namespace kkbench
