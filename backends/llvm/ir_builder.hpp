#pragma once
/// \file A thin layer over llvm::IRBuilder for the CPU lowering: constants, counted loops in the
/// shape the loop vectoriser likes, helper calls, and the inline numerics of the hot path
/// (|x| bits, NaN-propagating max/min, bf16/f16 conversions and the RNE element encoder, all
/// select-based so that LLVM vectorises them).
#include <functional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "dsl/format.hpp"

namespace mxjit::cpu::detail {

/// Emits IR into one function.
class Ir {
 public:
  /// Starts emitting at the end of `f`'s (new) entry block.
  explicit Ir(llvm::Function* f);

  llvm::LLVMContext& ctx;  ///< the function's context
  llvm::Module& mod;       ///< the module helpers are declared in
  llvm::Function* fn;      ///< the function being emitted
  llvm::IRBuilder<> b;     ///< the insertion point
  /// Types used throughout (ptr is the opaque pointer).
  llvm::Type *i1, *i8, *i16, *i32, *i64, *f32, *ptr;

  /// i64 / i32 / f32 constants.
  llvm::Value* c64(int64_t v) const;
  llvm::Value* c32(uint32_t v) const;
  llvm::Value* cf(float v) const;

  /// for (i = lo; i < hi; ++i) body(i), i64 counters.
  void loop(llvm::Value* lo, llvm::Value* hi, const std::function<void(llvm::Value*)>& body);
  /// if (cond) then().
  void if_then(llvm::Value* cond, const std::function<void()>& then);
  /// if (cond) then() else otherwise().
  void if_else(llvm::Value* cond, const std::function<void()>& then, const std::function<void()>& otherwise);
  /// A stack slot in the entry block (promoted to a register by mem2reg).
  llvm::Value* slot(llvm::Type* t, const std::string& name);
  /// Calls extern "C" helper `name` (declared on first use; see helpers.hpp).
  llvm::Value* call(const std::string& name, llvm::Type* ret, const std::vector<llvm::Type*>& params,
                    const std::vector<llvm::Value*>& args);

  /// Creates `n` disjoint alias scopes (one per buffer: inputs, each output, each scratch buffer)
  /// so that accesses tagged with different scopes are known not to overlap.
  void make_scopes(int n);
  /// Typed element access: base[idx] with idx an i64; `scope` >= 0 tags the access.
  llvm::Value* at(llvm::Type* t, llvm::Value* base, llvm::Value* idx);
  llvm::Value* load(llvm::Type* t, llvm::Value* base, llvm::Value* idx, int scope = -1);
  void store(llvm::Value* v, llvm::Value* base, llvm::Value* idx, int scope = -1);
  /// base + bytes.
  llvm::Value* offset(llvm::Value* base, llvm::Value* bytes);

  // ---- numerics (all lanes independent: vectorisable) ----
  llvm::Value* bits(llvm::Value* f);      ///< f32 -> i32 pattern
  llvm::Value* fbits(llvm::Value* u);     ///< i32 pattern -> f32
  llvm::Value* abs_bits(llvm::Value* f);  ///< pattern of |f| (NaN stays above 0x7f800000)
  /// Unsigned max / min (i32), signed min (i64).
  llvm::Value* umax(llvm::Value* a, llvm::Value* c);
  llvm::Value* umin(llvm::Value* a, llvm::Value* c);
  llvm::Value* smin64(llvm::Value* a, llvm::Value* c);
  /// True (i1) for any NaN pattern.
  llvm::Value* is_nan(llvm::Value* f);
  /// `f` with FP32 subnormals replaced by zeros of the same sign.
  llvm::Value* flush(llvm::Value* f);
  /// The positive canonical quiet NaN for NaN inputs, `f` otherwise.
  llvm::Value* canonical(llvm::Value* f);
  /// mx_fmax_nan / mx_fmin_nan (NaN -> canonical NaN; max(-0,+0) = +0, min(-0,+0) = -0).
  llvm::Value* fmax_nan(llvm::Value* a, llvm::Value* c);
  llvm::Value* fmin_nan(llvm::Value* a, llvm::Value* c);
  /// 16-bit patterns (i16) to FP32, exactly.
  llvm::Value* bf16_to_f32(llvm::Value* h);
  llvm::Value* f16_to_f32(llvm::Value* h);
  /// FP32 -> bf16 pattern (i16): RNE, NaN -> 0x7FC0.
  llvm::Value* f32_to_bf16(llvm::Value* f);
  /// RNE encode of FP32 `y` to `elem` (i32 code, low bits()): subnormals kept, finite overflow and
  /// Inf saturate, NaN -> the format's NaN code (0 without one); INT8 two's complement.
  llvm::Value* encode_rne(const ElemFormat& elem, llvm::Value* y);
  /// E4M3 code (i32, low 8 bits) -> its exact FP32 value (NaN for 0x7F / 0xFF).
  llvm::Value* e4m3_value(llvm::Value* code);

 private:
  void tag(llvm::Instruction* inst, int scope);
  std::vector<llvm::MDNode*> scopes_, noalias_;
};

}  // namespace mxjit::cpu::detail
