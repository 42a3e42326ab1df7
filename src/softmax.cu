// SPDX-License-Identifier: Apache-2.0
// kernelkit::kernelkit_compiled: the explicit instantiations of softmax and log_softmax (with and
// without ld) and of their backward ops listed in
// kernelkit/extern_templates.cuh.
#include "kernelkit/extern_templates.cuh"

namespace kernelkit {
KERNELKIT_INSTANTIATE_SOFTMAX(template)
}  // namespace kernelkit
