#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "backends/llvm/helpers.hpp"
#include "backends/llvm/lower.hpp"

namespace mxjit::cpu::detail {

llvm::Value* TileCtx::index(int axis, llvm::Value* r, llvm::Value* c) {
  if (axis == plan.ax_r) return ir.b.CreateAdd(r0, r);
  if (axis == plan.ax_c) return ir.b.CreateAdd(c0, c);
  return batch[size_t(axis)];
}

llvm::Value* TileCtx::linear(const std::vector<llvm::Value*>& strides, llvm::Value* r, llvm::Value* c, int skip,
                             int halve_axis) {
  llvm::Value* off = ir.c64(0);
  for (int a = 0; a < plan.rank; ++a) {
    if (a == skip) continue;
    llvm::Value* i = index(a, r, c);
    if (a == halve_axis) i = ir.b.CreateLShr(i, 1);
    off = ir.b.CreateAdd(off, strides[size_t(a)] ? ir.b.CreateMul(i, strides[size_t(a)]) : i);
  }
  return off;
}

llvm::Value* TileCtx::tile_at(int k, llvm::Value* r, llvm::Value* c) {
  llvm::Value* i = ir.b.CreateAdd(ir.b.CreateMul(r, ir.c64(plan.tile_c)), c);
  return ir.load(ir.f32, root_tile[size_t(k)], i, sc_root[size_t(k)]);
}

namespace {

/// Loads a bf16 / f16 / f32 element as FP32 (exactly).
llvm::Value* load_f32(Ir& ir, DType dt, llvm::Value* base, llvm::Value* off, int scope) {
  switch (dt) {
    case DType::bf16: return ir.bf16_to_f32(ir.load(ir.i16, base, off, scope));
    case DType::f16: return ir.f16_to_f32(ir.load(ir.i16, base, off, scope));
    case DType::f32: return ir.load(ir.f32, base, off, scope);
    default: break;
  }
  throw UsageError(fmt::format("CPU backend: inputs of dtype {} are not values", dtype_name(dt)));
}

llvm::Value* lower_dequant(TileCtx& t, const Node& n, llvm::Value* r, llvm::Value* c) {
  Ir& ir = t.ir;
  const int kc = t.p.input_index(n.args[0]->name), ks = t.p.input_index(n.args[1]->name);
  const int axis = n.block.axes[0];
  const bool packed = n.elem.packed();
  // The code byte (FP4: the nibble of this element along the block axis).
  llvm::Value* coff = t.linear(t.in_stride[size_t(kc)], r, c, -2, packed ? axis : -1);
  llvm::Value* code = ir.b.CreateZExt(ir.load(ir.i8, t.in_ptr[size_t(kc)], coff, t.sc_in), ir.i32);
  if (packed) {
    llvm::Value* odd = ir.b.CreateTrunc(ir.b.CreateAnd(t.index(axis, r, c), ir.c64(1)), ir.i32);
    code = ir.b.CreateAnd(ir.b.CreateLShr(code, ir.b.CreateShl(odd, 2)), ir.c32(15));
  }
  // The scale, at the element's block along the block axis.
  llvm::Value* soff = ir.c64(0);
  for (int a = 0; a < t.plan.rank; ++a) {
    llvm::Value* i = t.index(a, r, c);
    if (a == axis) i = ir.b.CreateSDiv(i, ir.c64(n.block.sizes[0]));
    llvm::Value* s = t.in_stride[size_t(ks)][size_t(a)];
    soff = ir.b.CreateAdd(soff, s ? ir.b.CreateMul(i, s) : i);
  }
  llvm::Value* sbits;
  uint32_t sf = 0;
  if (n.scale_format == ScaleFormat::f32) {
    sbits = ir.bits(ir.load(ir.f32, t.in_ptr[size_t(ks)], soff, t.sc_in));
    sf = 2;
  } else {
    sbits = ir.b.CreateZExt(ir.load(ir.i8, t.in_ptr[size_t(ks)], soff, t.sc_in), ir.i32);
    sf = n.scale_format == ScaleFormat::e8m0 ? 0 : 1;
  }
  return ir.call("mxcpu_dequant", ir.f32, {ir.i32, ir.i32, ir.i32, ir.i32},
                 {code, ir.c32(format_word(n.elem)), sbits, ir.c32(sf)});
}

llvm::Value* unary_helper(Ir& ir, const char* name, llvm::Value* x) { return ir.call(name, ir.f32, {ir.f32}, {x}); }

}  // namespace

llvm::Value* lower_value(TileCtx& t, const NodePtr& np, llvm::Value* r, llvm::Value* c,
                         std::map<const Node*, llvm::Value*>& memo) {
  auto it = memo.find(np.get());
  if (it != memo.end()) return it->second;
  Ir& ir = t.ir;
  const Node& n = *np;
  auto arg = [&](size_t i) { return lower_value(t, n.args.at(i), r, c, memo); };
  llvm::Value* v = nullptr;
  switch (n.op) {
    case Op::input: {
      const int k = t.p.input_index(n.name);
      v = load_f32(ir, n.dtype, t.in_ptr[size_t(k)], t.linear(t.in_stride[size_t(k)], r, c), t.sc_in);
      break;
    }
    case Op::vec_input: {
      const int k = t.p.input_index(n.name);
      llvm::Value* i = t.index(n.axis, r, c);
      llvm::Value* s = t.in_stride[size_t(k)][0];
      v = load_f32(ir, n.dtype, t.in_ptr[size_t(k)], s ? ir.b.CreateMul(i, s) : i, t.sc_in);
      break;
    }
    case Op::constant: v = ir.cf(float(n.value)); break;
    case Op::dequant: v = lower_dequant(t, n, r, c); break;
    case Op::neg: v = ir.b.CreateFNeg(arg(0)); break;
    case Op::abs: v = ir.fbits(ir.abs_bits(arg(0))); break;
    case Op::relu: v = ir.fmax_nan(arg(0), ir.cf(0.0f)); break;
    case Op::silu: v = unary_helper(ir, "mxcpu_silu", arg(0)); break;
    case Op::gelu_tanh: v = unary_helper(ir, "mxcpu_gelu_tanh", arg(0)); break;
    case Op::gelu_erf: v = unary_helper(ir, "mxcpu_gelu_erf", arg(0)); break;
    case Op::exp: v = unary_helper(ir, "mxcpu_exp", arg(0)); break;
    case Op::sigmoid: v = unary_helper(ir, "mxcpu_sigmoid", arg(0)); break;
    case Op::round_to: v = unary_helper(ir, n.dtype == DType::bf16 ? "mxcpu_round_bf16" : "mxcpu_round_f16", arg(0)); break;
    case Op::add: v = ir.b.CreateFAdd(arg(0), arg(1)); break;
    case Op::sub: v = ir.b.CreateFSub(arg(0), arg(1)); break;
    case Op::mul: v = ir.b.CreateFMul(arg(0), arg(1)); break;
    case Op::div: v = ir.b.CreateFDiv(arg(0), arg(1)); break;
    case Op::max: v = ir.fmax_nan(arg(0), arg(1)); break;
    case Op::min: v = ir.fmin_nan(arg(0), arg(1)); break;
    default:
      throw UsageError(fmt::format("CPU backend: '{}' is not a value expression this backend lowers", op_name(n.op)));
  }
  memo[np.get()] = v;
  return v;
}

}  // namespace mxjit::cpu::detail
