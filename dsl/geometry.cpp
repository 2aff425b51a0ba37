#include "dsl/geometry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <tuple>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit {

OutputGeometry output_geometry(const Pipeline& p, int index, std::span<const int64_t> shape_in, int64_t groups) {
  const Output& o = p.outputs().at(size_t(index));
  const std::vector<int64_t> shape(shape_in.begin(), shape_in.end());
  if (int(shape.size()) != p.rank())
    throw UsageError(fmt::format("output '{}': domain has rank {} but {} extents were given", o.name, p.rank(),
                                 shape.size()));
  OutputGeometry g;
  switch (o.kind) {
    case OutputKind::amax:
      g.logical_shape = g.view_shape = {1};
      g.view_strides = {1};
      g.storage_bytes = 4;
      return g;
    case OutputKind::values:
    case OutputKind::elems:
      g.logical_shape = shape;
      break;
    case OutputKind::scales:
      g.logical_shape = scale_shape(block_of(o.node), shape, groups);
      break;
  }
  const int64_t word_bytes = int64_t(dtype_size(o.dtype));
  const BoundLayout& l = o.bound;
  std::tie(g.row_axis, g.col_axis) = layout_roles(o, p.rank());
  if (!o.layout.uses_roles()) g.row_axis = g.col_axis = -1;
  if (o.layout.grouped()) {
    int64_t n = 0;
    try {
      n = l.size_bound(g.logical_shape, groups);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("output '{}': {}", o.name, e.what()));
    }
    g.view_shape = {n / l.pack};
    g.view_strides = {1};
  } else if (o.kind == OutputKind::elems && o.node->elem.packed()) {
    g.packed_axis = l.order().back();
    std::vector<int64_t> half = g.logical_shape;
    if (half[size_t(g.packed_axis)] % 2 != 0)
      throw UsageError(fmt::format("output '{}': FP4 packs two codes per byte along axis {}, whose extent {} is odd",
                                   o.name, g.packed_axis, half[size_t(g.packed_axis)]));
    half[size_t(g.packed_axis)] /= 2;
    g.view_shape = l.view_shape(half);
    g.view_strides = l.view_strides(half);
  } else {
    try {
      g.view_shape = l.view_shape(g.logical_shape);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("output '{}': {}", o.name, e.what()));
    }
    g.view_strides = l.view_strides(g.logical_shape);
  }
  g.storage_bytes = checked_element_count(fmt::format("output '{}'", o.name), g.view_shape) * word_bytes;
  // A storage word holds `pack` values (FP4 codes: two a byte); any storage beyond that is padding.
  // Empty storage pads nothing; otherwise every extent is >= 1 and the storage holds them all, so
  // the product does not overflow (an empty domain's other extents may be huge).
  g.padded = o.layout.grouped();
  if (!g.padded && g.storage_bytes > 0) {
    int64_t values = 1;
    for (int64_t e : g.logical_shape) values *= e;
    const int64_t per_word = g.packed_axis >= 0 ? 2 : l.pack;
    g.padded = g.storage_bytes * per_word != values * word_bytes;
  }
  return g;
}

std::vector<int64_t> scale_group_ends(const std::string& name, std::span<const int32_t> ends, int64_t block,
                                      int64_t extent) {
  std::vector<int64_t> out(ends.size());
  for (size_t g = 0; g < ends.size(); ++g) {
    const int64_t e = ends[g];
    if (e % block != 0 && e != extent)
      throw IndexValuesError(
          fmt::format("offsets '{}': group end [{}] = {} is neither a multiple of the block size {} "
                      "nor the extent {}; a block of the grouped axis would straddle two groups",
                      name, g, e, block, extent));
    out[g] = ceil_div(e, block);
  }
  return out;
}

}  // namespace mxjit
