// Lesson 5: MoE expert weights (E, N, K), cast along N and written per-expert column-major, with
// scales straight in the batched 128x4 layout a grouped block-scaled GEMM reads.
//
// The weight gradient / backward GEMM wants each expert's (N, K) matrix as K-major MXFP8 with
// 32-element blocks running along N. One launch covers all experts (the expert index is a batch
// axis of the grid, so the cost is linear in E); each CTA reads a tile once, reduces down the
// columns in shared memory and writes every column's codes contiguously. Scales: for expert e,
// row k, block j of N/32, offset = e*Rp*Cp + the 128x4 atom formula with rows = K, cols = N/32.
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  auto w = input("w", DType::bf16, rank(3));
  auto s = e8m0_scale(amax(blocks(w, /*axis=*/1, 32)), e4m3, ScaleRule::rceil);
  Pipeline p = pipeline({output("q", cast(e4m3, w / s), layout::expert_col_major()),
                         output("s", s, layout::blocked_128x4())});
  const std::vector<int64_t> shape = {4, 96, 160};  // E = 4 experts, N = 96, K = 160
  for (size_t o = 0; o < 2; ++o) {
    OutputGeometry g = output_geometry(p, int(o), shape);
    std::printf("%s: %lld bytes (%s)\n", p.outputs()[o].name.c_str(), (long long)g.storage_bytes,
                p.outputs()[o].layout.str().c_str());
  }
  std::vector<example::Host> in;
  in.push_back(example::random_bf16(shape, 6));
  std::vector<example::Host> out = example::run(p, in, shape);
  // Expert 1, column k = 0 starts at 1*N*K: the codes of w[1, 0..N, 0] are contiguous.
  std::printf("expert 1, column 0, first codes: %02x %02x %02x\n", out[0].bytes[96 * 160], out[0].bytes[96 * 160 + 1],
              out[0].bytes[96 * 160 + 2]);
  return 0;
}
