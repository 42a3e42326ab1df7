// SPDX-License-Identifier: Apache-2.0
/// @file
/// What one elementwise call will do: plan_elementwise (pure host code, no CUDA call) turns
/// the size, the operands' element sizes and alignments, the functor's traits and the device's
/// facts into an EwPlan, which launch_elementwise (elementwise.cuh) launches.
///
/// The decisions, in order:
/// - pack: 16-byte packs (min over the operand types of 16 / sizeof) when every pointer sits
///   at the same element offset within such a pack; then a scalar head of `head` elements
///   brings every pointer to a pack boundary. Pointers at different offsets take one element
///   per access (pack 1), as many elements of each input in flight per thread as a pack holds.
/// - packs per thread: what the functor asks for (kPacksPerThread: costly functors keep
///   several packs in flight; otherwise 2 with one input or three, 1 with two: 32 bytes of input or
///   more in flight a thread), halved while the tiles would not fill one wave of resident blocks
///   (small n: spread the work over every SM first).
/// - staging through shared memory (kStageInputs functors, several packs per thread).
/// - block: 256 threads, halved (to 64 at least) while there would be fewer blocks than SMs.
/// - grid: one block per tile (the kernel strides by the grid only past INT32_MAX blocks).
/// - 32-bit indices while every index the kernel forms fits.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernelkit/core/config_table.cuh"
#include "kernelkit/core/device.cuh"
#include "kernelkit/core/launch.cuh"
#include "kernelkit/core/pack.cuh"

namespace kernelkit {

/// Most threads per block the plan launches (the kernel's __launch_bounds__), and fewest.
/// @{
inline constexpr int kEwMaxBlock = 256;
inline constexpr int kEwMinBlock = 64;
/// @}
/// Most packs of each input a thread keeps in flight (powers of two up to this).
inline constexpr int kEwMaxPacksPerThread = 4;
/// Bytes of shared memory per input, pack and thread on the staged path (one slot holds a
/// pack of up to 16 bytes).
inline constexpr int kEwSlotBytes = 16;
/// The output and up to three inputs.
inline constexpr int kEwMaxOperands = 4;

/// One operand of a call as the plan sees it: its element size and where it sits on the
/// 16-byte grid.
struct EwOperand {
  int elem_bytes = 0;  ///< bytes of one element
  Alignment align;     ///< the pointer's alignment
};

/// The operands of a call: op[0] is the output, op[1..count) the inputs.
struct EwOperands {
  int count = 0;                      ///< operands: 1 + the inputs
  EwOperand op[kEwMaxOperands] = {};  ///< op[0] the output, then the inputs

