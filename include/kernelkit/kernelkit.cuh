// kernelkit: every public header.
#pragma once

#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/pack.cuh"
#include "core/types.cuh"
#include "warp/warp.cuh"
#include "block/block_reduce.cuh"
#include "elementwise/elementwise.cuh"
#include "elementwise/functors.cuh"
#include "reduce/device_reduce.cuh"
#include "reduce/row_reduce.cuh"
#include "softmax/softmax.cuh"
#include "transpose/transpose.cuh"
#include "blas/blas.cuh"
#include "blas/gemv.cuh"
#include "blas/sgemm.cuh"
