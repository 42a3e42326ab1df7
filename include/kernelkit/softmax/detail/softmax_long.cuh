// Softmax for long rows (internal): rows too long for one block's shared memory (row as
// float > 64 KiB). Two kernels and their launchers; the dispatch (dispatch.cuh) calls
// softmax_launch_long.
//  - softmax_cluster_kernel (sm_90+, 16-byte packs): a thread-block cluster of Cluster
//    blocks owns one row; block rank r keeps columns [r * chunk, (r + 1) * chunk) of it,
//    as raw T packs, in its shared memory. One read of the input: while loading, each
//    thread keeps an online max and rescaled sum; the block's (max, sum) pair is combined
//    across the cluster through DSMEM behind ONE cluster barrier per row; then each block
//    writes its chunk from shared memory. The chunk is at most 64 KiB where the cluster
//    size allows, so that 3 blocks of 512 threads share an SM: while one block sits in
//    its barrier or its write phase, the others stream their reads (one block per SM, as
//    a 128 KiB chunk needs, runs read / barrier / write in lock step and leaves DRAM idle
//    in between).
//  - softmax_online_kernel: one block per row, any length: an online max + rescaled sum
//    in one pass, then a normalize pass (reads the input twice). The fallback.
// Numerics as in softmax_kernels.cuh: NaN propagates through the max and the sum; a row
// of all -inf has max -inf and sum 0, so exp(x - max) = NaN and the row becomes NaN.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "../../block/block_reduce.cuh"
#include "../../core/error.cuh"
#include "../../core/launch.cuh"
#include "../../core/pack.cuh"
#include "../../core/types.cuh"
#include "../../warp/warp.cuh"
#include "softmax_kernels.cuh"

namespace kernelkit {
namespace detail {

// Packs per thread loaded before any is used in the cluster kernel's read phase.
inline constexpr int kSoftmaxLongUnroll = 4;
// Largest chunk (raw bytes per block) the dispatch aims for: 3 blocks per SM.
inline constexpr int64_t kSoftmaxClusterChunkBytes = 64 * 1024;
inline constexpr int kSoftmaxClusterBlock = 512;
inline constexpr int kSoftmaxMaxClusterSize = 16;  // 16 is non-portable (opt-in), sm_90
// static shared memory of the cluster kernels (partials, reduction slots: 1184-1312 bytes
// on sm_90) is kept out of the dynamic budget
inline constexpr int kSoftmaxStaticSmemReserveLong = 2048;

// A 16-byte pack of any T held as four 32-bit words (bf16 as 16-bit pieces spilled under
// the 40-register cap; words do not), and its N = 16 / sizeof(T) elements as floats
// (the same values as convert<float>).
using SoftmaxRaw = Pack<uint32_t, 4>;

template <typename T>
__device__ __forceinline__ void softmax_raw_to_floats(const SoftmaxRaw& r, float* x) {
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      x[k] = __uint_as_float(r.elem[k]);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {  // bf16 is the high half of a float
      x[2 * k] = __uint_as_float(r.elem[k] << 16);
      x[2 * k + 1] = __uint_as_float(r.elem[k] & 0xffff0000u);
    }
  } else {
    static_assert(std::is_same_v<T, __half>, "float, __half or __nv_bfloat16");
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      __half2 h;
      memcpy(&h, &r.elem[k], sizeof(h));
      const float2 f = __half22float2(h);
      x[2 * k] = f.x;
      x[2 * k + 1] = f.y;
    }
  }
}

