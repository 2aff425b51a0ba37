#include "dsl/layout.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"

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
  if (kind_ == Kind::blocked) return rank >= 2 ? "" : fmt::format("{} needs a rank >= 2 tensor, got rank {}", str(), rank);
  if (named_ == 3 && rank < 2) return fmt::format("expert_col_major needs rank >= 2, got rank {}", rank);
  if (named_ == 0 && int(order_.size()) != rank)
    return fmt::format("layout {} has rank {} but the value has rank {}", str(), order_.size(), rank);
  return "";
}

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int64_t Layout::storage_size(std::span<const int64_t> shape, int row_axis, int col_axis) const {
  int64_t n = 1;
  if (kind_ == Kind::permuted) {
    for (int64_t e : shape) n *= e;
    return n;
  }
  for (int a = 0; a < int(shape.size()); ++a) {
    if (a == row_axis) n *= round_up(shape[a], atom_rows_);
    else if (a == col_axis) n *= round_up(shape[a], atom_cols_);
    else n *= shape[a];
  }
  return n;
}

std::vector<int64_t> Layout::strides(std::span<const int64_t> shape) const {
  int rank = int(shape.size());
  std::vector<int64_t> s(rank, 1);
  std::vector<int> o = order(rank);
  int64_t acc = 1;
  for (int i = rank - 1; i >= 0; --i) {
    s[o[i]] = acc;
    acc *= shape[o[i]];
  }
  return s;
}

int64_t Layout::offset(std::span<const int64_t> index, std::span<const int64_t> shape, int row_axis,
                       int col_axis) const {
  if (kind_ == Kind::permuted) {
    std::vector<int64_t> s = strides(shape);
    int64_t off = 0;
    for (size_t a = 0; a < index.size(); ++a) off += index[a] * s[a];
    return off;
  }
  const int64_t r = index[row_axis], c = index[col_axis];
  const int64_t rp = round_up(shape[row_axis], atom_rows_), cp = round_up(shape[col_axis], atom_cols_);
  // Batch index over all other axes, row-major.
  int64_t b = 0;
  for (int a = 0; a < int(shape.size()); ++a)
    if (a != row_axis && a != col_axis) b = b * shape[a] + index[a];
  const int64_t atom = atom_rows_ * atom_cols_;
  const int64_t lines = atom_rows_ >= 32 ? 32 : atom_rows_;  // 16-byte lines per atom
  int64_t in_atom = (r % lines) * (atom_cols_ * (atom_rows_ / lines)) + ((r % atom_rows_) / lines) * atom_cols_ +
                    c % atom_cols_;
  return b * rp * cp + ((r / atom_rows_) * (cp / atom_cols_) + c / atom_cols_) * atom + in_atom;
}

std::string Layout::str() const {
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
      "blocked128x4 or blocked8x4",
      text));
}

}  // namespace mxjit
