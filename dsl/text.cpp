#include "dsl/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"
#include "dsl/text_scale.hpp"

namespace mxjit {
namespace {

using text_detail::Arg;
using text_detail::fail_at;

constexpr size_t kNowhere = std::string_view::npos;

/// One whitespace-separated token; `at` is its byte offset in the source.
struct Token {
  std::string_view text;
  size_t at = 0;
};

/// A token split as `head(args)`; `has_parens` is false for plain words.
struct Call {
  std::string_view head;
  std::vector<Arg> args;
  bool has_parens = false;
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

/// Splits the source into tokens: runs of non-space characters (spaces allowed inside
/// parentheses), with `;` and `->` always tokens of their own.
std::vector<Token> lex(std::string_view src) {
  std::vector<Token> out;
  size_t i = 0;
  const size_t n = src.size();
  auto arrow_at = [&](size_t k) { return k + 1 < n && src[k] == '-' && src[k + 1] == '>'; };
  while (i < n) {
    if (is_space(src[i])) { ++i; continue; }
    if (src[i] == ';') { out.push_back({src.substr(i, 1), i}); ++i; continue; }
    if (arrow_at(i)) { out.push_back({src.substr(i, 2), i}); i += 2; continue; }
    const size_t start = i;
    int depth = 0;
    size_t open_at = 0;
    for (; i < n; ++i) {
      const char c = src[i];
      if (depth == 0 && (is_space(c) || c == ';' || arrow_at(i))) break;
      if (c == '(') {
        if (depth++ == 0) open_at = i;
      } else if (c == ')') {
        if (depth == 0) fail_at(src, i, "unbalanced ')': no '(' opens it");
        --depth;
      }
    }
    if (depth > 0) fail_at(src, open_at, "unbalanced '(': no ')' closes it");
    out.push_back({src.substr(start, i - start), start});
  }
  return out;
}

/// Splits `head(a, b, ...)` at top-level commas. Text after the closing ')' is an error.
Call split_call(std::string_view src, const Token& t) {
  Call c;
  const size_t open = t.text.find('(');
  if (open == kNowhere) {
    c.head = t.text;
    return c;
  }
  c.head = t.text.substr(0, open);
  c.has_parens = true;
  int depth = 0;
  size_t item = open + 1, close = kNowhere;
  auto push = [&](size_t b, size_t e) {
    while (b < e && is_space(t.text[b])) ++b;
    while (e > b && is_space(t.text[e - 1])) --e;
    c.args.push_back({t.text.substr(b, e - b), t.at + b});
  };
  for (size_t i = open; i < t.text.size(); ++i) {
    const char ch = t.text[i];
    if (ch == '(') {
      ++depth;
    } else if (ch == ')') {
      if (--depth == 0) { close = i; break; }
    } else if (ch == ',' && depth == 1) {
      push(item, i);
      item = i + 1;
    }
  }
  push(item, close);  // the lexer guarantees the parenthesis closes
  if (close + 1 != t.text.size())
    fail_at(src, t.at + close + 1,
            fmt::format("unexpected '{}' after the ')' of '{}(...)'", t.text.substr(close + 1), c.head));
  if (c.args.size() == 1 && c.args[0].text.empty()) c.args.clear();  // "f()" has no arguments
  return c;
}

/// Parses an unsigned decimal integer no larger than `max`; `what` names it in messages.
uint64_t parse_number(std::string_view src, const Arg& a, const char* what,
                      uint64_t max = std::numeric_limits<uint64_t>::max()) {
  if (a.text.empty()) fail_at(src, a.at, fmt::format("expected {} (an unsigned decimal integer)", what));
  uint64_t v = 0;
  const char* end = a.text.data() + a.text.size();
  auto [ptr, ec] = std::from_chars(a.text.data(), end, v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == end && v > max))
    fail_at(src, a.at, fmt::format("{} {} is too large (at most {})", what, a.text, max));
  if (ec != std::errc() || ptr != end)
    fail_at(src, a.at, fmt::format("{} must be an unsigned decimal integer, got '{}'", what, a.text));
  return v;
}

int parse_axis(std::string_view src, const Arg& a, const char* what) {
  return int(parse_number(src, a, what, uint64_t(std::numeric_limits<int>::max())));
}

int64_t parse_size(std::string_view src, const Arg& a, const char* what) {
  if (a.text == "whole") return kWholeAxis;
  return int64_t(parse_number(src, a, what, uint64_t(std::numeric_limits<int64_t>::max())));
}

/// How a recipe's scale is computed.
enum class Family : uint8_t { mx, nvfp4, fp32 };

/// A named recipe of the text form.
struct Recipe {
  std::string_view name;
  Family family;
  ElemFormat elem;
};

constexpr Recipe kRecipes[] = {
    {"mxfp8.e4m3", Family::mx, e4m3},  {"mxfp8.e5m2", Family::mx, e5m2},  {"mxfp6.e2m3", Family::mx, e2m3},
    {"mxfp6.e3m2", Family::mx, e3m2},  {"mxfp4.e2m1", Family::mx, e2m1},  {"mxint8", Family::mx, int8},
    {"nvfp4", Family::nvfp4, e2m1},    {"fp8.e4m3", Family::fp32, e4m3},  {"fp8.e5m2", Family::fp32, e5m2},
};
constexpr std::string_view kRecipeList =
    "mxfp8.e4m3, mxfp8.e5m2, mxfp6.e2m3, mxfp6.e3m2, mxfp4.e2m1, mxint8, nvfp4, fp8.e4m3, fp8.e5m2";

/// A keyword option (a bare word) and the category it belongs to.
struct Keyword {
  std::string_view word;
  std::string_view category;  ///< "rule", "NaN policy", "NVFP4 convention", "option"
  std::string_view expected;  ///< the category's words, for messages
};

constexpr std::string_view kRules = "floor, rceil, ceil, even";
constexpr std::string_view kPolicies = "nan_block, satfinite";
constexpr std::string_view kConventions = "te, torchao";

constexpr Keyword kKeywords[] = {
    {"floor", "rule", kRules},
    {"rceil", "rule", kRules},
    {"ceil", "rule", kRules},
    {"even", "rule", kRules},
    {"nan_block", "NaN policy", kPolicies},
    {"satfinite", "NaN policy", kPolicies},
    {"te", "NVFP4 convention", kConventions},
    {"torchao", "NVFP4 convention", kConventions},
    {"flush", "option", "flush"},
    {"blocks", "option", "blocks(axis,size)"},
    {"groups", "option", "groups(axis,offsets)"},
    {"sr", "option", "sr(seed,offset)"},
    {"amax", "option", "amax (the last token)"},
    {"scale", "option", "scale(stored=...)"},
    {"nosat", "option", "nosat"},
};

constexpr std::string_view kOptionList =
    "a rule (floor, rceil, ceil, even), a NaN policy (nan_block, satfinite), an NVFP4 convention (te, torchao), "
    "blocks(axis,size|whole), blocks(a0,a1,s0xs1), groups(axis,offsets), scale(stored=...), sr(seed,offset), flush, "
    "nosat, q:<layout>, s:<layout>, ';' or a final amax";

/// Optimal-string-alignment edit distance (a transposition counts 1).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

/// The keyword a misspelt word most likely meant, or nullptr.
const Keyword* nearest_keyword(std::string_view word) {
  const Keyword* best = nullptr;
  size_t best_d = 0;
  for (const Keyword& k : kKeywords) {
    const size_t d = edit_distance(word, k.word);
    if (!best || d < best_d) { best = &k; best_d = d; }
  }
  const size_t len = std::min(word.size(), best->word.size());
  return (best_d <= 1 && len >= 3) || (best_d == 2 && len >= 5) ? best : nullptr;
}

/// A cast option that may be given at most once; `at` is where (kNowhere when defaulted).
template <class T>
struct Opt {
  T value{};
  size_t at = kNowhere;
  std::string_view text;  ///< the token that gave it, for duplicate messages
  bool given() const { return at != kNowhere; }
};

/// The block option of a cast.
struct BlockArgs {
  enum Kind : uint8_t { one_d, two_d, groups } kind = one_d;
  std::array<int, 2> axes{};
  std::array<int64_t, 2> sizes{};
  std::string offsets;
};

/// One parsed cast, with where each part came from.
struct CastSpec {
  const Recipe* recipe = nullptr;
  size_t recipe_at = 0;
  Opt<ScaleRule> rule;
  Opt<NanPolicy> policy;
  Opt<Nvfp4Convention> convention;
  Opt<BlockArgs> block;
  Opt<std::array<uint64_t, 2>> sr;
  Opt<bool> flush;
  Opt<bool> nosat;
  Opt<ScaleDef> def;  ///< scale(...): the recipe gives only the element format
  Opt<Layout> q, s;
};

std::string output_name(char prefix, size_t k) {
  return k == 0 ? std::string(1, prefix) : fmt::format("{}{}", prefix, k);
}

/// Parses the spec and builds the pipeline, reporting every error at its token.
class Parser {
 public:
  explicit Parser(std::string_view src) : src_(src), toks_(lex(src)) {}

