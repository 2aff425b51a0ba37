// The short text form of scale definitions (scale(...)), whole-axis blocks and nosat: every peer
// recipe and random definitions round-trip (print(parse(print(p))) == print(p), equal hashes),
// and misuse is a UsageError at the offending token.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/recipes.hpp"
#include "dsl/text.hpp"

using namespace mxjit;

namespace {

/// The pipeline casting x with `def` over `b`, its text, and the round trip checked.
std::string round_trip(const Pipeline& p) {
  const std::string t = to_text(p);
  const Pipeline back = parse_pipeline(t);
  CHECK_MESSAGE(back.hash() == p.hash(), t);
  CHECK(to_text(back) == t);
  return t;
}

Pipeline cast_with(Expr x, Blocks b, ElemFormat f, const ScaleDef& def, Saturate sat = Saturate::finite) {
  const Scale s = scale(amax(b), f, def);
  return pipeline({output("q", cast(f, x / s, Round::nearest_even, sat)), output("s", s)});
}

/// Random scale expressions over amax (and stored in factors), and conditions.
class RandomDefs {
 public:
  explicit RandomDefs(uint64_t seed) : rng_(seed) {}

  double constant() {
    const double picks[] = {0.0, -0.0, 1.0, 448.0, 57344.0, 1e-12, 1e-10, 1e-4, 0.5, double(1.0f / 448.0f),
                            0x1p127, 0x1p-149, std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
    if (rng_() % 3 == 0) {  // any finite FP32 pattern
      float f;
      do f = std::bit_cast<float>(uint32_t(rng_())); while (!std::isfinite(f));
      return f;
    }
    return picks[rng_() % std::size(picks)];
  }

  Expr value(int depth, bool stored) {
    const int leaves = stored ? 3 : 2;
    if (depth == 0 || rng_() % 4 == 0) {
      const int k = int(rng_() % uint32_t(leaves));
      return k == 0 ? amax_var() : k == 1 ? Expr(constant()) : stored_var();
    }
    switch (rng_() % 16) {
      case 0: return value(depth - 1, stored) + value(depth - 1, stored);
      case 1: return value(depth - 1, stored) - value(depth - 1, stored);
      case 2: return value(depth - 1, stored) * value(depth - 1, stored);
      case 3: return value(depth - 1, stored) / value(depth - 1, stored);
      case 4: return max(value(depth - 1, stored), value(depth - 1, stored));
      case 5: return fmin(value(depth - 1, stored), value(depth - 1, stored));
      case 6: return fmax(value(depth - 1, stored), value(depth - 1, stored));
      case 7: return -value(depth - 1, stored);
      case 8: return abs(value(depth - 1, stored));
      case 9: return floor_log2(value(depth - 1, stored), int(rng_() % 8));
      case 10: return ceil_log2(value(depth - 1, stored));
      case 11: return exp2(value(depth - 1, stored));
      case 12: return pow2_floor(value(depth - 1, stored));
      case 13: return pow2_ceil(value(depth - 1, stored));
      case 14: return floor_log2(value(depth - 1, stored));
      default: return where(cond(depth - 1, stored), value(depth - 1, stored), value(depth - 1, stored));
    }
  }

  Cond cond(int depth, bool stored) {
    switch (rng_() % (depth == 0 ? 3 : 8)) {
      case 0: return isnan(value(depth, stored));
      case 1: return isinf(value(depth, stored));
      case 2: return value(depth, stored) == value(depth, stored);
      case 3: return value(depth, stored) < value(depth, stored);
      case 4: return value(depth, stored) <= value(depth, stored);
      case 5: return cond(depth - 1, stored) && cond(depth - 1, stored);
      case 6: return cond(depth - 1, stored) || cond(depth - 1, stored);
      default: return !cond(depth - 1, stored);
    }
  }

  ScaleDef def() {
    ScaleDef d;
    const ScaleFormat formats[] = {ScaleFormat::f32, ScaleFormat::bf16, ScaleFormat::e4m3, ScaleFormat::e8m0};
    d.format = formats[rng_() % 4];
    d.stored = d.format == ScaleFormat::e8m0 ? pow2_ceil(value(3, false)) : value(3, false);
    if (rng_() % 2) d.factor = value(3, true);
    if (rng_() % 3 == 0) d.zero_if = cond(2, true);
    if (rng_() % 3 == 0) d.nan_if = cond(2, true);
    d.apply = rng_() % 2 ? Apply::divide : Apply::multiply;
    const Clamp clamps[] = {Clamp::none, Clamp::propagate_nan, Clamp::ignore_nan};
    d.clamp = clamps[rng_() % 3];
    d.clamp_lo = -std::fabs(constant());
    d.clamp_hi = std::fabs(constant());
    d.amax_nan = rng_() % 2 ? AmaxNan::ignore : AmaxNan::propagate;
    return d;
  }

  uint32_t pick(uint32_t n) { return uint32_t(rng_() % n); }

 private:
  std::mt19937_64 rng_;
};

/// The message of the UsageError that parsing `spec` throws ("" and a failed check if none).
std::string parse_error(const std::string& spec) {
  try {
    parse_pipeline(spec);
  } catch (const UsageError& e) {
    return e.what();
  }
  FAIL_CHECK("expected UsageError for " << spec);
  return "";
}

}  // namespace

TEST_CASE("text scale: whole-axis blocks and nosat print and parse") {
  for (const char* spec : {"bf16[2] -> fp8.e4m3 blocks(1,whole) q:row_major s:linear",
                           "f32[2] -> fp8.e5m2 blocks(0,whole) q:col_major s:linear",
                           "bf16[2] -> fp8.e4m3 blocks(0,1,wholexwhole) q:row_major s:linear",
                           "bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(0,1,wholex128) q:row_major s:linear",
                           "bf16[3] -> fp8.e4m3 blocks(1,whole) q:row_major s:linear ; fp8.e4m3 blocks(2,whole) q:row_major s:linear",
                           "bf16[2] -> fp8.e4m3 blocks(1,128) nosat q:row_major s:linear"}) {
    CHECK(to_text(parse_pipeline(spec)) == spec);
  }
  auto x = input("x", DType::bf16, rank(2));
  const Scale s = f32_scale(amax(blocks(x, {1, 0}, {128, kWholeAxis})), e4m3, {.store_multiplier = true});
  // FP32 recipe options other than the default have no recipe name: they print as a definition.
  const std::string t = round_trip(pipeline({output("q", cast(e4m3, x / s)), output("s", s)}));
  CHECK(t.find("blocks(0,1,wholex128)") != std::string::npos);
  CHECK(t.find("scale(") != std::string::npos);
}

TEST_CASE("text scale: every peer recipe round-trips, on 1x128, 128x128 and whole-axis blocks") {
  auto x = input("x", DType::bf16, rank(2));
  std::vector<std::pair<std::string, ScaleDef>> defs;
  for (ElemFormat f : {e4m3, e5m2}) {
    for (bool u : {false, true}) {
      defs.emplace_back("deepgemm", recipes::deepgemm(f, u));
      defs.emplace_back("vllm", recipes::vllm_group(f, u));
      defs.emplace_back("sglang", recipes::sglang_group(f, u));
      defs.emplace_back("te", recipes::transformer_engine(f, u));
      defs.emplace_back("f32", recipes::f32_multiplier(f, {.store_multiplier = u, .pow2 = !u}));
    }
    defs.emplace_back("vllm eps", recipes::vllm_group(f, false, 1e-6));
    defs.emplace_back("te eps", recipes::transformer_engine(f, true, 1e-5, 0x1.fffcp15));
    defs.emplace_back("torchao", recipes::torchao_blockwise(f));
    ScaleDef ue = recipes::deepgemm(f, true);
    ue.format = ScaleFormat::e8m0;
    defs.emplace_back("deepgemm e8m0", ue);
    defs.emplace_back("e8m0 custom", recipes::e8m0_exponent(ceil_log2(amax_var() * (1.0 / 448)) + 1.0,
                                                            NanPolicy::satfinite));
  }
  int n = 0;
  for (const auto& [name, def] : defs) {
    const ElemFormat f = e4m3;
    for (Blocks b : {blocks(x, 1, 128), blocks(x, {0, 1}, {128, 128}), blocks(x, 1, kWholeAxis),
                     blocks(x, {0, 1}, {kWholeAxis, kWholeAxis})}) {
      const std::string t = round_trip(cast_with(x, b, f, def, name == "deepgemm" ? Saturate::none : Saturate::finite));
      INFO(t);
      ++n;
    }
  }
  CHECK(n == int(defs.size()) * 4);
  // vLLM's definition, spelt as the header documents it.
  const std::string vllm =
      "bf16[2] -> fp8.e4m3 scale(stored=div(fmax(amax,1e-10),448), factor=stored, apply=divide, "
      "clamp=ignore_nan(-448,448), amax_nan=ignore) blocks(1,128) q:row_major s:linear";
  CHECK(to_text(parse_pipeline(vllm)) == vllm);
  CHECK(parse_pipeline(vllm).hash() == cast_with(x, blocks(x, 1, 128), e4m3, recipes::vllm_group(e4m3, false)).hash());
}

TEST_CASE("text scale: random definitions round-trip with equal hashes") {
  RandomDefs gen(34);
  auto x = input("x", DType::f32, rank(2));
  int built = 0, refused = 0;
  for (int i = 0; i < 3000 && built < 600; ++i) {
    const ScaleDef def = gen.def();
    const ElemFormat elems[] = {e4m3, e5m2, e2m1, int8};
    const ElemFormat f = elems[gen.pick(4)];
    const Blocks bs[] = {blocks(x, 1, 32), blocks(x, 0, kWholeAxis), blocks(x, {0, 1}, {kWholeAxis, 128})};
    const Saturate sat = f.has_nan() && gen.pick(2) ? Saturate::none : Saturate::finite;
    std::optional<Pipeline> p;
    try {
      p = cast_with(x, bs[gen.pick(3)], f, def, sat);
    } catch (const UsageError&) {
      ++refused;  // not a valid scale (e.g. a clamp whose bounds are NaN): the DSL refuses it
      continue;
    }
    round_trip(*p);
    ++built;
  }
  MESSAGE(fmt::format("{} random definitions round-tripped, {} refused by the DSL", built, refused));
  CHECK(built >= 500);
}

TEST_CASE("text scale: misuse is a UsageError at the token") {
  struct Case {
    const char* spec;
    const char* part;
  };
  const Case cases[] = {
      {"bf16[2] -> fp8.e4m3 scale(stored=div(amax,448), bogus=1)", "unknown key 'bogus'"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, stored=amax)", "gives 'stored' twice"},
      {"bf16[2] -> fp8.e4m3 scale(stored=divv(amax,448))", "unknown operation 'divv'"},
      {"bf16[2] -> fp8.e4m3 scale(stored=div(amax))", "div takes 2 arguments, got 1"},
      {"bf16[2] -> fp8.e4m3 scale(stored=isnan(amax))", "stored must be a value, not a condition"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, zero_if=amax)", "zero_if must be a condition"},
      {"bf16[2] -> fp8.e4m3 scale(stored=where(amax,1,2))", "argument 1 of where must be a condition"},
      {"bf16[2] -> fp8.e4m3 scale(stored=div(amax,4x8))", "unknown name '4x8'"},
      {"bf16[2] -> fp8.e4m3 scale(stored=div(amax,448) 7)", "unexpected '7' after the expression"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, format=e5m2)", "unknown scale format 'e5m2'"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, apply=add)", "unknown apply 'add'"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, amax_nan=skip)", "unknown amax_nan 'skip'"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, clamp=ignore_nan(-448))", "takes (lo,hi)"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, clamp=ignore_nan(lo,448))", "the clamp's lower bound must be a number"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax, clamp=saturate(0,1))", "unknown clamp"},
      {"bf16[2] -> fp8.e4m3 scale(stored)", "expected key=value"},
      {"bf16[2] -> fp8.e4m3 scale(factor=stored)", "ScaleDef::stored is missing"},
      {"bf16[2] -> fp8.e4m3 scale(stored=stored)", "ScaleDef::stored"},
      {"bf16[2] -> fp8.e4m3 scale(stored=div(amax,448), format=e8m0)", "not a power of two"},
      {"bf16[2] -> fp8.e4m3 scale(stored=floor_log2(amax,x))", "count of mantissa bits"},
      {"bf16[2] -> mxfp8.e4m3 rceil scale(stored=amax)", "has no rule"},
      {"bf16[2] -> nvfp4 scale(stored=amax)", "write it with mxfp4.e2m1"},
      {"bf16[2] -> fp8.e4m3 scale", "needs its arguments in parentheses"},
      {"bf16[2] -> fp8.e4m3 scale(stored=amax) scale(stored=amax)", "scale definition"},
      {"bf16[2] -> fp8.e4m3 blocks(1,wholes)", "the block size must be an unsigned decimal integer"},
      {"bf16[2] -> fp8.e4m3 blocks(2,whole)", "axis"},
      {"bf16[2] -> mxfp4.e2m1 nosat", "Saturate::none"},
      {"bf16[2] -> fp8.e4m3 nosat nosat", "saturation option"},
  };
  for (const Case& c : cases) {
    const std::string m = parse_error(c.spec);
    CHECK_MESSAGE(m.find(c.part) != std::string::npos, c.spec << "\n" << m);
    CHECK_MESSAGE(m.starts_with("spec:1:"), m);
  }
  // Deep nesting is refused before the recursion could exhaust the stack.
  std::string deep = "bf16[2] -> fp8.e4m3 scale(stored=";
  for (int i = 0; i < 100000; ++i) deep += "neg(";
  deep += "amax" + std::string(100000, ')') + ")";
  CHECK(parse_error(deep).find("the expression nests deeper than 256 operations") != std::string::npos);
  // The caret sits under the offending operation.
  const std::string m = parse_error("bf16[2] -> fp8.e4m3 scale(stored=mul(amax, sqrt(2)))");
  CHECK_MESSAGE(m.find("spec:1:44: unknown operation 'sqrt'") != std::string::npos, m);
}
