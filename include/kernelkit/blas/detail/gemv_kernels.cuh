// GEMV kernels (f32, row-major A, leading dimension lda). Launch decisions live in
// blas/gemv.cuh; these kernels assume their preconditions (checked there).
//
// Every kernel writes y[i] = alpha * dot_i + beta * y[i], and never reads y when beta == 0
// (a NaN in y is then ignored, as BLAS does). All sums are formed in a fixed order that
// depends only on the shape, the pointers' alignment and the launch configuration, so
// the same call on the same device gives the same bits run after run (no atomics).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "../../block/block_reduce.cuh"
#include "../../core/pack.cuh"
#include "../../core/types.cuh"
#include "../../warp/warp.cuh"

namespace kernelkit {
namespace detail {

// Independent 16-byte loads of A each thread keeps in flight. The kernels run at 2048
// threads per SM (32 registers: __launch_bounds__(B, 2048 / B)), so that every 8192-row
// or 1024-block launch is one full wave; at 2 (BlasOp::N, which also loads x) or 4 (BlasOp::T)
// loads per thread that is 64 KB (128 KB for T) of A in flight per SM, well past the
// ~25 KB that 3 TB/s over 132 SMs at ~1 us latency needs. (BlasOp::T at 32 registers: the
// SASS issues the third load only after the first FFMA, so ~2 loads, 64 KB, in flight.)
inline constexpr int kGemvRowUnroll = 2;
inline constexpr int kGemvUnroll = 4;

__device__ __forceinline__ float gemv_epilogue(float dot, float alpha, float beta, const float* y) {
  return beta == 0.f ? alpha * dot : alpha * dot + beta * *y;
}

// y[i] = beta * y[i] (beta == 0: y[i] = 0 without reading y). Used when alpha == 0 or the
// inner dimension is empty: A and x are never touched.
// (A template so that the header can be included by several translation units.)
template <typename T>
__global__ void gemv_scale_kernel(int64_t count, T beta, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = beta == T(0) ? T(0) : beta * y[i];
  }
}

// Dot product of a row slice with x, over packs [first, packs) with step `step`, each
// lane keeping Unroll independent loads of A (and of x) in flight. Returns this lane's
// partial sum.
template <int PackSize, int Unroll>
__device__ __forceinline__ float gemv_dot_packs(const float* __restrict__ a,
                                                const float* __restrict__ x, int64_t first,
                                                int64_t packs, int64_t step) {
  float acc[Unroll] = {};
  int64_t p = first;
  // no further unrolling by the compiler: Unroll sets the loads in flight and the registers
#pragma unroll 1
  for (; p + (Unroll - 1) * step < packs; p += Unroll * step) {
    Pack<float, PackSize> av[Unroll], xv[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      av[u] = load_pack<PackSize>(a, p + u * step);
      xv[u] = load_pack<PackSize>(x, p + u * step);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
#pragma unroll
      for (int k = 0; k < PackSize; ++k)
        acc[u] = fmaf(av[u].elem[k], xv[u].elem[k], acc[u]);
    }
  }
#pragma unroll 1
  for (; p < packs; p += step) {
    const Pack<float, PackSize> av = load_pack<PackSize>(a, p);
    const Pack<float, PackSize> xv = load_pack<PackSize>(x, p);
#pragma unroll
    for (int k = 0; k < PackSize; ++k)
      acc[0] = fmaf(av.elem[k], xv.elem[k], acc[0]);
  }
  float sum = 0.f;
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    sum += acc[u];
  return sum;
}

// BlasOp::N, one group of Width consecutive lanes per row (grid-stride over rows). Each warp
// owns 32 / Width consecutive rows per step; the loop condition is warp-uniform so the
// shuffles always see the full warp. A, lda and x are aligned to PackSize floats.
// (Widths 8 and 16 spill at 32 registers: they run at 1024 threads per SM, 64 registers.)
template <int PackSize, int Width, int BlockSize>
__global__ void __launch_bounds__(BlockSize, (Width == 8 || Width == 16 ? 1024 : 2048) / BlockSize)
    gemv_n_rows_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                       const float* __restrict__ x, float beta, float* __restrict__ y) {
  static_assert(BlockSize % kWarpSize == 0, "whole warps: the group shuffles use the full mask");
  constexpr int kRowsPerWarp = kWarpSize / Width;
  constexpr int kWarpsPerBlock = BlockSize / kWarpSize;
  const int lane = threadIdx.x % Width;
  const int group = (threadIdx.x % kWarpSize) / Width;
  const int64_t packs = n / PackSize;                       // full packs per row
  const int tail = static_cast<int>(n - packs * PackSize);  // 0 .. PackSize-1 floats
  const int64_t warp = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarpSize;
  const int64_t warp_stride = int64_t{gridDim.x} * kWarpsPerBlock;
  for (int64_t base = warp * kRowsPerWarp; base < m; base += warp_stride * kRowsPerWarp) {
    const int64_t row = base + group;
    float dot = 0.f;
    if (row < m) {
      const float* a = A + row * lda;
      dot = gemv_dot_packs<PackSize, kGemvRowUnroll>(a, x, lane, packs, Width);
      if (lane < tail) dot = fmaf(a[packs * PackSize + lane], x[packs * PackSize + lane], dot);
    }
    dot = warp_reduce<Width>(dot, Sum{});
    // lane 0 of each group holds its row's dot product
    if (lane == 0 && row < m) y[row] = gemv_epilogue(dot, alpha, beta, y + row);
  }
}

