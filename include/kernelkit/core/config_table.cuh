// SPDX-License-Identifier: Apache-2.0
/// @file
/// An op's table of kernel configurations: a namespace-scope `inline constexpr Config
/// kTable[]` of plain structs (path, block, pack, tile, ...) comparable with ==, one entry per
/// kernel the op instantiates. The plan's choice is an entry of it; dispatch_table is the
/// runtime-to-template step for a table, as dispatch (dispatch.cuh) is for a list of values:
/// @code
///   return dispatch_table<kTable, 0, std::size(kTable)>(key, [&](auto i) {
///     constexpr Config c = kTable[decltype(i)::value];  // every field a constant expression
///     return launch(kernel<c.block, c.pack>, plan.shape, stream, ...);
///   });
/// @endcode
/// Only the entries [Begin, End) are instantiated (an op whose entries depend on the element
/// type keeps each type's entries contiguous). A key that is no entry there returns
/// cudaErrorInvalidValue: a plan never asks for one, and the tests check every plan is an
/// entry (config_index).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace kernelkit {

/// The index of the first entry of table[begin, end) equal to c, or -1.
template <typename Config, std::size_t N>
constexpr int config_index(const Config (&table)[N], const Config& c, std::size_t begin = 0,
                           std::size_t end = N) {
  for (std::size_t i = begin; i < end && i < N; ++i)
    if (table[i] == c) return static_cast<int>(i);
  return -1;
}

/// Entries [begin, end) of a table.
struct ConfigRange {
  std::size_t begin = 0;  ///< the first entry
  std::size_t end = 0;    ///< one past the last entry
};

/// The entries of table for which pred holds, when they are contiguous (an empty range
/// otherwise, or when there are none).
template <typename Config, std::size_t N, typename Pred>
constexpr ConfigRange config_range(const Config (&table)[N], Pred pred) {
  std::size_t begin = N, end = N;
  for (std::size_t i = 0; i < N; ++i) {
    if (!pred(table[i])) continue;
    if (begin == N) {
      begin = i;
    } else if (end != i) {
      return {};
    }
    end = i + 1;
  }
  return begin == N ? ConfigRange{} : ConfigRange{begin, end};
}

namespace detail {
template <const auto& Table, std::size_t Begin, typename Key, typename F, std::size_t... Is>
cudaError_t dispatch_table_impl(const Key& key, F&& f, std::index_sequence<Is...>) {
  cudaError_t result = cudaErrorInvalidValue;
  (void)((key == Table[Begin + Is]
              ? (result = f(std::integral_constant<int, static_cast<int>(Begin + Is)>{}), true)
              : false) ||
         ...);
  return result;
}
}  // namespace detail

/// Calls f(std::integral_constant<int, I>{}) for the first I in [Begin, End) with
/// Table[I] == key and returns its result; cudaErrorInvalidValue when there is none (see the
/// file comment). f is instantiated for every I in [Begin, End) and no other.
template <const auto& Table, std::size_t Begin, std::size_t End, typename Key, typename F>
cudaError_t dispatch_table(const Key& key, F&& f) {
  static_assert(Begin <= End && End <= std::extent_v<std::remove_reference_t<decltype(Table)>>,
                "[Begin, End) within the table");
  return detail::dispatch_table_impl<Table, Begin>(key, std::forward<F>(f),
                                                   std::make_index_sequence<End - Begin>{});
}

}  // namespace kernelkit
