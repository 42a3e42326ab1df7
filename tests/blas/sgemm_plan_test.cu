// SPDX-License-Identifier: Apache-2.0
// plan_sgemm on the host (no GPU): the issue's sweep shapes on an H100 -> the expected path,
// tile and split; invariants of every plan over the sweep, the four op combinations, aligned
// and unaligned operands, with and without a workspace, on every test device and on made-up
// ones (every C tile covered once, each part of K once, legal grid, shared memory within the
// device's opt-in, resident blocks, the workspace within what the caller gave and within
// sgemm_workspace_bytes); the pack of op(B) = B^T into the workspace (when it is chosen, and
// the direct kernel when the workspace is too small or B cannot be packed); sgemm_args_ok.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "blas/sgemm_config_case.cuh"
#include "common/config_tables.cuh"
#include "common/devices.cuh"
#include "kernelkit/blas/detail/sgemm_kernels.cuh"
#include "kernelkit/blas/sgemm.cuh"
#include "kernelkit/blas/sgemm_plan.cuh"

namespace {

using kernelkit::Alignment;
using kernelkit::BlasOp;
using kernelkit::DeviceInfo;
using kernelkit::SgemmPath;
using kernelkit::SgemmPlan;
using kernelkit::SgemmTile;

struct Shape {
  int64_t m, n, k;
};

// The sweep of issue 19 (NN; TN / NT / TT at 2048^3 and 3000^3).
const std::vector<Shape>& sweep() {
  static const std::vector<Shape> s = {
      {512, 512, 512},     {1000, 1000, 1000},  {1024, 1024, 1024},  {2000, 2000, 2000},
      {2048, 2048, 2048},  {3000, 3000, 3000},  {4096, 4096, 4096},  {6000, 6000, 6000},
      {8192, 8192, 8192},  {4096, 11008, 4096}, {4096, 4096, 11008}, {4096, 14336, 4096},
      {4096, 1024, 4096},  {1, 4096, 4096},     {8, 4096, 4096},     {32, 4096, 4096},
      {128, 4096, 4096},   {1, 14336, 4096},    {8192, 8192, 32},    {8192, 8192, 256},
      {1024, 1024, 32768}, {256, 256, 262144}};
  return s;
}

std::string str(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// Leading dimensions of packed operands.
struct Lds {
  int64_t lda, ldb, ldc;
};
Lds packed(BlasOp oa, BlasOp ob, const Shape& s) {
  return {oa == BlasOp::N ? s.k : s.m, ob == BlasOp::N ? s.n : s.k, s.n};
}

SgemmPlan plan(BlasOp oa, BlasOp ob, const Shape& s, size_t ws, const DeviceInfo& d,
               kernelkit::SgemmAlignment al = {}) {
  const Lds l = packed(oa, ob, s);
  return kernelkit::plan_sgemm(oa, ob, s.m, s.n, s.k, l.lda, l.ldb, l.ldc, al, ws, d);
}

// The H100 plans of the sweep with a workspace of sgemm_workspace_bytes: what the model
// chose, written down so that a change of choice is a visible decision.
struct Expected {
  Shape s;
  SgemmPath path;
  SgemmTile tile;       // kTiled
  int64_t split_tiles;  // kTiled: tiles split (0: none)
  int splits;           // kTiled / kSkinny: parts of K
  int rows;             // kSkinny
};

TEST(SgemmPlan, H100SweepChoices) {
  constexpr auto kT = SgemmPath::kTiled, kS = SgemmPath::kSkinny, kG = SgemmPath::kGemv;
  constexpr auto k256 = SgemmTile::k128x256, k128 = SgemmTile::k128x128;
  constexpr auto k64 = SgemmTile::k128x64;
  const Expected table[] = {
      {{512, 512, 512}, kT, k64, 32, 8, 0},      // 32 tiles, split-K 8: 256 blocks
      {{1000, 1000, 1000}, kT, k256, 32, 4, 0},  // 32 big tiles x 4 parts: one wave
      {{1024, 1024, 1024}, kT, k256, 32, 4, 0},
      {{2000, 2000, 2000}, kT, k256, 0, 1, 0},  // 128 tiles: one wave
      {{2048, 2048, 2048}, kT, k256, 0, 1, 0},
      {{3000, 3000, 3000}, kT, k256, 24, 5, 0},   // 288 = 2 waves + 24: tail in 5 parts
      {{4096, 4096, 4096}, kT, k256, 0, 1, 0},    // 512 = 3.9 waves
      {{6000, 6000, 6000}, kT, k256, 72, 3, 0},   // 1128 = 8 waves + 72
      {{8192, 8192, 8192}, kT, k256, 68, 3, 0},   // 2048 = 15 waves + 68
      {{4096, 11008, 4096}, kT, k256, 56, 2, 0},  // 1376 = 10 waves + 56
      {{4096, 4096, 11008}, kT, k256, 0, 1, 0},
      {{4096, 14336, 4096}, kT, k256, 76, 3, 0},  // 1792 = 13 waves + 76
      {{4096, 1024, 4096}, kT, k256, 0, 1, 0},    // 128 tiles
      {{1, 4096, 4096}, kG, k64, 0, 1, 0},
      {{8, 4096, 4096}, kS, k64, 0, 8, 8},      // 32 column blocks x 8 parts
      {{32, 4096, 4096}, kS, k64, 0, 4, 32},    // 32 x 4: one block a SM
      {{128, 4096, 4096}, kT, k256, 16, 8, 0},  // 16 tiles x 8 parts
      {{1, 14336, 4096}, kG, k64, 0, 1, 0},
      {{8192, 8192, 32}, kT, k128, 0, 1, 0},  // short K: two blocks a SM
      {{8192, 8192, 256}, kT, k256, 0, 1, 0},
      {{1024, 1024, 32768}, kT, k256, 32, 4, 0},
      {{256, 256, 262144}, kT, k256, 2, 66, 0},  // 2 tiles x 66 parts: 132 blocks
  };
  const DeviceInfo d = kktest::h100();
  for (const Expected& e : table) {
    const SgemmPlan p =
        plan(BlasOp::N, BlasOp::N, e.s, kernelkit::sgemm_workspace_bytes(e.s.m, e.s.n, e.s.k), d);
    SCOPED_TRACE(str(e.s));
    ASSERT_EQ(p.path, e.path);
    if (p.path == SgemmPath::kTiled) {
      EXPECT_EQ(p.tiled.tile, e.tile);
      EXPECT_EQ(p.tiled.split_tiles, e.split_tiles);
      EXPECT_EQ(p.tiled.splits, e.splits);
      EXPECT_EQ(p.tiled.stages, 4);
    } else if (p.path == SgemmPath::kSkinny) {
      EXPECT_EQ(p.skinny.splits, e.splits);
      EXPECT_EQ(p.skinny.rows, e.rows);
      EXPECT_EQ(p.skinny.vec, 4);
    }
    // without a workspace nothing is split
    const SgemmPlan p0 = plan(BlasOp::N, BlasOp::N, e.s, 0, d);
    EXPECT_EQ(p0.workspace_used, 0u);
    if (p0.path == SgemmPath::kTiled) EXPECT_EQ(p0.tiled.splits, 1);
    if (p0.path == SgemmPath::kSkinny) EXPECT_EQ(p0.skinny.splits, 1);
  }
  // the other op combinations at their sweep shapes keep the NN tile and split; NT packs
  // op(B) = B^T (and runs NN's copies), TT computes C^T = B A (NN's copies, no pack), with the
  // op-aware workspace bound and the bound for any ops
  for (const Shape s : {Shape{2048, 2048, 2048}, Shape{3000, 3000, 3000}})
    for (BlasOp oa : {BlasOp::N, BlasOp::T})
      for (BlasOp ob : {BlasOp::N, BlasOp::T})
        for (bool op_aware : {false, true}) {
          const size_t ws = op_aware ? kernelkit::sgemm_workspace_bytes(oa, ob, s.m, s.n, s.k)
                                     : kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k);
          const SgemmPlan p = plan(oa, ob, s, ws, d);
          SCOPED_TRACE(str(s) + (oa == BlasOp::N ? " N" : " T") + (ob == BlasOp::N ? "N" : "T"));
          ASSERT_EQ(p.path, SgemmPath::kTiled);
          EXPECT_EQ(p.tiled.tile, SgemmTile::k128x256);
          EXPECT_EQ(p.tiled.splits, s.m == 3000 ? 5 : 1);
          const bool tt = oa == BlasOp::T && ob == BlasOp::T;
          EXPECT_EQ(p.tiled.pack_b, ob == BlasOp::T && !tt);
          EXPECT_EQ(p.tiled.trans_c, tt);
          EXPECT_EQ(p.tiled.load_b, kernelkit::SgemmLoad::kMnVec4);
          if (p.tiled.pack_b) EXPECT_EQ(p.tiled.pack.path, kernelkit::TransposePath::kTile);
        }
}

// Checks every invariant of p for the call it was made for.
void check_plan(const SgemmPlan& p, BlasOp oa, BlasOp ob, const Shape& s, const Lds& l, size_t ws,
                const DeviceInfo& d, const std::string& label, kernelkit::SgemmAlignment al) {
  SCOPED_TRACE(label);
  const bool al_b16 = al.b.fits(16);
  // a configuration launch_sgemm instantiates
  ASSERT_GE(kernelkit::config_index(kernelkit::kSgemmConfigs, kernelkit::sgemm_config(p)), 0);
  EXPECT_FALSE(p.shape.is_cluster());
  EXPECT_LE(p.workspace_used, ws);
  EXPECT_LE(p.workspace_used, kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k));
  EXPECT_LE(p.workspace_used, kernelkit::sgemm_workspace_bytes(oa, ob, s.m, s.n, s.k));
  if (p.path != SgemmPath::kTiled) EXPECT_FALSE(p.tiled.pack_b);
  if (p.reduce_shape.overlap_previous) EXPECT_TRUE(d.cc_major >= 9 && d.code_arch >= 90);
  const auto legal_grid = [&](const kernelkit::LaunchShape& sh) {
    EXPECT_GE(sh.grid.x, 1u);
    EXPECT_LE(sh.grid.y, 65535u);
    EXPECT_GE(sh.block.x, 1u);
    EXPECT_LE(int(sh.block.x), d.max_threads_per_block);
    EXPECT_LE(sh.smem, size_t(d.smem_per_block_optin));
  };
  if (s.m == 0 || s.n == 0) {
    EXPECT_EQ(p.path, SgemmPath::kNone);
    return;
  }
  if (s.k == 0) {
    EXPECT_EQ(p.path, SgemmPath::kScale);
    legal_grid(p.shape);
    return;
  }
  switch (p.path) {
    case SgemmPath::kGemv: {
      EXPECT_TRUE(s.m == 1 || s.n == 1);
      const auto& g = p.gemv;
      EXPECT_EQ(p.workspace_used, g.workspace_bytes);  // what gemv may use of it
      EXPECT_LE(g.workspace_bytes, kernelkit::gemv_workspace_bytes(g.op, g.rows, g.cols));
      EXPECT_EQ(g.rows * g.cols, (s.m == 1 ? s.n : s.m) * s.k);
      // x and y contiguous: a row of C with a row of op(A), or a column with a column of op(B)
      EXPECT_TRUE((s.m == 1 && (oa == BlasOp::N || l.lda == 1)) ||
                  (s.n == 1 && l.ldc == 1 && (ob == BlasOp::T || l.ldb == 1)));
      break;
    }
    case SgemmPath::kSkinny: {
      const auto& k = p.skinny;
      legal_grid(p.shape);
      EXPECT_LE(k.m, k.rows);
      EXPECT_TRUE(k.rows == 8 || k.rows == 32);
      EXPECT_EQ(k.m, std::min(s.m, s.n));
      EXPECT_EQ(k.m * k.n, s.m * s.n);
      EXPECT_GE(int64_t{p.shape.grid.x} * k.cols_per_block, k.n);  // every column once
      EXPECT_LT(int64_t{p.shape.grid.x - 1} * k.cols_per_block, k.n);
      EXPECT_EQ(int(p.shape.grid.y), k.splits);
      // the n kernel's cheap A' staging exactly where A' rows run along k
      EXPECT_EQ(k.a_along_k, k.mode == kernelkit::SgemmSkinnyMode::kNContig && k.a_sp == 1);
      EXPECT_EQ(k.k_per_split % kernelkit::kSgemmSkinnyChunk, 0);
      EXPECT_GE(k.splits * k.k_per_split, s.k);  // every part of K once, none empty
      EXPECT_LT((k.splits - 1) * k.k_per_split, s.k);
      EXPECT_LE(p.shape.smem, size_t(d.smem_per_block));  // no opt-in needed
      // two staged chunks of A' fit (kNContig: [p][i] rows of rows + pad floats; kKContig:
      // [i][p] rows of chunk + pad floats)
      const int64_t stride = k.mode == kernelkit::SgemmSkinnyMode::kNContig
                                 ? k.rows + kernelkit::kSgemmPad
                                 : kernelkit::kSgemmSkinnyChunk + kernelkit::kSgemmPad;
      const int64_t lines =
          k.mode == kernelkit::SgemmSkinnyMode::kNContig ? kernelkit::kSgemmSkinnyChunk : k.rows;
      EXPECT_GE(int64_t(p.shape.smem), 4 * 2 * lines * stride);
      EXPECT_GE(kernelkit::blocks_per_sm(d, kernelkit::kSgemmSkinnyThreads, k.rows > 8 ? 255 : 128,
                                         int64_t(p.shape.smem)),
                1);
      if (k.splits > 1) {
        EXPECT_EQ(p.workspace_used, size_t(4 * k.splits * k.m * k.n));
        EXPECT_GE(int64_t{p.reduce_shape.grid.x} * p.reduce_shape.block.x, 1);
      } else {
        EXPECT_EQ(p.workspace_used, 0u);
      }
      if (k.vec == 4) EXPECT_EQ(k.ldb % 4, 0);
      break;
    }
    case SgemmPath::kTiled: {
      const auto& t = p.tiled;
      legal_grid(p.shape);
      if (std::min(s.m, s.n) <= kernelkit::kSgemmSkinnyMaxRows) {
        // at most 32 rows or columns: only where the skinny path's model (plus a call's fixed
        // cost) is slower than this plan's by more than the margin, within the skinny
        // workspace bound
        namespace kd = kernelkit::detail;
        kd::SgemmTiledChoice c;
        c.tile = t.tile, c.fit = {t.stages, t.blocks_per_sm};
        c.dp_tiles = t.dp_tiles, c.split_tiles = t.split_tiles, c.splits = t.splits;
        c.split_k_tiles = t.split_k_tiles, c.load_b = t.load_b, c.pack_b = t.pack_b;
        c.trans_c = t.trans_c, c.c_vec4 = t.c_vec4;
        const double tiled_time =
            kd::sgemm_tiled_time(c, t.trans_c ? s.n : s.m, t.trans_c ? s.m : s.n, s.k, d);
        const SgemmPlan sk =
            kd::sgemm_plan_skinny(oa, ob, s.m, s.n, s.k, l.lda, l.ldb, l.ldc, al, ws, d);
        EXPECT_LT((tiled_time + kd::kSgemmCallCycles) * kd::kSgemmSkinnyToTiledMargin,
                  kd::sgemm_skinny_time(sk, s.k, d) + kd::kSgemmCallCycles);
        EXPECT_LE(p.workspace_used, kd::sgemm_skinny_workspace_bound(s.m, s.n, s.k));
      }
      EXPECT_TRUE(kernelkit::sgemm_tile_allowed(t.tile, t.load_a, t.load_b, t.trans_c));
      const auto sh = kernelkit::sgemm_tile_shape(t.tile);
      // the kernel's C: C, or C^T (n x m)
      const int64_t km = t.trans_c ? s.n : s.m, kn = t.trans_c ? s.m : s.n;
      EXPECT_EQ(t.tiles_m, kernelkit::ceil_div<int64_t>(km, sh.bm));
      EXPECT_EQ(t.tiles_n, kernelkit::ceil_div<int64_t>(kn, sh.bn));
      if (t.trans_c) EXPECT_FALSE(t.pack_b);
      const int64_t tiles = t.tiles_m * t.tiles_n;
      // every tile once: whole, or in `splits` parts that cover K once
      EXPECT_EQ(t.dp_tiles + t.split_tiles, tiles);
      EXPECT_GE(t.dp_tiles, 0);
      EXPECT_EQ(int64_t{p.shape.grid.x}, t.dp_tiles + t.split_tiles * t.splits);
      EXPECT_EQ(int(p.shape.block.x), sh.threads);
      const int64_t k_tiles = kernelkit::ceil_div<int64_t>(s.k, kernelkit::kSgemmBK);
      // the pack of op(B): B^T stored without padding, n % 4 == 0, within the cap; the
      // transpose's own plan for B (n x k); the split parts after it, 16-byte aligned
      size_t pack = 0;
      if (t.pack_b) {
        EXPECT_EQ(ob, BlasOp::T);
        EXPECT_EQ(l.ldb, s.k);
        EXPECT_EQ(s.n % 4, 0);
        EXPECT_LE(4 * s.n * s.k, kernelkit::kSgemmMaxPackBytes);
        pack = t.pack_bytes;
        EXPECT_EQ(pack % 16, 0u);
        EXPECT_GE(pack, size_t(4 * s.n * s.k));
        EXPECT_LT(pack, size_t(4 * s.n * s.k + 16));
        const auto want = kernelkit::plan_transpose(s.n, s.k, 4, kernelkit::Alignment(),
                                                    kernelkit::Alignment(), d);
        if (al_b16) {
          EXPECT_EQ(t.pack.path, want.path);
        } else {
          EXPECT_NE(t.pack.path, kernelkit::TransposePath::kTile);  // 4-byte aligned rows
        }
        EXPECT_EQ(t.pack.elem_bytes, 4);
        EXPECT_EQ(t.load_b, kernelkit::SgemmLoad::kMnVec4);
      } else {
        EXPECT_EQ(t.pack_bytes, 0u);
      }
      if (t.split_tiles > 0) {
        EXPECT_GE(t.splits, 2);
        EXPECT_GE(t.split_k_tiles, t.dp_tiles > 0 ? kernelkit::kSgemmMinTailSplitKTiles
                                                  : kernelkit::kSgemmMinSplitKTiles);
        EXPECT_GE(t.splits * t.split_k_tiles, k_tiles);
        EXPECT_LT((t.splits - 1) * t.split_k_tiles, k_tiles);
        EXPECT_LE(4 * sh.bm * sh.bn * t.split_tiles * t.splits, kernelkit::kSgemmMaxSplitBytes);
        if (t.dp_tiles > 0)  // the tail behind whole waves fills at most kSgemmMaxTailWaves
          EXPECT_LE(t.split_tiles * t.splits,
                    kernelkit::kSgemmMaxTailWaves * t.blocks_per_sm * d.sm_count);
        EXPECT_EQ(p.workspace_used, pack + size_t(4 * sh.bm * sh.bn * t.split_tiles * t.splits));
        // the combine covers every element of the split tiles once
        EXPECT_EQ(int64_t{p.reduce_shape.grid.x} * p.reduce_shape.block.x * 4,
                  t.split_tiles * sh.bm * sh.bn);
        // whole waves of whole tiles before the split ones
        if (t.dp_tiles > 0) EXPECT_EQ(t.dp_tiles % (int64_t{t.blocks_per_sm} * d.sm_count), 0);
      } else {
        EXPECT_EQ(t.splits, 1);
        EXPECT_EQ(p.workspace_used, pack);
      }
      // shared memory and residency
      EXPECT_GE(t.stages, 2);
      EXPECT_LE(t.stages, kernelkit::kSgemmMaxStages);
      if (d.code_arch < 80) EXPECT_EQ(t.stages, 2);
      EXPECT_EQ(int64_t(p.shape.smem), t.stages * kernelkit::sgemm_stage_bytes(t.tile));
      EXPECT_GE(t.smem_optin, int(p.shape.smem));
      EXPECT_LE(t.smem_optin, d.smem_per_block_optin);
      EXPECT_GE(t.blocks_per_sm, 1);
      EXPECT_GE(kernelkit::blocks_per_sm(d, sh.threads, kernelkit::sgemm_tile_regs(t.tile),
                                         int64_t(p.shape.smem)),
                t.blocks_per_sm);
      // load modes and C access from the layout (with C^T the kernel's A is op(B)^T, read
      // as op(B) is, and its B op(A)^T)
      const auto load_of_a = t.trans_c ? t.load_b : t.load_a;
      const auto load_of_b = t.trans_c ? t.load_a : t.load_b;
      EXPECT_EQ(load_of_a == kernelkit::SgemmLoad::kKContig, oa == BlasOp::N);
      EXPECT_EQ(load_of_b == kernelkit::SgemmLoad::kKContig, ob == BlasOp::T && !t.pack_b);
      if (load_of_a == kernelkit::SgemmLoad::kMnVec4) EXPECT_EQ(l.lda % 4, 0);
      if (load_of_b == kernelkit::SgemmLoad::kMnVec4 && !t.pack_b) EXPECT_EQ(l.ldb % 4, 0);
      if (t.c_vec4) EXPECT_EQ(l.ldc % 4, 0);
      break;
    }
    default:
      ADD_FAILURE() << "unexpected path " << int(p.path);
  }
}

