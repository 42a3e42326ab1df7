// Softmax and log-softmax over the last dimension of a row-major rows x cols matrix.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "detail/dispatch.cuh"

namespace kernelkit {

// out[r][c] = exp(in[r][c] - max_r) / sum_c' exp(in[r][c'] - max_r), computed in float.
// Types: float, __half, __nv_bfloat16. in == out (in place) is allowed; any other overlap
// is not. rows * cols may pass 2^31. A row containing NaN, or made only of -inf, becomes
// NaN; -inf elements of other rows give 0. rows == 0 or cols == 0 does nothing.
// Returns cudaErrorInvalidValue (before any launch, nothing written) for negative sizes,
// a null pointer with a non-empty matrix, or rows * cols overflowing int64.
template <typename T>
[[nodiscard]] cudaError_t softmax(const T* in, T* out, int64_t rows, int64_t cols,
                                  cudaStream_t stream = nullptr) {
  return detail::softmax_dispatch<detail::SoftmaxAlgo::kSoftmax>(in, out, rows, cols, stream);
}

// out[r][c] = (in[r][c] - max_r) - log(sum_c' exp(in[r][c'] - max_r)) (not log(softmax)).
// Same types, aliasing, special values and errors as softmax.
template <typename T>
[[nodiscard]] cudaError_t log_softmax(const T* in, T* out, int64_t rows, int64_t cols,
                                      cudaStream_t stream = nullptr) {
  return detail::softmax_dispatch<detail::SoftmaxAlgo::kLogSoftmax>(in, out, rows, cols, stream);
}

}  // namespace kernelkit
