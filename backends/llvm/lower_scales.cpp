// Block scales (the scale's definition interpreted: dsl/dsl.hpp ScaleDef) and where each block's scale is
// stored (linear / permuted strides or the blocked 128x4 / 8x4 atoms) — see lower.hpp.
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "backends/llvm/lower.hpp"

namespace mxjit::cpu::detail {
namespace {

using llvm::Value;

}  // namespace

Value* lower_scale_expr(Ir& ir, const NodePtr& np, const ScaleVarsIr& v) {
  const Node& n = *np;
  auto& b = ir.b;
  auto arg = [&](size_t i) { return lower_scale_expr(ir, n.args.at(i), v); };
  auto f1 = [&](const char* helper) { return ir.call(helper, ir.f32, {ir.f32}, {arg(0)}); };
  auto f2 = [&](const char* helper) { return ir.call(helper, ir.f32, {ir.f32, ir.f32}, {arg(0), arg(1)}); };
  switch (n.op) {
    case Op::amax_var: return v.amax;
    case Op::tamax_var: return v.tamax;
    case Op::stored_var:
      if (!v.stored) break;
      return v.stored;
    case Op::constant: return ir.cf(float(n.value));
    case Op::add: return b.CreateFAdd(arg(0), arg(1));
    case Op::sub: return b.CreateFSub(arg(0), arg(1));
    case Op::mul: return b.CreateFMul(arg(0), arg(1));
    case Op::div: return b.CreateFDiv(arg(0), arg(1));
    case Op::max: return ir.fmax_nan(arg(0), arg(1));
    case Op::min: return ir.fmin_nan(arg(0), arg(1));
    case Op::fmax: return f2("mxcpu_fmax_num");
    case Op::fmin: return f2("mxcpu_fmin_num");
    case Op::neg: return b.CreateFNeg(arg(0));
    case Op::abs: return ir.fbits(ir.abs_bits(arg(0)));
    case Op::floor_log2:
      return ir.call("mxcpu_floor_log2", ir.f32, {ir.f32, ir.i32}, {arg(0), ir.c32(uint32_t(n.bits))});
    case Op::ceil_log2: return f1("mxcpu_ceil_log2");
    case Op::exp2: return f1("mxcpu_exp2");
    case Op::pow2_floor: return f1("mxcpu_pow2_floor");
    case Op::pow2_ceil: return f1("mxcpu_pow2_ceil");
    case Op::select: return b.CreateSelect(arg(0), arg(1), arg(2));
    case Op::isnan: return ir.is_nan(arg(0));
    case Op::isinf: return b.CreateICmpEQ(ir.abs_bits(arg(0)), ir.c32(0x7f800000u));
    case Op::eq: return b.CreateFCmpOEQ(arg(0), arg(1));
    case Op::lt: return b.CreateFCmpOLT(arg(0), arg(1));
    case Op::le: return b.CreateFCmpOLE(arg(0), arg(1));
    case Op::lor: return b.CreateOr(arg(0), arg(1));
    case Op::land: return b.CreateAnd(arg(0), arg(1));
    case Op::lnot: return b.CreateNot(arg(0));
    case Op::never: return b.getFalse();
    default: break;
  }
  throw UsageError(fmt::format("CPU backend: '{}' is not a scale-expression operation here", op_name(n.op)));
}

Value* lower_scale_element(Ir& ir, const Node& sn, Value* x, Value* factor) {
  auto& b = ir.b;
  Value* y = sn.apply == Apply::divide ? b.CreateFDiv(x, factor) : b.CreateFMul(x, factor);
  Value* lo = ir.cf(float(sn.clamp_lo));
  Value* hi = ir.cf(float(sn.clamp_hi));
  switch (sn.clamp) {
    case Clamp::none: break;
    case Clamp::propagate_nan: y = ir.fmin_nan(ir.fmax_nan(y, lo), hi); break;
    case Clamp::ignore_nan:
      y = ir.call("mxcpu_fmax_num", ir.f32, {ir.f32, ir.f32}, {y, lo});
      y = ir.call("mxcpu_fmin_num", ir.f32, {ir.f32, ir.f32}, {y, hi});
      break;
    case Clamp::ignore_nan_hi:
      y = ir.call("mxcpu_fmin_num", ir.f32, {ir.f32, ir.f32}, {y, hi});
      y = ir.call("mxcpu_fmax_num", ir.f32, {ir.f32, ir.f32}, {y, lo});
      break;
  }
  return y;
}

BlockScale lower_block_scale(TileCtx& t, const ScaleInstance& in, Value* m) {
  Ir& ir = t.ir;
  auto& b = ir.b;
  const Node& sn = *t.plan.values.scales[size_t(in.scale)];
  ScaleVarsIr v;
  v.amax = ir.fbits(m);
  v.tamax = in.tamax_slot >= 0 ? t.tamax[size_t(in.tamax_slot)] : ir.cf(0.0f);
  Value* s = lower_scale_expr(ir, sn.args[kScaleStored], v);
  Value *byte = nullptr, *stored = nullptr;
  switch (sn.scale_format) {
    case ScaleFormat::e8m0:
      byte = b.CreateAnd(b.CreateLShr(ir.bits(s), 23), ir.c32(0xffu));
      v.stored = ir.call("mxcpu_e8m0_decode", ir.f32, {ir.i32}, {byte});
      break;
    case ScaleFormat::e4m3:
      byte = ir.encode_rne(e4m3, s);
      v.stored = ir.e4m3_value(byte);
      break;
    case ScaleFormat::bf16:
      stored = s;
      v.stored = ir.bf16_to_f32(ir.f32_to_bf16(s));
      break;
    case ScaleFormat::f32:
      stored = s;
      v.stored = s;
      break;
  }
  Value* mult = lower_scale_expr(ir, sn.args[kScaleFactor], v);
  Value* nan = lower_scale_expr(ir, sn.args[kScaleNanIf], v);
  Value* zero = lower_scale_expr(ir, sn.args[kScaleZeroIf], v);
  Value* flag = b.CreateSelect(nan, ir.c32(2), b.CreateSelect(zero, ir.c32(1), ir.c32(0)));
  return BlockScale{byte, flag, mult, stored};
}

Value* lower_scale_index(TileCtx& t, int axis, const ScaleInstance& in, Value* rb, Value* cb) {
  Ir& ir = t.ir;
  auto& b = ir.b;
  if (in.whole_along(axis)) return ir.c64(0);
  if (axis == t.plan.ax_r) return in.jagged ? t.group : b.CreateAdd(b.CreateSDiv(t.r0, ir.c64(in.br)), rb);
  if (axis == t.plan.ax_c) return b.CreateAdd(b.CreateSDiv(t.c0, ir.c64(in.bc)), cb);
  return t.batch[size_t(axis)];
}

namespace {

/// LLVM IR for lower_offset (dsl/layout_bound.hpp): i64 arithmetic on non-negative indices, so
/// that divisions and remainders by powers of two become shifts and masks.
struct LlvmArith {
  using Value = llvm::Value*;
  Ir& ir;
  Value constant(int64_t v) { return ir.c64(v); }
  Value add(Value x, Value y) { return ir.b.CreateAdd(x, y); }
  Value mul(Value x, Value y) { return ir.b.CreateMul(x, y); }
  Value digit(Value i, int64_t div, int64_t ext) {
    Value q = div == 1 ? i : ir.b.CreateUDiv(i, ir.c64(div));
    return ext > 0 ? ir.b.CreateURem(q, ir.c64(ext)) : q;
  }
  Value extent(Value n, int64_t align, int64_t div) {
    Value padded = align == 1 ? n : ir.b.CreateMul(ir.b.CreateUDiv(ir.b.CreateAdd(n, ir.c64(align - 1)), ir.c64(align)), ir.c64(align));
    return div == 1 ? padded : ir.b.CreateUDiv(padded, ir.c64(div));
  }
};

}  // namespace

Value* lower_scale_offset(TileCtx& t, int o, const ScaleInstance& in, Value* rb, Value* cb) {
  Ir& ir = t.ir;
  const BoundLayout& l = t.p.outputs()[size_t(o)].bound;
  auto& b = ir.b;
  const int rank = t.plan.rank;
  std::vector<Value*> index;
  for (int a = 0; a < rank; ++a) index.push_back(lower_scale_index(t, a, in, rb, cb));
  if (l.strided() && l.pack == 1) {  // a strided view: the dot product with its strides
    Value* off = ir.c64(0);
    for (int a = 0; a < rank; ++a) off = b.CreateAdd(off, b.CreateMul(index[size_t(a)], t.out_stride[size_t(o)][size_t(a)]));
    return off;
  }
  // Any other layout (blocked atoms, packed words, split axes): the layout's one offset function.
  LlvmArith arith{ir};
  return lower_offset(arith, l, index, t.out_shape[size_t(o)]);
}

}  // namespace mxjit::cpu::detail
