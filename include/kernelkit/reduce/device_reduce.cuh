// TRANSITIONAL: the device-wide reduction's header is kernelkit/reduce/reduce.cuh (the op is
// `reduce`); this name stays only until the benchmark includes the new one.
#pragma once

#include "kernelkit/reduce/reduce.cuh"