// Extra made-up devices: nothing assumes an H100's numbers.
std::vector<kktest::NamedDevice> devices() {
  auto v = kktest::all_devices();
  DeviceInfo tiny = kktest::t4();
  tiny.sm_count = 3;
  v.push_back({"T4-3SM", tiny});
  DeviceInfo big = kktest::h100();
  big.sm_count = 1000;
  v.push_back({"H100-1000SM", big});
  return v;
}

TEST(SgemmPlan, InvariantsSweepOpsAlignmentsDevices) {
  std::vector<Shape> shapes = sweep();
  for (const Shape s : {Shape{0, 5, 5}, Shape{5, 0, 5}, Shape{7, 9, 0}, Shape{1, 1, 1},
                        Shape{33, 33, 1}, Shape{4095, 4097, 1023}, Shape{1, 1, 1000000},
                        Shape{100000, 33, 64}, Shape{33, 100000, 20000}, Shape{129, 257, 65}})
    shapes.push_back(s);
  for (const auto& dev : devices())
    for (const Shape& s : shapes)
      for (BlasOp oa : {BlasOp::N, BlasOp::T})
        for (BlasOp ob : {BlasOp::N, BlasOp::T})
          for (int variant = 0; variant < 3; ++variant) {
            // 0: packed, aligned, full workspace; 1: no workspace; 2: padded by 1, unaligned,
            // half the workspace
            Lds l = packed(oa, ob, s);
            kernelkit::SgemmAlignment al{};
            size_t ws = kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k);
            if (variant == 1) ws = 0;
            if (variant == 2) {
              l.lda += 1, l.ldb += 1, l.ldc += 1;
              al = {Alignment(4), Alignment(4), Alignment(4)};
              ws /= 2;
            }
            const SgemmPlan p =
                kernelkit::plan_sgemm(oa, ob, s.m, s.n, s.k, l.lda, l.ldb, l.ldc, al, ws, dev.info);
            check_plan(p, oa, ob, s, l, ws, dev.info,
                       std::string(dev.name) + " " + str(s) + (oa == BlasOp::N ? " N" : " T") +
                           (ob == BlasOp::N ? "N" : "T") + " variant " + std::to_string(variant),
                       al);
          }
}

