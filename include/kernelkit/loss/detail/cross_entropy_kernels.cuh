// SPDX-License-Identifier: Apache-2.0
// Cross-entropy kernels (internal): the forward (a task a row or a chunk of one: its max, sum of
// exp(x - max) and sum of x, streamed once), the finish (one block: parked chunks combined by a
// group of threads a row, or the blocks' records of their rows' losses added in block order) and
// the backward (elementwise over each row from its saved lse). cross_entropy_plan.cuh says which
// runs; cross_entropy.cuh launches it.
//
// The row statistics are the softmax module's (SoftmaxStats: softmax_stats_add, _combine, the
// warp and block all-reduces; SoftmaxSpan and softmax_chunk_begin for a row's packs and its
// chunks), so the two ops agree bit for bit on a row's (max, sum) and their NaN / inf rules:
// fmaxf skips a NaN but exp(NaN - m) carries it into the sum; +inf makes the sum NaN; a row of
// all -inf has lse -inf. Row r starts at logits + r * ld (64-bit offsets).
//
// Losses (torch's meaning): with t the row's target, eps the label smoothing,
//   loss = lse - (1 - eps) x_t - eps / vocab * sum_j x_j   (a term whose factor is 0 is left
//   out, so an -inf logit does not turn 0 * -inf into NaN),
// 0 where t == ignore_index, NaN where t is outside [0, vocab) otherwise (a kernel cannot
// raise: the NaN reaches sum and mean). Backward: dlogits_j = g (exp(x_j - lse) - eps / vocab
// - (1 - eps) [j == t]); 0 in ignored rows, NaN in rows with such a target.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernelkit/block/block_reduce.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/grid.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"
#include "kernelkit/core/types.cuh"
#include "kernelkit/loss/cross_entropy_plan.cuh"
#include "kernelkit/softmax/detail/softmax_kernels.cuh"
#include "kernelkit/warp/warp.cuh"

