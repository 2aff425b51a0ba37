// The short text form: round trips, canonical printing, and errors that point at a column.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/recipes.hpp"
#include "dsl/text.hpp"

using namespace mxjit;

namespace {

/// Runs `f`, which must throw UsageError, and returns its message.
template <class F>
std::string usage_message(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  FAIL_CHECK("expected UsageError");
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Checks that parsing `spec` fails at `line`:`col` with a message containing `part`, and that the
/// caret line points at that column.
void check_parse_error(const std::string& spec, int line, int col, const std::string& part) {
  const std::string m = usage_message([&] { parse_pipeline(spec); });
  INFO("spec: " << spec);
  INFO("message: " << m);
  CHECK(m.starts_with(fmt::format("spec:{}:{}: ", line, col)));
  CHECK(has(m, part));
  const size_t last_nl = m.rfind('\n');
  REQUIRE(last_nl != std::string::npos);
  CHECK(m.substr(last_nl + 1) == std::string(size_t(col + 1), ' ') + "^");
}

/// A spec as typed and the canonical text to_text prints for it.
struct RoundTrip {
  const char* spec;
  const char* canonical;
};

const RoundTrip kRoundTrips[] = {
    {"bf16[2] -> mxfp8.e4m3", "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) q:row_major s:linear"},
    {"bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4",
     "bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(0,32) q:col_major s:blocked128x4"},
    {"f16[2] -> mxfp8.e5m2 satfinite ceil blocks(1,64)",
     "f16[2] -> mxfp8.e5m2 ceil satfinite blocks(1,64) q:row_major s:linear"},
    {"f32[2] -> mxfp6.e2m3 even", "f32[2] -> mxfp6.e2m3 even nan_block blocks(1,32) q:row_major s:linear"},
    {"bf16[2] -> mxfp6.e3m2 s:blocked8x4 rceil",
     "bf16[2] -> mxfp6.e3m2 rceil nan_block blocks(1,32) q:row_major s:blocked8x4"},
    {"bf16[2] -> mxfp4.e2m1 rceil satfinite s:blocked128x4",
     "bf16[2] -> mxfp4.e2m1 rceil satfinite blocks(1,32) q:row_major s:blocked128x4"},
    {"bf16[2] -> mxint8 blocks(0,32) q:col_major", "bf16[2] -> mxint8 floor nan_block blocks(0,32) q:col_major s:linear"},
    {"bf16[2] -> nvfp4", "bf16[2] -> nvfp4 te blocks(1,16) q:row_major s:linear"},
    {"bf16[2] -> nvfp4 s:blocked128x4 torchao amax",
     "bf16[2] -> nvfp4 torchao blocks(1,16) q:row_major s:blocked128x4 amax"},
    {"bf16[2] -> nvfp4 blocks(1, 0, 16x16)", "bf16[2] -> nvfp4 te blocks(0,1,16x16) q:row_major s:linear"},
    {"bf16[2] -> fp8.e4m3 groups(0,offs)", "bf16[2] -> fp8.e4m3 groups(0,offs) q:row_major s:linear"},
    {"bf16[2] -> fp8.e5m2 blocks(1,128) s:col_major", "bf16[2] -> fp8.e5m2 blocks(1,128) q:row_major s:col_major"},
    {"bf16[2] -> mxfp8.e4m3 blocks(1,0,32x32)",
     "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(0,1,32x32) q:row_major s:linear"},
    {"bf16[3] -> mxfp8.e4m3 rceil blocks(1,32) q:expert_col_major s:blocked128x4",
     "bf16[3] -> mxfp8.e4m3 rceil nan_block blocks(1,32) q:expert_col_major s:blocked128x4"},
    {"f32[3] -> mxfp4.e2m1 blocks(1,32) q:perm(0, 2, 1)",
     "f32[3] -> mxfp4.e2m1 floor nan_block blocks(1,32) q:perm(0,2,1) s:linear"},
    {"bf16[2] -> mxfp8.e4m3 flush sr(18446744073709551615, 3)",
     "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) sr(18446744073709551615,3) flush q:row_major s:linear"},
    {"bf16[2] -> mxfp8.e4m3 sr(0,0)",
     "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) sr(0,0) q:row_major s:linear"},
    {"bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) ; mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4 amax",
     "bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(1,32) q:row_major s:linear ; mxfp8.e4m3 rceil nan_block "
     "blocks(0,32) q:col_major s:blocked128x4 amax"},
    {"bf16[2]->mxfp8.e4m3;mxfp4.e2m1;nvfp4 amax",
     "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) q:row_major s:linear ; mxfp4.e2m1 floor nan_block "
     "blocks(1,32) q:row_major s:linear ; nvfp4 te blocks(1,16) q:row_major s:linear amax"},
    {"bf16[2] -> fp8.e4m3 groups(0,offs) ; mxfp8.e4m3 groups(0,offs) q:col_major",
     "bf16[2] -> fp8.e4m3 groups(0,offs) q:row_major s:linear ; mxfp8.e4m3 floor nan_block groups(0,offs) "
     "q:col_major s:linear"},
};

}  // namespace

TEST_CASE("text: round trips through the canonical form") {
  int checked = 0;
  for (const RoundTrip& rt : kRoundTrips) {
    INFO("spec: " << rt.spec);
    const Pipeline p = parse_pipeline(rt.spec);
    CHECK(to_text(p) == rt.canonical);
    const Pipeline c = parse_pipeline(rt.canonical);
    CHECK(c.hash() == p.hash());
    CHECK(c.str() == p.str());
    CHECK(to_text(c) == rt.canonical);
    ++checked;
  }
  CHECK(checked >= 15);
}

TEST_CASE("text: spellings that print canonically") {
  auto canon = [](const char* s) { return to_text(parse_pipeline(s)); };
  // linear is row_major; an identity perm is row_major; scales print row_major as linear.
  CHECK(canon("bf16[2] -> mxfp8.e4m3 q:linear s:row_major") ==
        "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) q:row_major s:linear");
  CHECK(canon("bf16[2] -> mxfp8.e4m3 q:perm(0,1)") ==
        "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) q:row_major s:linear");
  // Explicit defaults are the defaults.
  CHECK(parse_pipeline("bf16[2] -> mxfp8.e4m3").hash() ==
        parse_pipeline("bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) q:row_major s:linear").hash());
  CHECK(parse_pipeline("bf16[2] -> nvfp4").hash() == parse_pipeline("bf16[2] -> nvfp4 te blocks(1,16)").hash());
  // Rank 1: the default block axis is 0.
  CHECK(canon("f32[1] -> mxfp8.e4m3") == "f32[1] -> mxfp8.e4m3 floor nan_block blocks(0,32) q:row_major s:linear");
  // Whitespace: newlines, tabs, spaces inside parentheses.
  CHECK(canon("bf16[2]\n\t->  mxfp8.e4m3\n  blocks( 0 , 32 )\tq:col_major") ==
        "bf16[2] -> mxfp8.e4m3 floor nan_block blocks(0,32) q:col_major s:linear");
}

TEST_CASE("text: outputs are q, s, q1, s1, ..., amax and x is the input") {
  const Pipeline p = parse_pipeline("bf16[2] -> mxfp8.e4m3 ; mxfp8.e4m3 blocks(0,32) ; nvfp4 amax");
  std::vector<std::string> names;
  for (const Output& o : p.outputs()) names.push_back(o.name);
  CHECK(names == std::vector<std::string>{"q", "s", "q1", "s1", "q2", "s2", "amax"});
  REQUIRE(p.inputs().size() == 1);
  CHECK(p.inputs()[0].name == "x");
  CHECK(p.inputs()[0].dtype == DType::bf16);
  CHECK(p.rank() == 2);
  const Pipeline g = parse_pipeline("f16[2] -> fp8.e4m3 groups(0,ends)");
  REQUIRE(g.inputs().size() == 2);
  CHECK(g.inputs()[1].name == "ends");
  CHECK(g.inputs()[1].kind == InputDecl::Kind::offsets);
  CHECK(g.outputs()[1].dtype == DType::f32);  // FP32 scales
}

TEST_CASE("text: the brief's example error, exactly") {
  CHECK_THROWS_WITH_AS(parse_pipeline("bf16[2] -> mxfp8.e4m3 rceli blocks(0,32)"),
                       "spec:1:23: unknown rule 'rceli' (expected floor, rceil, ceil, even)\n"
                       "  bf16[2] -> mxfp8.e4m3 rceli blocks(0,32)\n"
                       "                        ^",
                       UsageError);
}

TEST_CASE("text: parse errors point at the column") {
  // unknown recipe
  check_parse_error("bf16[2] -> mxfp9.e4m3", 1, 12, "unknown recipe 'mxfp9.e4m3' (expected mxfp8.e4m3,");
  check_parse_error("bf16[2] -> mxfp8", 1, 12, "unknown recipe 'mxfp8'");
  // input dtype and rank
  check_parse_error("fp16[2] -> mxfp8.e4m3", 1, 1, "unknown input dtype 'fp16' (expected bf16, f16, f32)");
  check_parse_error("bf16[x] -> mxfp8.e4m3", 1, 6, "the rank must be an unsigned decimal integer, got 'x'");
  check_parse_error("bf16[] -> mxfp8.e4m3", 1, 6, "expected the rank");
  check_parse_error("bf16[0] -> mxfp8.e4m3", 1, 6, "input('x'): rank 0 is out of range; ranks 1..8 are supported");
  check_parse_error("bf16[9] -> mxfp8.e4m3", 1, 6, "rank 9 is out of range");
  check_parse_error("bf16 -> mxfp8.e4m3", 1, 5, "expected '[rank]' after 'bf16', e.g. bf16[2]");
  check_parse_error("bf16[2 -> mxfp8.e4m3", 1, 7, "expected ']' to close the rank");
  check_parse_error("bf16[2]x -> mxfp8.e4m3", 1, 8, "unexpected 'x' after the rank");
  check_parse_error("", 1, 1, "empty spec");
  // missing '->'
  check_parse_error("bf16[2] mxfp8.e4m3", 1, 9, "expected '->' after the input, got 'mxfp8.e4m3'");
  check_parse_error("bf16[2]", 1, 8, "expected '->' after the input");
  check_parse_error("bf16[2] ->", 1, 11, "expected a recipe after '->'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 ;", 1, 24, "expected a recipe after ';'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 ; amax", 1, 25, "expected a recipe after ';', got 'amax'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 -> nvfp4", 1, 23, "unexpected '->'");
  // unbalanced parentheses
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0,32", 1, 29, "unbalanced '(': no ')' closes it");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks0,32)", 1, 33, "unbalanced ')': no '(' opens it");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0,32)x", 1, 35, "unexpected 'x' after the ')' of 'blocks(...)'");
  // bad numbers: the caret is on the number itself
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0,3x2)", 1, 32,
                    "the block size must be an unsigned decimal integer, got '3x2'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(-1,32)", 1, 30,
                    "the block axis must be an unsigned decimal integer, got '-1'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0, )", 1, 33, "expected the block size");
  check_parse_error("bf16[2] -> mxfp8.e4m3 sr(1,99999999999999999999)", 1, 28, "the SR offset 99999999999999999999 is too large");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0,1,32)", 1, 34, "expected block sizes as <size0>x<size1>");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0,1,32xq)", 1, 37, "the second block size must be an unsigned");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0)", 1, 23, "blocks takes (axis,size) or (axis0,axis1,size0xsize1); got 1 argument");
  check_parse_error("bf16[2] -> mxfp8.e4m3 sr(1)", 1, 23, "sr takes (seed,offset)");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks", 1, 29, "'blocks' needs its arguments in parentheses");
  // unknown layout: the caret is on the layout name
  check_parse_error("bf16[2] -> mxfp8.e4m3 q:blocked64x4", 1, 25, "unknown layout 'blocked64x4'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 s:", 1, 25, "expected a layout after 's:'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 z:row_major", 1, 23, "unknown output 'z'");
  // duplicate options
  check_parse_error("bf16[2] -> mxfp8.e4m3 floor rceil", 1, 29, "duplicate rule: 'rceil' after 'floor' (column 23)");
  check_parse_error("bf16[2] -> mxfp8.e4m3 q:row_major blocks(1,32) q:col_major", 1, 48, "duplicate element layout");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(1,32) groups(0,offs)", 1, 36, "duplicate block option");
  check_parse_error("bf16[2] -> mxfp8.e4m3 flush flush", 1, 29, "duplicate flush option");
  // unknown options, with a guess when close
  check_parse_error("bf16[2] -> mxfp8.e4m3 satfinit", 1, 23, "unknown NaN policy 'satfinit' (expected nan_block, satfinite)");
  check_parse_error("bf16[2] -> mxfp8.e4m3 fast", 1, 23, "unknown option 'fast' (expected a rule");
  check_parse_error("bf16[2] -> mxfp8.e4m3 block(0,32)", 1, 23, "unknown option 'block(...)' (did you mean blocks(axis,size)?)");
  check_parse_error("bf16[2] -> mxfp8.e4m3 mxfp8.e5m2", 1, 23, "separate casts with ';'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 amax q:col_major", 1, 28, "amax must be the last token");
  // options that do not apply to the recipe
  check_parse_error("bf16[2] -> nvfp4 rceil", 1, 18, "rule 'rceil' applies to E8M0-scaled recipes");
  check_parse_error("bf16[2] -> fp8.e4m3 satfinite", 1, 21, "NaN policy 'satfinite' applies to E8M0-scaled recipes");
  check_parse_error("bf16[2] -> mxfp8.e4m3 torchao", 1, 23, "convention 'torchao' applies to nvfp4 only");
  // DSL misuse found while building, at the token that asked for it
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(2,32)", 1, 23,
                    "blocks(x, axis=2, size=32): axis 2 is out of range for a value of rank 2");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0,1,32x32) blocks(0,32)", 1, 41, "duplicate block option");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(1,24)", 1, 23, "block size 24 is not a power of two");
  check_parse_error("bf16[2] -> mxfp4.e2m1 blocks(1,1)", 1, 23, "block size must be even");
  check_parse_error("bf16[2] -> mxfp4.e2m1 blocks(0,32)", 1, 23, "FP4 packs two codes per byte");
  check_parse_error("bf16[2] -> mxfp4.e2m1 q:col_major", 1, 23, "innermost stored axis (0)");
  check_parse_error("bf16[2] -> mxfp4.e2m1 blocks(0,32) q:col_major ; mxfp4.e2m1 q:col_major", 1, 61,
                    "output 'q1': FP4 packs");
  check_parse_error("bf16[2] -> mxfp8.e4m3 q:perm(0,2,1)", 1, 23, "layout perm(0,2,1) has rank 3 but the value has rank 2");
  check_parse_error("bf16[2] -> mxfp8.e4m3 q:blocked128x4", 1, 23, "blocked128x4 is a scale layout");
  check_parse_error("bf16[2] -> fp8.e4m3 s:blocked128x4", 1, 21, "FP32 scales take a permuted layout");
  check_parse_error("bf16[2] -> mxfp8.e4m3 blocks(0,1,32x32) s:blocked128x4", 1, 41, "needs 1-D fixed-size blocks");
  check_parse_error("bf16[2] -> nvfp4 groups(0,offs)", 1, 18, "NVFP4 needs fixed-size blocks");
  check_parse_error("bf16[2] -> mxfp8.e4m3 groups(0,q)", 1, 23, "may not be named 'q'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 groups(0,x)", 1, 23, "may not be named 'x'");
  check_parse_error("bf16[2] -> mxfp8.e4m3 groups(0,a-b)", 1, 23, "names use letters, digits and '_' only");
  check_parse_error("bf16[2] -> mxfp8.e4m3 groups(0,offs) ; mxfp8.e4m3 groups(1,offs)", 1, 51,
                    "offsets 'offs' run along axis 0 (column 23) and along axis 1 here");
  // line and column on a later line; tabs are kept in the caret line
  const std::string m = usage_message([] { parse_pipeline("bf16[2] ->\n\tmxfp8.e4m3 rceli"); });
  CHECK(m == "spec:2:13: unknown rule 'rceli' (expected floor, rceil, ceil, even)\n  \tmxfp8.e4m3 rceli\n  \t           ^");
}