TEST(SgemmPlan, InvariantsRandomShapes) {
  std::mt19937_64 gen(19);
  const auto dim = [&](int64_t hi) {
    return int64_t(std::exp(std::uniform_real_distribution<double>(0, std::log(double(hi)))(gen)));
  };
  for (int it = 0; it < 3000; ++it) {
    const Shape s{dim(20000), dim(20000), dim(300000)};
    const BlasOp oa = gen() & 1 ? BlasOp::T : BlasOp::N, ob = gen() & 1 ? BlasOp::T : BlasOp::N;
    Lds l = packed(oa, ob, s);
    l.lda += int64_t(gen() % 3), l.ldb += int64_t(gen() % 3), l.ldc += int64_t(gen() % 3);
    // A, B and C at random offsets of a float within 16 bytes
    const kernelkit::SgemmAlignment al{Alignment(4 * int64_t(gen() % 4)),
                                       Alignment(4 * int64_t(gen() % 4)),
                                       Alignment(4 * int64_t(gen() % 4))};
    const size_t full = kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k);
    const size_t ws = gen() % 3 == 0 ? 0 : (gen() % 2 ? full : size_t(gen() % (full + 1)));
    for (const auto& dev : devices()) {
      const SgemmPlan p =
          kernelkit::plan_sgemm(oa, ob, s.m, s.n, s.k, l.lda, l.ldb, l.ldc, al, ws, dev.info);
      check_plan(p, oa, ob, s, l, ws, dev.info, std::string(dev.name) + " " + str(s), al);
      if (HasFailure()) return;
    }
  }
}

