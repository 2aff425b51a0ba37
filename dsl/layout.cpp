// The layout algebra's values: axes, modes, the combinators and binding to a value
// (dsl/layout.hpp). The named definitions are in layouts.cpp, the text form in layout_text.cpp.
#include "dsl/layout.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"

namespace mxjit {

std::string Axis::str() const {
  switch (kind_) {
    case Kind::index: return std::to_string(value_);
    case Kind::rows: return "r";
    case Kind::cols: return "c";
    case Kind::rest: return reversed_ ? "~*" : "*";
  }
  return "?";
}

std::string Mode::str() const {
  std::string s = axis.str();
  if (div != 1) s += fmt::format("/{}", div);
  if (ext != 0) s += fmt::format("%{}", ext);
  return s;
}

Mode operator/(const Mode& m, int64_t div) {
  if (m.axis.kind() == Axis::Kind::rest) throw UsageError(fmt::format("layout mode {}/{}: `rest` is not split", m.str(), div));
  if (div < 1) throw UsageError(fmt::format("layout mode {}/{}: the divisor must be >= 1", m.str(), div));
  if (m.ext != 0)
    throw UsageError(fmt::format("layout mode ({})/{}: split the axis itself (e.g. r/32%4), not a mode with an extent",
                                 m.str(), div));
  return Mode(m.axis, m.div * div, 0);
}

Mode operator%(const Mode& m, int64_t ext) {
  if (m.axis.kind() == Axis::Kind::rest) throw UsageError(fmt::format("layout mode {}%{}: `rest` is not split", m.str(), ext));
  if (ext < 1) throw UsageError(fmt::format("layout mode {}%{}: the extent must be >= 1", m.str(), ext));
  if (m.ext != 0) throw UsageError(fmt::format("layout mode {}%{}: the mode already has extent {}", m.str(), ext, m.ext));
  return Mode(m.axis, m.div, ext);
}

namespace {

/// Checks that the modes of one axis chain up: divisors 1, e0, e0*e1, ..., the last whole.
/// Returns the product of the constant extents (the alignment the splits need).
int64_t check_chain(const std::string& text, const std::string& axis, std::vector<std::pair<int64_t, int64_t>> dm) {
  std::sort(dm.begin(), dm.end());
  for (size_t i = 1; i < dm.size(); ++i)
    if (dm[i].first == dm[i - 1].first) throw UsageError(fmt::format("layout {}: axis {} is placed twice", text, axis));
  int64_t expect = 1;
  for (size_t i = 0; i < dm.size(); ++i) {
    const auto [div, ext] = dm[i];
    if (div != expect) {
      throw UsageError(fmt::format("layout {}: the modes of axis {} skip {}/{}: its splits must chain "
                                   "(divisors 1, e0, e0*e1, ...; e.g. r%32, r/32%4, r/128)",
                                   text, axis, axis, expect));
    }
    const bool last = i + 1 == dm.size();
    if (last && ext != 0)
      throw UsageError(fmt::format("layout {}: axis {} has no whole outer mode ({}/{}); the last split of an axis "
                                   "covers the rest of it", text, axis, axis, div * ext));
    if (!last && ext == 0)
      throw UsageError(fmt::format("layout {}: axis {} has a whole mode ({}/{}) below others; only its outermost "
                                   "split is whole", text, axis, axis, div));
    expect = last ? expect : div * ext;
  }
  return expect;
}

int64_t lcm64(int64_t a, int64_t b) { return std::lcm(a, b); }

}  // namespace

Layout Layout::modes(std::vector<Mode> modes) {
  Layout l;
  l.modes_ = std::move(modes);
  const std::string text = l.definition();
  if (l.modes_.empty()) throw UsageError("layout modes(): a layout needs at least one mode");
  int rests = 0;
  std::map<Axis, std::vector<std::pair<int64_t, int64_t>>> chains;
  for (const Mode& m : l.modes_) {
    if (m.axis.kind() == Axis::Kind::rest) ++rests;
    else chains[m.axis].emplace_back(m.div, m.ext);
  }
  if (rests > 1) throw UsageError(fmt::format("layout {}: `rest` (*) appears {} times; at most once", text, rests));
  for (const auto& [axis, dm] : chains) check_chain(text, axis.str(), dm);
  return l;
}

Layout Layout::align(Axis axis, int64_t m) const {
  if (m < 1) throw UsageError(fmt::format("layout {}.align({},{}): the alignment must be >= 1", definition(), axis.str(), m));
  if (axis.kind() == Axis::Kind::rest) throw UsageError(fmt::format("layout {}.align(*,{}): align a named axis", definition(), m));
  int64_t own = 0;  // the splits' alignment: the product of the axis' constant extents
  for (const Mode& md : modes_)
    if (md.axis == axis) own = std::max<int64_t>(own, 1) * (md.ext ? md.ext : 1);
  if (own == 0)
    throw UsageError(fmt::format("layout {}.align({},{}): the layout does not place axis {}", definition(), axis.str(), m, axis.str()));
  Layout l = *this;
  int64_t a = lcm64(own, m);
  for (auto it = l.align_.begin(); it != l.align_.end(); ++it)
    if (it->first == axis) {
      a = lcm64(a, it->second);
      l.align_.erase(it);
      break;
    }
  if (a != own) {  // one spelling per layout: only alignments beyond the splits' own
    l.align_.emplace_back(axis, a);
    std::sort(l.align_.begin(), l.align_.end());
  }
  return l;
}

Layout Layout::pack(int p) const {
  if (p < 1) throw UsageError(fmt::format("layout {}.pack({}): the packing must be >= 1", definition(), p));
  if (pack_ != 1) throw UsageError(fmt::format("layout {}.pack({}): the layout is packed already", definition(), p));
  if (p > 1 && modes_.back().ext != p)
    throw UsageError(fmt::format("layout {}.pack({}): the innermost mode {} must have extent {} (the values one word "
                                 "holds)", definition(), p, modes_.back().str(), p));
  Layout l = *this;
  l.pack_ = p;
  return l;
}

Layout Layout::groups(std::string offsets_name, int group_axis) const {
  const std::string what = fmt::format("layout {}.groups({},{})", definition(), group_axis, offsets_name);
  if (offsets_name.empty()) throw UsageError(what + ": the offsets name must not be empty");
  for (char c : offsets_name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      throw UsageError(fmt::format("{}: offsets name '{}' uses letters, digits and '_' only", what, offsets_name));
  if (group_axis < 0) throw UsageError(fmt::format("{}: group axis {} is negative", what, group_axis));
  if (grouped()) throw UsageError(what + ": the layout has groups already");
  Layout l = *this;
  l.group_offsets_ = std::move(offsets_name);
  l.group_axis_ = group_axis;
  return l;
}

bool Layout::uses_roles() const {
  for (const Mode& m : modes_)
    if (m.axis.kind() == Axis::Kind::rows || m.axis.kind() == Axis::Kind::cols) return true;
  return false;
}

bool Layout::is_permutation() const {
  if (!align_.empty() || pack_ != 1 || grouped() || uses_roles()) return false;
  for (const Mode& m : modes_)
    if (m.div != 1 || m.ext != 0) return false;
  return true;
}

BoundLayout Layout::bind(int rank, int rows, int cols) const {
  BoundLayout b;
  b.rank = rank;
  b.text = str();
  b.pack = pack_;
  const std::string& text = b.text;
  // Resolve the named axes; `rest` expands to those left.
  auto resolve = [&](const Axis& a) -> int {
    switch (a.kind()) {
      case Axis::Kind::index: {
        const int r = a.value() < 0 ? a.value() + rank : a.value();
        if (r < 0 || r >= rank)
          throw UsageError(fmt::format("layout {} places axis {}, but the value has rank {}", text, a.value(), rank));
        return r;
      }
      case Axis::Kind::rows:
      case Axis::Kind::cols: {
        if (cols < 0)
          throw UsageError(fmt::format("{} is a scale layout (it places the scale rows r and columns c), which only "
                                       "scales of 1-D blocks take", text));
        if (rows < 0) throw UsageError(fmt::format("{} needs a rank >= 2 tensor, got rank {}", text, rank));
        return a.kind() == Axis::Kind::rows ? rows : cols;
      }
      case Axis::Kind::rest: break;
    }
    return -1;
  };
  bool has_rest = false;
  std::vector<Axis> named;
  for (const Mode& m : modes_) {
    if (m.axis.kind() == Axis::Kind::rest) has_rest = true;
    else if (std::find(named.begin(), named.end(), m.axis) == named.end()) named.push_back(m.axis);
  }
  if (!has_rest && int(named.size()) != rank && !uses_roles())
    throw UsageError(fmt::format("layout {} has rank {} but the value has rank {}", text, named.size(), rank));
  std::vector<bool> placed(size_t(rank), false);
  for (const Axis& a : named) placed[size_t(resolve(a))] = true;
  for (const Mode& m : modes_) {
    if (m.axis.kind() != Axis::Kind::rest) {
      b.modes.push_back({resolve(m.axis), m.div, m.ext});
      continue;
    }
    std::vector<int> left;
    for (int a = 0; a < rank; ++a)
      if (!placed[size_t(a)]) left.push_back(a);
    if (m.axis.reversed()) std::reverse(left.begin(), left.end());
    for (int a : left) b.modes.push_back({a, 1, 0});
  }
  // Every axis placed once, in a chain; its alignment.
  b.align.assign(size_t(rank), 1);
  for (int a = 0; a < rank; ++a) {
    std::vector<std::pair<int64_t, int64_t>> dm;
    for (const BoundLayout::Mode& m : b.modes)
      if (m.axis == a) dm.emplace_back(m.div, m.ext);
    if (dm.empty()) throw UsageError(fmt::format("layout {} does not place axis {} of the rank-{} value", text, a, rank));
    b.align[size_t(a)] = check_chain(text, std::to_string(a), dm);
  }
  for (const auto& [axis, m] : align_) {
    const int a = resolve(axis);
    b.align[size_t(a)] = lcm64(b.align[size_t(a)], m);
  }
  if (grouped()) {
    if (rank != 2) throw UsageError(fmt::format("{} needs a rank-2 scale tensor, got rank {}", text, rank));
    if (group_axis_ >= rank)
      throw UsageError(fmt::format("{}: group axis {} is out of range for rank {}", text, group_axis_, rank));
    b.group_axis = group_axis_;
  }
  return b;
}

std::vector<int> Layout::order(int rank) const { return rank == 0 ? std::vector<int>{} : bind(rank).order(); }

}  // namespace mxjit