TEST_CASE("text: pipelines without a short text form") {
  auto why = [](const Pipeline& p) { return usage_message([&] { to_text(p); }); };
  const std::string prefix = "this pipeline has no short text form: ";
  Expr x = input("x", DType::bf16, rank(2));

  // A prologue expression.
  Expr v = x * 2.0;
  Scale sv = e8m0_scale(amax(blocks(v, 1, 32)), e4m3, ScaleRule::floor);
  std::string m = why(pipeline({output("q", cast(e4m3, v / sv)), output("s", sv)}));
  CHECK(m.starts_with(prefix));
  CHECK_MESSAGE(has(m, "'q' quantizes an expression, not the input 'x'"), m);

  Scale s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::floor);
  Quantized q = cast(e4m3, x / s);
  // Other output names, a missing scale output, outputs in another order.
  CHECK(has(why(pipeline({output("codes", q), output("s", s)})), "output 0 is 'codes'"));
  CHECK(has(why(pipeline({output("q", q)})), "it has 1 output besides amax"));
  CHECK(has(why(pipeline({output("s", s), output("q", q)})), "output 0 is 's'"));
  CHECK(has(why(pipeline({output("q", q), output("s", s), output("total", amax(x))})),
            "its amax output is named 'total'"));
  CHECK(has(why(pipeline({output("q", q), output("s", s), output("amax", amax(x * 2.0))})),
            "amax of an expression"));
  // The scale output is not the cast's scale.
  Scale other = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  CHECK(has(why(pipeline({output("q", q), output("s", other)})), "'s' is not the scale that 'q' was cast with"));
  // A custom scale rule prints as its definition (tests/dsl/test_text_scale.cpp); a user element
  // format and FP32 scales for FP4 have no recipe.
  // A custom expression that is a library rule's (RCEIL's) is that rule, and prints as it.
  Scale rceil = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ceil_log2(amax_var() * (1.0 / 448)));
  CHECK(to_text(pipeline({output("q", cast(e4m3, x / rceil)), output("s", rceil)})) ==
        "bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(1,32) q:row_major s:linear");
  const ElemFormat e3m3 = fp_format(3, 3);
  Scale su = e8m0_scale(amax(blocks(x, 1, 32)), e3m3, ScaleRule::floor);
  CHECK(has(why(pipeline({output("q", cast(e3m3, x / su)), output("s", su)})),
            "casts to fp(3,3) with e8m0 scales, which no recipe names"));
  Scale sf = f32_scale(amax(blocks(x, 1, 32)), e2m1);
  CHECK(has(why(pipeline({output("q", cast(e2m1, x / sf)), output("s", sf)})), "casts to e2m1 with f32 scales"));
  // An input not named x, a second input.
  Expr y = input("y", DType::bf16, rank(2));
  Scale sy = e8m0_scale(amax(blocks(y, 1, 32)), e4m3, ScaleRule::floor);
  CHECK(has(why(pipeline({output("q", cast(e4m3, y / sy)), output("s", sy)})), "its first input is 'y'"));
  CHECK(has(why(pipeline({output("q", q), output("s", s), output("q1", cast(e4m3, y / sy)), output("s1", sy)})),
            "input 'y' is neither 'x' nor a groups offsets array"));
  // Dequantize pipelines.
  Expr d = dequantize("codes", "scales", e4m3, ScaleFormat::e8m0, rank(2), 1, 32);
  CHECK(has(why(pipeline({output("y", d, DType::bf16)})), "its first input is 'codes'"));
}

