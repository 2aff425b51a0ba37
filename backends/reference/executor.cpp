#include "backends/reference/executor.hpp"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <optional>
#include <utility>

#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "runtime/bindings.hpp"
#include "backends/reference/blocking.hpp"
#include "backends/reference/numerics.hpp"
#include "backends/reference/quantize.hpp"
#include "backends/reference/values.hpp"
#include "templates/mx_math.cuh"

namespace mxjit::reference {
namespace {

/// Every dequantize node under the outputs, by the name of its codes input.
void collect_dequant(const NodePtr& n, std::map<std::string, const Node*>& out) {
  if (n->op == Op::dequant) out[n->args[0]->name] = n.get();
  for (const NodePtr& a : n->args) collect_dequant(a, out);
}

void check_view(const std::string& what, const TensorView& v, DType dtype, int rank) {
  if (v.device != DeviceKind::cpu)
    throw UsageError(fmt::format("{}: the reference runs on host memory; got {}", what, v.describe()));
  if (v.dtype != dtype)
    throw UsageError(fmt::format("{}: dtype must be {}, got {}", what, dtype_name(dtype), dtype_name(v.dtype)));
  if (v.rank() != rank || int(v.strides.size()) != rank)
    throw UsageError(fmt::format("{}: rank must be {}, got {} ({})", what, rank, v.rank(), v.describe()));
  for (int a = 0; a < rank; ++a) {
    if (v.shape[a] < 0) throw UsageError(fmt::format("{}: extent {} of axis {} is negative", what, v.shape[a], a));
    if (v.strides[a] < 0)
      throw UsageError(fmt::format("{}: stride {} of axis {} is negative; views must have strides >= 0", what,
                                   v.strides[a], a));
  }
  if (v.data == nullptr && v.numel() > 0) throw UsageError(fmt::format("{}: data is null", what));
  detail::check_view_size(what, v);
}

void check_extents(const std::string& what, const TensorView& v, const std::vector<int64_t>& want) {
  if (v.shape != want)
    throw UsageError(fmt::format("{}: extents must be [{}], got [{}]", what, fmt::join(want, ","),
                                 fmt::join(v.shape, ",")));
}

std::string input_what(const InputDecl& d) { return fmt::format("input '{}'", d.name); }

/// Reads a 1-D int32 view.
std::vector<int32_t> read_i32(const TensorView& v) {
  std::vector<int32_t> out(static_cast<size_t>(v.shape[0]));
  for (int64_t i = 0; i < v.shape[0]; ++i) out[size_t(i)] = static_cast<const int32_t*>(v.data)[i * v.strides[0]];
  return out;
}

/// Stores FP32 `x` as `dtype` at element `offset`; NaN is written as the positive canonical
/// quiet NaN of the type.
void store_value(const TensorView& v, int64_t offset, float x) {
  if (std::isnan(x)) x = mx_qnan();
  switch (v.dtype) {
    case DType::bf16: static_cast<uint16_t*>(v.data)[offset] = f32_to_bf16_rne(x); return;
    case DType::f16: static_cast<uint16_t*>(v.data)[offset] = f32_to_f16_rne(x); return;
    case DType::f32: static_cast<float*>(v.data)[offset] = x; return;
    default: break;
  }
  throw Error(fmt::format("mxjit internal: store_value into a {} view", dtype_name(v.dtype)));
}

/// The state of one run: validated inputs, the evaluator and memoized partitions and scales.
class Run {
 public:
  Run(const Pipeline& p, std::span<const TensorView> inputs) : p_(p), inputs_(inputs) {
    domain_ = infer_domain(p, inputs);
    validate_inputs();
    eval_.emplace(p, inputs, domain_);
  }

  void write(size_t index, const TensorView& view) {
    const Output& o = p_.outputs()[index];
    const std::string what = fmt::format("output '{}'", o.name);
    int64_t groups = 0;
    if (o.kind == OutputKind::elems || o.kind == OutputKind::scales) {
      const BlockSpec& spec = block_of(o.node);
      if (spec.jagged()) groups = int64_t(ends_.at(spec.offsets).size());
    }
    if (o.layout.grouped()) groups = int64_t(ends_.at(o.layout.group_offsets()).size());
    const OutputGeometry g = output_geometry(p_, int(index), domain_, groups);
    check_view(what, view, o.dtype, int(g.view_shape.size()));
    check_extents(what, view, g.view_shape);
    for (size_t a = 0; a < g.view_shape.size() && view.numel() > 0; ++a)
      if (g.view_shape[a] > 1 && view.strides[a] != g.view_strides[a])
        throw UsageError(fmt::format("{}: strides must be [{}] (layout {}), got [{}]", what,
                                     fmt::join(g.view_strides, ","), o.layout.str(), fmt::join(view.strides, ",")));
    switch (o.kind) {
      case OutputKind::elems: write_elems(o, g, view); return;
      case OutputKind::scales: write_scales(o, g, view); return;
      case OutputKind::amax: store_value(view, 0, amax_of(eval_->values(o.node->args[0]), o.node->amax_nan)); return;
      case OutputKind::values: write_values(o, view); return;
    }
  }

