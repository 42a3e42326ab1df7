// Softmax kernels (internal). Three shapes of work, chosen by the dispatch in
// softmax/softmax.cuh on the row width:
//  - softmax_warp_kernel: a group of Width lanes (1..32) owns one row and keeps it in
//    registers (ColsPerThread floats per lane); 32 / Width rows per warp.
//  - softmax_smem_kernel: one block (or a thread-block cluster of Cluster blocks) owns one
//    row and keeps it, as float, in shared memory (distributed shared memory for a
//    cluster: each block holds one chunk of the row and the per-block max / sum are
//    exchanged through DSMEM). The input is read once.
//  - long rows (cluster per row, online fallback): softmax_long.cuh.
// Numerics in every path: m = max of the row (NaN propagates), e = exp(x - m) in float,
// s = sum of e; softmax = e / s, log_softmax = (x - m) - log(s). A row of all -inf has
// m = -inf and x - m = NaN, so the row becomes NaN (as PyTorch); a single -inf gives 0.
#pragma once

#include <cooperative_groups.h>

#include <cmath>
#include <cstdint>

#include "../../block/block_reduce.cuh"
#include "../../core/pack.cuh"
#include "../../core/types.cuh"
#include "../../warp/warp.cuh"

namespace kernelkit {
namespace detail {

enum class SoftmaxAlgo { kSoftmax, kLogSoftmax };

inline constexpr int kSoftmaxWarpBlock = 128;  // threads per block of the warp kernel
inline constexpr int kSoftmaxMaxColsPerThread = 32;
// Packs in flight per thread in the block kernels: 4 (16-byte loads issued before any is
// used), 2 for bf16 at 1024 threads, where 4 spills under the 64-register cap.
template <typename T, int Block>
inline constexpr int kSoftmaxUnroll = (std::is_same_v<T, __nv_bfloat16> && Block >= 1024) ? 2 : 4;

// Loads pack i of p as floats into x[0..N).
template <int N, typename T>
__device__ __forceinline__ void softmax_load_floats(const T* p, int64_t i, float* x) {
  const Pack<T, N> v = load_pack<N>(p, i);
#pragma unroll
  for (int j = 0; j < N; ++j)
    x[j] = convert<float>(v.elem[j]);
}

// exp(d) and the per-element max. Fast (the kernels pass is_half_like_v<T>: the 2-byte
// types need twice the elements per byte of float, so instruction issue matters): __expf
// (ex2.approx of d * log2(e); d = x - m is formed first, so for the |d| < 20 that reach a
// 2-byte output the relative error stays near 2^-21) and fmaxf (one FMNMX; a NaN it skips
// still makes the row's sum NaN, so the row still becomes NaN). Otherwise (float) expf and
// the NaN-propagating Max.
template <bool Fast>
__device__ __forceinline__ float softmax_exp(float d) {
  if constexpr (Fast) {
    return __expf(d);
  } else {
    return expf(d);
  }
}

template <bool Fast>
__device__ __forceinline__ float softmax_max(float a, float b) {
  if constexpr (Fast) {
    return fmaxf(a, b);
  } else {
    return Max{}(a, b);
  }
}

template <int N, typename T>
__device__ __forceinline__ void softmax_to_floats(const Pack<T, N>& v, float* x) {
#pragma unroll
  for (int j = 0; j < N; ++j)
    x[j] = convert<float>(v.elem[j]);
}

template <int N, typename T>
__device__ __forceinline__ void softmax_store_floats(T* p, int64_t i, const float* y) {
  Pack<T, N> v;
#pragma unroll
  for (int j = 0; j < N; ++j)
    v.elem[j] = convert<T>(y[j]);
  store_pack<N>(p, i, v);
}

// ---------------------------------------------------------------------------------------
// Row in registers. Lane `lane` of a group holds packs p * Width + lane (p < ColsPerThread
// / N) of its row, i.e. columns [(p * Width + lane) * N, ... + N). Requires cols <=
// ColsPerThread * Width and cols % N == 0 (packs past cols are padding and never touched).
// When a lane holds a single pack (short rows), each group takes kRows = 2 rows per
// iteration, so that every lane has two independent 16-byte loads in flight. The warp's
// rows per iteration are base + k * groups_per_warp + group (k < kRows): consecutive
// groups read consecutive rows. The row loop is uniform over the warp (every lane runs
// every iteration and every shuffle); a group whose row is past `rows` computes on
// padding and stores nothing.
template <typename T, SoftmaxAlgo A, int N, int ColsPerThread, int Width>
__global__ void __launch_bounds__(kSoftmaxWarpBlock)
    softmax_warp_kernel(const T* in, T* out, int64_t rows, int64_t cols) {
  static_assert(ColsPerThread % N == 0, "a lane holds whole packs");
  static_assert(Width >= 1 && Width <= kWarpSize && (Width & (Width - 1)) == 0,
                "a row group is 1, 2, 4, 8, 16 or 32 lanes of one warp");
  static_assert(ColsPerThread <= kSoftmaxMaxColsPerThread, "row must fit in registers");
  constexpr bool kFast = is_half_like_v<T>;
  constexpr int kPacks = ColsPerThread / N;
  constexpr int kRows = kPacks == 1 ? 2 : 1;
  constexpr int kGroupsPerWarp = kWarpSize / Width;
  constexpr int kWarpsPerBlock = kSoftmaxWarpBlock / kWarpSize;
  const int lane = threadIdx.x % Width;
  const int group = (threadIdx.x % kWarpSize) / Width;
  const int64_t warp = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int64_t step = int64_t{gridDim.x} * kWarpsPerBlock * kGroupsPerWarp * kRows;

  for (int64_t base = warp * kGroupsPerWarp * kRows; base < rows; base += step) {
    float x[kRows][ColsPerThread];
    float m[kRows], s[kRows];
    int64_t offset[kRows];
    bool row_ok[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t row = base + k * kGroupsPerWarp + group;
      row_ok[k] = row < rows;
      offset[k] = row_ok[k] ? row * cols : 0;
      m[k] = -INFINITY;
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t pack = int64_t{p} * Width + lane;
        if (row_ok[k] && pack * N < cols) {
          softmax_load_floats<N>(in + offset[k], pack, x[k] + p * N);
        } else {
#pragma unroll
          for (int j = 0; j < N; ++j)
            x[k][p * N + j] = -INFINITY;
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
#pragma unroll
      for (int c = 0; c < ColsPerThread; ++c)
        m[k] = softmax_max<kFast>(m[k], x[k][c]);
      if constexpr (Width > 1) m[k] = warp_all_reduce<Width>(m[k], Max{});
    }
    // every lane of a group holds its rows' max
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      s[k] = 0.f;
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t pack = int64_t{p} * Width + lane;
        if (pack * N < cols) {
#pragma unroll
          for (int j = 0; j < N; ++j) {
            const float e = softmax_exp<kFast>(x[k][p * N + j] - m[k]);
            if constexpr (A == SoftmaxAlgo::kSoftmax) x[k][p * N + j] = e;
            s[k] += e;
          }
        }
      }
      if constexpr (Width > 1) s[k] = warp_all_reduce<Width>(s[k], Sum{});
    }
    // every lane of a group holds its rows' sum of exp(x - m)
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      if (!row_ok[k]) continue;
      const float inv = 1.f / s[k];
      const float log_s = logf(s[k]);
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t pack = int64_t{p} * Width + lane;
        if (pack * N < cols) {
          float y[N];
#pragma unroll
          for (int j = 0; j < N; ++j) {
            if constexpr (A == SoftmaxAlgo::kSoftmax) {
              y[j] = x[k][p * N + j] * inv;
            } else {
              y[j] = (x[k][p * N + j] - m[k]) - log_s;
            }
          }
          softmax_store_floats<N>(out + offset[k], pack, y);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Row in registers across a block (no shared-memory row buffer). Thread t holds packs
// t + p * Block (p < Packs) of its row, i.e. columns [(t + p * Block) * N, ... + N).
// Requires cols % N == 0 and cols <= Block * Packs * N (packs past cols are padding and
// never touched). All Packs 16-byte loads of a thread are issued before any is used; the
// block then does two block all-reduces (max, sum) per row and writes the row from
// registers. The thread keeps its packs as loaded (N / 2 registers per pack for 2-byte
// types) and converts them again in each pass (softmax computes exp twice), which halves
// the registers a row takes against floats, so more rows fit per SM. Rows loop with a
// stride of gridDim.x.
template <typename T, SoftmaxAlgo A, int N, int Block, int Packs>
__global__ void __launch_bounds__(Block)
    softmax_block_reg_kernel(const T* in, T* out, int64_t rows, int64_t cols) {
  static_assert(Packs >= 1 && Packs * N <= 2 * kSoftmaxMaxColsPerThread,
                "a thread's share of the row must fit in registers");
  constexpr bool kFast = is_half_like_v<T>;
  const int64_t packs = cols / N;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* row_in = in + row * cols;
    T* row_out = out + row * cols;
    Pack<T, N> raw[Packs];  // all loads in flight before the first use
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int64_t i = threadIdx.x + int64_t{p} * Block;
      if (i < packs) raw[p] = load_pack<N>(row_in, i);
    }
    float m = -INFINITY;
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int64_t i = threadIdx.x + int64_t{p} * Block;
      if (i < packs) {
        float v[N];
        softmax_to_floats<N>(raw[p], v);
#pragma unroll
        for (int j = 0; j < N; ++j)
          m = softmax_max<kFast>(m, v[j]);
      }
    }
    m = block_all_reduce<Block>(m, Max{});
    // every thread holds the row max
    float s = 0.f;
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int64_t i = threadIdx.x + int64_t{p} * Block;
      if (i < packs) {
        float v[N];
        softmax_to_floats<N>(raw[p], v);
#pragma unroll
        for (int j = 0; j < N; ++j)
          s += softmax_exp<kFast>(v[j] - m);
      }
    }
    s = block_all_reduce<Block>(s, Sum{});
    // every thread holds the row sum of exp(x - m)
    const float inv = 1.f / s;
    const float log_s = logf(s);
#pragma unroll
    for (int p = 0; p < Packs; ++p) {
      const int64_t i = threadIdx.x + int64_t{p} * Block;
      if (i < packs) {
        float v[N];
        softmax_to_floats<N>(raw[p], v);
#pragma unroll
        for (int j = 0; j < N; ++j) {
          if constexpr (A == SoftmaxAlgo::kLogSoftmax) {
            v[j] = (v[j] - m) - log_s;
          } else {
            v[j] = softmax_exp<kFast>(v[j] - m) * inv;
          }
        }
        softmax_store_floats<N>(row_out, i, v);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Row in shared memory. Cluster blocks share one row: block rank r holds columns
// [r * chunk, min(cols, (r + 1) * chunk)) as floats in its dynamic shared memory
// (chunk % N == 0, cols % N == 0). Dynamic shared memory: chunk * sizeof(float) bytes.
// Rows loop with a stride of gridDim.x / Cluster; gridDim.x is a multiple of Cluster.
template <typename T, SoftmaxAlgo A, int N, int Block, int Cluster>
__global__ void __launch_bounds__(Block)
    softmax_smem_kernel(const T* in, T* out, int64_t rows, int64_t cols, int64_t chunk) {
  static_assert(Cluster == 1 || Cluster == 2 || Cluster == 4 || Cluster == 8,
                "portable cluster sizes only (1, 2, 4, 8)");
  static_assert(N == 1 || N % 4 == 0, "packs go to shared memory as float4 or scalars");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  if constexpr (Cluster > 1) {
    __trap();  // the dispatch never launches a cluster below sm_90
  } else
#endif
  {
    extern __shared__ float4 softmax_smem[];
    float* buf = reinterpret_cast<float*>(softmax_smem);
    __shared__ float part_max, part_sum;  // this block's partials, read by the cluster
    unsigned rank = 0;
    if constexpr (Cluster > 1) rank = cooperative_groups::this_cluster().block_rank();
    const int64_t begin = int64_t{rank} * chunk;
    const int64_t count = begin < cols ? (cols - begin < chunk ? cols - begin : chunk) : 0;
    const int64_t packs = count / N;  // packs this block holds

    for (int64_t row = blockIdx.x / Cluster; row < rows; row += gridDim.x / Cluster) {
      const T* row_in = in + row * cols + begin;
      T* row_out = out + row * cols + begin;
      float m = -INFINITY;
      // kSoftmaxUnroll packs per thread are loaded before any is used: that many 16-byte
      // loads in flight per thread
      for (int64_t i0 = threadIdx.x; i0 < packs; i0 += kSoftmaxUnroll<T, Block> * Block) {
        Pack<T, N> raw[kSoftmaxUnroll<T, Block>];  // raw packs: 4 registers each, converted on use
#pragma unroll
        for (int u = 0; u < kSoftmaxUnroll<T, Block>; ++u) {
          if (i0 + u * Block < packs) raw[u] = load_pack<N>(row_in, i0 + u * Block);
        }
#pragma unroll
        for (int u = 0; u < kSoftmaxUnroll<T, Block>; ++u) {
          const int64_t i = i0 + u * Block;
          if (i < packs) {
            float x[N];
            softmax_to_floats<N>(raw[u], x);
#pragma unroll
            for (int j = 0; j < N; ++j)
              m = Max{}(m, x[j]);
            if constexpr (N == 1) {
              buf[i] = x[0];
            } else {
#pragma unroll
              for (int k = 0; k < N / 4; ++k)
                softmax_smem[i * (N / 4) + k] =
                    make_float4(x[4 * k], x[4 * k + 1], x[4 * k + 2], x[4 * k + 3]);
            }
          }
        }
      }
      m = block_all_reduce<Block>(m, Max{});
      if constexpr (Cluster > 1) {
        auto cluster = cooperative_groups::this_cluster();
        if (threadIdx.x == 0) part_max = m;
        cluster.sync();
#pragma unroll
        for (int r = 0; r < Cluster; ++r)
          m = Max{}(m, *cluster.map_shared_rank(&part_max, r));
      }
      // every thread holds the row max; each thread rereads only what it wrote
      float s = 0.f;
      for (int64_t i = threadIdx.x; i < packs; i += Block) {
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const float e = expf(buf[i * N + j] - m);
          if constexpr (A == SoftmaxAlgo::kSoftmax) buf[i * N + j] = e;
          s += e;
        }
      }
      s = block_all_reduce<Block>(s, Sum{});
      if constexpr (Cluster > 1) {
        auto cluster = cooperative_groups::this_cluster();
        if (threadIdx.x == 0) part_sum = s;
        cluster.sync();
        s = 0.f;
#pragma unroll
        for (int r = 0; r < Cluster; ++r)  // rank order: the same bits in every block
          s += *cluster.map_shared_rank(&part_sum, r);
      }
      const float inv = 1.f / s;
      const float log_s = logf(s);
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < packs; i += Block) {
        float y[N];
#pragma unroll
        for (int j = 0; j < N; ++j) {
          if constexpr (A == SoftmaxAlgo::kSoftmax) {
            y[j] = buf[i * N + j] * inv;
          } else {
            y[j] = (buf[i * N + j] - m) - log_s;
          }
        }
        softmax_store_floats<N>(row_out, i, y);
      }
      // No barrier needed before the next row: every block read the others' part_max
      // before the sum barrier above, and reads their part_sum before it arrives at the
      // next row's max barrier, which any rewrite of part_sum comes after.
    }
    // no block may exit while another still reads its part_sum
    if constexpr (Cluster > 1) cooperative_groups::this_cluster().sync();
  }
}

}  // namespace detail
}  // namespace kernelkit
