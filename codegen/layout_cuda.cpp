// CUDA text for the layout offset function (codegen/layout_cuda.hpp).
#include "codegen/layout_cuda.hpp"

#include <fmt/format.h>

namespace mxjit::detail {
namespace {

/// lower_offset's arithmetic over CUDA expression text: unsigned 64-bit division and remainder
/// of non-negative indices (shifts and masks for powers of two), constants folded where trivial.
struct CudaArith {
  using Value = std::string;
  static Value constant(int64_t v) { return std::to_string(v); }
  static Value add(const Value& x, const Value& y) {
    if (x == "0") return y;
    if (y == "0") return x;
    return fmt::format("({} + {})", x, y);
  }
  static Value mul(const Value& x, const Value& y) {
    if (x == "0" || y == "0") return "0";
    if (x == "1") return y;
    if (y == "1") return x;
    return fmt::format("({} * {})", x, y);
  }
  static Value digit(const Value& i, int64_t div, int64_t ext) {
    std::string q = fmt::format("mx_u64({})", i);
    if (div != 1) q = fmt::format("({} / {}u)", q, div);
    if (ext > 0) q = fmt::format("({} % {}u)", q, ext);
    return fmt::format("mx_i64({})", q);
  }
  static Value extent(const Value& n, int64_t align, int64_t div) {
    std::string e = fmt::format("mx_u64({})", n);
    if (align != 1) e = fmt::format("(({} + {}u) / {}u * {}u)", e, align - 1, align, align);
    if (div != 1) e = fmt::format("({} / {}u)", e, div);
    return fmt::format("mx_i64({})", e);
  }
};

}  // namespace

std::string cuda_offset(const BoundLayout& l, const std::vector<std::string>& index, const std::vector<std::string>& shape) {
  CudaArith a;
  return lower_offset(a, l, index, shape);
}

bool generic_layout(const Output& o) {
  return o.kind == OutputKind::scales && !o.layout.grouped() && !is_blocked(o.layout) && !(o.bound.strided() && o.bound.pack == 1);
}

}  // namespace mxjit::detail
