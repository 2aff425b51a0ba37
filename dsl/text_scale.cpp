#include "dsl/text_scale.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <bit>
#include <cmath>
#include <limits>
#include <fmt/format.h>
#include <optional>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit::text_detail {
namespace {

constexpr size_t kNowhere = std::string_view::npos;

/// `c` as printed in a message: control characters (and DEL) as \xNN, so that a hostile spec
/// cannot move the terminal's cursor or colour its output (as the .npy reader's messages).
std::string printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, c);
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.'; }

/// A parsed scale expression: a value or a condition, and where it started.
struct Term {
  std::optional<Expr> value;
  std::optional<Cond> cond;
  size_t at = 0;
};

/// An operation of the expression language: its name, arguments ('v' value, 'c' condition) and
/// whether it gives a condition.
struct OpSig {
  std::string_view name;
  std::string_view args;
  bool cond;
};

constexpr OpSig kOps[] = {
    {"add", "vv", false},     {"sub", "vv", false},        {"mul", "vv", false},       {"div", "vv", false},
    {"max", "vv", false},     {"min", "vv", false},        {"fmax", "vv", false},      {"fmin", "vv", false},
    {"neg", "v", false},      {"abs", "v", false},         {"floor_log2", "v", false}, {"ceil_log2", "v", false},
    {"exp2", "v", false},     {"pow2_floor", "v", false},  {"pow2_ceil", "v", false},  {"where", "cvv", false},
    {"isnan", "v", true},     {"isinf", "v", true},        {"eq", "vv", true},         {"lt", "vv", true},
    {"le", "vv", true},       {"and", "cc", true},         {"or", "cc", true},         {"not", "c", true},
};
constexpr std::string_view kOpList =
    "add, sub, mul, div, max, min, fmax, fmin, neg, abs, floor_log2, ceil_log2, exp2, pow2_floor, pow2_ceil, where, "
    "isnan, isinf, eq, lt, le, and, or, not";

