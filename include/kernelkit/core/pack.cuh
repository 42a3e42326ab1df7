// SPDX-License-Identifier: Apache-2.0
/// @file
/// Vectorized access: an aligned pack of N elements moved as one wide load or store, where
/// an operand sits on the grid of 16-byte packs (Alignment, what every plan knows of its
/// operands' addresses), and the run-time choice of the widest pack every pointer of an
/// operation allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernelkit/core/math.cuh"
#include "types.cuh"

namespace kernelkit {

/// Bytes of the widest pack: one 16-byte load or store.
inline constexpr int kMaxPackBytes = 16;

/// Where an operand sits on the grid of 16-byte packs: the bytes from the previous 16-byte
/// boundary to its address. The one description of operand alignment every plan takes
/// (alignment_of reads it from a pointer; host tests write it out): which packs an operand
/// allows from its start (fits), how many elements precede it in its pack (elements), and
/// whether two operands sit at the same place in their packs (==). common_alignment() gives what a
/// set of operands, or an operand and the byte stride of its rows, all allow.
struct Alignment {
  int offset = 0;  ///< bytes past the previous 16-byte boundary, 0..15

  /// On the 16-byte grid (offset 0).
  constexpr Alignment() = default;
  /// An address `bytes` past a 16-byte boundary (any integer; taken modulo 16). Also stands
  /// for a byte stride in common_alignment(): every multiple of it.
  constexpr explicit Alignment(int64_t bytes)
      : offset(static_cast<int>((bytes % kMaxPackBytes + kMaxPackBytes) % kMaxPackBytes)) {}

  /// Packs of pack_bytes bytes (a power of two, at most 16) start at the operand's address.
  constexpr bool fits(int pack_bytes) const { return offset % pack_bytes == 0; }
  /// Elements of elem_bytes bytes (a power of two) between the previous 16-byte boundary and
  /// the operand (element-aligned).
  constexpr int elements(int elem_bytes) const { return offset / elem_bytes; }
};

/// Same place within a 16-byte pack.
constexpr bool operator==(Alignment a, Alignment b) {
  return a.offset == b.offset;
}
/// Different places within a 16-byte pack.
constexpr bool operator!=(Alignment a, Alignment b) {
  return !(a == b);
}

/// What every one of a, b, ... allows: common_alignment(a, b, ...).fits(n) exactly when each of
/// them fits(n). Its offset is the largest power of two (at most 8) they all are multiples of, or
/// 0 when each is on the 16-byte grid. With Alignment(stride_bytes) among them: every row of
/// that stride too.
template <typename... More>
constexpr Alignment common_alignment(Alignment a, More... more) {
  int bits = a.offset;
  ((bits |= more.offset), ...);
  return Alignment(bits & -bits);
}

/// The alignment of address p (host code: plans take it, kernels get their own pointers).
inline Alignment alignment_of(const void* p) {
  return Alignment(static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(p) % kMaxPackBytes));
}

/// N elements of T, aligned to their total size so that a load or store of the whole pack
/// compiles to one instruction (up to 16 bytes).
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  static_assert(is_pow2(N), "pack size must be a power of two");
  static_assert(sizeof(T) * N <= kMaxPackBytes, "a pack is at most 16 bytes");
  T elem[N];  ///< the elements, in address order
};

/// The widest pack (in elements) that every one of the types allows within 16 bytes:
/// min over Ts of 16 / sizeof(T).
template <typename... Ts>
inline constexpr int kMaxPackSize = [] {
  int n = kMaxPackBytes;
  ((n = (kMaxPackBytes / static_cast<int>(sizeof(Ts)) < n)
            ? kMaxPackBytes / static_cast<int>(sizeof(Ts))
            : n),
   ...);
  return n < 1 ? 1 : n;
}();

namespace detail {
// Largest power of two, at most max_pack, such that p is aligned to pack * sizeof(T).
template <typename T>
constexpr int pack_size_of(const T* p, int max_pack) {
  int pack = max_pack;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  while (pack > 1 && addr % (static_cast<std::uintptr_t>(pack) * sizeof(T)) != 0)
    pack /= 2;
  return pack;
}
}  // namespace detail

