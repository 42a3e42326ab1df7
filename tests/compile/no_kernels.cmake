# SPDX-License-Identifier: Apache-2.0
# cmake -DPTX=<file.ptx> -P no_kernels.cmake: fails unless the PTX is a real PTX module
# (it has a .version line) that defines no kernel (no .entry).
file(READ "${PTX}" ptx)
string(FIND "${ptx}" ".version" version)
if(version EQUAL -1)
  message(FATAL_ERROR "${PTX} is not PTX")
endif()
string(REGEX MATCHALL "\\.entry[ \t]+[A-Za-z0-9_$]+" entries "${ptx}")
list(LENGTH entries n)
if(n GREATER 0)
  message(FATAL_ERROR "${PTX} defines ${n} kernel(s), expected none: ${entries}")
endif()
message(STATUS "${PTX}: no kernel")