  Pipeline run() {
    parse_input();
    expect_arrow();
    parse_casts();
    return build();
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& msg) const { fail_at(src_, at, msg); }

  /// Runs a DSL builder; its UsageError is reported at byte `at`.
  template <class F>
  auto guard(size_t at, F&& f) const -> decltype(f()) {
    try {
      return f();
    } catch (const UsageError& e) {
      fail(at, e.what());
    }
  }

  size_t end_at() const { return src_.size(); }

  void parse_input() {
    if (toks_.empty()) fail(0, "empty spec: expected an input such as bf16[2]");
    const Token& t = toks_[0];
    const size_t open = t.text.find('[');
    const std::string_view name = t.text.substr(0, open);
    bool known = false;
    for (DType d : {DType::bf16, DType::f16, DType::f32})
      if (dtype_name(d) == name) { dtype_ = d; known = true; }
    if (!known) fail(t.at, fmt::format("unknown input dtype '{}' (expected bf16, f16, f32)", name));
    if (open == kNowhere) fail(t.at + t.text.size(), fmt::format("expected '[rank]' after '{}', e.g. {}[2]", name, name));
    const size_t close = t.text.find(']', open);
    if (close == kNowhere) fail(t.at + t.text.size(), "expected ']' to close the rank");
    if (close + 1 != t.text.size())
      fail(t.at + close + 1, fmt::format("unexpected '{}' after the rank", t.text.substr(close + 1)));
    const Arg r{t.text.substr(open + 1, close - open - 1), t.at + open + 1};
    const int rk = int(parse_number(src_, r, "the rank", 1000));
    x_ = guard(r.at, [&] { return input("x", dtype_, rank(rk)); });
    rank_ = rk;
  }

