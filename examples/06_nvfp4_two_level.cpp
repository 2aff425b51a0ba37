// Lesson 6: NVFP4 — two-level scaling, in both peers' conventions, bit-exact to each.
//
// NVFP4 stores E2M1 codes in 16-element blocks, an E4M3 scale per block, and an FP32 scale per
// tensor derived from the tensor amax. Transformer Engine and torchao round that chain
// differently, so mxjit offers both as named conventions: a checkpoint quantized by either can be
// reproduced exactly. On the GPU the tensor amax is a pre-pass kernel over the same value and the
// cast reads it from device memory: no host round trip.
//
//   TE:      s_enc = 2688/amax_t; scale = e4m3(amax_b * (s_enc / 6)); x * 1/(scale * 1/s_enc)
//   torchao: pt = amax_t/2688; scale = e4m3(clamp(amax_b/6/pt, 2^-6, 448)); clamp(x * (1/pt)/scale, ±6)
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  std::vector<example::Host> in;
  in.push_back(example::random_bf16({64, 256}, 7));
  std::vector<std::vector<example::Host>> results;
  for (Nvfp4Convention c : {Nvfp4Convention::te, Nvfp4Convention::torchao}) {
    auto x = input("x", DType::bf16, rank(2));
    auto s = nvfp4_scale(amax(blocks(x, 1, 16)), c);
    Pipeline p = pipeline({output("q", cast(e2m1, x / s)), output("s", s), output("amax", amax(x))});
    std::printf("%s: %s\n", c == Nvfp4Convention::te ? "TE     " : "torchao", to_text(p).c_str());
    results.push_back(example::run(p, in, {64, 256}));
  }
  int differ = 0;
  for (size_t i = 0; i < results[0][1].bytes.size(); ++i) differ += results[0][1].bytes[i] != results[1][1].bytes[i];
  std::printf("block scales that differ between the conventions: %d of %zu\n", differ, results[0][1].bytes.size());
  return 0;
}
