// SPDX-License-Identifier: Apache-2.0
// cross_entropy and cross_entropy_backward for f32, f16, bf16 logits (at a row stride) and
// int32 / int64 targets: six (logits, target) type pairs per direction.
#include <cstdint>

#include "dtype.cuh"
#include "kernelkit/loss/cross_entropy.cuh"

namespace kkpy {
namespace {

// f(Tag<T>{}, Tag<Tgt>{}) for the logits' float type T named by t and the target's integer
// type named by tgt; cudaErrorInvalidValue for any other pair.
template <typename F>
cudaError_t with_loss_types(DType t, DType tgt, F&& f) {
  return with_float_type(t, [&](auto tag) {
    if (tgt == DType::kI32) return f(tag, Tag<int32_t>{});
    if (tgt == DType::kI64) return f(tag, Tag<int64_t>{});
    return cudaErrorInvalidValue;
  });
}

// ops.h's reduction code as kernelkit's; an unknown code becomes a value kernelkit's check
// refuses (cudaErrorInvalidValue).
kernelkit::LossReduction reduction_of(int r) {
  return static_cast<kernelkit::LossReduction>(r);
}

}  // namespace

size_t cross_entropy_workspace_bytes(int64_t rows, int64_t vocab) {
  return kernelkit::cross_entropy_workspace_bytes(rows, vocab);
}

cudaError_t cross_entropy(DType t, DType tgt, const void* logits, int64_t ld, const void* target,
                          int64_t rows, int64_t vocab, int64_t ignore_index, float label_smoothing,
                          int reduction, float* loss, float* lse, void* workspace,
                          size_t workspace_bytes, cudaStream_t s) {
  return with_loss_types(t, tgt, [&](auto tt, auto it) {
    using T = typename decltype(tt)::type;
    using I = typename decltype(it)::type;
    return kernelkit::cross_entropy(
        static_cast<const T*>(logits), ld, static_cast<const I*>(target), rows, vocab, ignore_index,
        label_smoothing, reduction_of(reduction), loss, lse, workspace, workspace_bytes, s);
  });
}

cudaError_t cross_entropy_backward(DType t, DType tgt, const void* logits, int64_t ld,
                                   const void* target, const float* lse, const float* dloss,
                                   int64_t rows, int64_t vocab, int64_t ignore_index,
                                   float label_smoothing, int reduction, void* dlogits,
                                   int64_t ld_dlogits, cudaStream_t s) {
  return with_loss_types(t, tgt, [&](auto tt, auto it) {
    using T = typename decltype(tt)::type;
    using I = typename decltype(it)::type;
    return kernelkit::cross_entropy_backward(static_cast<const T*>(logits), ld,
                                             static_cast<const I*>(target), lse, dloss, rows, vocab,
                                             ignore_index, label_smoothing, reduction_of(reduction),
                                             static_cast<T*>(dlogits), ld_dlogits, s);
  });
}

}  // namespace kkpy
