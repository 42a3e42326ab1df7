// SPDX-License-Identifier: Apache-2.0
/// @file
/// Error handling for library code: never throw, print or exit; answer with a cudaError_t.
///
/// Every kernel is launched through core launch() (core/launch.cuh), which returns the
/// launch's own status. The library never calls cudaGetLastError() to hide an error: the only
/// errors it consumes are the ones its own failed call just recorded.
#pragma once

#include <cuda_runtime.h>

/// Returns cudaErrorInvalidValue from the enclosing function when cond is false. Used for
/// argument checks, before anything is launched or written.
#define KERNELKIT_REQUIRE(cond)       \
  do {                                \
    if (!(cond)) {                    \
      return ::cudaErrorInvalidValue; \
    }                                 \
  } while (0)

/// Evaluates a cudaError_t expression and returns it from the enclosing function when it
/// is not cudaSuccess.
#define KERNELKIT_RETURN_IF_ERROR(expr)   \
  do {                                    \
    const ::cudaError_t kk_err_ = (expr); \
    if (kk_err_ != ::cudaSuccess) {       \
      return kk_err_;                     \
    }                                     \
  } while (0)
