// A program outside the mxjit tree, built against the installed package only: declares the dim1
// MXFP8 cast, compiles it for sm_90a with NVRTC (no GPU needed), runs the CPU reference on a small
// input and checks bytes it can predict. Exit status 0 on success; prints why otherwise.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mxjit/mxjit.hpp"
#include "runtime/swizzle.hpp"
#ifdef CONSUMER_HAVE_LLVM
#include "backends/llvm/cpu_backend.hpp"
#endif

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "consumer: %s\n", what);
  return 1;
}

uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);  // the values below are exact in bf16
}

}  // namespace

int main() {
  using namespace mxjit;
  try {
    auto x = input("x", DType::bf16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
    Pipeline p = pipeline({output("q", cast(e4m3, x / s), layout::col_major()), output("s", s)});
    if (to_text(p) != "bf16[2] -> mxfp8.e4m3 rceil nan_block blocks(0,32) q:col_major s:linear")
      return fail("unexpected text form");
    if (parse_pipeline(to_text(p)).hash() != p.hash()) return fail("text form does not hash the same");

    Kernel k = jit(p, Target::parse("sm_90a"));  // NVRTC compile (or a SQLite hit); loads only with a GPU
    if (k.source().find("__global__") == std::string::npos) return fail("no kernel in the generated source");

    // 64 x 4 input: column c holds c+1 everywhere except one 448*(c+1) per 32-row block.
    const int64_t M = 64, K = 4;
    std::vector<uint16_t> xin(size_t(M * K));
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < K; ++c) xin[size_t(r * K + c)] = bf16_bits(float(c + 1) * (r % 32 == 5 ? 448.0f : 1.0f));
    std::vector<uint8_t> q(size_t(M * K)), sc(size_t(2 * K));
    TensorView xv = TensorView::contiguous(xin.data(), DType::bf16, {M, K});
    OutputGeometry gq = output_geometry(p, 0, xv.shape), gs = output_geometry(p, 1, xv.shape);
    TensorView qv = TensorView::strided(q.data(), DType::u8, gq.view_shape, gq.view_strides);
    TensorView sv = TensorView::strided(sc.data(), DType::u8, gs.view_shape, gs.view_strides);
    reference::run(p, std::vector<TensorView>{xv}, std::vector<TensorView>{qv, sv});
    // RCEIL: amax 448*(c+1) -> scale 2^ceil(log2(c+1)): bytes 127, 128, 129, 129.
    const uint8_t want_scale[4] = {127, 128, 129, 129};
    for (int64_t c = 0; c < K; ++c)
      if (sc[size_t(c)] != want_scale[c] || sc[size_t(K + c)] != want_scale[c]) return fail("wrong scale byte");
    if (q[size_t(5)] != 0x7E) return fail("the block maximum is not E4M3 448 (0x7E)");  // col-major: (5, 0)
#ifdef CONSUMER_HAVE_LLVM
    if (cpu::cpu_backend_available()) {
      std::vector<uint8_t> q2(q.size()), s2(sc.size());
      TensorView qv2 = TensorView::strided(q2.data(), DType::u8, gq.view_shape, gq.view_strides);
      TensorView sv2 = TensorView::strided(s2.data(), DType::u8, gs.view_shape, gs.view_strides);
      cpu::cpu_jit(p)({&xv, 1}, std::vector<TensorView>{qv2, sv2});
      if (q2 != q || s2 != sc) return fail("the LLVM CPU backend differs from the reference");
    }
#endif
    std::vector<uint8_t> blocked(size_t(swizzled_size(std::vector<int64_t>{2, K})));
    swizzle_scales(sv, TensorView::contiguous(blocked.data(), DType::u8, {int64_t(blocked.size())}));
    std::printf("consumer: %s hash %s, compiled for sm_90a, reference checked\n", to_text(p).c_str(),
                p.hash().hex().c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "consumer: mxjit error: %s\n", e.what());
    return 1;
  }
}
