// The pipeline hash is the kernel cache key: equal pipelines hash equally however they were built,
// and every semantic change changes the hash.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "dsl/pipeline.hpp"
#include "dsl/text.hpp"

using namespace mxjit;

namespace {

/// The knobs of one test pipeline; each field is one semantic change.
struct Knobs {
  DType dtype = DType::bf16;
  ElemFormat elem = e4m3;
  ScaleRule rule = ScaleRule::rceil;
  NanPolicy policy = NanPolicy::nan_block;
  int axis = 1;
  int64_t size = 32;
  Layout q_layout = Layout::row_major();
  Layout s_layout = Layout::blocked_128x4();
  double constant = 2.0;
  bool sr = false;
  uint64_t seed = 0;
  std::string q_name = "q";
};

/// (x * constant) cast per the knobs, outputs q and s.
Pipeline build(const Knobs& k) {
  Expr x = input("x", k.dtype, rank(2));
  Expr v = x * k.constant;
  Scale s = e8m0_scale(amax(blocks(v, k.axis, k.size)), k.elem, k.rule, k.policy);
  Quantized q = cast(k.elem, v / s, k.sr ? Round::stochastic : Round::nearest_even, Saturate::finite,
                     CastOptions{k.seed, 0, false});
  return pipeline({output(k.q_name, q, k.q_layout), output("s", s, k.s_layout)});
}

}  // namespace

TEST_CASE("hash: separately built identical expressions hash the same") {
  Pipeline a = build({});
  Pipeline b = build({});
  CHECK(a.hash() == b.hash());
  CHECK(a.str() == b.str());
}

TEST_CASE("hash: x*2 and 2*x hash the same; x+y and y+x too") {
  Expr x = input("x", DType::bf16, rank(2));
  auto make = [&](Expr v) {
    Scale s = e8m0_scale(amax(blocks(v, 1, 32)), e4m3, ScaleRule::floor);
    return pipeline({output("q", cast(e4m3, v / s)), output("s", s)});
  };
  CHECK(make(x * 2.0).hash() == make(2.0 * x).hash());
  CHECK(make(x * 2.0).hash() != make(x / 2.0).hash());
  Expr y = input("y", DType::bf16, rank(2));
  // Input order (first use) is part of the kernel signature, so compare with one fixed use order.
  CHECK(make(max(x + y, x)).hash() == make(max(x, y + x)).hash());
  CHECK(make(x - y).hash() != make(y - x).hash());  // not commutative
}

TEST_CASE("hash: 2-D blocks are canonical in axis order") {
  Expr x = input("x", DType::bf16, rank(2));
  auto make = [&](Blocks b) {
    Scale s = e8m0_scale(amax(b), e4m3, ScaleRule::floor);
    return pipeline({output("q", cast(e4m3, x / s)), output("s", s)});
  };
  CHECK(make(blocks(x, {1, 0}, {32, 16})).hash() == make(blocks(x, {0, 1}, {16, 32})).hash());
  CHECK(make(blocks(x, {1, 0}, {32, 16})).hash() != make(blocks(x, {0, 1}, {32, 16})).hash());
}

TEST_CASE("hash: a pipeline written in C++ and its text form hash the same") {
  Expr x = input("x", DType::bf16, rank(2));
  Scale s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  Quantized q = cast(e4m3, x / s);
  Pipeline cpp = pipeline({output("q", q, layout::col_major()), output("s", s, layout::blocked_128x4())});
  Pipeline txt = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4");
  CHECK(cpp.hash() == txt.hash());
  CHECK(cpp.str() == txt.str());
  CHECK(to_text(cpp) == "bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(0,32) q:col_major s:blocked128x4");

  // NVFP4 with stochastic rounding, plus an amax output.
  Expr y = input("x", DType::f32, rank(3));
  Scale n = nvfp4_scale(amax(blocks(y, 2, 16)), Nvfp4Convention::torchao);
  Quantized qn = cast(e2m1, y / n, Round::stochastic, Saturate::finite, CastOptions{42, 7, true});
  Pipeline cpp2 = pipeline({output("q", qn), output("s", n), output("amax", amax(y))});
  CHECK(cpp2.hash() == parse_pipeline("f32[3] -> nvfp4 torchao sr(42,7) flush amax").hash());

  // Two casts of the same tensor (dim0 and dim1) in one pass, FP32-scaled groups.
  Expr z = input("x", DType::bf16, rank(2));
  Scale s0 = f32_scale(amax(groups(z, 0, offsets("offs"))), e4m3);
  Scale s1 = e8m0_scale(amax(blocks(z, 1, 32)), e5m2, ScaleRule::even, NanPolicy::satfinite);
  Pipeline cpp3 = pipeline({output("q", cast(e4m3, z / s0)), output("s", s0), output("q1", cast(e5m2, z / s1)),
                            output("s1", s1, layout::blocked_8x4())});
  CHECK(cpp3.hash() ==
        parse_pipeline("bf16[2] -> fp8.e4m3 groups(0,offs) ; mxfp8.e5m2 satfinite even s:blocked8x4").hash());
}

