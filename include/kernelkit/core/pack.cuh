// SPDX-License-Identifier: Apache-2.0
/// @file
/// Vectorized access: an aligned pack of N elements moved as one wide load or store, where
/// an operand sits on the grid of 16-byte packs (Alignment, what every plan knows of its
/// operands' addresses), and the run-time choice of the widest pack every pointer of an
/// operation allows.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace kernelkit
