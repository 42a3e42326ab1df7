// SPDX-License-Identifier: Apache-2.0
// Ladder step 4: one read, one write, 16-byte accesses. The row lives in registers: a group
// of Threads threads holds it, thread t the packs t, t + Threads, ... (Floats floats a
// thread, 16 at most), loaded as Pack<float, 4> (core/pack.cuh: one LDG.128 / STG.128,
// every load of the row issued before the first reduction). Narrow rows (<= 512 columns)
// take a warp each (four rows a block of 128, 4 / 8 / 16 floats a lane, reduced with warp
// shuffles); wider ones a whole block, the smallest of 128 / 256 / 512 / 1024 threads that
// holds the row at 16 floats a thread (up to 16384 columns; wider rows are declined,
// v4_vectorized_supports). With the row in registers the variance is v3's exact two-pass
// formula over registers: the mean's reduction, then the squared deviations'. x, y, weight,
// bias off the 16-byte grid (or cols % 4 != 0) take the same kernel with one float per
// access (Pack 1, 16 accesses a thread).
//
// This is the library's register path (kernelkit/norm/detail/norm_kernels.cuh,
// norm_registers_kernel: kWarp and kBlock, the same thread-holds-16-floats capacity and
// smallest-block choice, the same two reductions) written for f32 layer_norm alone. The
// library adds the table and plan (plan_norm), rms_norm / add_rms_norm, 2-byte x and
// weights, blocks per SM from its register budget, and for rows past 16384 columns (4096
// off the 16-byte grid, where it holds 4 floats a thread) a two-pass streamed kernel and a
// row split over a cooperative grid. Predicted at the library's speed (within 2 %): 0.93 of
// SOL at 8192x4096, 0.87 at 4096x16384 (one 1024-thread block a SM: its reductions stall
// its loads), 0.85 at 65536x768 (128 threads a row of 192 packs).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/warp/warp.cuh"
#include "ladder/layer_norm/common.cuh"

namespace kernelkit::ladder::layer_norm {

inline constexpr int kV4WarpBlock = 128;  // a block of the warp-per-row kernel: 4 rows
inline constexpr int kV4MaxFloats = 16;   // floats of the row a thread holds, at most
inline constexpr int kV4MaxCols = 16384;  // 1024 threads x 16 floats

// The widths v4 takes: rows that fit a 1024-thread block's registers at 16 floats a thread.
inline bool v4_vectorized_supports(int64_t, int64_t cols) {
  return cols <= kV4MaxCols;
}

// Blocks of `block` threads a SM the kernel asks room for: 48 registers a thread with
// 16-byte accesses (16 floats of the row, addresses, statistics), 64 with one float an
// access (16 addresses); what each builds to without spills on sm_90 (ptxas -v). Capped by
// the compiled architecture's threads and blocks a SM (min_blocks_per_sm: sm_75 holds 1024
// threads, so there a thread may take more registers).
constexpr int v4_min_blocks(int block, int pack) {
  const int b = 65536 / (block * (pack == 1 ? 64 : 48));
  return b < 1 ? 1 : b;
}

// The sum of v over the Threads threads of a row, in each of them.
template <int Threads, int Block>
__device__ __forceinline__ float v4_row_sum(float v) {
  if constexpr (Threads == kWarpSize) {
    return warp_all_reduce<kWarpSize>(v, Sum{});
  } else {
    static_assert(Threads == Block, "a row is a warp or the whole block");
    return block_all_reduce<Block>(v, Sum{});
  }
}

// Pack floats an access (4: 16 bytes; 1), Floats floats of a row a thread, Threads threads
// a row (32, or Block), Block threads a block. cols <= Threads * Floats.
template <int Pack, int Floats, int Threads, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, v4_min_blocks(Block, Pack)))
    v4_kernel(const float* x, const float* weight, const float* bias, float* y, float* mean_out,
              float* rstd_out, int64_t rows, int cols, float eps) {
  static_assert(Floats % Pack == 0 && Floats <= kV4MaxFloats, "whole packs, 16 floats at most");
  constexpr int kPacks = Floats / Pack;  // accesses a thread
  constexpr int kRowsPerBlock = Block / Threads;
  using P = ::kernelkit::Pack<float, Pack>;
  const int t = static_cast<int>(threadIdx.x) % Threads;
  const float inv_cols = 1.f / static_cast<float>(cols);
  // row is the same for every thread of its group: the reductions below are convergent
  for (int64_t row = int64_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / Threads; row < rows;
       row += int64_t{gridDim.x} * kRowsPerBlock) {
    const float* xr = x + row * cols;
    // access p of this thread: pack p * Threads + t, columns [c, c + Pack), c = that * Pack;
    // (cols % Pack == 0: an access is wholly inside the row or wholly past it)
    float v[kPacks][Pack];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int i = p * Threads + t;
      if (i * Pack < cols) {
        const P pk = load_pack<Pack>(xr, i);
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          v[p][j] = pk.elem[j];
      } else {
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          v[p][j] = 0.f;
      }
    }
    float s = 0.f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        s += v[p][j];
    // rounded once (__fmul_rn: never fused into x - mean), so y uses the mean it saves
    const float mean = __fmul_rn(v4_row_sum<Threads, Block>(s), inv_cols);
    float ss = 0.f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if ((p * Threads + t) * Pack < cols) {  // (the zeros past the row are not x - mean)
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          ss += (v[p][j] - mean) * (v[p][j] - mean);
      }
    }
    const float rstd = rsqrtf(v4_row_sum<Threads, Block>(ss) * inv_cols + eps);
    if (t == 0) {
      if (mean_out != nullptr) mean_out[row] = mean;
      if (rstd_out != nullptr) rstd_out[row] = rstd;
    }
    float* yr = y + row * cols;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int i = p * Threads + t;
      if (i * Pack >= cols) continue;
      P out;
