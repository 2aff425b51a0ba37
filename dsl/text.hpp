#pragma once
/// \file The short text form of a pipeline, for the command line and logs (docs/design.md §3).
///
/// One line (newlines count as whitespace) of whitespace-separated tokens:
///
///     spec    := input '->' cast { ';' cast } [ 'amax' ]
///     input   := dtype '[' rank ']'                 dtype: bf16 | f16 | f32; the input is named x
///     cast    := recipe { option }                  options in any order, each at most once
///     recipe  := mxfp8.e4m3 | mxfp8.e5m2 | mxfp6.e2m3 | mxfp6.e3m2 | mxfp4.e2m1 | mxint8
///                                                   E8M0 scales (e8m0_scale)
///              | nvfp4                              E4M3 block scale + FP32 tensor scale (nvfp4_scale)
///              | fp8.e4m3 | fp8.e5m2                FP32 scales (f32_scale)
///     option  := floor | rceil | ceil | even        scale rule; E8M0 recipes only; default floor
///              | nan_block | satfinite              NaN/Inf block policy; E8M0 recipes only; default nan_block
///              | te | torchao                       NVFP4 convention; nvfp4 only; default te
///              | blocks(axis,size)                  1-D blocks; size `whole`: one block per whole axis
///              | blocks(axis0,axis1,size0xsize1)    2-D blocks, e.g. blocks(0,1,32x32), blocks(0,1,wholex128)
///              | scale(key=value, ...)              a scale definition (ScaleDef; dsl/text_scale.hpp): the
///                                                   recipe then gives only the element format
///              | nosat                              Saturate::none (torch's .to(): beyond range -> NaN/Inf)
///              | groups(axis,offsets_name)          jagged groups; ends in int32 input offsets_name
///              | sr(seed,offset)                    stochastic rounding (default: nearest even)
///              | flush                              FP32 subnormal inputs become +-0 first
///              | q:layout                           elements' layout; default row_major
///              | s:layout                           scales' layout; default linear
///     layout  := row_major | col_major | expert_col_major | perm(a,b,...) | linear
///              | blocked128x4 | blocked8x4          (as Layout::parse)
///              | grouped_blocked128x4(axis,offsets_name)
///                                                   per-group 128x4 scales (s: only); adds the int32
///                                                   input offsets_name (group ends along axis)
///
/// Defaults when no blocks/groups option is given: 1-D blocks of 32 along the last axis (16 for
/// nvfp4). Whitespace may appear inside parentheses; `;` and `->` need no surrounding spaces.
/// Numbers are unsigned decimal. The trailing `amax` adds output `amax` = amax(x).
///
/// Outputs, in order: cast 0 writes `q` and `s`, cast k >= 1 writes `q<k>` and `s<k>`, then `amax`.
/// Each cast is exactly what the C++ DSL builds, so a spec and its C++ spelling hash the same:
///
///     auto x = input("x", DType::bf16, rank(2));
///     auto s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);   // NanPolicy::nan_block
///     pipeline({output("q", cast(e4m3, x / s), layout::col_major()),
///               output("s", s, layout::blocked_128x4())});
///     // == parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4")
///
/// Canonical form (what to_text prints): every option spelled out, in the order
///     recipe [te|torchao] [rule policy] [scale(...)] blocks|groups [sr(seed,offset)] [flush] [nosat] q:layout s:layout
/// with casts joined by " ; " and the scale layout row_major spelled `linear`. Examples:
///
///     bf16[2] -> mxfp8.e4m3 floor nan_block blocks(1,32) q:row_major s:linear
///     f32[3] -> mxfp4.e2m1 rceil satfinite blocks(1,32) q:perm(0,2,1) s:blocked128x4
///     bf16[2] -> nvfp4 torchao blocks(0,1,16x16) sr(7,3) q:row_major s:linear amax
///     bf16[2] -> fp8.e4m3 groups(0,offs) q:row_major s:linear ; mxfp8.e5m2 even nan_block blocks(0,32) q:col_major s:linear
///     bf16[2] -> fp8.e4m3 blocks(1,whole) q:row_major s:linear
///     bf16[2] -> fp8.e4m3 scale(stored=div(fmax(amax,1e-10),448), factor=stored, apply=divide, clamp=ignore_nan(-448,448), amax_nan=ignore) blocks(1,128) q:row_major s:linear
///
/// A cast whose scale is a library recipe prints as that recipe; any other definition (a peer's,
/// a custom E8M0 exponent) prints as scale(...) after fp8.* (E4M3, E5M2 elements) or mx*.
///
/// Errors are UsageError with the 1-based line and column and a caret under the offending token:
///
///     spec:1:23: unknown rule 'rceli' (expected floor, rceil, ceil, even)
///       bf16[2] -> mxfp8.e4m3 rceli blocks(0,32)
///                             ^
///
/// DSL misuse found while building (a block axis out of range, an FP4 layout whose innermost axis
/// is not the block axis, ...) is reported the same way, at the token that asked for it, with the
/// DSL's own message.
#include <string>
#include <string_view>

#include "dsl/pipeline.hpp"

namespace mxjit {

/// Parses the short text form (grammar above) into the pipeline the C++ DSL would build.
/// Throws UsageError "spec:LINE:COL: message" followed by the source line and a caret line.
Pipeline parse_pipeline(std::string_view text);

/// Prints `p` in canonical short text form; `parse_pipeline(to_text(p)).hash() == p.hash()`.
/// Throws UsageError "this pipeline has no short text form: <why>" when `p` is not one input `x`
/// cast by recipes with outputs q/s, q1/s1, ... and an optional `amax`.
std::string to_text(const Pipeline& p);

}  // namespace mxjit