namespace kernelkit::detail {

// The operands of a forward call. workspace: the parked chunks (float4 a task) or the blocks'
// records (float4 a block: their rows' loss sum and count of targets not ignored).
template <typename T, typename Tgt>
struct CrossEntropyArgs {
  const T* logits;
  int64_t ld;
  const Tgt* target;
  int64_t rows, vocab;
  int64_t ignore_index;
  float smoothing;
  LossReduction reduction;
  float* loss;  // rows floats (kNone) or one
  float* lse;   // rows floats, or null
  void* workspace;
};

// The operands of a backward call.
template <typename T, typename Tgt>
struct CrossEntropyBackwardArgs {
  const T* logits;
  int64_t ld;
  const Tgt* target;
  const float* lse;
  const float* dloss;  // rows floats (kNone) or one
  int64_t rows, vocab;
  int64_t ignore_index;
  float smoothing;
  LossReduction reduction;
  T* dlogits;
  int64_t ld_dlogits;
};

// lse of a row from its statistics: m + log(s) (-inf for a row of all -inf, NaN for a NaN sum).
__device__ __forceinline__ float cross_entropy_lse(SoftmaxStats st) {
  return st.m + logf(st.s);
}

// A row's target as its loss sees it: a class, ignore_index, or neither.
enum class CrossEntropyTarget { kClass, kIgnored, kBad };
__device__ __forceinline__ CrossEntropyTarget cross_entropy_target_kind(int64_t t, int64_t vocab,
                                                                        int64_t ignore_index) {
  return t == ignore_index     ? CrossEntropyTarget::kIgnored
         : t < 0 || t >= vocab ? CrossEntropyTarget::kBad
                               : CrossEntropyTarget::kClass;
}

// The loss of a row (see the file comment).
__device__ __forceinline__ float cross_entropy_loss(float lse, float xt, float sx,
                                                    CrossEntropyTarget kind, int64_t vocab,
                                                    float eps) {
  if (kind == CrossEntropyTarget::kIgnored) return 0.f;
  if (kind == CrossEntropyTarget::kBad) return NAN;
  float l = lse;
  if (eps != 1.f) l -= (1.f - eps) * xt;
  if (eps != 0.f) l -= eps * (sx / static_cast<float>(vocab));
  return l;
}

// x_t of row r, where t is a class (else 0: the loss does not use it).
template <typename T>
__device__ __forceinline__ float cross_entropy_target_logit(const T* row, int64_t t,
                                                            int64_t vocab) {
  return t >= 0 && t < vocab ? convert<float>(row[t]) : 0.f;
}

// A row's parked chunks as the finish combines them: (max, sum) and the sums of x and of the
// target's logit (0 in the chunks that do not hold it).
struct CrossEntropyPart {
  SoftmaxStats st;
  float sx, xt;
};

// The butterfly of a part over aligned groups of Width lanes (a power of two <= 32): every lane
// of a group ends with the group's part, the same bits in each (softmax_stats_warp_all_reduce's
// order: the max, each lane's sum rescaled once, the sums).
template <int Width, bool Fast>
__device__ __forceinline__ CrossEntropyPart cross_entropy_part_all_reduce(CrossEntropyPart p) {
  if constexpr (Width == 1) {
    return p;
  } else {
    float m = p.st.m;
#pragma unroll
    for (int mask = Width / 2; mask > 0; mask /= 2)
      m = fmaxf(m, __shfl_xor_sync(kFullMask, m, mask));
    float s = p.st.s * softmax_exp<Fast>(p.st.m - (m == -INFINITY ? 0.f : m));
#pragma unroll
    for (int mask = Width / 2; mask > 0; mask /= 2) {
      s += __shfl_xor_sync(kFullMask, s, mask);
      p.sx += __shfl_xor_sync(kFullMask, p.sx, mask);
      p.xt += __shfl_xor_sync(kFullMask, p.xt, mask);
    }
    return {{m, s}, p.sx, p.xt};
  }
}

// The same over groups of `width` lanes (1..32, a power of two, the same in every lane): a few
// tests, then the constant-offset butterfly (a loop over the offsets, or a test a step, added
// 4-6 instructions to each of its 10 steps; a switch became a jump table read from the
// constant bank, a possible miss in an L2 the benchmark flushes).
template <bool Fast>
__device__ __forceinline__ CrossEntropyPart cross_entropy_part_all_reduce(CrossEntropyPart p,
                                                                          int width) {
  if (width >= 32) return cross_entropy_part_all_reduce<32, Fast>(p);
  if (width >= 16) return cross_entropy_part_all_reduce<16, Fast>(p);
  if (width >= 8) return cross_entropy_part_all_reduce<8, Fast>(p);
  if (width >= 4) return cross_entropy_part_all_reduce<4, Fast>(p);
  if (width >= 2) return cross_entropy_part_all_reduce<2, Fast>(p);
  return p;
}

// The same over groups of `width` <= 16 lanes, one piece of code for every width: the steps of
// 16 lanes' butterfly shuffled in every lane, kept below `width` (the meeting of a group's
// warps, rare: a row of more than 4 x 32 chunks).
template <bool Fast>
__device__ __forceinline__ CrossEntropyPart cross_entropy_part_all_reduce_16(CrossEntropyPart p,
                                                                             int width) {
  float m = p.st.m;
#pragma unroll
  for (int mask = 8; mask > 0; mask /= 2) {
    const float o = __shfl_xor_sync(kFullMask, m, mask);
    if (mask < width) m = fmaxf(m, o);
  }
  float s = p.st.s * softmax_exp<Fast>(p.st.m - (m == -INFINITY ? 0.f : m));
#pragma unroll
  for (int mask = 8; mask > 0; mask /= 2) {
    const float os = __shfl_xor_sync(kFullMask, s, mask);
    const float ox = __shfl_xor_sync(kFullMask, p.sx, mask);
    const float ot = __shfl_xor_sync(kFullMask, p.xt, mask);
    if (mask < width) s += os, p.sx += ox, p.xt += ot;
  }
  return {{m, s}, p.sx, p.xt};
}

// A barrier of the finish's first `threads` threads (whole warps): the warps past them have
// returned, so __syncthreads (every thread of the block) cannot be used. Barrier 1: the
// kernels' __syncthreads and the grid barrier use 0.
__device__ __forceinline__ void cross_entropy_finish_sync(int threads) {
  asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
}

// One block finishes a forward call (kGrid: block 0 after the grid barrier; kSecondKernel: the
// second launch). Its first `warps` warps take part (the plan's finish_warps: the rows' groups,
// or a thread a block record, at most the block), the others return at once (it was every warp
// of the block through the setup, the butterflies and the tree, rows or not).
// split > 1: row r's chunks parked at parts[r * split ..] ((max, sum, sum of x, the target's
// logit or 0)); a group of `group` threads a row (the plan's cross_entropy_finish_group, a
// power of two <= the block; Block / group rows a pass), thread j of the group loading the
// row's parts j, j + group, ... (kCrossEntropyFinishUnroll loads in flight, its first part
// taken as it is, the others combined in order) and its group's thread 0 the row's target,
// all issued before any is used: one L2 round trip a pass. The group's parts meet in a fixed
// butterfly (cross_entropy_part_all_reduce); groups wider than a warp then through shared
// memory: the group's warps' parts in the butterfly of its first warp's first lanes (was its
// thread 0 adding them one after another). Its thread 0 writes the row's lse and loss (kNone)
// or adds the loss to its sum, and counts the target if not ignored. split == 1 (sum, mean):
// the main kernel's blocks each parked one record (their rows' losses summed and their targets
// not ignored counted, in a fixed order: cross_entropy_park_block), added by thread i in the
// order i, i + Block, ... (kCrossEntropyFinishUnroll loads in flight). sum / mean: the threads'
// sums and counts, then the taking part warps' fixed tree (one barrier); mean divides by the
// count. Deterministic: nothing depends on timing.
template <int Block, bool Fast, typename T, typename Tgt>
__device__ __forceinline__ void cross_entropy_finish(const CrossEntropyArgs<T, Tgt>& a, int split,
                                                     int group, int finish_warps, int blocks) {
  constexpr int kWarps = Block / kWarpSize;
  static_assert(kWarps <= 16, "a group's warps meet in a 16-lane butterfly");
  constexpr int kU = kCrossEntropyFinishUnroll;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = finish_warps < 1 ? 1 : finish_warps < kWarps ? finish_warps : kWarps;
  if (warp >= warps) return;
  float acc = 0.f;
  long long count = 0;
  const int g = group < Block ? group : Block;  // (split > 1; a power of two)
  if (split > 1) {
    __shared__ CrossEntropyPart group_slots[kWarps];
    const int shift = __ffs(g) - 1;
    const int gi = static_cast<int>(threadIdx.x) >> shift;
    const int gt = static_cast<int>(threadIdx.x) & (g - 1);
    const int per_pass = Block >> shift;
    // every taking part thread runs every pass (the barriers of groups wider than a warp)
    for (int64_t base = 0; base < a.rows; base += per_pass) {
      const int64_t r = base + gi;
      const bool live = r < a.rows;
      int64_t t = 0;
      if (live && gt == 0) t = static_cast<int64_t>(a.target[r]);
      CrossEntropyPart p{softmax_stats_empty(), 0.f, 0.f};
      if (live) {
        const float4* rp = static_cast<const float4*>(a.workspace) + r * split;
        if (split <= g) {
          // a part a thread at most (every group of a warp or less)
          if (gt < split) {
            const float4 q = rp[gt];
            p = {{q.x, q.y}, q.z, q.w};
          }
        } else {
          for (int j0 = gt; j0 < split; j0 += kU * g) {
            float4 q[kU];
#pragma unroll
            for (int u = 0; u < kU; ++u)
              if (j0 + u * g < split) q[u] = rp[j0 + u * g];
#pragma unroll
            for (int u = 0; u < kU; ++u) {
              if (j0 + u * g < split) {
                const SoftmaxStats o{q[u].x, q[u].y};
                // the thread's first part as it is (combined with the empty set: the same bits)
                p.st = u == 0 && j0 == gt ? o : softmax_stats_combine<Fast>(p.st, o);
                p.sx += q[u].z;
                p.xt += q[u].w;
              }
            }
          }
        }
      }
      p = cross_entropy_part_all_reduce<Fast>(p, g < kWarpSize ? g : kWarpSize);
      if (g > kWarpSize) {
        // the group's g / 32 warps' parts, in the butterfly of its first warp's first lanes
        const int gw = g / kWarpSize;
        cross_entropy_finish_sync(warps * kWarpSize);  // the previous pass's readers are done
        if (lane == 0) group_slots[warp] = p;
        cross_entropy_finish_sync(warps * kWarpSize);
        if (gt < kWarpSize) {
          p = lane < gw ? group_slots[warp + lane]
                        : CrossEntropyPart{softmax_stats_empty(), 0.f, 0.f};
          p = cross_entropy_part_all_reduce_16<Fast>(p, gw);
        }
      }
      if (live && gt == 0) {
        const CrossEntropyTarget kind = cross_entropy_target_kind(t, a.vocab, a.ignore_index);
        const float lse = cross_entropy_lse(p.st);
        const float l = cross_entropy_loss(lse, p.xt, p.sx, kind, a.vocab, a.smoothing);
        if (a.lse != nullptr) a.lse[r] = lse;
        if (a.reduction == LossReduction::kNone) {
          a.loss[r] = l;
        } else {
          acc += l;
          count += kind != CrossEntropyTarget::kIgnored ? 1 : 0;
        }
      }
    }
  } else {
    // the blocks' records (cross_entropy_park_block), thread i: blocks i, i + Block, ...
    const auto* rec = static_cast<const float4*>(a.workspace);
    for (int b0 = threadIdx.x; b0 < blocks; b0 += kU * Block) {
      float4 q[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (b0 + u * Block < blocks) q[u] = rec[b0 + u * Block];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (b0 + u * Block < blocks) {
          acc += q[u].x;
          count += __float_as_int(q[u].y);
        }
      }
    }
  }
  if (a.reduction == LossReduction::kNone) return;
  // the sum and count: each warp's tree (groups of a warp or more: its lane 0 holds them
  // already), then warp 0's over the warps (one barrier)
  if (split == 1 || g < kWarpSize) {
    acc = warp_reduce<kWarpSize>(acc, Sum{});
    count = warp_reduce<kWarpSize>(count, Sum{});
  }
  if (warps > 1) {
    __shared__ float acc_slots[kWarps];
    __shared__ long long count_slots[kWarps];
    if (lane == 0) acc_slots[warp] = acc, count_slots[warp] = count;
    cross_entropy_finish_sync(warps * kWarpSize);
    if (warp == 0) {
      acc = warp_reduce_first<kWarps>(acc_slots[lane < warps ? lane : 0], Sum{}, warps);
      count = warp_reduce_first<kWarps>(count_slots[lane < warps ? lane : 0], Sum{}, warps);
    }
  }
  if (threadIdx.x == 0)
    a.loss[0] = a.reduction == LossReduction::kSum ? acc : acc / static_cast<float>(count);
}

// Element k of a loaded pack as float. bf16: the high or low half of its 32-bit word moved to
// the top (one LOP or SHF an element; __bfloat162float of the high halves went through PRMT
// copies made right after the load, 4 more live registers a pack).
template <typename T, int Pack>
__device__ __forceinline__ float cross_entropy_elem(const PackOf<T, Pack>& p, int k) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && Pack % 2 == 0) {
    uint32_t w;
    memcpy(&w, &p.elem[k & ~1], 4);
    return __uint_as_float(k % 2 == 0 ? w << 16 : w & 0xffff0000u);
  } else {
    return convert<float>(p.elem[k]);
  }
}

