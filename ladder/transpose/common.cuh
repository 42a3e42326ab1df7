// Shared by the transpose ladder steps: argument checks (the library's contract) and the
// element-size dispatch (bits moved as unsigned integers, one kernel per element size).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernelkit/core/error.cuh"
#include "kernelkit/transpose/transpose.cuh"

namespace kernelkit::ladder::transpose {

// Same checks as kernelkit::transpose; *run is set when there is work to launch.
template <typename T>
cudaError_t check_args(const T* in, T* out, int64_t rows, int64_t cols, bool* run) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "transpose moves elements of 1, 2, 4 or 8 bytes");
  *run = false;
  KERNELKIT_REQUIRE(rows >= 0 && cols >= 0);
  if (rows == 0 || cols == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(rows <= INT64_MAX / cols);
  const int64_t n = rows * cols;
  KERNELKIT_REQUIRE(n <= INT64_MAX / static_cast<int64_t>(sizeof(T)));
  KERNELKIT_REQUIRE(in != nullptr && out != nullptr);
  KERNELKIT_REQUIRE(
      !kernelkit::detail::transpose_ranges_overlap(in, out, n * static_cast<int64_t>(sizeof(T))));
  *run = true;
  return cudaSuccess;
}

// A 2D grid of block_x x block_y blocks covering cols x rows items of the given size per
// block, each dimension capped (the kernels grid-stride in both dimensions).
inline dim3 grid_2d(int64_t cols, int64_t rows, int per_block_x, int per_block_y) {
  const int64_t gx = std::min<int64_t>(ceil_div<int64_t>(cols, per_block_x), 1 << 16);
  const int64_t gy = std::min<int64_t>(ceil_div<int64_t>(rows, per_block_y), 65535);
  return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
}

template <typename T>
using bits_t = kernelkit::detail::transpose_bits_t<sizeof(T)>;

}  // namespace kernelkit::ladder::transpose
