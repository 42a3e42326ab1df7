// kernelkit: every public header.
#pragma once

#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/pack.cuh"
#include "core/types.cuh"
#include "warp/warp.cuh"
#include "block/block_reduce.cuh"