  void expect_arrow() {
    if (toks_.size() < 2) fail(end_at(), "expected '->' after the input");
    if (toks_[1].text != "->") fail(toks_[1].at, fmt::format("expected '->' after the input, got '{}'", toks_[1].text));
    pos_ = 2;
  }

  void parse_casts() {
    for (;;) {
      const std::string_view after = casts_.empty() ? "'->'" : "';'";
      if (pos_ == toks_.size()) fail(end_at(), fmt::format("expected a recipe after {} ({})", after, kRecipeList));
      const Token& t = toks_[pos_];
      if (casts_.size() == size_t(kMaxOutputs / 2))
        fail(t.at, fmt::format("a spec has at most {} casts (a pipeline has at most {} outputs); split it",
                               kMaxOutputs / 2, kMaxOutputs));
      CastSpec c;
      for (const Recipe& r : kRecipes)
        if (r.name == t.text) c.recipe = &r;
      if (!c.recipe)
        fail(t.at, t.text == ";" || t.text == "amax"
                       ? fmt::format("expected a recipe after {}, got '{}' ({})", after, t.text, kRecipeList)
                       : fmt::format("unknown recipe '{}' (expected {})", t.text, kRecipeList));
      c.recipe_at = t.at;
      for (++pos_; pos_ < toks_.size() && toks_[pos_].text != ";"; ++pos_) {
        const Token& o = toks_[pos_];
        if (o.text == "amax") {
          if (pos_ + 1 != toks_.size())
            fail(toks_[pos_ + 1].at, fmt::format("unexpected '{}' after amax: amax must be the last token",
                                                 toks_[pos_ + 1].text));
          amax_at_ = o.at;
          break;
        }
        parse_option(c, o);
      }
      check_applicable(c);
      casts_.push_back(std::move(c));
      if (pos_ >= toks_.size() || amax_at_ != kNowhere) return;
      ++pos_;  // the ';'
    }
  }

