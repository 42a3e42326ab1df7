// SPDX-License-Identifier: Apache-2.0
// Shared by the transpose ladder steps: the 2D grid they launch. Each step checks its
// arguments with the library's kernelkit::transpose_args_ok and moves elements as bits_t of
// their size (one kernel per element size).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/transpose/transpose.cuh"

namespace kernelkit::ladder::transpose {

// A 2D grid of blocks covering cols x rows items, per_block_x x per_block_y per block, each
// dimension capped (the kernels grid-stride in both dimensions).
inline dim3 grid_2d(int64_t cols, int64_t rows, int per_block_x, int per_block_y) {
  const int64_t gx = std::min<int64_t>(ceil_div<int64_t>(cols, per_block_x), 1 << 16);
  const int64_t gy = std::min<int64_t>(ceil_div<int64_t>(rows, per_block_y), 65535);
  return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
}

}  // namespace kernelkit::ladder::transpose
