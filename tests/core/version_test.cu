// SPDX-License-Identifier: Apache-2.0
// Host tests of <kernelkit/version.cuh>: the string, the integer and CMake's project version
// (KERNELKIT_CMAKE_VERSION, set by tests/CMakeLists.txt) all say the same version, and the
// umbrella header brings the macros in.
#include <gtest/gtest.h>

#include <string>

#include "kernelkit/kernelkit.cuh"

#ifndef KERNELKIT_VERSION_STRING
#error "<kernelkit/kernelkit.cuh> does not include <kernelkit/version.cuh>"
#endif

namespace {

TEST(Version, StringMatchesComponents) {
  const std::string parts = std::to_string(KERNELKIT_VERSION_MAJOR) + "." +
                            std::to_string(KERNELKIT_VERSION_MINOR) + "." +
                            std::to_string(KERNELKIT_VERSION_PATCH);
  EXPECT_EQ(std::string(KERNELKIT_VERSION_STRING), parts);
}

TEST(Version, IntegerMatchesComponents) {
  static_assert(KERNELKIT_VERSION_MINOR < 100 && KERNELKIT_VERSION_PATCH < 100,
                "KERNELKIT_VERSION holds two decimal digits for minor and patch");
  EXPECT_EQ(KERNELKIT_VERSION, KERNELKIT_VERSION_MAJOR * 10000 + KERNELKIT_VERSION_MINOR * 100 +
                                   KERNELKIT_VERSION_PATCH);
}

TEST(Version, MatchesCMakeProjectVersion) {
  EXPECT_EQ(std::string(KERNELKIT_VERSION_STRING), std::string(KERNELKIT_CMAKE_VERSION));
}

}  // namespace
