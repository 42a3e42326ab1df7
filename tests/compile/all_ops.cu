// SPDX-License-Identifier: Apache-2.0
// Compile-only: one instantiation of every public op for every type it supports. Built once
// per architecture in CI (kernelkit_compile_sm<arch> targets, warnings are errors), so every
// GPU from Turing up is known to build; nothing here runs. Every op instantiates exactly its
// configuration table: softmax and transpose (kSoftmaxConfigs, kTransposeConfigs: each
// launcher walks its element size's entries; log_softmax the softmax table again, the ld
// overloads the same kernels; the backward ops walk kSoftmaxRowsConfigs; softmax_inner and its
// log and backward forms kSoftmaxInnerConfigs); reduce and
// row_reduce (kReduceConfigs, kRowReduceConfigs: the element type's pack's entries, for each
// accumulator and operator; row_reduce's kBlock, kCluster and kSplit entries are
// reduce_split_kernel instances; the strided-row overloads launch the same kernels);
// col_reduce (kColReduceConfigs: the element size's entries, each kSecondKernel entry with its
// combine over the partials); gemv (kGemvConfigs: each entry's main kernel and combine
// kernel); sgemm (kSgemmConfigs: each entry's kernel, the combines of split partials and,
// through its pack of op(B), float transpose's entries); rms_norm, layer_norm and add_rms_norm
// (kNormConfigs: each element size's entries, float and same-type weights), rms_norm_backward,
// layer_norm_backward and add_rms_norm_backward (kNormBackwardConfigs for each kind, and the
// partials' reduction); cross_entropy and cross_entropy_backward (kCrossEntropyConfigs: each
// direction and element size's entries, with the finishing kernel, for int32 and int64
// targets); elementwise
// (kEwConfigs: the entries each call's types and functor allow).
// softmax, the norms and cross_entropy take __half only where KERNELKIT_ALL_OPS_EVERY_TYPE is
// 1 (tests/compile/CMakeLists.txt: sm_90): their __half kernels are their bf16 kernels with
// another conversion (bf16's the costlier in registers, software-rounded on sm_75); those
// three are two thirds of this file's compile time. The other ops keep __half everywhere
// (elementwise's __half functors use half2 arithmetic of their own).
#include <kernelkit/kernelkit.cuh>

namespace kk = kernelkit;

namespace {

template <typename T>
void softmax_ops(T* p, cudaStream_t s) {
  (void)kk::softmax(p, p, 1, 1, s);
  (void)kk::log_softmax(p, p, 1, 1, s);
  // the ld overloads: the same kernels (kSoftmaxConfigs); the backward row family
  // (kSoftmaxRowsConfigs) through the backward ops
  (void)kk::softmax(p, 2, p, 2, 1, 1, s);
  (void)kk::log_softmax(p, 2, p, 2, 1, 1, s);
  (void)kk::softmax_backward(p, p, p, 1, 1, s);
  (void)kk::log_softmax_backward(p, 2, p, 2, p, 2, 1, 1, s);
  // softmax over the middle axis (kSoftmaxInnerConfigs for each of the four kinds)
  (void)kk::softmax_inner(p, p, 1, 2, 2, s);
  (void)kk::log_softmax_inner(p, p, 1, 2, 2, s);
  (void)kk::softmax_inner_backward(p, p, p, 1, 2, 2, s);
  (void)kk::log_softmax_inner_backward(p, p, p, 1, 2, 2, s);
}

// Each call walks its direction and element size's entries of kCrossEntropyConfigs (the
// forward also the finishing kernel; the ld overloads launch the same kernels).
template <typename T, typename Tgt>
void cross_entropy_ops(T* p, Tgt* t, float* f, cudaStream_t s) {
  (void)kk::cross_entropy(p, t, 1, 1, -100, 0.f, kk::LossReduction::kMean, f, f, f, 0, s);
  (void)kk::cross_entropy_backward(p, t, f, f, 1, 1, -100, 0.f, kk::LossReduction::kMean, p, s);
}

template <typename T, typename Acc>
void reduce_ops(const T* in, Acc* out, void* ws, cudaStream_t s) {
  (void)kk::reduce(in, 1, out, kk::ReduceOp::kSum, Acc(0), ws, 0, s);
  (void)kk::row_sum(in, 1, 1, out, s);
  (void)kk::row_max(in, 1, 1, out, s);
  (void)kk::row_min(in, 1, 1, out, s);
  (void)kk::row_reduce(in, 1, 1, out, kk::ReduceOp::kSum, Acc(0), s);
  (void)kk::sum(in, 1, out, ws, 0, s);
  (void)kk::max(in, 1, out, ws, 0, s);
  (void)kk::min(in, 1, out, ws, 0, s);
  (void)kk::row_sum(in, 1, 1, out, ws, 0, s);
  (void)kk::row_max(in, 1, 1, out, ws, 0, s);
  (void)kk::row_min(in, 1, 1, out, ws, 0, s);
  (void)kk::row_reduce(in, 1, 1, out, kk::ReduceOp::kMax, Acc(0), ws, 0, s);
  (void)kk::row_sum(in, 1, 1, 2, out, ws, 0, s);
  (void)kk::row_reduce(in, 1, 1, 2, out, kk::ReduceOp::kMin, Acc(0), s);
  (void)kk::col_sum(in, 1, 1, 2, out, ws, 0, s);
  (void)kk::col_max(in, 1, 1, 2, out, s);
  (void)kk::col_min(in, 1, 1, 2, out, s);
  (void)kk::col_reduce(in, 1, 1, 2, out, kk::ReduceOp::kSum, Acc(0), ws, 0, s);
}

template <typename T>
void elementwise_ops(T* p, cudaStream_t s) {
  (void)kk::binary(kk::Add{}, 1, p, p, p, s);
  (void)kk::binary(kk::Mul{}, 1, p, p, p, s);
  (void)kk::unary(kk::Relu{}, 1, p, p, s);
  (void)kk::unary(kk::GeluErf{}, 1, p, p, s);
  (void)kk::unary(kk::Sigmoid{}, 1, p, p, s);
  (void)kk::ternary(kk::Fma{}, 1, p, p, p, p, s);
}

// Each call walks its element size's entries of kNormConfigs (rms_norm, layer_norm and
// add_rms_norm: the same entries for each kind), for a float weight and one of x's type.
template <typename T, typename W>
void norm_ops(T* p, W* w, float* f, cudaStream_t s) {
  (void)kk::rms_norm(p, w, p, f, 1, 1, 1e-5f, s);
  (void)kk::layer_norm(p, w, w, p, f, f, 1, 1, 1e-5f, s);
  (void)kk::add_rms_norm(p, p, w, p, p, f, 1, 1, 1e-5f, s);
  (void)kk::rms_norm_backward(p, p, w, f, p, w, 1, 1, f, 0, s);
  (void)kk::layer_norm_backward(p, p, w, f, f, p, w, w, 1, 1, f, 0, s);
  (void)kk::add_rms_norm_backward(p, p, p, w, f, p, w, 1, 1, f, 0, s);
}

template <typename T>
void transpose_op(T* p, cudaStream_t s) {
  (void)kk::transpose(p, p, 1, 1, s);
}

}  // namespace

