// SPDX-License-Identifier: Apache-2.0
/// @file
/// The grid-wide barrier of a cooperative launch (LaunchShape::cooperative): every block of
/// the grid is resident, and grid_sync() makes each block's writes before it visible to every
/// block after it. Its counter is the driver's, one per launch, so the barrier carries no state
/// between calls and needs no workspace. The one place kernels reach it; it is the only user
/// of <cooperative_groups.h>, whose libcu++ dependencies are most of the compile time of a
/// translation unit that includes kernelkit's reductions or softmax.
#pragma once

#include <cooperative_groups.h>

namespace kernelkit {

/// Waits until every block of the (cooperative) grid has reached it; writes before it are
/// visible to every block after it. Only in kernels launched with LaunchShape::cooperative.
__device__ __forceinline__ void grid_sync() {
  cooperative_groups::this_grid().sync();
}

}  // namespace kernelkit