  template <class T>
  void set(Opt<T>& slot, const char* what, const Token& t, T v) {
    if (slot.given())
      fail(t.at, fmt::format("duplicate {}: '{}' after '{}' (column {}); give each option once", what, t.text,
                             slot.text, column(slot.at)));
    slot.value = std::move(v);
    slot.at = t.at;
    slot.text = t.text;
  }

  size_t column(size_t at) const {
    const size_t line_start = at == 0 ? 0 : src_.rfind('\n', at - 1) + 1;
    return at - line_start + 1;
  }

  Layout parse_layout(const Token& t, size_t prefix) {
    const Token body{t.text.substr(prefix), t.at + prefix};
    if (body.text.empty()) fail(body.at, fmt::format("expected a layout after '{}'", t.text));
    // The whole token: a layout is a head and suffixes (modes(*,c,r).align(r,4)), spaces allowed.
    return guard(body.at, [&] { return Layout::parse(std::string(body.text)); });
  }

  void parse_option(CastSpec& c, const Token& t) {
    if (t.text == "->") fail(t.at, "unexpected '->': only the input is followed by '->'");
    if (t.text.starts_with("q:")) return set(c.q, "element layout", t, parse_layout(t, 2));
    if (t.text.starts_with("s:")) return set(c.s, "scale layout", t, parse_layout(t, 2));
    if (const size_t colon = t.text.find(':'); colon != kNowhere && t.text.find('(') > colon)
      fail(t.at, fmt::format("unknown output '{}' in '{}' (a cast's outputs are q:<layout> and s:<layout>)",
                             t.text.substr(0, colon), t.text));
    const Call call = split_call(src_, t);
    if (call.has_parens) {
      if (call.head == "blocks") return set(c.block, "block option", t, parse_blocks(t, call));
      if (call.head == "groups") return set(c.block, "block option", t, parse_groups(t, call));
      if (call.head == "sr") return set(c.sr, "stochastic rounding option", t, parse_sr(t, call));
      if (call.head == "scale") return set(c.def, "scale definition", t, text_detail::parse_scale_def(src_, call.args));
      const Keyword* k = nearest_keyword(call.head);
      fail(t.at, k && k->category == "option" && k->word != "flush"
                     ? fmt::format("unknown option '{}(...)' (did you mean {}?)", call.head, k->expected)
                     : fmt::format("unknown option '{}(...)' (expected blocks(...), groups(...), scale(...) or sr(...))",
                                   call.head));
    }
    const std::string_view w = t.text;
    if (w == "floor") return set(c.rule, "rule", t, ScaleRule::floor);
    if (w == "rceil") return set(c.rule, "rule", t, ScaleRule::rceil);
    if (w == "ceil") return set(c.rule, "rule", t, ScaleRule::ceil);
    if (w == "even") return set(c.rule, "rule", t, ScaleRule::even);
    if (w == "nan_block") return set(c.policy, "NaN policy", t, NanPolicy::nan_block);
    if (w == "satfinite") return set(c.policy, "NaN policy", t, NanPolicy::satfinite);
    if (w == "te") return set(c.convention, "NVFP4 convention", t, Nvfp4Convention::te);
    if (w == "torchao") return set(c.convention, "NVFP4 convention", t, Nvfp4Convention::torchao);
    if (w == "flush") return set(c.flush, "flush option", t, true);
    if (w == "nosat") return set(c.nosat, "saturation option", t, true);
    if (w == "blocks" || w == "groups" || w == "sr" || w == "scale")
      fail(t.at + t.text.size(), fmt::format("'{}' needs its arguments in parentheses, e.g. {}", w,
                                             w == "blocks" ? "blocks(0,32)" : w == "groups" ? "groups(0,offs)"
                                             : w == "sr"   ? "sr(1234,0)"
                                                           : "scale(stored=div(max(amax,1e-12),448))"));
    for (const Recipe& r : kRecipes)
      if (r.name == w) fail(t.at, fmt::format("unexpected recipe '{}': separate casts with ';'", w));
    const Keyword* k = nearest_keyword(w);
    if (k && k->category != "option")
      fail(t.at, fmt::format("unknown {} '{}' (expected {})", k->category, w, k->expected));
    if (k) fail(t.at, fmt::format("unknown option '{}' (did you mean {}?)", w, k->expected));
    fail(t.at, fmt::format("unknown option '{}' (expected {})", w, kOptionList));
  }

