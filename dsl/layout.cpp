#include "dsl/layout.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit {

Layout Layout::row_major() { Layout l; l.named_ = 1; return l; }
Layout Layout::col_major() { Layout l; l.named_ = 2; return l; }
Layout Layout::expert_col_major() { Layout l; l.named_ = 3; return l; }

Layout Layout::permuted(std::vector<int> order) {
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != int(i))
      throw UsageError(fmt::format("layout::permuted({}): the order must be a permutation of 0..{}",
                                   fmt::join(order, ","), int(order.size()) - 1));
  Layout l;
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity &= order[i] == int(i);
  if (identity) { l.named_ = 1; return l; }  // canonical: one spelling per layout
  l.order_ = std::move(order);
  return l;
}

Layout Layout::blocked_128x4() { Layout l; l.kind_ = Kind::blocked; l.atom_rows_ = 128; l.atom_cols_ = 4; return l; }
Layout Layout::blocked_8x4() { Layout l; l.kind_ = Kind::blocked; l.atom_rows_ = 8; l.atom_cols_ = 4; return l; }

Layout Layout::grouped_blocked_128x4(std::string offsets_name, int group_axis) {
  if (offsets_name.empty())
    throw UsageError("layout::grouped_blocked_128x4: the offsets name must not be empty");
  for (char c : offsets_name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      throw UsageError(fmt::format("layout::grouped_blocked_128x4: offsets name '{}' uses letters, digits and '_' "
                                   "only", offsets_name));
  if (group_axis < 0)
    throw UsageError(fmt::format("layout::grouped_blocked_128x4(offsets '{}'): group axis {} is negative",
                                 offsets_name, group_axis));
  Layout l = blocked_128x4();
  l.group_offsets_ = std::move(offsets_name);
  l.group_axis_ = group_axis;
  return l;
}

Layout layout::grouped_blocked_128x4(const Offsets& ends, int group_axis) {
  return Layout::grouped_blocked_128x4(ends.name, group_axis);
}

std::vector<int> Layout::order(int rank) const {
  std::vector<int> o(rank);
  switch (named_) {
    case 1: for (int i = 0; i < rank; ++i) o[i] = i; return o;
    case 2: for (int i = 0; i < rank; ++i) o[i] = rank - 1 - i; return o;
    case 3:
      if (rank < 2) {  // no expert axis to keep outermost: the identity order
        for (int i = 0; i < rank; ++i) o[i] = i;
        return o;
      }
      o[0] = 0;
      for (int i = 1; i < rank; ++i) o[i] = rank - i;
      return o;
    default: return order_;
  }
}

std::string Layout::check_rank(int rank) const {
  if (is_grouped()) {
    if (rank != 2) return fmt::format("{} needs a rank-2 scale tensor, got rank {}", str(), rank);
    if (group_axis_ >= rank) return fmt::format("{}: group axis {} is out of range for rank {}", str(), group_axis_, rank);
    return "";
  }
  if (kind_ == Kind::blocked) return rank >= 2 ? "" : fmt::format("{} needs a rank >= 2 tensor, got rank {}", str(), rank);
  if (named_ == 3 && rank < 2) return fmt::format("expert_col_major needs rank >= 2, got rank {}", rank);
  if (named_ == 0 && int(order_.size()) != rank)
    return fmt::format("layout {} has rank {} but the value has rank {}", str(), order_.size(), rank);
  return "";
}

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// One atom grid: rows and columns of a (padded) matrix laid out as atoms.
struct Atoms {
  int64_t ar, ac;  // atom rows and columns
  int64_t lines() const { return ar >= 32 ? 32 : ar; }  // 16-byte lines per 128x4 atom; 8 for 8x4
  /// Offset of (r, c) in a matrix whose padded column count is `cp`.
  int64_t offset(int64_t r, int64_t c, int64_t cp) const {
    const int64_t l = lines();
    const int64_t in_atom = (r % l) * (ac * (ar / l)) + ((r % ar) / l) * ac + c % ac;
    return ((r / ar) * (cp / ac) + c / ac) * (ar * ac) + in_atom;
  }
  /// The inverse of offset(): (r, c) stored at `off` (every off < rp*cp is some padded (r, c)).
  std::pair<int64_t, int64_t> index(int64_t off, int64_t cp) const {
    const int64_t l = lines(), atom = ar * ac, k = off % atom, a = off / atom;
    const int64_t line_bytes = ac * (ar / l);
    const int64_t r_in = ((k % line_bytes) / ac) * l + k / line_bytes;
    return {(a / (cp / ac)) * ar + r_in, (a % (cp / ac)) * ac + k % ac};
  }
};

/// Padded starts of groups with scale-unit `ends`, each group's extent rounded up to `unit`.
std::vector<int64_t> padded_starts(std::span<const int64_t> ends, int64_t unit) {
  std::vector<int64_t> p(ends.size() + 1, 0);
  int64_t prev = 0;
  for (size_t g = 0; g < ends.size(); ++g) {
    p[g + 1] = p[g] + round_up(ends[g] - prev, unit);
    prev = ends[g];
  }
  return p;
}

/// The group holding scale coordinate `i` (the first with end > i), or -1 past the last end.
int64_t group_of(std::span<const int64_t> ends, int64_t i) {
  auto it = std::upper_bound(ends.begin(), ends.end(), i);
  return it == ends.end() ? -1 : int64_t(it - ends.begin());
}

}  // namespace

