// gemv: y = alpha * op(A) * x + beta * y for a row-major f32 matrix A (m x n, leading
// dimension lda).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "../core/error.cuh"
#include "../core/launch.cuh"
#include "../core/pack.cuh"
#include "blas.cuh"
#include "detail/gemv_kernels.cuh"

namespace kernelkit {

namespace detail {

inline constexpr int kGemvBlock = 256;       // rows kernels and the BlasOp::T kernel
inline constexpr int kGemvTallBlock = 1024;  // BlasOp::T when there are few column tiles
inline constexpr int kGemvMaxCluster = 8;    // portable cluster size
inline constexpr int kGemvTileThreads = 16;  // BlasOp::T: threads across a column tile

// Launches kernel with a cluster of dims `cluster` (plain launch when it is 1x1x1).
template <typename... Params, typename... Args>
cudaError_t gemv_launch(void (*kernel)(Params...), dim3 grid, dim3 block, dim3 cluster,
                        cudaStream_t stream, Args... args) {
  if (cluster.x * cluster.y * cluster.z == 1) {
    kernel<<<grid, block, 0, stream>>>(args...);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster.x;
  attr[0].val.clusterDim.y = cluster.y;
  attr[0].val.clusterDim.z = cluster.z;
  config.attrs = attr;
  config.numAttrs = 1;
  KERNELKIT_RETURN_IF_ERROR(cudaLaunchKernelEx(&config, kernel, args...));
  return cudaGetLastError();
}

// Smallest cluster size (power of two, <= max_cluster) with which `units` independent
// pieces of work give at least 90% of `target` blocks; max_cluster when none does.
inline int gemv_cluster_size(int64_t units, int64_t target, int max_cluster) {
  int c = 1;
  while (c < max_cluster && units * c * 10 < target * 9)
    c *= 2;
  return c;
}

template <int PackSize>
cudaError_t gemv_n_dispatch(const DeviceInfo& dev, int64_t m, int64_t n, float alpha,
                            const float* A, int64_t lda, const float* x, float beta, float* y,
                            cudaStream_t stream) {
  const int64_t packs = ceil_div<int64_t>(n, PackSize);
  const int64_t device_threads = int64_t{dev.sm_count} * dev.max_threads_per_sm;
  // Few long rows: a warp per row would leave the GPU half idle, so whole blocks (and,
  // with fewer rows than blocks on the device, clusters of blocks) share each row.
  if (m * kWarpSize * 2 < device_threads && packs >= 4 * kGemvBlock) {
    const int64_t target_blocks = device_threads / kGemvBlock;
    const int max_cluster = dev.cc_major >= 9 ? kGemvMaxCluster : 1;
    const int cluster = gemv_cluster_size(m, target_blocks, max_cluster);
    int blocks = 0;
    KERNELKIT_RETURN_IF_ERROR(grid_size(m * cluster * kGemvBlock, kGemvBlock, &blocks));
    const int grid = std::max(1, blocks / cluster) * cluster;
    return gemv_launch(gemv_n_block_kernel<PackSize, kGemvBlock>, dim3(grid), dim3(kGemvBlock),
                       dim3(cluster), stream, m, n, alpha, A, lda, x, beta, y, cluster);
  }
  // A group of Width lanes per row, Width about half the packs of a row (4 .. 32).
  const auto rows = [&](auto kernel, int width) -> cudaError_t {
    int grid = 0;
    KERNELKIT_RETURN_IF_ERROR(grid_size(m * width, kGemvBlock, &grid));
    kernel<<<grid, kGemvBlock, 0, stream>>>(m, n, alpha, A, lda, x, beta, y);
    return cudaGetLastError();
  };
  if constexpr (PackSize == 1) {
    return rows(gemv_n_rows_kernel<1, 32, kGemvBlock>, 32);
  } else {
    if (packs >= 64) return rows(gemv_n_rows_kernel<PackSize, 32, kGemvBlock>, 32);
    if (packs >= 32) return rows(gemv_n_rows_kernel<PackSize, 16, kGemvBlock>, 16);
    if (packs >= 16) return rows(gemv_n_rows_kernel<PackSize, 8, kGemvBlock>, 8);
    return rows(gemv_n_rows_kernel<PackSize, 4, kGemvBlock>, 4);
  }
}

// BlasOp::T with gemv_t_kernel<PackSize, TX, TY>: one block per TX*PackSize-column tile and
// rank of a cluster (grid tiles x cluster); the cluster size is the smallest (<= max_cluster)
// whose blocks fill 90% of a wave, and never more than the TY-row groups there are.
template <int PackSize, int TX, int TY>
cudaError_t gemv_t_launch(const DeviceInfo& dev, int64_t m, int64_t n, float alpha, const float* A,
                          int64_t lda, const float* x, float beta, float* y, int max_cluster,
                          cudaStream_t stream) {
  constexpr int kBlock = TX * TY;
  const int64_t tiles = ceil_div<int64_t>(n, int64_t{TX} * PackSize);
  KERNELKIT_REQUIRE(tiles <= std::numeric_limits<int32_t>::max());
  const int64_t device_threads = int64_t{dev.sm_count} * dev.max_threads_per_sm;
  const int64_t row_groups = ceil_div<int64_t>(m, TY);
  int cluster = gemv_cluster_size(tiles, device_threads / kBlock, max_cluster);
  while (cluster > 1 && cluster > row_groups)
    cluster /= 2;
  const dim3 grid(static_cast<unsigned>(tiles), cluster);
  return gemv_launch(gemv_t_kernel<PackSize, TX, TY>, grid, dim3(kBlock), dim3(1, cluster, 1),
                     stream, m, n, alpha, A, lda, x, beta, y);
}

// True when tiles of `cols` columns in blocks of `block` threads make 90% to 100% of one
// wave: a cluster-free launch that fills the device once.
inline bool gemv_t_one_wave(const DeviceInfo& dev, int64_t n, int cols, int block) {
  const int64_t device_threads = int64_t{dev.sm_count} * dev.max_threads_per_sm;
  const int64_t threads = ceil_div<int64_t>(n, cols) * block;
  return threads * 10 >= device_threads * 9 && threads <= device_threads;
}

template <int PackSize>
cudaError_t gemv_t_dispatch(const DeviceInfo& dev, int64_t m, int64_t n, float alpha,
                            const float* A, int64_t lda, const float* x, float beta, float* y,
                            cudaStream_t stream) {
  constexpr int kTX = kGemvTileThreads;
  constexpr int kTY = kGemvBlock / kTX;
  constexpr int kTallTY = kGemvTallBlock / kTX;
  const int64_t tiles = ceil_div<int64_t>(n, int64_t{kTX} * PackSize);
  const int64_t device_threads = int64_t{dev.sm_count} * dev.max_threads_per_sm;
  const int max_cluster = dev.cc_major >= 9 ? kGemvMaxCluster : 1;
  // Few column tiles (tall, narrow A): 1024-thread blocks so each rank covers more rows.
  const bool tall = tiles * max_cluster * kGemvBlock * 2 < device_threads && m >= 4 * kTallTY;
  if (tall) {
    return gemv_t_launch<PackSize, kTX, kTallTY>(dev, m, n, alpha, A, lda, x, beta, y, max_cluster,
                                                 stream);
  }
  if constexpr (PackSize == 4) {
    // Square-ish shapes: one wave of 1024-thread blocks that each own their columns over
    // every row (no cluster, no combine across blocks), 64 or 32 columns per block. Why:
    // at 8192^2 the cluster path launched 128 clusters of 8 but only 124 fit at once (ncu:
    // Max Active Clusters 124), so 4 clusters ran as a second wave (SMs active 79% of the
    // kernel's time); cuBLAS uses 32 columns per block, no cluster, at the same shape.
    constexpr int kRows = kGemvUnroll * 4;  // at least 4 trips of the unrolled loop
    if (tiles * kGemvBlock * 10 < device_threads * 9) {
      if (m >= kTallTY * kRows && gemv_t_one_wave(dev, n, kTX * PackSize, kGemvTallBlock))
        return gemv_t_launch<4, kTX, kTallTY>(dev, m, n, alpha, A, lda, x, beta, y, 1, stream);
      constexpr int kNarrowTX = kTX / 2;
      constexpr int kNarrowTY = kGemvTallBlock / kNarrowTX;
      if (m >= kNarrowTY * kRows && gemv_t_one_wave(dev, n, kNarrowTX * PackSize, kGemvTallBlock))
        return gemv_t_launch<4, kNarrowTX, kNarrowTY>(dev, m, n, alpha, A, lda, x, beta, y, 1,
                                                      stream);
    }
  }
  return gemv_t_launch<PackSize, kTX, kTY>(dev, m, n, alpha, A, lda, x, beta, y, max_cluster,
                                           stream);
}

}  // namespace detail

// y = alpha * op(A) * x + beta * y, f32.
//
// A is m x n, row-major, row i at A + i * lda (lda >= n, lda >= 1). op == BlasOp::N: x has n
// elements and y has m; op == BlasOp::T: x has m elements and y has n. y must not overlap A or
// x. beta == 0 never reads y (NaN in y is overwritten); alpha == 0 (or an empty inner
// dimension: n == 0 for N, m == 0 for T) never reads A or x and sets y = beta * y; with
// alpha == 0 and beta == 1 nothing is launched. 16-byte loads are used when A, lda (and x
// for BlasOp::N) are 16-byte aligned; any alignment works. Deterministic: the same call on the
// same device gives the same bits (the summation order depends on the shape, the
// alignment and the device's SM count, never on timing). Errors: cudaErrorInvalidValue,
// before any launch, for negative sizes, lda < max(1, n), (m - 1) * lda + n overflowing,
// null pointers that would be used, or an unknown op.
template <int = 0>
[[nodiscard]] cudaError_t gemv(BlasOp op, int64_t m, int64_t n, float alpha, const float* A,
                               int64_t lda, const float* x, float beta, float* y,
                               cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(op == BlasOp::N || op == BlasOp::T);
  KERNELKIT_REQUIRE(m >= 0 && n >= 0);
  KERNELKIT_REQUIRE(lda >= std::max<int64_t>(1, n));
  KERNELKIT_REQUIRE(m <= 1 || m - 1 <= (std::numeric_limits<int64_t>::max() - n) / lda);
  const int64_t out_count = op == BlasOp::N ? m : n;
  const int64_t inner = op == BlasOp::N ? n : m;
  KERNELKIT_REQUIRE(out_count == 0 || y != nullptr);
  const bool reads_matrix = alpha != 0.f && m > 0 && n > 0;
  KERNELKIT_REQUIRE(!reads_matrix || (A != nullptr && x != nullptr));
  if (out_count == 0) return cudaSuccess;
  if (!reads_matrix || inner == 0) {
    if (beta == 1.f) return cudaSuccess;  // y = 1 * y
    int grid = 0;
    KERNELKIT_RETURN_IF_ERROR(grid_size(out_count, detail::kGemvBlock, &grid));
    detail::gemv_scale_kernel<float><<<grid, detail::kGemvBlock, 0, stream>>>(out_count, beta, y);
    return cudaGetLastError();
  }
  DeviceInfo dev;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&dev));
  if (op == BlasOp::N) {
    if (pack_size_for(A, x) == 4 && lda % 4 == 0)
      return detail::gemv_n_dispatch<4>(dev, m, n, alpha, A, lda, x, beta, y, stream);
    return detail::gemv_n_dispatch<1>(dev, m, n, alpha, A, lda, x, beta, y, stream);
  }
  if (pack_size_for(A) == 4 && lda % 4 == 0)
    return detail::gemv_t_dispatch<4>(dev, m, n, alpha, A, lda, x, beta, y, stream);
  return detail::gemv_t_dispatch<1>(dev, m, n, alpha, A, lda, x, beta, y, stream);
}

}  // namespace kernelkit
