// SPDX-License-Identifier: Apache-2.0
#include "shapes.h"

#include <algorithm>
#include <cmath>

namespace kkbench {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return std::max(lo, std::min(hi, v));
}

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

// rows for `bytes` of rows x cols elements, at least 1
int64_t rows_for(double bytes, int elem_bytes, int64_t cols) {
  return std::max<int64_t>(1, std::llround(bytes / elem_bytes / double(cols)));
}

}  // namespace

bool is_prime(int64_t x) {
  if (x < 2) return false;
  if (x % 2 == 0) return x == 2;
  for (int64_t d = 3; d * d <= x; d += 2)
    if (x % d == 0) return false;
  return true;
}

int64_t next_prime(int64_t x) {
  x = std::max<int64_t>(x, 2);
  while (!is_prime(x))
    ++x;
  return x;
}

std::string RowsShape::name() const {
  return std::to_string(rows) + "x" + std::to_string(cols) +
         (offset ? "+" + std::to_string(offset) : "");
}

std::string FlatShape::name() const {
  return std::to_string(n) + (offset ? "+" + std::to_string(offset) : "");
}

std::string GemvShape::name() const {
  return std::to_string(m) + "x" + std::to_string(n) + (pad ? "_ld" + std::to_string(lda()) : "");
}

std::string GemmShape::name(bool trans_a, bool trans_b) const {
  std::string s = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  if (pad_a || pad_b || pad_c)
    s += "_ld" + std::to_string(lda(trans_a)) + "x" + std::to_string(ldb(trans_b)) + "x" +
         std::to_string(ldc());
  return s;
}

ShapeGen::ShapeGen(uint64_t seed, const std::string& stream)
    : state_(seed * 0x9E3779B97F4A7C15ull ^ fnv1a(stream)) {}

uint64_t ShapeGen::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double ShapeGen::uniform() {
  return double(next() >> 11) * 0x1.0p-53;
}

int64_t ShapeGen::uniform_int(int64_t lo, int64_t hi) {
  return lo + int64_t(next() % uint64_t(hi - lo + 1));
}

int64_t ShapeGen::log_uniform(int64_t lo, int64_t hi) {
  const double l = std::log(double(lo)), h = std::log(double(hi) + 1.0);
  return clamp64(int64_t(std::exp(l + (h - l) * uniform())), lo, hi);
}

int64_t ShapeGen::width(int i, int64_t w, int64_t lo, int64_t hi) {
  if (i % 3 == 0) {  // an odd prime (the largest one <= hi when the next one is past it)
    int64_t p = next_prime(std::max<int64_t>(w, 3));
    if (p > hi)
      for (p = hi; p > 2 && !is_prime(p); --p) {
      }
    return std::max(lo, p);
  }
  if (i % 3 == 1) return clamp64(round_up(w, 32), lo, hi);
  return w;
}

int64_t ShapeGen::misalign(int i) {
  return i % 4 == 1 ? uniform_int(1, 7) : 0;
}

std::vector<RowsShape> ShapeGen::rows(int count, int elem_bytes, const RowsRange& range) {
  std::vector<RowsShape> out;
  const int64_t max_elems = int64_t(kMaxBytes) / elem_bytes;
  while (int(out.size()) < count) {
    const int d = int(out.size());  // the draw's index decides its classes
    RowsShape s;
    const double bytes =
        std::exp(std::log(kMinBytes) + (std::log(kMaxBytes) - std::log(kMinBytes)) * uniform());
    if (d % 8 == 1) {  // few rows of a decode width, or a thin side
      const int64_t few = log_uniform(1, 64);
      const int64_t wide = log_uniform(range.decode_min_cols, range.decode_max_cols);
      const bool thin_cols = range.thin_both_sides && uniform() < 0.5;
      if (range.thin_both_sides) {
        // the other side carries the bytes
        const int64_t other = rows_for(bytes, elem_bytes, std::max<int64_t>(few, 1));
        s.rows = thin_cols ? other : few;
        s.cols = thin_cols ? few : other;
      } else {
        s.rows = few;
        s.cols = wide;
      }
    } else if (d % 8 == 6) {  // a few rows of a wide row
      s.rows = log_uniform(1, 16);
      s.cols = rows_for(bytes, elem_bytes, s.rows);
    } else {
      s.cols = log_uniform(
          range.min_cols,
          std::min(range.max_cols, std::max<int64_t>(range.min_cols, int64_t(bytes / elem_bytes))));
      s.rows = rows_for(bytes, elem_bytes, s.cols);
    }
    s.cols = width(d, std::max<int64_t>(s.cols, 1), 1, max_elems);
    if (d % 3 == 0 && s.rows > 2) s.rows |= 1;  // odd sides go together
    s.rows = std::max<int64_t>(1, std::min(s.rows, max_elems / s.cols));
    s.offset = misalign(d);
    if (names_.insert(s.name()).second) out.push_back(s);
  }
  return out;
}