int64_t Layout::storage_size(std::span<const int64_t> shape, int row_axis, int col_axis, int64_t groups) const {
  // Zero-aware and checked: a zero factor makes the storage empty whatever the other extents.
  bool zero = false, over = false;
  int64_t n = 1;
  const auto take = [&](std::optional<int64_t> f) {
    if (f && *f == 0) zero = true;
    if (!f) over = true;
    if (zero || over) return;
    const std::optional<int64_t> p = checked_mul(n, *f);
    if (!p || *p > kMaxElements) over = true;
    else n = *p;
  };
  const auto padded = [&](int64_t extent, int64_t atom, bool grouped) -> std::optional<int64_t> {
    const std::optional<int64_t> r = checked_round_up(extent, atom);
    const std::optional<int64_t> g = checked_mul(atom, grouped ? groups : 0);
    return r && g ? checked_add(*r, *g) : std::nullopt;
  };
  for (int a = 0; a < int(shape.size()); ++a) {
    const bool grouped = is_grouped() && a == group_axis_;
    if (kind_ == Kind::blocked && a == row_axis) take(padded(shape[a], atom_rows_, grouped));
    else if (kind_ == Kind::blocked && a == col_axis) take(padded(shape[a], atom_cols_, grouped));
    else take(shape[a]);
  }
  if (zero) return 0;
  if (over)
    throw UsageError(fmt::format("layout {}: the storage of extents [{}] holds more than {} elements, the limit of "
                                 "one tensor", str(), fmt::join(shape, ","), limit_text(kMaxElements)));
  return n;
}

std::vector<int64_t> Layout::strides(std::span<const int64_t> shape) const {
  int rank = int(shape.size());
  std::vector<int64_t> s(rank, 1);
  std::vector<int> o = order(rank);
  // Past INT64_MAX (only for an empty tensor, which holds no element) strides are given as 0.
  std::optional<int64_t> acc = 1;
  for (int i = rank - 1; i >= 0; --i) {
    s[o[i]] = acc.value_or(0);
    if (acc) acc = checked_mul(*acc, shape[o[i]]);
  }
  return s;
}

static void check_group_axis(const Layout& l, int row_axis, int col_axis) {
  if (l.group_axis() != row_axis && l.group_axis() != col_axis)
    throw UsageError(fmt::format("layout {}: the group axis {} is neither the scale rows axis {} nor the scale "
                                 "columns axis {}", l.str(), l.group_axis(), row_axis, col_axis));
}

int64_t Layout::offset(std::span<const int64_t> index, std::span<const int64_t> shape, int row_axis,
                       int col_axis, std::span<const int64_t> group_ends) const {
  if (kind_ == Kind::permuted) {
    std::vector<int64_t> s = strides(shape);
    int64_t off = 0;
    for (size_t a = 0; a < index.size(); ++a) off += index[a] * s[a];
    return off;
  }
  const Atoms at{atom_rows_, atom_cols_};
  const int64_t r = index[row_axis], c = index[col_axis];
  const int64_t rp = round_up(shape[row_axis], atom_rows_), cp = round_up(shape[col_axis], atom_cols_);
  if (is_grouped()) {
    check_group_axis(*this, row_axis, col_axis);
    const bool by_rows = group_axis_ == row_axis;
    const int64_t i = by_rows ? r : c;
    const int64_t g = group_of(group_ends, i);
    if (g < 0) return -1;
    const std::vector<int64_t> p = padded_starts(group_ends.first(size_t(g) + 1), by_rows ? atom_rows_ : atom_cols_);
    const int64_t start = g == 0 ? 0 : group_ends[size_t(g) - 1];
    if (by_rows) return at.offset(p[size_t(g)] + (r - start), c, cp);
    const int64_t cg = p[size_t(g) + 1] - p[size_t(g)];
    return p[size_t(g)] * rp + at.offset(r, c - start, cg);
  }
  // Batch index over all other axes, row-major.
  int64_t b = 0;
  for (int a = 0; a < int(shape.size()); ++a)
    if (a != row_axis && a != col_axis) b = b * shape[a] + index[a];
  return b * rp * cp + at.offset(r, c, cp);
}