// The kernel's map of blocks to (tile, part of K) and of tiles to C: every tile of C once
// (the grouped order is a permutation), every (split tile, part) once.
TEST(SgemmPlan, BlocksCoverEveryTileAndPartOnce) {
  for (const Shape s : {Shape{3000, 3000, 3000}, Shape{1000, 1000, 1000}, Shape{300, 4000, 999},
                        Shape{2500, 130, 5000}, Shape{57, 5127, 2705}, Shape{5911, 137, 645}}) {
    const DeviceInfo d = kktest::h100();
    const SgemmPlan p =
        plan(BlasOp::N, BlasOp::N, s, kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k), d);
    ASSERT_EQ(p.path, SgemmPath::kTiled) << str(s);
    const auto& t = p.tiled;
    const auto sh = kernelkit::sgemm_tile_shape(t.tile);
    std::set<std::pair<int64_t, int64_t>> origins;
    for (int64_t tile = 0; tile < t.tiles_m * t.tiles_n; ++tile) {
      int64_t m0 = -1, n0 = -1;
      kernelkit::detail::sgemm_tile_origin(tile, t.tiles_m, t.tiles_n, sh.bm, sh.bn, &m0, &n0);
      const int64_t km = t.trans_c ? s.n : s.m, kn = t.trans_c ? s.m : s.n;  // the kernel's C
      EXPECT_TRUE(m0 >= 0 && m0 < km && n0 >= 0 && n0 < kn) << str(s);
      origins.insert({m0, n0});
    }
    EXPECT_EQ(int64_t(origins.size()), t.tiles_m * t.tiles_n) << str(s);
    // as sgemm_kernel decodes blockIdx.x
    std::set<std::pair<int64_t, int64_t>> parts;  // (tile, part)
    std::set<int64_t> slots;
    for (int64_t bid = t.dp_tiles; bid < int64_t{p.shape.grid.x}; ++bid) {
      const int64_t r = bid - t.dp_tiles, part = r / t.split_tiles, u = r % t.split_tiles;
      parts.insert({t.dp_tiles + u, part});
      slots.insert(u * t.splits + part);
    }
    EXPECT_EQ(int64_t(parts.size()), t.split_tiles * t.splits) << str(s);
    EXPECT_EQ(int64_t(slots.size()), t.split_tiles * t.splits) << str(s);
    if (!slots.empty()) EXPECT_EQ(*slots.rbegin(), t.split_tiles * t.splits - 1) << str(s);
  }
}

