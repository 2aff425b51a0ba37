#include "backends/llvm/ir_builder.hpp"

#include <bit>
#include <cmath>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

namespace mxjit::cpu::detail {

Ir::Ir(llvm::Function* f)
    : ctx(f->getContext()), mod(*f->getParent()), fn(f), b(llvm::BasicBlock::Create(f->getContext(), "entry", f)) {
  i1 = b.getInt1Ty();
  i8 = b.getInt8Ty();
  i16 = b.getInt16Ty();
  i32 = b.getInt32Ty();
  i64 = b.getInt64Ty();
  f32 = b.getFloatTy();
  ptr = b.getPtrTy();
}

llvm::Value* Ir::c64(int64_t v) const { return llvm::ConstantInt::get(i64, uint64_t(v), true); }
llvm::Value* Ir::c32(uint32_t v) const { return llvm::ConstantInt::get(i32, v); }
llvm::Value* Ir::cf(float v) const { return llvm::ConstantFP::get(f32, double(v)); }

void Ir::loop(llvm::Value* lo, llvm::Value* hi, const std::function<void(llvm::Value*)>& body) {
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, "loop", fn);
  llvm::BasicBlock* bodyb = llvm::BasicBlock::Create(ctx, "body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(i64, 2, "i");
  i->addIncoming(lo, pre);
  b.CreateCondBr(b.CreateICmpSLT(i, hi), bodyb, exit);
  b.SetInsertPoint(bodyb);
  body(i);
  llvm::Value* next = b.CreateAdd(i, c64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateBr(head);
  b.SetInsertPoint(exit);
}

void Ir::if_then(llvm::Value* cond, const std::function<void()>& then) {
  llvm::BasicBlock* t = llvm::BasicBlock::Create(ctx, "then", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "endif", fn);
  b.CreateCondBr(cond, t, done);
  b.SetInsertPoint(t);
  then();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

void Ir::if_else(llvm::Value* cond, const std::function<void()>& then, const std::function<void()>& otherwise) {
  llvm::BasicBlock* t = llvm::BasicBlock::Create(ctx, "then", fn);
  llvm::BasicBlock* e = llvm::BasicBlock::Create(ctx, "else", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "endif", fn);
  b.CreateCondBr(cond, t, e);
  b.SetInsertPoint(t);
  then();
  b.CreateBr(done);
  b.SetInsertPoint(e);
  otherwise();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

llvm::Value* Ir::slot(llvm::Type* t, const std::string& name) {
  llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  return entry.CreateAlloca(t, nullptr, name);
}

llvm::Value* Ir::call(const std::string& name, llvm::Type* ret, const std::vector<llvm::Type*>& params,
                      const std::vector<llvm::Value*>& args) {
  llvm::FunctionType* ft = llvm::FunctionType::get(ret, params, false);
  llvm::FunctionCallee callee = mod.getOrInsertFunction(name, ft);
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->addFnAttr(llvm::Attribute::WillReturn);
  }
  return b.CreateCall(callee, args);
}

void Ir::make_scopes(int n) {
  llvm::MDBuilder md(ctx);
  llvm::MDNode* domain = md.createAnonymousAliasScopeDomain("mxcpu");
  for (int i = 0; i < n; ++i) scopes_.push_back(md.createAnonymousAliasScope(domain));
  for (int i = 0; i < n; ++i) {
    std::vector<llvm::Metadata*> others;
    for (int j = 0; j < n; ++j)
      if (j != i) others.push_back(scopes_[size_t(j)]);
    noalias_.push_back(llvm::MDNode::get(ctx, others));
  }
}

void Ir::tag(llvm::Instruction* inst, int scope) {
  if (scope < 0 || scope >= int(scopes_.size())) return;
  inst->setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx, {scopes_[size_t(scope)]}));
  inst->setMetadata(llvm::LLVMContext::MD_noalias, noalias_[size_t(scope)]);
}

llvm::Value* Ir::at(llvm::Type* t, llvm::Value* base, llvm::Value* idx) { return b.CreateInBoundsGEP(t, base, idx); }
llvm::Value* Ir::load(llvm::Type* t, llvm::Value* base, llvm::Value* idx, int scope) {
  llvm::LoadInst* l = b.CreateLoad(t, at(t, base, idx));
  tag(l, scope);
  return l;
}
void Ir::store(llvm::Value* v, llvm::Value* base, llvm::Value* idx, int scope) {
  tag(b.CreateStore(v, at(v->getType(), base, idx)), scope);
}
llvm::Value* Ir::offset(llvm::Value* base, llvm::Value* bytes) { return b.CreateInBoundsGEP(i8, base, bytes); }

llvm::Value* Ir::bits(llvm::Value* f) { return b.CreateBitCast(f, i32); }
llvm::Value* Ir::fbits(llvm::Value* u) { return b.CreateBitCast(u, f32); }
llvm::Value* Ir::abs_bits(llvm::Value* f) { return b.CreateAnd(bits(f), c32(0x7fffffffu)); }
llvm::Value* Ir::umax(llvm::Value* a, llvm::Value* c) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, a, c); }
llvm::Value* Ir::umin(llvm::Value* a, llvm::Value* c) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, a, c); }
llvm::Value* Ir::smin64(llvm::Value* a, llvm::Value* c) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, c); }
llvm::Value* Ir::is_nan(llvm::Value* f) { return b.CreateICmpUGT(abs_bits(f), c32(0x7f800000u)); }