// First column of chunk j of a row: softmax_chunk_begin with cols / split and cols % split
// worked out once a kernel (q, rem), not twice a task (two 64-bit divisions by a runtime
// value, ~80 instructions each through the slow path, were most of a task's fixed cost).
template <int Pack>
__device__ __forceinline__ int64_t cross_entropy_chunk_begin(int64_t j, int split, int64_t cols,
                                                             int64_t q, int rem, int64_t lead) {
  if (j == 0) return 0;
  if (j >= split) return cols;
  const int64_t x = j * q + (j < rem ? j : rem);
  return x - ((x - lead) % Pack + Pack) % Pack;
}

// A forward block's record for the finish (split == 1, sum or mean): its groups' (loss sum,
// count of targets not ignored), kept by each group's thread 0 in its slot of lslots / cslots,
// added in group order by thread 0 and written as float4 {sum, count (int bits), 0, 0} at
// workspace[blockIdx.x].
template <int Groups>
__device__ __forceinline__ void cross_entropy_park_block(void* workspace, const float* lslots,
                                                         const int* cslots) {
  if constexpr (Groups > 1) __syncthreads();
  if (threadIdx.x == 0) {
    float loss = 0.f;
    int count = 0;
#pragma unroll
    for (int g = 0; g < Groups; ++g)
      loss += lslots[g], count += cslots[g];
    static_cast<float4*>(workspace)[blockIdx.x] =
        make_float4(loss, __int_as_float(count), 0.f, 0.f);
  }
}

