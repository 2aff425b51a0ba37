#pragma once
// Tensorwise casts for the generator's tests (codegen and GPU): the whole tensor as one block and
// torchao's Float8 tensorwise cast of it.
#include "dsl/pipeline.hpp"

namespace mxjit::test {

/// The whole tensor (rank 1 or 2; `blocks` spans at most two axes) as one block.
inline Blocks whole(const Expr& x) {
  return x.rank() == 1 ? blocks(x, 0, kWholeAxis) : blocks(x, {0, 1}, {kWholeAxis, kWholeAxis});
}

/// Codes of `elem` in layout `q` and the FP32 scale of input "x" tensorwise (torchao's Float8
/// tensorwise recipe with options `o`).
inline Pipeline tensorwise(DType dt, int r, F32ScaleOptions o = {}, ElemFormat elem = e4m3,
                           Layout q = layout::row_major()) {
  auto x = input("x", dt, rank(r));
  auto s = f32_scale(amax(whole(x)), elem, o);
  return pipeline({output("q", cast(elem, x / s), q), output("s", s)});
}

}  // namespace mxjit::test