/// The widest pack size (elements per access) legal for every pointer given: starts at
/// kMaxPackSize of their element types and halves until each pointer is aligned to
/// pack * sizeof(its type). Null pointers do not constrain the result. Host and device.
template <typename... Ts>
constexpr int pack_size_for(const Ts*... ptrs) {
  int pack = kMaxPackSize<Ts...>;
  ((pack = ptrs == nullptr ? pack : detail::pack_size_of(ptrs, pack)), ...);
  return pack;
}

/// Elements before the first address at or after p that is aligned to a whole pack of P
/// elements (0 <= head < P), at most n: the scalar head before the packed body of a row or
/// an array that does not start aligned. p must be aligned to sizeof(T). Host and device.
template <int P, typename T>
KERNELKIT_HD int64_t pack_head(const T* p, int64_t n) {
  static_assert(is_pow2(P), "pack size must be a power of two");
  const auto elem = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(p) / sizeof(T));
  const int64_t head = (P - elem % P) % P;
  return head < n ? head : n;
}

/// Loads pack index i (elements [i * N, i * N + N)) from p, which must be aligned to the
/// pack; one wide load.
template <int N, typename T>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p, int64_t i) {
  return reinterpret_cast<const Pack<T, N>*>(p)[i];
}

/// Stores v as pack index i (elements [i * N, i * N + N)) of p, which must be aligned to the
/// pack; one wide store.
template <int N, typename T>
__device__ __forceinline__ void store_pack(T* p, int64_t i, const Pack<T, N>& v) {
  reinterpret_cast<Pack<T, N>*>(p)[i] = v;
}

/// Stores v as pack index i of p in global memory as one wide store, whatever built v. A Pack
/// filled element by element and copied by store_pack can come out of nvcc 13.0's front end as
/// one store an element (softmax's two-pass kernel: 4 st.global.f32 an f32 pack, 8
/// st.global.u16 a 2-byte one); the st.global.wb intrinsics keep the 8- and 16-byte forms.
template <int N, typename T>
__device__ __forceinline__ void store_pack_global(T* p, int64_t i, const Pack<T, N>& v) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * N;
  if constexpr (kBytes == 16) {
    uint4 w;
    memcpy(&w, &v, 16);
    __stwb(reinterpret_cast<uint4*>(p) + i, w);
  } else if constexpr (kBytes == 8) {
    uint2 w;
    memcpy(&w, &v, 8);
    __stwb(reinterpret_cast<uint2*>(p) + i, w);
  } else {
    store_pack<N>(p, i, v);
  }
}

// ---------------------------------------------------------------------------------------
// Rows at any phase. A row of n elements of T starting at `row` lies over the grid of P-element
// packs (P x sizeof(T) = 16 bytes) at its phase h = pack_phase<P>(row): access q of the row's
// aligned array holds columns [q * P - h, q * P - h + P), so the row spans ceil((n + h) / P)
// accesses, the first (when h > 0) and the last possibly partial. Whole accesses move as one
// 16-byte load or store, the partial ones element by element. Another operand read at the same
// columns (the same row of a second matrix, a weight vector) may sit at a different phase:
// load_row_pack_any reads it at any phase, store_row_pack_any writes it.

/// Elements of T from the previous P-element pack boundary to p (0 <= phase < P). p must be
/// aligned to sizeof(T). Host and device.
template <int P, typename T>
KERNELKIT_HD int pack_phase(const T* p) {
  static_assert(is_pow2(P), "pack size must be a power of two");
  return static_cast<int>(reinterpret_cast<std::uintptr_t>(p) / sizeof(T) % P);
}

/// Columns [c, c + P) of a row of n elements (c may be negative or reach past n), `pad` outside
/// the row: one load when wholly inside (row + c must then be aligned to the pack), else element
/// by element.
template <int P, typename T>
__device__ __forceinline__ Pack<T, P> load_row_pack(const T* row, int64_t c, int64_t n, T pad) {
  if (c >= 0 && c + P <= n) return load_pack<P>(row + c, 0);
  Pack<T, P> raw;
#pragma unroll
  for (int j = 0; j < P; ++j)
    raw.elem[j] = c + j >= 0 && c + j < n ? row[c + j] : pad;
  return raw;
}

