// SPDX-License-Identifier: Apache-2.0
/// @file
/// kernelkit's version: the one place it is written. CMake's project(VERSION) and the Python
/// package's version are read from the three component macros and the string below.
#pragma once

/// Major version number.
#define KERNELKIT_VERSION_MAJOR 0
/// Minor version number.
#define KERNELKIT_VERSION_MINOR 1
/// Patch version number.
#define KERNELKIT_VERSION_PATCH 0

/// The version as one integer, MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is 100), for
/// `#if KERNELKIT_VERSION >= ...` tests.
#define KERNELKIT_VERSION \
  (KERNELKIT_VERSION_MAJOR * 10000 + KERNELKIT_VERSION_MINOR * 100 + KERNELKIT_VERSION_PATCH)

/// The version as "MAJOR.MINOR.PATCH". Written out (not built from the numbers above) so that
/// the Python build can read it; tests/core/version_test.cu checks that they agree.
#define KERNELKIT_VERSION_STRING "0.1.0"
