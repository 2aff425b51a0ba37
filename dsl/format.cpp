#include "dsl/format.hpp"

#include <fmt/format.h>

#include "dsl/errors.hpp"

namespace mxjit {

std::string ElemFormat::str() const {
  if (!name.empty()) return std::string(name);
  return fmt::format("fp({},{})", ebits, mbits);
}

ElemFormat fp_format(int ebits, int mbits) {
  if (ebits < 1 || ebits > 5 || mbits < 0 || mbits > 5 || 1 + ebits + mbits > 8)
    throw UsageError(fmt::format(
        "fp_format(ebits={}, mbits={}): a user element format needs 1 <= ebits <= 5, 0 <= mbits <= 5 "
        "and 1 + ebits + mbits <= 8 bits",
        ebits, mbits));
  for (const ElemFormat& f : {e4m3, e5m2, e2m3, e3m2, e2m1})
    if (f.ebits == ebits && f.mbits == mbits && f.specials == Specials::none) return f;
  return ElemFormat{"", ebits, mbits, Specials::none};
}

ElemFormat elem_format_named(std::string_view name) {
  for (const ElemFormat& f : {e4m3, e5m2, e2m3, e3m2, e2m1, int8})
    if (f.name == name) return f;
  throw UsageError(fmt::format("unknown element format '{}': expected one of e4m3, e5m2, e2m3, e3m2, e2m1, int8",
                               name));
}

std::string_view scale_format_name(ScaleFormat f) {
  switch (f) {
    case ScaleFormat::e8m0: return "e8m0";
    case ScaleFormat::e4m3: return "e4m3";
    case ScaleFormat::f32: return "f32";
    case ScaleFormat::bf16: return "bf16";
  }
  return "?";
}

ScaleFormat scale_format_named(std::string_view name) {
  for (ScaleFormat f : {ScaleFormat::e8m0, ScaleFormat::e4m3, ScaleFormat::f32, ScaleFormat::bf16})
    if (scale_format_name(f) == name) return f;
  throw UsageError(fmt::format("unknown scale format '{}': expected one of e8m0, e4m3, f32, bf16", name));
}

}  // namespace mxjit