  /// Inputs of the call.
  constexpr int arity() const { return count - 1; }
};

/// The operands of a call with output out and inputs in (1 to 3 of them), as plan_elementwise
/// takes them.
template <typename R, typename... Args>
EwOperands ew_operands(const R* out, const Args*... in) {
  static_assert(sizeof...(Args) >= 1 && sizeof...(Args) + 1 <= kEwMaxOperands, "1 to 3 inputs");
  return EwOperands{1 + int{sizeof...(Args)},
                    {EwOperand{int{sizeof(R)}, alignment_of(out)},
                     EwOperand{int{sizeof(Args)}, alignment_of(in)}...}};
}

/// What the functor asks of the engine (elementwise.cuh reads them from F's members).
struct EwFunctorTraits {
  int packs_per_thread = 0;   ///< F::kPacksPerThread: packs per thread at large n (0: by arity)
  bool stage_inputs = false;  ///< F::kStageInputs: stage the inputs through shared memory
};

/// Packs per thread the functor asks for: kPacksPerThread, else 2 with one input or three, 1
/// with two (at least 32 bytes of input in flight a thread), as a power of two in
/// [1, kEwMaxPacksPerThread]. The most a plan picks for it.
constexpr int ew_max_packs_per_thread(const EwFunctorTraits& f, int arity) {
  int want = f.packs_per_thread > 0 ? f.packs_per_thread : (arity == 2 ? 1 : 2);
  want = want < kEwMaxPacksPerThread ? want : kEwMaxPacksPerThread;
  return pow2_floor(want);
}

/// The widest pack (elements) of 16 bytes or less that every operand type allows.
constexpr int ew_max_pack(const EwOperands& ops) {
  int pack = kMaxPackBytes;
  for (int k = 0; k < ops.count; ++k) {
    const int p = ops.op[k].elem_bytes > 0 ? kMaxPackBytes / ops.op[k].elem_bytes : 1;
    pack = p < pack ? p : pack;
  }
  return pow2_floor(pack);
}

/// Elements per thread on the one-element-per-access path: as many as one pack holds, so a
/// thread moves as many bytes as on the packed path.
constexpr int ew_unit_packs_per_thread(int max_pack) {
  return max_pack;
}

/// Whether the staged path can run with packs of `pack` elements: the functor asks, a thread
/// has several packs in flight, and every input pack is 4, 8 or 16 bytes (cp.async sizes).
/// Reads only the element sizes of ops.
constexpr bool ew_stages(const EwFunctorTraits& f, const EwOperands& ops, int pack, int ppt) {
  if (!f.stage_inputs || pack <= 1 || ppt <= 1) return false;
  for (int k = 1; k < ops.count; ++k)
    if (pack * ops.op[k].elem_bytes < 4) return false;
  return true;
}

/// Whether a plan can ask for `pack` elements per access and `ppt` packs per thread with
/// these operand sizes and functor: the widest pack with a power of two of packs up to the
/// functor's, or one element per access with a pack's worth of elements (ew_config_allowed
/// turns this into entries of kEwConfigs). Reads only the element sizes of ops.
constexpr bool ew_plannable(const EwFunctorTraits& f, const EwOperands& ops, int pack, int ppt) {
  const int max_pack = ew_max_pack(ops);
  if (pack == 1) return ppt == ew_unit_packs_per_thread(max_pack);
  if (pack != max_pack || !is_pow2(ppt)) return false;
  return ppt <= ew_max_packs_per_thread(f, ops.arity());
}

/// One kernel configuration of the engine: the template arguments launch_elementwise gives
/// elementwise_kernel besides the functor and the operand types (an entry of kEwConfigs). The
/// pack is the widest the types allow (packed) or one element (not packed; a thread then
/// takes a pack's worth of elements).
struct EwConfig {
  bool packed = false;       ///< the widest pack, else one element per access
  int packs_per_thread = 0;  ///< packed: packs of each input a thread has in flight; else 0
  bool staged = false;       ///< full tiles' inputs copied through shared memory by cp.async
  bool index64 = false;      ///< 64-bit indices
};

/// Same kernel (for the same functor and operand types).
constexpr bool operator==(const EwConfig& a, const EwConfig& b) {
  return a.packed == b.packed && a.packs_per_thread == b.packs_per_thread && a.staged == b.staged &&
         a.index64 == b.index64;
}

namespace detail {
constexpr EwConfig ew_packed_config(int packs_per_thread, bool staged, bool index64) {
  return {true, packs_per_thread, staged, index64};
}
constexpr EwConfig ew_unit_config(bool index64) {
  return {false, 0, false, index64};
}
}  // namespace detail

/// Every kernel configuration of the engine. A call's kernel takes the entries its element
/// sizes and functor allow (ew_config_allowed), which are contiguous here for every call
/// (ew_configs_of): 4 and 2 packs a thread loaded directly (functors that do not stage, or
/// types cp.async cannot copy in packs), 1 pack, one element per access, then 2 and 4 packs a
/// thread staged; each with 32- and 64-bit indices. plan_elementwise returns one of the
/// call's entries (ew_config), launch_elementwise instantiates exactly those, and the plan
/// tests check that every plan is one and every entry is planned.
inline constexpr EwConfig kEwConfigs[] = {
    detail::ew_packed_config(4, false, false),
    detail::ew_packed_config(4, false, true),
    detail::ew_packed_config(2, false, false),
    detail::ew_packed_config(2, false, true),
    detail::ew_packed_config(1, false, false),
    detail::ew_packed_config(1, false, true),
    detail::ew_unit_config(false),
    detail::ew_unit_config(true),
    detail::ew_packed_config(2, true, false),
    detail::ew_packed_config(2, true, true),
    detail::ew_packed_config(4, true, false),
    detail::ew_packed_config(4, true, true),
};

/// Whether a call with these operand element sizes and functor can take entry c: one element
/// per access always; the widest pack (when wider than one element) with packs per thread the
/// plan may pick (ew_plannable), staged exactly where ew_stages says. Reads only the element
/// sizes of ops.
constexpr bool ew_config_allowed(const EwFunctorTraits& f, const EwOperands& ops,
                                 const EwConfig& c) {
  if (!c.packed) return c.packs_per_thread == 0 && !c.staged;
  const int pack = ew_max_pack(ops);
  return pack > 1 && ew_plannable(f, ops, pack, c.packs_per_thread) &&
         c.staged == ew_stages(f, ops, pack, c.packs_per_thread);
}

/// The entries of kEwConfigs a call with these operand element sizes and functor can take:
/// [begin, end) (empty if they were not contiguous: launch_elementwise asserts they are).
constexpr ConfigRange ew_configs_of(const EwFunctorTraits& f, const EwOperands& ops) {
  return config_range(kEwConfigs,
                      [f, ops](const EwConfig& c) { return ew_config_allowed(f, ops, c); });
}

/// Everything one call does.
struct EwPlan {
  int pack = 1;              ///< elements per access: the widest pack, or 1 (pointers at
                             ///< different offsets within a pack)
  int64_t head = 0;          ///< elements before the first pack boundary of every pointer
                             ///< (0 <= head < pack; done one per thread by block 0)
  int64_t num_packs = 0;     ///< whole packs after the head
  int tail = 0;              ///< elements after the last whole pack (< pack; block 0)
  int packs_per_thread = 1;  ///< packs of each input a thread has in flight (tile = block *
                             ///< packs_per_thread packs)
  bool staged = false;       ///< full tiles' inputs copied through shared memory by cp.async
  bool index64 = false;      ///< 64-bit indices (32-bit ones would overflow)
  LaunchShape shape;         ///< grid: one block per tile; block; smem: the staging buffer
};

/// The configuration plan p launches: packed or not, its packs per thread (0 when not
/// packed), staging and index width. An entry of kEwConfigs that its call's operands and
/// functor allow (ew_configs_of) for every plan plan_elementwise makes; launch_elementwise
/// answers cudaErrorInvalidValue for any other.
inline EwConfig ew_config(const EwPlan& p) {
  if (p.pack > 1) return detail::ew_packed_config(p.packs_per_thread, p.staged, p.index64);
  EwConfig c = detail::ew_unit_config(p.index64);
  c.staged = p.staged;
  return c;
}

/// Resident blocks of `block` threads per SM with `smem` bytes of shared memory (at least 1).
inline int ew_blocks_per_sm(const DeviceInfo& d, int block, int64_t smem) {
  return std::max(1, blocks_per_sm(d, block, 0, smem));
}

/// The plan of out[i] = f(in[i]...) for i < n on device d. n >= 0; ops: the output and each
/// input (elem_bytes >= 1, a power of two where a 16-byte pack holds several; pointers aligned
/// to their elements); pure.
inline EwPlan plan_elementwise(int64_t n, const EwOperands& ops, const EwFunctorTraits& f,
                               const DeviceInfo& d) {
  EwPlan p;
  const int arity = ops.arity();
  const int max_pack = ew_max_pack(ops);

  // Pack and head: every pointer's element offset within a pack of max_pack elements.
  bool same_offset = true;
  const auto offset_of = [&](int k) {
    const EwOperand& o = ops.op[k];
    return static_cast<int64_t>(o.align.elements(o.elem_bytes) % max_pack);
  };
  for (int k = 1; k < ops.count; ++k)
    same_offset = same_offset && offset_of(k) == offset_of(0);
  if (max_pack > 1 && same_offset) {
    p.pack = max_pack;
    p.head = std::min<int64_t>(n, (max_pack - offset_of(0)) % max_pack);
  }
  p.num_packs = (n - p.head) / p.pack;
  p.tail = static_cast<int>(n - p.head - p.num_packs * p.pack);

  // Packs per thread: the functor's, halved while the tiles of 256-thread blocks would not
  // fill one wave of resident blocks (small n: every SM gets work before a thread gets more of
  // it; under a wave every block loads, computes and stores at once, the SMs idle 29-42 % of
  // the time: gelu bf16 5493760+1, bench/NOTES.md); one element per access keeps a pack's worth.
  const auto smem_for = [&](int block, int ppt) -> int64_t {
    return ew_stages(f, ops, p.pack, ppt) ? int64_t{kEwSlotBytes} * block * ppt * arity : 0;
  };
  if (p.pack > 1) {
    p.packs_per_thread = ew_max_packs_per_thread(f, arity);
    while (p.packs_per_thread > 1) {
      const int ppt = p.packs_per_thread;
      const int64_t tiles = ceil_div<int64_t>(p.num_packs, int64_t{kEwMaxBlock} * ppt);
      const int64_t wave =
          int64_t{ew_blocks_per_sm(d, kEwMaxBlock, smem_for(kEwMaxBlock, ppt))} * d.sm_count;
      if (tiles >= wave && smem_for(kEwMaxBlock, ppt) <= d.smem_per_block) break;
      p.packs_per_thread /= 2;
    }
  } else {
    p.packs_per_thread = ew_unit_packs_per_thread(max_pack);
  }
  p.staged = ew_stages(f, ops, p.pack, p.packs_per_thread);

  // Block: 256 threads, fewer while there would be fewer blocks than SMs (small n).
  int block = kEwMaxBlock;
  while (block > kEwMinBlock &&
         ceil_div<int64_t>(p.num_packs, int64_t{block} * p.packs_per_thread) < d.sm_count)
    block /= 2;

  const int64_t tile_elems = int64_t{block} * p.packs_per_thread * p.pack;
  p.shape.block = dim3(static_cast<unsigned>(block));
  p.shape.grid = dim3(static_cast<unsigned>(
      grid_one_block_per_tile(ceil_div<int64_t>(p.num_packs, tile_elems / p.pack))));
  p.shape.smem = static_cast<size_t>(smem_for(block, p.packs_per_thread));
  // Indices the kernel forms stay below 2 n + one tile (a tile start plus the grid stride).
  p.index64 = n > (int64_t{INT32_MAX} - tile_elems - 2 * kMaxPackBytes) / 2;
  return p;
}

}  // namespace kernelkit
