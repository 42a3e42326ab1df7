// SPDX-License-Identifier: Apache-2.0
// kernelkit::kernelkit_compiled: the explicit instantiations of reduce, sum, max and min listed in
// kernelkit/extern_templates.cuh.
#include "kernelkit/extern_templates.cuh"

namespace kernelkit {
KERNELKIT_INSTANTIATE_REDUCE(template)
}  // namespace kernelkit