llvm::Value* Ir::flush(llvm::Value* f) {
  llvm::Value* u = bits(f);
  llvm::Value* sub = b.CreateICmpULT(b.CreateAnd(u, c32(0x7fffffffu)), c32(0x00800000u));
  return fbits(b.CreateSelect(sub, b.CreateAnd(u, c32(0x80000000u)), u));
}

llvm::Value* Ir::canonical(llvm::Value* f) { return b.CreateSelect(is_nan(f), cf(std::bit_cast<float>(0x7fc00000u)), f); }

llvm::Value* Ir::fmax_nan(llvm::Value* a, llvm::Value* c) {
  llvm::Value* nan = b.CreateOr(is_nan(a), is_nan(c));
  llvm::Value* a_neg = b.CreateICmpSLT(bits(a), c32(0));
  llvm::Value* eq = b.CreateSelect(a_neg, c, a);  // a == c: +0 wins over -0
  llvm::Value* r = b.CreateSelect(b.CreateFCmpOEQ(a, c), eq, b.CreateSelect(b.CreateFCmpOGT(a, c), a, c));
  return b.CreateSelect(nan, cf(std::bit_cast<float>(0x7fc00000u)), r);
}

llvm::Value* Ir::fmin_nan(llvm::Value* a, llvm::Value* c) {
  llvm::Value* nan = b.CreateOr(is_nan(a), is_nan(c));
  llvm::Value* a_neg = b.CreateICmpSLT(bits(a), c32(0));
  llvm::Value* eq = b.CreateSelect(a_neg, a, c);  // a == c: -0 wins over +0
  llvm::Value* r = b.CreateSelect(b.CreateFCmpOEQ(a, c), eq, b.CreateSelect(b.CreateFCmpOLT(a, c), a, c));
  return b.CreateSelect(nan, cf(std::bit_cast<float>(0x7fc00000u)), r);
}

llvm::Value* Ir::bf16_to_f32(llvm::Value* h) { return fbits(b.CreateShl(b.CreateZExt(h, i32), 16)); }

llvm::Value* Ir::f16_to_f32(llvm::Value* h) {
  llvm::Value* u = b.CreateZExt(h, i32);
  llvm::Value* sign = b.CreateShl(b.CreateAnd(u, c32(0x8000u)), 16);
  llvm::Value* e = b.CreateAnd(b.CreateLShr(u, 10), c32(0x1fu));
  llvm::Value* m = b.CreateAnd(u, c32(0x3ffu));
  llvm::Value* special = b.CreateOr(sign, b.CreateOr(c32(0x7f800000u), b.CreateShl(m, 13)));
  llvm::Value* normal = b.CreateOr(sign, b.CreateOr(b.CreateShl(b.CreateAdd(e, c32(112)), 23), b.CreateShl(m, 13)));
  // Subnormal: m * 2^-24 (exact), with the sign bit.
  llvm::Value* sub = b.CreateOr(sign, bits(b.CreateFMul(b.CreateUIToFP(m, f32), cf(5.9604644775390625e-8f))));
  llvm::Value* r = b.CreateSelect(b.CreateICmpEQ(e, c32(0x1f)), special, b.CreateSelect(b.CreateICmpEQ(e, c32(0)), sub, normal));
  return fbits(r);
}

llvm::Value* Ir::f32_to_bf16(llvm::Value* f) {
  llvm::Value* u = bits(f);
  llvm::Value* r = b.CreateLShr(b.CreateAdd(u, b.CreateAdd(c32(0x7fffu), b.CreateAnd(b.CreateLShr(u, 16), c32(1)))), 16);
  return b.CreateTrunc(b.CreateSelect(is_nan(f), c32(0x7fc0u), r), i16);
}