// Online update of a thread's running max m and sum s (of exp(x - m)) with the packs
// raw[0..valid): per pack, the new max and (only when it grew) one rescale of s. m stays
// -inf (and s 0) while every element seen is -inf; a NaN makes m (and then s) NaN
// (NaN != NaN, so every later pack rescales by exp(NaN)).
template <typename T, int N, int U>
__device__ __forceinline__ void softmax_online_update(const SoftmaxRaw (&raw)[U], int valid,
                                                      float& m, float& s) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (u < valid) {
      float x[N];
      softmax_raw_to_floats<T>(raw[u], x);
      float nm = m;
#pragma unroll
      for (int j = 0; j < N; ++j)
        nm = Max{}(nm, x[j]);
      if (nm != -INFINITY) {  // all -inf so far: nothing to add yet
        if (nm != m) {
          s *= softmax_exp<is_half_like_v<T>>(m - nm);  // m = -inf gives 0
          m = nm;
        }
#pragma unroll
        for (int j = 0; j < N; ++j)
          s += softmax_exp<is_half_like_v<T>>(x[j] - m);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Cluster per row. Requires cols % N == 0, chunk % N == 0, 16-byte aligned in / out,
// Cluster * chunk >= cols, dynamic shared memory chunk * sizeof(T) bytes, gridDim.x a
// multiple of Cluster. Rows loop with a stride of gridDim.x / Cluster (every block of a
// cluster runs the same iterations). Thread t owns packs t + k * Block of its block's
// chunk in both phases, so the next row may overwrite them with no block barrier. The
// read phase fills shared memory through registers, kSoftmaxLongUnroll 16-byte loads deep.
template <typename T, SoftmaxAlgo A, int N, int Block, int Cluster>
__global__ void __launch_bounds__(Block, Block >= 1024 ? 1 : 3)
    softmax_cluster_kernel(const T* in, T* out, int64_t rows, int64_t cols, int64_t chunk) {
  static_assert(Cluster == 2 || Cluster == 4 || Cluster == 8 || Cluster == 16,
                "cluster of 2, 4, 8 or 16 blocks (16 needs the non-portable opt-in)");
  static_assert(N > 1 && sizeof(T) * N == 16, "16-byte packs only");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // the dispatch never launches a cluster below sm_90
#else
  using P = SoftmaxRaw;  // one 16-byte pack of N elements
  constexpr int kU = kSoftmaxLongUnroll;
  constexpr bool kFast = is_half_like_v<T>;  // as every 2-byte path: see softmax_exp
  extern __shared__ float4 softmax_long_smem[];
  P* buf = reinterpret_cast<P*>(softmax_long_smem);
  __shared__ float2 part[2];  // this block's (max, sum) of rows with even / odd iteration
  auto cluster = cooperative_groups::this_cluster();
  const unsigned rank = cluster.block_rank();
  const int64_t begin = int64_t{rank} * chunk;
  const int64_t count = begin < cols ? (cols - begin < chunk ? cols - begin : chunk) : 0;
  const int packs = static_cast<int>(count / N);  // packs this block holds (< 2^31)
  const int lane = threadIdx.x % kWarpSize;
  int parity = 0;

  for (int64_t row = blockIdx.x / Cluster; row < rows; row += gridDim.x / Cluster) {
    const P* row_in = reinterpret_cast<const P*>(in + row * cols + begin);
    T* row_out = out + row * cols + begin;
    float m = -INFINITY, s = 0.f;  // this thread's running max and sum of exp(x - m)
    for (int i0 = threadIdx.x; i0 < packs; i0 += kU * Block) {
      P raw[kU];  // kU 16-byte loads in flight before any is used
      const int left = (packs - i0 + Block - 1) / Block;
      const int valid = left < kU ? left : kU;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (u < valid) raw[u] = row_in[i0 + u * Block];
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (u < valid) buf[i0 + u * Block] = raw[u];
      }
      softmax_online_update<T, N>(raw, valid, m, s);
    }
    // the block's max and sum of exp(x - max), then the cluster's (in every thread)
    const float bm = block_all_reduce<Block>(m, Max{});
    float bs = (m == -INFINITY) ? 0.f : s * softmax_exp<kFast>(m - bm);
    bs = block_all_reduce<Block>(bs, Sum{});
    if (threadIdx.x == 0) part[parity] = make_float2(bm, bs);
    // Release / acquire of every block's part[parity]. part[parity] is written again two
    // iterations later, after this block passed the next barrier, i.e. after every block
    // has read this iteration's values.
    cluster.sync();
    // lane l of every warp reads rank l % Cluster; a butterfly over Cluster lanes (the
    // same bits in every warp of every block of the cluster)
    const float2 p = *cluster.map_shared_rank(&part[parity], lane % Cluster);
    const float gm = warp_all_reduce<Cluster>(p.x, Max{});
    const float gs = warp_all_reduce<Cluster>(
        p.x == -INFINITY ? 0.f : p.y * softmax_exp<kFast>(p.x - gm), Sum{});
    parity ^= 1;
    const float inv = 1.f / gs;
    const float log_s = logf(gs);
#pragma unroll 2
    for (int i = threadIdx.x; i < packs; i += Block) {
      float x[N];
      softmax_raw_to_floats<T>(buf[i], x);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        if constexpr (A == SoftmaxAlgo::kSoftmax) {
          x[j] = softmax_exp<kFast>(x[j] - gm) * inv;
        } else {
          x[j] = (x[j] - gm) - log_s;
        }
      }
      softmax_store_floats<N>(row_out, i, x);
    }
  }
  // no block may exit while another still reads its part[]
  cluster.sync();
#endif
}