  BlockArgs parse_blocks(const Token& t, const Call& call) {
    BlockArgs b;
    if (call.args.size() == 2) {
      b.kind = BlockArgs::one_d;
      b.axes[0] = parse_axis(src_, call.args[0], "the block axis");
      b.sizes[0] = parse_size(src_, call.args[1], "the block size");
      return b;
    }
    if (call.args.size() == 3) {
      b.kind = BlockArgs::two_d;
      b.axes[0] = parse_axis(src_, call.args[0], "the first block axis");
      b.axes[1] = parse_axis(src_, call.args[1], "the second block axis");
      const Arg& s = call.args[2];
      const size_t x = s.text.find('x');
      if (x == kNowhere) fail(s.at, fmt::format("expected block sizes as <size0>x<size1> (e.g. 32x32), got '{}'", s.text));
      b.sizes[0] = parse_size(src_, {s.text.substr(0, x), s.at}, "the first block size");
      b.sizes[1] = parse_size(src_, {s.text.substr(x + 1), s.at + x + 1}, "the second block size");
      return b;
    }
    fail(t.at, fmt::format("blocks takes (axis,size) or (axis0,axis1,size0xsize1); got {} argument{}",
                           call.args.size(), call.args.size() == 1 ? "" : "s"));
  }

  BlockArgs parse_groups(const Token& t, const Call& call) {
    if (call.args.size() != 2)
      fail(t.at, fmt::format("groups takes (axis,offsets_name); got {} argument{}", call.args.size(),
                             call.args.size() == 1 ? "" : "s"));
    BlockArgs b;
    b.kind = BlockArgs::groups;
    b.axes[0] = parse_axis(src_, call.args[0], "the group axis");
    if (call.args[1].text.empty()) fail(call.args[1].at, "expected the name of the offsets input");
    b.offsets = std::string(call.args[1].text);
    return b;
  }

  std::array<uint64_t, 2> parse_sr(const Token& t, const Call& call) {
    if (call.args.size() != 2)
      fail(t.at, fmt::format("sr takes (seed,offset); got {} argument{}", call.args.size(),
                             call.args.size() == 1 ? "" : "s"));
    return {parse_number(src_, call.args[0], "the SR seed"), parse_number(src_, call.args[1], "the SR offset")};
  }

