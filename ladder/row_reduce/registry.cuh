// The row-reduction ladder in order, name -> launcher, for tests and the benchmark. Every
// entry has the signature of kernelkit::row_sum with Acc = T (sum only), the library's
// row_sum last.
#pragma once

#include <cstdint>
#include <vector>

#include "kernelkit/reduce/row_reduce.cuh"
#include "ladder/row_reduce/v0_warp_per_row.cuh"
#include "ladder/row_reduce/v1_block_per_row.cuh"
#include "ladder/row_reduce/v2_warp_per_row_packed.cuh"
#include "ladder/row_reduce/v3_block_per_row_packed.cuh"
#include "ladder/row_reduce/v4_cub_block_reduce.cuh"

namespace kernelkit::ladder::row_reduce {

template <typename T>
using RowSumFn = cudaError_t (*)(const T*, int64_t, int64_t, T*, cudaStream_t);

template <typename T>
struct RowLadderEntry {
  const char* name;  // "row_ladder.v<k>_<name>" as in benchmark case names
  RowSumFn<T> fn;
};

template <typename T>
cudaError_t library_row_sum(const T* in, int64_t rows, int64_t cols, T* out, cudaStream_t stream) {
  return kernelkit::row_sum(in, rows, cols, out, stream);
}

template <typename T>
std::vector<RowLadderEntry<T>> row_ladder() {
  return {
      {"row_ladder.v0_warp_per_row", &v0_warp_per_row<T>},
      {"row_ladder.v1_block_per_row", &v1_block_per_row<T>},
      {"row_ladder.v2_warp_per_row_packed", &v2_warp_per_row_packed<T>},
      {"row_ladder.v3_block_per_row_packed", &v3_block_per_row_packed<T>},
      {"row_ladder.v4_cub_block_reduce", &v4_cub_block_reduce<T>},
      {"kernelkit", &library_row_sum<T>},
  };
}

}  // namespace kernelkit::ladder::row_reduce