TEST(SgemmPlan, SmallerDevicesFitTheirSharedMemory) {
  // T4 (64 KiB, no cp.async in an sm_75 build): two stages; L4 (99 KiB a block, 100 a SM):
  // four stages of 128 x 256 (98 KiB), two of 128 x 128 to keep two blocks a SM
  const Shape s{4096, 4096, 4096};
  const SgemmPlan t4 = plan(BlasOp::N, BlasOp::N, s, 0, kktest::t4());
  ASSERT_EQ(t4.path, SgemmPath::kTiled);
  EXPECT_EQ(t4.tiled.stages, 2);
  const SgemmPlan l4 = plan(BlasOp::N, BlasOp::N, s, 0, kktest::l4());
  ASSERT_EQ(l4.path, SgemmPath::kTiled);
  EXPECT_EQ(l4.tiled.tile, SgemmTile::k128x256);
  EXPECT_EQ(l4.tiled.stages, 4);
  EXPECT_LE(l4.shape.smem, size_t(kktest::l4().smem_per_block_optin));
  const kernelkit::detail::SgemmTileFit fit =
      kernelkit::detail::sgemm_fit_tile(SgemmTile::k128x128, kktest::l4());
  EXPECT_EQ(fit.blocks_per_sm, 2);
  EXPECT_EQ(fit.stages, 2);
}

TEST(SgemmPlan, WorkspaceLimitsTheSplit) {
  const DeviceInfo d = kktest::h100();
  const Shape s{256, 256, 262144};
  const size_t full = kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k);
  const SgemmPlan p_full = plan(BlasOp::N, BlasOp::N, s, full, d);
  for (size_t ws : {size_t{0}, size_t{1000}, full / 8, full / 2, full}) {
    const SgemmPlan p = plan(BlasOp::N, BlasOp::N, s, ws, d);
    EXPECT_LE(p.workspace_used, ws);
    EXPECT_LE(p.tiled.splits, p_full.tiled.splits);
  }
  EXPECT_GT(plan(BlasOp::N, BlasOp::N, s, full / 8, d).tiled.splits, 1);
}

// The pack of op(B) = B^T: chosen with a workspace that holds it when the product is big
// enough to pay for 8 k n bytes; the direct kernel (B read along K) when the workspace is
// too small, B is padded (ldb > k), n % 4 != 0, the pack would pass kSgemmMaxPackBytes, or
// the product is too small; never for op_b == N. TT computes C^T = B A instead (the kernel
// reads B along K as NN reads A, and A with 16-byte copies): no pack, no workspace needed.
TEST(SgemmPlan, PackOfOpB) {
  const DeviceInfo h = kktest::h100();
  const Shape s{2048, 2048, 2048};
  const size_t pack = size_t(4 * s.n * s.k);
  const size_t full = kernelkit::sgemm_workspace_bytes(BlasOp::N, BlasOp::T, s.m, s.n, s.k);
  {
    const SgemmPlan p = plan(BlasOp::N, BlasOp::T, s, full, h);
    ASSERT_EQ(p.path, SgemmPath::kTiled);
    EXPECT_TRUE(p.tiled.pack_b);
    EXPECT_FALSE(p.tiled.trans_c);
    EXPECT_EQ(p.tiled.pack_bytes, pack);
    EXPECT_EQ(p.workspace_used, pack);
    EXPECT_EQ(p.tiled.load_b, kernelkit::SgemmLoad::kMnVec4);
    EXPECT_EQ(p.tiled.pack.path, kernelkit::TransposePath::kTile);
    // exactly the pack is enough; one byte less, or none: the direct kernel, same tile
    EXPECT_TRUE(plan(BlasOp::N, BlasOp::T, s, pack, h).tiled.pack_b);
    for (size_t ws : {pack - 1, pack / 2, size_t{0}}) {
      const SgemmPlan q = plan(BlasOp::N, BlasOp::T, s, ws, h);
      ASSERT_EQ(q.path, SgemmPath::kTiled);
      EXPECT_FALSE(q.tiled.pack_b) << ws;
      EXPECT_EQ(q.tiled.load_b, kernelkit::SgemmLoad::kKContig);
      EXPECT_EQ(q.tiled.tile, p.tiled.tile);
      EXPECT_LE(q.workspace_used, ws);
    }
    // B misaligned: packed all the same (the transpose takes any alignment; the copy is
    // 16-byte aligned)
    const SgemmPlan u =
        plan(BlasOp::N, BlasOp::T, s, full, h, {Alignment(), Alignment(4), Alignment()});
    EXPECT_TRUE(u.tiled.pack_b);
    EXPECT_EQ(u.tiled.load_b, kernelkit::SgemmLoad::kMnVec4);
    EXPECT_EQ(u.tiled.pack.path, kernelkit::TransposePath::kGather);
  }
  // TT: C^T with any workspace, B aligned or not
  for (size_t ws : {full, pack - 1, size_t{0}})
    for (Alignment b : {Alignment(), Alignment(4)}) {
      const SgemmPlan t = plan(BlasOp::T, BlasOp::T, s, ws, h, {Alignment(), b, Alignment()});
      ASSERT_EQ(t.path, SgemmPath::kTiled);
      EXPECT_FALSE(t.tiled.pack_b);
      EXPECT_TRUE(t.tiled.trans_c);
      EXPECT_EQ(t.tiled.load_a, kernelkit::SgemmLoad::kKContig);  // B, along K
      EXPECT_EQ(t.tiled.load_b, kernelkit::SgemmLoad::kMnVec4);   // A, 16-byte copies
      EXPECT_EQ(t.workspace_used, 0u);
    }
  for (BlasOp oa : {BlasOp::N, BlasOp::T}) {
    // B padded: the transpose reads unpadded rows only
    const Lds l = packed(oa, BlasOp::T, s);
    const SgemmPlan pad =
        kernelkit::plan_sgemm(oa, BlasOp::T, s.m, s.n, s.k, l.lda, l.ldb + 4, l.ldc, {}, full, h);
    EXPECT_FALSE(pad.tiled.pack_b);
    // never for op_b == N
    EXPECT_FALSE(plan(oa, BlasOp::N, s, full, h).tiled.pack_b);
  }
  // n % 4 != 0, over the cap, too few rows to pay for the pack
  for (const Shape q : {Shape{2048, 2046, 2048}, Shape{2048, 8192, 4096}, Shape{64, 2048, 2048},
                        Shape{40, 4096, 4096}}) {
    const SgemmPlan p = plan(BlasOp::N, BlasOp::T, q, size_t{1} << 30, h);
    ASSERT_EQ(p.path, SgemmPath::kTiled) << str(q);
    EXPECT_FALSE(p.tiled.pack_b) << str(q);
  }
  // every test device reads op(B) of the big NT / TT products with 16-byte copies: packed
  // (NT; the pack is < 4 % of their time) or as C^T (TT)
  for (const auto& dev : kktest::all_devices())
    for (const Shape q :
         {Shape{2048, 2048, 2048}, Shape{3000, 3000, 3000}, Shape{4096, 1024, 4096}})
      for (BlasOp oa : {BlasOp::N, BlasOp::T}) {
        const SgemmPlan p =
            plan(oa, BlasOp::T, q, kernelkit::sgemm_workspace_bytes(oa, BlasOp::T, q.m, q.n, q.k),
                 dev.info);
        EXPECT_TRUE(oa == BlasOp::N ? p.tiled.pack_b : p.tiled.trans_c)
            << dev.name << " " << str(q);
        EXPECT_EQ(p.tiled.load_b, kernelkit::SgemmLoad::kMnVec4) << dev.name << " " << str(q);
      }
}

