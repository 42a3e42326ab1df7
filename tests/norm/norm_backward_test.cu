// SPDX-License-Identifier: Apache-2.0
// The backward passes (rms_norm_backward, layer_norm_backward, add_rms_norm_backward) on the GPU
// against float64 (dx; dweight and dbias summed over the rows): fresh random inputs, outputs and
// the workspace poisoned, widths {1, 31, 33, 127, 256, 512, 4096, 12289, 20000} (a warp's or a
// block's registers, streamed), rows {1, 3, 261, 700} (more rows than blocks: a block's partials
// over several rows), pointers off the pack grid, weight, dweight, dbias and dsum present or
// not, float and same-type weights, dx in place over dy or dsum, every entry of
// kNormBackwardConfigs forced for each kind, determinism, bad arguments (nothing written), a call
// past 2^31 elements; and on the host plan_norm_backward over the test devices and
// norm_backward_args_ok.
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
using kk::NormKind;
using kktest::DeviceBuffer;

namespace {

class NormBackwardTest : public kktest::GpuTest {};

const char* kind_name(NormKind k) {
  return k == NormKind::kRms ? "rms" : (k == NormKind::kLayer ? "layer" : "add_rms");
}

std::string describe_config(const kk::NormBackwardConfig& c) {
  return "elem=" + std::to_string(c.elem_bytes) + " pack=" + std::to_string(c.pack) +
         " threads=" + std::to_string(c.threads) + " block=" + std::to_string(c.block) +
         " packs=" + std::to_string(c.packs) + (c.split ? " split" : "");
}

kk::NormBackwardPlan plan_of(int64_t rows, int64_t cols, int elem, int gradients,
                             const kk::DeviceInfo& d, int off = 0) {
  const kk::Alignment x_at = kk::common_alignment(kk::Alignment(off), kk::Alignment(cols * elem));
  const NormKind kind = gradients == 2 ? NormKind::kLayer : NormKind::kRms;
  const int64_t fewest =
      kk::norm_backward_fewest_bytes(kind, rows, cols, elem, elem, true, gradients, false);
  return kk::plan_norm_backward(rows, cols, elem, elem, x_at, kk::Alignment(), gradients, fewest,
                                d);
}

TEST(NormBackwardPlan, ListedShapesOnAnH100) {
  struct Expect {
    int64_t rows, cols;
    int elem, pack, threads, block, packs;
    int64_t parts;
  };
  // register entries: a warp per row up to 256 columns (128 one element per access), else the
  // smallest block holding the row; one wave of blocks (64 registers: 65536 / (block x 64) a
  // SM); streamed past 8192 columns (4096 one element per access)
  const Expect table[] = {
      {8192, 4096, 2, 8, 512, 512, 1, 264},
      {8192, 4096, 4, 4, 512, 512, 2, 264},
      {32768, 8192, 2, 8, 1024, 1024, 1, 132},
      {32768, 8192, 4, 4, 1024, 1024, 2, 132},
      {4096, 16384, 2, 8, 256, 256, 0, 512},
      {4096, 16384, 4, 4, 256, 256, 0, 512},
      {1, 4096, 2, 8, 512, 512, 1, 1},
      {64, 8192, 4, 4, 1024, 1024, 2, 64},
      {65536, 768, 2, 8, 128, 128, 1, 1056},
      {65536, 768, 4, 4, 128, 128, 2, 1056},
      {65536, 256, 2, 8, 32, 128, 1, 1056},
      {3375428, 96, 4, 4, 32, 128, 1, 1056},
      {7, 33, 4, 1, 32, 128, 4, 2},
      {1000, 4097, 2, 1, 256, 256, 0, 512},
      {1000, 4095, 2, 1, 1024, 1024, 4, 132},
      {10717422, 47, 2, 1, 32, 128, 4, 1056},
      {3, 1 << 20, 4, 4, 512, 512, 0, 3},
      {7, 16385, 2, 1, 512, 512, 0, 7},
  };
  for (const Expect& e : table) {
    const kk::NormBackwardPlan p = plan_of(e.rows, e.cols, e.elem, 1, kktest::h100());
    const std::string where =
        std::to_string(e.rows) + "x" + std::to_string(e.cols) + " elem " + std::to_string(e.elem);
    EXPECT_EQ(p.pack, e.pack) << where;
    EXPECT_EQ(static_cast<int>(p.shape.block.x), e.block) << where;
    EXPECT_EQ(p.threads, e.threads) << where;
    EXPECT_EQ(p.packs, e.packs) << where;
    EXPECT_EQ(p.parts, e.parts) << where;
  }
  // few rows past the register entries split over a cooperative grid, where one can launch
  kk::DeviceInfo d = kktest::h100();
  EXPECT_EQ(plan_of(3, 1 << 20, 4, 2, d).split, 88);  // 264 slots / 3 rows
  d.cooperative_launch = false;
  EXPECT_EQ(plan_of(3, 1 << 20, 4, 2, d).split, 1);
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
      for (const int64_t cols :
           {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{96}, int64_t{127}, int64_t{129},
            int64_t{256}, int64_t{257}, int64_t{768}, int64_t{1024}, int64_t{2048}, int64_t{4095},
            int64_t{4096}, int64_t{4097}, int64_t{8192}, int64_t{8200}, int64_t{300000}}) {
        for (const int64_t rows : {int64_t{1}, int64_t{700}, int64_t{1} << 20}) {
          for (const int off : {0, elem}) {
            for (const int gradients : {0, 1, 2}) {
              const NormKind kind = gradients == 2 ? NormKind::kLayer : NormKind::kRms;
              const int64_t fewest = kk::norm_backward_fewest_bytes(kind, rows, cols, elem, elem,
                                                                    true, gradients, false);
              const kk::NormBackwardPlan p = plan_of(rows, cols, elem, gradients, dev.info, off);
              const std::string where = std::string(dev.name) + " " + std::to_string(rows) + "x" +
                                        std::to_string(cols) + " off " + std::to_string(off) +
                                        " grads " + std::to_string(gradients);
              ASSERT_GE(planned.count(kk::norm_backward_config(p, elem), range.begin, range.end), 0)
                  << where;
              EXPECT_EQ(p.pack, off == 0 && (cols * elem) % 16 == 0 ? 16 / elem : 1) << where;
              EXPECT_EQ(int64_t{p.shape.grid.x}, p.parts * p.split) << where;
              EXPECT_GE(p.parts, 1) << where;
              EXPECT_LE(static_cast<int>(p.shape.block.x), dev.info.max_threads_per_block) << where;
              EXPECT_GE(p.reduce.grid.x, 1u) << where;
              EXPECT_EQ(p.reduce.grid.y, static_cast<unsigned>(std::max(gradients, 1))) << where;
              EXPECT_EQ(p.gradients, gradients) << where;
              const int64_t partials = int64_t{gradients} * 2 * p.parts * cols * 4;
              if (p.packs > 0) {
                // the row in a warp's or the block's registers, read once; one wave of blocks
                // that fit (registers and the warps' shared sums)
                const int block = static_cast<int>(p.shape.block.x);
                EXPECT_TRUE(p.threads == 32 || p.threads == block) << where;
                const int bps = kk::blocks_per_sm(
                    dev.info, block, 64,
                    kk::detail::norm_backward_smem(p.threads, block, p.pack, p.packs));
                EXPECT_GE(bps, 1) << where;
                EXPECT_GE(int64_t{p.threads} * p.packs * p.pack, cols) << where;
                EXPECT_LE(p.pack * p.packs, 8) << where;
                const int64_t per_block = block / p.threads;
                EXPECT_EQ(p.parts, std::min({rows, kk::norm_backward_parts_cap(cols),
                                             (rows + per_block - 1) / per_block,
                                             int64_t{bps} * dev.info.sm_count}))
                    << where;
                EXPECT_EQ(p.bytes, fewest + partials) << where;
              } else {
                // streamed only where no register entry holds the row
                EXPECT_GT(cols, p.pack == 1 ? 4096 : 8192) << where;
                EXPECT_EQ(p.shape.cooperative, p.split > 1) << where;
                if (p.split > 1) {
                  // every block resident (64 registers: 512 x 2), chunks of at least 8
                  // accesses, only where a row a slot leaves half of them idle
                  const int64_t slots =
                      int64_t{kk::blocks_per_sm(dev.info, 512, 64, 0)} * dev.info.sm_count;
                  EXPECT_EQ(int64_t{p.shape.grid.x}, rows * p.split) << where;
                  EXPECT_LE(int64_t{p.shape.grid.x}, slots) << where;
                  EXPECT_GE(cols / p.pack / p.split, 8) << where;
                  EXPECT_LE(rows * 2, slots) << where;
                  EXPECT_EQ(p.shape.block.x, 512u) << where;
                }
                EXPECT_EQ(p.parts, std::min<int64_t>(rows, kk::kNormBackwardParts)) << where;
                // the fewest bytes, the partials written and read back, and at most one more
                // read of dy and x
                EXPECT_GE(p.bytes, fewest + partials) << where;
                EXPECT_LE(p.bytes, fewest + partials + 2 * rows * cols * elem) << where;
              }
              EXPECT_GE(kk::rms_norm_backward_workspace_bytes(rows, cols),
                        static_cast<size_t>(p.parts * cols * 4))
                  << where;
              // the workspace holds a row of partials a block (at most) for each gradient
              EXPECT_EQ(
                  kk::rms_norm_backward_workspace_bytes(rows, cols),
                  static_cast<size_t>(std::min(rows, kk::norm_backward_parts_cap(cols)) * cols * 4))
                  << where;
              EXPECT_EQ(kk::layer_norm_backward_workspace_bytes(rows, cols),
                        2 * kk::rms_norm_backward_workspace_bytes(rows, cols))
                  << where;
              EXPECT_EQ(kk::add_rms_norm_backward_workspace_bytes(rows, cols),
                        kk::rms_norm_backward_workspace_bytes(rows, cols))
                  << where;
            }
          }
        }
      }
    }
  }
  planned.expect_every_entry_planned(describe_config, "never planned:");
  EXPECT_EQ(kk::rms_norm_backward_workspace_bytes(0, 10), 0u);
  EXPECT_EQ(kk::layer_norm_backward_workspace_bytes(10, 0), 0u);
  // the streamed rows' second read is priced where the rows in flight pass half the L2: on an
  // H100, 512 rows of 12288 bf16 (24 MiB of dy and x) stay, 512 of 16384 f32 (64 MiB) do not;
  // a row in registers is read once
  const kk::DeviceInfo h100 = kktest::h100();
  const auto bytes_over = [&](int64_t rows, int64_t cols, int elem) {
    const int64_t fewest =
        kk::norm_backward_fewest_bytes(NormKind::kRms, rows, cols, elem, elem, true, 0, false);
    return plan_of(rows, cols, elem, 0, h100).bytes - fewest;
  };
  EXPECT_EQ(bytes_over(8192, 4096, 2), 0);
  EXPECT_EQ(bytes_over(8192, 12288, 2), 0);
  EXPECT_EQ(bytes_over(4096, 16384, 4), int64_t{2} * 4096 * 16384 * 4);
}

