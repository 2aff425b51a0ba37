// DSL misuse is reported when the pipeline is built, with a message naming the input, axis and rule.
#include <doctest/doctest.h>

#include <string>

#include "dsl/errors.hpp"
#include "dsl/pipeline.hpp"

using namespace mxjit;

namespace {

/// Runs `f`, which must throw UsageError, and returns its message ("" and a failed check if not).
template <class F>
std::string usage_message(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("expected UsageError, got another exception: " << e.what());
    return "";
  }
  FAIL_CHECK("expected UsageError, nothing was thrown");
  return "";
}

/// True when `text` contains `part`; on failure the check prints both.
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// A standard MXFP8 cast of x along `axis`.
struct Cast {
  Expr x;
  Scale s;
  Quantized q;
};
Cast mxfp8_cast(Expr x, int axis, ElemFormat elem = e4m3) {
  Scale s = e8m0_scale(amax(blocks(x, axis, 32)), elem, ScaleRule::floor);
  Quantized q = cast(elem, x / s);
  return {x, s, q};
}

}  // namespace

TEST_CASE("misuse: block axis out of range names the input, the axis and the rank") {
  Expr x = input("x", DType::bf16, rank(2));
  const std::string m = usage_message([&] { blocks(x, 2, 32); });
  CHECK_MESSAGE(has(m, "blocks(x, axis=2"), m);
  CHECK_MESSAGE(has(m, "axis 2 is out of range"), m);
  CHECK_MESSAGE(has(m, "rank 2"), m);
  CHECK_MESSAGE(has(usage_message([&] { blocks(x, -1, 32); }), "axis -1 is out of range"), "negative axis");
  CHECK_MESSAGE(has(usage_message([&] { blocks(x, {0, 5}, {32, 32}); }), "axis 5 is out of range"), "2-D axis");
  CHECK_MESSAGE(has(usage_message([&] { groups(x, 3, offsets("offs")); }), "axis 3 is out of range"), "groups");
}

TEST_CASE("misuse: block sizes must be powers of two") {
  Expr x = input("x", DType::bf16, rank(2));
  CHECK_THROWS_WITH_AS(blocks(x, 1, 24), "blocks(x, axis=1, size=24): block size 24 is not a power of two",
                       UsageError);
  CHECK_THROWS_WITH_AS(blocks(x, 1, 0), "blocks(x, axis=1, size=0): block size 0 is not a power of two", UsageError);
  const std::string m = usage_message([&] { blocks(x, {0, 1}, {32, 48}); });
  CHECK_MESSAGE(has(m, "block size 48 is not a power of two"), m);
  CHECK_THROWS_WITH_AS(blocks(x, {1, 1}, {32, 32}),
                       "blocks(x, axes=(1,1), sizes=32x32): the two block axes must differ", UsageError);
}

TEST_CASE("misuse: an FP4 cast needs an even block size") {
  Expr x = input("x", DType::bf16, rank(2));
  Scale s = e8m0_scale(amax(blocks(x, 1, 1)), e2m1, ScaleRule::floor);
  const std::string m = usage_message([&] { cast(e2m1, x / s); });
  CHECK_MESSAGE(has(m, "cast(e2m1, x)"), m);
  CHECK_MESSAGE(has(m, "block size must be even; got 1"), m);
  // Block size 1 is fine for byte-sized formats.
  Scale s8 = e8m0_scale(amax(blocks(x, 1, 1)), e4m3, ScaleRule::floor);
  CHECK_NOTHROW(cast(e4m3, x / s8));
}

