// Matrix transpose: out (cols x rows) = transpose of in (rows x cols), both row-major.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernelkit/core/error.cuh"
#include "kernelkit/transpose/detail/transpose_kernels.cuh"

namespace kernelkit {

namespace detail {
// True when the byte ranges [a, a + bytes) and [b, b + bytes) share a byte.
inline bool transpose_ranges_overlap(const void* a, const void* b, int64_t bytes) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  const auto n = static_cast<std::uintptr_t>(bytes);
  return pa < pb + n && pb < pa + n;
}
}  // namespace detail

// out (cols x rows) = in (rows x cols) transposed: out[c * rows + r] = in[r * cols + c].
// T: any trivially copyable type of 1, 2, 4 or 8 bytes (float, double, __half,
// __nv_bfloat16, int8..int64, ...); bits are moved unchanged (NaN payloads included).
// Preconditions, else cudaErrorInvalidValue before anything is launched or written:
// rows, cols >= 0; rows * cols * sizeof(T) fits in int64_t; in and out non-null when
// rows * cols > 0; in and out do not overlap (in-place transpose, in == out, is not
// offered). rows == 0 or cols == 0 does nothing. Any alignment. Fast path: rows and cols
// multiples of 16 / sizeof(T) (8 for 1-byte types) with 16-byte-aligned pointers (8-byte
// for 1-byte types) move 16-byte (8-byte) chunks; 1- and 2-byte types whose rows and
// pointers are only 4-byte aligned move 4-byte chunks; other 4-byte shapes move 16-byte
// chunks on per-row shifted chunk grids (edges element by element); anything else moves
// single elements. A matrix with one row or one column is a copy.
template <typename T>
[[nodiscard]] cudaError_t transpose(const T* in, T* out, int64_t rows, int64_t cols,
                                    cudaStream_t stream = nullptr) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "transpose moves elements of 1, 2, 4 or 8 bytes");
  static_assert(std::is_trivially_copyable_v<T>, "transpose copies bits");
  KERNELKIT_REQUIRE(rows >= 0 && cols >= 0);
  if (rows == 0 || cols == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(rows <= INT64_MAX / cols);
  const int64_t n = rows * cols;
  KERNELKIT_REQUIRE(n <= INT64_MAX / static_cast<int64_t>(sizeof(T)));
  KERNELKIT_REQUIRE(in != nullptr && out != nullptr);
  KERNELKIT_REQUIRE(
      !detail::transpose_ranges_overlap(in, out, n * static_cast<int64_t>(sizeof(T))));
  if (rows == 1 || cols == 1) {
    // Same layout on both sides.
    KERNELKIT_RETURN_IF_ERROR(
        cudaMemcpyAsync(out, in, static_cast<size_t>(n) * sizeof(T), cudaMemcpyDefault, stream));
    return cudaSuccess;
  }
  using U = detail::transpose_bits_t<sizeof(T)>;
  return detail::launch_transpose<U>(reinterpret_cast<const U*>(in), reinterpret_cast<U*>(out),
                                     rows, cols, stream);
}

}  // namespace kernelkit
