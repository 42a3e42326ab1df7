# SPDX-License-Identifier: Apache-2.0
# The default GPU architecture, included before project() by CMakeLists.txt and
# python/CMakeLists.txt (a list of them where no GPU is visible for the Python package). An
# explicit choice always wins: CMAKE_CUDA_ARCHITECTURES on the command line (-D..., or with
# pip -C cmake.define.CMAKE_CUDA_ARCHITECTURES=...) or CMake's CUDAARCHS environment variable.
# Otherwise:
#   - a visible GPU: that GPU's architecture (native);
#   - no GPU: KERNELKIT_ARCHITECTURES_WITHOUT_GPU, which the includer sets first: "90" (the C++
#     build: tests, benchmark, kernelkit_compiled) or "all" (the Python package: SASS for every
#     architecture in KERNELKIT_SUPPORTED_ARCHITECTURES that the toolkit has, and PTX for the
#     newest of them, so the wheel also runs on GPUs newer than the toolkit).
set(KERNELKIT_SUPPORTED_ARCHITECTURES 75 80 86 89 90 100 120)
if(NOT DEFINED KERNELKIT_ARCHITECTURES_WITHOUT_GPU)
  set(KERNELKIT_ARCHITECTURES_WITHOUT_GPU 90)
endif()

# out: "75-real;80-real;...;120" (SASS for each, PTX for the last) restricted to the
# architectures `nvcc --list-gpu-arch` lists; all of KERNELKIT_SUPPORTED_ARCHITECTURES when that
# nvcc cannot be asked (project() then finds the compiler and reports any problem).
function(kernelkit_toolkit_architectures out)
  if(CMAKE_CUDA_COMPILER)
    set(nvcc "${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX})
    set(nvcc "$ENV{CUDACXX}")
  else()
    find_program(nvcc NAMES nvcc HINTS "$ENV{CUDA_PATH}/bin" /usr/local/cuda/bin NO_CACHE)
  endif()
  set(have "")
  if(nvcc)
    execute_process(COMMAND "${nvcc}" --list-gpu-arch RESULT_VARIABLE rc
                    OUTPUT_VARIABLE listed ERROR_QUIET)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "compute_[0-9]+" have "${listed}")
      list(TRANSFORM have REPLACE "compute_" "")
    endif()
  endif()
  set(archs "")
  foreach(a IN LISTS KERNELKIT_SUPPORTED_ARCHITECTURES)
    if(NOT have OR a IN_LIST have)
      list(APPEND archs ${a}-real)
    endif()
  endforeach()
  # the newest also as PTX
  list(POP_BACK archs newest)
  string(REPLACE "-real" "" newest "${newest}")
  list(APPEND archs ${newest})
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE kk_smi_rc OUTPUT_QUIET ERROR_QUIET)
  if(kk_smi_rc EQUAL 0)
    set(kk_archs native)
  elseif(KERNELKIT_ARCHITECTURES_WITHOUT_GPU STREQUAL "all")
    kernelkit_toolkit_architectures(kk_archs)
  else()
    set(kk_archs ${KERNELKIT_ARCHITECTURES_WITHOUT_GPU})
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${kk_archs}" CACHE STRING "CUDA architectures")
  message(STATUS "kernelkit: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES} (the default; "
                 "set CMAKE_CUDA_ARCHITECTURES to choose)")
endif()
