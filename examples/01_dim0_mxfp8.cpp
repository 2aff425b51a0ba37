// Lesson 1: the dim0 MXFP8 cast — the one every MX recipe starts with.
//
// Each run of 32 consecutive elements along the last (contiguous) axis shares one E8M0 scale,
// chosen by the RCEIL rule that NVIDIA's hardware, Transformer Engine and cuBLAS use. Elements
// are E4M3 codes written row-major; scales go straight into the 128x4 swizzled layout a
// block-scaled GEMM reads, so no second kernel rearranges them.
//
// The pipeline is a value: it prints, hashes, and has a one-line text form. jit() turns it into
// a CUDA kernel specialised for this rank and stride class, compiled once with NVRTC and kept in
// the SQLite cache; without a GPU the example still compiles it and runs the CPU reference.
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, /*axis=*/1, 32)), e4m3, ScaleRule::rceil);
  auto q = cast(e4m3, x / s);
  Pipeline p = pipeline({output("q", q), output("s", s, layout::blocked_128x4())});

  std::printf("text form: %s\nhash:      %s\n", to_text(p).c_str(), p.hash().hex().c_str());
  std::vector<example::Host> in;
  in.push_back(example::random_bf16({256, 512}, 1));
  std::vector<example::Host> out = example::run(p, in, {256, 512});
  std::printf("first scale byte 0x%02x (2^%d), first codes %02x %02x %02x %02x\n", out[1].bytes[0],
              int(out[1].bytes[0]) - 127, out[0].bytes[0], out[0].bytes[1], out[0].bytes[2], out[0].bytes[3]);
  return 0;
}