// Every M from 2 to 256 (and every N, the same problem transposed) against wide, deep
// operands, each op combination, aligned and not, on every test device: a valid plan; on the
// tiled path, the rows of the kernel's C (C's columns when it computes C^T) padded by less
// than a 64-row tile, and blocks for at least 90 % of the SMs.
TEST(SgemmPlan, EverySmallMFillsTheGpu) {
  for (const auto& dev : kktest::all_devices())
    for (int64_t m = 2; m <= 256; ++m)
      for (const int64_t nk : {4096, 5127})
        for (BlasOp oa : {BlasOp::N, BlasOp::T})
          for (BlasOp ob : {BlasOp::N, BlasOp::T})
            for (bool small_n : {false, true}) {
              const Shape s = small_n ? Shape{nk, m, nk} : Shape{m, nk, nk};
              const Lds l = packed(oa, ob, s);
              const Alignment at(nk % 4 == 0 ? 0 : 4);
              const kernelkit::SgemmAlignment al{at, at, at};
              const size_t ws = kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k);
              const SgemmPlan p = kernelkit::plan_sgemm(oa, ob, s.m, s.n, s.k, l.lda, l.ldb, l.ldc,
                                                        al, ws, dev.info);
              const std::string label = std::string(dev.name) + " " + str(s) +
                                        (oa == BlasOp::N ? " N" : " T") +
                                        (ob == BlasOp::N ? "N" : "T");
              check_plan(p, oa, ob, s, l, ws, dev.info, label, al);
              if (p.path != SgemmPath::kTiled) continue;
              const auto& t = p.tiled;
              const auto sh = kernelkit::sgemm_tile_shape(t.tile);
              const int64_t rows = t.trans_c ? s.n : s.m, cols = t.trans_c ? s.m : s.n;
              if (rows <= 256) EXPECT_LT(t.tiles_m * sh.bm - rows, 64) << label;
              if (cols <= 256) EXPECT_LT(t.tiles_n * sh.bn - cols, 256) << label;
              // (128 x 256 tiles split 16 x 8 leave 4 of 132 SMs idle: 16 x 9 would be 2 waves)
              EXPECT_GE(10 * int64_t{p.shape.grid.x}, 9 * dev.info.sm_count) << label;
              if (HasFailure()) return;
            }
}

TEST(SgemmPlan, GemvAndSkinnyChoices) {
  const DeviceInfo d = kktest::h100();
  const auto p = [&](BlasOp oa, BlasOp ob, int64_t m, int64_t n, int64_t k, int64_t lda,
                     int64_t ldb, int64_t ldc) {
    return kernelkit::plan_sgemm(oa, ob, m, n, k, lda, ldb, ldc, {}, 0, d);
  };
  // one row of C: x = the row of op(A); op(B) N -> gemv T over B (k x n), T -> gemv N over B
  auto g = p(BlasOp::N, BlasOp::N, 1, 300, 200, 200, 300, 300);
  ASSERT_EQ(g.path, SgemmPath::kGemv);
  EXPECT_EQ(g.gemv.op, BlasOp::T);
  EXPECT_EQ(g.gemv.rows, 200);
  EXPECT_EQ(g.gemv.cols, 300);
  EXPECT_FALSE(g.gemv.matrix_is_a);
  g = p(BlasOp::N, BlasOp::T, 1, 300, 200, 200, 200, 300);
  ASSERT_EQ(g.path, SgemmPath::kGemv);
  EXPECT_EQ(g.gemv.op, BlasOp::N);
  EXPECT_EQ(g.gemv.rows, 300);
  // op(A) a column of A (lda > 1): not contiguous -> skinny
  EXPECT_EQ(p(BlasOp::T, BlasOp::N, 1, 300, 200, 5, 300, 300).path, SgemmPath::kSkinny);
  EXPECT_EQ(p(BlasOp::T, BlasOp::N, 1, 300, 200, 1, 300, 300).path, SgemmPath::kGemv);
  // one column of C: gemv only when ldc == 1 and the column of op(B) is contiguous
  g = p(BlasOp::T, BlasOp::T, 300, 1, 200, 300, 200, 1);
  ASSERT_EQ(g.path, SgemmPath::kGemv);
  EXPECT_EQ(g.gemv.op, BlasOp::T);
  EXPECT_TRUE(g.gemv.matrix_is_a);
  EXPECT_EQ(p(BlasOp::N, BlasOp::N, 300, 1, 200, 200, 1, 5).path, SgemmPath::kSkinny);
  EXPECT_EQ(p(BlasOp::N, BlasOp::N, 300, 1, 200, 200, 3, 1).path, SgemmPath::kSkinny);
  // small n: C^T with op(A)^T as B' (A N: k contiguous)
  const auto s = p(BlasOp::N, BlasOp::N, 4096, 8, 4096, 4096, 8, 8);
  ASSERT_EQ(s.path, SgemmPath::kSkinny);
  EXPECT_TRUE(s.skinny.transposed);
  EXPECT_EQ(s.skinny.mode, kernelkit::SgemmSkinnyMode::kKContig);
  EXPECT_EQ(s.skinny.c_si, 1);
  EXPECT_EQ(s.skinny.c_sj, 8);
  // 32 rows NN (A rows along k) and NT / TT with small n (op(B)^T rows along k): the n kernel
  // with A' staged along k; TN (A' = A^T, rows along m) the general staging
  EXPECT_TRUE(p(BlasOp::N, BlasOp::N, 32, 4096, 4096, 4096, 4096, 4096).skinny.a_along_k);
  EXPECT_TRUE(p(BlasOp::T, BlasOp::T, 4096, 32, 4096, 4096, 4096, 32).skinny.a_along_k);
  EXPECT_FALSE(p(BlasOp::T, BlasOp::N, 32, 4096, 4096, 32, 4096, 4096).skinny.a_along_k);
  // 33 rows: the tiled kernel
  EXPECT_EQ(p(BlasOp::N, BlasOp::N, 33, 4096, 4096, 4096, 4096, 4096).path, SgemmPath::kTiled);
  // k == 0 (or alpha == 0): scale
  EXPECT_EQ(p(BlasOp::N, BlasOp::N, 33, 44, 0, 1, 44, 44).path, SgemmPath::kScale);
}

