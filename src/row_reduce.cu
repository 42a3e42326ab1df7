// SPDX-License-Identifier: Apache-2.0
// kernelkit::kernelkit_compiled: the explicit instantiations of row_reduce, row_sum, row_max and
// row_min listed in kernelkit/extern_templates.cuh.
#include "kernelkit/extern_templates.cuh"

namespace kernelkit {
KERNELKIT_INSTANTIATE_ROW_REDUCE(template)
}  // namespace kernelkit
