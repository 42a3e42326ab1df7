// SPDX-License-Identifier: Apache-2.0
// The sgemm plan of every generated sgemm case of a bench seed, on the host (no GPU): one line
// a case, its bench name, the plan (path, entry, split, grid) and the modeled time at 1.755 GHz
// (the tiled or the skinny model of sgemm_plan.cuh), as the H100 plans it with the bench's
// workspace (sgemm_workspace_bytes) and 16-byte aligned buffers. Joined with a results file's
// median_us (bench/NOTES.md, sgemm, "Session 2026-11-28, third") it sorts the losses into
// classes by path and tile and shows measured over modeled. Build and run from the repo root:
//   nvcc -std=c++17 -O1 -Iinclude -Ibench bench/probes/sgemm_plan_eval.cu bench/shapes.cpp \
//     -o /tmp/sgemm_plan_eval && /tmp/sgemm_plan_eval 2
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../tests/common/devices.cuh"
#include "kernelkit/blas/sgemm_plan.cuh"
#include "shapes.h"

namespace {

using kernelkit::BlasOp;
using kernelkit::SgemmPath;
using kernelkit::SgemmPlan;

constexpr double kClockMhz = 1755;  // H100 SXM, the model's cycles to microseconds

// The modeled cycles of a plan the tiled search made (its choice rebuilt from the plan).
double tiled_cycles(const SgemmPlan& p, int64_t m, int64_t n, int64_t k,
                    const kernelkit::DeviceInfo& d) {
  namespace kd = kernelkit::detail;
  const kernelkit::SgemmTiledPlan& t = p.tiled;
  kd::SgemmTiledChoice c;
  c.tile = t.tile, c.fit = {t.stages, t.blocks_per_sm};
  c.dp_tiles = t.dp_tiles, c.split_tiles = t.split_tiles, c.splits = t.splits;
  c.split_k_tiles = t.split_k_tiles, c.load_b = t.load_b, c.pack_b = t.pack_b;
  c.trans_c = t.trans_c, c.c_vec4 = t.c_vec4;
  return kd::sgemm_tiled_time(c, t.trans_c ? n : m, t.trans_c ? m : n, k, d);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2;
  const kernelkit::DeviceInfo d = kktest::h100();
  kkbench::ShapeGen gen(seed, "sgemm");  // the draws of sgemm_bench.cu's KKBENCH_GENERATED
  struct Ops {
    BlasOp a, b;
    const char* name;
    int count;
  };
  const Ops ops[] = {{BlasOp::N, BlasOp::N, "sgemm", 48},
                     {BlasOp::T, BlasOp::N, "sgemm_tn", 16},
                     {BlasOp::N, BlasOp::T, "sgemm_nt", 16},
                     {BlasOp::T, BlasOp::T, "sgemm_tt", 16}};
  for (const Ops& o : ops) {
    const bool ta = o.a == BlasOp::T, tb = o.b == BlasOp::T;
    for (const kkbench::GemmShape& s : gen.gemm(o.count, ta, tb)) {
      const int64_t lda = s.lda(ta), ldb = s.ldb(tb), ldc = s.ldc();
      const size_t ws = kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k);
      const SgemmPlan p = kernelkit::plan_sgemm(o.a, o.b, s.m, s.n, s.k, lda, ldb, ldc, {}, ws, d);
      std::printf("%s/kernelkit/f32/%s", o.name, s.name(ta, tb).c_str());
      if (p.path == SgemmPath::kTiled) {
        const kernelkit::SgemmTiledPlan& t = p.tiled;
        std::printf(
            " tiled tile=%d load_a=%d load_b=%d trans_c=%d pack=%d c_vec4=%d dp=%lld"
            " split_tiles=%lld splits=%d grid=%u model_us=%.2f\n",
            int(t.tile), int(t.load_a), int(t.load_b), int(t.trans_c), int(t.pack_b), int(t.c_vec4),
            static_cast<long long>(t.dp_tiles), static_cast<long long>(t.split_tiles), t.splits,
            p.shape.grid.x, tiled_cycles(p, s.m, s.n, s.k, d) / kClockMhz);
      } else if (p.path == SgemmPath::kSkinny) {
        const kernelkit::SgemmSkinnyPlan& k = p.skinny;
        std::printf(
            " skinny rows=%d vec=%d mode=%d transposed=%d splits=%d grid=%u,%u"
            " model_us=%.2f\n",
            k.rows, k.vec, int(k.mode), int(k.transposed), k.splits, p.shape.grid.x, p.shape.grid.y,
            kernelkit::detail::sgemm_skinny_time(p, s.k, d) / kClockMhz);
      } else {
        std::printf(" path=%d\n", int(p.path));
      }
    }
  }
  return 0;
}
