// SPDX-License-Identifier: Apache-2.0
// rms_norm_backward on the GPU against float64 (dx, and dweight summed over the rows): fresh
// random inputs, outputs and the workspace poisoned, widths {1, 33, 512, 4096, 20000}, rows
// {1, 3, 261, 700} (more rows than blocks: a block's partials over several rows), pointers off
// the pack grid, weight and dweight present or not, float and same-type weights, dx in place
// over dy, determinism, bad arguments; and plan_norm_backward on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "common/test_util.cuh"
#include "kernelkit/norm/norm.cuh"

namespace kk = kernelkit;
using kktest::DeviceBuffer;

namespace {

class NormBackwardTest : public kktest::GpuTest {};

std::string describe_config(const kk::NormBackwardConfig& c) {
  return "elem=" + std::to_string(c.elem_bytes) + " pack=" + std::to_string(c.pack) +
         " block=" + std::to_string(c.block);
}

TEST(NormBackwardPlan, EveryPlanIsATableEntryAndEveryEntryIsPlanned) {
  kktest::expect_distinct_entries(kk::kNormBackwardConfigs, describe_config);
  kktest::expect_ranges_tile(std::size(kk::kNormBackwardConfigs),
                             {kk::norm_backward_configs_of(4), kk::norm_backward_configs_of(2)});
  kktest::PlannedEntries<kk::NormBackwardConfig, std::size(kk::kNormBackwardConfigs)> planned(
      kk::kNormBackwardConfigs);
  for (const auto& dev : kktest::all_devices()) {
    for (const int elem : {4, 2}) {
      const kk::ConfigRange range = kk::norm_backward_configs_of(elem);
      for (const int64_t cols : {int64_t{1}, int64_t{33}, int64_t{4096}, int64_t{300000}}) {
        for (const int64_t rows : {int64_t{1}, int64_t{700}, int64_t{1} << 20}) {
          for (const int off : {0, elem}) {
            const kk::Alignment x_at =
                kk::common_alignment(kk::Alignment(off), kk::Alignment(cols * elem));
            const kk::NormBackwardPlan p =
                kk::plan_norm_backward(rows, cols, elem, elem, x_at, kk::Alignment(), dev.info);
            const std::string where =
                std::string(dev.name) + " " + std::to_string(rows) + "x" + std::to_string(cols);
            ASSERT_GE(planned.count(kk::norm_backward_config(p, elem), range.begin, range.end), 0)
                << where;
            EXPECT_EQ(p.pack, off == 0 && (cols * elem) % 16 == 0 ? 16 / elem : 1) << where;
            EXPECT_EQ(p.parts, std::min<int64_t>(rows, kk::kNormBackwardParts)) << where;
            EXPECT_EQ(int64_t{p.shape.grid.x}, p.parts) << where;
            EXPECT_GE(p.reduce.grid.x, 1u) << where;
            // the workspace holds a row of partials a block
            EXPECT_EQ(kk::rms_norm_backward_workspace_bytes(rows, cols),
                      static_cast<size_t>(p.parts * cols * 4))
                << where;
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe_config, "never planned:");
  EXPECT_EQ(kk::rms_norm_backward_workspace_bytes(0, 10), 0u);
}

template <typename T>
kktest::Tolerance dx_tolerance() {
  if constexpr (std::is_same_v<T, float>) {
    return {2e-5, 2e-5, 0};
  } else {
    return {1e-5, 0, 1};
  }
}

template <typename T, typename W>
void run_backward(int64_t rows, int64_t cols, int off, bool weight, bool dweight, bool in_place,
                  uint64_t seed) {
  const int64_t n = rows * cols;
  const std::string where =
      std::string(kk::type_name<T>()) + "/" + kk::type_name<W>() + " " + std::to_string(rows) +
      "x" + std::to_string(cols) + " off=" + std::to_string(off) +
      " weight=" + std::to_string(weight) + " dweight=" + std::to_string(dweight) +
      " in_place=" + std::to_string(in_place) + " seed=" + std::to_string(seed);
  const auto x = kktest::random_vector<T>(n, seed);
  const auto dy = kktest::random_vector<T>(n, seed + 1);
  const auto w = kktest::random_vector<W>(cols, seed + 2, 0.5, 1.5);
  std::vector<float> rstd(rows);
  for (int64_t i = 0; i < rows; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < cols; ++j)
      ss += kktest::to_double(x[i * cols + j]) * kktest::to_double(x[i * cols + j]);
    rstd[i] = static_cast<float>(1.0 / std::sqrt(ss / double(cols) + 1e-5));
  }
  std::vector<double> ref_dx(n), ref_dw(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const double r = rstd[i];
    double s = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double g = kktest::to_double(dy[i * cols + j]) * (weight ? kktest::to_double(w[j]) : 1);
      s += g * kktest::to_double(x[i * cols + j]);
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double xv = kktest::to_double(x[i * cols + j]),
                   dv = kktest::to_double(dy[i * cols + j]);
      const double g = dv * (weight ? kktest::to_double(w[j]) : 1);
      ref_dx[i * cols + j] = r * g - xv * r * r * r * s / double(cols);
      ref_dw[j] += dv * xv * r;
    }
  }
  DeviceBuffer<T> ddy(n + off + 1), dx_(n + off + 1), dxb(n + off + 1);
  DeviceBuffer<W> dw(cols + off + 1), ddw(cols + off + 1);
  DeviceBuffer<float> drstd(rows);
  const size_t ws_bytes = kk::rms_norm_backward_workspace_bytes(rows, cols);
  DeviceBuffer<unsigned char> ws(ws_bytes + 16);
  dxb.poison();
  ddw.poison();
  ws.poison();
  CUDA_CHECK(cudaMemcpy(ddy.get() + off, dy.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dx_.get() + off, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dw.get() + off, w.data(), cols * sizeof(W), cudaMemcpyHostToDevice));
  drstd.upload(rstd);
  T* out = in_place ? ddy.get() + off : dxb.get() + off;
  ASSERT_EQ(kk::rms_norm_backward(
                ddy.get() + off, dx_.get() + off, weight ? dw.get() + off : nullptr, drstd.get(),
                out, dweight ? ddw.get() + off : nullptr, rows, cols, ws.get(), ws_bytes),
            cudaSuccess)
      << where;
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(kktest::check_near(got, ref_dx, dx_tolerance<T>(), where + " dx"));
  if (dweight) {
    std::vector<W> gw(cols);
    CUDA_CHECK(cudaMemcpy(gw.data(), ddw.get() + off, cols * sizeof(W), cudaMemcpyDeviceToHost));
    kktest::Tolerance tol{1e-6 * double(rows), 1e-5, std::is_same_v<W, float> ? 0.0 : 1.0};
    EXPECT_TRUE(kktest::check_near(gw, ref_dw, tol, where + " dweight"));
  }
}

template <typename T, typename W>
void backward_sweep(uint64_t seed) {
  int index = 0;
  for (const int64_t cols :
       {int64_t{1}, int64_t{33}, int64_t{512}, int64_t{4096}, int64_t{20000}}) {
    for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{261}, int64_t{700}}) {
      if (rows * cols > (int64_t{1} << 23)) continue;
      for (const int off : {0, 1}) {
        if (!kktest::sanitize_keep(index, 3)) {
          ++index;
          continue;
        }
        const bool weight = index % 4 != 3;
        run_backward<T, W>(rows, cols, off, weight, weight && index % 3 != 2, index % 5 == 4,
                           seed++);
        ++index;
      }
    }
  }
}

TEST_F(NormBackwardTest, Float) {
  backward_sweep<float, float>(10);
}
TEST_F(NormBackwardTest, Bf16FloatWeight) {
  backward_sweep<__nv_bfloat16, float>(20);
}
TEST_F(NormBackwardTest, Bf16Bf16Weight) {
  backward_sweep<__nv_bfloat16, __nv_bfloat16>(30);
}
TEST_F(NormBackwardTest, HalfHalfWeight) {
  backward_sweep<__half, __half>(40);
}

TEST_F(NormBackwardTest, DeterministicAndBadArguments) {
  const int64_t rows = 700, cols = 4096, n = rows * cols;
  const auto dy = kktest::to_device(kktest::random_vector<float>(n, 50));
  const auto x = kktest::to_device(kktest::random_vector<float>(n, 51));
  const auto w = kktest::to_device(kktest::random_vector<float>(cols, 52));
  const auto rstd = kktest::to_device(kktest::random_vector<float>(rows, 53, 0.5, 2.0));
  DeviceBuffer<float> dx(n), dw(cols);
  const size_t ws_bytes = kk::rms_norm_backward_workspace_bytes(rows, cols);
  DeviceBuffer<unsigned char> ws(ws_bytes);
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    ws.poison();
    ASSERT_EQ(kk::rms_norm_backward(dy.get(), x.get(), w.get(), rstd.get(), dx.get(), dw.get(),
                                    rows, cols, ws.get(), ws_bytes),
              cudaSuccess);
    auto got = dw.download();
    const auto d = dx.download();
    got.insert(got.end(), d.begin(), d.end());
    if (run == 0) first = got;
    EXPECT_TRUE(kktest::same_bits(got, first)) << "run " << run;
  }
  dx.poison();
  dw.poison();
  const auto dx_before = dx.download(), dw_before = dw.download();
  EXPECT_EQ(kk::rms_norm_backward(dy.get(), x.get(), w.get(), rstd.get(), dx.get(), dw.get(), rows,
                                  cols, ws.get(), ws_bytes - 4),
            cudaErrorInvalidValue);  // workspace too small
  EXPECT_EQ(kk::rms_norm_backward(dy.get(), x.get(), static_cast<const float*>(nullptr), rstd.get(),
                                  dx.get(), dw.get(), rows, cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);  // dweight without a weight
  EXPECT_EQ(kk::rms_norm_backward(dy.get(), x.get(), w.get(), rstd.get(), dx.get(), dw.get(), -1,
                                  cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm_backward(dy.get(), x.get(), w.get(), static_cast<const float*>(nullptr),
                                  dx.get(), dw.get(), rows, cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm_backward(dy.get(), x.get(), w.get(), rstd.get(), x.get() + 1, dw.get(),
                                  rows, cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);  // dx partly over x
  EXPECT_EQ(kk::rms_norm_backward(dy.get(), x.get(), w.get(), rstd.get(), dx.get(), dw.get(), rows,
                                  cols, dx.get(), ws_bytes),
            cudaErrorInvalidValue);  // workspace over dx
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(dx.download(), dx_before));
  EXPECT_TRUE(kktest::same_bits(dw.download(), dw_before));
  // no rows: dweight is the empty sum
  ASSERT_EQ(kk::rms_norm_backward(dy.get(), x.get(), w.get(), rstd.get(), dx.get(), dw.get(), 0,
                                  cols, nullptr, 0),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(dw.download(), std::vector<float>(cols, 0.f)));
}

}  // namespace