/// Writes the columns of v inside a row of n elements at [c, c + P): one store when wholly
/// inside (row + c must then be aligned to the pack), else element by element.
template <int P, typename T>
__device__ __forceinline__ void store_row_pack(T* row, int64_t c, int64_t n, const Pack<T, P>& v) {
  if (c >= 0 && c + P <= n) {
    store_pack<P>(row + c, 0, v);
  } else {
#pragma unroll
    for (int j = 0; j < P; ++j)
      if (c + j >= 0 && c + j < n) row[c + j] = v.elem[j];
  }
}

/// As load_row_pack, at any phase of row + c: a whole access off the 16-byte grid is read as the
/// two aligned 16-byte chunks around it where both lie inside the row (its bytes shifted into
/// place: a few funnel shifts and selects), else element by element. Reads nothing outside
/// the row's n elements. T of 2 or 4 bytes; packs under 16 bytes off their own grid move
/// element by element, and so does every whole access off the grid where Shift is false (an
/// operand rarely off x's phase: the shift's registers are not worth it there).
template <int P, bool Shift = true, typename T>
__device__ __forceinline__ Pack<T, P> load_row_pack_any(const T* row, int64_t c, int64_t n, T pad) {
  static_assert(P * sizeof(T) <= kMaxPackBytes && sizeof(T) >= 2, "packs of 2- or 4-byte types");
  const T* p = row + c;
  const int b = static_cast<int>(reinterpret_cast<std::uintptr_t>(p) % (P * sizeof(T)));
  if (b == 0 || c < 0 || c + P > n) return load_row_pack<P>(row, c, n, pad);
  Pack<T, P> raw;
  if constexpr (Shift && P * sizeof(T) == kMaxPackBytes) {
    const T* base = p - b / static_cast<int>(sizeof(T));  // the aligned chunk holding p
    if (base >= row && base + 2 * P <= row + n) {
      const uint4 lo = reinterpret_cast<const uint4*>(base)[0];
      const uint4 hi = reinterpret_cast<const uint4*>(base)[1];
      uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      // the 32 bytes shifted down by b (even): 2 bytes (an odd 2-byte element), then 4, then 8
      if constexpr (sizeof(T) == 2) {
        const unsigned sh = static_cast<unsigned>(b & 2) * 8;
#pragma unroll
        for (int i = 0; i < 7; ++i)
          w[i] = __funnelshift_r(w[i], w[i + 1], sh);
      }
#pragma unroll
      for (int i = 0; i < 6; ++i)
        w[i] = (b & 4) ? w[i + 1] : w[i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        w[i] = (b & 8) ? w[i + 2] : w[i];
      const uint4 out{w[0], w[1], w[2], w[3]};
      memcpy(&raw, &out, sizeof(raw));
      return raw;
    }
  }
#pragma unroll
  for (int j = 0; j < P; ++j)
    raw.elem[j] = p[j];
  return raw;
}

/// As store_row_pack, at any phase of row + c: one store where row + c is aligned to the pack
/// and the access wholly inside the row, else the row's columns element by element. Global: the
/// one store through store_pack_global (a pack built element by element can come out of
/// store_pack as one store an element).
template <int P, bool Global = false, typename T>
__device__ __forceinline__ void store_row_pack_any(T* row, int64_t c, int64_t n,
                                                   const Pack<T, P>& v) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(row + c) % (P * sizeof(T)) == 0;
  if (aligned && c >= 0 && c + P <= n) {
    if constexpr (Global) {
      store_pack_global<P>(row + c, 0, v);
    } else {
      store_pack<P>(row + c, 0, v);
    }
  } else {
#pragma unroll
    for (int j = 0; j < P; ++j)
      if (c + j >= 0 && c + j < n) row[c + j] = v.elem[j];
  }
}

}  // namespace kernelkit