std::vector<FlatShape> ShapeGen::flat(int count, int elem_bytes) {
  std::vector<FlatShape> out;
  const int64_t max_elems = int64_t(kMaxBytes) / elem_bytes;
  while (int(out.size()) < count) {
    const int d = int(out.size());
    FlatShape s;
    s.n = log_uniform(int64_t(kMinBytes) / elem_bytes, max_elems);
    s.n = d % 3 == 1 ? clamp64(round_up(s.n, 1024), 1, max_elems) : width(d, s.n, 1, max_elems);
    s.offset = misalign(d);
    if (names_.insert(s.name()).second) out.push_back(s);
  }
  return out;
}

std::vector<GemvShape> ShapeGen::gemv(int count) {
  std::vector<GemvShape> out;
  constexpr int kFloat = 4;
  const int64_t max_elems = int64_t(kMaxBytes) / kFloat;
  while (int(out.size()) < count) {
    const int d = int(out.size());
    GemvShape s;
    const int64_t elems = log_uniform(int64_t(kMinBytes) / kFloat, max_elems);
    if (d % 8 == 1) {  // tall and thin: a million rows x ~100 columns and the like
      s.n = log_uniform(1, 128);
      s.m = std::max<int64_t>(1, elems / s.n);
    } else if (d % 8 == 6) {  // a few rows x a long row
      s.m = log_uniform(1, 64);
      s.n = std::max<int64_t>(1, elems / s.m);
    } else if (d % 8 == 3) {  // a layer's weights: n a multiple of 128 in [1024, 16384]
      s.n = round_up(log_uniform(1024, 16384), 128);
      s.m = std::max<int64_t>(1, elems / s.n);
    } else {
      s.n = log_uniform(2, std::max<int64_t>(2, elems / 2));
      s.m = std::max<int64_t>(1, elems / s.n);
    }
    s.n = width(d, s.n, 1, max_elems);
    if (d % 3 == 0 && s.m > 2) s.m |= 1;
    s.m = std::max<int64_t>(1, std::min(s.m, max_elems / s.n));
    s.pad = misalign(d);
    if (s.m * (s.n + s.pad) > max_elems) s.m = std::max<int64_t>(1, max_elems / (s.n + s.pad));
    if (names_.insert(s.name()).second) out.push_back(s);
  }
  return out;
}

std::vector<GemmShape> ShapeGen::gemm(int count, bool trans_a, bool trans_b) {
  std::vector<GemmShape> out;
  while (int(out.size()) < count) {
    const int d = int(out.size());
    GemmShape s;
    switch (d % 4) {
      case 0:  // a small M against a layer's weights
        s.m = uniform_int(2, 256);
        s.n = log_uniform(512, 16384);
        s.k = log_uniform(512, 16384);
        break;
      case 1:  // square-ish
        s.m = log_uniform(64, 6144);
        s.n = clamp64(std::llround(double(s.m) * std::exp(uniform() - 0.5)), 16, 8192);
        s.k = clamp64(std::llround(double(s.m) * std::exp(uniform() - 0.5)), 16, 8192);
        break;
      case 2:  // long K
        s.m = log_uniform(32, 2048);
        s.n = log_uniform(32, 2048);
        s.k = log_uniform(8192, 131072);
        break;
      default:  // tall or wide
        s.m = log_uniform(16, 65536);
        s.n = log_uniform(16, 65536);
        s.k = log_uniform(64, 4096);
        break;
    }
    // the width rule: odd m, n and k, or multiples of 32 (a small M stays as drawn)
    const auto rule = [&](int64_t v, bool keep) {
      if (d % 3 == 0) return v | 1;
      if (d % 3 == 1 && !keep) return round_up(v, 32);
      return v;
    };
    s.m = rule(s.m, d % 4 == 0);
    s.n = rule(s.n, false);
    s.k = rule(s.k, false);
    // under the flop cap: shrink the largest of the dimensions the class did not fix
    while (2.0 * double(s.m) * double(s.n) * double(s.k) > kMaxGemmFlops) {
      int64_t* big = d % 4 == 0 ? (s.n >= s.k ? &s.n : &s.k)
                                : (s.m >= s.n && s.m >= s.k ? &s.m : (s.n >= s.k ? &s.n : &s.k));
      *big = rule(std::max<int64_t>(16, *big * 3 / 4), false);
    }
    if (d % 8 == 1 || d % 8 == 6) {  // padded leading dimensions
      s.pad_a = uniform_int(1, 7);
      s.pad_b = uniform_int(1, 7);
      s.pad_c = uniform_int(1, 7);
    }
    if (names_.insert(s.name(trans_a, trans_b)).second) out.push_back(s);
  }
  return out;
}

}  // namespace kkbench
