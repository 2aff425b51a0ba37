#include "codegen/values.hpp"

namespace mxjit::detail {
namespace {

int find_or_add(std::vector<NodePtr>& list, const NodePtr& n) {
  const std::string key = canonical(n);
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] == n || canonical(list[i]) == key) return int(i);
  list.push_back(n);
  return int(list.size()) - 1;
}

}  // namespace

ValueSet collect_values(const Pipeline& p) {
  ValueSet v;
  auto add_scale = [&](const NodePtr& s) {
    size_t before = v.scales.size();
    int i = find_or_add(v.scales, s);
    if (v.scales.size() > before) {
      v.scale_root.push_back(find_or_add(v.roots, blocks_node_of(s)->args[0]));
      v.scale_flush.push_back(false);
    }
    return i;
  };
  for (const Output& o : p.outputs()) {
    switch (o.kind) {
      case OutputKind::elems: {
        int s = add_scale(o.node->args[1]);
        size_t before = v.quantizes.size();
        int q = find_or_add(v.quantizes, o.node);
        if (v.quantizes.size() > before) v.quantize_scale.push_back(s);
        if (o.node->flush_subnormals) v.scale_flush[size_t(s)] = true;
        v.output_index.push_back(q);
        break;
      }
      case OutputKind::scales: v.output_index.push_back(add_scale(o.node)); break;
      case OutputKind::amax: v.output_index.push_back(find_or_add(v.roots, o.node->args[0])); break;
      case OutputKind::values: v.output_index.push_back(find_or_add(v.roots, o.node)); break;
    }
  }
  return v;
}

bool mx_e8m0(const Node& scale) {
  return scale.recipe == ScaleRecipe::e8m0_rule || scale.recipe == ScaleRecipe::e8m0_exponent;
}

bool nvfp4(const Node& scale) { return scale.recipe == ScaleRecipe::nvfp4; }

bool register_leaves(const NodePtr& n) {
  if (n->op == Op::vec_input || n->op == Op::dequant) return false;
  for (const NodePtr& a : n->args)
    if (!register_leaves(a)) return false;
  return true;
}

}  // namespace mxjit::detail