// ---------------------------------------------------------------------------------------
// One block per row, any length: an online max and rescaled sum in one pass over the
// input (per pack: new max, rescale the running sum once), then a second pass writes.
template <typename T, SoftmaxAlgo A, int N, int Block>
__global__ void __launch_bounds__(Block)
    softmax_online_kernel(const T* in, T* out, int64_t rows, int64_t cols) {
  const int64_t packs = cols / N;
  constexpr bool kFast = is_half_like_v<T>;  // as every 2-byte path: see softmax_exp
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* row_in = in + row * cols;
    T* row_out = out + row * cols;
    float m = -INFINITY, s = 0.f;  // running max and sum of exp(x - m) of this thread
    for (int64_t i0 = threadIdx.x; i0 < packs; i0 += kSoftmaxUnroll<T, Block> * Block) {
      Pack<T, N> raw[kSoftmaxUnroll<T, Block>];  // raw packs: 4 registers each, converted on use
#pragma unroll
      for (int u = 0; u < kSoftmaxUnroll<T, Block>; ++u) {
        if (i0 + u * Block < packs) raw[u] = load_pack<N>(row_in, i0 + u * Block);
      }
#pragma unroll
      for (int u = 0; u < kSoftmaxUnroll<T, Block>; ++u) {
        if (i0 + u * Block >= packs) break;
        float x[N];
        softmax_to_floats<N>(raw[u], x);
        float pm = x[0];
#pragma unroll
        for (int j = 1; j < N; ++j)
          pm = Max{}(pm, x[j]);
        const float nm = Max{}(m, pm);
        if (nm != -INFINITY) {              // all -inf so far: nothing to add yet
          s *= softmax_exp<kFast>(m - nm);  // m = -inf gives 0; a NaN max makes s NaN
#pragma unroll
          for (int j = 0; j < N; ++j)
            s += softmax_exp<kFast>(x[j] - nm);
          m = nm;
        }
      }
    }
    const float gm = block_all_reduce<Block>(m, Max{});
    s = (m == -INFINITY) ? 0.f : s * softmax_exp<kFast>(m - gm);
    s = block_all_reduce<Block>(s, Sum{});
    // every thread holds the row max gm and the row sum s of exp(x - gm)
    const float inv = 1.f / s;
    const float log_s = logf(s);
    for (int64_t i0 = threadIdx.x; i0 < packs; i0 += kSoftmaxUnroll<T, Block> * Block) {
      Pack<T, N> raw[kSoftmaxUnroll<T, Block>];  // raw packs: 4 registers each, converted on use
#pragma unroll
      for (int u = 0; u < kSoftmaxUnroll<T, Block>; ++u) {
        if (i0 + u * Block < packs) raw[u] = load_pack<N>(row_in, i0 + u * Block);
      }
#pragma unroll
      for (int u = 0; u < kSoftmaxUnroll<T, Block>; ++u) {
        if (i0 + u * Block >= packs) break;
        float x[N];
        softmax_to_floats<N>(raw[u], x);
#pragma unroll
        for (int j = 0; j < N; ++j) {
          if constexpr (A == SoftmaxAlgo::kSoftmax) {
            x[j] = softmax_exp<kFast>(x[j] - gm) * inv;
          } else {
            x[j] = (x[j] - gm) - log_s;
          }
        }
        softmax_store_floats<N>(row_out, i0 + u * Block, x);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Launchers.

template <typename T, SoftmaxAlgo A, int N>
cudaError_t softmax_launch_online(const T* in, T* out, int64_t rows, int64_t cols,
                                  cudaStream_t stream) {
  constexpr int kBlock = 1024;
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(rows * kBlock, kBlock, &grid));
  softmax_online_kernel<T, A, N, kBlock><<<grid, kBlock, 0, stream>>>(in, out, rows, cols);
  return cudaGetLastError();
}

// Clusters of `kernel` (with `config`) resident at once on the current device, cached
// per (device, kernel, smem); 0 when none fits or the query fails (its error is cleared:
// the caller falls back).
inline cudaError_t softmax_active_clusters(const void* kernel, const cudaLaunchConfig_t& config,
                                           int* out) {
  static std::mutex mu;
  static std::map<std::tuple<int, const void*, size_t>, int> cache;
  int device = 0;
  KERNELKIT_RETURN_IF_ERROR(cudaGetDevice(&device));
  const auto key = std::make_tuple(device, kernel, config.dynamicSmemBytes);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key);
    if (it != cache.end()) {
      *out = it->second;
      return cudaSuccess;
    }
  }
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    cudaGetLastError();
    clusters = 0;
  }
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = clusters;
  *out = clusters;
  return cudaSuccess;
}