TEST_CASE("text: to_text of C++-built pipelines parses back to the same hash") {
  Expr x = input("x", DType::f16, rank(3));
  Scale s0 = e8m0_scale(amax(blocks(x, 2, 32)), e2m1, ScaleRule::even, NanPolicy::satfinite);
  Scale s1 = nvfp4_scale(amax(blocks(x, {1, 2}, {16, 16})), Nvfp4Convention::te);
  Scale s2 = f32_scale(amax(groups(x, 1, offsets("offs"))), e5m2);
  Pipeline p = pipeline({output("q", cast(e2m1, x / s0, Round::stochastic, Saturate::finite, {5, 6, false})),
                         output("s", s0, layout::blocked_8x4()),
                         output("q1", cast(e2m1, x / s1), layout::permuted({1, 0, 2})),
                         output("s1", s1, layout::col_major()),
                         output("q2", cast(e5m2, x / s2, Round::nearest_even, Saturate::finite, {0, 0, true}),
                                layout::expert_col_major()),
                         output("s2", s2),
                         output("amax", amax(x))});
  const std::string t = to_text(p);
  CHECK(t ==
        "f16[3] -> mxfp4.e2m1 even satfinite blocks(2,32) sr(5,6) q:row_major s:blocked8x4 ; nvfp4 te "
        "blocks(1,2,16x16) q:perm(1,0,2) s:col_major ; fp8.e5m2 groups(1,offs) flush q:expert_col_major s:linear amax");
  CHECK(parse_pipeline(t).hash() == p.hash());
}