// The forward: tasks task = blockIdx.x * (Block / Threads) + group, + gridDim.x * (Block /
// Threads), ...; task = r * split + j is chunk j of row r (the whole row when split == 1),
// owned by a group of Threads threads (a warp, or the block). Each thread loads a batch of
// cross_entropy_unroll(Pack) packs before adding them (16-byte loads in flight), keeping (max, sum)
// and the sum of x; the group's are then reduced. split == 1: the group's thread 0 writes the
// row's lse and its loss (kNone: to loss; else parked in the workspace); split > 1: the chunk's
// statistics parked in the workspace. Then kGrid: a grid barrier, and block 0 finishes
// (finish_group, finish_warps: the plan's threads a row there and warps taking part).
template <typename T, typename Tgt, int Pack, int Threads, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, cross_entropy_min_blocks(Block)))
    cross_entropy_kernel(CrossEntropyArgs<T, Tgt> a, int split, int finish_group, int finish_warps,
                         BlockCombine combine) {
  static_assert(Threads == kWarpSize || Threads == Block, "a warp or the block a task");
  static_assert(Block % kWarpSize == 0 && Block <= 1024, "whole warps");
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr int kGroups = Block / Threads;
  constexpr int kWarps = Block / kWarpSize;
  constexpr int kU = cross_entropy_unroll(Pack);
  __shared__ SoftmaxStats stat_slots[2 * kWarps];
  __shared__ float sx_slots[2 * kWarps];
  __shared__ float loss_slots[kGroups];
  __shared__ int count_slots[kGroups];
  int parity = 0;
  const int group = static_cast<int>(threadIdx.x) / Threads;
  const int gt = static_cast<int>(threadIdx.x) % Threads;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  if (gt == 0) loss_slots[group] = 0.f, count_slots[group] = 0;  // (its thread 0's alone)
  // (r, j) of task r * split + j stepped by the stride's quotient and remainder (no division
  // a task); the chunk bounds from q and rem worked out once
  const int task0 = static_cast<int>(blockIdx.x) * kGroups + group;
  int64_t r = task0 / split;  // (task < tasks <=> r < rows)
  int j = task0 % split;
  // the target of the group's next task, loaded a task ahead by the thread that uses it: the
  // target's logit is then issued with the row's first loads, not a round trip before them
  // (the first task's is issued before the divisions below, which hide part of its trip)
  int64_t t_next = gt == 0 && r < a.rows ? static_cast<int64_t>(a.target[r]) : 0;
  const int64_t q = a.vocab / split;
  const int rem = static_cast<int>(a.vocab % split);
  const int stride = static_cast<int>(gridDim.x) * kGroups;
  const int stride_r = stride / split, stride_j = stride % split;
  while (r < a.rows) {
    const T* row = a.logits + r * a.ld;
    const int64_t lead = pack_head<Pack>(row, Pack);
    const int64_t c0 = cross_entropy_chunk_begin<Pack>(j, split, a.vocab, q, rem, lead);
    const int64_t c1 = cross_entropy_chunk_begin<Pack>(j + 1, split, a.vocab, q, rem, lead);
    const SoftmaxSpan<T, Pack> sp(row + c0, nullptr, c1 - c0);
    const int64_t t = t_next;
    int64_t rn = r + stride_r;  // the next task's (r, j)
    int jn = j + stride_j;
    if (jn >= split) jn -= split, ++rn;
    if (gt == 0 && rn < a.rows) t_next = static_cast<int64_t>(a.target[rn]);
    // the target's logit (split > 1: by the chunk holding it, parked with the chunk's
    // statistics; 0 in the others)
    float xt = 0.f;
    if (gt == 0 && (split == 1 || (t >= c0 && t < c1)))
      xt = cross_entropy_target_logit(row, t, a.vocab);
    // what the loss needs of t, so that t is not held through the row (a register)
    const CrossEntropyTarget kind = cross_entropy_target_kind(t, a.vocab, a.ignore_index);
    SoftmaxStats st = softmax_stats_empty();
    float comp = 0.f, sx = 0.f;
    // the whole packs [lo, hi): kU 16-byte loads in flight a thread, kept raw until added
    for (int v0 = sp.lo + gt; v0 < sp.hi; v0 += Threads * kU) {
      PackOf<T, Pack> raw[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int v = v0 + u * Threads;
        if (v < sp.hi) raw[u] = load_pack<Pack>(sp.src + sp.first(v), 0);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (v0 + u * Threads < sp.hi) {
          float x[Pack];
          float s = 0.f;
#pragma unroll
          for (int k = 0; k < Pack; ++k) {
            x[k] = cross_entropy_elem<T, Pack>(raw[u], k);
            s += x[k];
          }
          sx += s;
          softmax_stats_add<kFast, Pack>(st, comp, x);
        }
      }
    }
    // the partial head pack (thread 0) and tail pack (the last thread), element by element
    const int n = sp.packs();
    const int partial = gt == 0 && sp.lo == 1 && n >= 1                     ? 0
                        : gt == Threads - 1 && sp.hi == n - 1 && n - 1 >= 1 ? n - 1
                                                                            : -1;
    if (partial >= 0) {
      const int64_t col = sp.first(partial);
      float x[Pack];
#pragma unroll
      for (int k = 0; k < Pack; ++k) {
        const bool in = col + k >= 0 && col + k < sp.len;
        x[k] = in ? convert<float>(sp.src[col + k]) : -INFINITY;
        sx += in ? x[k] : 0.f;  // the sum of the span's elements (not the -inf padding)
      }
      softmax_stats_add<kFast, Pack>(st, comp, x);
    }
    softmax_stats_settle<kFast>(st, comp);
    if constexpr (Threads == kWarpSize) {
      st = softmax_stats_warp_all_reduce<kWarpSize, kFast>(st);
      sx = warp_all_reduce<kWarpSize>(sx, Sum{});
    } else {
      // sx's warp sums go to the slot set the stats' reduction writes this call: its barrier
      // publishes them, and the set is written again only two calls later (its comment)
      const int set = parity;
      const float wsx = warp_all_reduce<kWarpSize>(sx, Sum{});
      if (lane == 0) sx_slots[set * kWarps + warp] = wsx;
      st = softmax_stats_block_all_reduce<Block, kFast>(st, stat_slots, parity);
      sx = warp_all_reduce<kWarps>(sx_slots[set * kWarps + lane % kWarps], Sum{});
    }
    if (gt == 0) {
      if (split == 1) {
        const float lse = cross_entropy_lse(st);
        if (a.lse != nullptr) a.lse[r] = lse;
        const float l = cross_entropy_loss(lse, xt, sx, kind, a.vocab, a.smoothing);
        if (a.reduction == LossReduction::kNone) {
          a.loss[r] = l;
        } else {
          // the group's rows' losses and targets not ignored, kept by its thread 0 in its shared
          // slots (not two registers held through the rows)
          loss_slots[group] += l;
          count_slots[group] += kind != CrossEntropyTarget::kIgnored ? 1 : 0;
        }
      } else {
        static_cast<float4*>(a.workspace)[r * split + j] = make_float4(st.m, st.s, sx, xt);
      }
    }
    r = rn, j = jn;
  }
  if (split == 1 && a.reduction != LossReduction::kNone)
    cross_entropy_park_block<kGroups>(a.workspace, loss_slots, count_slots);
  if (combine == BlockCombine::kGrid) {
    grid_sync();
    if (blockIdx.x == 0)
      cross_entropy_finish<Block, kFast>(a, split, finish_group, finish_warps,
                                         static_cast<int>(gridDim.x));
  }
}

