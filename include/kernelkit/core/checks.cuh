// SPDX-License-Identifier: Apache-2.0
/// @file
/// Argument checks every op's `<op>_args_ok` is built from (host, pure): element alignment
/// and overlap of the byte ranges an op reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kernelkit {

/// p is aligned to its element type (a null pointer counts as aligned: the caller checks
/// null separately).
template <typename T>
constexpr bool is_element_aligned(const T* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0;
}

/// The byte ranges [a, a + a_bytes) and [b, b + b_bytes) share at least one byte.
inline bool ranges_overlap(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  if (a_bytes <= 0 || b_bytes <= 0) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + static_cast<std::uintptr_t>(b_bytes) &&
         pb < pa + static_cast<std::uintptr_t>(a_bytes);
}

/// Output range o and input range i overlap other than exactly (same start, same length):
/// the partial overlap no op allows. Exact in-place (o == i) is left to each op's doc.
inline bool partial_overlap(const void* o, int64_t o_bytes, const void* i, int64_t i_bytes) {
  return ranges_overlap(o, o_bytes, i, i_bytes) && !(o == i && o_bytes == i_bytes);
}

/// Bytes spanned by a row-major rows x cols matrix of elem_bytes elements with leading
/// dimension ld (rows, cols > 0, no overflow: the caller's size checks come first).
inline int64_t matrix_span_bytes(int64_t rows, int64_t cols, int64_t ld, int64_t elem_bytes) {
  if (rows <= 0 || cols <= 0) return 0;
  return ((rows - 1) * ld + cols) * elem_bytes;
}

}  // namespace kernelkit
