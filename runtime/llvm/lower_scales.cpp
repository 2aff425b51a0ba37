// Block scales (E8M0 rules incl. custom expressions, FP32, NVFP4) and where each block's scale is
// stored (linear / permuted strides or the blocked 128x4 / 8x4 atoms) — see lower.hpp.
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "runtime/llvm/lower.hpp"

namespace mxjit::cpu::detail {
namespace {

using llvm::Value;

}  // namespace

BlockScale lower_block_scale(TileCtx& t, const ScaleInstance& in, Value* m) {
  Ir& ir = t.ir;
  const Node& sn = *t.plan.values.scales[size_t(in.scale)];
  const ElemFormat& f = sn.elem;
  Value *byte = nullptr, *flag = nullptr, *mult = nullptr, *stored = nullptr;
  auto& b = ir.b;
  switch (sn.scale_format) {
    case ScaleFormat::e8m0: {
      Value* rule;
      if (sn.rule == ScaleRule::custom) {
        rule = ir.call("mxcpu_custom_byte", ir.i32, {ir.f32}, {lower_scale_expression(t, sn.args.at(1), ir.fbits(m))});
      } else {
        const int code = sn.rule == ScaleRule::floor ? 0 : sn.rule == ScaleRule::rceil ? 1 : sn.rule == ScaleRule::ceil ? 2 : 3;
        rule = ir.e8m0_rule(code, f, m);
      }
      Value* zero = b.CreateICmpEQ(m, ir.c32(0));
      Value* inf_byte = ir.c32(sn.policy == NanPolicy::nan_block ? 255u : 254u);
      byte = b.CreateSelect(b.CreateICmpUGT(m, ir.c32(0x7f800000u)), ir.c32(255),
             b.CreateSelect(b.CreateICmpEQ(m, ir.c32(0x7f800000u)), inf_byte,
             b.CreateSelect(zero, ir.c32(0), rule)));
      flag = b.CreateSelect(b.CreateICmpEQ(byte, ir.c32(255)), ir.c32(2), b.CreateSelect(zero, ir.c32(1), ir.c32(0)));
      // 2^(127 - byte): byte 254 is the subnormal 2^-127.
      Value* rcp = b.CreateSelect(b.CreateICmpEQ(byte, ir.c32(254)), ir.c32(0x00400000u),
                                  b.CreateShl(b.CreateSub(ir.c32(254), byte), 23));
      mult = b.CreateSelect(b.CreateICmpEQ(flag, ir.c32(0)), ir.fbits(rcp), ir.cf(0.0f));
      break;
    }
    case ScaleFormat::f32: {
      mult = b.CreateFDiv(ir.cf(float(f.max_normal())), ir.fmax_nan(ir.fbits(m), ir.cf(1e-12f)));
      if (sn.pow2)  // r is +0, normal or NaN: clearing a normal r's mantissa rounds it down
        mult = b.CreateSelect(b.CreateFCmpUNO(mult, mult), mult, ir.fbits(b.CreateAnd(ir.bits(mult), ir.c32(0xff800000u))));
      stored = sn.store_multiplier ? mult : b.CreateFDiv(ir.cf(1.0f), mult);
      flag = ir.c32(0);
      break;
    }
    case ScaleFormat::e4m3: {
      // NVFP4 (DESIGN §4), the reference's FP32 operations in the same order; everything that
      // depends on the tensor amax t only is loop-invariant (hoisted by LICM).
      Value* a = ir.fbits(m);
      Value* ta = t.tamax[size_t(in.tamax_slot)];
      if (sn.convention == Nvfp4Convention::te) {
        Value* s_enc = b.CreateFDiv(ir.cf(2688.0f), ta);
        s_enc = b.CreateSelect(b.CreateICmpEQ(ir.abs_bits(s_enc), ir.c32(0x7f800000u)), ir.cf(3.40282347e38f), s_enc);
        s_enc = b.CreateSelect(b.CreateFCmpOEQ(ta, ir.cf(0.0f)), ir.cf(1.0f), s_enc);
        Value* div6 = b.CreateFMul(s_enc, ir.cf(1.0f / 6.0f));
        byte = ir.encode_rne(e4m3, b.CreateFMul(a, div6));
        Value* den = b.CreateFMul(ir.e4m3_value(byte), b.CreateFDiv(ir.cf(1.0f), s_enc));
        mult = b.CreateSelect(b.CreateFCmpOEQ(den, ir.cf(0.0f)), ir.cf(0.0f), b.CreateFDiv(ir.cf(1.0f), den));
        flag = ir.c32(0);
      } else {
        Value* per_tensor = b.CreateFDiv(ta, ir.cf(2688.0f));
        Value* zero = b.CreateFCmpOEQ(per_tensor, ir.cf(0.0f));
        Value* ratio = b.CreateFDiv(b.CreateFDiv(a, ir.cf(6.0f)), per_tensor);
        Value* scale = ir.encode_rne(e4m3, ir.fmin_nan(ir.fmax_nan(ratio, ir.cf(0x1p-6f)), ir.cf(448.0f)));
        byte = b.CreateSelect(zero, ir.c32(0x08), scale);  // e4m3(2^-6) for the zero tensor
        mult = b.CreateSelect(zero, ir.cf(0.0f),
                              b.CreateFDiv(b.CreateFDiv(ir.cf(1.0f), per_tensor), ir.e4m3_value(byte)));
        flag = b.CreateZExt(zero, ir.i32);
      }
      break;
    }
  }
  return BlockScale{byte, flag, mult, stored};
}

Value* lower_scale_index(TileCtx& t, int axis, const ScaleInstance& in, Value* rb, Value* cb) {
  Ir& ir = t.ir;
  auto& b = ir.b;
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
