// SPDX-License-Identifier: Apache-2.0
// Ladder step 0: softmax as CUDA interview guides write it: three kernels (max, sum of
// exp, normalize) over each row as one long vector, with atomics combining the blocks.
// Made correct for any size: grid-stride loops over the columns, rows in chunks of
// kV0ChunkRows (blockIdx.y), the float max taken through an order-preserving integer
// encoding, a tree reduction in each block before the one atomic per block. The input is
// read three times. Not deterministic (float atomicAdd) and uses file-scope device scratch,
// so two calls must not run concurrently on different streams: teaching code, not the
// library.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/softmax/softmax.cuh"

namespace kernelkit::ladder::softmax {

inline constexpr int kV0Block = 256;
inline constexpr int kV0MaxBlocksPerRow = 64;
inline constexpr int kV0ChunkRows = 32768;

static __device__ unsigned v0_row_max[kV0ChunkRows];  // encoded floats, 0 below everything
static __device__ float v0_row_sum[kV0ChunkRows];

// Order-preserving map float -> unsigned (a < b  <=>  encode(a) < encode(b)).
__device__ __forceinline__ unsigned v0_encode(float f) {
  const unsigned u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float v0_decode(unsigned u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

template <int = 0>
__global__ void __launch_bounds__(kV0Block)
    v0_max_kernel(const float* in, int64_t row0, int64_t cols) {
  const float* x = in + (row0 + blockIdx.y) * cols;
  float m = -INFINITY;
  for (int64_t c = blockIdx.x * int64_t{kV0Block} + threadIdx.x; c < cols;
       c += int64_t{gridDim.x} * kV0Block)
    m = Max{}(m, x[c]);
  m = block_reduce<kV0Block>(m, Max{});
  if (threadIdx.x == 0) atomicMax(&v0_row_max[blockIdx.y], v0_encode(m));
}

template <int = 0>
__global__ void __launch_bounds__(kV0Block)
    v0_sum_kernel(const float* in, int64_t row0, int64_t cols) {
  const float* x = in + (row0 + blockIdx.y) * cols;
  const float m = v0_decode(v0_row_max[blockIdx.y]);
  float s = 0.f;
  for (int64_t c = blockIdx.x * int64_t{kV0Block} + threadIdx.x; c < cols;
       c += int64_t{gridDim.x} * kV0Block)
    s += expf(x[c] - m);
  s = block_reduce<kV0Block>(s, Sum{});
  if (threadIdx.x == 0) atomicAdd(&v0_row_sum[blockIdx.y], s);
}

template <int = 0>
__global__ void __launch_bounds__(kV0Block)
    v0_normalize_kernel(const float* in, float* out, int64_t row0, int64_t cols) {
  const int64_t offset = (row0 + blockIdx.y) * cols;
  const float m = v0_decode(v0_row_max[blockIdx.y]);
  const float inv = 1.f / v0_row_sum[blockIdx.y];
  for (int64_t c = blockIdx.x * int64_t{kV0Block} + threadIdx.x; c < cols;
       c += int64_t{gridDim.x} * kV0Block)
    out[offset + c] = expf(in[offset + c] - m) * inv;
}

// softmax over the rows of a rows x cols f32 matrix (the library's signature).
inline cudaError_t v0_three_kernels(const float* in, float* out, int64_t rows, int64_t cols,
                                    cudaStream_t stream) {
  KERNELKIT_REQUIRE(softmax_args_ok(in, out, rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  void* max_ptr = nullptr;
  void* sum_ptr = nullptr;
  KERNELKIT_RETURN_IF_ERROR(cudaGetSymbolAddress(&max_ptr, v0_row_max));
  KERNELKIT_RETURN_IF_ERROR(cudaGetSymbolAddress(&sum_ptr, v0_row_sum));
  const int64_t blocks_x = std::min<int64_t>(ceil_div<int64_t>(cols, kV0Block), kV0MaxBlocksPerRow);
  for (int64_t row0 = 0; row0 < rows; row0 += kV0ChunkRows) {
    const int64_t n = std::min<int64_t>(kV0ChunkRows, rows - row0);
    KERNELKIT_RETURN_IF_ERROR(cudaMemsetAsync(max_ptr, 0, n * sizeof(unsigned), stream));
    KERNELKIT_RETURN_IF_ERROR(cudaMemsetAsync(sum_ptr, 0, n * sizeof(float), stream));
    const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(n));
    v0_max_kernel<<<grid, kV0Block, 0, stream>>>(in, row0, cols);
    v0_sum_kernel<<<grid, kV0Block, 0, stream>>>(in, row0, cols);
    v0_normalize_kernel<<<grid, kV0Block, 0, stream>>>(in, out, row0, cols);
    KERNELKIT_RETURN_IF_ERROR(cudaGetLastError());
  }
  return cudaSuccess;
}

}  // namespace kernelkit::ladder::softmax
