#include "dsl/recipes.hpp"

#include <limits>

#include "dsl/errors.hpp"

namespace mxjit::recipes {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kTop = 0x1p127;  // the largest E8M0 value (byte 0xFE)

std::string text_of(const Node& like, const ScaleDef& def) {
  return scale_definition(*scale_node(like.args[kScaleAmax], nullptr, like.elem, def));
}

/// The exponent expression of an E8M0 definition: the argument of the exp2 under the min that the
/// policy's selects end in, or null.
NodePtr peel_exponent(const NodePtr& stored) {
  NodePtr n = stored;
  while (n && n->op == Op::select) n = n->args[2];
  if (!n || n->op != Op::min) return nullptr;
  for (const NodePtr& a : n->args)
    if (a->op == Op::exp2) return a->args[0];
  return nullptr;
}

}  // namespace

NodePtr scale_node(NodePtr block_amax, NodePtr tensor_amax, ElemFormat elem, const ScaleDef& def) {
  Node n;
  n.op = Op::scale;
  n.rank = block_amax->rank;
  n.scale_format = def.format;
  n.elem = elem;
  n.apply = def.apply;
  n.clamp = def.clamp;
  if (def.clamp != Clamp::none) {
    n.clamp_lo = double(float(def.clamp_lo));
    n.clamp_hi = double(float(def.clamp_hi));
  }
  n.amax_nan = def.amax_nan;
  const Expr stored = def.stored ? *def.stored : Expr(kNaN);
  n.args = {std::move(block_amax), stored.node(), def.factor ? def.factor->node() : (1.0 / stored_var()).node(),
            def.zero_if ? def.zero_if->node() : never().node(), def.nan_if ? def.nan_if->node() : never().node()};
  if (tensor_amax) n.args.push_back(std::move(tensor_amax));
  return std::make_shared<const Node>(std::move(n));
}

Expr rule_exponent(ElemFormat elem, ScaleRule rule) {
  const Expr a = amax_var();
  switch (rule) {
    case ScaleRule::floor: return floor_log2(a) - double(elem.emax());
    case ScaleRule::ceil: return ceil_log2(a) - double(elem.max_normal_log2());
    case ScaleRule::rceil: return ceil_log2(a * double(1.0f / float(elem.max_normal())));
    case ScaleRule::even: return floor_log2(a, elem.is_int ? 6 : elem.mbits) - double(elem.emax());
    case ScaleRule::custom: break;
  }
  throw UsageError("recipes::rule_exponent: ScaleRule::custom has no built-in exponent; write the expression");
}

ScaleDef e8m0_exponent(Expr exponent, NanPolicy policy) {
  const Expr a = amax_var();
  Expr value = min(exp2(std::move(exponent)), kTop);
  if (policy == NanPolicy::nan_block) value = where(isnan(a) || isinf(a), kNaN, value);
  else value = where(isnan(a), kNaN, where(isinf(a), kTop, value));
  ScaleDef d;
  d.format = ScaleFormat::e8m0;
  d.stored = where(a == 0.0, 0.0, value);
  d.factor = 1.0 / stored_var();
  d.zero_if = a == 0.0;
  d.nan_if = isnan(stored_var());
  return d;
}

ScaleDef e8m0(ElemFormat elem, ScaleRule rule, NanPolicy policy) {
  return e8m0_exponent(rule_exponent(elem, rule), policy);
}

ScaleDef f32_multiplier(ElemFormat elem, F32ScaleOptions options) {
  Expr r = double(float(elem.max_normal())) / max(amax_var(), 1e-12);
  if (options.pow2) r = pow2_floor(r);
  ScaleDef d;
  d.format = ScaleFormat::f32;
  d.stored = options.store_multiplier ? r : 1.0 / r;
  d.factor = r;
  return d;
}

ScaleDef nvfp4(Nvfp4Convention convention) {
  const Expr a = amax_var(), t = tamax_var();
  ScaleDef d;
  d.format = ScaleFormat::e4m3;
  if (convention == Nvfp4Convention::te) {
    const Expr q = 2688.0 / t;
    const Expr s_enc = where(t == 0.0, 1.0, where(isinf(q), double(std::numeric_limits<float>::max()), q));
    d.stored = a * (s_enc * double(1.0f / 6.0f));
    const Expr den = stored_var() * (1.0 / s_enc);
    d.factor = where(den == 0.0, 0.0, 1.0 / den);
    return d;
  }
  const Expr pt = t / 2688.0;
  d.stored = where(pt == 0.0, 0x1p-6, min(max((a / 6.0) / pt, 0x1p-6), 448.0));
  d.factor = (1.0 / pt) / stored_var();
  d.zero_if = pt == 0.0;
  d.clamp = Clamp::propagate_nan;
  d.clamp_lo = -6;
  d.clamp_hi = 6;
  return d;
}

Recognised recognise(const Node& n) {
  const std::string have = scale_definition(n);
  Recognised r;
  auto is = [&](const ScaleDef& d) { return have == text_of(n, d); };
  switch (n.scale_format) {
    case ScaleFormat::e8m0: {
      const NodePtr e = peel_exponent(n.args[kScaleStored]);
      if (!e) break;
      for (NanPolicy policy : {NanPolicy::nan_block, NanPolicy::satfinite}) {
        if (!is(e8m0_exponent(Expr(e), policy))) continue;
        r.policy = policy;
        for (ScaleRule rule : {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even})
          if (canonical(e) == canonical(rule_exponent(n.elem, rule).node())) {
            r.recipe = ScaleRecipe::e8m0_rule;
            r.rule = rule;
            return r;
          }
        r.recipe = ScaleRecipe::e8m0_exponent;
        r.rule = ScaleRule::custom;
        r.exponent = e;
        return r;
      }
      break;
    }
    case ScaleFormat::f32:
      for (bool pow2 : {false, true})
        for (bool store : {false, true})
          if (is(f32_multiplier(n.elem, {store, pow2}))) {
            r.recipe = ScaleRecipe::f32_multiplier;
            r.pow2 = pow2;
            r.store_multiplier = store;
            return r;
          }
      break;
    case ScaleFormat::e4m3:
      if (!(n.elem == e2m1)) break;
      for (Nvfp4Convention c : {Nvfp4Convention::te, Nvfp4Convention::torchao})
        if (is(nvfp4(c))) {
          r.recipe = ScaleRecipe::nvfp4;
          r.convention = c;
          return r;
        }
      break;
    case ScaleFormat::bf16: break;
  }
  return r;
}

}  // namespace mxjit::recipes
