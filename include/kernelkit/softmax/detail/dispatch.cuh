// Softmax dispatch (internal): the one place where the row width picks the kernel, the
// pack size, the columns per lane, the block size and the cluster size.
//
//   cols % pack == 0 and both pointers aligned  -> N = 16 / sizeof(T) (else N = 1)
//   cols <= N * 32                               -> warp kernel, N columns per lane,
//                                                   Width = next pow2 of cols / N lanes
//   cols <= 1024                                 -> warp kernel, 32 lanes, columns per lane
//                                                   = next pow2 >= cols / 32
//   f16/bf16, N = 8, cols <= 16384               -> one block per row, row in registers
//                                                   (raw packs, 2-4 per thread)
//   row (as float) <= 64 KiB                     -> one block per row, row in shared memory,
//                                                   block size by occupancy (256/512/1024)
//   longer rows                                  -> softmax_launch_long (softmax_long.cuh):
//     (sm_90+, N > 1, a cluster can be resident)   cluster of 2..16 blocks per row, chunks
//                                                   of <= 64 KiB in shared memory (read once)
//   otherwise                                    -> online max+sum, then normalize (input
//                                                   read twice)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "../../core/error.cuh"
#include "../../core/launch.cuh"
#include "../../core/pack.cuh"
#include "softmax_kernels.cuh"
#include "softmax_long.cuh"

namespace kernelkit {
namespace detail {

inline constexpr int64_t kSoftmaxWarpMaxCols = kWarpSize * kSoftmaxMaxColsPerThread;  // 1024
inline constexpr int64_t kSoftmaxBlockRowBytes = 64 * 1024;  // single-block row limit
inline constexpr int kSoftmaxMaxCluster = 8;

// Resident blocks per SM of `kernel` at `block` threads and `smem` dynamic bytes, cached
// per (device, kernel, block, smem).
inline cudaError_t softmax_active_blocks(const void* kernel, int block, size_t smem, int* out) {
  static std::mutex mu;
  static std::map<std::tuple<int, const void*, int, size_t>, int> cache;
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  const auto key = std::make_tuple(device, kernel, block, smem);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key);
    if (it != cache.end()) {
      *out = it->second;
      return cudaSuccess;
    }
  }
  int blocks = 0;
  KERNELKIT_RETURN_IF_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block, smem));
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = blocks;
  *out = blocks;
  return cudaSuccess;
}

template <typename T, SoftmaxAlgo A, int N, int Cpt, int Width>
cudaError_t softmax_launch_warp(const T* in, T* out, int64_t rows, int64_t cols,
                                cudaStream_t stream) {
  // rows per lane group per iteration: 2 when a lane holds one pack (softmax_warp_kernel)
  constexpr int kRowsPerBlock = kSoftmaxWarpBlock / Width * (Cpt == N ? 2 : 1);
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(ceil_div<int64_t>(rows, kRowsPerBlock) * kSoftmaxWarpBlock,
                                      kSoftmaxWarpBlock, &grid));
  softmax_warp_kernel<T, A, N, Cpt, Width>
      <<<grid, kSoftmaxWarpBlock, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

// cols <= N * Width: one pack per lane, the narrowest group that covers the row.
template <typename T, SoftmaxAlgo A, int N, int Width>
cudaError_t softmax_dispatch_width(const T* in, T* out, int64_t rows, int64_t cols,
                                   cudaStream_t stream) {
  if constexpr (Width < kWarpSize) {
    if (cols > int64_t{N} * Width)
      return softmax_dispatch_width<T, A, N, Width * 2>(in, out, rows, cols, stream);
  }
  return softmax_launch_warp<T, A, N, N, Width>(in, out, rows, cols, stream);
}

// N * 32 < cols <= 1024: 32 lanes, Cpt (a power of two) columns per lane.
template <typename T, SoftmaxAlgo A, int N, int Cpt>
cudaError_t softmax_dispatch_cpt(const T* in, T* out, int64_t rows, int64_t cols,
                                 cudaStream_t stream) {
  if constexpr (Cpt < kSoftmaxMaxColsPerThread) {
    if (cols > int64_t{Cpt} * kWarpSize)
      return softmax_dispatch_cpt<T, A, N, Cpt * 2>(in, out, rows, cols, stream);
  }
  return softmax_launch_warp<T, A, N, Cpt, kWarpSize>(in, out, rows, cols, stream);
}

