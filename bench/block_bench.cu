// SPDX-License-Identifier: Apache-2.0
// block_reduce / block_all_reduce against cub::BlockReduce: the same block size, the same
// data, the same number of reductions. Each block keeps one value per thread in registers
// and reduces it kReps times (a different value each time), so the reduction itself, not
// memory, is what is timed. bytes = values reduced x 4 bytes.
#include <cub/block/block_reduce.cuh>

#include "harness.cuh"
#include "kernelkit/block/block_reduce.cuh"

namespace {

constexpr int kReps = 64;

template <int Block, bool All>
__global__ void __launch_bounds__(Block) kk_block_kernel(const float* in, float* out) {
  const float v = in[blockIdx.x * Block + threadIdx.x];
  float acc = 0.f;
  for (int r = 0; r < kReps; ++r) {
    if constexpr (All) {
      acc += kernelkit::block_all_reduce<Block>(v + r, kernelkit::Sum{});
    } else {
      acc += kernelkit::block_reduce<Block>(v + r, kernelkit::Sum{});
    }
  }
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

template <int Block, bool All>
__global__ void __launch_bounds__(Block) cub_block_kernel(const float* in, float* out) {
  using Reduce = cub::BlockReduce<float, Block>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ float result;
  const float v = in[blockIdx.x * Block + threadIdx.x];
  float acc = 0.f;
  for (int r = 0; r < kReps; ++r) {
    float s = Reduce(temp).Sum(v + r);
    if constexpr (All) {
      if (threadIdx.x == 0) result = s;
      __syncthreads();
      s = result;
    }
    __syncthreads();  // temp (and result) may be reused
    acc += s;
  }
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

template <int Block, bool All, bool Cub>
void add_block_case() {
  constexpr int blocks = 132 * 64;
  constexpr int64_t n = int64_t{blocks} * Block;
  const std::string op = All ? "block_all_reduce.sum" : "block_reduce.sum";
  kkbench::add_case(
      kkbench::case_name<float>(op, Cub ? "cub" : "kernelkit", std::to_string(Block)),
      kkbench::Traffic{double(n) * kReps * sizeof(float), 0}, 0,
      [](cudaStream_t s) -> kkbench::Launch {
        auto in = kkbench::random_array<float>(n, 7);
        auto out = kkbench::poisoned_array<float>(blocks);
        auto launch = [in, out](cudaStream_t st) {
          if constexpr (Cub) {
            cub_block_kernel<Block, All><<<blocks, Block, 0, st>>>(in->p, out->p);
          } else {
            kk_block_kernel<Block, All><<<blocks, Block, 0, st>>>(in->p, out->p);
          }
        };
        launch(s);
        BENCH_CUDA(cudaStreamSynchronize(s));
        const auto h_in = in->download();
        const auto h_out = out->download();
        std::vector<double> got, ref;
        for (size_t b : kkbench::sample_indices(blocks, 64)) {
          double sum = 0;
          for (int t = 0; t < Block; ++t)
            sum += h_in[b * Block + t];
          ref.push_back(kReps * sum + double(Block) * kReps * (kReps - 1) / 2);
          got.push_back(h_out[b]);
        }
        kkbench::verify("block reduce", got, ref, 1e-4, 1e-2);
        return launch;
      },
      kkbench::Bound::kCompute);
}

template <int Block>
void add_block_cases() {
  add_block_case<Block, false, false>();
  add_block_case<Block, false, true>();
  add_block_case<Block, true, false>();
  add_block_case<Block, true, true>();
}

KKBENCH_CASES {
  add_block_cases<128>();
  add_block_cases<256>();
  add_block_cases<1024>();
}

}  // namespace
