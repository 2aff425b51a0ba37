#pragma once
/// \file Scale definitions (ScaleDef, dsl/dsl.hpp) in the short text form (dsl/text.hpp): the
/// `scale(...)` option of a cast, its scale expressions, and the error reporting both share.
///
///     scale(key=value, ...)   keys in any order, each at most once; `stored` is required
///       stored=<value>        FP32 expression of amax (and tamax) written to the scale output
///       factor=<value>        what elements are multiplied (divided) by; default div(1,stored)
///       zero_if=<cond>        blocks whose codes are all +0; default never
///       nan_if=<cond>         blocks whose codes are all NaN; default never
///       format=f32|bf16|e8m0|e4m3             default f32
///       apply=multiply|divide                 default multiply
///       clamp=none|propagate_nan(lo,hi)|ignore_nan(lo,hi)|ignore_nan_hi(lo,hi)    default none
///       amax_nan=propagate|ignore             default propagate
///
///     value := number | amax | tamax | stored | op(value, ...) | where(cond, value, value)
///              op: add sub mul div max min fmax fmin neg abs floor_log2 floor_log2(x,bits)
///                  ceil_log2 exp2 pow2_floor pow2_ceil              (the DSL's functions)
///     cond  := never | isnan(v) | isinf(v) | eq(v,v) | lt(v,v) | le(v,v)
///              | and(c,c) | or(c,c) | not(c)
///     number: decimal (1e-10, 448, -inf) or hexadecimal (0x1.cp+8), rounded to FP32 as the
///             DSL's constants are
///
/// e.g. vLLM's per-token-group FP8 scale:
///
///     scale(stored=div(fmax(amax,1e-10),448), factor=stored, apply=divide,
///           clamp=ignore_nan(-448,448), amax_nan=ignore)
#include <string>
#include <string_view>
#include <vector>

#include "dsl/dsl.hpp"

namespace mxjit::text_detail {

/// Throws UsageError "spec:LINE:COL: msg" followed by the source line and a caret under byte
/// `at` of `src` (control characters shown as \xNN).
[[noreturn]] void fail_at(std::string_view src, size_t at, const std::string& msg);

/// One argument of a call token `head(arg, ...)`, trimmed; `at` is its byte offset in the source.
struct Arg {
  std::string_view text;
  size_t at = 0;
};

/// The ScaleDef of the arguments of a `scale(...)` token (grammar above). Errors name the key
/// or the operation at its byte in `src`.
ScaleDef parse_scale_def(std::string_view src, const std::vector<Arg>& args);

/// `scale(...)` text of scale node `scale`, parts equal to their defaults left out; parsing it
/// gives the same definition.
std::string scale_def_text(const Node& scale);

}  // namespace mxjit::text_detail
