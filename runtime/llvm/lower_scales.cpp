// Block scales (the scale's definition interpreted: dsl/dsl.hpp ScaleDef) and where each block's scale is
// stored (linear / permuted strides or the blocked 128x4 / 8x4 atoms) — see lower.hpp.
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "runtime/llvm/lower.hpp"

namespace mxjit::cpu::detail {
namespace {

using llvm::Value;

Value* ceil_div(Ir& ir, Value* n, int64_t d) { return ir.b.CreateSDiv(ir.b.CreateAdd(n, ir.c64(d - 1)), ir.c64(d)); }

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
  if (axis == t.plan.ax_r) return in.jagged ? t.group : b.CreateAdd(b.CreateSDiv(t.r0, ir.c64(in.br)), rb);
  if (axis == t.plan.ax_c) return b.CreateAdd(b.CreateSDiv(t.c0, ir.c64(in.bc)), cb);
  return t.batch[size_t(axis)];
}

Value* lower_scale_offset(TileCtx& t, int o, const ScaleInstance& in, Value* rb, Value* cb) {
  Ir& ir = t.ir;
  const Output& out = t.p.outputs()[size_t(o)];
  auto& b = ir.b;
  const int rank = t.plan.rank;
  if (!out.layout.is_blocked()) {
    Value* off = ir.c64(0);
    for (int a = 0; a < rank; ++a) off = b.CreateAdd(off, b.CreateMul(lower_scale_index(t, a, in, rb, cb), t.out_stride[size_t(o)][size_t(a)]));
    return off;
  }
  auto [row, col] = blocked_axes(block_of(out.node), rank);
  if (row < 0) throw UsageError(fmt::format("CPU backend: blocked scales '{}' need a rows axis", out.name));
  const int64_t ar = out.layout.atom_rows(), ac = out.layout.atom_cols(), lines = ar >= 32 ? 32 : ar;
  const auto& shape = t.out_shape[size_t(o)];
  Value* bi = ir.c64(0);
  for (int a = 0; a < rank; ++a)
    if (a != row && a != col) bi = b.CreateAdd(b.CreateMul(bi, shape[size_t(a)]), lower_scale_index(t, a, in, rb, cb));
  auto round_up = [&](Value* v, int64_t m) { return b.CreateMul(ceil_div(ir, v, m), ir.c64(m)); };
  Value* rp = round_up(shape[size_t(row)], ar);
  Value* cp = round_up(shape[size_t(col)], ac);
  Value* R = lower_scale_index(t, row, in, rb, cb);
  Value* C = lower_scale_index(t, col, in, rb, cb);
  Value* atom = b.CreateAdd(b.CreateMul(b.CreateSDiv(R, ir.c64(ar)), b.CreateSDiv(cp, ir.c64(ac))), b.CreateSDiv(C, ir.c64(ac)));
  Value* in_atom = b.CreateAdd(b.CreateMul(b.CreateSRem(R, ir.c64(lines)), ir.c64(ac * (ar / lines))),
                   b.CreateAdd(b.CreateMul(b.CreateSDiv(b.CreateSRem(R, ir.c64(ar)), ir.c64(lines)), ir.c64(ac)),
                               b.CreateSRem(C, ir.c64(ac))));
  return b.CreateAdd(b.CreateMul(bi, b.CreateMul(rp, cp)), b.CreateAdd(b.CreateMul(atom, ir.c64(ar * ac)), in_atom));
}

}  // namespace mxjit::cpu::detail
