// SPDX-License-Identifier: Apache-2.0
// kernelkit::kernelkit_compiled: the explicit instantiations of cross_entropy and
// cross_entropy_backward listed in kernelkit/extern_templates.cuh.
#include "kernelkit/extern_templates.cuh"

namespace kernelkit {
KERNELKIT_INSTANTIATE_CROSS_ENTROPY(template)
}  // namespace kernelkit
