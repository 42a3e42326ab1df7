// SPDX-License-Identifier: Apache-2.0
// transpose of any 1-, 2-, 4- or 8-byte element type (bits moved unchanged): four
// instantiations, on unsigned integers of the element's size.
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/transpose/transpose.cuh"
#include "ops.h"

namespace kkpy {

cudaError_t transpose(size_t elem_bytes, const void* in, void* out, int64_t rows, int64_t cols,
                      cudaStream_t s) {
  return kernelkit::dispatch<1, 2, 4, 8>(static_cast<int>(elem_bytes), [&](auto b) {
    using T = kernelkit::bits_t<decltype(b)::value>;
    return kernelkit::transpose(static_cast<const T*>(in), static_cast<T*>(out), rows, cols, s);
  });
}

}  // namespace kkpy
