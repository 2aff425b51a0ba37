// Lesson 3: MXFP4 with a scale rule of your own.
//
// FP4 (E2M1) has only 8 magnitudes, so the choice of the shared exponent matters. The standard
// rules are parameters (FLOOR, RCEIL, CEIL, EVEN); a custom rule is an expression of the block's
// amax. Here: RCEIL with one exponent of headroom — the block's largest element lands at or below
// 3 instead of 6, trading a bit of resolution for room against outliers:
//
//     exponent = ceil(log2(amax / 6)) + 1
//
// Codes pack two per byte, the even element in the low nibble, exactly as torchao stores MXFP4.
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  auto x = input("x", DType::bf16, rank(2));
  auto rule = ceil_log2(amax_var() * (1.0 / 6.0)) + 1.0;
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e2m1, rule);
  Pipeline p = pipeline({output("q", cast(e2m1, x / s)), output("s", s)});

  // The same cast with plain RCEIL, to show the custom rule is one exponent higher.
  auto s_rceil = e8m0_scale(amax(blocks(x, 1, 32)), e2m1, ScaleRule::rceil);
  Pipeline p_rceil = pipeline({output("q", cast(e2m1, x / s_rceil)), output("s", s_rceil)});

  std::vector<example::Host> in;
  in.push_back(example::random_bf16({128, 256}, 3));
  std::vector<example::Host> custom = example::run(p, in, {128, 256});
  std::vector<example::Host> plain = example::run(p_rceil, in, {128, 256});
  int higher = 0;
  for (size_t i = 0; i < custom[1].bytes.size(); ++i) higher += custom[1].bytes[i] == plain[1].bytes[i] + 1;
  std::printf("blocks whose custom scale is RCEIL's + 1: %d of %zu\n", higher, custom[1].bytes.size());
  std::printf("packed bytes (two FP4 codes each): %02x %02x %02x %02x\n", custom[0].bytes[0], custom[0].bytes[1],
              custom[0].bytes[2], custom[0].bytes[3]);
  return higher == int(custom[1].bytes.size()) ? 0 : 1;
}