// At most 32 rows or columns of C: the skinny kernels, save where the tiled kernel is modeled
// faster by more than the margin (short K with C^T, or B' read 4 bytes at a time against a
// wide op(B)). H100, packed and 16-byte aligned, the workspace bound: generated shapes of the
// H100 runs (seed 1: TN 25504x32x96 at 0.36x cuBLAS and TN 23x38945x737 at 0.37x on the
// skinny kernels) and the GPU test's (SgemmTest.SkinnyShapesOnTheTiledPath) take the tiled
// path; the listed and seed 2's skinny shapes keep the skinny kernels.
TEST(SgemmPlan, SkinnyOrTiled) {
  const DeviceInfo d = kktest::h100();
  const auto path = [&](BlasOp oa, BlasOp ob, const Shape& s) {
    return plan(oa, ob, s, kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k), d).path;
  };
  constexpr auto kN = BlasOp::N, kT = BlasOp::T;
  for (const Shape s : {Shape{25504, 32, 96}, Shape{23, 38945, 737}, Shape{23, 37225, 87},
                        Shape{18007, 19, 107}, Shape{27, 17817, 101}, Shape{9001, 31, 1055},
                        Shape{17, 41717, 285}, Shape{29, 30011, 33}, Shape{12001, 20, 96}})
    EXPECT_EQ(path(kT, kN, s), SgemmPath::kTiled) << str(s);
  for (const Shape s : {Shape{8, 4096, 4096}, Shape{32, 4096, 4096}, Shape{24, 1216, 8168},
                        Shape{28649, 17, 2367}, Shape{1728, 32, 416}, Shape{22, 12481, 818}})
    EXPECT_EQ(path(kN, kN, s), SgemmPath::kSkinny) << str(s);
  EXPECT_EQ(path(kN, kT, Shape{21, 52935, 757}), SgemmPath::kSkinny);  // within the margin
}

TEST(SgemmArgs, RejectsWhatCannotRun) {
  alignas(16) static float buf[4096];
  const float* A = buf;
  const float* B = buf + 1024;
  const float* C = buf + 2048;
  const auto ok = [](BlasOp oa, BlasOp ob, int64_t m, int64_t n, int64_t k, const float* a,
                     int64_t lda, const float* b, int64_t ldb, const float* c, int64_t ldc) {
    return kernelkit::sgemm_args_ok(oa, ob, m, n, k, a, lda, b, ldb, c, ldc);
  };
  EXPECT_TRUE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, B, 8, C, 8));
  EXPECT_FALSE(ok(static_cast<BlasOp>(2), BlasOp::N, 8, 8, 8, A, 8, B, 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, static_cast<BlasOp>(5), 8, 8, 8, A, 8, B, 8, C, 8));
  const auto skew = [](const float* p) {
    return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(p) + 2);
  };
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, skew(A), 8, B, 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, skew(B), 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, B, 8, skew(C), 8));
  EXPECT_TRUE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, A + 1, 8, B + 3, 8, C + 1, 8));  // 4-byte ok
  // C overlapping A or B, by one element or exactly
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, C, 8, B, 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, A, 8, C + 63, 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, C - 63, 8, B, 8, C, 8));
  EXPECT_TRUE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, C - 64, 8, B, 8, C, 8));  // adjacent
  // k == 0: A and B unread (may be null)
  EXPECT_TRUE(ok(BlasOp::N, BlasOp::N, 8, 8, 0, nullptr, 1, nullptr, 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, 8, 8, 8, A, 7, B, 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, -1, 8, 8, A, 8, B, 8, C, 8));
  EXPECT_FALSE(ok(BlasOp::N, BlasOp::N, int64_t{1} << 61, 8, 8, A, 8, B, 8, C, 8));
}

TEST(SgemmWorkspace, BoundFromTheShape) {
  EXPECT_EQ(kernelkit::sgemm_workspace_bytes(0, 8, 8), 0u);
  // too short to split; with op_b == T the pack of op(B) (1 MiB)
  EXPECT_EQ(kernelkit::sgemm_workspace_bytes(BlasOp::N, BlasOp::N, 8192, 8192, 32), 0u);
  EXPECT_EQ(kernelkit::sgemm_workspace_bytes(BlasOp::T, BlasOp::T, 8192, 8192, 32),
            (size_t{1} << 20) + 16);
  EXPECT_EQ(kernelkit::sgemm_workspace_bytes(8192, 8192, 32), (size_t{1} << 20) + 16);
  // the pack only when op_b == T, and at most kSgemmMaxPackBytes
  for (const Shape s : {Shape{2048, 2048, 2048}, Shape{3000, 3000, 3000}, Shape{33, 4096, 4096},
                        Shape{8192, 8192, 8192}, Shape{4096, 4098, 1000}})
    for (BlasOp oa : {BlasOp::N, BlasOp::T}) {
      const size_t nn = kernelkit::sgemm_workspace_bytes(oa, BlasOp::N, s.m, s.n, s.k);
      const size_t nt = kernelkit::sgemm_workspace_bytes(oa, BlasOp::T, s.m, s.n, s.k);
      const bool packs = 4 * s.n * s.k <= kernelkit::kSgemmMaxPackBytes && s.n % 4 == 0;
      EXPECT_EQ(nt - nn, packs ? size_t(4 * s.n * s.k) : 0u) << str(s);
      EXPECT_EQ(kernelkit::sgemm_workspace_bytes(s.m, s.n, s.k), nt) << str(s);
    }
  EXPECT_GT(kernelkit::sgemm_workspace_bytes(256, 256, 262144), 0u);
  EXPECT_LE(kernelkit::sgemm_workspace_bytes(1 << 20, 1 << 20, 1 << 20),
            size_t(kernelkit::kSgemmMaxSplitBytes) + 16);
  EXPECT_LE(kernelkit::sgemm_workspace_bytes(8, 4096, 4096), size_t{9} << 20);
}

