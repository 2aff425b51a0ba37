#pragma once
// The peers' FP8 recipes (dsl/peer_recipes.hpp) as casts for the generator's tests: every peer
// with and without power-of-two scales, stored as FP32 and (the power-of-two ones) as E8M0, one
// as bf16 and one as E4M3; in 1x128 groups, 128x1 groups or 128x128 tiles of the last two axes.
#include <string>
#include <vector>

#include "dsl/peer_recipes.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::test {

/// A peer's definition, its name and the saturation its cast uses.
struct PeerDef {
  std::string name;
  ScaleDef def;
  Saturate sat = Saturate::finite;
};

/// Every peer recipe for `elem` (DeepGEMM's with torch's non-saturating cast).
inline std::vector<PeerDef> peer_defs(ElemFormat elem) {
  std::vector<PeerDef> v;
  for (bool p2 : {false, true}) {
    const std::string s = p2 ? " ue8m0" : "";
    v.push_back({"deepgemm" + s, recipes::deepgemm(elem, p2), Saturate::none});
    v.push_back({"vllm" + s, recipes::vllm_group(elem, p2)});
    v.push_back({"sglang" + s, recipes::sglang_group(elem, p2)});
    v.push_back({"te" + std::string(p2 ? " pow2" : ""), recipes::transformer_engine(elem, p2)});
  }
  v.push_back({"torchao", recipes::torchao_blockwise(elem)});
  for (size_t i = 0, n = v.size(); i < n; ++i)
    if (v[i].name.find("ue8m0") != std::string::npos || v[i].name.find("pow2") != std::string::npos) {
      PeerDef e = v[i];
      e.name += " as e8m0";
      e.def.format = ScaleFormat::e8m0;
      v.push_back(e);
    }
  ScaleDef b = recipes::transformer_engine(elem, false);
  b.format = ScaleFormat::bf16;
  v.push_back({"te as bf16", b});
  ScaleDef q = recipes::torchao_blockwise(elem);
  q.format = ScaleFormat::e4m3;
  v.push_back({"torchao as e4m3", q});
  return v;
}

/// The block shapes: 1x128 along the last axis, 128x1 along the one before, 128x128 tiles.
enum class PeerShape { dim0, dim1, tiles };
inline const char* shape_name(PeerShape s) {
  return s == PeerShape::dim0 ? "1x128" : s == PeerShape::dim1 ? "128x1" : "128x128";
}

/// The cast of a rank-`r` input of `dt` under `d` in blocks of `shape` (codes row-major, or with
/// the block axis innermost for 128x1 groups: column-major, expert_col_major in 3-D) with its
/// scales in `scales`.
inline Pipeline peer_cast(const PeerDef& d, ElemFormat elem, PeerShape shape, DType dt = DType::bf16, int r = 2,
                          Layout scales = layout::linear()) {
  auto x = input("x", dt, rank(r));
  const Blocks b = shape == PeerShape::dim0   ? blocks(x, r - 1, 128)
                   : shape == PeerShape::dim1 ? blocks(x, r - 2, 128)
                                              : blocks(x, {r - 2, r - 1}, {128, 128});
  auto s = scale(amax(b), elem, d.def);
  return pipeline({output("q", cast(elem, x / s, Round::nearest_even, d.sat),
                          shape != PeerShape::dim1 ? layout::row_major() : r == 2 ? layout::col_major() : layout::expert_col_major()),
                   output("s", s, scales)});
}

}  // namespace mxjit::test
