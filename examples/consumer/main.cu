// SPDX-License-Identifier: Apache-2.0
// Sums 1..n with a kernelkit block reduction and prints the result (needs a GPU to run;
// building it is the packaging check).
#include <cstdio>

#include <kernelkit/kernelkit.cuh>

__global__ void sum_kernel(long long* out, int n) {
  long long v = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    v += i + 1;
  v = kernelkit::block_reduce<256>(v, kernelkit::Sum{});
  if (threadIdx.x == 0) *out = v;
}

int main() {
  long long* d = nullptr;
  long long h = 0;
  if (cudaMalloc(&d, sizeof h) != cudaSuccess) return 1;
  sum_kernel<<<1, 256>>>(d, 1000);
  if (cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  cudaFree(d);
  std::printf("consumer: sum of 1..1000 = %lld (expected 500500)\n", h);

  // the host API: relu over 1000 floats through the elementwise engine
  float* x = nullptr;
  if (cudaMalloc(&x, 1000 * sizeof(float)) != cudaSuccess) return 1;
  if (cudaMemset(x, 0, 1000 * sizeof(float)) != cudaSuccess) return 1;
  const cudaError_t err = kernelkit::unary(kernelkit::Relu{}, 1000, x, x);
  cudaFree(x);
  std::printf("consumer: relu: %s\n", cudaGetErrorString(err));
  return h == 500500 && err == cudaSuccess ? 0 : 1;
}