TEST(NormBackwardPlan, FewestBytes) {
  // layer_norm_backward f32 8 x 16: dy, x, dx; the weight, dweight, dbias; mean, rstd
  EXPECT_EQ(kk::norm_backward_fewest_bytes(NormKind::kLayer, 8, 16, 4, 4, true, 2, false),
            3 * 8 * 16 * 4 + 3 * 16 * 4 + 2 * 8 * 4);
  // add_rms_norm_backward bf16 with dsum, no weight: dy, sum, dsum, dx; rstd
  EXPECT_EQ(kk::norm_backward_fewest_bytes(NormKind::kAddRms, 8, 16, 2, 2, false, 0, true),
            4 * 8 * 16 * 2 + 8 * 4);
}

// Fake device addresses (norm_backward_args_ok reads none of them).
template <typename T>
T* at(uintptr_t a) {
  return reinterpret_cast<T*>(a);
}

TEST(NormBackwardArgs, AcceptsValidCallsAndRejectsBadOnes) {
  using A = kk::detail::NormBackwardArgs<float, float>;
  const int64_t R = 8, C = 64;
  const float* dy = at<float>(0x100000);
  const float* x = at<float>(0x200000);
  const float* w = at<float>(0x300000);
  const float* mean = at<float>(0x400000);
  const float* rstd = at<float>(0x500000);
  const float* ds = at<float>(0x600000);
  float* dx = at<float>(0x700000);
  float* dw = at<float>(0x800000);
  float* db = at<float>(0x900000);
  void* ws = at<void>(0xa00000);
  const size_t rws = kk::rms_norm_backward_workspace_bytes(R, C);
  const size_t lws = kk::layer_norm_backward_workspace_bytes(R, C);
  const auto ok = [&](NormKind k, A a, const void* wsp, size_t bytes) {
    return kk::norm_backward_args_ok(k, a, wsp, bytes);
  };
  const auto layer = [&](const float* m, float* out, float* gw, float* gb) {
    return A{dy, x, w, m, rstd, nullptr, out, gw, gb, nullptr, nullptr, R, C};
  };
  const auto add = [&](const float* dsum, float* out, float* gw) {
    return A{dy, x, w, nullptr, rstd, dsum, out, gw, nullptr, nullptr, nullptr, R, C};
  };
  EXPECT_TRUE(ok(NormKind::kLayer, layer(mean, dx, dw, db), ws, lws));
  EXPECT_TRUE(ok(NormKind::kLayer, layer(mean, dx, nullptr, nullptr), nullptr, 0));
  EXPECT_TRUE(ok(NormKind::kLayer, layer(mean, dx, nullptr, db), ws, lws));
  EXPECT_TRUE(ok(NormKind::kLayer, layer(mean, const_cast<float*>(dy), dw, db), ws, lws));
  EXPECT_TRUE(ok(NormKind::kAddRms, add(ds, dx, dw), ws, rws));
  EXPECT_TRUE(ok(NormKind::kAddRms, add(nullptr, dx, nullptr), nullptr, 0));
  EXPECT_TRUE(ok(NormKind::kAddRms, add(ds, const_cast<float*>(ds), dw), ws, rws));  // dx = dsum
  EXPECT_TRUE(ok(NormKind::kAddRms, add(ds, const_cast<float*>(dy), dw), ws, rws));  // dx = dy
  // empty: rows == 0 writes only dweight / dbias (zeros), no workspace
  EXPECT_TRUE(
      ok(NormKind::kLayer,
         A{nullptr, nullptr, w, nullptr, nullptr, nullptr, nullptr, dw, db, nullptr, nullptr, 0, C},
         nullptr, 0));
  EXPECT_FALSE(ok(NormKind::kLayer,
                  A{nullptr, nullptr, w, nullptr, nullptr, nullptr, nullptr, dw, dw + 3, nullptr,
                    nullptr, 0, C},
                  nullptr, 0));  // dweight and dbias overlap
  // the workspace: layer_norm's is twice rms_norm's; non-null, 4-byte aligned, apart
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, dw, db), ws, rws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, nullptr, db), ws, lws - 4));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, dw, db), nullptr, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, dw, db), at<void>(0xa00002), lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, dw, db), dx + 4, lws));
  EXPECT_FALSE(ok(NormKind::kAddRms, add(ds, dx, dw), ws, rws - 1));
  // operands of another kind, missing ones, dweight without a weight
  EXPECT_FALSE(ok(NormKind::kRms, layer(mean, dx, dw, nullptr), ws, lws));
  EXPECT_FALSE(ok(NormKind::kRms, layer(nullptr, dx, dw, db), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, add(ds, dx, dw), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(nullptr, dx, dw, db), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, nullptr, dw, db), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer,
                  A{dy, x, nullptr, mean, rstd, nullptr, dx, dw, nullptr, nullptr, nullptr, R, C},
                  ws, lws));
  EXPECT_FALSE(ok(static_cast<NormKind>(7), layer(mean, dx, dw, db), ws, lws));
  // sizes, alignment
  EXPECT_FALSE(ok(NormKind::kLayer,
                  A{dy, x, w, mean, rstd, nullptr, dx, dw, db, nullptr, nullptr, -1, C}, ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer,
                  A{dy, x, w, mean, rstd, nullptr, dx, dw, db, nullptr, nullptr, INT64_MAX / 2, 3},
                  ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean + 0, at<float>(0x700002), dw, db), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(at<float>(0x400001), dx, dw, db), ws, lws));
  EXPECT_FALSE(ok(NormKind::kAddRms, add(at<float>(0x600002), dx, dw), ws, rws));
  // overlaps
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, dw, dw), ws, lws));  // dbias over dweight
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, dw, dx + 8), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, const_cast<float*>(x), dw, db), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, dx, dw, const_cast<float*>(mean)), ws, lws));
  EXPECT_FALSE(ok(NormKind::kLayer, layer(mean, const_cast<float*>(dy) + 1, dw, db), ws, lws));
  EXPECT_FALSE(ok(NormKind::kAddRms, add(ds, const_cast<float*>(ds) + 1, dw), ws, rws));
  EXPECT_FALSE(ok(NormKind::kAddRms, add(ds, dx, const_cast<float*>(ds)), ws, rws));
  EXPECT_FALSE(ok(NormKind::kAddRms, add(ds, dx, dw), const_cast<float*>(ds), rws));
}