// The second launch of kSecondKernel (one block); blocks: the main launch's grid.
template <typename T, typename Tgt, int Block>
__global__ void __launch_bounds__(Block)
    cross_entropy_finish_kernel(CrossEntropyArgs<T, Tgt> a, int split, int group, int warps,
                                int blocks) {
  cross_entropy_finish<Block, kSoftmaxFast<T>>(a, split, group, warps, blocks);
}

// A 16-byte pack of dlogits (Pack floats, converted to T) written as one 16-byte store. A
// Pack<T, N> built element by element and copied by store_pack was split by nvcc 13.0 into one
// store an element (sm_90 SASS: 8 STG.U16 a 2-byte pack, 4 STG.E an f32 one): 4-8x the store
// instructions and L1 -> L2 requests of the bytes. Here the words are made in registers (a
// 2-byte pair by one F2FP) and stored by one st.global.v4 (dlogits is global memory). Pack == 1:
// one element.
template <typename T, int Pack>
__device__ __forceinline__ void cross_entropy_store(T* dst, const float (&y)[Pack]) {
  if constexpr (Pack == 1) {
    *dst = convert<T>(y[0]);
  } else {
    static_assert(sizeof(T) * Pack == 16, "16-byte packs");
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (std::is_same_v<T, float>) {
        w[i] = __float_as_uint(y[i]);
      } else if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(y[2 * i], y[2 * i + 1]);
        memcpy(&w[i], &h, 4);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(y[2 * i], y[2 * i + 1]);
        memcpy(&w[i], &h, 4);
      }
    }
    // (a uint4 assignment here still came out of NVVM as 4 st.global.f32: hence the PTX)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(w[0]), "r"(w[1]),
                 "r"(w[2]), "r"(w[3])
                 : "memory");
  }
}

