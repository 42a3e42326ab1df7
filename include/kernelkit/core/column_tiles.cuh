// SPDX-License-Identifier: Apache-2.0
/// @file
/// Column tiles of an (outer, n, inner) row-major layout read with threads along inner (the
/// mechanism col_reduce and softmax_inner's streaming path share): a block of `block` threads is
/// `width` adjacent column packs x block / width row lanes; a row lane walks its rows down n,
/// consecutive threads read consecutive packs of a row (coalesced). When the tiles do not fill
/// a wave of blocks, n is split over several blocks per tile, each reading rows_per_split rows.
/// Pure host code.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernelkit/core/math.cuh"

namespace kernelkit {

/// Column packs of a tile (1..block) for cp column packs a slice, n rows, `outer` slices, on a
/// device whose wave is `wave` blocks: narrow slices (cp <= max_width) take the whole slice;
/// wider ones max_width packs and block / max_width row lanes, fewer row lanes and wider tiles
/// (up to the block) when n gives a lane fewer than min_lane_rows rows, then narrower tiles,
/// down to line_packs (a 128-byte line), while the tiles do not fill a wave and the rows feed
/// the extra lanes.
inline int column_tile_width(int64_t cp, int64_t n, int64_t outer, int block, int max_width,
                             int min_lane_rows, int line_packs, int64_t wave) {
  int width = static_cast<int>(std::min<int64_t>(std::max<int64_t>(cp, 1), max_width));
  if (cp > max_width) {
    int lanes = block / max_width;
    while (lanes > 1 && n < int64_t{lanes} * min_lane_rows)
      lanes /= 2;
    width = static_cast<int>(std::min<int64_t>(cp, block / lanes));
    while (width / 2 >= line_packs && outer * ceil_div<int64_t>(cp, width) < wave &&
           n >= int64_t{block / (width / 2)} * min_lane_rows)
      width /= 2;
  }
  return width;
}

/// How n is split over the blocks of a column tile.
struct ColumnSplit {
  int split = 1;               ///< blocks per tile along n
  int64_t rows_per_split = 0;  ///< rows a split reads: ceil(n / split) (n when split == 1)
};

/// The split of n rows over the blocks of `tiles` tiles: while the tiles do not fill a wave,
/// splits of at least min_rows rows, at most `most` (what the workspace holds, or any other
/// bound of the caller); no empty split (as many as the rows need at that length). split 1
/// when no split of at least 2 is allowed.
inline ColumnSplit column_split(int64_t n, int64_t tiles, int64_t wave, int64_t min_rows,
                                int64_t most) {
  ColumnSplit s;
  s.rows_per_split = std::max<int64_t>(n, 0);
  const int64_t split =
      std::min({wave / std::max<int64_t>(tiles, 1), n / std::max<int64_t>(min_rows, 1), most});
  if (split < 2) return s;
  s.rows_per_split = ceil_div<int64_t>(n, split);
  s.split = static_cast<int>(ceil_div<int64_t>(n, s.rows_per_split));
  return s;
}

}  // namespace kernelkit