template <typename T>
kktest::Tolerance dx_tolerance() {
  if constexpr (std::is_same_v<T, float>) {
    return {2e-5, 2e-5, 0};
  } else {
    return {1e-5, 0, 1};
  }
}

struct Case {
  NormKind kind = NormKind::kRms;
  int64_t rows = 1, cols = 1;
  int off = 0;          // elements every operand starts past the 16-byte grid
  bool weight = true;   // a weight
  bool dweight = true;  // dweight wanted (with a weight)
  bool dbias = false;   // dbias wanted (kLayer)
  bool dsum = false;    // a gradient on the sum (kAddRms)
  int in_place = 0;     // dx over: 0 its own buffer, 1 dy, 2 dsum
  const kk::NormBackwardConfig* force = nullptr;  // launch this entry (2 blocks)
};

std::string label(const Case& c, const char* t, const char* w, uint64_t seed) {
  return std::string(kind_name(c.kind)) + " " + t + "/" + w + " " + std::to_string(c.rows) + "x" +
         std::to_string(c.cols) + " off=" + std::to_string(c.off) +
         " weight=" + std::to_string(c.weight) + " dweight=" + std::to_string(c.dweight) +
         " dbias=" + std::to_string(c.dbias) + " dsum=" + std::to_string(c.dsum) +
         " in_place=" + std::to_string(c.in_place) +
         (c.force ? " force " + describe_config(*c.force) : std::string()) +
         " seed=" + std::to_string(seed);
}