  /// Rejects options that do not apply to the cast's recipe.
  void check_applicable(const CastSpec& c) const {
    const Family f = c.recipe->family;
    if (c.def.given()) {
      if (f == Family::nvfp4)
        fail(c.def.at, "scale(...) gives an FP4 cast its own scale; write it with mxfp4.e2m1, not nvfp4");
      for (size_t at : {c.rule.at, c.policy.at, c.convention.at})
        if (at != kNowhere)
          fail(at, fmt::format("a cast with scale(...) has no rule, NaN policy or convention; its scale is the "
                               "definition at column {}", column(c.def.at)));
    }
    if (f != Family::mx) {
      const std::string_view scales = f == Family::nvfp4 ? "E4M3 block scales" : "FP32 scales";
      if (c.rule.given())
        fail(c.rule.at, fmt::format("rule '{}' applies to E8M0-scaled recipes (mxfp*, mxint8); {} has {}", c.rule.text,
                                    c.recipe->name, scales));
      if (c.policy.given())
        fail(c.policy.at, fmt::format("NaN policy '{}' applies to E8M0-scaled recipes (mxfp*, mxint8); {} has {}",
                                      c.policy.text, c.recipe->name, scales));
    }
    if (f != Family::nvfp4 && c.convention.given())
      fail(c.convention.at,
           fmt::format("convention '{}' applies to nvfp4 only, not {}", c.convention.text, c.recipe->name));
  }

  Pipeline build() {
    // Offsets names must not clash with the input or an output.
    std::vector<std::string> names = {"x"};
    for (size_t k = 0; k < casts_.size(); ++k) {
      names.push_back(output_name('q', k));
      names.push_back(output_name('s', k));
    }
    if (amax_at_ != kNowhere) names.push_back("amax");
    for (const CastSpec& c : casts_)
      if (c.block.given() && c.block.value.kind == BlockArgs::groups &&
          std::find(names.begin(), names.end(), c.block.value.offsets) != names.end())
        fail(c.block.at, fmt::format("the offsets input may not be named '{}': that is the input or an output",
                                     c.block.value.offsets));
    // One offsets input runs along one axis.
    for (size_t k = 0; k < casts_.size(); ++k)
      for (size_t j = 0; j < k; ++j) {
        const Opt<BlockArgs>& a = casts_[j].block;
        const Opt<BlockArgs>& b = casts_[k].block;
        if (a.given() && b.given() && a.value.kind == BlockArgs::groups && b.value.kind == BlockArgs::groups &&
            a.value.offsets == b.value.offsets && a.value.axes[0] != b.value.axes[0])
          fail(b.at, fmt::format("offsets '{}' run along axis {} (column {}) and along axis {} here; use another "
                                 "name for the second groups",
                                 b.value.offsets, a.value.axes[0], column(a.at), b.value.axes[0]));
      }

    std::vector<Output> outs;
    for (size_t k = 0; k < casts_.size(); ++k) {
      const CastSpec& c = casts_[k];
      const Family f = c.recipe->family;
      const ElemFormat elem = c.recipe->elem;
      const size_t blk_at = c.block.given() ? c.block.at : c.recipe_at;
      const Blocks b = guard(blk_at, [&] {
        if (!c.block.given()) return blocks(x_, rank_ - 1, f == Family::nvfp4 ? 16 : 32);
        const BlockArgs& a = c.block.value;
        switch (a.kind) {
          case BlockArgs::one_d: return blocks(x_, a.axes[0], a.sizes[0]);
          case BlockArgs::two_d: return blocks(x_, a.axes, a.sizes);
          case BlockArgs::groups: break;
        }
        return groups(x_, a.axes[0], offsets(a.offsets));
      });
      const Scale s = guard(c.def.given() ? c.def.at : blk_at, [&] {
        if (c.def.given()) return scale(amax(b), elem, c.def.value);
        switch (f) {
          case Family::mx:
            return e8m0_scale(amax(b), elem, c.rule.given() ? c.rule.value : ScaleRule::floor,
                              c.policy.given() ? c.policy.value : NanPolicy::nan_block);
          case Family::nvfp4: return nvfp4_scale(amax(b), c.convention.given() ? c.convention.value : Nvfp4Convention::te);
          case Family::fp32: break;
        }
        return f32_scale(amax(b), elem);
      });
      CastOptions options;
      if (c.sr.given()) {
        options.seed = c.sr.value[0];
        options.offset = c.sr.value[1];
      }
      options.flush_subnormals = c.flush.given();
      const Round round = c.sr.given() ? Round::stochastic : Round::nearest_even;
      const Saturate sat = c.nosat.given() ? Saturate::none : Saturate::finite;
      const Quantized q = guard(c.nosat.given() ? c.nosat.at : blk_at, [&] { return cast(elem, x_ / s, round, sat, options); });
      const size_t q_at = c.q.given() ? c.q.at : blk_at;
      const size_t s_at = c.s.given() ? c.s.at : blk_at;
      Output oq = guard(q_at, [&] { return output(output_name('q', k), q, c.q.given() ? c.q.value : Layout::row_major()); });
      Output os = guard(s_at, [&] { return output(output_name('s', k), s, c.s.given() ? c.s.value : Layout::linear()); });
      // The layout checks of pipeline() (rank, FP4 innermost axis, blocked scales), one output at a time.
      guard(q_at, [&] { return pipeline({oq}); });
      guard(s_at, [&] { return pipeline({os}); });
      outs.push_back(std::move(oq));
      outs.push_back(std::move(os));
    }
    if (amax_at_ != kNowhere) outs.push_back(guard(amax_at_, [&] { return output("amax", amax(x_)); }));
    const size_t last_at = amax_at_ != kNowhere ? amax_at_ : casts_.back().recipe_at;
    return guard(last_at, [&] { return pipeline(std::move(outs)); });
  }

