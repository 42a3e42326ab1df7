// SPDX-License-Identifier: Apache-2.0
/// @file
/// sgemm: C = alpha * op(A) * op(B) + beta * C, fp32 FFMA, row-major.
///
/// sgemm_args_ok (the checks, shared with the ladder), launch_sgemm (the one place a plan
/// becomes template arguments: it walks kSgemmConfigs), the public sgemm overloads. The plan
/// and the table: sgemm_plan.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>

#include "kernelkit/blas/blas.cuh"
#include "kernelkit/blas/detail/sgemm_kernels.cuh"
#include "kernelkit/blas/detail/sgemm_skinny_kernels.cuh"
#include "kernelkit/blas/sgemm_plan.cuh"
#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/transpose/transpose.cuh"

namespace kernelkit {

/// Argument checks shared by the library and the ladder: known ops; sizes >= 0; leading
/// dimensions >= the stored row length and >= 1; no int64 overflow in any byte offset; non-null
/// pointers where something is read (A, B when m, n, k > 0) or written (C when m, n > 0), each
/// aligned to a float; C overlapping neither A nor B (byte ranges spanned by the rows).
inline bool sgemm_args_ok(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k, const float* A,
                          int64_t lda, const float* B, int64_t ldb, const float* C, int64_t ldc) {
  if (op_a != BlasOp::N && op_a != BlasOp::T) return false;
  if (op_b != BlasOp::N && op_b != BlasOp::T) return false;
  if (m < 0 || n < 0 || k < 0) return false;
  const int64_t a_rows = op_a == BlasOp::N ? m : k, a_cols = op_a == BlasOp::N ? k : m;
  const int64_t b_rows = op_b == BlasOp::N ? k : n, b_cols = op_b == BlasOp::N ? n : k;
  if (lda < 1 || lda < a_cols || ldb < 1 || ldb < b_cols || ldc < 1 || ldc < n) return false;
  constexpr int64_t kMaxElems = std::numeric_limits<int64_t>::max() / 4;  // bytes fit
  if (a_rows > 0 && lda > kMaxElems / a_rows) return false;
  if (b_rows > 0 && ldb > kMaxElems / b_rows) return false;
  if (m > 0 && ldc > kMaxElems / m) return false;
  const bool writes = m > 0 && n > 0, reads = writes && k > 0;
  if (writes && (C == nullptr || !is_element_aligned(C))) return false;
  if (reads && (A == nullptr || B == nullptr)) return false;
  if (reads && (!is_element_aligned(A) || !is_element_aligned(B))) return false;
  if (reads) {
    const int64_t c_bytes = matrix_span_bytes(m, n, ldc, 4);
    if (ranges_overlap(C, c_bytes, A, matrix_span_bytes(a_rows, a_cols, lda, 4))) return false;
    if (ranges_overlap(C, c_bytes, B, matrix_span_bytes(b_rows, b_cols, ldb, 4))) return false;
  }
  return true;
}

namespace detail {

// The caller's workspace rounded up to 16 bytes, and the bytes left after that.
struct SgemmWorkspace {
  float* ptr = nullptr;
  size_t bytes = 0;
};
inline SgemmWorkspace sgemm_workspace(void* workspace, size_t workspace_bytes) {
  if (workspace == nullptr) return {};
  const auto addr = reinterpret_cast<std::uintptr_t>(workspace);
  const size_t pad = (16 - addr % 16) % 16;
  if (workspace_bytes <= pad) return {};
  return {reinterpret_cast<float*>(addr + pad), workspace_bytes - pad};
}

// The tiled kernel of entry <Tile, LoadA, LoadB, TransC> (after the pack of op(B), when the plan
// has one), then the combine of split partials (when it splits).
template <SgemmTile Tile, SgemmLoad LoadA, SgemmLoad LoadB, bool TransC>
cudaError_t launch_sgemm_tiled(const SgemmPlan& plan, float alpha, const float* A, int64_t lda,
                               const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                               int64_t m, int64_t n, int64_t k, float* ws, cudaStream_t stream) {
  const SgemmTiledPlan& t = plan.tiled;
  if (t.pack_b) {
    // op(B) = B^T (B: n x k, ldb == k) into the workspace as k x n, ld n; the split parts
    // follow it (same stream: the kernel below starts after the transpose has finished)
    KERNELKIT_RETURN_IF_ERROR(launch_transpose(t.pack, B, ws, n, k, stream));
    B = ws, ldb = n;
    ws += t.pack_bytes / sizeof(float);
  }
  SgemmParams p{};
  p.m = m, p.n = n, p.k = k;
  p.alpha = alpha, p.beta = beta;
  p.A = A, p.lda = lda, p.B = B, p.ldb = ldb, p.C = C, p.ldc = ldc;
  if (TransC) {  // C^T = op(B)^T op(A)^T: the kernel's A is B, its B is A
    p.m = n, p.n = m;
    p.A = B, p.lda = ldb, p.B = A, p.ldb = lda;
  }
  p.c_vec4 = t.c_vec4;
  p.stages = t.stages;
  p.tiles_m = t.tiles_m, p.tiles_n = t.tiles_n;
  p.dp_tiles = t.dp_tiles, p.split_tiles = t.split_tiles, p.splits = t.splits;
  p.split_k_tiles = t.split_k_tiles;
  p.ws = ws;
  // C or C^T is the entry's (a template argument: a run-time flag slowed the kernels that
  // compute C, detail/sgemm_kernels)
  const auto kernel = sgemm_kernel<Tile, LoadA, LoadB, TransC>;
  KERNELKIT_RETURN_IF_ERROR(once_per_kernel(reinterpret_cast<const void*>(kernel), [&] {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, t.smem_optin);
  }));
  const cudaError_t err = launch(kernel, plan.shape, stream, p);
  if (err != cudaSuccess || t.splits <= 1) return err;
  const SgemmTileShape s = sgemm_tile_shape(t.tile);
  SgemmReduceParams r{};
  r.m = m, r.n = n, r.alpha = alpha, r.beta = beta, r.C = C, r.ldc = ldc, r.c_vec4 = t.c_vec4;
  r.c_trans = TransC;
  r.ws = ws, r.splits = t.splits, r.bm = s.bm, r.bn = s.bn;
  r.tiles_m = t.tiles_m, r.tiles_n = t.tiles_n, r.dp_tiles = t.dp_tiles;
  r.split_tiles = t.split_tiles;
  return launch(sgemm_split_reduce_kernel<>, plan.reduce_shape, stream, r);
}

// The skinny kernel of entry <Rows, Vec, Mode, AlongK>, then the combine of split partials
// (when it splits).
template <int Rows, int Vec, SgemmSkinnyMode Mode, bool AlongK>
cudaError_t launch_sgemm_skinny(const SgemmPlan& plan, float alpha, const float* A, const float* B,
                                float beta, float* C, int64_t k, float* ws, cudaStream_t stream) {
  const SgemmSkinnyPlan& s = plan.skinny;
  SgemmSkinnyParams p{};
  p.m = s.m, p.n = s.n, p.k = k;
  p.alpha = alpha, p.beta = beta;
  p.A = s.transposed ? B : A;  // A' = op(B)^T when C' = C^T
  p.a_si = s.a_si, p.a_sp = s.a_sp;
  p.B = s.transposed ? A : B;
  p.ldb = s.ldb;
  p.C = C, p.c_si = s.c_si, p.c_sj = s.c_sj;
  p.k_per_split = s.k_per_split;
  p.ws = ws;
  cudaError_t err;
  if constexpr (Mode == SgemmSkinnyMode::kNContig) {
    err = launch(sgemm_skinny_n_kernel<Rows, Vec, AlongK>, plan.shape, stream, p);
  } else {
    err = launch(sgemm_skinny_k_kernel<Rows, Vec>, plan.shape, stream, p);
  }
  if (err != cudaSuccess || s.splits <= 1) return err;
  SgemmSkinnyReduceParams r{};
  r.m = s.m, r.n = s.n, r.alpha = alpha, r.beta = beta;
  r.C = C, r.c_si = s.c_si, r.c_sj = s.c_sj, r.ws = ws, r.splits = s.splits;
  return launch(sgemm_skinny_reduce_kernel<>, plan.reduce_shape, stream, r);
}

}  // namespace detail