// ---------------------------------------------------------------------------------------
// The table of kernel configurations.

std::string describe(const kernelkit::SgemmConfig& c) {
  return "path=" + std::to_string(int(c.path)) + " tile=" + std::to_string(int(c.tile)) +
         " load_a=" + std::to_string(int(c.load_a)) + " load_b=" + std::to_string(int(c.load_b)) +
         " trans_c=" + std::to_string(c.trans_c) + " rows=" + std::to_string(c.rows) +
         " vec=" + std::to_string(c.vec) + " mode=" + std::to_string(int(c.mode)) +
         " a_along_k=" + std::to_string(c.a_along_k);
}

TEST(SgemmConfigs, NoDuplicates) {
  kktest::expect_distinct_entries(kernelkit::kSgemmConfigs, describe);
}

// Plans over shapes (empty, one row or column, skinny, odd, prime, past 2^31 elements of C) x
// the four ops x leading dimensions (packed, padded by 1 and by 4) x operand alignments x
// workspace sizes (none, 4 KiB, a third of the bound, the bound) x the devices (and a 2-SM
// H100, also running sm_75 code: two stages): each is an entry of kSgemmConfigs (what
// launch_sgemm can launch), and every entry is some input's plan (no kernel is built that no
// call runs).
TEST(SgemmConfigs, EveryPlanIsAnEntryAndEveryEntryIsPlanned) {
  // 64: one 64-wide tile of C^T (few rows or columns of C: the 64 x 256 and 128 x 64 C^T
  // entries with 16-byte copies of the kernel's A)
  const int64_t mn[] = {0,   1,   2,   3,   8,    9,    31,   32,   33,   64,     100,
                        128, 129, 256, 257, 1000, 1024, 2048, 4099, 8192, 100003, 2147483659LL};
  const int64_t ks[] = {0, 1, 17, 64, 129, 1024, 8192, 1000003};
  const kernelkit::SgemmAlignment aligns[] = {{},
                                              {Alignment(4), Alignment(8), Alignment(12)},
                                              {Alignment(), Alignment(8), Alignment()},
                                              {Alignment(12), Alignment(), Alignment(4)}};
  auto devs = devices();
  DeviceInfo two = kktest::h100();
  two.sm_count = 2;
  devs.push_back({"H100-2SM", two});
  two.code_arch = 75;
  devs.push_back({"H100-2SM-sm75-code", two});
  kktest::PlannedEntries planned(kernelkit::kSgemmConfigs);
  for (const auto& dev : devs)
    for (BlasOp oa : {BlasOp::N, BlasOp::T})
      for (BlasOp ob : {BlasOp::N, BlasOp::T})
        for (int64_t m : mn)
          for (int64_t n : mn)
            for (int64_t k : ks) {
              if (double(m) * n > 1e12 || double(m) * k > 1e12 || double(n) * k > 1e12) continue;
              const size_t bound = kernelkit::sgemm_workspace_bytes(oa, ob, m, n, k);
              for (int64_t pad : {0, 1, 4})
                for (const auto& al : aligns)
                  for (size_t ws : {size_t{0}, size_t{4096}, bound / 3, bound}) {
                    const int64_t lda = std::max<int64_t>(1, (oa == BlasOp::N ? k : m) + pad);
                    const int64_t ldb = std::max<int64_t>(1, (ob == BlasOp::N ? n : k) + pad);
                    const int64_t ldc = std::max<int64_t>(1, n + pad);
                    const SgemmPlan p =
                        kernelkit::plan_sgemm(oa, ob, m, n, k, lda, ldb, ldc, al, ws, dev.info);
                    const int i = planned.count(kernelkit::sgemm_config(p));
                    ASSERT_GE(i, 0) << dev.name << " " << int(oa) << int(ob) << " " << m << "x" << n
                                    << "x" << k << " pad " << pad << " ws " << ws << ": "
                                    << describe(kernelkit::sgemm_config(p));
                  }
            }
  planned.expect_every_entry_planned(describe, "no input plans");
  EXPECT_GT(planned.plans(), 1000000);
}

// SgemmTest.EveryConfiguration (sgemm_test.cu) finds a small call for every entry on each
// device (here: each GPU of the plan tests), whose plan is that entry and keeps the invariants.
TEST(SgemmConfigs, EveryEntryHasASmallCase) {
  for (const auto& dev : kktest::all_devices()) {
    const std::vector<sgemm_config_test::ConfigCase> cases =
        sgemm_config_test::config_cases(dev.info);
    ASSERT_EQ(cases.size(), std::size(kernelkit::kSgemmConfigs));
    for (size_t i = 0; i < cases.size(); ++i) {
      const sgemm_config_test::ConfigCase& c = cases[i];
      ASSERT_TRUE(c.found) << dev.name << ": no case plans "
                           << describe(kernelkit::kSgemmConfigs[i]);
      EXPECT_EQ(kernelkit::config_index(kernelkit::kSgemmConfigs, kernelkit::sgemm_config(c.plan)),
                int(i));
      EXPECT_LE(c.m * c.n * c.k, sgemm_config_test::kMaxCaseMacs);
      const Shape s{c.m, c.n, c.k};
      Lds l = packed(c.op_a, c.op_b, s);
      l.lda = std::max<int64_t>(1, l.lda + c.pad);
      l.ldb = std::max<int64_t>(1, l.ldb + c.pad);
      l.ldc = std::max<int64_t>(1, l.ldc + c.pad);
      check_plan(c.plan, c.op_a, c.op_b, s, l, c.ws_bytes, c.device,
                 std::string(dev.name) + " entry " + std::to_string(i) + " " + str(s),
                 {Alignment(4 * c.offset), Alignment(4 * c.offset), Alignment(4 * c.offset)});
    }
  }
}

}  // namespace