TEST_CASE("hash: every semantic change changes the hash") {
  const Knobs base;
  std::vector<std::pair<std::string, Knobs>> changes;
  auto change = [&](std::string what, auto edit) {
    Knobs k = base;
    edit(k);
    changes.emplace_back(std::move(what), k);
  };
  change("element format", [](Knobs& k) { k.elem = e5m2; });
  change("user element format", [](Knobs& k) { k.elem = fp_format(3, 3); });
  change("rule", [](Knobs& k) { k.rule = ScaleRule::floor; });
  change("rule even", [](Knobs& k) { k.rule = ScaleRule::even; });
  change("nan policy", [](Knobs& k) { k.policy = NanPolicy::satfinite; });
  change("block size", [](Knobs& k) { k.size = 16; });
  change("block axis", [](Knobs& k) { k.axis = 0; });
  change("element layout", [](Knobs& k) { k.q_layout = Layout::col_major(); });
  change("scale layout", [](Knobs& k) { k.s_layout = Layout::blocked_8x4(); });
  change("scale layout linear", [](Knobs& k) { k.s_layout = Layout::linear(); });
  change("expression constant", [](Knobs& k) { k.constant = 3.0; });
  change("tiny constant change", [](Knobs& k) { k.constant = 2.0000002384185791; });  // next FP32 after 2
  change("input dtype", [](Knobs& k) { k.dtype = DType::f16; });
  change("stochastic rounding", [](Knobs& k) { k.sr = true; });
  change("SR seed", [](Knobs& k) { k.sr = true; k.seed = 1; });
  change("output name", [](Knobs& k) { k.q_name = "codes"; });

  std::set<std::string> seen = {build(base).hash().hex()};
  for (const auto& change_case : changes) {  // INFO takes no structured binding before clang 16
    const std::string& what = change_case.first;
    const auto& k = change_case.second;
    INFO("change: " << what);
    const std::string h = build(k).hash().hex();
    CHECK(h != build(base).hash().hex());
    CHECK(seen.insert(h).second);  // and each change differs from every other
  }
  // A constant that rounds to the same FP32 is the same pipeline (constants are stored as FP32).
  Knobs same = base;
  same.constant = 2.00000000001;
  CHECK(build(same).hash() == build(base).hash());
  // The seed is ignored under round-to-nearest.
  Knobs seed_only = base;
  seed_only.seed = 99;
  CHECK(build(seed_only).hash() == build(base).hash());
}

TEST_CASE("hash: the text form's semantic changes change the hash") {
  const std::vector<std::string> specs = {
      "bf16[2] -> mxfp8.e4m3",
      "f16[2] -> mxfp8.e4m3",
      "bf16[3] -> mxfp8.e4m3",
      "bf16[2] -> mxfp8.e5m2",
      "bf16[2] -> mxfp8.e4m3 rceil",
      "bf16[2] -> mxfp8.e4m3 satfinite",
      "bf16[2] -> mxfp8.e4m3 blocks(1,16)",
      "bf16[2] -> mxfp8.e4m3 blocks(0,32)",
      "bf16[2] -> mxfp8.e4m3 groups(1,offs)",
      "bf16[2] -> mxfp8.e4m3 groups(1,ends)",
      "bf16[2] -> mxfp8.e4m3 sr(0,0)",
      "bf16[2] -> mxfp8.e4m3 sr(1,0)",
      "bf16[2] -> mxfp8.e4m3 sr(1,1)",
      "bf16[2] -> mxfp8.e4m3 flush",
      "bf16[2] -> mxfp8.e4m3 q:col_major",
      "bf16[2] -> mxfp8.e4m3 s:blocked128x4",
      "bf16[2] -> mxfp8.e4m3 amax",
      "bf16[2] -> fp8.e4m3",
      "bf16[2] -> nvfp4",
      "bf16[2] -> nvfp4 torchao",
      "bf16[2] -> mxfp8.e4m3 ; mxfp8.e4m3",
  };
  std::set<std::string> seen;
  for (const std::string& s : specs) {
    INFO("spec: " << s);
    CHECK(seen.insert(parse_pipeline(s).hash().hex()).second);
  }
}

TEST_CASE("hash: golden value of one pipeline") {
  // GOLDEN. This pins the canonical IR text and its XXH3-128 digest. They are the kernel cache key:
  // if this test fails, the IR printing or hashing changed, every cached kernel is invalidated, and
  // the change must be deliberate (bump it here and say so in the change note).
  Expr x = input("x", DType::bf16, rank(2));
  Scale s2 = e8m0_scale(amax(blocks(x * 0.5, 0, 32)), e4m3, ScaleRule::rceil);
  Pipeline p = pipeline({output("q", cast(e4m3, (x * 0.5) / s2), layout::col_major()),
                         output("s", s2, layout::blocked_128x4()), output("amax", amax(x))});
  CHECK(p.str() ==
        "pipeline rank 2\n"
        "  in x bf16 r2 kind0 axis-1\n"
        "  out q elems u8 col_major = quantize[e4m3](mul(const[0x1p-1], input[x bf16 r2]), scale[e8m0 e4m3 rceil "
        "nan_block](amax(blocks[blocks(0,32)](mul(const[0x1p-1], input[x bf16 r2])))))\n"
        "  out s scales u8 blocked128x4 = scale[e8m0 e4m3 rceil nan_block](amax(blocks[blocks(0,32)](mul(const[0x1p-1], "
        "input[x bf16 r2]))))\n"
        "  out amax amax f32 row_major = tensor_amax(input[x bf16 r2])\n");
  CHECK(p.hash().hex() == "f6966810bb29bf277c01869f3996265a");
}
