// The softmax ladder, in order: name -> launcher (all f32, the library's signature).
// The library itself (kernelkit::softmax<float>) is the step after the last.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "v0_three_kernels.cuh"
#include "v1_warp_per_row_shfl_down.cuh"
#include "v2_warp_per_row_shfl_xor.cuh"

namespace kernelkit {
namespace ladder {

using SoftmaxFn = cudaError_t (*)(const float* in, float* out, int64_t rows, int64_t cols,
                                  cudaStream_t stream);

struct SoftmaxVersion {
  const char* name;
  SoftmaxFn fn;
};

inline constexpr SoftmaxVersion kSoftmaxVersions[] = {
    {"v0_three_kernels", softmax_v0_three_kernels},
    {"v1_warp_per_row_shfl_down", softmax_v1_warp_per_row_shfl_down},
    {"v2_warp_per_row_shfl_xor", softmax_v2_warp_per_row_shfl_xor},
};

}  // namespace ladder
}  // namespace kernelkit
