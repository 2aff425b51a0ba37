#pragma once
/// \file Draw a layout as SVG: where each element of a logical tensor lands in memory.
///
///     +-------------------------------+   +---------------------------+
///     | title: layout, shape, storage |   | storage order strip       |
///     |     c0   c1   c2   c3         |   | one line = 16 bytes (one  |
///     | r0 [ 0 ][ 1 ][ 2 ][ 3 ]       |   | 128x4 line) or one row of |
///     | r1 [16 ][17 ][18 ][19 ]  ...  |   | the permuted tensor; each |
///     |   cells: storage offset,      |   | byte labelled "r,c", pad  |
///     |   colour by offset; padding   |   | hatched                   |
///     |   hatched; atoms outlined     |   |                           |
///     +-------------------------------+   +---------------------------+
///
/// The grid shows the padded extent of blocked layouts (padding cells hatched and labelled with
/// their storage offset), group boundaries of grouped layouts, and one panel per index of the
/// batch axes (the axes other than rows and columns). Output is deterministic text.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dsl/layout.hpp"

namespace mxjit {

/// What to draw and how.
struct DrawOptions {
  int rows_axis = -1;                ///< axis drawn downwards (-1: rank-2, or none at rank 1)
  int cols_axis = -1;                ///< axis drawn across (-1: rank-1)
  std::vector<int64_t> group_ends;   ///< grouped layouts: group ends in scale units (default: one group)
  int cell = 30;                     ///< cell size in pixels (8..256)
  bool storage_strip = true;         ///< also draw the storage order as a strip
  std::string title;                 ///< first title line (default: layout and shape)
  int64_t max_cells = 1 << 16;       ///< refuse bigger drawings (grid plus strip cells)
};

/// The SVG text of `layout` over a tensor of `shape`. Throws UsageError when the layout does not
/// fit the shape (rank), an axis is out of range or equal, the cell size is out of range, or the
/// drawing exceeds max_cells (every count checked, so huge extents never overflow).
std::string draw_svg(const Layout& layout, std::span<const int64_t> shape, const DrawOptions& options = {});

}  // namespace mxjit
