// SPDX-License-Identifier: Apache-2.0
// softmax / log_softmax for f32, f16, bf16: six instantiations.
#include "dtype.cuh"
#include "kernelkit/softmax/softmax.cuh"

namespace kkpy {

cudaError_t softmax(DType t, bool log, const void* in, void* out, int64_t rows, int64_t cols,
                    cudaStream_t s) {
  return with_float_type(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    return log ? kernelkit::log_softmax(x, y, rows, cols, s)
               : kernelkit::softmax(x, y, rows, cols, s);
  });
}

}  // namespace kkpy
