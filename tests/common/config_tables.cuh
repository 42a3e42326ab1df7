// SPDX-License-Identifier: Apache-2.0
// The plan tests' checks of an op's configuration table (core/config_table.cuh): its entries
// are distinct, its per-type ranges tile it, and a sweep of plans reaches every entry.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernelkit/core/config_table.cuh"

namespace kktest {

// Every entry of table is distinct: config_index finds each at its own position.
template <typename Config, std::size_t N>
void expect_distinct_entries(const Config (&table)[N], std::string (*describe)(const Config&)) {
  for (std::size_t i = 0; i < N; ++i)
    EXPECT_EQ(kernelkit::config_index(table, table[i]), static_cast<int>(i)) << describe(table[i]);
}

// The ranges (one per element type or pack, in table order) are non-empty and tile the N
// entries: each starts where the one before ends, the first at 0, the last ends at N.
inline void expect_ranges_tile(std::size_t n,
                               std::initializer_list<kernelkit::ConfigRange> ranges) {
  std::size_t next = 0;
  for (const kernelkit::ConfigRange& r : ranges) {
    EXPECT_EQ(r.begin, next);
    EXPECT_GT(r.end, r.begin);
    next = r.end;
  }
  EXPECT_EQ(next, n);
}

// How often a sweep plans each entry of a table.
template <typename Config, std::size_t N>
class PlannedEntries {
 public:
  explicit PlannedEntries(const Config (&table)[N]) : table_(table), counts_(N, 0) {}

  // The index of c among the entries [begin, end), counted; -1 (nothing counted) where c is
  // none of them.
  int count(const Config& c, std::size_t begin = 0, std::size_t end = N) {
    const int i = kernelkit::config_index(table_, c, begin, end);
    if (i >= 0) {
      ++counts_[static_cast<std::size_t>(i)];
      ++plans_;
    }
    return i;
  }
  int64_t plans() const { return plans_; }

  // Every entry was planned at least once ("<what> <entry>" names one that was not).
  void expect_every_entry_planned(std::string (*describe)(const Config&),
                                  const std::string& what) const {
    for (std::size_t i = 0; i < N; ++i)
      EXPECT_GT(counts_[i], 0) << what << " " << describe(table_[i]);
  }

 private:
  const Config (&table_)[N];
  std::vector<int64_t> counts_;
  int64_t plans_ = 0;
};

}  // namespace kktest
