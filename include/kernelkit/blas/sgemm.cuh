// sgemm: C = alpha * op(A) * op(B) + beta * C, fp32, row-major.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "kernelkit/blas/blas.cuh"
#include "kernelkit/blas/detail/sgemm_kernels.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"

namespace kernelkit {

namespace detail {

// Argument checks shared by the library and the ladder: sizes >= 0, leading dimensions
// >= the stored row length (and >= 1), non-null pointers where something is read or
// written, and no int64 overflow in the largest element offset.
inline bool sgemm_args_ok(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k, const float* A,
                          int64_t lda, const float* B, int64_t ldb, const float* C, int64_t ldc) {
  if (m < 0 || n < 0 || k < 0) return false;
  const int64_t a_rows = op_a == BlasOp::N ? m : k, a_cols = op_a == BlasOp::N ? k : m;
  const int64_t b_rows = op_b == BlasOp::N ? k : n, b_cols = op_b == BlasOp::N ? n : k;
  if (lda < 1 || lda < a_cols || ldb < 1 || ldb < b_cols || ldc < 1 || ldc < n) return false;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (a_rows > 0 && lda > kMax / a_rows) return false;
  if (b_rows > 0 && ldb > kMax / b_rows) return false;
  if (m > 0 && ldc > kMax / m) return false;
  if (m > 0 && n > 0 && C == nullptr) return false;
  if (m > 0 && n > 0 && k > 0 && (A == nullptr || B == nullptr)) return false;
  return true;
}

inline bool sgemm_aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Launches the BM x BN kernel for p (tiles_m/tiles_n filled in here).
// TM x TN: the thread tile (SgemmShape).
template <int BM, int BN, int Stages, SgemmLoad LoadA, SgemmLoad LoadB, int TM = 8, int TN = 8>
cudaError_t sgemm_launch_tile(SgemmParams p, cudaStream_t stream) {
  constexpr size_t kSmem = sgemm_smem_bytes<BM, BN, Stages, TM, TN>();
  auto kernel = sgemm_kernel<BM, BN, Stages, LoadA, LoadB, TM, TN>;
  KERNELKIT_RETURN_IF_ERROR(once_per_kernel(reinterpret_cast<const void*>(kernel), [&] {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(kSmem));
  }));
  p.tiles_m = (p.m + BM - 1) / BM;
  p.tiles_n = (p.n + BN - 1) / BN;
  KERNELKIT_REQUIRE(p.tiles_m <= std::numeric_limits<int>::max() / p.tiles_n);
  const unsigned blocks = static_cast<unsigned>(p.tiles_m * p.tiles_n);
  kernel<<<blocks, SgemmShape<BM, BN, TM, TN>::kThreads, kSmem, stream>>>(p);
  return cudaGetLastError();
}

inline constexpr int kSgemmStages = 4;

// Waves of `tiles` blocks at `per_sm` resident blocks per SM.
inline int64_t sgemm_waves(int64_t tiles, int per_sm, int sm_count) {
  return ceil_div<int64_t>(tiles, int64_t{per_sm} * sm_count);
}

// The one dispatch of tile shapes. Grids that fill the SMs with 128 x 128 tiles take the
// 128 x 256 tile (16 x 8 accumulators a thread, one block per SM; 4096^3 on the H100:
// 47.0 TFLOP/s against 44.2 for 128 x 128, bench/NOTES.md) unless it needs more waves:
// both cover the same area of C per wave, so the one with fewer waves wins (4095 x 4097:
// 544 big tiles are 5 waves where 1056 of 128 x 128 are 4). Smaller grids take 128 x 64
// tiles with 8 warps of 32 x 32 (8 x 4 accumulators a thread: 1024^3 is 128 such tiles,
// one a SM, and 8 warps hide the latencies 4 warps of 8 x 8 could not; 0.96x cuBLAS
// against 0.93x). Unaligned MN-contiguous operands (4-byte copies, rare) always take
// 128 x 64 with 8 x 8 a thread, to keep the number of instantiated kernels down.
template <SgemmLoad LoadA, SgemmLoad LoadB>
cudaError_t sgemm_dispatch(const SgemmParams& p, cudaStream_t stream) {
  constexpr bool kUnaligned = LoadA == SgemmLoad::kMnScalar || LoadB == SgemmLoad::kMnScalar;
  if constexpr (!kUnaligned) {
    DeviceInfo info;
    KERNELKIT_RETURN_IF_ERROR(current_device_info(&info));
    const int64_t tiles_m = ceil_div<int64_t>(p.m, 128);
    const int64_t tiles_128 = tiles_m * ceil_div<int64_t>(p.n, 128);
    if (tiles_128 >= info.sm_count) {
      const int64_t tiles_256 = tiles_m * ceil_div<int64_t>(p.n, 256);
      if (sgemm_waves(tiles_256, SgemmShape<128, 256, 16, 8>::kMinBlocks, info.sm_count) <=
          sgemm_waves(tiles_128, SgemmShape<128, 128>::kMinBlocks, info.sm_count))
        return sgemm_launch_tile<128, 256, kSgemmStages, LoadA, LoadB, 16, 8>(p, stream);
      return sgemm_launch_tile<128, 128, kSgemmStages, LoadA, LoadB>(p, stream);
    }
    return sgemm_launch_tile<128, 64, kSgemmStages, LoadA, LoadB, 8, 4>(p, stream);
  }
  return sgemm_launch_tile<128, 64, kSgemmStages, LoadA, LoadB>(p, stream);
}

// BlasOp and alignment -> load modes (runtime -> template, in one place).
template <SgemmLoad LoadA>
cudaError_t sgemm_dispatch_b(BlasOp op_b, bool b_vec4, const SgemmParams& p, cudaStream_t stream) {
  if (op_b == BlasOp::T) return sgemm_dispatch<LoadA, SgemmLoad::kKContig>(p, stream);
  return b_vec4 ? sgemm_dispatch<LoadA, SgemmLoad::kMnVec4>(p, stream)
                : sgemm_dispatch<LoadA, SgemmLoad::kMnScalar>(p, stream);
}

inline SgemmParams sgemm_params(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float* A, int64_t lda, const float* B,
                                int64_t ldb, float beta, float* C, int64_t ldc) {
  SgemmParams p{};
  p.m = m, p.n = n, p.k = alpha == 0.f ? 0 : k;  // alpha == 0: C = beta * C, A/B unread
  p.alpha = alpha, p.beta = beta;
  p.A = A, p.lda = lda, p.B = B, p.ldb = ldb, p.C = C, p.ldc = ldc;
  p.c_vec4 = ldc % 4 == 0 && sgemm_aligned16(C);
  return p;
}

}  // namespace detail

