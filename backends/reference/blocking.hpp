#pragma once
/// \file How the reference cuts a domain into scale blocks: fixed 1-D / 2-D blocks (partial
/// blocks at the tails hold the elements present) and jagged groups from an offsets array.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dsl/ir.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::reference {

/// Row-major strides of `shape` (in elements).
std::vector<int64_t> row_major_strides(std::span<const int64_t> shape);

/// Product of the extents: 0 when one is 0, whatever the others.
int64_t product(std::span<const int64_t> shape);

/// The blocks of one BlockSpec over one domain.
struct BlockPartition {
  std::vector<int64_t> scale_shape;  ///< the scale tensor's logical shape
  int64_t num_blocks = 0;            ///< product of scale_shape
  /// Block (row-major index into scale_shape) of each domain element in row-major order;
  /// -1 for elements past the last group end of a jagged axis (they belong to no block).
  std::vector<int64_t> block_of;
};

/// Checks jagged-group ends against the extent of the grouped axis: each end >= the previous
/// (the first >= 0) and the last <= extent. Throws UsageError naming `name` and the rule.
void validate_group_ends(const std::string& name, std::span<const int32_t> ends, int64_t extent);

/// Checks a mask's counts (Pipeline::mask()) against the extent of the masked axis: each in
/// [0, extent]. Throws UsageError naming `name` and the rule.
void validate_counts(const std::string& name, std::span<const int32_t> counts, int64_t extent);

/// Whether domain index `idx` is a masked position of `m` under `counts` (false without a mask).
inline bool masked(const Mask& m, std::span<const int32_t> counts, std::span<const int64_t> idx) {
  return m.active() && idx[size_t(m.axis)] >= counts[size_t(idx[size_t(m.by)])];
}

/// Cuts `domain` into the blocks of `spec`; `group_ends` are the (validated) ends of the jagged
/// groups when spec.jagged().
BlockPartition partition(const BlockSpec& spec, std::span<const int64_t> domain,
                         std::span<const int32_t> group_ends = {});

}  // namespace mxjit::reference
