// SPDX-License-Identifier: Apache-2.0
// gemv ladder, step 2: one warp per row with float4 loads. Each lane reads 16 bytes of A
// and of x per access (LDG.128), so a warp moves 512 bytes per instruction and needs a
// quarter of the load instructions of step 1. Needs A, x 16-byte aligned and lda % 4 ==
// 0 (otherwise cudaErrorInvalidValue); n need not be a multiple of 4 (the tail is read
// by single floats). BlasOp::N only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/epilogue.cuh"
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
    if (lane == 0) y[row] = axpby(alpha, dot, beta, y + row);
  }
}
}  // namespace detail

// True when v2 can run on these pointers (16-byte aligned A and x, lda % 4 == 0).
inline bool v2_warp_per_row_float4_supports(const float* A, int64_t lda, const float* x) {
  return pack_size_for(A, x) == 4 && lda % 4 == 0;
}

// Preconditions as kernelkit::gemv with BlasOp::N (gemv_args_ok), plus
// v2_warp_per_row_float4_supports; alpha == 0 reads neither A nor x.
[[nodiscard]] inline cudaError_t v2_warp_per_row_float4(int64_t m, int64_t n, float alpha,
                                                        const float* A, int64_t lda, const float* x,
                                                        float beta, float* y,
                                                        cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(gemv_args_ok(BlasOp::N, m, n, alpha, A, lda, x, y));
  KERNELKIT_REQUIRE(v2_warp_per_row_float4_supports(A, lda, x));
  if (m == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  constexpr int kBlock = 256;
  const LaunchShape shape{dim3(grid_size_for(m * kWarpSize, kBlock, d)), dim3(kBlock)};
  return launch(detail::v2_warp_per_row_float4_kernel<kBlock>, shape, stream, m,
                alpha == 0.f ? int64_t{0} : n, alpha, A, lda, x, beta, y);
}

}  // namespace kernelkit::ladder::gemv
