// SPDX-License-Identifier: Apache-2.0
// kernelkit::kernelkit_compiled: the explicit instantiations of rms_norm, layer_norm and
// add_rms_norm listed in kernelkit/extern_templates.cuh.
#include "kernelkit/extern_templates.cuh"

namespace kernelkit {
KERNELKIT_INSTANTIATE_NORM(template)
}  // namespace kernelkit