TEST_CASE("misuse: layout rank mismatch") {
  Cast c = mxfp8_cast(input("x", DType::bf16, rank(2)), 1);
  const std::string m =
      usage_message([&] { pipeline({output("q", c.q, layout::permuted({0, 2, 1})), output("s", c.s)}); });
  CHECK(m == "output 'q': layout perm(0,2,1) has rank 3 but the value has rank 2");
  // Blocked scale layouts need rank >= 2 and expert_col_major needs rank >= 2.
  Cast c1 = mxfp8_cast(input("x", DType::bf16, rank(1)), 0);
  CHECK_THROWS_WITH_AS(pipeline({output("q", c1.q), output("s", c1.s, layout::blocked_128x4())}),
                       "output 's': blocked128x4 needs a rank >= 2 tensor, got rank 1", UsageError);
  CHECK_THROWS_WITH_AS(pipeline({output("q", c1.q, layout::expert_col_major()), output("s", c1.s)}),
                       "output 'q': expert_col_major needs rank >= 2, got rank 1", UsageError);
  // A permutation that is not one.
  CHECK_THROWS_WITH_AS(layout::permuted({0, 0, 1}),
                       "layout::permuted(0,0,1): the order must be a permutation of 0..2", UsageError);
}

TEST_CASE("misuse: two outputs with the same name") {
  Cast c = mxfp8_cast(input("x", DType::bf16, rank(2)), 1);
  CHECK_THROWS_WITH_AS(pipeline({output("q", c.q), output("q", c.s)}), "pipeline: two outputs are named 'q'",
                       UsageError);
  CHECK_THROWS_WITH_AS(pipeline({output("x", c.q), output("s", c.s)}),
                       "pipeline: 'x' names both an input and an output", UsageError);
  CHECK_THROWS_WITH_AS(pipeline({}), "pipeline: needs at least one output", UsageError);
}

TEST_CASE("misuse: an input declared twice with a different dtype") {
  Cast a = mxfp8_cast(input("x", DType::bf16, rank(2)), 1);
  Cast b = mxfp8_cast(input("x", DType::f32, rank(2)), 0);
  const std::string m = usage_message(
      [&] { pipeline({output("q", a.q), output("s", a.s), output("q1", b.q), output("s1", b.s)}); });
  CHECK_MESSAGE(has(m, "input 'x' is declared twice with different dtype"), m);
  CHECK_MESSAGE(has(m, "bf16 r2 vs f32 r2"), m);
  // Two inputs of different ranks cannot share a domain.
  Cast d = mxfp8_cast(input("y", DType::bf16, rank(3)), 2);
  const std::string r = usage_message([&] { pipeline({output("q", a.q), output("q1", d.q)}); });
  CHECK_MESSAGE(has(r, "input 'y' has rank 3 but the pipeline's other inputs have rank 2"), r);
}

TEST_CASE("misuse: cast of a value other than the one the scale's blocks were taken of") {
  Expr x = input("x", DType::bf16, rank(2));
  Expr y = input("y", DType::bf16, rank(2));
  Scale s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::floor);
  const std::string m = usage_message([&] { cast(e4m3, y / s); });
  CHECK_MESSAGE(has(m, "cast(e4m3, y)"), m);
  CHECK_MESSAGE(has(m, "not the value its blocks were taken of"), m);
  CHECK_THROWS_AS(cast(e4m3, (x * 2.0) / s), UsageError);
  // ... and the scale must be for the same element format.
  CHECK_THROWS_WITH_AS(cast(e5m2, x / s), "cast(e5m2, x): the scale was computed for element format e4m3, not e5m2",
                       UsageError);
}

TEST_CASE("misuse: a blocked layout on elements, or on FP32 scales") {
  Cast c = mxfp8_cast(input("x", DType::bf16, rank(2)), 1);
  const std::string m = usage_message([&] { output("q", c.q, layout::blocked_128x4()); });
  CHECK_MESSAGE(has(m, "output('q'): blocked128x4 is a scale layout"), m);
  Expr x = input("x", DType::bf16, rank(2));
  Scale f = f32_scale(amax(blocks(x, 1, 32)), e4m3);
  CHECK_MESSAGE(has(usage_message([&] { output("s", f, layout::blocked_8x4()); }), "FP32 scales take a permuted"),
                "f32 blocked");
  // 2-D blocks have no single scale axis for a blocked layout.
  Scale s2 = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
  CHECK_THROWS_WITH_AS(pipeline({output("s", s2, layout::blocked_128x4())}),
                       "output 's': blocked128x4 needs 1-D fixed-size blocks (one scale axis)", UsageError);
}