/// Launches plan (made by plan_sgemm for these arguments, k the inner size it was made with)
/// on stream. workspace: 16-byte aligned, at least plan.workspace_used bytes. The one place a
/// plan's run-time choices become template arguments: those of its entry of kSgemmConfigs
/// (sgemm_config; any other plan answers cudaErrorInvalidValue).
template <int = 0>
cudaError_t launch_sgemm(const SgemmPlan& plan, int64_t m, int64_t n, int64_t k, float alpha,
                         const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                         float* C, int64_t ldc, void* workspace, cudaStream_t stream) {
  using namespace detail;
  float* const ws = static_cast<float*>(workspace);
  return dispatch_table<kSgemmConfigs, 0, std::size(kSgemmConfigs)>(
      sgemm_config(plan), [&](auto i) -> cudaError_t {
        constexpr SgemmConfig c = kSgemmConfigs[decltype(i)::value];
        if constexpr (c.path == SgemmPath::kNone) {
          return cudaSuccess;
        } else if constexpr (c.path == SgemmPath::kScale) {
          if (beta == 1.f) return cudaSuccess;  // C = 1 * C
          return launch(sgemm_scale_kernel<>, plan.shape, stream, m, n, beta, C, ldc);
        } else if constexpr (c.path == SgemmPath::kGemv) {
          const SgemmGemvPlan& g = plan.gemv;
          void* const gws = g.workspace_bytes > 0 ? workspace : nullptr;
          return g.matrix_is_a ? gemv(g.op, g.rows, g.cols, alpha, A, lda, B, beta, C, gws,
                                      g.workspace_bytes, stream)
                               : gemv(g.op, g.rows, g.cols, alpha, B, ldb, A, beta, C, gws,
                                      g.workspace_bytes, stream);
        } else if constexpr (c.path == SgemmPath::kSkinny) {
          return launch_sgemm_skinny<c.rows, c.vec, c.mode, c.a_along_k>(plan, alpha, A, B, beta, C,
                                                                         k, ws, stream);
        } else {
          return launch_sgemm_tiled<c.tile, c.load_a, c.load_b, c.trans_c>(
              plan, alpha, A, lda, B, ldb, beta, C, ldc, m, n, k, ws, stream);
        }
      });
}

