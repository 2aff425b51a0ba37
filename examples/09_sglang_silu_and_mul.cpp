// Lesson 9: a peer's fused prologue, op for op — SGLang's SiLU-and-mul before its 1x128 FP8 cast.
//
// SGLang's per_token_group_quant_8bit (v2) can fuse the MoE activation: it reads [T, 2H] rows, keeps
// T(silu(gate)) * up in the input's type (bf16), then casts 1x128 groups to FP8 with its own FP32
// scale. Keeping the intermediate in bf16 is part of its numerics: round_to says so.
//
//     v = round_to(round_to(silu(gate), bf16) * up, bf16)     // SGLang's `T val = T(silu(g)) * u`
//     s = scale(amax(blocks(v, 1, 128)), e4m3, recipes::sglang_group(e4m3, false))
//
// The same cast without round_to (lesson 4's FP32 product) gives other codes for some elements; this
// example counts them. One difference stays: SGLang's SiLU uses the GPU's approximate __expf on
// sm_90 (tanh on sm_100, by the research note), whose last bits the CPU reference does not model;
// mxjit's SiLU is its own exp, bit-identical on host and GPU.
#include "dsl/peer_recipes.hpp"
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  const int64_t T = 64, H = 384;
  auto gate = input("gate", DType::bf16, rank(2));
  auto up = input("up", DType::bf16, rank(2));
  auto cast_of = [&](const Expr& v) {
    auto s = scale(amax(blocks(v, 1, 128)), e4m3, recipes::sglang_group(e4m3, false));
    return pipeline({output("q", cast(e4m3, v / s, Round::nearest_even, Saturate::finite)), output("s", s, layout::mn_major_tma())});
  };
  const Pipeline kept = cast_of(round_to(round_to(silu(gate), DType::bf16) * up, DType::bf16));
  const Pipeline fp32 = cast_of(silu(gate) * up);
  // gate and up here are two tensors; the halves of one [T, 2H] tensor (views with row stride 2H, as
  // the fused kernel reads them) take the same kernel with other strides.
  std::vector<example::Host> in;
  in.push_back(example::random_bf16({T, H}, 9));
  in.push_back(example::random_bf16({T, H}, 10));
  std::vector<example::Host> a = example::run(kept, in, {T, H});
  std::vector<example::Host> b = example::run_cpu(fp32, in, {T, H});
  int codes = 0, scales = 0;
  for (size_t i = 0; i < a[0].bytes.size(); ++i) codes += a[0].bytes[i] != b[0].bytes[i];
  for (size_t i = 0; i < a[1].bytes.size(); i += 4) scales += std::memcmp(&a[1].bytes[i], &b[1].bytes[i], 4) != 0;
  std::printf("%lld x %lld codes: %d differ from the FP32 product's, and %d of %zu scales\n", (long long)T, (long long)H, codes,
              scales, a[1].bytes.size() / 4);
  return codes > 0 ? 0 : 1;  // the bf16 rounding of the intermediate changes some codes
}