// The row buffer of the one-block-per-row kernel: *smem bytes for a chunk of floats. Once
// per kernel and device, its dynamic limit is raised to the largest row this path takes,
// or to what the device allows beside the kernel's static shared memory if that is less.
template <typename T, SoftmaxAlgo A, int N, int Block, int Cluster>
cudaError_t softmax_prepare_smem(int64_t chunk, size_t* smem) {
  *smem = static_cast<size_t>(chunk) * sizeof(float);
  auto kernel = softmax_smem_kernel<T, A, N, Block, Cluster>;
  return once_per_kernel(reinterpret_cast<const void*>(kernel), [&] {
    DeviceInfo d;
    KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
    cudaFuncAttributes attr{};
    KERNELKIT_RETURN_IF_ERROR(cudaFuncGetAttributes(&attr, kernel));
    const int64_t room = int64_t{d.smem_per_block_optin} - int64_t(attr.sharedSizeBytes);
    const int64_t limit = room < kSoftmaxBlockRowBytes ? room : kSoftmaxBlockRowBytes;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(limit));
  });
}

// One block per row. The block size (256, 512 or 1024) that keeps the most 16-byte loads
// in flight per SM: resident threads that have a pack x min(packs per thread, unroll);
// on a tie, the one with more resident blocks (one block loads while another reduces).
template <typename T, SoftmaxAlgo A, int N, int Block>
cudaError_t softmax_block_score(int64_t cols, int64_t* score, int* blocks) {
  size_t smem = 0;
  KERNELKIT_RETURN_IF_ERROR((softmax_prepare_smem<T, A, N, Block, 1>(cols, &smem)));
  KERNELKIT_RETURN_IF_ERROR(softmax_active_blocks(
      reinterpret_cast<const void*>(softmax_smem_kernel<T, A, N, Block, 1>), Block, smem, blocks));
  const int64_t packs = cols / N;
  const int64_t busy = packs < Block ? packs : Block;
  const int64_t per_thread = ceil_div<int64_t>(packs, Block);
  *score = int64_t{*blocks} * busy *
           (per_thread < kSoftmaxUnroll<T, Block> ? per_thread : kSoftmaxUnroll<T, Block>);
  return cudaSuccess;
}

template <typename T, SoftmaxAlgo A, int N, int Block>
cudaError_t softmax_launch_block_as(const T* in, T* out, int64_t rows, int64_t cols,
                                    cudaStream_t stream) {
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(rows * Block, Block, &grid));
  softmax_smem_kernel<T, A, N, Block, 1>
      <<<grid, Block, cols * sizeof(float), stream>>>(in, out, rows, cols, cols);
  return cudaGetLastError();
}

template <typename T, SoftmaxAlgo A, int N>
cudaError_t softmax_launch_block(const T* in, T* out, int64_t rows, int64_t cols,
                                 cudaStream_t stream) {
  int64_t score[3] = {};
  int blocks[3] = {};
  KERNELKIT_RETURN_IF_ERROR((softmax_block_score<T, A, N, 256>(cols, &score[0], &blocks[0])));
  KERNELKIT_RETURN_IF_ERROR((softmax_block_score<T, A, N, 512>(cols, &score[1], &blocks[1])));
  KERNELKIT_RETURN_IF_ERROR((softmax_block_score<T, A, N, 1024>(cols, &score[2], &blocks[2])));
  int best = 0;
  for (int k = 1; k < 3; ++k) {
    if (score[k] > score[best] || (score[k] == score[best] && blocks[k] > blocks[best])) best = k;
  }
  KERNELKIT_REQUIRE(blocks[best] > 0);
  if (best == 0) return softmax_launch_block_as<T, A, N, 256>(in, out, rows, cols, stream);
  if (best == 1) return softmax_launch_block_as<T, A, N, 512>(in, out, rows, cols, stream);
  return softmax_launch_block_as<T, A, N, 1024>(in, out, rows, cols, stream);
}

