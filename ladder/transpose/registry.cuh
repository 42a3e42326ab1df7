// The transpose ladder in order, each step with the library's signature, then the library
// itself. Tests run every entry on the same cases; the benchmark times each at 8192x8192.
#pragma once

#include <array>

#include "kernelkit/transpose/transpose.cuh"
#include "ladder/transpose/v0_naive.cuh"
#include "ladder/transpose/v1_coalesced_write_ldg.cuh"
#include "ladder/transpose/v2_smem_padded.cuh"

namespace kernelkit::ladder::transpose {

template <typename T>
using Fn = cudaError_t (*)(const T* in, T* out, int64_t rows, int64_t cols, cudaStream_t stream);

template <typename T>
struct Entry {
  const char* name;  // "v0_naive", ...; the benchmark names the case ladder.<name>
  Fn<T> fn;
};

// The ladder steps (not the library) for element type T.
template <typename T>
std::array<Entry<T>, 3> registry() {
  return {{{"v0_naive", &v0_naive<T>},
           {"v1_coalesced_write_ldg", &v1_coalesced_write_ldg<T>},
           {"v2_smem_padded", &v2_smem_padded<T>}}};
}

}  // namespace kernelkit::ladder::transpose