// C = alpha * op(A) * op(B) + beta * C, all row-major; C is m x n, op(A) m x k, op(B) k x n.
// A is stored m x k (BlasOp::N, lda >= k) or k x m (BlasOp::T, lda >= m); B is k x n (BlasOp::N,
// ldb >= n) or n x k (BlasOp::T, ldb >= k); ldc >= n; every leading dimension >= 1. Any
// alignment. beta == 0: C is only written (NaN in C does not propagate); alpha == 0 or
// k == 0: C = beta * C and A, B are not read. C must not alias A or B. Accumulation is
// fp32 FFMA in a fixed order (deterministic). Bad arguments: cudaErrorInvalidValue before
// any launch. m == 0 or n == 0: nothing to do.
template <int = 0>
[[nodiscard]] cudaError_t sgemm(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float* A, int64_t lda, const float* B,
                                int64_t ldb, float beta, float* C, int64_t ldc,
                                cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(detail::sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  if (m == 0 || n == 0) return cudaSuccess;
  const detail::SgemmParams p =
      detail::sgemm_params(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  // K-contiguous sources: A with BlasOp::N, B with BlasOp::T; the others are copied 16 bytes at a
  // time when their leading dimension and base pointer allow it
  const bool a_vec4 = lda % 4 == 0 && detail::sgemm_aligned16(A);
  const bool b_vec4 = ldb % 4 == 0 && detail::sgemm_aligned16(B);
  using detail::SgemmLoad;
  if (op_a == BlasOp::N)
    return detail::sgemm_dispatch_b<SgemmLoad::kKContig>(op_b, b_vec4, p, stream);
  if (a_vec4) return detail::sgemm_dispatch_b<SgemmLoad::kMnVec4>(op_b, b_vec4, p, stream);
  return detail::sgemm_dispatch_b<SgemmLoad::kMnScalar>(op_b, b_vec4, p, stream);
}

}  // namespace kernelkit
