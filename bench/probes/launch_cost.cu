// SPDX-License-Identifier: Apache-2.0
// Host time per call on the GPU machine: a bare <<<>>> launch against kernelkit's C++ calls on
// tiny inputs, a spin kernel holding the stream while the host enqueues (bench/NOTES.md, Python,
// "Host time per call"). Build: nvcc -O2 -std=c++17 -arch=sm_90 -Iinclude
// bench/probes/launch_cost.cu
#include <chrono>
#include <cstdio>
#include <kernelkit/kernelkit.cuh>
__global__ void empty_kernel(float* p) {
  if (p && threadIdx.x == 1024) p[0] = 0;
}
__global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};
template <typename F>
double per_call(const char* name, F f, int calls = 2000) {
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    spin<<<1, 1>>>(2000000000LL / 100);  // ~10 ms at ~2 GHz
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      f();
    auto t1 = std::chrono::steady_clock::now();
    cudaDeviceSynchronize();
    double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
    if (us < best) best = us;
  }
  std::printf("%-34s %7.2f us/call\n", name, best);
  return best;
}
int main() {
  float *x, *y, *z;
  cudaMalloc(&x, 1 << 20);
  cudaMalloc(&y, 1 << 20);
  cudaMalloc(&z, 1 << 20);
  cudaMemset(x, 0, 1 << 20);
  void* ws;
  cudaMalloc(&ws, 1 << 20);
  cudaStream_t s = nullptr;
  for (int warm = 0; warm < 2; ++warm) {
    std::printf("-- round %d\n", warm);
    per_call("empty <<<1,32>>>", [&] { empty_kernel<<<1, 32, 0, s>>>(x); });
    per_call("cudaGetDevice", [&] {
      int d;
      cudaGetDevice(&d);
    });
    per_call("softmax 8x64 f32", [&] { (void)kernelkit::softmax(x, y, 8, 64, s); });
    per_call("softmax 1x32 f32", [&] { (void)kernelkit::softmax(x, y, 1, 32, s); });
    per_call("log_softmax 8x64 f32", [&] { (void)kernelkit::log_softmax(x, y, 8, 64, s); });
    per_call("binary add 64 f32", [&] { (void)kernelkit::binary(Add{}, 64, z, x, y, s); });
    per_call("rms_norm 8x64 f32",
             [&] { (void)kernelkit::rms_norm(x, y, z, static_cast<float*>(ws), 8, 64, 1e-6f, s); });
  }
  return 0;
}
