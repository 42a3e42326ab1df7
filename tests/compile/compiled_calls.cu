// SPDX-License-Identifier: Apache-2.0
// Compile-only: calls of ops that kernelkit::kernelkit_compiled instantiates, compiled with
// KERNELKIT_COMPILED defined (as linking that library does). Its PTX must hold no kernel
// (CompiledCalls.NoKernels, tests/compile/no_kernels.cmake): every call here resolves to an
// `extern template` declaration of kernelkit/extern_templates.cuh, so a declaration missing
// from that list, or one whose signature does not match the call, shows up as a kernel here.
#ifndef KERNELKIT_COMPILED
#define KERNELKIT_COMPILED
#endif
#include <kernelkit/kernelkit.cuh>

namespace kk = kernelkit;

cudaError_t kernelkit_compiled_calls(float* f, __half* h, __nv_bfloat16* b, double* d, int32_t* i,
                                     int64_t* l, void* ws, size_t ws_bytes) {
  cudaError_t e = cudaSuccess;
  const auto keep = [&e](cudaError_t r) { e = e == cudaSuccess ? r : e; };
  keep(kk::softmax(f, f, 4, 8));
  keep(kk::log_softmax(h, h, 4, 8));
  keep(kk::softmax(b, b, 4, 8));
  keep(kk::rms_norm(f, f, f, f, 4, 8, 1e-5f));
  keep(kk::layer_norm(h, h, h, h, f, f, 4, 8, 1e-5f));
  keep(kk::add_rms_norm(b, b, f, b, b, f, 4, 8, 1e-5f));
  keep(kk::rms_norm_backward(b, b, b, f, b, b, 4, 8, ws, ws_bytes));
  keep(kk::layer_norm_backward(h, h, f, f, f, h, f, f, 4, 8, ws, ws_bytes));
  keep(kk::add_rms_norm_backward(f, f, f, f, f, f, f, 4, 8, ws, ws_bytes));
  keep(kk::cross_entropy(b, l, 4, 8, -100, 0.f, kk::LossReduction::kMean, f, f, ws, ws_bytes));
  keep(kk::cross_entropy(f, 9, i, 4, 8, -100, 0.1f, kk::LossReduction::kNone, f, f, ws, ws_bytes));
  keep(kk::cross_entropy_backward(h, l, f, f, 4, 8, -100, 0.f, kk::LossReduction::kSum, h));
  keep(kk::cross_entropy_backward(b, 9, i, f, f, 4, 8, -100, 0.f, kk::LossReduction::kMean, b, 9));
  keep(kk::softmax(f, 9, f, 9, 4, 8));
  keep(kk::log_softmax(b, 9, b, 8, 4, 8));
  keep(kk::softmax_backward(f, f, f, 4, 8));
  keep(kk::log_softmax_backward(h, h, h, 4, 8));
  keep(kk::softmax_backward(b, 9, b, 9, b, 9, 4, 8));
  keep(kk::log_softmax_backward(f, 9, f, 9, f, 9, 4, 8));
  keep(kk::sum(f, 32, f, ws, ws_bytes));
  keep(kk::max(h, 32, f, ws, ws_bytes));
  keep(kk::min(i, 32, i, ws, ws_bytes));
  keep(kk::reduce(l, 32, l, kk::ReduceOp::kSum, int64_t{0}, ws, ws_bytes));
  keep(kk::row_sum(b, 4, 8, f));
  keep(kk::row_max(d, 4, 8, d, ws, ws_bytes));
  keep(kk::row_reduce(f, 4, 8, f, kk::ReduceOp::kMin, 0.f));
  keep(kk::transpose(f, f, 4, 8));
  keep(kk::transpose(h, h, 4, 8));
  keep(kk::transpose(reinterpret_cast<int8_t*>(ws), reinterpret_cast<int8_t*>(ws), 4, 8));
  keep(kk::transpose(l, l, 4, 8));
  keep(kk::gemv(kk::BlasOp::N, 4, 8, 1.f, f, 8, f, 0.f, f));
  keep(kk::gemv(kk::BlasOp::T, 4, 8, 1.f, f, 8, f, 0.f, f, ws, ws_bytes));
  keep(kk::sgemm(kk::BlasOp::N, kk::BlasOp::T, 4, 4, 4, 1.f, f, 4, f, 4, 0.f, f, 4));
  keep(kk::sgemm(kk::BlasOp::T, kk::BlasOp::N, 4, 4, 4, 1.f, f, 4, f, 4, 0.f, f, 4, ws, ws_bytes));
  keep(kk::unary(kk::Relu{}, 32, h, h));
  keep(kk::unary(kk::GeluErf{}, 32, b, b));
  keep(kk::unary(kk::Scale<float>{2.f}, 32, f, f));
  keep(kk::unary(kk::Cast{}, 32, b, f));
  keep(kk::binary(kk::Add{}, 32, f, f, f));
  keep(kk::binary(kk::Axpby<float>{1.f, 2.f}, 32, h, h, h));
  return e;
}
