// The text form of layouts (dsl/layout.hpp): names, the general form, and the parser.
//
//     layout := head suffix*
//     head   := NAME | perm(INT,...) | grouped_blocked128x4(INT,NAME) | modes(mode,...)
//     mode   := axis ['/' INT] ['%' INT]          axis := INT | r | c | * | ~*
//     suffix := .align(axis,INT) | .pack(INT) | .groups(INT,NAME)
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>

#include "dsl/errors.hpp"
#include "dsl/layout.hpp"

namespace mxjit {

std::string Layout::definition() const {
  std::vector<std::string> m;
  for (const Mode& md : modes_) m.push_back(md.str());
  std::string s = fmt::format("modes({})", fmt::join(m, ","));
  for (const auto& [axis, a] : align_) s += fmt::format(".align({},{})", axis.str(), a);
  if (pack_ != 1) s += fmt::format(".pack({})", pack_);
  if (grouped()) s += fmt::format(".groups({},{})", group_axis_, group_offsets_);
  return s;
}

std::string Layout::str() const {
  Layout base = *this;
  base.group_offsets_.clear();
  base.group_axis_ = -1;
  std::string name;
  for (const auto& [n, l] : named_layouts())
    if (l == base) name = n;
  if (name.empty()) {
    // A permutation of fixed rank.
    bool perm = base.is_permutation();
    std::vector<int> order;
    for (const Mode& m : modes_) {
      perm = perm && m.axis.kind() == Axis::Kind::index && m.axis.value() >= 0;
      order.push_back(m.axis.value());
    }
    if (perm) name = fmt::format("perm({})", fmt::join(order, ","));
  }
  if (name.empty()) return definition();
  if (!grouped()) return name;
  if (name == "blocked128x4") return fmt::format("grouped_blocked128x4({},{})", group_axis_, group_offsets_);
  return fmt::format("{}.groups({},{})", name, group_axis_, group_offsets_);
}

namespace {

constexpr const char* kExpected =
    "expected row_major, col_major, expert_col_major, perm(a,b,...), linear, blocked128x4, blocked8x4, "
    "grouped_blocked128x4(axis,offsets), mn_major_tma, mn_major_tma_packed, gemm_ready_2d, gemm_ready_2d_t or "
    "modes(...) with .align(axis,m), .pack(p), .groups(axis,offsets)";

/// A cursor over the layout text (spaces skipped between items).
class Parser {
 public:
  explicit Parser(const std::string& text) : t_(text) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError(fmt::format("layout '{}': {}", t_, why));
  }
  void space() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  bool done() {
    space();
    return i_ >= t_.size();
  }
  bool eat(char c) {
    space();
    if (i_ < t_.size() && t_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c, const char* where) {
    if (!eat(c)) fail(fmt::format("expected '{}' {} at column {}", c, where, i_ + 1));
  }
  std::string word() {
    space();
    const size_t b = i_;
    while (i_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '_')) ++i_;
    return t_.substr(b, i_ - b);
  }
  /// An integer (optionally negative); `what` names it in the message.
  int64_t integer(const char* what) {
    space();
    const size_t b = i_;
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) ++i_;
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(t_.data() + b, t_.data() + i_, v);
    if (ec != std::errc() || p != t_.data() + i_) {
      size_t e = i_;
      while (e < t_.size() && t_[e] != ',' && t_[e] != ')') ++e;
      fail(fmt::format("'{}' is not {}", t_.substr(b, e - b), what));
    }
    return v;
  }
  Axis axis() {
    space();
    if (eat('*')) return Axis::rest();
    if (eat('~')) {
      expect('*', "after '~' (~* is the rest in reverse order)");
      return ~Axis::rest();
    }
    if (i_ < t_.size() && (t_[i_] == 'r' || t_[i_] == 'c') &&
        (i_ + 1 == t_.size() || !std::isalnum(static_cast<unsigned char>(t_[i_ + 1]))))
      return t_[i_++] == 'r' ? Axis::rows() : Axis::cols();
    return Axis::at(int(integer("an axis (an axis number, r, c, * or ~*)")));
  }
  Mode mode() {
    Mode m(axis());
    if (eat('/')) m = m / integer("a divisor");
    if (eat('%')) m = m % integer("an extent");
    return m;
  }

 private:
  const std::string& t_;
  size_t i_ = 0;
};

}  // namespace

Layout Layout::parse(const std::string& text) {
  Parser p(text);
  if (p.done()) throw UsageError(fmt::format("layout '': empty; {}", kExpected));
  const std::string head = p.word();
  Layout l;
  if (head == "modes") {
    p.expect('(', "after 'modes'");
    std::vector<Mode> m;
    do m.push_back(p.mode());
    while (p.eat(','));
    p.expect(')', "closing modes(...)");
    l = modes(std::move(m));
  } else if (head == "perm") {
    p.expect('(', "after 'perm'");
    std::vector<int> order;
    do order.push_back(int(p.integer("an axis number")));
    while (p.eat(','));
    p.expect(')', "closing perm(...)");
    l = permuted(order);
  } else if (head == "grouped_blocked128x4") {
    if (!p.eat('(')) p.fail("expected grouped_blocked128x4(axis,offsets), e.g. grouped_blocked128x4(0,offs)");
    const int a = int(p.integer("an axis number"));
    p.expect(',', "between the axis and the offsets name");
    const std::string name = p.word();
    p.expect(')', "closing grouped_blocked128x4(...)");
    l = grouped_blocked_128x4(name, a);
  } else if (head == "linear") {
    l = linear();
  } else {
    bool found = false;
    for (const auto& [n, def] : named_layouts())
      if (n == head) l = def, found = true;
    if (!found) throw UsageError(fmt::format("unknown layout '{}': {}", text, kExpected));
  }
  while (p.eat('.')) {
    const std::string s = p.word();
    p.expect('(', fmt::format("after '.{}'", s).c_str());
    if (s == "align") {
      const Axis a = p.axis();
      p.expect(',', "between the axis and the alignment");
      l = l.align(a, p.integer("an alignment"));
    } else if (s == "pack") {
      l = l.pack(int(p.integer("a packing")));
    } else if (s == "groups") {
      const int a = int(p.integer("an axis number"));
      p.expect(',', "between the axis and the offsets name");
      l = l.groups(p.word(), a);
    } else {
      p.fail(fmt::format("unknown '.{}': a layout takes .align(axis,m), .pack(p) and .groups(axis,offsets)", s));
    }
    p.expect(')', fmt::format("closing .{}(...)", s).c_str());
  }
  if (!p.done()) p.fail(fmt::format("unexpected text after the layout; {}", kExpected));
  return l;
}

}  // namespace mxjit