/// C = alpha * op(A) * op(B) + beta * C, all row-major; C is m x n, op(A) m x k, op(B) k x n.
/// A is stored m x k (BlasOp::N, lda >= k) or k x m (BlasOp::T, lda >= m); B is k x n
/// (BlasOp::N, ldb >= n) or n x k (BlasOp::T, ldb >= k); ldc >= n; every leading dimension
/// >= 1. Any alignment of a float. beta == 0: C is only written (NaN in C does not
/// propagate); alpha == 0 or k == 0: C = beta * C and A, B are not read. C must not overlap A
/// or B. Accumulation is fp32 FFMA; the same call (shape, pointers' alignment, workspace
/// size, device) gives the same bits every time: split parts of K are added in a fixed order.
/// workspace: optional scratch of workspace_bytes bytes (any alignment, any contents; it must
/// not overlap A, B or C): with sgemm_workspace_bytes(op_a, op_b, m, n, k) bytes (or
/// sgemm_workspace_bytes(m, n, k), enough for any ops), K may be split where the tiles alone
/// cannot fill the GPU (small M x N, long K; the last partial wave of tiles), and with
/// op_b == T, B may first be transposed into the workspace (when ldb == k, n % 4 == 0, 4 k n
/// <= 64 MiB, and the product is big enough to pay for it: the kernel then reads B with
/// 16-byte copies instead of 4-byte ones along K); with less, only what fits; the form without
/// one never splits or packs. Bad arguments:
/// cudaErrorInvalidValue before any launch, nothing written. m == 0 or n == 0: nothing to do.
/// @param op_a BlasOp::N (A stored m x k) or BlasOp::T (A stored k x m)
/// @param op_b BlasOp::N (B stored k x n) or BlasOp::T (B stored n x k)
/// @param m rows of C (>= 0)
/// @param n columns of C (>= 0)
/// @param k the inner dimension (>= 0)
/// @param alpha scale of op(A) op(B); 0: A and B are not read
/// @param A device pointer to A, leading dimension lda
/// @param lda floats from one row of A to the next
/// @param B device pointer to B, leading dimension ldb
/// @param ldb floats from one row of B to the next
/// @param beta scale of C; 0: C is only written
/// @param C device pointer to C (m x n, leading dimension ldc), read and written
/// @param ldc floats from one row of C to the next (>= n)
/// @param workspace optional device scratch (see above), or null with workspace_bytes 0
/// @param workspace_bytes bytes of workspace
/// @param stream the stream the work is enqueued on (nullptr: the default stream)
/// @return cudaSuccess once the work is enqueued on stream; cudaErrorInvalidValue, before any
/// launch and with nothing written, when the arguments are bad (sgemm_args_ok, a workspace that is
/// null with a size or overlaps A, B or C); otherwise the error of reading the
/// device's facts or of the launch.
template <int = 0>
[[nodiscard]] cudaError_t sgemm(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float* A, int64_t lda, const float* B,
                                int64_t ldb, float beta, float* C, int64_t ldc, void* workspace,
                                size_t workspace_bytes, cudaStream_t stream = nullptr) {
  KERNELKIT_REQUIRE(sgemm_args_ok(op_a, op_b, m, n, k, A, lda, B, ldb, C, ldc));
  KERNELKIT_REQUIRE(workspace != nullptr || workspace_bytes == 0);
  KERNELKIT_REQUIRE(workspace_bytes <= size_t{std::numeric_limits<int64_t>::max()});
  if (workspace_bytes > 0 && m > 0 && n > 0) {
    const auto ws_bytes = static_cast<int64_t>(workspace_bytes);
    KERNELKIT_REQUIRE(!ranges_overlap(workspace, ws_bytes, C, matrix_span_bytes(m, n, ldc, 4)));
    if (k > 0) {
      const int64_t a_rows = op_a == BlasOp::N ? m : k, a_cols = op_a == BlasOp::N ? k : m;
      const int64_t b_rows = op_b == BlasOp::N ? k : n, b_cols = op_b == BlasOp::N ? n : k;
      KERNELKIT_REQUIRE(
          !ranges_overlap(workspace, ws_bytes, A, matrix_span_bytes(a_rows, a_cols, lda, 4)));
      KERNELKIT_REQUIRE(
          !ranges_overlap(workspace, ws_bytes, B, matrix_span_bytes(b_rows, b_cols, ldb, 4)));
    }
  }
  if (m == 0 || n == 0) return cudaSuccess;
  DeviceInfo d;
  KERNELKIT_RETURN_IF_ERROR(current_device_info(&d));
  const detail::SgemmWorkspace ws = detail::sgemm_workspace(workspace, workspace_bytes);
  const int64_t k_used = alpha == 0.f ? 0 : k;  // alpha == 0: A and B are not read
  const SgemmAlignment al{alignment_of(A), alignment_of(B), alignment_of(C)};
  return plan_and_launch(
      d,
      [&](const DeviceInfo& dev) {
        return plan_sgemm(op_a, op_b, m, n, k_used, lda, ldb, ldc, al, ws.bytes, dev);
      },
      [&](const SgemmPlan& p) {
        return launch_sgemm(p, m, n, k_used, alpha, A, lda, B, ldb, beta, C, ldc, ws.ptr, stream);
      });
}

/// The same without a workspace: K is never split, B is read where it is.
template <int = 0>
[[nodiscard]] cudaError_t sgemm(BlasOp op_a, BlasOp op_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float* A, int64_t lda, const float* B,
                                int64_t ldb, float beta, float* C, int64_t ldc,
                                cudaStream_t stream = nullptr) {
  return sgemm(op_a, op_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, nullptr, 0, stream);
}

}  // namespace kernelkit