template <typename T, typename W>
void run_case(const Case& c, uint64_t seed) {
  const int64_t rows = c.rows, cols = c.cols, n = rows * cols;
  const std::string where = label(c, kk::type_name<T>(), kk::type_name<W>(), seed);
  const bool layer = c.kind == NormKind::kLayer, add = c.kind == NormKind::kAddRms;
  const bool dweight = c.weight && c.dweight, dbias = layer && c.dbias, dsum = add && c.dsum;
  const auto x = kktest::random_vector<T>(n, seed);  // kAddRms: the saved sum
  const auto dy = kktest::random_vector<T>(n, seed + 1);
  const auto w = kktest::random_vector<W>(cols, seed + 2, 0.5, 1.5);
  const auto ds = kktest::random_vector<T>(dsum ? n : 0, seed + 3);
  // the statistics the forward saves (as floats), from float64
  std::vector<float> mean(rows, 0.f), rstd(rows);
  for (int64_t i = 0; i < rows; ++i) {
    double m = 0, var = 0;
    if (layer) {
      for (int64_t j = 0; j < cols; ++j)
        m += kktest::to_double(x[i * cols + j]);
      m /= double(cols);
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double d = kktest::to_double(x[i * cols + j]) - m;
      var += d * d;
    }
    mean[i] = static_cast<float>(m);
    rstd[i] = static_cast<float>(1.0 / std::sqrt(var / double(cols) + 1e-5));
  }
  // float64 reference from the saved statistics
  std::vector<double> ref_dx(n), ref_dw(cols, 0.0), ref_db(cols, 0.0), xhat(cols), g(cols);
  for (int64_t i = 0; i < rows; ++i) {
    const double r = rstd[i];
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double dv = kktest::to_double(dy[i * cols + j]);
      xhat[j] = (kktest::to_double(x[i * cols + j]) - double(mean[i])) * r;
      g[j] = dv * (c.weight ? kktest::to_double(w[j]) : 1.0);
      sg += g[j];
      sgx += g[j] * xhat[j];
      ref_dw[j] += dv * xhat[j];
      ref_db[j] += dv;
    }
    const double mg = layer ? sg / double(cols) : 0.0, mgx = sgx / double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      ref_dx[i * cols + j] =
          r * (g[j] - mg - xhat[j] * mgx) + (dsum ? kktest::to_double(ds[i * cols + j]) : 0.0);
    }
  }

  const int64_t off = c.off;
  DeviceBuffer<T> ddy(n + off + 1), dxin(n + off + 1), dds(n + off + 1), ddx(n + off + 1);
  DeviceBuffer<W> dw(cols + off + 1), ddw(cols + off + 1), ddb(cols + off + 1);
  DeviceBuffer<float> dmean(rows), drstd(rows);
  const size_t ws_bytes = kk::norm_backward_workspace_bytes(c.kind, rows, cols);
  DeviceBuffer<unsigned char> ws(ws_bytes + 16);
  ddx.poison();
  ddw.poison();
  ddb.poison();
  ws.poison();
  CUDA_CHECK(cudaMemcpy(ddy.get() + off, dy.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dxin.get() + off, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  if (dsum)
    CUDA_CHECK(cudaMemcpy(dds.get() + off, ds.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dw.get() + off, w.data(), cols * sizeof(W), cudaMemcpyHostToDevice));
  dmean.upload(mean);
  drstd.upload(rstd);
  const T* pdy = ddy.get() + off;
  const T* px = dxin.get() + off;
  const T* pds = dsum ? dds.get() + off : nullptr;
  const W* pw = c.weight ? dw.get() + off : nullptr;
  W* pdw = dweight ? ddw.get() + off : nullptr;
  W* pdb = dbias ? ddb.get() + off : nullptr;
  T* out = c.in_place == 1 ? ddy.get() + off
                           : (c.in_place == 2 && dsum ? dds.get() + off : ddx.get() + off);
  cudaError_t err = cudaSuccess;
  if (c.force != nullptr) {
    // the entry's kernel on 2 blocks (a block's partials over several rows where rows > 2)
    kk::NormBackwardPlan p;
    p.pack = c.force->pack;
    p.packs = c.force->packs;
    p.threads = c.force->threads;
    p.parts = std::min<int64_t>(rows, 2);
    p.gradients = (pdw ? 1 : 0) + (pdb ? 1 : 0);
    p.shape.block = dim3(static_cast<unsigned>(c.force->block));
    p.shape.grid = dim3(static_cast<unsigned>(p.parts));
    if (c.force->split) {  // each row over 3 blocks of a cooperative grid
      p.split = 3;
      p.parts = rows;
      p.shape.grid = dim3(static_cast<unsigned>(rows * 3));
      p.shape.cooperative = true;
    }
    p.reduce.block = dim3(256);
    p.reduce.grid = dim3(3, static_cast<unsigned>(std::max(p.gradients, 1)));
    float* part = reinterpret_cast<float*>(ws.get());
    const kk::detail::NormBackwardArgs<T, W> a{pdy,
                                               px,
                                               pw,
                                               layer ? dmean.get() : nullptr,
                                               drstd.get(),
                                               pds,
                                               out,
                                               pdw,
                                               pdb,
                                               pdw ? part : nullptr,
                                               pdb ? part + (pdw ? p.parts * cols : 0) : nullptr,
                                               rows,
                                               cols};
    err = kk::launch_norm_backward(p, c.kind, a, nullptr);
  } else if (c.kind == NormKind::kRms) {
    err = kk::rms_norm_backward(px, pdy, pw, drstd.get(), out, pdw, rows, cols, ws.get(), ws_bytes);
  } else if (layer) {
    err = kk::layer_norm_backward(px, pdy, pw, dmean.get(), drstd.get(), out, pdw, pdb, rows, cols,
                                  ws.get(), ws_bytes);
  } else {
    err = kk::add_rms_norm_backward(px, pdy, pds, pw, drstd.get(), out, pdw, rows, cols, ws.get(),
                                    ws_bytes);
  }
  ASSERT_EQ(err, cudaSuccess) << where;
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(kktest::check_near(got, ref_dx, dx_tolerance<T>(), where + " dx"));
  const kktest::Tolerance sum_tol{1e-6 * double(rows), 1e-5, std::is_same_v<W, float> ? 0.0 : 1.0};
  if (dweight) {
    std::vector<W> gw(cols);
    CUDA_CHECK(cudaMemcpy(gw.data(), pdw, cols * sizeof(W), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(kktest::check_near(gw, ref_dw, sum_tol, where + " dweight"));
  }
  if (dbias) {
    std::vector<W> gb(cols);
    CUDA_CHECK(cudaMemcpy(gb.data(), pdb, cols * sizeof(W), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(kktest::check_near(gb, ref_db, sum_tol, where + " dbias"));
  }
}

template <typename T, typename W>
void backward_sweep(uint64_t seed) {
  int index = 0;
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    for (const int64_t cols : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{127}, int64_t{256},
                               int64_t{512}, int64_t{4096}, int64_t{12289}, int64_t{20000}}) {
      for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{261}, int64_t{700}}) {
        if (rows * cols > (int64_t{1} << 23)) continue;
        for (const int off : {0, 1}) {
          if (!kktest::sanitize_keep(index, 3)) {
            ++index;
            continue;
          }
          Case c;
          c.kind = kind, c.rows = rows, c.cols = cols, c.off = off;
          c.weight = index % 4 != 3;
          c.dweight = index % 3 != 2;
          c.dbias = index % 5 != 1;
          c.dsum = index % 4 != 2;
          c.in_place = index % 5 == 4 ? 1 : (index % 7 == 3 ? 2 : 0);
          run_case<T, W>(c, seed++);
          ++index;
        }
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

// Every entry of kNormBackwardConfigs forced once per kind (every gradient and dsum on), on 5
// rows over 2 blocks (split: each row over 3 blocks): register entries on rows as wide as they
// hold less one access, streamed ones on 3000-odd columns; 16-byte packs on the grid, one element
// per access off it.
template <typename T, typename W>
void every_configuration(uint64_t seed) {
  const kk::ConfigRange range = kk::norm_backward_configs_of(sizeof(T));
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const kk::NormBackwardConfig& e = kk::kNormBackwardConfigs[i];
    for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
      Case c;
      c.kind = kind;
      c.rows = 5;
      if (e.packs > 0) {
        c.cols = int64_t{e.threads} * e.packs * e.pack - e.pack;
        if (e.pack == 1 && c.cols % 2 == 0) --c.cols;
      } else {
        c.cols = e.pack == 1 ? 3001 : 3000 + 8 * e.pack;
      }
      c.off = e.pack == 1 ? 1 : 0;
      c.dbias = c.dsum = true;
      // split: dx over dy (over dsum for add_rms), whose parked elements are copied first
      if (e.split) c.in_place = kind == NormKind::kAddRms ? 2 : 1;
      c.force = &e;
      run_case<T, W>(c, seed++);
    }
  }
}

TEST_F(NormBackwardTest, EveryConfiguration) {
  every_configuration<float, float>(1000);
  every_configuration<__nv_bfloat16, __nv_bfloat16>(2000);
  every_configuration<__half, float>(3000);
}

// The same bits run after run: a row in registers (700 x 4096 f32: 264 blocks of 2-3 rows) and
// streamed (300 x 20000).
void expect_deterministic(int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  const auto dy = kktest::to_device(kktest::random_vector<float>(n, 50));
  const auto x = kktest::to_device(kktest::random_vector<float>(n, 51));
  const auto ds = kktest::to_device(kktest::random_vector<float>(n, 54));
  const auto w = kktest::to_device(kktest::random_vector<float>(cols, 52));
  const auto mean = kktest::to_device(kktest::random_vector<float>(rows, 55, -0.1, 0.1));
  const auto rstd = kktest::to_device(kktest::random_vector<float>(rows, 53, 0.5, 2.0));
  DeviceBuffer<float> dx(n), dw(cols), db(cols);
  for (const NormKind kind : {NormKind::kRms, NormKind::kLayer, NormKind::kAddRms}) {
    const size_t ws_bytes = kk::norm_backward_workspace_bytes(kind, rows, cols);
    DeviceBuffer<unsigned char> ws(ws_bytes);
    std::vector<float> first;
    for (int run = 0; run < 3; ++run) {
      ws.poison();
      dx.poison();
      cudaError_t err = cudaSuccess;
      if (kind == NormKind::kRms) {
        err = kk::rms_norm_backward(x.get(), dy.get(), w.get(), rstd.get(), dx.get(), dw.get(),
                                    rows, cols, ws.get(), ws_bytes);
      } else if (kind == NormKind::kLayer) {
        err = kk::layer_norm_backward(x.get(), dy.get(), w.get(), mean.get(), rstd.get(), dx.get(),
                                      dw.get(), db.get(), rows, cols, ws.get(), ws_bytes);
      } else {
        err = kk::add_rms_norm_backward(x.get(), dy.get(), ds.get(), w.get(), rstd.get(), dx.get(),
                                        dw.get(), rows, cols, ws.get(), ws_bytes);
      }
      ASSERT_EQ(err, cudaSuccess) << kind_name(kind) << " " << rows << "x" << cols;
      auto got = dw.download();
      const auto d = dx.download();
      got.insert(got.end(), d.begin(), d.end());
      if (kind == NormKind::kLayer) {
        const auto b = db.download();
        got.insert(got.end(), b.begin(), b.end());
      }
      if (run == 0) first = got;
      EXPECT_TRUE(kktest::same_bits(got, first))
          << kind_name(kind) << " " << rows << "x" << cols << " run " << run;
    }
  }
}

TEST_F(NormBackwardTest, Deterministic) {
  expect_deterministic(700, 4096);
  expect_deterministic(300, 20000);
}

TEST_F(NormBackwardTest, BadArgumentsWriteNothing) {
  const int64_t rows = 700, cols = 4096, n = rows * cols;
  const auto dy = kktest::to_device(kktest::random_vector<float>(n, 50));
  const auto x = kktest::to_device(kktest::random_vector<float>(n, 51));
  const auto w = kktest::to_device(kktest::random_vector<float>(cols, 52));
  const auto mean = kktest::to_device(kktest::random_vector<float>(rows, 56, -0.1, 0.1));
  const auto rstd = kktest::to_device(kktest::random_vector<float>(rows, 53, 0.5, 2.0));
  DeviceBuffer<float> dx(n + 1), dw(cols), db(cols), ds(n + 1);
  const size_t ws_bytes = kk::rms_norm_backward_workspace_bytes(rows, cols);
  const size_t lws_bytes = kk::layer_norm_backward_workspace_bytes(rows, cols);
  DeviceBuffer<unsigned char> ws(lws_bytes);
  dx.poison();
  dw.poison();
  db.poison();
  ds.poison();
  const auto dx_before = dx.download(), dw_before = dw.download(), db_before = db.download();
  const float* no_w = nullptr;
  const float* no_f = nullptr;
  // rms_norm_backward
  EXPECT_EQ(kk::rms_norm_backward(x.get(), dy.get(), w.get(), rstd.get(), dx.get(), dw.get(), rows,
                                  cols, ws.get(), ws_bytes - 4),
            cudaErrorInvalidValue);  // workspace too small
  EXPECT_EQ(kk::rms_norm_backward(x.get(), dy.get(), no_w, rstd.get(), dx.get(), dw.get(), rows,
                                  cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);  // dweight without a weight
  EXPECT_EQ(kk::rms_norm_backward(x.get(), dy.get(), w.get(), rstd.get(), dx.get(), dw.get(), -1,
                                  cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);
  EXPECT_EQ(kk::rms_norm_backward(x.get(), dy.get(), w.get(), no_f, dx.get(), dw.get(), rows, cols,
                                  ws.get(), ws_bytes),
            cudaErrorInvalidValue);
  EXPECT_EQ(
      kk::rms_norm_backward(x.get(), dy.get(), w.get(), rstd.get(), const_cast<float*>(x.get()) + 1,
                            dw.get(), rows, cols, ws.get(), ws_bytes),
      cudaErrorInvalidValue);  // dx partly over x
  EXPECT_EQ(kk::rms_norm_backward(x.get(), dy.get(), w.get(), rstd.get(), dx.get(), dw.get(), rows,
                                  cols, dx.get(), ws_bytes),
            cudaErrorInvalidValue);  // workspace over dx
  // layer_norm_backward
  EXPECT_EQ(kk::layer_norm_backward(x.get(), dy.get(), w.get(), mean.get(), rstd.get(), dx.get(),
                                    dw.get(), db.get(), rows, cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);  // rms_norm_backward's workspace: half of what it needs
  EXPECT_EQ(kk::layer_norm_backward(x.get(), dy.get(), w.get(), no_f, rstd.get(), dx.get(),
                                    dw.get(), db.get(), rows, cols, ws.get(), lws_bytes),
            cudaErrorInvalidValue);  // no mean
  EXPECT_EQ(kk::layer_norm_backward(x.get(), dy.get(), no_w, mean.get(), rstd.get(), dx.get(),
                                    dw.get(), db.get(), rows, cols, ws.get(), lws_bytes),
            cudaErrorInvalidValue);  // dweight without a weight
  EXPECT_EQ(kk::layer_norm_backward(x.get(), dy.get(), w.get(), mean.get(), rstd.get(), dx.get(),
                                    dw.get(), dw.get(), rows, cols, ws.get(), lws_bytes),
            cudaErrorInvalidValue);  // dbias over dweight
  EXPECT_EQ(kk::layer_norm_backward(x.get(), dy.get(), w.get(), mean.get(), rstd.get(), dx.get(),
                                    dw.get(), db.get(), rows, cols, ws.get() + 2, lws_bytes - 2),
            cudaErrorInvalidValue);  // misaligned workspace
  EXPECT_EQ(kk::layer_norm_backward(x.get(), dy.get(), w.get(), mean.get(), rstd.get(), dx.get(),
                                    dw.get(), db.get(), rows, -3, ws.get(), lws_bytes),
            cudaErrorInvalidValue);
  // add_rms_norm_backward
  EXPECT_EQ(kk::add_rms_norm_backward(x.get(), dy.get(), ds.get(), w.get(), rstd.get(),
                                      ds.get() + 1, dw.get(), rows, cols, ws.get(), ws_bytes),
            cudaErrorInvalidValue);  // dx partly over dsum
  EXPECT_EQ(kk::add_rms_norm_backward(x.get(), dy.get(), ds.get(), w.get(), rstd.get(), dx.get(),
                                      dw.get(), rows, cols, ds.get(), ws_bytes),
            cudaErrorInvalidValue);  // workspace over dsum
  EXPECT_EQ(kk::add_rms_norm_backward(x.get(), dy.get(), ds.get(), w.get(), rstd.get(), dx.get(),
                                      dw.get(), rows, cols, nullptr, 0),
            cudaErrorInvalidValue);  // no workspace
  EXPECT_EQ(
      kk::add_rms_norm_backward(
          x.get(), reinterpret_cast<const float*>(reinterpret_cast<const char*>(dy.get()) + 2),
          ds.get(), w.get(), rstd.get(), dx.get(), dw.get(), rows, cols, ws.get(), ws_bytes),
      cudaErrorInvalidValue);  // dy misaligned for float
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(dx.download(), dx_before));
  EXPECT_TRUE(kktest::same_bits(dw.download(), dw_before));
  EXPECT_TRUE(kktest::same_bits(db.download(), db_before));
  // no rows: dweight and dbias are the empty sums; no columns: nothing
  ASSERT_EQ(kk::rms_norm_backward(x.get(), dy.get(), w.get(), rstd.get(), dx.get(), dw.get(), 0,
                                  cols, nullptr, 0),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(dw.download(), std::vector<float>(cols, 0.f)));
  dw.poison();
  ASSERT_EQ(kk::layer_norm_backward(no_f, no_f, w.get(), no_f, no_f, static_cast<float*>(nullptr),
                                    dw.get(), db.get(), 0, cols, nullptr, 0),
            cudaSuccess);
  ASSERT_EQ(kk::add_rms_norm_backward(no_f, no_f, no_f, no_w, no_f, static_cast<float*>(nullptr),
                                      static_cast<float*>(nullptr), rows, 0, nullptr, 0),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kktest::same_bits(dw.download(), std::vector<float>(cols, 0.f)));
  EXPECT_TRUE(kktest::same_bits(db.download(), std::vector<float>(cols, 0.f)));
  EXPECT_TRUE(kktest::same_bits(dx.download(), dx_before));
}

// layer_norm_backward over rows x cols past 2^31 elements (bf16, 4 GiB a matrix): dy and x zero
// but for 3 rows at each end (the middle rows' mean 0 and rstd 1: they add nothing to the
// sums); those rows' dx, and dweight and dbias over every row, against float64.
TEST_F(NormBackwardTest, KK_LARGE(PastTwoToThe31Elements)) {
  using T = __nv_bfloat16;
  const int64_t cols = 4096, rows = (int64_t{1} << 31) / cols + 3, n = rows * cols, k = 3;
  DeviceBuffer<T> x(n), dy(n), dx(n);
  DeviceBuffer<float> dw(cols), db(cols);
  CUDA_CHECK(cudaMemset(x.get(), 0, n * sizeof(T)));
  CUDA_CHECK(cudaMemset(dy.get(), 0, n * sizeof(T)));
  const auto w = kktest::random_vector<float>(cols, 902, 0.5, 1.5);
  const auto dw_in = kktest::to_device(w);
  std::vector<float> mean(rows, 0.f), rstd(rows, 1.f);
  std::vector<std::vector<T>> hx, hdy;
  std::vector<double> ref_dw(cols, 0.0), ref_db(cols, 0.0);
  std::vector<std::vector<double>> ref_dx;
  for (int end = 0; end < 2; ++end) {
    hx.push_back(kktest::random_vector<T>(k * cols, 903 + end));
    hdy.push_back(kktest::random_vector<T>(k * cols, 905 + end));
    const int64_t first = end == 0 ? 0 : rows - k;
    CUDA_CHECK(cudaMemcpy(x.get() + first * cols, hx[end].data(), k * cols * sizeof(T),
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dy.get() + first * cols, hdy[end].data(), k * cols * sizeof(T),
                          cudaMemcpyHostToDevice));
    ref_dx.emplace_back(k * cols);
    for (int64_t i = 0; i < k; ++i) {
      double m = 0, var = 0;
      for (int64_t j = 0; j < cols; ++j)
        m += kktest::to_double(hx[end][i * cols + j]);
      m /= double(cols);
      for (int64_t j = 0; j < cols; ++j) {
        const double d = kktest::to_double(hx[end][i * cols + j]) - m;
        var += d * d;
      }
      mean[first + i] = static_cast<float>(m);
      rstd[first + i] = static_cast<float>(1.0 / std::sqrt(var / double(cols) + 1e-5));
      const double r = rstd[first + i];
      double sg = 0, sgx = 0;
      std::vector<double> xh(cols), g(cols);
      for (int64_t j = 0; j < cols; ++j) {
        const double dv = kktest::to_double(hdy[end][i * cols + j]);
        xh[j] = (kktest::to_double(hx[end][i * cols + j]) - double(mean[first + i])) * r;
        g[j] = dv * w[j];
        sg += g[j];
        sgx += g[j] * xh[j];
        ref_dw[j] += dv * xh[j];
        ref_db[j] += dv;
      }
      for (int64_t j = 0; j < cols; ++j)
        ref_dx[end][i * cols + j] = r * (g[j] - sg / double(cols) - xh[j] * sgx / double(cols));
    }
  }
  const auto dmean = kktest::to_device(mean), drstd = kktest::to_device(rstd);
  const size_t ws_bytes = kk::layer_norm_backward_workspace_bytes(rows, cols);
  DeviceBuffer<unsigned char> ws(ws_bytes);
  ws.poison();
  dx.poison();
  dw.poison();
  db.poison();
  ASSERT_EQ(kk::layer_norm_backward(x.get(), dy.get(), dw_in.get(), dmean.get(), drstd.get(),
                                    dx.get(), dw.get(), db.get(), rows, cols, ws.get(), ws_bytes),
            cudaSuccess);
  CUDA_CHECK(cudaDeviceSynchronize());
  for (int end = 0; end < 2; ++end) {
    std::vector<T> got(k * cols);
    CUDA_CHECK(cudaMemcpy(got.data(), dx.get() + (end == 0 ? 0 : n - k * cols),
                          got.size() * sizeof(T), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(
        kktest::check_near(got, ref_dx[end], dx_tolerance<T>(), end == 0 ? "head" : "tail"));
  }
  const kktest::Tolerance sum_tol{1e-5, 1e-5, 0};
  EXPECT_TRUE(kktest::check_near(dw.download(), ref_dw, sum_tol, "dweight"));
  EXPECT_TRUE(kktest::check_near(db.download(), ref_db, sum_tol, "dbias"));
}

}  // namespace