TEST_CASE("misuse: a custom scale expression must be a function of amax_var()") {
  Expr x = input("x", DType::bf16, rank(2));
  Amax a = amax(blocks(x, 1, 32));
  const std::string m = usage_message([&] { e8m0_scale(a, e4m3, Expr(3.0)); });
  CHECK_MESSAGE(has(m, "must use amax_var()"), m);
  CHECK_THROWS_AS(e8m0_scale(a, e4m3, floor_log2(x)), UsageError);  // depends on an input
  CHECK_THROWS_AS(e8m0_scale(a, e4m3, relu(amax_var())), UsageError);  // relu is not a scale op
  CHECK_NOTHROW(e8m0_scale(a, e4m3, ceil_log2(amax_var() * (1.0 / 448))));
  CHECK_THROWS_AS(e8m0_scale(a, e4m3, ScaleRule::custom), UsageError);
  CHECK_THROWS_AS(e8m0_scale(amax(x), e4m3, ScaleRule::floor), UsageError);  // a tensor amax
}

TEST_CASE("misuse: vec axis out of range") {
  CHECK_THROWS_WITH_AS(vec("b", DType::bf16, 2, rank(2)), "vec('b'): axis 2 is out of range for a domain of rank 2",
                       UsageError);
  CHECK_THROWS_AS(vec("b", DType::bf16, -1, rank(2)), UsageError);
  CHECK_THROWS_AS(vec("b", DType::u8, 0, rank(2)), UsageError);
  CHECK_NOTHROW(vec("b", DType::bf16, 1, rank(2)));
}

TEST_CASE("misuse: fp_format out of range") {
  const std::string m = usage_message([] { fp_format(6, 2); });
  CHECK_MESSAGE(has(m, "fp_format(ebits=6, mbits=2)"), m);
  CHECK_MESSAGE(has(m, "1 <= ebits <= 5"), m);
  CHECK_THROWS_AS(fp_format(0, 3), UsageError);
  CHECK_THROWS_AS(fp_format(3, 6), UsageError);
  CHECK_THROWS_AS(fp_format(4, 4), UsageError);  // 9 bits
  CHECK(fp_format(2, 1) == e2m1);
  CHECK(fp_format(3, 3).str() == "fp(3,3)");
  CHECK_THROWS_WITH_AS(elem_format_named("e4m4"),
                       "unknown element format 'e4m4': expected one of e4m3, e5m2, e2m3, e3m2, e2m1, int8",
                       UsageError);
}

TEST_CASE("misuse: unknown layout text") {
  const std::string m = usage_message([] { Layout::parse("blocked64x4"); });
  CHECK_MESSAGE(has(m, "unknown layout 'blocked64x4'"), m);
  CHECK_MESSAGE(has(m, "blocked128x4"), m);
  CHECK_THROWS_WITH_AS(Layout::parse("perm(0,a)"), "layout 'perm(0,a)': 'a' is not an axis number", UsageError);
  CHECK_THROWS_AS(Layout::parse("perm()"), UsageError);
  CHECK_THROWS_AS(Layout::parse("perm(0,2)"), UsageError);  // not a permutation
  CHECK_THROWS_AS(Layout::parse(""), UsageError);
}

TEST_CASE("misuse: FP4 output whose innermost stored axis is not the block axis") {
  Expr x = input("x", DType::bf16, rank(2));
  Scale s = e8m0_scale(amax(blocks(x, 1, 32)), e2m1, ScaleRule::floor);
  Quantized q = cast(e2m1, x / s);
  const std::string m = usage_message([&] { pipeline({output("q", q, layout::col_major()), output("s", s)}); });
  CHECK_MESSAGE(has(m, "output 'q': FP4 packs two codes per byte along the innermost stored axis (0)"), m);
  CHECK_MESSAGE(has(m, "block axis (blocks(1,32))"), m);
  CHECK_NOTHROW(pipeline({output("q", q), output("s", s)}));
  // Jagged groups never suit FP4 packing.
  Scale g = e8m0_scale(amax(groups(x, 1, offsets("offs"))), e2m1, ScaleRule::floor);
  const std::string mg = usage_message([&] { pipeline({output("q", cast(e2m1, x / g))}); });
  CHECK_MESSAGE(has(mg, "output 'q': FP4 codes need fixed blocks (groups(1,offs) are jagged groups"), mg);
}

