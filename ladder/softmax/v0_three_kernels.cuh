// Ladder step 0: softmax as CUDA interview guides write it: three kernels (max, sum of
// exp, normalize) over each row as one long vector, with atomics combining the blocks.
// Made correct for any size: grid-stride loops over the columns, rows in chunks of
// kChunkRows (blockIdx.y), the float max taken through an order-preserving integer
// encoding, a tree reduction in each block before the one atomic per block.
// f32 only. Not deterministic (float atomicAdd) and uses file-scope device scratch, so two
// calls must not run concurrently on different streams: teaching code, not the library.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <algorithm>
#include <cstdint>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"

namespace kernelkit {
namespace ladder {
namespace softmax_v0 {

inline constexpr int kBlock = 256;
inline constexpr int kMaxBlocksPerRow = 64;
inline constexpr int kChunkRows = 32768;

static __device__ unsigned g_row_max[kChunkRows];  // encoded floats, 0 below everything
static __device__ float g_row_sum[kChunkRows];

// Order-preserving map float -> unsigned (a < b  <=>  encode(a) < encode(b)).
__device__ __forceinline__ unsigned encode(float f) {
  const unsigned u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float decode(unsigned u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

static __global__ void __launch_bounds__(kBlock)
    max_kernel(const float* in, int64_t row0, int64_t cols) {
  const float* x = in + (row0 + blockIdx.y) * cols;
  float m = -INFINITY;
  for (int64_t c = blockIdx.x * int64_t{kBlock} + threadIdx.x; c < cols;
       c += int64_t{gridDim.x} * kBlock)
    m = Max{}(m, x[c]);
  m = block_reduce<kBlock>(m, Max{});
  if (threadIdx.x == 0) atomicMax(&g_row_max[blockIdx.y], encode(m));
}

static __global__ void __launch_bounds__(kBlock)
    sum_kernel(const float* in, int64_t row0, int64_t cols) {
  const float* x = in + (row0 + blockIdx.y) * cols;
  const float m = decode(g_row_max[blockIdx.y]);
  float s = 0.f;
  for (int64_t c = blockIdx.x * int64_t{kBlock} + threadIdx.x; c < cols;
       c += int64_t{gridDim.x} * kBlock)
    s += expf(x[c] - m);
  s = block_reduce<kBlock>(s, Sum{});
  if (threadIdx.x == 0) atomicAdd(&g_row_sum[blockIdx.y], s);
}

static __global__ void __launch_bounds__(kBlock)
    normalize_kernel(const float* in, float* out, int64_t row0, int64_t cols) {
  const int64_t offset = (row0 + blockIdx.y) * cols;
  const float m = decode(g_row_max[blockIdx.y]);
  const float inv = 1.f / g_row_sum[blockIdx.y];
  for (int64_t c = blockIdx.x * int64_t{kBlock} + threadIdx.x; c < cols;
       c += int64_t{gridDim.x} * kBlock)
    out[offset + c] = expf(in[offset + c] - m) * inv;
}

}  // namespace softmax_v0

[[nodiscard]] inline cudaError_t softmax_v0_three_kernels(const float* in, float* out, int64_t rows,
                                                          int64_t cols,
                                                          cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(rows >= 0 && cols >= 0);
  if (rows == 0 || cols == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(in != nullptr && out != nullptr);
  KERNELKIT_REQUIRE(rows <= INT64_MAX / cols);
  using namespace softmax_v0;
  void* max_ptr = nullptr;
  void* sum_ptr = nullptr;
  KERNELKIT_RETURN_IF_ERROR(cudaGetSymbolAddress(&max_ptr, g_row_max));
  KERNELKIT_RETURN_IF_ERROR(cudaGetSymbolAddress(&sum_ptr, g_row_sum));
  const int64_t blocks_x = std::min<int64_t>(ceil_div<int64_t>(cols, kBlock), kMaxBlocksPerRow);
  for (int64_t row0 = 0; row0 < rows; row0 += kChunkRows) {
    const int64_t n = std::min<int64_t>(kChunkRows, rows - row0);
    KERNELKIT_RETURN_IF_ERROR(cudaMemsetAsync(max_ptr, 0, n * sizeof(unsigned), stream));
    KERNELKIT_RETURN_IF_ERROR(cudaMemsetAsync(sum_ptr, 0, n * sizeof(float), stream));
    const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(n));
    max_kernel<<<grid, kBlock, 0, stream>>>(in, row0, cols);
    sum_kernel<<<grid, kBlock, 0, stream>>>(in, row0, cols);
    normalize_kernel<<<grid, kBlock, 0, stream>>>(in, out, row0, cols);
    KERNELKIT_RETURN_IF_ERROR(cudaGetLastError());
  }
  return cudaSuccess;
}

}  // namespace ladder
}  // namespace kernelkit