// BlasOp::N for few, long rows: a cluster of gridDim-x-consecutive blocks (ClusterSize = the
// launch's cluster x dimension, 1 when launched without clusters) shares each row. Block
// rank r of a cluster reads packs r*BlockSize + t, stepping by ClusterSize*BlockSize; the
// cluster's partials are combined in rank order through distributed shared memory by
// rank 0. Grid-stride over rows by cluster. A, lda and x are aligned to PackSize floats.
template <int PackSize, int BlockSize>
__global__ void __launch_bounds__(BlockSize, 2048 / BlockSize)
    gemv_n_block_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                        const float* __restrict__ x, float beta, float* __restrict__ y,
                        int cluster_size) {
  __shared__ float partial;
  const int rank = static_cast<int>(blockIdx.x % cluster_size);
  const int64_t first = int64_t{rank} * BlockSize + threadIdx.x;
  const int64_t step = int64_t{cluster_size} * BlockSize;
  const int64_t packs = n / PackSize;
  const int64_t tail = n - packs * PackSize;
  const int64_t clusters = gridDim.x / cluster_size;
  for (int64_t row = blockIdx.x / cluster_size; row < m; row += clusters) {
    const float* a = A + row * lda;
    float dot = gemv_dot_packs<PackSize, kGemvRowUnroll>(a, x, first, packs, step);
    if (first < tail) dot = fmaf(a[packs * PackSize + first], x[packs * PackSize + first], dot);
    dot = block_reduce<BlockSize>(dot, Sum{});
    // thread 0 holds this block's partial of the row
    if (cluster_size == 1) {
      if (threadIdx.x == 0) y[row] = gemv_epilogue(dot, alpha, beta, y + row);
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      namespace cg = cooperative_groups;
      cg::cluster_group cluster = cg::this_cluster();
      if (threadIdx.x == 0) partial = dot;
      cluster.sync();  // every rank's partial is visible cluster-wide
      if (rank == 0 && threadIdx.x == 0) {
        float sum = 0.f;
        for (int q = 0; q < cluster_size; ++q)
          sum += *cluster.map_shared_rank(&partial, q);
        y[row] = gemv_epilogue(sum, alpha, beta, y + row);
      }
      cluster.sync();  // rank 0 is done reading before `partial` is rewritten or freed
#endif
    }
  }
}

