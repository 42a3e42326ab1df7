// The elementwise ladder, step by step, for f32 add, relu and sigmoid: each step's
// launchers have the library op's signature, so tests and the benchmark run every step
// through the same code. The last step is the library engine itself.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"
#include "ladder/elementwise/v0_naive.cuh"
#include "ladder/elementwise/v1_float4.cuh"

namespace kernelkit {
namespace ladder {
namespace elementwise {

using AddFn = cudaError_t (*)(Add, int64_t, float*, const float*, const float*, cudaStream_t);
using ReluFn = cudaError_t (*)(Relu, int64_t, float*, const float*, cudaStream_t);
using SigmoidFn = cudaError_t (*)(Sigmoid, int64_t, float*, const float*, cudaStream_t);

struct Step {
  const char* name;  // as in benchmark names: ladder.<name>
  AddFn add;
  ReluFn relu;
  SigmoidFn sigmoid;
};

inline constexpr Step kSteps[] = {
    {"v0_naive", &v0_naive::binary<Add>, &v0_naive::unary<Relu>, &v0_naive::unary<Sigmoid>},
    {"v1_float4", &v1_float4::binary<Add>, &v1_float4::unary<Relu>, &v1_float4::unary<Sigmoid>},
    // v2: 16-byte packs of any type, several packs in flight per thread, grid from the
    // shared sizing rule, 32-bit indexing below 2^31: the library engine.
    {"v2_engine", &kernelkit::binary<Add, float, float, float>,
     &kernelkit::unary<Relu, float, float>, &kernelkit::unary<Sigmoid, float, float>},
};

}  // namespace elementwise
}  // namespace ladder
}  // namespace kernelkit