 private:
  void validate_inputs() {
    std::map<std::string, const Node*> dequant;
    for (const Output& o : p_.outputs()) collect_dequant(o.node, dequant);
    const int rank = p_.rank();
    for (size_t i = 0; i < p_.inputs().size(); ++i) {
      const InputDecl& d = p_.inputs()[i];
      const TensorView& v = inputs_[i];
      const std::string what = input_what(d);
      switch (d.kind) {
        case InputDecl::Kind::tensor:
          check_view(what, v, d.dtype, rank);
          check_extents(what, v, domain_);
          break;
        case InputDecl::Kind::vector:
          check_view(what, v, d.dtype, 1);
          check_extents(what, v, {domain_[size_t(d.axis)]});
          break;
        case InputDecl::Kind::offsets: {
          check_view(what, v, DType::i32, 1);
          std::vector<int32_t> ends = read_i32(v);
          validate_group_ends(d.name, ends, domain_[size_t(d.axis)]);
          ends_[d.name] = std::move(ends);
          break;
        }
        case InputDecl::Kind::counts:
          check_view(what, v, DType::i32, 1);
          check_extents(what, v, {domain_[size_t(d.axis)]});
          counts_ = read_i32(v);
          validate_counts(d.name, counts_, domain_[size_t(p_.mask().axis)]);
          break;
        case InputDecl::Kind::codes: {
          check_view(what, v, DType::u8, rank);
          std::vector<int64_t> want = domain_;
          if (dequant.at(d.name)->elem.packed()) want[size_t(d.axis)] /= 2;
          check_extents(what, v, want);
          break;
        }
        case InputDecl::Kind::scales: {
          check_view(what, v, d.dtype, rank);
          const Node* dq = nullptr;
          for (auto& [name, node] : dequant)
            if (node->args[1]->name == d.name) dq = node;
          check_extents(what, v, scale_shape(dq->block, domain_));
          break;
        }
      }
    }
  }

  const BlockPartition& partition_of(const NodePtr& blocks) {
    auto it = partitions_.find(blocks.get());
    if (it != partitions_.end()) return it->second;
    const BlockSpec& spec = blocks->block;
    std::span<const int32_t> ends;
    if (spec.jagged()) ends = ends_.at(spec.offsets);
    return partitions_.emplace(blocks.get(), partition(spec, domain_, ends)).first->second;
  }

  /// The values a scale or quantize node sees: its blocks' value, flushed if asked.
  const std::vector<float>& block_values(const NodePtr& blocks, bool flush) {
    const std::vector<float>& v = eval_->values(blocks->args[0]);
    if (!flush) return v;
    auto it = flushed_.find(blocks->args[0].get());
    if (it != flushed_.end()) return it->second;
    std::vector<float> f = v;
    for (float& x : f) x = flush_subnormal(x);
    return flushed_.emplace(blocks->args[0].get(), std::move(f)).first->second;
  }

  const BlockScales& scales_of(const NodePtr& scale, bool flush) {
    const auto key = std::make_pair(scale.get(), flush);
    auto it = scales_.find(key);
    if (it != scales_.end()) return it->second;
    const NodePtr blocks = blocks_node_of(scale);
    BlockScales s = compute_scales(*scale, block_values(blocks, flush), partition_of(blocks));
    return scales_.emplace(key, std::move(s)).first->second;
  }

  /// A scale output uses flushed values when a cast with flush_subnormals uses that scale.
  bool scale_flushed(const NodePtr& scale) const {
    for (const Output& o : p_.outputs())
      if (o.kind == OutputKind::elems && o.node->args[1] == scale && o.node->flush_subnormals) return true;
    return false;
  }

  void write_elems(const Output& o, const OutputGeometry& g, const TensorView& view) {
    const NodePtr blocks = blocks_node_of(o.node);
    const bool flush = o.node->flush_subnormals;
    const std::vector<float>& values = block_values(blocks, flush);
    const BlockPartition& bp = partition_of(blocks);
    const std::vector<uint8_t> codes = quantize_elements(*o.node, values, bp, scales_of(o.node->args[1], flush));
    uint8_t* out = static_cast<uint8_t*>(view.data);
    const int rank = int(domain_.size());
    const std::vector<int64_t> dstride = row_major_strides(domain_);
    const int pa = g.packed_axis;
    std::vector<int64_t> idx(size_t(rank), 0);
    for (size_t lin = 0; lin < codes.size(); ++lin) {
      if ((pa < 0 || idx[pa] % 2 == 0) && !masked(p_.mask(), counts_, idx)) {
        int64_t off = 0;
        for (int a = 0; a < rank; ++a) off += (a == pa ? idx[a] / 2 : idx[a]) * view.strides[a];
        // FP4: element 2i in the low nibble, 2i+1 in the high nibble.
        out[off] = pa < 0 ? codes[lin]
                          : uint8_t((codes[lin] & 0x0F) | ((codes[lin + size_t(dstride[pa])] & 0x0F) << 4));
      }
      for (int a = rank - 1; a >= 0; --a) {
        if (++idx[a] < domain_[a]) break;
        idx[a] = 0;
      }
    }
  }