TEST_CASE("misuse: inputs, names and ranks") {
  CHECK_THROWS_WITH_AS(input("x", DType::bf16, rank(0)), "input('x'): rank 0 is out of range; ranks 1..8 are supported",
                       UsageError);
  CHECK_THROWS_AS(input("x", DType::bf16, rank(9)), UsageError);
  CHECK_THROWS_AS(input("", DType::bf16, rank(2)), UsageError);
  CHECK_THROWS_WITH_AS(input("x-1", DType::bf16, rank(2)), "input('x-1'): names use letters, digits and '_' only",
                       UsageError);
  CHECK_THROWS_AS(input("x", DType::i32, rank(2)), UsageError);
  Expr x = input("x", DType::bf16, rank(2));
  Expr y = input("y", DType::bf16, rank(3));
  CHECK_THROWS_WITH_AS(x + y, "operator+: operands have ranks 2 and 3; element-wise operands need the same rank",
                       UsageError);
  CHECK_THROWS_AS(nvfp4_scale(amax(groups(x, 0, offsets("offs"))), Nvfp4Convention::te), UsageError);
  CHECK_THROWS_AS(output("a", amax(blocks(x, 1, 32))), UsageError);  // a block amax is not an output
  CHECK_THROWS_AS(output("v", x, DType::u8), UsageError);
}

TEST_CASE("layout: expert_col_major of rank < 2 resolves to the identity order (no recursion)") {
  // Regression: Layout::order recursed forever for expert_col_major at rank 0 or 1.
  CHECK(Layout::expert_col_major().order(1) == std::vector<int>{0});
  CHECK(Layout::expert_col_major().order(0).empty());
  CHECK(Layout::expert_col_major().order(3) == std::vector<int>{0, 2, 1});
}

TEST_CASE("misuse: a scale definition that is not a valid scale names the part and the rule") {
  auto x = input("x", DType::bf16, rank(2));
  const auto a = amax(blocks(x, 1, 32));
  auto msg = [&](const ScaleDef& d) { return usage_message([&] { scale(a, e4m3, d); }); };
  ScaleDef d;
  CHECK(has(msg(d), "ScaleDef::stored is missing"));
  d.stored = stored_var() * 2.0;
  CHECK(has(msg(d), "stored_var() is the stored scale read back"));
  d.stored = x * 2.0;
  CHECK(has(msg(d), "ScaleDef::stored: 'input' is not a scale-expression operation"));
  d.stored = amax_var() / 448.0;
  d.factor = tamax_var() + x;
  CHECK(has(msg(d), "ScaleDef::factor: 'input'"));
  d.factor.reset();
  d.format = ScaleFormat::e8m0;
  CHECK(has(msg(d), "is not a power of two; E8M0 stores powers of two only"));
  d.stored = pow2_ceil(amax_var() / 448.0);
  CHECK_NOTHROW(scale(a, e4m3, d));
  d.clamp = Clamp::ignore_nan;
  d.clamp_lo = 1;
  d.clamp_hi = -1;
  CHECK(has(msg(d), "the clamp [1, -1] is empty"));
  CHECK(has(usage_message([&] { e8m0_scale(a, e4m3, floor_log2(tamax_var())); }),
            "an E8M0 exponent reads amax_var() only"));
  CHECK(has(usage_message([&] { floor_log2(amax_var(), 30); }), "mbits is the number of mantissa bits kept, 0..22"));
  ScaleDef two;
  two.stored = amax_var() / tamax_var();
  auto offs = offsets("offs");
  CHECK(has(usage_message([&] { scale(amax(groups(x, 0, offs)), e4m3, two); }), "needs fixed-size blocks"));
  const Scale s = e8m0_scale(amax(blocks(x, 1, 32)), e2m1, ScaleRule::floor);
  CHECK(has(usage_message([&] { cast(e2m1, x / s, Round::nearest_even, Saturate::none); }),
            "Saturate::none turns overflow into NaN, and e2m1 has no NaN"));
  CHECK(has(usage_message([&] { scale_format_named("ue8m0"); }), "unknown scale format 'ue8m0'"));
}
