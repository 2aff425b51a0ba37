// The peers' scale layouts the kernels write by strides (dsl/layouts.cpp), on the GPU against
// the CPU reference byte for byte, padding included: DeepGEMM's MN-major TMA-aligned scales
// (mn_major_tma: FP32 and E8M0 bytes, rows padded to 4, zero) for dim0 and dim1 casts, batched,
// and Transformer Engine's GEMM_READY 2-D scales of 128x128 tiles (gemm_ready_2d / _t, the
// tile columns or rows padded to 4). Row- and column-major inputs (direct and tiled kernels),
// tails, random and adversarial values; outputs poisoned (reference 0xA5, GPU 0x5A) so an
// unwritten padding byte is a mismatch; the guard bytes after each output must stay untouched.
// Packed UE8M0 words (mn_major_tma_packed) and other split layouts: the tiled kernel, through the
// layout's offset function (codegen/layout_cuda.hpp).
// Skips without a GPU.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "gpu/check.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

/// Runs `p` on an input of `shape` (column-major storage when `col_major`), random then
/// adversarial values; returns the bad bytes.
int64_t check(const Pipeline& p, DType dt, const std::vector<int64_t>& shape, bool col_major, const std::string& label) {
  int64_t bad = 0;
  for (bool adversarial : {false, true}) {
    std::vector<int64_t> strides;
    if (col_major && shape.size() == 2) strides = {1, shape[0]};
    std::vector<HostTensor> in;
    in.emplace_back(dt, shape, strides);
    fill_random(in.back(), 0x5eed + shape[0] * 7 + shape.back(), adversarial);
    bad += check_against_reference(jit(p), in, fmt::format("{} [{}]{}", label, fmt::join(shape, ","),
                                                           adversarial ? " adversarial" : ""));
  }
  return bad;
}

}  // namespace

TEST_CASE("mn_major_tma scales on the GPU: FP32 and E8M0, dim0 and dim1, tails and batches") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  for (DType dt : {DType::bf16, DType::f32})
    for (int block_axis : {1, 0})
      for (const std::vector<int64_t>& shape :
           {std::vector<int64_t>{512, 1024}, {130, 384}, {5, 128}, {1000, 7168 / 8}, {257, 640}}) {
        auto x = input("x", dt, rank(2));
        const Layout q_layout = block_axis == 1 ? layout::row_major() : layout::col_major();
        auto f = f32_scale(amax(blocks(x, block_axis, 128)), e4m3);
        auto s = e8m0_scale(amax(blocks(x, block_axis, 32)), e4m3, ScaleRule::rceil);
        const Pipeline pf = pipeline({output("q", cast(e4m3, x / f), q_layout), output("s", f, layout::mn_major_tma())});
        const Pipeline ps = pipeline({output("q", cast(e4m3, x / s), q_layout), output("s", s, layout::mn_major_tma()),
                                      output("s_linear", s)});
        for (bool col_major : {false, true}) {
          bad += check(pf, dt, shape, col_major, fmt::format("fp32 mn_major_tma, blocks along {}", block_axis));
          bad += check(ps, dt, shape, col_major, fmt::format("e8m0 mn_major_tma, blocks along {}", block_axis));
        }
      }
  auto x3 = input("x", DType::bf16, rank(3));
  auto f3 = f32_scale(amax(blocks(x3, 2, 128)), e4m3);
  bad += check(pipeline({output("q", cast(e4m3, x3 / f3)), output("s", f3, layout::mn_major_tma())}), DType::bf16,
               {3, 130, 512}, false, "fp32 mn_major_tma, batched");
  CHECK(bad == 0);
}

TEST_CASE("gemm_ready_2d scales on the GPU: 128x128 tiles, rowwise and columnwise, partial tiles") {
  MXJIT_REQUIRE_GPU();
  int64_t bad = 0;
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{512, 1024}, {300, 1000}, {128, 128}, {7168 / 4, 1664}}) {
    auto x = input("x", DType::bf16, rank(2));
    auto t = f32_scale(amax(blocks(x, {0, 1}, {128, 128})), e4m3);
    const Pipeline p = pipeline({output("q", cast(e4m3, x / t)), output("r", t, layout::gemm_ready_2d()),
                                 output("c", t, layout::gemm_ready_2d_t())});
    for (bool col_major : {false, true}) bad += check(p, DType::bf16, shape, col_major, "gemm_ready_2d + _t");
  }
  CHECK(bad == 0);
}

TEST_CASE("packed UE8M0 and split-axis scale layouts on the GPU (the offset function): dim0, dim1, batched") {
  MXJIT_REQUIRE_GPU();
  const std::vector<Layout> layouts = {
      layout::mn_major_tma_packed(),
      layout::modes({layout::rest, layout::rows / 16, layout::cols, layout::rows % 16}).align(layout::cols, 3)};
  int64_t bad = 0;
  for (const Layout& l : layouts)
    for (int block_axis : {1, 0})
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{512, 1024}, {130, 1152}, {5, 128}, {257, 640}}) {
        auto x = input("x", DType::bf16, rank(2));
        auto s = e8m0_scale(amax(blocks(x, block_axis, 128)), e4m3, ScaleRule::ceil);
        const Layout q_layout = block_axis == 1 ? layout::row_major() : layout::col_major();
        const Pipeline p = pipeline({output("q", cast(e4m3, x / s), q_layout), output("s", s, l), output("s_linear", s)});
        for (bool col_major : {false, true})
          bad += check(p, DType::bf16, shape, col_major, fmt::format("{}, blocks along {}", l.str(), block_axis));
      }
  auto x3 = input("x", DType::bf16, rank(3));
  auto s3 = e8m0_scale(amax(blocks(x3, 2, 128)), e4m3, ScaleRule::ceil);
  bad += check(pipeline({output("q", cast(e4m3, x3 / s3)), output("s", s3, layout::mn_major_tma_packed())}), DType::bf16,
               {3, 130, 512}, false, "packed, batched");
  CHECK(bad == 0);
}
