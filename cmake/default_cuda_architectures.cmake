# SPDX-License-Identifier: Apache-2.0
# The default GPU architecture, included before project() by CMakeLists.txt and
# python/CMakeLists.txt: the visible GPU's when there is one, otherwise Hopper (sm_90).
# CMAKE_CUDA_ARCHITECTURES given on the command line (-D..., or with pip
# -C cmake.define.CMAKE_CUDA_ARCHITECTURES=...) overrides it.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE kk_smi_rc OUTPUT_QUIET ERROR_QUIET)
  if(kk_smi_rc EQUAL 0)
    set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING "CUDA architectures")
  else()
    set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures")
  endif()
endif()
