#include "backends/reference/blocking.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::reference {

std::vector<int64_t> row_major_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size());
  std::optional<int64_t> acc = 1;  // past INT64_MAX (an empty tensor only): 0
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc.value_or(0);
    if (acc) acc = checked_mul(*acc, shape[i]);
  }
  return s;
}

int64_t product(std::span<const int64_t> shape) {
  for (int64_t e : shape)
    if (e == 0) return 0;  // an empty tensor, however large its other extents
  int64_t n = 1;
  for (int64_t e : shape) n = checked_mul(n, e).value_or(std::numeric_limits<int64_t>::max());
  return n;
}

void validate_group_ends(const std::string& name, std::span<const int32_t> ends, int64_t extent) {
  int64_t prev = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    if (ends[g] < prev)
      throw IndexValuesError(
          fmt::format("offsets '{}': group end [{}] = {} is below the previous end {}; group ends "
                      "must be non-decreasing and >= 0",
                      name, g, ends[g], prev));
    prev = ends[g];
  }
  if (prev > extent)
    throw IndexValuesError(
        fmt::format("offsets '{}': the last group end {} exceeds the grouped axis extent {}", name, prev, extent));
}

void validate_counts(const std::string& name, std::span<const int32_t> counts, int64_t extent) {
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < 0 || counts[i] > extent)
      throw IndexValuesError(fmt::format("counts '{}': count [{}] = {} is outside [0, {}] (the masked axis' extent)",
                                         name, i, counts[i], extent));
}

BlockPartition partition(const BlockSpec& spec, std::span<const int64_t> domain, std::span<const int32_t> ends) {
  const int rank = int(domain.size());
  BlockPartition bp;
  const std::vector<int64_t> shape(domain.begin(), domain.end());
  bp.scale_shape = scale_shape(spec, shape, int64_t(ends.size()));
  bp.num_blocks = product(bp.scale_shape);
  const int64_t n = product(domain);
  if (n == 0) return bp;  // no element belongs to a block (the scales of empty groups are zero blocks)
  const std::vector<int64_t> sstride = row_major_strides(bp.scale_shape);
  // Per axis, the scale coordinate of each position along it (-1: in no group).
  std::vector<std::vector<int64_t>> coord(rank);
  for (int a = 0; a < rank; ++a) {
    coord[a].resize(size_t(domain[a]));
    const int64_t size = spec.size_along(a);
    if (spec.jagged() && spec.axes[0] == a) {
      std::fill(coord[a].begin(), coord[a].end(), -1);
      int64_t start = 0;
      for (size_t g = 0; g < ends.size(); ++g) {
        for (int64_t i = start; i < ends[g]; ++i) coord[a][size_t(i)] = int64_t(g);
        start = std::max<int64_t>(start, ends[g]);
      }
    } else {
      for (int64_t i = 0; i < domain[a]; ++i) coord[a][size_t(i)] = size == kWholeAxis ? 0 : i / size;
    }
  }

  bp.block_of.resize(size_t(n));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    int64_t b = 0;
    for (int a = 0; a < rank && b >= 0; ++a) {
      const int64_t c = coord[a][size_t(idx[a])];
      b = c < 0 ? -1 : b + c * sstride[a];
    }
    bp.block_of[size_t(lin)] = b;
    for (int a = rank - 1; a >= 0; --a) {  // next row-major index
      if (++idx[a] < domain[a]) break;
      idx[a] = 0;
    }
  }
  return bp;
}

}  // namespace mxjit::reference
