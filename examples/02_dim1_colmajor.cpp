// Lesson 2: the dim1 cast, written column-major directly.
//
// The backward pass needs X^T in MXFP8 with blocks running down the columns of X. Peers do
// `x.t().contiguous()` and a second cast; here the blocks run along axis 0 and the element output
// is declared column-major, so one kernel reads X once (coalesced along its rows), reduces down the
// columns in shared memory and writes each column's codes contiguously. The scales use the
// MN-major variant of the 128x4 layout automatically (rows = the non-block axis).
//
// The same pipeline is also given as text, parsed, and checked to hash identically.
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, /*axis=*/0, 32)), e4m3, ScaleRule::floor);
  Pipeline p = pipeline({output("q", cast(e4m3, x / s), layout::col_major()), output("s", s, layout::blocked_128x4())});

  Pipeline from_text = parse_pipeline("bf16[2] -> mxfp8.e4m3 floor blocks(0,32) q:col_major s:blocked128x4");
  std::printf("C++ and text form hash alike: %s\n", p.hash() == from_text.hash() ? "yes" : "NO");
  if (p.hash() != from_text.hash()) return 1;

  std::vector<example::Host> in;
  in.push_back(example::random_bf16({320, 192}, 2));
  std::vector<example::Host> out = example::run(p, in, {320, 192});
  std::printf("codes of column 0 (first 4 rows): %02x %02x %02x %02x\n", out[0].bytes[0], out[0].bytes[1],
              out[0].bytes[2], out[0].bytes[3]);
  return 0;
}