// A cluster of Cluster blocks of Block threads per row, chunk = cols / Cluster rounded up
// to whole packs. *launched = false (and nothing launched) when the chunk does not fit or
// no such cluster can be resident. The grid is at most the clusters resident at once
// (and at most max_clusters when > 0: the tests use it to make the row loop wrap).
template <typename T, SoftmaxAlgo A, int N, int Block, int Cluster>
cudaError_t softmax_launch_cluster(const T* in, T* out, int64_t rows, int64_t cols,
                                   cudaStream_t stream, bool* launched, int max_clusters = 0) {
  *launched = false;
  const int64_t chunk = ceil_div<int64_t>(ceil_div<int64_t>(cols, Cluster), N) * N;
  const int64_t smem = chunk * int64_t{sizeof(T)};
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  if (d.cc_major < 9 || smem > int64_t{d.smem_per_block_optin} - kSoftmaxStaticSmemReserveLong)
    return cudaSuccess;
  auto kernel = softmax_cluster_kernel<T, A, N, Block, Cluster>;
  // once per device: room for the largest chunk this launcher accepts; the largest
  // shared-memory carveout, so that 3 chunks of 64 KiB fit per SM (L1 is of no use here:
  // every byte is read once); the non-portable cluster of 16. A failure means no cluster
  // (the caller falls back).
  const cudaError_t setup = once_per_kernel(reinterpret_cast<const void*>(kernel), [&] {
    KERNELKIT_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        d.smem_per_block_optin - static_cast<int>(kSoftmaxStaticSmemReserveLong)));
    KERNELKIT_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    if constexpr (Cluster > 8)
      KERNELKIT_RETURN_IF_ERROR(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    return cudaSuccess;
  });
  if (setup != cudaSuccess) {
    cudaGetLastError();
    return cudaSuccess;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(Cluster);
  config.blockDim = dim3(Block);
  config.dynamicSmemBytes = static_cast<size_t>(smem);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = Cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  int clusters = 0;
  KERNELKIT_RETURN_IF_ERROR(
      softmax_active_clusters(reinterpret_cast<const void*>(kernel), config, &clusters));
  if (clusters < 1) return cudaSuccess;
  // as few rounds of rows as the resident clusters allow, the rows spread evenly over
  // them (256 rows on 48 resident clusters: 43 clusters of 6 rows, not 16 of 6 and 32 of 5)
  const int64_t rounds = ceil_div<int64_t>(rows, clusters);
  int64_t grid_clusters = ceil_div<int64_t>(rows, rounds);
  if (max_clusters > 0 && grid_clusters > max_clusters) grid_clusters = max_clusters;
  config.gridDim = dim3(static_cast<unsigned>(grid_clusters * Cluster));
  *launched = true;
  KERNELKIT_RETURN_IF_ERROR(cudaLaunchKernelEx(&config, kernel, in, out, rows, cols, chunk));
  return cudaGetLastError();
}

// Long rows (row as float > 64 KiB): the smallest cluster whose chunk is at most 64 KiB
// (3 blocks of 512 threads per SM), else 16 blocks with a bigger chunk; 16 falls back to
// 8 where it cannot be resident; without 16-byte packs, below sm_90, or when no cluster
// fits, the online kernel (reads twice).
template <typename T, SoftmaxAlgo A, int N>
cudaError_t softmax_launch_long(const T* in, T* out, int64_t rows, int64_t cols,
                                cudaStream_t stream) {
  if constexpr (N > 1) {
    constexpr int kB = kSoftmaxClusterBlock;
    const int64_t row_bytes = cols * int64_t{sizeof(T)};
    int cluster = 2;
    while (cluster < kSoftmaxMaxClusterSize &&
           ceil_div<int64_t>(row_bytes, cluster) > kSoftmaxClusterChunkBytes)
      cluster *= 2;
    bool launched = false;
    cudaError_t err = cudaSuccess;
    if (cluster == 2) {
      err = softmax_launch_cluster<T, A, N, kB, 2>(in, out, rows, cols, stream, &launched);
    } else if (cluster == 4) {
      err = softmax_launch_cluster<T, A, N, kB, 4>(in, out, rows, cols, stream, &launched);
    } else if (cluster == 8) {
      err = softmax_launch_cluster<T, A, N, kB, 8>(in, out, rows, cols, stream, &launched);
    } else {
      err = softmax_launch_cluster<T, A, N, kB, 16>(in, out, rows, cols, stream, &launched);
      if (err == cudaSuccess && !launched)
        err = softmax_launch_cluster<T, A, N, kB, 8>(in, out, rows, cols, stream, &launched);
    }
    if (err != cudaSuccess || launched) return err;
  }
  return softmax_launch_online<T, A, N>(in, out, rows, cols, stream);
}

}  // namespace detail
}  // namespace kernelkit
