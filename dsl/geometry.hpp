#pragma once
/// \file Shapes and sizes of a pipeline's outputs for given input extents: the one place the
/// CPU reference, the code generator and the launch checks agree on what each output holds.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dsl/pipeline.hpp"

namespace mxjit {

/// Where one output's bytes go for a given domain shape.
struct OutputGeometry {
  std::vector<int64_t> logical_shape;  ///< the logical tensor (domain, scale shape, or {1} for amax)
  std::vector<int64_t> view_shape;     ///< the shape of the TensorView the caller passes: the padded
                                       ///< tensor of storage words, or 1-D (BoundLayout::view_shape)
  std::vector<int64_t> view_strides;   ///< its strides in words (compact per the layout)
  int64_t storage_bytes = 0;           ///< bytes the output occupies (padding included)
  bool padded = false;                 ///< storage holds bytes no logical value fills (an aligned
                                       ///< axis past its extent, grouped layouts' bound); their
                                       ///< zeros come from a fill before the kernel
  int packed_axis = -1;                ///< FP4: the axis packed two codes per byte
  int row_axis = -1, col_axis = -1;    ///< scale layouts (Layout::uses_roles): the rows and columns axes
};

/// Geometry of output `index` of `p` for a domain of extents `shape`; `groups` is the number of
/// jagged groups (the offsets input's extent) when the pipeline has groups.
/// Throws UsageError when the extents do not suit the output (e.g. an odd FP4 packed extent).
/// For a grouped scale layout (Layout::groups) `groups` is the extent of its offsets input, and
/// storage_bytes is the host-side upper bound (BoundLayout::size_bound).
OutputGeometry output_geometry(const Pipeline& p, int index, std::span<const int64_t> shape, int64_t groups = 0);

/// Group ends of a grouped scale layout in scale units: `ends` (cumulative, int32, in domain
/// units along the grouped axis of extent `extent`; already checked non-decreasing, >= 0 and
/// <= extent) divided by the block size `block` along that axis (1 when the axis is not the
/// block axis). An end must be a multiple of `block` or equal `extent` (the tail block), else a
/// block would straddle two groups: UsageError naming `name`, the group and the rule.
std::vector<int64_t> scale_group_ends(const std::string& name, std::span<const int32_t> ends, int64_t block,
                                      int64_t extent);

}  // namespace mxjit
