#include "dsl/pipeline.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit {

namespace {

/// Whether a mode splits an axis (a sub-axis i / d % e other than the whole axis).
bool splits(const Layout& l) {
  for (const Mode& m : l.modes())
    if (m.div != 1 || m.ext != 0) return true;
  return false;
}

}  // namespace

Output output(std::string name, Quantized q, Layout layout) {
  if (!layout.is_permutation())
    throw UsageError(fmt::format("output('{}'): {} is a scale layout; elements take row_major, col_major, "
                                 "expert_col_major or perm(...)", name, layout.str()));
  return Output{std::move(name), OutputKind::elems, q.node(), std::move(layout), DType::u8};
}

Output output(std::string name, Scale s, Layout layout) {
  const ScaleFormat f = s.node()->scale_format;
  const char* what = f == ScaleFormat::f32 ? "FP32" : f == ScaleFormat::bf16 ? "bf16" : "byte scales";
  DType dt = f == ScaleFormat::f32 ? DType::f32 : f == ScaleFormat::bf16 ? DType::bf16 : DType::u8;
  if (layout.packing() > 1) {
    if (int(dtype_size(dt)) * layout.packing() != 4)
      throw UsageError(fmt::format("output('{}'): {} packs {} scales into one 32-bit word, which takes {}-byte scales; "
                                   "these are {} ({} bytes)", name, layout.str(), layout.packing(), 4 / layout.packing(),
                                   what, dtype_size(dt)));
    dt = DType::i32;
  }
  if (splits(layout) && (f == ScaleFormat::f32 || f == ScaleFormat::bf16))
    throw UsageError(fmt::format("output('{}'): {} holds byte scales (E8M0/E4M3); {} scales take a permuted "
                                 "layout, optionally aligned (e.g. mn_major_tma)", name, layout.str(), what));
  return Output{std::move(name), OutputKind::scales, s.node(), std::move(layout), dt};
}

Output output(std::string name, Amax a) {
  if (a.node()->op != Op::tensor_amax)
    throw UsageError(fmt::format("output('{}'): a block amax is not an output; output the scale, or amax(x) of a "
                                 "whole tensor", name));
  return Output{std::move(name), OutputKind::amax, a.node(), Layout::row_major(), DType::f32};
}

Output output(std::string name, Expr v, DType dtype, Layout layout) {
  if (dtype != DType::bf16 && dtype != DType::f16 && dtype != DType::f32)
    throw UsageError(fmt::format("output('{}'): values are stored as bf16, f16 or f32, not {}", name,
                                 dtype_name(dtype)));
  if (v.rank() == 0) throw UsageError(fmt::format("output('{}'): the value is a scalar constant", name));
  if (!layout.is_permutation())
    throw UsageError(fmt::format("output('{}'): {} is a scale layout", name, layout.str()));
  return Output{std::move(name), OutputKind::values, v.node(), std::move(layout), dtype};
}

int Pipeline::input_index(const std::string& name) const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (inputs_[i].name == name) return int(i);
  return -1;
}

namespace {

struct Collector {
  std::vector<InputDecl> inputs;
  std::map<std::string, size_t> index;
  int rank = 0;

  void add(InputDecl d) {
    auto it = index.find(d.name);
    if (it == index.end()) {
      index[d.name] = inputs.size();
      inputs.push_back(std::move(d));
      return;
    }
    const InputDecl& e = inputs[it->second];
    if (e.dtype != d.dtype || e.rank != d.rank || e.kind != d.kind || e.axis != d.axis)
      throw UsageError(fmt::format("input '{}' is declared twice with different dtype, rank or role ({} r{} vs {} r{})",
                                   d.name, dtype_name(e.dtype), e.rank, dtype_name(d.dtype), d.rank));
  }

  void domain(const std::string& name, int r) {
    if (rank == 0) rank = r;
    else if (rank != r)
      throw UsageError(fmt::format("input '{}' has rank {} but the pipeline's other inputs have rank {}; all "
                                   "full-rank inputs share one domain", name, r, rank));
  }

  void walk(const NodePtr& n) {
    switch (n->op) {
      case Op::input:
        domain(n->name, n->rank);
        add({n->name, n->dtype, n->rank, InputDecl::Kind::tensor});
        return;
      case Op::vec_input:
        domain(n->name, n->rank);
        add({n->name, n->dtype, 1, InputDecl::Kind::vector, n->axis});
        return;
      case Op::dequant:
        domain(n->args[0]->name, n->rank);
        add({n->args[0]->name, DType::u8, n->rank, InputDecl::Kind::codes, n->block.axes[0]});
        add({n->args[1]->name, n->args[1]->dtype, n->rank, InputDecl::Kind::scales, n->block.axes[0]});
        return;
      case Op::blocks:
        walk(n->args[0]);
        if (n->block.jagged()) add({n->block.offsets, DType::i32, 1, InputDecl::Kind::offsets, n->block.axes[0]});
        return;
      case Op::scale:
        // The scale's expressions are functions of the amaxes, not of inputs.
        walk(n->args[kScaleAmax]);
        if (const NodePtr& t = tensor_amax_of(*n)) walk(t);
        return;
      default:
        for (const NodePtr& a : n->args) walk(a);
    }
  }
};

}  // namespace