  void write_scales(const Output& o, const OutputGeometry& g, const TensorView& view) {
    const BlockScales& s = scales_of(o.node, scale_flushed(o.node));
    const std::vector<int64_t>& shape = g.logical_shape;
    const BoundLayout& l = o.bound;
    // Padding (an aligned axis, a grouped layout's bound) is zero: the output is zeroed whole where
    // this shape has any (as the GPU launcher does; masked rows then hold zeros too).
    // An empty output may have no buffer at all (data null): memset(nullptr, 0, 0) is undefined.
    if (g.padded && g.storage_bytes > 0)
      std::memset(view.data, 0, size_t(g.storage_bytes));
    // Grouped layouts: the group ends in scale units along the grouped axis.
    std::vector<int64_t> group_ends;
    if (o.layout.grouped()) {
      const int axis = o.layout.group_axis();
      group_ends = scale_group_ends(o.layout.group_offsets(), ends_.at(o.layout.group_offsets()),
                                    block_of(o.node).size_along(axis), domain_[size_t(axis)]);
    }
    const int rank = int(shape.size());
    std::vector<int64_t> idx(size_t(rank), 0);
    const int64_t n = product(shape);
    for (int64_t b = 0; b < n; ++b) {
      // The value offset (bytes of a packed word: little-endian, value i of a word is its byte i).
      // off < 0: a grouped layout's scale past the last group end, which is not stored.
      const int64_t off = masked(p_.mask(), counts_, idx) ? -1 : l.offset(idx, shape, group_ends);
      if (off >= 0 && !s.stored.empty()) store_value(view, off, s.stored[size_t(b)]);
      else if (off >= 0) static_cast<uint8_t*>(view.data)[off] = s.bytes[size_t(b)];
      for (int a = rank - 1; a >= 0; --a) {
        if (++idx[a] < shape[a]) break;
        idx[a] = 0;
      }
    }
  }

  void write_values(const Output& o, const TensorView& view) {
    const std::vector<float>& v = eval_->values(o.node);
    const std::vector<int64_t> offs = strided_offsets(domain_, view.strides);
    std::vector<int64_t> idx(domain_.size(), 0);
    for (size_t i = 0; i < offs.size(); ++i) {
      if (!masked(p_.mask(), counts_, idx)) store_value(view, offs[i], v[v.size() == 1 ? 0 : i]);
      for (int a = int(domain_.size()) - 1; a >= 0; --a) {
        if (++idx[size_t(a)] < domain_[size_t(a)]) break;
        idx[size_t(a)] = 0;
      }
    }
  }

  const Pipeline& p_;
  std::span<const TensorView> inputs_;
  std::vector<int64_t> domain_;
  std::optional<ValueEvaluator> eval_;
  std::map<std::string, std::vector<int32_t>> ends_;
  std::vector<int32_t> counts_;  ///< the mask's counts (Pipeline::mask())
  std::map<const Node*, BlockPartition> partitions_;
  std::map<const Node*, std::vector<float>> flushed_;
  std::map<std::pair<const Node*, bool>, BlockScales> scales_;
};

}  // namespace

std::vector<int64_t> infer_domain(const Pipeline& p, std::span<const TensorView> inputs) {
  if (inputs.size() != p.inputs().size()) {
    std::vector<std::string> names;
    for (const InputDecl& d : p.inputs()) names.push_back(d.name);
    throw UsageError(fmt::format("run: the pipeline takes {} inputs ({}) in this order, but {} were given",
                                 p.inputs().size(), fmt::join(names, ", "), inputs.size()));
  }
  std::map<std::string, const Node*> dequant;
  for (const Output& o : p.outputs()) collect_dequant(o.node, dequant);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (p.inputs()[i].kind == InputDecl::Kind::tensor) return inputs[i].shape;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputDecl& d = p.inputs()[i];
    if (d.kind != InputDecl::Kind::codes) continue;
    std::vector<int64_t> shape = inputs[i].shape;
    if (int(shape.size()) != p.rank())
      throw UsageError(fmt::format("input '{}': rank must be {}, got {}", d.name, p.rank(), shape.size()));
    if (dequant.at(d.name)->elem.packed()) shape[size_t(d.axis)] *= 2;
    return shape;
  }
  throw UsageError("run: the domain's extents cannot be inferred; the pipeline needs a full-rank tensor input or "
                   "dequantize codes");
}

void check_inputs(const Pipeline& p, std::span<const TensorView> inputs) { Run checked(p, inputs); }

void run(const Pipeline& p, std::span<const TensorView> inputs, std::span<const TensorView> outputs) {
  if (outputs.size() != p.outputs().size()) {
    std::vector<std::string> names;
    for (const Output& o : p.outputs()) names.push_back(o.name);
    throw UsageError(fmt::format("run: the pipeline has {} outputs ({}) in this order, but {} were given",
                                 p.outputs().size(), fmt::join(names, ", "), outputs.size()));
  }
  Run r(p, inputs);
  for (size_t i = 0; i < outputs.size(); ++i) r.write(i, outputs[i]);
}

}  // namespace mxjit::reference
