#include "runtime/bindings.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit::detail {
namespace {

const char* device_name(DeviceKind d) { return d == DeviceKind::cuda ? "cuda" : "cpu"; }

std::string shape_text(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

// `name` says which argument; messages are formatted only on failure (launch is a hot path).
struct Arg {
  const char* kind;
  const std::string& name;
  std::string str() const { return fmt::format("{} '{}'", kind, name); }
};

void check_common(const Arg& arg, const TensorView& v, DType dtype, size_t rank, DeviceKind device) {
  auto what = [&] { return arg.str(); };
  if (v.dtype != dtype)
    throw UsageError(fmt::format("{}: dtype is {} but the pipeline declares {}", what(), dtype_name(v.dtype),
                                 dtype_name(dtype)));
  if (v.shape.size() != rank)
    throw UsageError(fmt::format("{}: rank is {} but the pipeline declares rank {}", what(), v.shape.size(), rank));
  if (v.strides.size() != v.shape.size())
    throw UsageError(fmt::format("{}: has {} strides for {} extents", what(), v.strides.size(), v.shape.size()));
  for (size_t a = 0; a < v.shape.size(); ++a) {
    if (v.shape[a] < 0) throw UsageError(fmt::format("{}: extent {} of axis {} is negative", what(), v.shape[a], a));
    if (v.strides[a] < 0 || (v.strides[a] == 0 && v.shape[a] > 1 && v.numel() > 0))
      throw UsageError(fmt::format("{}: stride {} of axis {} is not positive; mxjit reads positive strides only",
                                   what(), v.strides[a], a));
  }
  if (v.device != device)
    throw UsageError(fmt::format("{}: is on {} but this launch runs on {}", what(), device_name(v.device),
                                 device_name(device)));
  check_view_size(what(), v);
  if (v.numel() > 0 && v.data == nullptr) throw UsageError(fmt::format("{}: data pointer is null", what()));
  if (reinterpret_cast<uintptr_t>(v.data) % dtype_size(dtype) != 0)
    throw UsageError(fmt::format("{}: data pointer is not aligned to its {}-byte element", what(), dtype_size(dtype)));
}

// Byte range [lo, hi) a view can touch.
std::pair<uintptr_t, uintptr_t> extent_bytes(const TensorView& v) {
  uintptr_t lo = reinterpret_cast<uintptr_t>(v.data);
  return {lo, lo + uintptr_t(span_bytes(v))};
}

bool packed_in(const NodePtr& n, const std::string& codes) {
  if (n->op == Op::dequant && n->args[0]->name == codes) return n->elem.packed();
  for (const NodePtr& a : n->args)
    if (packed_in(a, codes)) return true;
  return false;
}

bool codes_packed(const Pipeline& p, const std::string& codes) {
  for (const Output& o : p.outputs())
    if (packed_in(o.node, codes)) return true;
  return false;
}

// Bytes `v` can touch from its base, or nullopt where that count overflows int64.
std::optional<int64_t> checked_span_bytes(const TensorView& v) {
  for (int64_t e : v.shape)
    if (e == 0) return 0;
  std::optional<int64_t> last = 0;
  for (size_t a = 0; a < v.shape.size() && last; ++a) {
    const std::optional<int64_t> step = checked_mul(v.shape[a] - 1, v.strides[a]);
    last = step ? checked_add(*last, *step) : std::nullopt;
  }
  if (last) last = checked_add(*last, 1);
  if (last) last = checked_mul(*last, int64_t(dtype_size(v.dtype)));
  return last;
}

[[noreturn]] void throw_past_address_space(const std::string& what, const TensorView& v) {
  throw UsageError(fmt::format("{}: extents [{}] with strides [{}] reach past the end of the address space", what,
                               fmt::join(v.shape, ","), fmt::join(v.strides, ",")));
}

}  // namespace

int64_t span_bytes(const TensorView& v) {
  const std::optional<int64_t> bytes = checked_span_bytes(v);
  if (!bytes) throw_past_address_space("view", v);
  return *bytes;
}

void check_view_size(const std::string& what, const TensorView& v) {
  checked_element_count(what, v.shape);
  if (v.numel() == 0) return;
  // The last byte a view addresses must be representable, or the offsets computed from its
  // strides would wrap.
  const std::optional<int64_t> last = checked_span_bytes(v);
  if (!last || uint64_t(*last) > UINTPTR_MAX - reinterpret_cast<uintptr_t>(v.data)) throw_past_address_space(what, v);
}

Binding check_bindings(const Pipeline& p, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                       DeviceKind device) {
  if (inputs.size() != p.inputs().size())
    throw UsageError(fmt::format("launch: {} inputs given but the pipeline takes {}", inputs.size(), p.inputs().size()));
  if (outputs.size() != p.outputs().size())
    throw UsageError(fmt::format("launch: {} outputs given but the pipeline writes {}", outputs.size(),
                                 p.outputs().size()));
  Binding b;
  // The domain: the first full-rank input (codes inputs are packed along their block axis).
  for (size_t k = 0; k < inputs.size() && b.shape.empty(); ++k) {
    const InputDecl& d = p.inputs()[k];
    if (d.kind == InputDecl::Kind::tensor || d.kind == InputDecl::Kind::codes) {
      b.shape = inputs[k].shape;
      // FP4 codes hold two elements per byte along the block axis.
      if (d.kind == InputDecl::Kind::codes && codes_packed(p, d.name) && d.axis >= 0 && size_t(d.axis) < b.shape.size())
        b.shape[size_t(d.axis)] *= 2;
    }
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    const InputDecl& d = p.inputs()[k];
    const Arg what{"input", d.name};
    const TensorView& v = inputs[k];
    switch (d.kind) {
      case InputDecl::Kind::tensor:
        check_common(what, v, d.dtype, size_t(d.rank), device);
        if (v.shape != b.shape)
          throw UsageError(fmt::format("{}: shape {} differs from the domain {}", what.str(), shape_text(v.shape),
                                       shape_text(b.shape)));
        break;
      case InputDecl::Kind::vector:
        check_common(what, v, d.dtype, 1, device);
        if (v.shape[0] != b.shape.at(size_t(d.axis)))
          throw UsageError(fmt::format("{}: length {} differs from the domain's extent {} along axis {}", what.str(),
                                       v.shape[0], b.shape[size_t(d.axis)], d.axis));
        break;
      case InputDecl::Kind::offsets:
        check_common(what, v, DType::i32, 1, device);
        b.groups = std::max(b.groups, v.shape[0]);  // every grouped layout's padded rows must fit the launch's bound
        break;
      case InputDecl::Kind::counts:
        check_common(what, v, DType::i32, 1, device);
        if (v.shape[0] != b.shape.at(size_t(d.axis)))
          throw UsageError(fmt::format("{}: {} counts, but mask() takes one per index of axis {} ({} of them)", what.str(),
                                       v.shape[0], d.axis, b.shape[size_t(d.axis)]));
        break;
      case InputDecl::Kind::codes:
      case InputDecl::Kind::scales:
        check_common(what, v, d.dtype, size_t(d.rank), device);
        break;
    }
  }
  b.empty = std::any_of(b.shape.begin(), b.shape.end(), [](int64_t e) { return e == 0; });
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Output& out = p.outputs()[o];
    const Arg what{"output", out.name};
    // A grouped scale layout's size bound counts the groups of its own offsets input.
    int64_t groups = b.groups;
    if (out.layout.grouped()) groups = inputs[size_t(p.input_index(out.layout.group_offsets()))].shape.at(0);
    OutputGeometry g = output_geometry(p, int(o), b.shape, groups);
    const TensorView& v = outputs[o];
    check_common(what, v, out.dtype, g.view_shape.size(), device);
    if (v.shape != g.view_shape)
      throw UsageError(fmt::format("{}: shape {} but {} needs {}{}", what.str(), shape_text(v.shape), out.layout.str(),
                                   shape_text(g.view_shape),
                                   g.packed_axis >= 0 ? fmt::format(" (FP4: two codes per byte along axis {})", g.packed_axis) : ""));
    for (size_t a = 0; a < v.shape.size() && v.numel() > 0; ++a)
      if (v.shape[a] > 1 && v.strides[a] != g.view_strides[a])
        throw UsageError(fmt::format("{}: strides {} do not match layout {} (expected {})", what.str(),
                                     shape_text(v.strides), out.layout.str(), shape_text(g.view_strides)));
    auto r = extent_bytes(v);
    for (size_t i = 0; i < ranges.size(); ++i)
      if (r.first < ranges[i].second && ranges[i].first < r.second && r.first != r.second)
        throw UsageError(fmt::format("{}: overlaps output '{}'", what.str(), p.outputs()[i].name));
    for (size_t k = 0; k < inputs.size(); ++k) {
      auto ir = extent_bytes(inputs[k]);
      if (r.first < ir.second && ir.first < r.second && r.first != r.second)
        throw UsageError(fmt::format("{}: overlaps input '{}' (mxjit does not cast in place)", what.str(),
                                     p.inputs()[k].name));
    }
    ranges.push_back(r);
    b.outputs.push_back(std::move(g));
  }
  // Stride class: each input's unit-stride axis and whether 16-byte vectors are safe.
  for (const TensorView& v : inputs) {
    const ViewClass c = view_class(v.shape, v.strides, v.dtype);
    b.unit_axis.push_back(c.unit);
    b.strides_aligned.push_back(c.strides_aligned);
    b.aligned.push_back(c.strides_aligned && reinterpret_cast<uintptr_t>(v.data) % 16 == 0);
  }
  return b;
}

ViewClass view_class(std::span<const int64_t> shape, std::span<const int64_t> strides, DType dtype) {
  ViewClass c;
  for (int a = int(shape.size()) - 1; a >= 0; --a)
    if (strides[size_t(a)] == 1 && shape[size_t(a)] > 1) { c.unit = a; break; }
  if (c.unit < 0 && !shape.empty() && strides.back() == 1) c.unit = int(shape.size()) - 1;
  c.strides_aligned = c.unit >= 0;
  // Modulo 2^64 (16 divides it): an empty view's strides may be huge, their product in bytes past int64.
  for (size_t a = 0; a < shape.size(); ++a)
    if (int(a) != c.unit && shape[a] > 1 && uint64_t(strides[a]) * dtype_size(dtype) % 16 != 0) c.strides_aligned = false;
  return c;
}

}  // namespace mxjit::detail
