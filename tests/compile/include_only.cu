// SPDX-License-Identifier: Apache-2.0
// Compile-only: a translation unit that includes the umbrella header and calls nothing. Its
// PTX must hold no kernel (IncludeOnly.NoKernels, tests/compile/no_kernels.cmake): every
// kernel of kernelkit is a template that only a call instantiates.
#include <kernelkit/kernelkit.cuh>

int kernelkit_include_only() {
  return 0;
}