// BlasOp::T: y[j] = alpha * sum_i A[i][j] x[i] + beta * y[j]. Block (TX x TY threads) owns
// TX*PackSize consecutive columns (blockIdx.x); thread (tx, ty) reads PackSize columns of
// rows ty + TY*rank + k*TY*cluster, so each row segment of TX*PackSize floats is read
// coalesced. The cluster of gridDim.y blocks (rank = blockIdx.y) splits the rows (no
// cluster when gridDim.y == 1: the block then owns its columns outright). Combine: over ty
// in shared memory in a fixed order (every thread sums PackSize rows of one column, then
// one thread per column sums those), then over ranks in order through distributed shared
// memory (rank 0 writes y). A and lda are aligned to PackSize floats; x and y need not be.
// kGemvUnroll rows per trip (~2 of the 4 loads in flight at 32 registers, see kGemvUnroll;
// a 64-register build with 8 in flight ran 8192^2 2.7% faster, bench/notes/gemv.md).
template <int PackSize, int TX, int TY>
__global__ void __launch_bounds__(TX* TY, 2048 / (TX * TY))
    gemv_t_kernel(int64_t m, int64_t n, float alpha, const float* __restrict__ A, int64_t lda,
                  const float* __restrict__ x, float beta, float* __restrict__ y) {
  constexpr int kThreads = TX * TY;
  constexpr int kCols = TX * PackSize;
  static_assert(kThreads % kWarpSize == 0 && kThreads <= 1024, "whole warps, at most 1024");
  static_assert(kThreads % kCols == 0, "the combine gives every column the same thread count");
  constexpr int kGroups = kThreads / kCols;  // threads per column in the first combine step
  static_assert(TY == kGroups * PackSize, "each combine thread sums PackSize rows of red");
  __shared__ float red[TY][kCols];        // red[ty][c]: thread (c / PackSize, ty)'s column sum
  __shared__ float part[kGroups][kCols];  // part[g][c]: rows g, g + kGroups, ... of red
  __shared__ float partial[kCols];        // this block's column sums
  const int tx = threadIdx.x % TX;
  const int ty = threadIdx.x / TX;
  const int cluster_size = gridDim.y;
  const int rank = blockIdx.y;
  const int64_t col0 = blockIdx.x * int64_t{kCols};
  const int64_t j0 = col0 + int64_t{tx} * PackSize;
  const int64_t step = int64_t{cluster_size} * TY;

  Pack<float, PackSize> acc;
#pragma unroll
  for (int k = 0; k < PackSize; ++k)
    acc.elem[k] = 0.f;
  int64_t i = int64_t{rank} * TY + ty;
  if (j0 + PackSize <= n) {
    const int64_t jp = j0 / PackSize;  // pack index within a row
    for (; i + (kGemvUnroll - 1) * step < m; i += kGemvUnroll * step) {
      Pack<float, PackSize> av[kGemvUnroll];
      float xv[kGemvUnroll];
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) {
        av[u] = load_pack<PackSize>(A + (i + u * step) * lda, jp);
        xv[u] = x[i + u * step];
      }
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) {
#pragma unroll
        for (int k = 0; k < PackSize; ++k)
          acc.elem[k] = fmaf(av[u].elem[k], xv[u], acc.elem[k]);
      }
    }
    for (; i < m; i += step) {
      const Pack<float, PackSize> av = load_pack<PackSize>(A + i * lda, jp);
      const float xi = x[i];
#pragma unroll
      for (int k = 0; k < PackSize; ++k)
        acc.elem[k] = fmaf(av.elem[k], xi, acc.elem[k]);
    }
  } else if (j0 < n) {
    // the last, partial pack of the matrix: n - j0 < PackSize columns
    const int cols = static_cast<int>(n - j0);
    for (; i < m; i += step) {
      const float xi = x[i];
#pragma unroll
      for (int k = 0; k < PackSize; ++k)
        if (k < cols) acc.elem[k] = fmaf(A[i * lda + j0 + k], xi, acc.elem[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < PackSize; ++k)
    red[ty][tx * PackSize + k] = acc.elem[k];
  __syncthreads();
  {
    const int c = threadIdx.x % kCols;  // column col0 + c
    const int g = threadIdx.x / kCols;
    float sum = 0.f;
#pragma unroll
    for (int r = 0; r < PackSize; ++r)
      sum += red[g + r * kGroups][c];
    part[g][c] = sum;
  }
  __syncthreads();
  if (threadIdx.x < kCols) {
    const int c = threadIdx.x;
    float sum = 0.f;
#pragma unroll 8
    for (int g = 0; g < kGroups; ++g)
      sum += part[g][c];
    partial[c] = sum;  // the block's sum of column col0 + c over its rows
  }
  if (cluster_size == 1) {
    if (threadIdx.x < kCols && col0 + threadIdx.x < n) {
      const int64_t j = col0 + threadIdx.x;
      y[j] = gemv_epilogue(partial[threadIdx.x], alpha, beta, y + j);
    }
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every rank's column sums are visible cluster-wide
    if (rank == 0 && threadIdx.x < kCols && col0 + threadIdx.x < n) {
      float sum = 0.f;
      for (int q = 0; q < cluster_size; ++q)
        sum += cluster.map_shared_rank(partial, q)[threadIdx.x];
      const int64_t j = col0 + threadIdx.x;
      y[j] = gemv_epilogue(sum, alpha, beta, y + j);
    }
    cluster.sync();  // rank 0 is done reading before any block of the cluster exits
#endif
  }
}

}  // namespace detail
}  // namespace kernelkit