void kernelkit_compile_all_ops(void* p, cudaStream_t s) {
  auto* f = static_cast<float*>(p);
  auto* h = static_cast<__half*>(p);
  auto* b = static_cast<__nv_bfloat16*>(p);
  auto* i32 = static_cast<int32_t*>(p);
  auto* i64 = static_cast<int64_t*>(p);
  softmax_ops(f, s);
  softmax_ops(b, s);
  norm_ops(f, f, f, s);
  norm_ops(b, f, f, s);
  norm_ops(b, b, f, s);
  cross_entropy_ops(f, i32, f, s);
  cross_entropy_ops(b, i32, f, s);
  cross_entropy_ops(f, i64, f, s);
  cross_entropy_ops(b, i64, f, s);
#if KERNELKIT_ALL_OPS_EVERY_TYPE
  softmax_ops(h, s);
  norm_ops(h, f, f, s);
  norm_ops(h, h, f, s);
  cross_entropy_ops(h, i32, f, s);
  cross_entropy_ops(h, i64, f, s);
#endif
  reduce_ops(f, f, p, s);
  reduce_ops(h, f, p, s);
  reduce_ops(b, f, p, s);
  reduce_ops(static_cast<const double*>(p), static_cast<double*>(p), p, s);
  reduce_ops(static_cast<const int32_t*>(p), static_cast<int32_t*>(p), p, s);
  reduce_ops(static_cast<const int64_t*>(p), static_cast<int64_t*>(p), p, s);
  elementwise_ops(f, s);
  elementwise_ops(h, s);
  elementwise_ops(b, s);
  (void)kk::unary(kk::Cast{}, 1, b, f, s);
  (void)kk::unary(kk::Cast{}, 1, f, h, s);
  transpose_op(static_cast<int8_t*>(p), s);
  transpose_op(h, s);
  transpose_op(f, s);
  transpose_op(static_cast<double*>(p), s);
  (void)kk::gemv(kk::BlasOp::N, 1, 1, 1.f, f, 1, f, 0.f, f, s);
  (void)kk::gemv(kk::BlasOp::T, 1, 1, 1.f, f, 1, f, 0.f, f, p, 0, s);
  (void)kk::sgemm(kk::BlasOp::N, kk::BlasOp::N, 1, 1, 1, 1.f, f, 1, f, 1, 0.f, f, 1, s);
  (void)kk::sgemm(kk::BlasOp::T, kk::BlasOp::T, 1, 1, 1, 1.f, f, 1, f, 1, 0.f, f, 1, p, 0, s);
}