const char* kind_name(OutputKind k) {
  switch (k) {
    case OutputKind::elems: return "elems";
    case OutputKind::scales: return "scales";
    case OutputKind::amax: return "amax";
    case OutputKind::values: return "values";
  }
  return "?";
}

NodePtr blocks_node_of(const NodePtr& n) {
  if (n->op == Op::quantize) return blocks_node_of(n->args[1]);
  if (n->op == Op::scale) return n->args[0]->args[0];
  if (n->op == Op::block_amax) return n->args[0];
  if (n->op == Op::blocks) return n;
  throw Error(fmt::format("mxjit internal: node '{}' has no blocks", op_name(n->op)));
}

const BlockSpec& block_of(const NodePtr& n) { return blocks_node_of(n)->block; }

std::vector<int64_t> scale_shape(const BlockSpec& spec, const std::vector<int64_t>& shape, int64_t groups) {
  std::vector<int64_t> s = shape;
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    int a = spec.axes[i];
    s[a] = spec.jagged() ? groups
           : spec.sizes[i] == kWholeAxis ? std::min<int64_t>(shape[a], 1)
                                         : ceil_div(shape[a], spec.sizes[i]);
  }
  return s;
}

std::pair<int, int> blocked_axes(const BlockSpec& spec, int rank) {
  int col = spec.axes.at(0);
  int row = -1;
  for (int a = rank - 1; a >= 0; --a)
    if (a != col) { row = a; break; }
  return {row, col};
}

std::pair<int, int> layout_roles(const Output& o, int rank) {
  if (o.kind != OutputKind::scales) return {-1, -1};
  const BlockSpec& spec = block_of(o.node);
  if (spec.axes.size() != 1 || spec.jagged()) return {-1, -1};
  return blocked_axes(spec, rank);
}

namespace {

/// Whether `n` or a node under it takes a tensor-wide amax.
bool takes_tensor_amax(const NodePtr& n) {
  if (n->op == Op::tensor_amax) return true;
  if (n->op == Op::scale && tensor_amax_of(*n)) return true;
  for (const NodePtr& a : n->args)
    if (takes_tensor_amax(a)) return true;
  return false;
}

/// The rules of Pipeline::mask() (pipeline(outputs, mask)'s UsageErrors).
void check_mask(const Mask& m, const std::vector<Output>& outputs, const std::vector<InputDecl>& inputs, int rank) {
  const std::string what = fmt::format("mask({}, {}, '{}')", m.axis, m.by, m.counts);
  if (rank < 2) throw UsageError(fmt::format("{}: masks rows of a domain of rank >= 2; this one has rank {}", what, rank));
  for (int a : {m.axis, m.by})
    if (a < 0 || a >= rank) throw UsageError(fmt::format("{}: axis {} is outside the domain's rank {}", what, a, rank));
  if (m.axis == m.by) throw UsageError(fmt::format("{}: the masked axis and the counting axis must differ", what));
  if (m.counts.empty()) throw UsageError(fmt::format("{}: the counts input needs a name", what));
  for (const InputDecl& in : inputs)
    if (in.name == m.counts) throw UsageError(fmt::format("{}: '{}' already names an input of the pipeline", what, m.counts));
  for (const Output& o : outputs) {
    if (o.name == m.counts) throw UsageError(fmt::format("{}: '{}' already names an output", what, m.counts));
    if (o.kind == OutputKind::amax || takes_tensor_amax(o.node))
      throw UsageError(fmt::format("output '{}': takes an amax over the whole tensor, which {} leaves undefined (its "
                                   "masked rows are not read); cast without a mask, or with per-block scales", o.name, what));
    if (o.kind != OutputKind::elems && o.kind != OutputKind::scales) continue;
    const BlockSpec& b = block_of(o.node);
    if (b.jagged())
      throw UsageError(fmt::format("output '{}': jagged groups ({}) do not combine with {}", o.name, b.str(), what));
    for (int a : {m.axis, m.by})
      if (b.blocks_axis(a))
        throw UsageError(fmt::format("output '{}': its blocks {} span axis {}, which {} cuts per index of axis {}; blocks "
                                     "must lie along the other axes", o.name, b.str(), a, what, m.by));
    if (o.kind == OutputKind::scales && (detail::is_blocked(o.layout) || o.layout.grouped()))
      throw UsageError(fmt::format("output '{}': layout {} writes its scales in atoms of several rows (padding rows as zero), "
                                   "which {} leaves unwritten; use a strided, aligned or packed layout (linear, mn_major_tma, "
                                   "mn_major_tma_packed)", o.name, o.layout.str(), what));
  }
}

}  // namespace

