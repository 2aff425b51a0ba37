// Lesson 4: a fused prologue — SwiGLU followed by the MXFP8 cast, in one kernel.
//
// In an MoE FFN the activation silu(gate) * up is cast to MXFP8 before the down projection.
// Unfused, that is one kernel writing the bf16 product and another reading it back to cast it.
// Here the product is an expression in the pipeline: the kernel reads gate and up once, computes
// silu(gate) * up in FP32 (mxjit's own exp, bit-identical on host and GPU), takes the block amax
// of the product and writes codes and scales — the bf16 intermediate never touches memory.
// The tensor amax of the product comes out too (for logging or a delayed-scaling recipe).
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  auto gate = input("gate", DType::bf16, rank(2));
  auto up = input("up", DType::bf16, rank(2));
  auto h = swiglu(gate, up);
  auto s = e8m0_scale(amax(blocks(h, 1, 32)), e4m3, ScaleRule::rceil);
  Pipeline p = pipeline({output("q", cast(e4m3, h / s)), output("s", s, layout::blocked_128x4()),
                         output("amax", amax(h))});
  std::printf("inputs, in kernel order:");
  for (const InputDecl& in : p.inputs()) std::printf(" %s", in.name.c_str());
  std::printf("\n");
  std::vector<example::Host> in;
  in.push_back(example::random_bf16({128, 256}, 4));
  in.push_back(example::random_bf16({128, 256}, 5));
  std::vector<example::Host> out = example::run(p, in, {128, 256});
  float amax_value;
  std::memcpy(&amax_value, out[2].bytes.data(), 4);
  std::printf("amax of silu(gate) * up: %g\n", double(amax_value));
  return amax_value > 0 ? 0 : 1;
}