/// Parses a number token: decimal (as the C++ double literal, then FP32 like Expr(double)) or
/// hexadecimal 0x... (exact). Empty when `w` is not a number.
std::optional<double> number(std::string_view w) {
  const bool neg = !w.empty() && (w[0] == '-' || w[0] == '+');
  std::string_view body = neg ? w.substr(1) : w;
  double v = 0;
  const char* end = body.data() + body.size();
  std::from_chars_result r{};
  if (body.starts_with("0x") || body.starts_with("0X"))
    r = std::from_chars(body.data() + 2, end, v, std::chars_format::hex);
  else if (body == "inf" || body == "nan")
    v = body == "inf" ? HUGE_VAL : std::numeric_limits<double>::quiet_NaN(), r.ptr = end;
  else if (body.empty() || !(std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.'))
    return std::nullopt;
  else
    r = std::from_chars(body.data(), end, v, std::chars_format::general);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return neg && w[0] == '-' ? -v : v;
}

/// Recursive descent over one expression text (no tokens of the outer form inside).
class ExprParser {
 public:
  ExprParser(std::string_view src, size_t begin, size_t end) : src_(src), i_(begin), end_(end) {}

  Term parse_all() {
    Term t = term(0);
    skip();
    if (i_ < end_) fail_at(src_, i_, fmt::format("unexpected '{}' after the expression", printable(src_[i_])));
    return t;
  }

 private:
  void skip() {
    while (i_ < end_ && is_space(src_[i_])) ++i_;
  }

  /// Advances over a name or a number (an exponent's sign included) and returns it.
  std::string_view word(size_t b) {
    const bool numeric = i_ < end_ && (std::isdigit(static_cast<unsigned char>(src_[i_])) || src_[i_] == '.');
    while (i_ < end_) {
      const char ch = src_[i_];
      const char prev = i_ > b ? src_[i_ - 1] : '\0';
      const bool exp_sign = numeric && (ch == '-' || ch == '+') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P');
      if (!is_word(ch) && !exp_sign) break;
      ++i_;
    }
    return src_.substr(b, i_ - b);
  }

  Term term(int depth) {
    skip();
    const size_t at = i_;
    if (i_ >= end_) fail_at(src_, at, "expected an expression");
    // The DSL's own limit, checked before the recursion could run out of stack.
    if (depth > kMaxExpressionDepth)
      fail_at(src_, at, fmt::format("the expression nests deeper than {} operations", kMaxExpressionDepth));
    if (src_[i_] == '-' || src_[i_] == '+') ++i_;
    const std::string_view w = word(at);
    if (w.empty() || w == "-" || w == "+")
      fail_at(src_, at, fmt::format("expected an expression, got '{}'", printable(src_[at])));
    skip();
    const bool call = i_ < end_ && src_[i_] == '(';
    if (!call) {
      if (auto v = number(w)) return Term{Expr(*v), std::nullopt, at};
      if (w == "amax") return Term{amax_var(), std::nullopt, at};
      if (w == "tamax") return Term{tamax_var(), std::nullopt, at};
      if (w == "stored") return Term{stored_var(), std::nullopt, at};
      if (w == "never") return Term{std::nullopt, never(), at};
      fail_at(src_, at, fmt::format("unknown name '{}' (expected a number, amax, tamax, stored, never or an "
                                    "operation such as div(a,b))", w));
    }
    const OpSig* sig = nullptr;
    for (const OpSig& o : kOps)
      if (o.name == w) sig = &o;
    if (!sig) fail_at(src_, at, fmt::format("unknown operation '{}' (expected {})", w, kOpList));
    ++i_;  // '('
    std::vector<Term> args;
    skip();
    if (i_ < end_ && src_[i_] == ')') {
      ++i_;
    } else {
      for (;;) {
        // floor_log2(x, bits): the second argument is a count of mantissa bits.
        if (w == "floor_log2" && args.size() == 1) {
          skip();
          const size_t bat = i_;
          const std::string_view bw = word(bat);
          int bits = -1;
          auto [p, ec] = std::from_chars(bw.data(), bw.data() + bw.size(), bits);
          if (ec != std::errc() || p != bw.data() + bw.size() || bits < 0)
            fail_at(src_, bat, fmt::format("floor_log2's second argument is a count of mantissa bits, got '{}'", bw));
          args.push_back(Term{Expr(double(bits)), std::nullopt, bat});
        } else {
          args.push_back(term(depth + 1));
        }
        skip();
        if (i_ < end_ && src_[i_] == ',') { ++i_; continue; }
        if (i_ < end_ && src_[i_] == ')') { ++i_; break; }
        fail_at(src_, i_, fmt::format("expected ',' or ')' in {}(...)", w));
      }
    }
    const bool log2_bits = w == "floor_log2" && args.size() == 2;
    if (args.size() != sig->args.size() && !log2_bits)
      fail_at(src_, at, fmt::format("{} takes {} argument{}, got {}", w, sig->args.size(),
                                    sig->args.size() == 1 ? "" : "s", args.size()));
    for (size_t k = 0; k < args.size() && !log2_bits; ++k) {
      const bool want_cond = sig->args[k] == 'c';
      if (want_cond && !args[k].cond)
        fail_at(src_, args[k].at, fmt::format("argument {} of {} must be a condition (isnan, eq, lt, ...), not a value",
                                              k + 1, w));
      if (!want_cond && !args[k].value)
        fail_at(src_, args[k].at, fmt::format("argument {} of {} must be a value, not a condition", k + 1, w));
    }
    auto v = [&](size_t k) { return *args[k].value; };
    auto c = [&](size_t k) { return *args[k].cond; };
    auto val = [&](Expr e) { return Term{std::move(e), std::nullopt, at}; };
    auto cnd = [&](Cond e) { return Term{std::nullopt, std::move(e), at}; };
    if (w == "add") return val(v(0) + v(1));
    if (w == "sub") return val(v(0) - v(1));
    if (w == "mul") return val(v(0) * v(1));
    if (w == "div") return val(v(0) / v(1));
    if (w == "max") return val(max(v(0), v(1)));
    if (w == "min") return val(min(v(0), v(1)));
    if (w == "fmax") return val(fmax(v(0), v(1)));
    if (w == "fmin") return val(fmin(v(0), v(1)));
    if (w == "neg") return val(-v(0));
    if (w == "abs") return val(abs(v(0)));
    if (w == "floor_log2")
      return val(log2_bits ? floor_log2(v(0), int(args[1].value->node()->value)) : floor_log2(v(0)));
    if (w == "ceil_log2") return val(ceil_log2(v(0)));
    if (w == "exp2") return val(exp2(v(0)));
    if (w == "pow2_floor") return val(pow2_floor(v(0)));
    if (w == "pow2_ceil") return val(pow2_ceil(v(0)));
    if (w == "where") return val(where(c(0), v(1), v(2)));
    if (w == "isnan") return cnd(isnan(v(0)));
    if (w == "isinf") return cnd(isinf(v(0)));
    if (w == "eq") return cnd(v(0) == v(1));
    if (w == "lt") return cnd(v(0) < v(1));
    if (w == "le") return cnd(v(0) <= v(1));
    if (w == "and") return cnd(c(0) && c(1));
    if (w == "or") return cnd(c(0) || c(1));
    return cnd(!c(0));
  }

  std::string_view src_;
  size_t i_, end_;
};

/// A number as the text form prints it: the shortest decimal that reads back to the same FP32
/// through a double (as the parser reads it), else the exact hexadecimal form.
std::string number_text(double v) {
  const float f = float(v);
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  if (std::isnan(f)) return std::signbit(f) ? "-nan" : "nan";
  std::string s = fmt::format("{}", f);
  const auto back = number(s);
  if (back && std::bit_cast<uint32_t>(float(*back)) == std::bit_cast<uint32_t>(f)) return s;
  return fmt::format("{:a}", f);
}

std::string expr_text(const NodePtr& n) {
  std::vector<std::string> a;
  for (const NodePtr& x : n->args) a.push_back(expr_text(x));
  switch (n->op) {
    case Op::constant: return number_text(n->value);
    case Op::amax_var: return "amax";
    case Op::tamax_var: return "tamax";
    case Op::stored_var: return "stored";
    case Op::never: return "never";
    case Op::select: return fmt::format("where({},{},{})", a[0], a[1], a[2]);
    case Op::floor_log2:
      if (n->bits >= 0) return fmt::format("floor_log2({},{})", a[0], n->bits);
      break;
    default: break;
  }
  return fmt::format("{}({})", op_name(n->op), fmt::join(a, ","));
}

const char* format_word(ScaleFormat f) {
  switch (f) {
    case ScaleFormat::f32: return "f32";
    case ScaleFormat::bf16: return "bf16";
    case ScaleFormat::e8m0: return "e8m0";
    case ScaleFormat::e4m3: return "e4m3";
  }
  return "?";
}

}  // namespace

void fail_at(std::string_view src, size_t at, const std::string& msg) {
  at = std::min(at, src.size());
  const size_t line_start = at == 0 ? 0 : src.rfind('\n', at - 1) + 1;  // npos + 1 == 0
  size_t line_end = src.find('\n', at);
  if (line_end == kNowhere) line_end = src.size();
  const size_t line = size_t(std::count(src.begin(), src.begin() + ptrdiff_t(line_start), '\n')) + 1;
  std::string text, pad, what;
  for (size_t i = line_start; i < line_end; ++i) {
    const std::string shown = src[i] == '\t' ? std::string("\t") : printable(src[i]);
    text += shown;
    if (i < at) pad += src[i] == '\t' ? std::string("\t") : std::string(shown.size(), ' ');
  }
  for (char c : msg) what += printable(c);
  throw UsageError(fmt::format("spec:{}:{}: {}\n  {}\n  {}^", line, at - line_start + 1, what, text, pad));
}

ScaleDef parse_scale_def(std::string_view src, const std::vector<Arg>& args) {
  ScaleDef d;
  std::vector<std::string_view> seen;
  for (const Arg& a : args) {
    const size_t eq = a.text.find('=');
    if (eq == kNowhere)
      fail_at(src, a.at, fmt::format("expected key=value in scale(...), got '{}' (keys: stored, factor, zero_if, "
                                     "nan_if, format, apply, clamp, amax_nan)", a.text));
    std::string_view key = a.text.substr(0, eq);
    while (!key.empty() && is_space(key.back())) key.remove_suffix(1);
    size_t vb = a.at + eq + 1, ve = a.at + a.text.size();
    while (vb < ve && is_space(src[vb])) ++vb;
    const std::string_view value = src.substr(vb, ve - vb);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      fail_at(src, a.at, fmt::format("scale(...) gives '{}' twice", key));
    seen.push_back(key);
    auto expr = [&](bool cond) {
      Term t = ExprParser(src, vb, ve).parse_all();
      if (cond && !t.cond)
        fail_at(src, vb, fmt::format("{} must be a condition (isnan, eq, lt, ..., never), not a value", key));
      if (!cond && !t.value) fail_at(src, vb, fmt::format("{} must be a value, not a condition", key));
      return t;
    };
    if (key == "stored") d.stored = *expr(false).value;
    else if (key == "factor") d.factor = *expr(false).value;
    else if (key == "zero_if") d.zero_if = *expr(true).cond;
    else if (key == "nan_if") d.nan_if = *expr(true).cond;
    else if (key == "format") {
      if (value == "f32") d.format = ScaleFormat::f32;
      else if (value == "bf16") d.format = ScaleFormat::bf16;
      else if (value == "e8m0") d.format = ScaleFormat::e8m0;
      else if (value == "e4m3") d.format = ScaleFormat::e4m3;
      else fail_at(src, vb, fmt::format("unknown scale format '{}' (expected f32, bf16, e8m0, e4m3)", value));
    } else if (key == "apply") {
      if (value == "multiply") d.apply = Apply::multiply;
      else if (value == "divide") d.apply = Apply::divide;
      else fail_at(src, vb, fmt::format("unknown apply '{}' (expected multiply, divide)", value));
    } else if (key == "amax_nan") {
      if (value == "propagate") d.amax_nan = AmaxNan::propagate;
      else if (value == "ignore") d.amax_nan = AmaxNan::ignore;
      else fail_at(src, vb, fmt::format("unknown amax_nan '{}' (expected propagate, ignore)", value));
    } else if (key == "clamp") {
      if (value == "none") continue;
      const size_t open = value.find('(');
      const std::string_view kind = value.substr(0, open);
      if (kind == "propagate_nan") d.clamp = Clamp::propagate_nan;
      else if (kind == "ignore_nan") d.clamp = Clamp::ignore_nan;
      else if (kind == "ignore_nan_hi") d.clamp = Clamp::ignore_nan_hi;
      else fail_at(src, vb, fmt::format("unknown clamp '{}' (expected none, propagate_nan(lo,hi), ignore_nan(lo,hi), ignore_nan_hi(lo,hi))",
                                        value));
      const size_t comma = value.find(',');
      if (open == kNowhere || comma == kNowhere || value.back() != ')')
        fail_at(src, vb, fmt::format("clamp {} takes (lo,hi), e.g. {}(-448,448)", kind, kind));
      auto bound = [&](size_t b, size_t e, const char* what) {
        std::string_view w = value.substr(b, e - b);
        while (!w.empty() && is_space(w.front())) w.remove_prefix(1), ++b;
        while (!w.empty() && is_space(w.back())) w.remove_suffix(1);
        const auto v = number(w);
        if (!v) fail_at(src, vb + b, fmt::format("the clamp's {} must be a number, got '{}'", what, w));
        return *v;
      };
      d.clamp_lo = bound(open + 1, comma, "lower bound");
      d.clamp_hi = bound(comma + 1, value.size() - 1, "upper bound");
    } else {
      fail_at(src, a.at, fmt::format("unknown key '{}' in scale(...) (expected stored, factor, zero_if, nan_if, "
                                     "format, apply, clamp, amax_nan)", key));
    }
  }
  return d;
}

std::string scale_def_text(const Node& n) {
  std::vector<std::string> parts;
  if (n.scale_format != ScaleFormat::f32) parts.push_back(fmt::format("format={}", format_word(n.scale_format)));
  parts.push_back("stored=" + expr_text(n.args.at(kScaleStored)));
  if (canonical(n.args.at(kScaleFactor)) != canonical((1.0 / stored_var()).node()))
    parts.push_back("factor=" + expr_text(n.args.at(kScaleFactor)));
  if (n.args.at(kScaleZeroIf)->op != Op::never) parts.push_back("zero_if=" + expr_text(n.args.at(kScaleZeroIf)));
  if (n.args.at(kScaleNanIf)->op != Op::never) parts.push_back("nan_if=" + expr_text(n.args.at(kScaleNanIf)));
  if (n.apply == Apply::divide) parts.push_back("apply=divide");
  if (n.clamp != Clamp::none)
    parts.push_back(fmt::format("clamp={}({},{})", n.clamp == Clamp::ignore_nan ? "ignore_nan" : n.clamp == Clamp::ignore_nan_hi ? "ignore_nan_hi" : "propagate_nan",
                                number_text(n.clamp_lo), number_text(n.clamp_hi)));
  if (n.amax_nan == AmaxNan::ignore) parts.push_back("amax_nan=ignore");
  return fmt::format("scale({})", fmt::join(parts, ", "));
}

}  // namespace mxjit::text_detail