std::optional<std::vector<int64_t>> Layout::index_at(int64_t off, std::span<const int64_t> shape, int row_axis,
                                                     int col_axis, std::span<const int64_t> group_ends) const {
  const int rank = int(shape.size());
  if (off < 0) return std::nullopt;
  std::vector<int64_t> idx(size_t(rank), 0);
  if (kind_ == Kind::permuted) {
    if (off >= storage_size(shape)) return std::nullopt;
    const std::vector<int64_t> s = strides(shape);
    const std::vector<int> o = order(rank);
    for (int i = 0; i < rank; ++i) {  // outermost first: strides decrease along o
      idx[size_t(o[i])] = s[size_t(o[i])] > 0 ? off / s[size_t(o[i])] : 0;
      off -= idx[size_t(o[i])] * s[size_t(o[i])];
    }
    return idx;
  }
  const Atoms at{atom_rows_, atom_cols_};
  const int64_t rows = shape[row_axis], cols = shape[col_axis];
  const int64_t rp = round_up(rows, atom_rows_), cp = round_up(cols, atom_cols_);
  if (is_grouped()) {
    check_group_axis(*this, row_axis, col_axis);
    const bool by_rows = group_axis_ == row_axis;
    const std::vector<int64_t> p = padded_starts(group_ends, by_rows ? atom_rows_ : atom_cols_);
    // The padded row (rows groups) or padded column (columns groups) the position falls in; the
    // group whose padded range holds it (empty groups have empty ranges).
    int64_t r = 0, c = 0, g = -1, key = 0;
    if (by_rows) {
      if (cp == 0) return std::nullopt;
      std::tie(r, c) = at.index(off, cp);
      key = r;
    } else {
      if (rp == 0) return std::nullopt;
      key = off / rp;
    }
    for (size_t h = 0; h < group_ends.size(); ++h)
      if (p[h] <= key && key < p[h + 1]) g = int64_t(h);
    if (g < 0) return std::nullopt;
    const int64_t start = g == 0 ? 0 : group_ends[size_t(g) - 1], n = group_ends[size_t(g)] - start;
    if (by_rows) {
      r = r - p[size_t(g)];
      if (r >= n || c >= cols) return std::nullopt;
      r += start;
    } else {
      std::tie(r, c) = at.index(off - p[size_t(g)] * rp, p[size_t(g) + 1] - p[size_t(g)]);
      if (r >= rows || c >= n) return std::nullopt;
      c += start;
    }
    idx[size_t(row_axis)] = r;
    idx[size_t(col_axis)] = c;
    return idx;
  }
  const int64_t slice = rp * cp;
  if (slice == 0 || off >= storage_size(shape, row_axis, col_axis)) return std::nullopt;
  auto [r, c] = at.index(off % slice, cp);
  if (r >= rows || c >= cols) return std::nullopt;
  int64_t b = off / slice;
  for (int a = rank - 1; a >= 0; --a) {
    if (a == row_axis || a == col_axis) continue;
    idx[size_t(a)] = b % shape[size_t(a)];
    b /= shape[size_t(a)];
  }
  idx[size_t(row_axis)] = r;
  idx[size_t(col_axis)] = c;
  return idx;
}

std::string Layout::str() const {
  if (is_grouped()) return fmt::format("grouped_blocked{}x{}({},{})", atom_rows_, atom_cols_, group_axis_, group_offsets_);
  if (kind_ == Kind::blocked) return fmt::format("blocked{}x{}", atom_rows_, atom_cols_);
  switch (named_) {
    case 1: return "row_major";
    case 2: return "col_major";
    case 3: return "expert_col_major";
    default: return fmt::format("perm({})", fmt::join(order_, ","));
  }
}

Layout Layout::parse(const std::string& text) {
  if (text == "row_major" || text == "linear") return row_major();
  if (text == "col_major") return col_major();
  if (text == "expert_col_major") return expert_col_major();
  if (text == "blocked128x4") return blocked_128x4();
  if (text == "blocked8x4") return blocked_8x4();
  if (text.starts_with("grouped_blocked128x4")) {
    const std::string rest = text.substr(20);
    const size_t comma = rest.find(',');
    if (!rest.starts_with("(") || !rest.ends_with(")") || comma == std::string::npos)
      throw UsageError(fmt::format("layout '{}': expected grouped_blocked128x4(axis,offsets), e.g. "
                                   "grouped_blocked128x4(0,offs)", text));
    const std::string axis = rest.substr(1, comma - 1), name = rest.substr(comma + 1, rest.size() - comma - 2);
    int a = -1;
    try {
      size_t used = 0;
      a = std::stoi(axis, &used);
      if (used != axis.size()) throw std::invalid_argument(axis);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("layout '{}': '{}' is not an axis number", text, axis));
    }
    return grouped_blocked_128x4(name, a);
  }
  if (text.starts_with("perm(") && text.ends_with(")")) {
    std::vector<int> order;
    std::string body = text.substr(5, text.size() - 6);
    size_t pos = 0;
    while (pos <= body.size()) {
      size_t comma = body.find(',', pos);
      std::string item = body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      try {
        size_t used = 0;
        order.push_back(std::stoi(item, &used));
        if (used != item.size()) throw std::invalid_argument(item);
      } catch (const std::exception&) {
        throw UsageError(fmt::format("layout '{}': '{}' is not an axis number", text, item));
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    return permuted(order);
  }
  throw UsageError(fmt::format(
      "unknown layout '{}': expected row_major, col_major, expert_col_major, perm(a,b,...), linear, "
      "blocked128x4, blocked8x4 or grouped_blocked128x4(axis,offsets)",
      text));
}

}  // namespace mxjit
