// SPDX-License-Identifier: Apache-2.0
/// @file
/// Vectorized access: an aligned pack of N elements moved as one wide load or store, and
/// the run-time choice of the widest pack every pointer of an operation allows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "types.cuh"

namespace kernelkit {

/// Bytes of the widest pack: one 16-byte load or store.
inline constexpr int kMaxPackBytes = 16;

/// N elements of T, aligned to their total size so that a load or store of the whole pack
/// compiles to one instruction (up to 16 bytes).
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  static_assert(N >= 1 && (N & (N - 1)) == 0, "pack size must be a power of two");
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
  static_assert(P >= 1 && (P & (P - 1)) == 0, "pack size must be a power of two");
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