TEST_CASE("text: errors print control characters as \\xNN, the caret still under the column (issue 36)") {
  std::string m;
  try {
    parse_pipeline("bf16[2] -> mxfp8.e4m3 \x1b[31mred\x07 rceil");
  } catch (const UsageError& e) {
    m = e.what();
  }
  CHECK(m == "spec:1:23: unknown option '\\x1b[31mred\\x07' (expected a rule (floor, rceil, ceil, even), a NaN policy "
             "(nan_block, satfinite), an NVFP4 convention (te, torchao), blocks(axis,size|whole), blocks(a0,a1,s0xs1), "
             "groups(axis,offsets), scale(stored=...), sr(seed,offset), flush, nosat, q:<layout>, s:<layout>, ';' "
             "or a final amax)\n"
             "  bf16[2] -> mxfp8.e4m3 \\x1b[31mred\\x07 rceil\n"
             "                        ^");
  try {
    parse_pipeline("bf16[2] -> \x01\x02 mxfp8.e4m3");
  } catch (const UsageError& e) {
    m = e.what();
  }
  CHECK(m.find("unknown recipe '\\x01\\x02'") != std::string::npos);
  CHECK(m.find("\n  bf16[2] -> \\x01\\x02 mxfp8.e4m3\n             ^") != std::string::npos);
  for (char c : m) CHECK((static_cast<unsigned char>(c) >= 0x20 || c == '\n'));
}
