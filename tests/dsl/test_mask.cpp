// Masked rows (Pipeline::mask()): the rules pipeline(outputs, mask) checks when it is built.
#include <doctest/doctest.h>

#include <string>

#include "dsl/errors.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/pipeline.hpp"

using namespace mxjit;

namespace {

std::string refusal(const std::vector<Output>& outs, const Mask& m) {
  try {
    pipeline(outs, m);
  } catch (const UsageError& e) {
    return e.what();
  }
  FAIL_CHECK("expected UsageError");
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// SGLang's 1x128 cast of x [E, T, K] (rank 3 unless given).
std::vector<Output> sglang(int r = 3, Layout sl = layout::linear()) {
  auto x = input("x", DType::bf16, rank(r));
  auto s = scale(amax(blocks(x, r - 1, 128)), e4m3, recipes::sglang_group(e4m3, false));
  return {output("q", cast(e4m3, x / s)), output("s", s, sl)};
}

}  // namespace

TEST_CASE("mask: a masked pipeline takes its counts last and hashes apart from the unmasked one") {
  const Pipeline p = pipeline(sglang(), mask(1, 0, "masked_m"));
  REQUIRE(p.inputs().size() == 2);
  CHECK(p.inputs()[1].name == "masked_m");
  CHECK(p.inputs()[1].kind == InputDecl::Kind::counts);
  CHECK(p.inputs()[1].dtype == DType::i32);
  CHECK(p.inputs()[1].axis == 0);
  CHECK(p.counts_input() == 1);
  CHECK(p.mask().axis == 1);
  CHECK(p.mask().by == 0);
  CHECK(has(p.str(), "mask axis1 by0 counts masked_m"));
  const Pipeline plain = pipeline(sglang());
  CHECK_FALSE(plain.mask().active());
  CHECK(plain.counts_input() == -1);
  CHECK(plain.hash() != p.hash());
  CHECK(pipeline(sglang(), mask(0, 1, "masked_m")).hash() != p.hash());
  CHECK(pipeline(sglang(), mask(1, 0, "masked_m")).hash() == p.hash());
  // Aligned and packed layouts place scales by their strides: they take a mask.
  CHECK_NOTHROW(pipeline(sglang(3, layout::mn_major_tma()), mask(1, 0, "m")));
  CHECK_NOTHROW(pipeline(sglang(4), mask(2, 0, "m")));  // [E, B, T, K]: any two axes but the blocks'
}

TEST_CASE("mask: refused axes, names and casts name the rule") {
  CHECK(has(refusal(sglang(1), mask(0, 0, "m")), "rank >= 2"));
  CHECK(has(refusal(sglang(), mask(3, 0, "m")), "axis 3 is outside"));
  CHECK(has(refusal(sglang(), mask(1, -2, "m")), "axis -2 is outside"));
  CHECK(has(refusal(sglang(), mask(1, 1, "m")), "must differ"));
  CHECK(has(refusal(sglang(), mask(1, 0, "")), "needs a name"));
  CHECK(has(refusal(sglang(), mask(1, 0, "x")), "'x' already names an input"));
  CHECK(has(refusal(sglang(), mask(1, 0, "q")), "'q' already names an output"));
  // Blocks along the masked or the counting axis.
  CHECK(has(refusal(sglang(), mask(2, 0, "m")), "span axis 2"));
  CHECK(has(refusal(sglang(), mask(1, 2, "m")), "span axis 2"));
  auto x = input("x", DType::bf16, rank(3));
  auto s2 = e8m0_scale(amax(blocks(x, {1, 2}, {32, 32})), e4m3, ScaleRule::rceil);
  CHECK(has(refusal({output("s", s2)}, mask(1, 0, "m")), "span axis 1"));
  // Jagged groups, tensor amaxes (an amax output, NVFP4's tensor scale), whole-tensor blocks.
  auto sj = e8m0_scale(amax(groups(x, 2, offsets("offs"))), e4m3, ScaleRule::floor);
  CHECK(has(refusal({output("s", sj)}, mask(1, 0, "m")), "jagged groups"));
  auto s = e8m0_scale(amax(blocks(x, 2, 32)), e4m3, ScaleRule::floor);
  CHECK(has(refusal({output("s", s), output("a", amax(x))}, mask(1, 0, "m")), "whole tensor"));
  auto n = nvfp4_scale(amax(blocks(x, 2, 16)), Nvfp4Convention::te);
  CHECK(has(refusal({output("q", cast(e2m1, x / n))}, mask(1, 0, "m")), "whole tensor"));
  // Layouts that place scales by rows and columns write the padding rows.
  CHECK(has(refusal({output("s", s, layout::blocked_128x4())}, mask(1, 0, "m")), "blocked"));
}