Pipeline pipeline(std::vector<Output> outputs) { return pipeline(std::move(outputs), Mask{}); }

Pipeline pipeline(std::vector<Output> outputs, Mask mask) {
  if (outputs.empty()) throw UsageError("pipeline: needs at least one output");
  if (outputs.size() > size_t(kMaxOutputs))
    throw UsageError(fmt::format("pipeline: {} outputs; a pipeline has at most {} (split the casts over several "
                                 "pipelines)", outputs.size(), kMaxOutputs));
  Collector c;
  std::set<std::string> names;
  for (const Output& o : outputs) {
    if (o.name.empty()) throw UsageError("pipeline: an output has an empty name");
    if (!names.insert(o.name).second) throw UsageError(fmt::format("pipeline: two outputs are named '{}'", o.name));
    c.walk(o.node);
    // A grouped scale layout reads its group ends from an offsets input of its own.
    if (o.layout.grouped())
      c.add({o.layout.group_offsets(), DType::i32, 1, InputDecl::Kind::offsets, o.layout.group_axis()});
  }
  for (const InputDecl& in : c.inputs)
    if (names.count(in.name))
      throw UsageError(fmt::format("pipeline: '{}' names both an input and an output", in.name));
  if (c.rank == 0) throw UsageError("pipeline: no output depends on an input tensor");
  for (Output& o : outputs) {
    if (o.node->rank != 0 && o.node->rank != c.rank)
      throw UsageError(fmt::format("output '{}': rank {} differs from the domain rank {}", o.name, o.node->rank, c.rank));
    const bool scale_blocks = o.kind == OutputKind::scales || o.kind == OutputKind::elems;
    if (o.layout.uses_roles() && o.kind == OutputKind::scales && c.rank >= 2 &&
        (block_of(o.node).axes.size() != 1 || block_of(o.node).jagged()))
      throw UsageError(fmt::format("output '{}': {} needs 1-D fixed-size blocks (one scale axis)", o.name,
                                   o.layout.str()));
    const auto [row, col] = layout_roles(o, c.rank);
    if (o.layout == Layout::expert_col_major() && c.rank < 2)  // per expert: an expert axis and a matrix
      throw UsageError(fmt::format("output '{}': expert_col_major needs rank >= 2, got rank {}", o.name, c.rank));
    try {
      o.bound = o.layout.bind(o.kind == OutputKind::amax ? 1 : c.rank, row, col);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("output '{}': {}", o.name, e.what()));
    }
    if (o.layout.grouped() && scale_blocks && o.layout.group_axis() != row && o.layout.group_axis() != col)
      throw UsageError(fmt::format("output '{}': {} groups axis {}, but the scales' rows axis is {} and their "
                                   "columns (block) axis is {}; groups split one of them",
                                   o.name, o.layout.str(), o.layout.group_axis(), row, col));
    if (o.kind == OutputKind::elems && o.node->elem.packed()) {
      // FP4 packs pairs along the innermost stored axis; that axis must be a block axis so that
      // a pair never straddles an odd tail (its extent is checked at launch).
      int inner = o.bound.order().back();
      if (block_of(o.node).jagged())
        throw UsageError(fmt::format("output '{}': FP4 codes need fixed blocks ({} are jagged groups, whose odd sizes "
                                     "would split the byte pairs); cast to an 8-bit format",
                                     o.name, block_of(o.node).str()));
      if (!block_of(o.node).blocks_axis(inner))
        throw UsageError(fmt::format(
            "output '{}': FP4 packs two codes per byte along the innermost stored axis ({}), which must be the "
            "block axis ({}); choose a layout whose innermost axis is the block axis",
            o.name, inner, block_of(o.node).str()));
    }
  }
  if (mask.active() || mask.by >= 0 || !mask.counts.empty()) {
    check_mask(mask, outputs, c.inputs, c.rank);
    c.add({mask.counts, DType::i32, 1, InputDecl::Kind::counts, mask.by});
  }
  Pipeline p;
  p.outputs_ = std::move(outputs);
  p.inputs_ = std::move(c.inputs);
  p.rank_ = c.rank;
  p.mask_ = std::move(mask);
  std::string text = fmt::format("pipeline rank {}\n", p.rank_);
  for (const InputDecl& in : p.inputs_)
    text += fmt::format("  in {} {} r{} kind{} axis{}\n", in.name, dtype_name(in.dtype), in.rank, int(in.kind), in.axis);
  if (p.mask_.active()) text += fmt::format("  mask axis{} by{} counts {}\n", p.mask_.axis, p.mask_.by, p.mask_.counts);
  for (const Output& o : p.outputs_)
    text += fmt::format("  out {} {} {} {} = {}\n", o.name, kind_name(o.kind), dtype_name(o.dtype), o.layout.str(),
                        canonical(o.node));
  p.text_ = std::move(text);
  p.hash_ = hash128(p.text_);
  return p;
}

}  // namespace mxjit