llvm::Value* Ir::encode_rne(const ElemFormat& elem, llvm::Value* y) {
  llvm::Value* u = bits(y);
  llvm::Value* a = b.CreateAnd(u, c32(0x7fffffffu));
  llvm::Value* nan = b.CreateICmpUGT(a, c32(0x7f800000u));
  llvm::Value* negative = b.CreateICmpSLT(u, c32(0));
  // RNE to an integer of a value in [0, 2^23): add 2^23 (one rounding), subtract the pattern.
  auto round_int = [&](llvm::Value* v) { return b.CreateSub(bits(b.CreateFAdd(v, cf(8388608.0f))), c32(0x4b000000u)); };
  if (elem.is_int) {
    // k = RNE(|y| * 2^mbits) saturated to 127; |y| is clamped first so that the product stays small.
    llvm::Value* ay = fbits(b.CreateSelect(b.CreateICmpUGT(a, bits(cf(4.0f))), bits(cf(4.0f)), a));
    llvm::Value* k = umin(round_int(b.CreateFMul(ay, cf(float(1 << elem.mbits)))), c32(127));
    llvm::Value* neg = b.CreateAnd(b.CreateSub(c32(256), k), c32(0xffu));
    llvm::Value* code = b.CreateSelect(b.CreateAnd(negative, b.CreateICmpNE(k, c32(0))), neg, k);
    return b.CreateSelect(nan, c32(0), code);
  }
  const int M = elem.mbits, bias = elem.bias(), emin = 1 - bias, nbits = elem.bits();
  const uint32_t max_code = [&] {
    const uint32_t top = (1u << elem.ebits) - 1u;
    const uint32_t field = elem.specials == Specials::ieee ? top - 1u : top;
    const uint32_t mant = elem.specials == Specials::fn ? (1u << M) - 2u : (1u << M) - 1u;
    return (field << M) | mant;
  }();
  const uint32_t nan_code = elem.has_nan() ? (1u << (nbits - 1)) - 1u : 0u;
  // Normal results: round the pattern's low (23 - M) bits to nearest even, then rebias.
  const int sh = 23 - M;
  llvm::Value* odd = b.CreateAnd(b.CreateLShr(a, uint64_t(sh)), c32(1));
  llvm::Value* rounded = b.CreateAdd(a, b.CreateAdd(c32((1u << (sh - 1)) - 1u), odd));
  llvm::Value* norm = b.CreateSub(b.CreateLShr(rounded, uint64_t(sh)), c32(uint32_t(127 - bias) << M));
  // Subnormal results (|y| < 2^emin): RNE(|y| * 2^(M - emin)), exact scaling by a power of two.
  llvm::Value* scaled = b.CreateFMul(fbits(a), cf(std::ldexp(1.0f, M - emin)));
  llvm::Value* sub = round_int(scaled);
  const uint32_t min_normal = uint32_t(emin + 127) << 23;
  llvm::Value* mag = b.CreateSelect(b.CreateICmpULT(a, c32(min_normal)), sub, norm);
  mag = umin(mag, c32(max_code));  // saturate (Inf included)
  llvm::Value* code = b.CreateOr(mag, b.CreateShl(b.CreateZExt(negative, i32), uint64_t(nbits - 1)));
  return b.CreateSelect(nan, c32(nan_code), code);
}

llvm::Value* Ir::e4m3_value(llvm::Value* code) {
  llvm::Value* sign = b.CreateShl(b.CreateAnd(code, c32(0x80u)), 24);
  llvm::Value* field = b.CreateAnd(b.CreateLShr(code, 3), c32(15));
  llvm::Value* mant = b.CreateAnd(code, c32(7));
  llvm::Value* normal = b.CreateOr(b.CreateShl(b.CreateAdd(field, c32(120)), 23), b.CreateShl(mant, 20));
  llvm::Value* sub = bits(b.CreateFMul(b.CreateUIToFP(mant, f32), cf(0x1p-9f)));  // m * 2^-9, exact
  llvm::Value* mag = b.CreateSelect(b.CreateICmpEQ(field, c32(0)), sub, normal);
  llvm::Value* nan = b.CreateICmpEQ(b.CreateAnd(code, c32(0x7fu)), c32(0x7fu));
  return b.CreateSelect(nan, cf(std::bit_cast<float>(0x7fc00000u)), fbits(b.CreateOr(mag, sign)));
}

}  // namespace mxjit::cpu::detail
