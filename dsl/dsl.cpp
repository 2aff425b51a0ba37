#include "dsl/dsl.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"
#include "dsl/recipes.hpp"

namespace mxjit {
namespace {

constexpr int kMaxRank = 8;

// Every node is made here: its depth and tree size are bounded (dsl/limits.hpp), so that printing,
// hashing and code generation, which walk the expression as a tree, stay small.
NodePtr make(Node n) {
  n.depth = 1;
  n.tree_nodes = 1;
  for (const NodePtr& a : n.args) {
    n.depth = std::max(n.depth, a->depth + 1);
    n.tree_nodes += a->tree_nodes;  // both <= kMaxExpressionNodes: no overflow
  }
  if (n.depth > kMaxExpressionDepth || n.tree_nodes > kMaxExpressionNodes)
    throw UsageError(fmt::format("{}: the expression is {} deep with {} nodes (counting shared subexpressions at "
                                 "every use); an expression has at most depth {} and {} nodes",
                                 op_name(n.op), n.depth, n.tree_nodes, kMaxExpressionDepth, kMaxExpressionNodes));
  return std::make_shared<const Node>(std::move(n));
}

// Rank of a value expression: scalars (constants, amax_var) have rank 0 and broadcast.
int joint_rank(const char* what, const Expr& a, const Expr& b) {
  if (a.rank() == 0) return b.rank();
  if (b.rank() == 0 || a.rank() == b.rank()) return a.rank();
  throw UsageError(fmt::format("{}: operands have ranks {} and {}; element-wise operands need the same rank",
                               what, a.rank(), b.rank()));
}

Expr binary(Op op, const char* what, Expr a, Expr b) {
  Node n;
  n.op = op;
  n.rank = joint_rank(what, a, b);
  n.args = {a.node(), b.node()};
  return Expr(make(std::move(n)));
}

// `attr` sets the node's attribute (round_to's dtype, floor_log2's mantissa bits).
Expr unary(Op op, Expr a, const std::function<void(Node&)>& attr = {}) {
  Node n;
  n.op = op;
  n.rank = a.rank();
  n.args = {a.node()};
  if (attr) attr(n);
  return Expr(make(std::move(n)));
}

void check_name(const char* what, const std::string& name) {
  if (name.empty()) throw UsageError(fmt::format("{}: the name must not be empty", what));
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      throw UsageError(fmt::format("{}('{}'): names use letters, digits and '_' only", what, name));
}

void check_rank(const char* what, const std::string& name, int r) {
  if (r < 1 || r > kMaxRank)
    throw UsageError(fmt::format("{}('{}'): rank {} is out of range; ranks 1..{} are supported", what, name, r,
                                 kMaxRank));
}

void check_axis(const char* what, const Expr& x, int axis) {
  if (x.rank() == 0)
    throw UsageError(fmt::format("{}: the value is a scalar; blocks need a tensor value", what));
  if (axis < 0 || axis >= x.rank())
    throw UsageError(fmt::format("{}: axis {} is out of range for a value of rank {} (axes 0..{})", what, axis,
                                 x.rank(), x.rank() - 1));
}

void check_block_size(const std::string& where, int64_t size) {
  if (size < 1 || !std::has_single_bit(uint64_t(size)))
    throw UsageError(fmt::format("{}: block size {} is not a power of two", where, size));
  if (size > kMaxBlockSize)
    throw UsageError(fmt::format("{}: block size {} exceeds the limit {} (a block longer than its axis is one block "
                                 "of the whole axis; give at most {})",
                                 where, size, limit_text(kMaxBlockSize), limit_text(kMaxBlockSize)));
}

// The name of the (first) input under a value, for messages.
std::string value_name(const NodePtr& n) {
  if (n->op == Op::input || n->op == Op::vec_input) return n->name;
  if (n->op == Op::dequant) return n->args[0]->name;
  for (const NodePtr& a : n->args) {
    std::string s = value_name(a);
    if (!s.empty()) return s;
  }
  return "";
}

/// Where a scale expression may appear: what it may read.
enum class Role : uint8_t { exponent, stored, factor };

const char* role_name(Role r) {
  return r == Role::exponent ? "the exponent" : r == Role::stored ? "ScaleDef::stored" : "ScaleDef::factor";
}

/// Throws UsageError (prefixed by `where`) unless `n` is a scale-expression value (want_cond false)
/// or condition (true) that reads only what `role` may: amax_var everywhere, tamax_var outside
/// exponents, stored_var in factors and conditions.
void check_scale_expr(const std::string& what, const NodePtr& n, Role role, bool want_cond) {
  const bool cond = is_condition(n->op);
  if (cond != want_cond)
    throw UsageError(fmt::format("{}: '{}' is {} where {} is expected", what, op_name(n->op),
                                 cond ? "a condition" : "a value", want_cond ? "a condition" : "a value"));
  switch (n->op) {
    case Op::amax_var: case Op::constant: case Op::never: return;
    case Op::tamax_var:
      if (role == Role::exponent)
        throw UsageError(fmt::format("{}: an E8M0 exponent reads amax_var() only, not tamax_var()", what));
      return;
    case Op::stored_var:
      if (role != Role::factor)
        throw UsageError(fmt::format("{}: stored_var() is the stored scale read back; only ScaleDef::factor, "
                                     "zero_if and nan_if may read it, not {}", what, role_name(role)));
      return;
    case Op::select:
      check_scale_expr(what, n->args[0], role, true);
      check_scale_expr(what, n->args[1], role, false);
      check_scale_expr(what, n->args[2], role, false);
      return;
    case Op::lor: case Op::land: case Op::lnot:
      for (const NodePtr& a : n->args) check_scale_expr(what, a, role, true);
      return;
    case Op::isnan: case Op::isinf: case Op::eq: case Op::lt: case Op::le:
    case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::max: case Op::min: case Op::fmax:
    case Op::fmin: case Op::neg: case Op::abs: case Op::floor_log2: case Op::ceil_log2: case Op::exp2:
    case Op::pow2_floor: case Op::pow2_ceil:
      for (const NodePtr& a : n->args) check_scale_expr(what, a, role, false);
      return;
    default: break;
  }
  throw UsageError(fmt::format(
      "{}: '{}' is not a scale-expression operation (use amax_var(), tamax_var(), stored_var(), constants, "
      "+ - * /, max, min, fmax, fmin, abs, floor_log2, ceil_log2, exp2, pow2_floor, pow2_ceil, what, isnan, "
      "isinf, comparisons and || && !)",
      what, op_name(n->op)));
}

bool reads(const NodePtr& n, Op var) {
  if (n->op == var) return true;
  for (const NodePtr& a : n->args)
    if (reads(a, var)) return true;
  return false;
}

/// True when every value `n` can take is a power of two, +-0, +-Inf or NaN (what E8M0 stores).
bool pow2_valued(const NodePtr& n) {
  switch (n->op) {
    case Op::constant: {
      const double v = std::fabs(n->value);
      int e = 0;
      return !(v > 0 && v < INFINITY) || std::frexp(v, &e) == 0.5;
    }
    case Op::exp2: case Op::pow2_floor: case Op::pow2_ceil: return true;
    case Op::neg: case Op::abs: return pow2_valued(n->args[0]);
    case Op::mul: case Op::div: case Op::max: case Op::min: case Op::fmax: case Op::fmin:
      return pow2_valued(n->args[0]) && pow2_valued(n->args[1]);
    case Op::select: return pow2_valued(n->args[1]) && pow2_valued(n->args[2]);
    default: return false;
  }
}

NodePtr node_of(Op op, std::vector<NodePtr> args, int rank = 0) {
  Node n;
  n.op = op;
  n.rank = rank;
  n.args = std::move(args);
  return make(std::move(n));
}

}  // namespace

Expr::Expr(double v) {
  Node n;
  n.op = Op::constant;
  n.value = double(float(v));
  node_ = make(std::move(n));
}

Expr input(std::string name, DType dtype, Rank r) {
  check_name("input", name);
  check_rank("input", name, r.value);
  if (dtype != DType::bf16 && dtype != DType::f16 && dtype != DType::f32)
    throw UsageError(fmt::format("input('{}'): dtype {} is not supported; inputs are bf16, f16 or f32", name,
                                 dtype_name(dtype)));
  Node n;
  n.op = Op::input;
  n.name = std::move(name);
  n.dtype = dtype;
  n.rank = r.value;
  return Expr(make(std::move(n)));
}

Expr vec(std::string name, DType dtype, int axis, Rank r) {
  check_name("vec", name);
  check_rank("vec", name, r.value);
  if (axis < 0 || axis >= r.value)
    throw UsageError(fmt::format("vec('{}'): axis {} is out of range for a domain of rank {}", name, axis, r.value));
  if (dtype != DType::bf16 && dtype != DType::f16 && dtype != DType::f32)
    throw UsageError(fmt::format("vec('{}'): dtype {} is not supported; vectors are bf16, f16 or f32", name,
                                 dtype_name(dtype)));
  Node n;
  n.op = Op::vec_input;
  n.name = std::move(name);
  n.dtype = dtype;
  n.axis = axis;
  n.rank = r.value;
  return Expr(make(std::move(n)));
}

Expr operator+(Expr a, Expr b) { return binary(Op::add, "operator+", std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return binary(Op::sub, "operator-", std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return binary(Op::mul, "operator*", std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return binary(Op::div, "operator/", std::move(a), std::move(b)); }
Expr operator-(Expr a) { return unary(Op::neg, std::move(a)); }
Expr max(Expr a, Expr b) { return binary(Op::max, "max", std::move(a), std::move(b)); }
Expr min(Expr a, Expr b) { return binary(Op::min, "min", std::move(a), std::move(b)); }
Expr abs(Expr a) { return unary(Op::abs, std::move(a)); }
Expr relu(Expr a) { return unary(Op::relu, std::move(a)); }
Expr silu(Expr a) { return unary(Op::silu, std::move(a)); }
Expr sigmoid(Expr a) { return unary(Op::sigmoid, std::move(a)); }
Expr exp(Expr a) { return unary(Op::exp, std::move(a)); }
Expr round_to(Expr a, DType dtype) {
  if (dtype != DType::bf16 && dtype != DType::f16)
    throw UsageError(fmt::format("round_to: dtype {} is not bf16 or f16 (the values are FP32 already; 8-bit formats are cast())",
                                 dtype_name(dtype)));
  return unary(Op::round_to, std::move(a), [&](Node& n) { n.dtype = dtype; });
}
Expr gelu(Expr a, Gelu kind) { return unary(kind == Gelu::tanh ? Op::gelu_tanh : Op::gelu_erf, std::move(a)); }
Expr floor_log2(Expr a) { return unary(Op::floor_log2, std::move(a)); }
Expr ceil_log2(Expr a) { return unary(Op::ceil_log2, std::move(a)); }
Expr floor_log2(Expr a, int mbits) {
  if (mbits < 0 || mbits > 22)
    throw UsageError(fmt::format("floor_log2(x, mbits={}): mbits is the number of mantissa bits kept, 0..22", mbits));
  return unary(Op::floor_log2, std::move(a), [&](Node& n) { n.bits = mbits; });
}
Expr fmax(Expr a, Expr b) { return binary(Op::fmax, "fmax", std::move(a), std::move(b)); }
Expr fmin(Expr a, Expr b) { return binary(Op::fmin, "fmin", std::move(a), std::move(b)); }
Expr exp2(Expr e) { return unary(Op::exp2, std::move(e)); }
Expr pow2_floor(Expr a) { return unary(Op::pow2_floor, std::move(a)); }
Expr pow2_ceil(Expr a) { return unary(Op::pow2_ceil, std::move(a)); }

Expr amax_var() { return Expr(node_of(Op::amax_var, {})); }
Expr tamax_var() { return Expr(node_of(Op::tamax_var, {})); }
Expr stored_var() { return Expr(node_of(Op::stored_var, {})); }

Cond isnan(Expr x) { return Cond(node_of(Op::isnan, {x.node()})); }
Cond isinf(Expr x) { return Cond(node_of(Op::isinf, {x.node()})); }
Cond operator==(Expr a, Expr b) { return Cond(node_of(Op::eq, {a.node(), b.node()})); }
Cond operator<(Expr a, Expr b) { return Cond(node_of(Op::lt, {a.node(), b.node()})); }
Cond operator<=(Expr a, Expr b) { return Cond(node_of(Op::le, {a.node(), b.node()})); }
Cond operator||(Cond a, Cond b) { return Cond(node_of(Op::lor, {a.node(), b.node()})); }
Cond operator&&(Cond a, Cond b) { return Cond(node_of(Op::land, {a.node(), b.node()})); }
Cond operator!(Cond a) { return Cond(node_of(Op::lnot, {a.node()})); }
Cond never() { return Cond(node_of(Op::never, {})); }
Expr where(Cond c, Expr a, Expr b) {
  return Expr(node_of(Op::select, {c.node(), a.node(), b.node()}, joint_rank("where", a, b)));
}

Blocks blocks(Expr x, int axis, int64_t size) {
  const std::string where = fmt::format("blocks({}, axis={}, size={})", value_name(x.node()), axis, size);
  check_axis(where.c_str(), x, axis);
  if (size != kWholeAxis) check_block_size(where, size);
  Node n;
  n.op = Op::blocks;
  n.rank = x.rank();
  n.block.axes = {axis};
  n.block.sizes = {size};
  n.args = {x.node()};
  return Blocks(make(std::move(n)));
}

Blocks blocks(Expr x, std::array<int, 2> axes, std::array<int64_t, 2> sizes) {
  const std::string where = fmt::format("blocks({}, axes=({},{}), sizes={}x{})", value_name(x.node()), axes[0],
                                        axes[1], sizes[0], sizes[1]);
  check_axis(where.c_str(), x, axes[0]);
  check_axis(where.c_str(), x, axes[1]);
  if (axes[0] == axes[1]) throw UsageError(fmt::format("{}: the two block axes must differ", where));
  for (int64_t s : sizes)
    if (s != kWholeAxis) check_block_size(where, s);
  Node n;
  n.op = Op::blocks;
  n.rank = x.rank();
  // Canonical: axes ascending, so blocks(x,{1,0},{a,b}) == blocks(x,{0,1},{b,a}).
  if (axes[0] > axes[1]) {
    std::swap(axes[0], axes[1]);
    std::swap(sizes[0], sizes[1]);
  }
  n.block.axes = {axes[0], axes[1]};
  n.block.sizes = {sizes[0], sizes[1]};
  n.args = {x.node()};
  return Blocks(make(std::move(n)));
}

Blocks groups(Expr x, int axis, Offsets ends) {
  const std::string where = fmt::format("groups({}, axis={}, offsets={})", value_name(x.node()), axis, ends.name);
  check_axis(where.c_str(), x, axis);
  check_name("offsets", ends.name);
  Node n;
  n.op = Op::blocks;
  n.rank = x.rank();
  n.block.axes = {axis};
  n.block.sizes = {0};
  n.block.offsets = ends.name;
  n.args = {x.node()};
  return Blocks(make(std::move(n)));
}

Amax amax(Blocks b) {
  Node n;
  n.op = Op::block_amax;
  n.rank = b.node()->rank;
  n.args = {b.node()};
  return Amax(make(std::move(n)));
}

Amax amax(Expr x) {
  if (x.rank() == 0) throw UsageError("amax(x): x is a scalar; a tensor amax needs a tensor value");
  Node n;
  n.op = Op::tensor_amax;
  n.rank = x.rank();
  n.args = {x.node()};
  return Amax(make(std::move(n)));
}

Amax amax(Expr x, AmaxNan nan) {
  Amax a = amax(std::move(x));
  if (nan == AmaxNan::propagate) return a;
  Node n = *a.node();
  n.amax_nan = nan;
  return Amax(make(std::move(n)));
}

static void check_block_amax(const std::string& what, const Amax& a) {
  if (a.node()->op != Op::block_amax)
    throw UsageError(fmt::format("{}: needs a block amax, amax(blocks(...)); got a tensor amax", what));
}

Scale scale(Amax block_amax, ElemFormat elem, const ScaleDef& def) {
  const std::string what = fmt::format("scale({}, {})", scale_format_name(def.format), elem.str());
  check_block_amax(what, block_amax);
  if (!def.stored)
    throw UsageError(fmt::format("{}: ScaleDef::stored is missing (the FP32 expression of amax_var() to store)", what));
  check_scale_expr(what + ": ScaleDef::stored", def.stored->node(), Role::stored, false);
  if (def.factor) check_scale_expr(what + ": ScaleDef::factor", def.factor->node(), Role::factor, false);
  if (def.zero_if) check_scale_expr(what + ": ScaleDef::zero_if", def.zero_if->node(), Role::factor, true);
  if (def.nan_if) check_scale_expr(what + ": ScaleDef::nan_if", def.nan_if->node(), Role::factor, true);
  if (def.format == ScaleFormat::e8m0 && !pow2_valued(def.stored->node()))
    throw UsageError(fmt::format("{}: ScaleDef::stored '{}' is not a power of two; E8M0 stores powers of two only "
                                 "(round it with exp2, pow2_floor or pow2_ceil)",
                                 what, canonical(def.stored->node())));
  if (def.clamp != Clamp::none && !(float(def.clamp_lo) <= float(def.clamp_hi)))
    throw UsageError(fmt::format("{}: the clamp [{}, {}] is empty or not a number", what, def.clamp_lo, def.clamp_hi));
  bool two_level = reads(def.stored->node(), Op::tamax_var);
  for (const auto* c : {&def.zero_if, &def.nan_if})
    two_level = two_level || (*c && reads((*c)->node(), Op::tamax_var));
  two_level = two_level || (def.factor && reads(def.factor->node(), Op::tamax_var));
  NodePtr tensor;
  const NodePtr& blk = block_amax.node()->args[0];
  if (two_level) {
    if (blk->block.jagged())
      throw UsageError(fmt::format("{}: a two-level scale (reading tamax_var()) needs fixed-size blocks, not jagged "
                                   "groups", what));
    Node t;
    t.op = Op::tensor_amax;
    t.rank = blk->rank;
    t.args = {blk->args[0]};
    tensor = make(std::move(t));
  }
  Node n = *recipes::scale_node(block_amax.node(), tensor, elem, def);
  const recipes::Recognised r = recipes::recognise(n);
  n.recipe = r.recipe;
  n.rule = r.rule;
  n.policy = r.policy;
  n.convention = r.convention;
  n.pow2 = r.pow2;
  n.store_multiplier = r.store_multiplier;
  n.exponent = r.exponent;
  return Scale(make(std::move(n)));
}

Scale e8m0_scale(Amax block_amax, ElemFormat elem, ScaleRule rule, NanPolicy policy) {
  check_block_amax("e8m0_scale", block_amax);
  if (rule == ScaleRule::custom)
    throw UsageError("e8m0_scale: ScaleRule::custom takes the scale expression: e8m0_scale(amax, elem, expr)");
  return scale(std::move(block_amax), elem, recipes::e8m0(elem, rule, policy));
}

Scale e8m0_scale(Amax block_amax, ElemFormat elem, Expr exponent, NanPolicy policy) {
  check_block_amax("e8m0_scale", block_amax);
  check_scale_expr("e8m0_scale(custom): the exponent", exponent.node(), Role::exponent, false);
  if (!reads(exponent.node(), Op::amax_var))
    throw UsageError("e8m0_scale(custom): the scale expression must use amax_var()");
  return scale(std::move(block_amax), elem, recipes::e8m0_exponent(std::move(exponent), policy));
}

Scale f32_scale(Amax block_amax, ElemFormat elem, F32ScaleOptions options) {
  check_block_amax("f32_scale", block_amax);
  return scale(std::move(block_amax), elem, recipes::f32_multiplier(elem, options));
}

Scale nvfp4_scale(Amax block_amax, Nvfp4Convention convention) {
  check_block_amax("nvfp4_scale", block_amax);
  if (block_amax.node()->args[0]->block.jagged())
    throw UsageError("nvfp4_scale: NVFP4 needs fixed-size blocks (16), not jagged groups");
  return scale(std::move(block_amax), e2m1, recipes::nvfp4(convention));
}

Quantized cast(ElemFormat elem, Scaled scaled, Round round, Saturate sat, CastOptions options) {
  const NodePtr& s = scaled.scale.node();
  const NodePtr& blk = s->args[0]->args[0];
  const std::string where = fmt::format("cast({}, {})", elem.str(), value_name(scaled.value.node()));
  if (canonical(blk->args[0]) != canonical(scaled.value.node()))
    throw UsageError(fmt::format(
        "{}: the value divided by the scale is not the value its blocks were taken of; write cast(f, x / s) "
        "with s built from blocks(x, ...)",
        where));
  if (!(s->elem == elem))
    throw UsageError(fmt::format("{}: the scale was computed for element format {}, not {}", where, s->elem.str(),
                                 elem.str()));
  if (elem.packed())
    for (int64_t size : blk->block.sizes)
      if (size != kWholeAxis && size % 2 != 0)  // a whole axis: its extent is checked when bound
        throw UsageError(fmt::format(
            "{}: FP4 packs two codes per byte, so the block size must be even; got {}", where, size));
  if (sat == Saturate::none && !elem.has_nan())
    throw UsageError(fmt::format("{}: Saturate::none turns overflow into NaN, and {} has no NaN", where, elem.str()));
  if (sat == Saturate::none && round == Round::stochastic)
    throw UsageError(fmt::format("{}: Saturate::none is for round-to-nearest casts, not stochastic rounding", where));
  Node n;
  n.op = Op::quantize;
  n.rank = blk->rank;
  n.elem = elem;
  n.round = round;
  n.saturate = sat;
  n.seed = options.seed;
  n.offset = options.offset;
  n.flush_subnormals = options.flush_subnormals;
  n.args = {scaled.value.node(), s};
  return Quantized(make(std::move(n)));
}

Expr dequantize(std::string codes, std::string scales, ElemFormat elem, ScaleFormat scale_format, Rank r, int axis,
                int64_t block) {
  check_name("dequantize(codes)", codes);
  check_name("dequantize(scales)", scales);
  check_rank("dequantize", codes, r.value);
  if (axis < 0 || axis >= r.value)
    throw UsageError(fmt::format("dequantize('{}'): block axis {} is out of range for rank {}", codes, axis, r.value));
  check_block_size(fmt::format("dequantize('{}')", codes), block);
  if (elem.packed() && block % 2)
    throw UsageError(fmt::format("dequantize('{}'): FP4 codes pack two per byte; the block size must be even", codes));
  if (scale_format == ScaleFormat::bf16)
    throw UsageError(fmt::format("dequantize('{}'): scales stored as bf16 are not read back yet; use e8m0, e4m3 or f32",
                                 scales));
  Node c;
  c.op = Op::input;
  c.name = std::move(codes);
  c.dtype = DType::u8;
  c.rank = r.value;
  Node s;
  s.op = Op::input;
  s.name = std::move(scales);
  s.dtype = scale_format == ScaleFormat::f32 ? DType::f32 : DType::u8;
  s.rank = r.value;
  Node n;
  n.op = Op::dequant;
  n.rank = r.value;
  n.elem = elem;
  n.scale_format = scale_format;
  n.block.axes = {axis};
  n.block.sizes = {block};
  n.args = {make(std::move(c)), make(std::move(s))};
  return Expr(make(std::move(n)));
}

}  // namespace mxjit
