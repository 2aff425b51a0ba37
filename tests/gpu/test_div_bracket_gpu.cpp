// The bracketed division on the GPU (templates/mx_math.cuh mx_div_bracket; codegen
// emit_packed_codes): dividing scale definitions (vLLM's x / s, and the same with a clamp that
// binds, one that keeps NaN, none, E5M2) against the CPU reference, byte for byte with poisoned
// outputs, on every bf16 value (and every 8th f16 value) in the scaled range of a sweep of block
// amaxes: each row of 128 holds its amax first, then the values of magnitude amax * 2^-19 ..
// amax of both signs, so every value lands on every rounding boundary its scale has. NaN, +-Inf,
// -0 and all-zero rows among them; the same values in 128x1 blocks (the columns kernel). Skips
// without a GPU.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstring>

#include "gpu/check.hpp"
#include "support/peer_casts.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

/// Rows of 128 16-bit patterns (bf16 or f16): for every `a_step`-th finite magnitude A, rows
/// starting with A (alternately -A) and filled with every `x_step`-th magnitude in
/// [A * 2^-19, A] of both signs (zero-padded); every 5th row ends in a NaN (the recipes' amax
/// skips it), and a few rows of +-Inf, -0 and zeros.
std::vector<uint16_t> sweep_rows(bool f16, uint32_t a_step, uint32_t x_step) {
  const uint32_t inf = f16 ? 0x7c00u : 0x7f80u, mant = f16 ? 1024u : 128u, nan = f16 ? 0x7e00u : 0x7fc0u;
  std::vector<uint16_t> v;
  int64_t row = 0;
  auto finish_row = [&] {
    while (v.size() % 128) v.push_back(0);
    if (row++ % 5 == 4) v.back() = uint16_t(nan);
  };
  for (uint32_t a = 1; a < inf; a += a_step) {
    const uint32_t lo = a > 19 * mant ? a - 19 * mant : 0;
    v.push_back(uint16_t(a | (row % 2 ? 0x8000u : 0u)));
    for (uint32_t x = lo; x <= a; x += x_step)
      for (uint32_t sign : {0u, 0x8000u}) {
        v.push_back(uint16_t(x | sign));
        if (v.size() % 128 == 0) {
          finish_row();
          v.push_back(uint16_t(a));
        }
      }
    finish_row();
  }
  for (uint32_t special : {inf, inf | 0x8000u, 0x8000u, 0u})
    for (int i = 0; i < 128; ++i) v.push_back(uint16_t(i % 3 == 0 ? special : (i * 37) & 0x3fff));
  return v;
}

}  // namespace

TEST_CASE("bracketed division gpu: dividing recipes, every 16-bit value in the scaled range of swept block amaxes") {
  MXJIT_REQUIRE_GPU();
  struct Def {
    std::string name;
    ElemFormat elem;
    ScaleDef def;
  };
  std::vector<Def> defs = {{"vllm e4m3", e4m3, recipes::vllm_group(e4m3, false)},
                           {"vllm e5m2", e5m2, recipes::vllm_group(e5m2, false)}};
  ScaleDef binds = recipes::vllm_group(e4m3, false);
  binds.clamp_lo = -300, binds.clamp_hi = 300;
  defs.push_back({"vllm e4m3, clamp +-300", e4m3, binds});
  binds.clamp = Clamp::propagate_nan;
  defs.push_back({"vllm e4m3, clamp +-300 keeping NaN", e4m3, binds});
  ScaleDef none = recipes::vllm_group(e4m3, false);
  none.clamp = Clamp::none;
  defs.push_back({"vllm e4m3, no clamp", e4m3, none});
  int n = 0;
  for (DType dt : {DType::bf16, DType::f16}) {
    const std::vector<uint16_t> rows = dt == DType::bf16 ? sweep_rows(false, 13, 1) : sweep_rows(true, 97, 8);
    HostTensor t(dt, {int64_t(rows.size() / 128), 128});
    std::memcpy(t.bytes.data(), rows.data(), rows.size() * 2);
    for (const Def& d : defs) {
      const Pipeline p = peer_cast(PeerDef{d.name, d.def}, d.elem, PeerShape::dim0, dt, 2);
      const Kernel k = jit(p);
      CHECK(k.source().find("mx_div_bracket(mult") != std::string::npos);
      std::vector<HostTensor> in{t};
      CHECK(check_against_reference(k, in, fmt::format("{} {} [{}, 128]", d.name, dtype_name(dt), t.v.shape[0])) == 0);
      ++n;
    }
    // 128x1 blocks (the columns kernel): each sweep row a column.
    HostTensor tt(dt, {128, t.v.shape[0]});
    for (int64_t r = 0; r < t.v.shape[0]; ++r)
      for (int64_t c = 0; c < 128; ++c)
        std::memcpy(tt.bytes.data() + 2 * (c * t.v.shape[0] + r), &rows[size_t(r * 128 + c)], 2);
    const Kernel k = jit(peer_cast(PeerDef{"vllm", recipes::vllm_group(e4m3, false)}, e4m3, PeerShape::dim1, dt, 2));
    CHECK(k.source().find("mx_div_bracket(mult") != std::string::npos);
    std::vector<HostTensor> in{tt};
    CHECK(check_against_reference(k, in, fmt::format("vllm e4m3 128x1 {} [128, {}]", dtype_name(dt), t.v.shape[0])) ==
          0);
    ++n;
  }
  MESSAGE(n << " casts");
}