// The backward's smoothing terms: off = eps / vocab in every column, off_t = off + (1 - eps) in
// the target's (host and device alike: IEEE float division and addition).
struct CrossEntropyOffsets {
  float off, off_t;
};
inline CrossEntropyOffsets cross_entropy_backward_offsets(float eps, int64_t vocab) {
  const float off = eps / static_cast<float>(vocab);
  return {off, off + (1.f - eps)};
}

// The backward: tasks as the forward's (chunk j of row r, a group of Threads threads each).
// mean: every block first counts the targets not ignored (an integer sum: order-free). Each
// thread loads a batch of cross_entropy_backward_unroll(Pack) packs, then writes them; an ignored
// row is written 0 without being read (a branch a task, not an element). dlogits may be logits
// (each thread reads its packs before writing them). The element's work: the exp (FADD, FMUL,
// MUFU.EX2 for the 2-byte types), the target's term picked by a 32-bit compare against the target's
// place in the pack (found once a task), a subtraction and the scale by g; 16-byte stores
// (cross_entropy_store). (r, j) advance by the stride's quotient and remainder (no division in
// the loop). off = eps / vocab and off_t = off + (1 - eps) (the target's column) come as
// arguments (cross_entropy_backward_offsets: from the constant bank, not two registers).
template <typename T, typename Tgt, int Pack, int Threads, int Block>
__global__ void __launch_bounds__(Block, min_blocks_per_sm(Block, cross_entropy_min_blocks(Block)))
    cross_entropy_backward_kernel(CrossEntropyBackwardArgs<T, Tgt> a, int split, int64_t, float off,
                                  float off_t) {
  static_assert(Threads == kWarpSize || Threads == Block, "a warp or the block a task");
  constexpr bool kFast = kSoftmaxFast<T>;
  constexpr int kGroups = Block / Threads;
  constexpr int kU = cross_entropy_backward_unroll(Pack);
  const int group = static_cast<int>(threadIdx.x) / Threads;
  const int gt = static_cast<int>(threadIdx.x) % Threads;
  float mean_scale = 1.f;
  if (a.reduction == LossReduction::kMean) {
    long long count = 0;
    for (int64_t r = threadIdx.x; r < a.rows; r += Block)
      count += static_cast<int64_t>(a.target[r]) != a.ignore_index ? 1 : 0;
    count = block_all_reduce<Block>(count, Sum{});
    mean_scale = 1.f / static_cast<float>(count);
  }
  const int64_t q = a.vocab / split;
  const int rem = static_cast<int>(a.vocab % split);
  // the grid's tasks a round (resident blocks: far below 2^31), as rows and chunks
  const int stride = static_cast<int>(gridDim.x) * kGroups;
  const int stride_r = stride / split, stride_j = stride % split;
  const bool per_row = a.reduction == LossReduction::kNone;
  const int task0 = static_cast<int>(blockIdx.x) * kGroups + group;
  int64_t r = task0 / split;  // task r * split + j (task < tasks <=> r < rows)
  int j = task0 % split;
  // a task's row scalars (target, lse, g) are loaded one task ahead: the pack loads wait on the
  // target (ignored rows are not read), and would otherwise wait a round trip to L2 first
  // (sum, mean: one g for the call)
  const int64_t r0 = r < a.rows ? r : 0;
  Tgt t_next = a.target[r0];
  float lse_next = a.lse[r0];
  float g_next = per_row ? a.dloss[r0] : a.dloss[0] * mean_scale;
  while (r < a.rows) {
    const int64_t t = static_cast<int64_t>(t_next);
    const float lse = lse_next;
    const float g = g_next;
    // the next task's (r, j)
    int64_t rn = r + stride_r;
    int jn = j + stride_j;
    if (jn >= split) jn -= split, ++rn;
    if (rn < a.rows) {
      t_next = a.target[rn];
      lse_next = a.lse[rn];
      if (per_row) g_next = a.dloss[rn];
    }
    const T* row = a.logits + r * a.ld;
    const int64_t lead = pack_head<Pack>(row, Pack);
    const int64_t c0 = cross_entropy_chunk_begin<Pack>(j, split, a.vocab, q, rem, lead);
    const int64_t c1 = cross_entropy_chunk_begin<Pack>(j + 1, split, a.vocab, q, rem, lead);
    const SoftmaxSpan<T, Pack> sp(row + c0, a.dlogits + r * a.ld_dlogits + c0, c1 - c0);
    const int n = sp.packs();
    const int partial = gt == 0 && sp.lo == 1 && n >= 1                     ? 0
                        : gt == Threads - 1 && sp.hi == n - 1 && n - 1 >= 1 ? n - 1
                                                                            : -1;
    r = rn, j = jn;
    if (t == a.ignore_index) {
      // an ignored row: zeros, its logits not read
      const float zero[Pack] = {};
#pragma unroll 1
      for (int v = sp.lo + gt; v < sp.hi; v += Threads)
        cross_entropy_store<T, Pack>(sp.dst + sp.first(v), zero);
      if (partial >= 0) {
        const int64_t col = sp.first(partial);
#pragma unroll
        for (int k = 0; k < Pack; ++k)
          if (col + k >= 0 && col + k < sp.len) sp.dst[col + k] = convert<T>(0.f);
      }
      continue;
    }
    // a target outside the classes: the row NaN
    const float base = (t < 0 || t >= a.vocab) ? NAN : lse;
    // the target's column from the span's first pack: tp (a span is at most a batch of packs a
    // thread, 2048 + 2, or a warp's 128: an int; -2^30 when the chunk does not hold it, so that
    // tp - v * Pack < 0 for every pack v, without overflow)
    const int64_t tc = t - c0 + sp.head;
    const int tp = tc >= sp.head && tc < sp.head + sp.len ? static_cast<int>(tc) : -(1 << 30);
    const auto expo = [&](float x) { return softmax_exp<kFast>(x - base); };
    // the partial head pack (thread 0) and tail pack (the last thread), element by element, first
    // (their state then ends before the loop's registers are needed)
    if (partial >= 0) {
      const int64_t col = sp.first(partial);
#pragma unroll
      for (int k = 0; k < Pack; ++k) {
        if (col + k >= 0 && col + k < sp.len)
          sp.dst[col + k] = convert<T>(g * (expo(convert<float>(sp.src[col + k])) -
                                            (col + k + sp.head == tc ? off_t : off)));
      }
    }
    // the whole packs [lo, hi): kU 16-byte loads in flight a thread, then their writes
#pragma unroll 1
    for (int v0 = sp.lo + gt; v0 < sp.hi; v0 += Threads * kU) {
      PackOf<T, Pack> raw[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int v = v0 + u * Threads;
        if (v < sp.hi) raw[u] = load_pack<Pack>(sp.src + sp.first(v), 0);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int v = v0 + u * Threads;
        if (v < sp.hi) {
          const int hit = tp - v * Pack;  // the target's place in pack v (if in [0, Pack))
          float y[Pack];
#pragma unroll
          for (int k = 0; k < Pack; ++k)
            y[k] = g * (expo(cross_entropy_elem<T, Pack>(raw[u], k)) - (k == hit ? off_t : off));
          cross_entropy_store<T, Pack>(sp.dst + sp.first(v), y);
        }
      }
    }
  }
}

}  // namespace kernelkit::detail
