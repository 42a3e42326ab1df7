// SPDX-License-Identifier: Apache-2.0
// softmax, sum, gemv and sgemm on float through kernelkit::kernelkit_compiled (the calls link
// to the library's instantiations), checked on a small input (needs a GPU to run; building and
// linking it is the packaging check).
#include <cmath>
#include <cstdio>
#include <vector>

#include <kernelkit/kernelkit.cuh>

#ifndef KERNELKIT_COMPILED
#error "linking kernelkit::kernelkit_compiled defines KERNELKIT_COMPILED"
#endif

int main() {
  constexpr int kN = 64;  // an 8 x 8 matrix of ones, and a vector of 8 ones
  const std::vector<float> ones(kN, 1.f);
  float *a = nullptr, *out = nullptr, *s = nullptr, *ws = nullptr;
  // 0 here: 64 floats are one block's tile, and sum() then needs no workspace
  const size_t ws_bytes = kernelkit::reduce_workspace_bytes<float>(kN);
  if (cudaMalloc(&a, kN * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&out, kN * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&s, sizeof(float)) != cudaSuccess ||
      (ws_bytes > 0 && cudaMalloc(&ws, ws_bytes) != cudaSuccess))
    return 1;
  if (cudaMemcpy(a, ones.data(), kN * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
    return 1;

  std::vector<float> h(kN);
  float total = 0.f;
  bool ok = kernelkit::softmax(a, out, 8, 8) == cudaSuccess &&
            cudaMemcpy(h.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess &&
            std::fabs(h[0] - 0.125f) < 1e-6f;
  ok = ok && kernelkit::sum(a, kN, s, ws, ws_bytes) == cudaSuccess &&
       cudaMemcpy(&total, s, sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess &&
       total == float{kN};
  // y = A x (A 8 x 8 of ones, x the first 8 ones): every y is 8
  ok = ok && kernelkit::gemv(kernelkit::BlasOp::N, 8, 8, 1.f, a, 8, a, 0.f, out) == cudaSuccess &&
       cudaMemcpy(h.data(), out, 8 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess &&
       h[7] == 8.f;
  // C = A B (8 x 8 ones): every C is 8
  ok = ok &&
       kernelkit::sgemm(kernelkit::BlasOp::N, kernelkit::BlasOp::N, 8, 8, 8, 1.f, a, 8, a, 8, 0.f,
                        out, 8) == cudaSuccess &&
       cudaMemcpy(h.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess &&
       h[kN - 1] == 8.f;
  cudaFree(a);
  cudaFree(out);
  cudaFree(s);
  cudaFree(ws);
  std::printf("consumer_compiled: softmax, sum, gemv, sgemm: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