  std::string_view src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  DType dtype_ = DType::bf16;
  int rank_ = 0;
  Expr x_{0.0};
  std::vector<CastSpec> casts_;
  size_t amax_at_ = kNowhere;
};

[[noreturn]] void no_text_form(const std::string& why) {
  throw UsageError("this pipeline has no short text form: " + why);
}

bool is_input_x(const NodePtr& n) { return n->op == Op::input && n->name == "x"; }

}  // namespace

Pipeline parse_pipeline(std::string_view text) { return Parser(text).run(); }

std::string to_text(const Pipeline& p) {
  const std::vector<InputDecl>& ins = p.inputs();
  if (ins.empty() || ins[0].name != "x" || ins[0].kind != InputDecl::Kind::tensor)
    no_text_form(fmt::format("its first input is '{}', not a tensor named 'x' (the text form's one input)",
                             ins.empty() ? "" : ins[0].name));
  for (size_t i = 1; i < ins.size(); ++i)
    if (ins[i].kind != InputDecl::Kind::offsets)
      no_text_form(fmt::format("input '{}' is neither 'x' nor a groups offsets array; the text form reads one "
                               "tensor named 'x'", ins[i].name));
  const std::vector<Output>& outs = p.outputs();
  size_t n = outs.size();
  const bool has_amax = n > 0 && outs.back().kind == OutputKind::amax;
  if (has_amax) {
    const Output& a = outs.back();
    if (a.name != "amax") no_text_form(fmt::format("its amax output is named '{}', not 'amax'", a.name));
    if (!is_input_x(a.node->args[0])) no_text_form("output 'amax' is the amax of an expression, not of 'x'");
    if (a.node->amax_nan == AmaxNan::ignore)
      no_text_form("output 'amax' ignores NaN elements, which the text form does not spell");
    --n;
  }
  if (n == 0 || n % 2 != 0)
    no_text_form(fmt::format("it has {} output{} besides amax; the text form writes pairs q, s (then q1, s1, ...)",
                             n, n == 1 ? "" : "s"));
  std::string text = fmt::format("{}[{}] ->", dtype_name(ins[0].dtype), p.rank());
  for (size_t k = 0; k < n / 2; ++k) {
    const Output& oq = outs[2 * k];
    const Output& os = outs[2 * k + 1];
    const std::string qn = output_name('q', k), sn = output_name('s', k);
    if (oq.name != qn || oq.kind != OutputKind::elems)
      no_text_form(fmt::format("output {} is '{}'; the text form expects the quantized elements '{}' there",
                               2 * k, oq.name, qn));
    if (os.name != sn || os.kind != OutputKind::scales)
      no_text_form(fmt::format("output {} is '{}'; the text form expects the scales '{}' there", 2 * k + 1,
                               os.name, sn));
    const NodePtr& qnode = oq.node;
    if (!is_input_x(qnode->args[0]))
      no_text_form(fmt::format("'{}' quantizes an expression, not the input 'x' (prologue expressions have no "
                               "short text form)", qn));
    const NodePtr& snode = qnode->args[1];
    if (canonical(os.node) != canonical(snode))
      no_text_form(fmt::format("'{}' is not the scale that '{}' was cast with", sn, qn));
    const Recipe* recipe = nullptr;
    // A definition no recipe names is spelt scale(...) after a recipe of its element format.
    const bool def = snode->recipe == ScaleRecipe::e8m0_exponent || snode->recipe == ScaleRecipe::generic ||
                     (snode->recipe == ScaleRecipe::f32_multiplier && (snode->pow2 || snode->store_multiplier));
    const Family family = snode->recipe == ScaleRecipe::e8m0_rule ? Family::mx
                          : snode->recipe == ScaleRecipe::nvfp4   ? Family::nvfp4
                                                                  : Family::fp32;
    for (const Recipe& r : kRecipes)
      if (r.family == family && r.elem == snode->elem) recipe = &r;
    for (const Recipe& r : kRecipes)
      if (def && !recipe && r.family == Family::mx && r.elem == snode->elem) recipe = &r;
    if (!recipe)
      no_text_form(fmt::format("'{}' casts to {} with {} scales, which no recipe names", qn, qnode->elem.str(),
                               scale_format_name(snode->scale_format)));
    text += fmt::format("{} {}", k == 0 ? "" : " ;", recipe->name);
    if (def) text += " " + text_detail::scale_def_text(*snode);
    if (family == Family::nvfp4) text += snode->convention == Nvfp4Convention::te ? " te" : " torchao";
    if (family == Family::mx)
      text += fmt::format(" {} {}", rule_name(snode->rule),
                          snode->policy == NanPolicy::nan_block ? "nan_block" : "satfinite");
    text += " " + block_of(qnode).str();
    if (qnode->round == Round::stochastic) text += fmt::format(" sr({},{})", qnode->seed, qnode->offset);
    if (qnode->flush_subnormals) text += " flush";
    if (qnode->saturate == Saturate::none) text += " nosat";
    text += " q:" + oq.layout.str();
    text += " s:" + (os.layout == Layout::linear() ? std::string("linear") : os.layout.str());
  }
  if (has_amax) text += " amax";
  // The text must build this very pipeline; anything it cannot spell shows up as a different hash.
  std::optional<Pipeline> back;
  try {
    back = parse_pipeline(text);
  } catch (const UsageError& e) {
    no_text_form(fmt::format("its text '{}' does not build: {}", text, e.what()));
  }
  if (back->hash() != p.hash())
    no_text_form(fmt::format("'{}' builds a different IR:\n{}versus\n{}", text, back->str(), p.str()));
  return text;
}

}  // namespace mxjit
