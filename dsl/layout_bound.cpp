// Host queries of a bound layout (dsl/layout_bound.hpp): sizes, strides, the offset function over
// host integers and its inverse, the storage view, and the grouped combinator.
#include "dsl/layout_bound.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit {
namespace {

bool empty(std::span<const int64_t> shape) {
  return std::find(shape.begin(), shape.end(), int64_t(0)) != shape.end();
}

/// The group holding coordinate `i` (the first with end > i), or -1 past the last end.
int64_t group_of(std::span<const int64_t> ends, int64_t i) {
  auto it = std::upper_bound(ends.begin(), ends.end(), i);
  return it == ends.end() ? -1 : int64_t(it - ends.begin());
}

}  // namespace

std::vector<int64_t> BoundLayout::padded(std::span<const int64_t> shape) const {
  std::vector<int64_t> p(static_cast<size_t>(rank));
  // Past INT64_MAX (only an empty tensor's other extents may be that large) an axis stays unpadded.
  for (int a = 0; a < rank; ++a)
    p[size_t(a)] = checked_round_up(shape[size_t(a)], align[size_t(a)]).value_or(shape[size_t(a)]);
  return p;
}

std::vector<int64_t> BoundLayout::extents(std::span<const int64_t> shape) const {
  const std::vector<int64_t> p = padded(shape);
  std::vector<int64_t> e;
  for (const Mode& m : modes) e.push_back(m.ext > 0 ? m.ext : p[size_t(m.axis)] / m.div);
  return e;
}

std::vector<int64_t> BoundLayout::strides(std::span<const int64_t> shape) const {
  const std::vector<int64_t> e = extents(shape);
  std::vector<int64_t> s(e.size());
  // Past INT64_MAX (only for an empty tensor, which holds no element) strides are given as 0.
  std::optional<int64_t> acc = 1;
  for (size_t k = e.size(); k-- > 0;) {
    s[k] = acc.value_or(0);
    if (acc) acc = checked_mul(*acc, e[k]);
  }
  return s;
}

int64_t BoundLayout::size(std::span<const int64_t> shape) const {
  // Zero-aware and checked: a zero extent makes the storage empty whatever the other extents.
  if (empty(shape)) return 0;
  std::optional<int64_t> n = 1;
  for (int a = 0; a < rank && n; ++a) {
    const std::optional<int64_t> p = checked_round_up(shape[size_t(a)], align[size_t(a)]);
    n = p ? checked_mul(*n, *p) : std::nullopt;
    if (n && *n > kMaxElements) n.reset();
  }
  if (!n)
    throw UsageError(fmt::format("layout {}: the storage of extents [{}] holds more than {} elements, the limit of "
                                 "one tensor", text, fmt::join(shape, ","), limit_text(kMaxElements)));
  return *n;
}

int64_t BoundLayout::offset(std::span<const int64_t> index, std::span<const int64_t> shape) const {
  HostArith a;
  return lower_offset(a, *this, std::vector<int64_t>(index.begin(), index.end()),
                      std::vector<int64_t>(shape.begin(), shape.end()));
}

std::optional<std::vector<int64_t>> BoundLayout::index_at(int64_t off, std::span<const int64_t> shape) const {
  if (off < 0 || off >= size(shape)) return std::nullopt;
  const std::vector<int64_t> e = extents(shape), s = strides(shape);
  std::vector<int64_t> idx(size_t(rank), 0);
  for (size_t k = 0; k < modes.size(); ++k) idx[size_t(modes[k].axis)] += (off / s[k] % e[k]) * modes[k].div;
  for (int a = 0; a < rank; ++a)
    if (idx[size_t(a)] >= shape[size_t(a)]) return std::nullopt;
  return idx;
}

bool BoundLayout::pads() const {
  return std::any_of(align.begin(), align.end(), [](int64_t a) { return a > 1; });
}

bool BoundLayout::strided() const {
  const size_t n = modes.size() - (pack > 1 ? 1 : 0);
  std::vector<int> seen(size_t(rank), 0);
  for (size_t k = 0; k < n; ++k) ++seen[size_t(modes[k].axis)];
  return std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; });
}

std::vector<int> BoundLayout::order() const {
  std::vector<int> o;
  for (size_t k = 0; k + (pack > 1 ? 1 : 0) < modes.size(); ++k) o.push_back(modes[k].axis);
  return o;
}

std::vector<int64_t> BoundLayout::view_shape(std::span<const int64_t> shape) const {
  if (!strided()) return {size(shape) / pack};
  std::vector<int64_t> v = padded(shape);
  if (pack > 1) v[size_t(modes.back().axis)] /= pack;
  return v;
}

std::vector<int64_t> BoundLayout::view_strides(std::span<const int64_t> shape) const {
  if (!strided()) return {1};
  const std::vector<int64_t> s = strides(shape);
  std::vector<int64_t> v(size_t(rank), 1);
  for (size_t k = 0; k + (pack > 1 ? 1 : 0) < modes.size(); ++k) v[size_t(modes[k].axis)] = s[k] / pack;
  return v;
}

int64_t BoundLayout::group_size(std::span<const int64_t> shape, std::span<const int64_t> ends) const {
  std::vector<int64_t> sub(shape.begin(), shape.end());
  int64_t n = 0, prev = 0;
  for (int64_t e : ends) {
    sub[size_t(group_axis)] = e - prev;
    n += size(sub);  // each term and the sum stay within size_bound's limit
    prev = e;
  }
  return n;
}

int64_t BoundLayout::size_bound(std::span<const int64_t> shape, int64_t groups) const {
  std::vector<int64_t> big(shape.begin(), shape.end());
  const int64_t u = align[size_t(group_axis)];
  const std::optional<int64_t> r = checked_round_up(big[size_t(group_axis)], u), g = checked_mul(u, groups);
  const std::optional<int64_t> n = r && g ? checked_add(*r, *g) : std::nullopt;
  if (!n)
    throw UsageError(fmt::format("layout {}: {} groups along axis {} of extent {} pass INT64_MAX", text, groups,
                                 group_axis, big[size_t(group_axis)]));
  big[size_t(group_axis)] = *n;
  return size(big);
}

int64_t BoundLayout::offset(std::span<const int64_t> index, std::span<const int64_t> shape,
                            std::span<const int64_t> ends) const {
  if (group_axis < 0) return offset(index, shape);
  const int64_t g = group_of(ends, index[size_t(group_axis)]);
  if (g < 0) return -1;
  const int64_t start = g == 0 ? 0 : ends[size_t(g) - 1];
  std::vector<int64_t> sub(shape.begin(), shape.end()), local(index.begin(), index.end());
  sub[size_t(group_axis)] = ends[size_t(g)] - start;
  local[size_t(group_axis)] -= start;
  return group_size(shape, ends.first(size_t(g))) + offset(local, sub);
}

std::optional<std::vector<int64_t>> BoundLayout::index_at(int64_t off, std::span<const int64_t> shape,
                                                          std::span<const int64_t> ends) const {
  if (group_axis < 0) return index_at(off, shape);
  if (off < 0) return std::nullopt;
  std::vector<int64_t> sub(shape.begin(), shape.end());
  int64_t base = 0, prev = 0;
  for (int64_t e : ends) {
    sub[size_t(group_axis)] = e - prev;
    const int64_t n = size(sub);
    if (off < base + n) {
      auto idx = index_at(off - base, sub);
      if (idx) (*idx)[size_t(group_axis)] += prev;
      return idx;
    }
    base += n;
    prev = e;
  }
  return std::nullopt;
}

}  // namespace mxjit
