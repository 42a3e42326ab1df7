// SPDX-License-Identifier: Apache-2.0
// The benchmark's shape generator: the one place that says what a GENERATED shape is. Every op
// draws its generated cases here, from the run's seed (kernelkit-bench --kk_seed=N|random,
// scripts/bench --seed N|random; the seed is `kk_seed` in the results' context), so no
// dispatch can be tuned to the listed points: each run measures shapes nobody picked.
//
// What is drawn (draw i of a call, i = 0, 1, ...):
//   - size: the bytes of the op's main operand log-uniform in [kMinBytes, kMaxBytes]
//     (1 MiB .. 2 GiB); GEMMs draw m, n, k per class and stay under kMaxGemmFlops;
//   - width (the last dimension; gemm: m, n and k): i % 3 == 0 a prime (GEMMs: odd),
//     i % 3 == 1 a multiple of 32, i % 3 == 2 as drawn;
//   - alignment: i % 4 == 1 starts 1..7 elements past an aligned address (row and flat
//     ops: shape suffix "+o"), or pads the leading dimension(s) by 1..7 elements (gemv,
//     gemm: suffix "_ld..."), wherever the API allows it;
//   - class: row ops i % 8 == 1 few rows (1..64) of a decode width (softmax: 32K..256K
//     columns) or, for row_reduce and transpose, a thin side of 1..64 (rows or columns);
//     i % 8 == 6 a few rows (1..16) of a wide row; the rest rows x cols with cols
//     log-uniform over the op's range. gemv: i % 8 == 1 tall (1..128 columns), 6 a few
//     rows (1..64), 3 a layer (n a multiple of 128 in 1024..16384), the rest any aspect.
//     GEMMs: i % 4 == 0 a small M (2..256, uniform), 1 square-ish, 2 long K (8K..128K),
//     3 tall or wide; i % 8 == 1 or 6 pads lda, ldb and ldc (instead of i % 4 == 1).
// Names are unique within one generator's draws (a repeat is drawn again).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace kkbench {

constexpr double kMinBytes = double(1 << 20);
constexpr double kMaxBytes = double(int64_t{1} << 31);
constexpr double kMaxGemmFlops = double(int64_t{1} << 37);

// rows x cols starting `offset` elements past an aligned address (softmax, row_reduce,
// transpose)
struct RowsShape {
  int64_t rows = 1, cols = 1, offset = 0;
  std::string name() const;  // "RxC" or "RxC+o"
};
// n elements starting `offset` elements past an aligned address (reduce, elementwise)
struct FlatShape {
  int64_t n = 1, offset = 0;
  std::string name() const;  // "N" or "N+o"
};
// m x n row-major A with lda = n + pad (gemv)
struct GemvShape {
  int64_t m = 1, n = 1, pad = 0;
  int64_t lda() const { return n + pad; }
  std::string name() const;  // "MxN" or "MxN_ldL"
};
// C (m x n) = op(A) (m x k) op(B) (k x n), row-major; each leading dimension is the stored
// row length plus its pad (gemm)
struct GemmShape {
  int64_t m = 1, n = 1, k = 1, pad_a = 0, pad_b = 0, pad_c = 0;
  int64_t lda(bool trans_a) const { return (trans_a ? m : k) + pad_a; }
  int64_t ldb(bool trans_b) const { return (trans_b ? k : n) + pad_b; }
  int64_t ldc() const { return n + pad_c; }
  std::string name(bool trans_a, bool trans_b) const;  // "MxNxK" or "MxNxK_ldAxBxC"
};

// The width range of a row op.
struct RowsRange {
  int64_t min_cols, max_cols;
  int64_t decode_min_cols, decode_max_cols;  // the few-rows class (i % 8 == 1)
  bool thin_both_sides;                      // transpose / gemv: the thin side is rows or cols
};
constexpr RowsRange kSoftmaxRange{2, int64_t{1} << 18, 32768, 262144, false};
// norms: hidden sizes of 16..64K columns; decode: a few rows of 1K..16K (the few-rows class
// of wide rows still draws rows past 16K: the two-pass path)
constexpr RowsRange kNormRange{16, int64_t{1} << 16, 1024, 16384, false};
// cross-entropy: vocabularies of 1K..256K classes; decode: a few rows of 32K..256K
constexpr RowsRange kCrossEntropyRange{1024, int64_t{1} << 18, 32768, 262144, false};
constexpr RowsRange kRowReduceRange{1, int64_t{1} << 24, 1, 64, true};
constexpr RowsRange kTransposeRange{2, int64_t{1} << 24, 1, 64, true};

class ShapeGen {
 public:
  // A stream of its own for every (seed, stream name).
  ShapeGen(uint64_t seed, const std::string& stream);

  uint64_t next();                              // 64 random bits (splitmix64)
  double uniform();                             // [0, 1)
  int64_t uniform_int(int64_t lo, int64_t hi);  // [lo, hi]
  int64_t log_uniform(int64_t lo, int64_t hi);  // [lo, hi], log-uniform

  std::vector<RowsShape> rows(int count, int elem_bytes, const RowsRange& range);
  std::vector<FlatShape> flat(int count, int elem_bytes);
  std::vector<GemvShape> gemv(int count);
  std::vector<GemmShape> gemm(int count, bool trans_a, bool trans_b);

 private:
  int64_t width(int i, int64_t w, int64_t lo, int64_t hi);  // the width rule of draw i
  int64_t misalign(int i);                                  // 0, or 1..7 when i % 4 == 1
  uint64_t state_;
  std::set<std::string> names_;
};

int64_t next_prime(int64_t x);  // the smallest prime >= x (x >= 2)
bool is_prime(int64_t x);

}  // namespace kkbench
