// SPDX-License-Identifier: Apache-2.0
/// @file
/// kernelkit: every public header. Including it and calling nothing compiles no kernel.
#pragma once

/// @namespace kernelkit
/// Everything public: the host operations (device pointers in, int64_t sizes, the stream
/// last, a cudaError_t out; cudaErrorInvalidValue for bad arguments, with nothing written),
/// their plans and launchers, and the warp and block primitives device code calls. Names in
/// kernelkit::detail are internal.

#include "kernelkit/version.cuh"
#include "kernelkit/core/checks.cuh"
#include "kernelkit/core/cluster.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/dispatch.cuh"
#include "kernelkit/core/epilogue.cuh"
#include "kernelkit/core/error.cuh"
#include "kernelkit/core/grid.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/math.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/warp/warp.cuh"
#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/elementwise/elementwise.cuh"
#include "kernelkit/elementwise/functors.cuh"
#include "kernelkit/reduce/reduce.cuh"
#include "kernelkit/reduce/row_reduce.cuh"
#include "kernelkit/reduce/col_reduce.cuh"
#include "kernelkit/norm/norm.cuh"
#include "kernelkit/loss/cross_entropy.cuh"
#include "kernelkit/softmax/softmax.cuh"
#include "kernelkit/softmax/softmax_inner.cuh"
#include "kernelkit/transpose/transpose.cuh"
#include "kernelkit/blas/blas.cuh"
#include "kernelkit/blas/gemv.cuh"
#include "kernelkit/blas/sgemm.cuh"
// Last: the instantiations kernelkit::kernelkit_compiled holds, declared extern when
// KERNELKIT_COMPILED is defined.
#include "kernelkit/extern_templates.cuh"
