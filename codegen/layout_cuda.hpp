#pragma once
/// \file The CUDA lowering of the layout algebra's one offset function (lower_offset,
/// dsl/layout_bound.hpp): a value's storage offset as a CUDA expression, for the layouts the
/// kernels store without a fast path of their own (packed words, split axes other than the
/// blocked atoms).
#include <string>
#include <vector>

#include "dsl/pipeline.hpp"

namespace mxjit::detail {

/// The value offset of `index` in layout `l` as a CUDA mx_i64 expression; `index[a]` and
/// `shape[a]` (logical extents) are non-negative CUDA expressions per axis.
std::string cuda_offset(const BoundLayout& l, const std::vector<std::string>& index, const std::vector<std::string>& shape);

/// Whether the kernels store output `o` through cuda_offset: scales in a layout that is neither
/// a strided view of values, nor blocked128x4 / blocked8x4, nor grouped.
bool generic_layout(const Output& o);

}  // namespace mxjit::detail
