#pragma once
/// \file Any scale definition (dsl/dsl.hpp ScaleDef; ScaleRecipe::generic) as CUDA statements,
/// bit for bit the reference's reading of it (backends/reference/scale_expr.cpp):
///
///     amax    m: max |x| bits (NaN above 0x7f800000; dropped first with AmaxNan::ignore)
///     stored  S(amax_var)                 every + - * / one __f*_rn (never contracted)
///     bits    the format's encoding of S  (fp32 / bf16 RNE / E8M0 field / E4M3 RNE satfinite)
///     s^      the bits read back           (stored_var)
///     mult    F(amax_var, stored_var)      the block's factor
///     flag    2 where nan_if, else 1 where zero_if, else 0
///     y       __fmul_rn(x, mult) or __fdiv_rn(x, mult), then the clamp (NaN kept or dropped)
///
/// The library recipes (dsl/recipes.hpp) keep their tuned device functions; this is the path of
/// every other definition (the peers' of dsl/peer_recipes.hpp among them).
#include <string>

#include "dsl/ir.hpp"

namespace mxjit::detail {

/// True for a scale node whose definition is none of the library recipes.
bool generic_scale(const Node& scale);

/// Statements (each line prefixed by `indent`) turning `m`, the block's amax as FP32 bits, into
/// `flag`, `mult` and `byte` or `sval` (declared here, as scale_from_amax does: byte_scale) for
/// generic scale node `sn`: byte the E8M0/E4M3 scale byte, sval the fp32/bf16 stored scale as
/// read back (NaN as the kernels' canonical NaN on store), mult the factor, flag the block mode.
/// Without `stored` (no output stores the scale) sval is neither declared nor set; without
/// `coded` (no codes use it), mult. Throws Error on
/// a node that is no scale expression (the DSL refuses those).
std::string generic_scale_from_amax(const Node& sn, const std::string& indent, bool stored = true, bool coded = true);

/// C expression: FP32 element `x` scaled by `mult` under generic scale `sn` (one correctly
/// rounded multiply or divide, then the clamp with its NaN behaviour), ready for the cast.
std::string generic_scale_element(const Node& sn, const std::string& x, const std::string& mult);

/// C expression: `y` through generic scale `sn`'s clamp (with its NaN behaviour), or `y`.
std::string generic_scale_clamp(const Node& sn, const std::string& y);

/// Whether generic scale `sn`'s elements, clamp(x / mult) cast by a saturating RN conversion,
/// can take the bracketed division (emit_packed_codes): it divides, and its clamp's bounds are
/// neither NaN nor +-0 (then the clamp is monotone within each sign).
bool divide_bracketable(const Node& sn);

/// C expression: what the bracketed division applies to its end `y` (side 0: x times the
/// smaller reciprocal, 1: the larger) for generic scale `sn` cast to a saturating format whose
/// largest finite value is `elem_max`: the whole clamp where it binds finite values, else the
/// clamp's NaN rule on side 0 only (a NaN made -elem_max, whose code side 1's NaN never equals,
/// so a NaN falls to the division), else nothing (NaN stays NaN on both sides and in the division).
std::string bracket_end(const Node& sn, double elem_max, const std::string& y, int side);

/// The statement "if (u > 0x7f800000u) u = 0u; " dropping a NaN |x| bit pattern `u` from the
/// amax of scale `sn` when its AmaxNan is ignore (CUDA fmaxf's reduction), else "".
std::string amax_drop_nan(const Node& sn, const std::string& u);

}  // namespace mxjit::detail
