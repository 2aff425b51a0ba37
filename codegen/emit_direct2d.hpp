#pragma once
/// \file The direct kernel's 2-D blocks (DirectPlan::block_rows > 1; emit_direct2d.cpp): the
/// block amax across the CTA, and codes stored transposed through a shared tile. Also the few
/// helpers the two direct-kernel files share.
#include <vector>

#include "codegen/emit_common.hpp"
#include "codegen/plan_rules.hpp"

namespace mxjit::detail {

/// The axes other than ax_c, outer to inner: the direct kernel's row axes.
std::vector<int> row_axes(const Plan& pl);
/// Whether tensor input k is read with 16-byte loads (unit stride along ax_c, aligned).
bool vec_input(const Ctx& x, int k);
/// The input whose loaded 16-byte words (r<k>_[u][0]) scale s's amax reads two lanes at a time:
/// its root is that bare bf16/f16 input, loaded by vectors; else -1. (An amax that ignores NaN
/// drops NaN lanes first: drops_nan.)
int words_input(const Ctx& x, int s);
/// Whether scale s's amax ignores NaN (the packed max drops NaN lanes first).
bool drops_nan(const Ctx& x, int s);

/// Scale s's block in the tile (block2d_kind of the plan layer; column blocks: mult<s>[e]).
Block2d block2d_kind(const Ctx& x, int s);
/// Whether scale s is computed per chunk in phase 2 (1-D blocks, the row blocks of 2-D tiles), not
/// once before it (tensorwise, tile and column blocks).
bool phase2_scale(const Ctx& x, int s);

/// Whether codes output o leaves the 2-D direct kernel transposed (ax_r innermost): its chunks'
/// codes wait in qt<o>[u] for emit_transposed_codes.
bool transposed_codes(const Ctx& x, int o);
/// The CTA's block amax (each thread's chunks, the warp, the warps through shared memory) and
/// every scale from it, once per thread; thread 0 stores the block's scales.
void emit_block2d_scales(Ctx& x);
/// Codes output o transposed: 8x8 byte transposes in registers, a shared tile, 16-byte stores
/// along the rows (after phase 2).
void emit_transposed_codes(Ctx& x, int o);

}  // namespace mxjit::detail