#pragma unroll
      for (int j = 0; j < Pack; ++j)
        out.elem[j] = (v[p][j] - mean) * rstd;
      if (weight != nullptr) {
        const P w = load_pack<Pack>(weight, i);
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          out.elem[j] *= w.elem[j];
      }
      if (bias != nullptr) {
        const P b = load_pack<Pack>(bias, i);
#pragma unroll
        for (int j = 0; j < Pack; ++j)
          out.elem[j] += b.elem[j];
      }
      store_pack<Pack>(yr, i, out);
    }
  }
}

template <int Pack, int Floats, int Threads, int Block>
cudaError_t v4_launch(const float* x, const float* weight, const float* bias, float* y, float* mean,
                      float* rstd, int64_t rows, int64_t cols, float eps, const DeviceInfo& d,
                      cudaStream_t stream) {
  constexpr int kRowsPerBlock = Block / Threads;
  const int grid = grid_size_for(ceil_div<int64_t>(rows, kRowsPerBlock) * Block, Block, d);
  v4_kernel<Pack, Floats, Threads, Block><<<grid, Block, 0, stream>>>(
      x, weight, bias, y, mean, rstd, rows, static_cast<int>(cols), eps);
  return cudaGetLastError();
}

// The row's group and floats a thread, for Pack floats an access: a warp holding 4, 8 or 16
// floats a lane up to 512 columns, else the smallest block holding 16 floats a thread.
template <int Pack>
cudaError_t v4_dispatch(const float* x, const float* weight, const float* bias, float* y,
                        float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                        const DeviceInfo& d, cudaStream_t stream) {
  constexpr int W = kWarpSize, WB = kV4WarpBlock;
  if (cols <= W * 4)
    return v4_launch<Pack, 4, W, WB>(x, weight, bias, y, mean, rstd, rows, cols, eps, d, stream);
  if (cols <= W * 8)
    return v4_launch<Pack, 8, W, WB>(x, weight, bias, y, mean, rstd, rows, cols, eps, d, stream);
  if (cols <= W * 16)
    return v4_launch<Pack, 16, W, WB>(x, weight, bias, y, mean, rstd, rows, cols, eps, d, stream);
  if (cols <= 128 * 16)
    return v4_launch<Pack, 16, 128, 128>(x, weight, bias, y, mean, rstd, rows, cols, eps, d,
                                         stream);
  if (cols <= 256 * 16)
    return v4_launch<Pack, 16, 256, 256>(x, weight, bias, y, mean, rstd, rows, cols, eps, d,
                                         stream);
  if (cols <= 512 * 16)
    return v4_launch<Pack, 16, 512, 512>(x, weight, bias, y, mean, rstd, rows, cols, eps, d,
                                         stream);
  return v4_launch<Pack, 16, 1024, 1024>(x, weight, bias, y, mean, rstd, rows, cols, eps, d,
                                         stream);
}

// layer_norm of the rows of a rows x cols f32 matrix (the library's signature); rows wider
// than kV4MaxCols: cudaErrorInvalidValue.
inline cudaError_t v4_vectorized(const float* x, const float* weight, const float* bias, float* y,
                                 float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                 cudaStream_t stream) {
  KERNELKIT_REQUIRE(args_ok(x, weight, bias, y, mean, rstd, rows, cols, eps) &&
                    v4_vectorized_supports(rows, cols));
  if (rows == 0 || cols == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  // 16-byte packs when every row of x and y, the weight and the bias start on the grid
  constexpr int kPack = kMaxPackSize<float>;
  if (pack_size_for(x, y, weight, bias) == kPack && cols % kPack == 0)
    return v4_dispatch<kPack>(x, weight, bias, y, mean, rstd, rows, cols, eps, d, stream);
  return v4_dispatch<1>(x, weight, bias, y, mean, rstd, rows, cols, eps, d, stream);
}

}  // namespace kernelkit::ladder::layer_norm
