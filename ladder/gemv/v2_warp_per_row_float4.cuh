// gemv ladder, step 2: one warp per row with float4 loads. Each lane reads 16 bytes of A
// and of x per access (LDG.128), so a warp moves 512 bytes per instruction and needs a
// quarter of the load instructions of step 1. Needs A, x 16-byte aligned and lda % 4 ==
// 0 (otherwise cudaErrorInvalidValue); n need not be a multiple of 4 (the tail is read
// by single floats). BlasOp::N only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::ladder::gemv {

namespace detail {
template <int BlockSize>
__global__ void __launch_bounds__(BlockSize)
    v2_warp_per_row_float4_kernel(int64_t m, int64_t n, float alpha, const float* A, int64_t lda,
                                  const float* x, float beta, float* y) {
  constexpr int kWarps = BlockSize / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t packs = n / 4;
  for (int64_t row = blockIdx.x * int64_t{kWarps} + threadIdx.x / kWarpSize; row < m;
       row += int64_t{gridDim.x} * kWarps) {
    const float* a = A + row * lda;
    float dot = 0.f;
    for (int64_t p = lane; p < packs; p += kWarpSize) {
      const Pack<float, 4> av = load_pack<4>(a, p);
      const Pack<float, 4> xv = load_pack<4>(x, p);
      dot += av.elem[0] * xv.elem[0] + av.elem[1] * xv.elem[1] + av.elem[2] * xv.elem[2] +
             av.elem[3] * xv.elem[3];
    }
    if (lane < n - packs * 4) dot += a[packs * 4 + lane] * x[packs * 4 + lane];
    dot = warp_reduce(dot, Sum{});
    if (lane == 0) y[row] = beta == 0.f ? alpha * dot : alpha * dot + beta * y[row];
  }
}
}  // namespace detail

// True when v2 can run on these pointers (16-byte aligned A and x, lda % 4 == 0).
inline bool v2_warp_per_row_float4_supports(const float* A, int64_t lda, const float* x) {
  return pack_size_for(A, x) == 4 && lda % 4 == 0;
}

[[nodiscard]] inline cudaError_t v2_warp_per_row_float4(int64_t m, int64_t n, float alpha,
                                                        const float* A, int64_t lda, const float* x,
                                                        float beta, float* y,
                                                        cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(m >= 0 && n >= 0 && lda >= (n > 0 ? n : 1));
  KERNELKIT_REQUIRE(m == 0 || y != nullptr);
  KERNELKIT_REQUIRE(m == 0 || n == 0 || (A != nullptr && x != nullptr));
  KERNELKIT_REQUIRE(v2_warp_per_row_float4_supports(A, lda, x));
  if (m == 0) return cudaSuccess;
  constexpr int kBlock = 256;
  int grid = 0;
  KERNELKIT_RETURN_IF_ERROR(grid_size(m * kWarpSize, kBlock, &grid));
  detail::v2_warp_per_row_float4_kernel<kBlock>
      <<<grid, kBlock, 0, stream>>>(m, n, alpha, A, lda, x, beta, y);
  return cudaGetLastError();
}

}  // namespace kernelkit::ladder::gemv