// One block per row, the row in registers: Block threads with Packs packs each cover
// cols <= Block * Packs * N.
template <typename T, SoftmaxAlgo A, int N, int Block, int Packs>
cudaError_t softmax_launch_block_reg(const T* in, T* out, int64_t rows, int64_t cols,
                                     cudaStream_t stream) {
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(rows * Block, Block, &grid));
  softmax_block_reg_kernel<T, A, N, Block, Packs><<<grid, Block, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

// Half types with 16-byte packs (N = 8), 1024 < cols <= 16384: the row in registers across
// one block, kept as raw packs (4 registers per 8 columns): 256 threads x 2 packs up to
// 4096 columns (32-40 registers: 6-8 blocks, 1536-2048 threads per SM), 512 x 2 up to
// 8192, 512 x 4 up to 16384 (40-60 registers: 2-3 blocks per SM).
inline constexpr int64_t kSoftmaxBlockRegMaxCols = 16384;

template <typename T, SoftmaxAlgo A, int N>
cudaError_t softmax_dispatch_block_reg(const T* in, T* out, int64_t rows, int64_t cols,
                                       cudaStream_t stream) {
  static_assert(N == 8, "16-byte packs of a 2-byte type");
  if (cols <= 256 * 2 * N)
    return softmax_launch_block_reg<T, A, N, 256, 2>(in, out, rows, cols, stream);
  if (cols <= 512 * 2 * N)
    return softmax_launch_block_reg<T, A, N, 512, 2>(in, out, rows, cols, stream);
  return softmax_launch_block_reg<T, A, N, 512, 4>(in, out, rows, cols, stream);
}

template <typename T, SoftmaxAlgo A, int N>
cudaError_t softmax_dispatch_long(const T* in, T* out, int64_t rows, int64_t cols,
                                  cudaStream_t stream) {
  if constexpr (is_half_like_v<T> && N == 8) {
    if (cols <= kSoftmaxBlockRegMaxCols)
      return softmax_dispatch_block_reg<T, A, N>(in, out, rows, cols, stream);
  }
  if (cols * int64_t{sizeof(float)} <= kSoftmaxBlockRowBytes)
    return softmax_launch_block<T, A, N>(in, out, rows, cols, stream);
  return softmax_launch_long<T, A, N>(in, out, rows, cols, stream);  // softmax_long.cuh
}

template <typename T, SoftmaxAlgo A, int N>
cudaError_t softmax_dispatch_cols(const T* in, T* out, int64_t rows, int64_t cols,
                                  cudaStream_t stream) {
  if (cols <= int64_t{N} * kWarpSize) {
    if constexpr (N == 1) {
      // misaligned short rows: one 32-lane group (fewer instantiations; rare path)
      return softmax_launch_warp<T, A, 1, 1, kWarpSize>(in, out, rows, cols, stream);
    } else {
      return softmax_dispatch_width<T, A, N, 1>(in, out, rows, cols, stream);
    }
  }
  if (cols <= kSoftmaxWarpMaxCols)
    return softmax_dispatch_cpt<T, A, N, 2 * N>(in, out, rows, cols, stream);
  return softmax_dispatch_long<T, A, N>(in, out, rows, cols, stream);
}

// Argument checks, then the pack choice. in == out is allowed; other overlaps are not.
template <SoftmaxAlgo A, typename T>
cudaError_t softmax_dispatch(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  static_assert(std::is_same_v<T, float> || is_half_like_v<T>,
                "softmax supports float, __half and __nv_bfloat16");
  KERNELKIT_REQUIRE(rows >= 0 && cols >= 0);
  if (rows == 0 || cols == 0) return cudaSuccess;
  KERNELKIT_REQUIRE(in != nullptr && out != nullptr);
  KERNELKIT_REQUIRE(rows <= INT64_MAX / cols);
  constexpr int kN = kMaxPackSize<T>;
  if (cols % kN == 0 && pack_size_for(in, static_cast<const T*>(out)) == kN)
    return softmax_dispatch_cols<T, A, kN>(in, out, rows, cols, stream);
  return softmax_dispatch_cols<T, A, 1>(in, out, rows, cols, stream);
}

}  // namespace detail
}  // namespace kernelkit
