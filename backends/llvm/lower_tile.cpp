// The tile function: parameters, phase 1 (values), amax reductions, scales and codes per scale
// instance, and the stores of every output (see lower.hpp).
#include <fmt/format.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "dsl/errors.hpp"
#include "backends/llvm/helpers.hpp"
#include "backends/llvm/lower.hpp"

namespace mxjit::cpu::detail {
namespace {

using llvm::Value;

class TileEmitter {
 public:
  explicit TileEmitter(TileCtx& t) : t_(t), ir_(t.ir), vs_(t.plan.values) {}

  void phase_values() {
    ir_.loop(ir_.c64(0), t_.nr, [&](Value* r) {
      ir_.loop(ir_.c64(0), t_.nc, [&](Value* c) {
        std::map<const Node*, Value*> memo;
        for (size_t k = 0; k < vs_.roots.size(); ++k) {
          Value* v = lower_value(t_, vs_.roots[k], r, c, memo);
          ir_.store(v, t_.root_tile[k], row_col(r, c), t_.sc_root[k]);
        }
      });
    });
  }

  /// |x| as bits, NaN above 0x7f800000; with AmaxNan::ignore NaN counts as 0.
  Value* amax_bits(Value* x, AmaxNan nan) {
    Value* a = ir_.abs_bits(x);
    if (nan == AmaxNan::propagate) return a;
    return ir_.b.CreateSelect(ir_.b.CreateICmpUGT(a, ir_.c32(0x7f800000u)), ir_.c32(0), a);
  }

  /// max |x| (as bits) over root tile k; NaN anywhere gives a pattern above 0x7f800000 (unless
  /// `nan` ignores it).
  Value* tile_amax(int k, bool flush, AmaxNan nan = AmaxNan::propagate) {
    Value* acc = ir_.slot(ir_.i32, "amax");
    ir_.b.CreateStore(ir_.c32(0), acc);
    ir_.loop(ir_.c64(0), t_.nr, [&](Value* r) {
      ir_.loop(ir_.c64(0), t_.nc, [&](Value* c) {
        Value* x = t_.tile_at(k, r, c);
        if (flush) x = ir_.flush(x);
        ir_.b.CreateStore(ir_.umax(ir_.b.CreateLoad(ir_.i32, acc), amax_bits(x, nan)), acc);
      });
    });
    return ir_.b.CreateLoad(ir_.i32, acc);
  }

  void atomic_max(int slot, Value* m) {
    ir_.b.CreateAtomicRMW(llvm::AtomicRMWInst::UMax, ir_.at(ir_.i32, t_.slots, ir_.c64(slot)), m, llvm::MaybeAlign(4),
                          llvm::AtomicOrdering::Monotonic);
  }

  void prepass_amax() {
    for (const ScaleInstance& in : t_.plan.instances)
      if (in.tamax_slot >= 0)
        atomic_max(in.tamax_slot, tile_amax(vs_.scale_root[size_t(in.scale)], in.flush,
                                            vs_.scales[size_t(in.scale)]->amax_nan));
    // Whole-axis blocks: this tile's part of each block, maxed into the block's buffer word.
    for (const ScaleInstance& in : t_.plan.instances) {
      if (in.whole < 0) continue;
      ir_.loop(ir_.c64(0), ceil_div(t_.nr, in.br), [&](Value* rb) {
        block_amaxes(in, rb, [&](Value* cb, Value* m) {
          ir_.b.CreateAtomicRMW(llvm::AtomicRMWInst::UMax, whole_word(in, rb, cb), m, llvm::MaybeAlign(4),
                                llvm::AtomicOrdering::Monotonic);
        });
      });
    }
  }

  void output_amax() {
    for (size_t o = 0; o < t_.p.outputs().size(); ++o)
      if (t_.plan.amax_slot[o] >= 0)
        atomic_max(t_.plan.amax_slot[o], tile_amax(vs_.output_index[o], false, t_.p.outputs()[o].node->amax_nan));
  }

  void instance(int i) {
    const ScaleInstance& in = t_.plan.instances[size_t(i)];
    std::vector<int> qs;
    for (size_t q = 0; q < vs_.quantizes.size(); ++q)
      if (t_.plan.quantize_instance[q] == i) qs.push_back(int(q));
    auto body = [&] { scales_and_codes(i, qs); };
    if (!in.jagged) return body();
    // Outside tiles (rows past the last group end): no scales, codes 0.
    ir_.if_else(ir_.b.CreateICmpSGE(t_.group, ir_.c64(0)), body, [&] {
      for (int q : qs)
        ir_.loop(ir_.c64(0), t_.nr, [&](Value* r) {
          ir_.loop(ir_.c64(0), t_.nc, [&](Value* c) { ir_.store(ir_.b.getInt8(0), t_.codes[size_t(q)], row_col(r, c), t_.sc_codes[size_t(q)]); });
        });
    });
  }

  void store_elems(int o) {
    const Output& out = t_.p.outputs()[size_t(o)];
    const int q = vs_.output_index[size_t(o)];
    const bool packed = out.node->elem.packed();
    Value* codes = t_.codes[size_t(q)];
    auto code_at = [&](Value* r, Value* c) { return ir_.load(ir_.i8, codes, row_col(r, c), t_.sc_codes[size_t(q)]); };
    auto pack = [&](Value* lo, Value* hi) { return ir_.b.CreateOr(ir_.b.CreateAnd(lo, ir_.b.getInt8(15)), ir_.b.CreateShl(hi, 4)); };
    store_output(o, packed,
                 [&](Value* r, Value* c) { return code_at(r, c); },
                 [&](Value* r, Value* c, bool along_c) {
                   Value* one = ir_.c64(1);
                   return along_c ? pack(code_at(r, c), code_at(r, ir_.b.CreateAdd(c, one)))
                                  : pack(code_at(r, c), code_at(ir_.b.CreateAdd(r, one), c));
                 });
  }

  void store_values(int o) {
    const Output& out = t_.p.outputs()[size_t(o)];
    const int k = vs_.output_index[size_t(o)];
    store_output(o, false, [&](Value* r, Value* c) -> Value* {
      Value* x = t_.tile_at(k, r, c);
      switch (out.dtype) {
        case DType::bf16: return ir_.f32_to_bf16(x);
        case DType::f16: return ir_.b.CreateTrunc(ir_.call("mxcpu_f32_to_f16", ir_.i32, {ir_.f32}, {x}), ir_.i16);
        case DType::f32: return ir_.canonical(x);
        default: break;
      }
      throw UsageError(fmt::format("CPU backend: values output '{}' of dtype {}", out.name, dtype_name(out.dtype)));
    }, {});
  }

 private:
  Value* row_col(Value* r, Value* c) { return ir_.b.CreateAdd(ir_.b.CreateMul(r, ir_.c64(t_.plan.tile_c)), c); }

  Value* ceil_div(Value* n, int64_t d) { return ir_.b.CreateSDiv(ir_.b.CreateAdd(n, ir_.c64(d - 1)), ir_.c64(d)); }

  /// The tile's block amaxes of block row rb (rows [rlo, rhi) of the tile): f(cb, m) per block
  /// with its amax bits m over the tile's elements.
  void block_amaxes(const ScaleInstance& in, Value* rb, const std::function<void(Value*, Value*)>& f) {
    const int root = vs_.scale_root[size_t(in.scale)];
    const AmaxNan nan = vs_.scales[size_t(in.scale)]->amax_nan;
    Value* nbc = ceil_div(t_.nc, in.bc);
    auto absx = [&](Value* r, Value* c) {
      Value* x = t_.tile_at(root, r, c);
      return amax_bits(in.flush ? ir_.flush(x) : x, nan);
    };
    Value* rlo = row_lo(in, rb);
    Value* rhi = row_hi(in, rlo);
    Value* acc = ir_.slot(ir_.i32, "bmax");
    if (!in.jagged && in.br == 1) {
      ir_.loop(ir_.c64(0), nbc, [&](Value* cb) {
        Value* clo = ir_.b.CreateMul(cb, ir_.c64(in.bc));
        ir_.b.CreateStore(ir_.c32(0), acc);
        ir_.loop(clo, ir_.smin64(t_.nc, ir_.b.CreateAdd(clo, ir_.c64(in.bc))), [&](Value* c) {
          ir_.b.CreateStore(ir_.umax(ir_.b.CreateLoad(ir_.i32, acc), absx(rlo, c)), acc);
        });
        f(cb, ir_.b.CreateLoad(ir_.i32, acc));
      });
      return;
    }
    ir_.loop(ir_.c64(0), t_.nc, [&](Value* c) { ir_.store(ir_.c32(0), t_.colmax, c, t_.sc_colmax); });
    ir_.loop(rlo, rhi, [&](Value* r) {
      ir_.loop(ir_.c64(0), t_.nc, [&](Value* c) {
        ir_.store(ir_.umax(ir_.load(ir_.i32, t_.colmax, c, t_.sc_colmax), absx(r, c)), t_.colmax, c, t_.sc_colmax);
      });
    });
    ir_.loop(ir_.c64(0), nbc, [&](Value* cb) {
      Value* clo = ir_.b.CreateMul(cb, ir_.c64(in.bc));
      ir_.b.CreateStore(ir_.c32(0), acc);
      ir_.loop(clo, ir_.smin64(t_.nc, ir_.b.CreateAdd(clo, ir_.c64(in.bc))), [&](Value* c) {
        ir_.b.CreateStore(ir_.umax(ir_.b.CreateLoad(ir_.i32, acc), ir_.load(ir_.i32, t_.colmax, c, t_.sc_colmax)), acc);
      });
      f(cb, ir_.b.CreateLoad(ir_.i32, acc));
    });
  }

  Value* row_lo(const ScaleInstance& in, Value* rb) { return in.jagged ? ir_.c64(0) : ir_.b.CreateMul(rb, ir_.c64(in.br)); }
  Value* row_hi(const ScaleInstance& in, Value* rlo) {
    return in.jagged ? t_.nr : ir_.smin64(t_.nr, ir_.b.CreateAdd(rlo, ir_.c64(in.br)));
  }

  /// Pointer to the amax word of block (rb, cb) of the current tile in whole-axis buffer in.whole.
  Value* whole_word(const ScaleInstance& in, Value* rb, Value* cb) {
    Value* idx = ir_.c64(0);
    for (int a = 0; a < t_.plan.rank; ++a)
      if (!in.whole_along(a))
        idx = ir_.b.CreateAdd(idx, ir_.b.CreateMul(lower_scale_index(t_, a, in, rb, cb),
                                                   t_.whole_stride[size_t(in.whole)][size_t(a)]));
    return ir_.at(ir_.i32, t_.whole_ptr[size_t(in.whole)], idx);
  }

  /// Block amax per block of block row rb -> block(rb, cb, m) for each block, then the codes of
  /// the block row; whole-axis blocks read m from the amax pass's buffer.
  void scales_and_codes(int i, const std::vector<int>& qs) {
    const ScaleInstance& in = t_.plan.instances[size_t(i)];
    Value* nbr = in.jagged ? ir_.c64(1) : ceil_div(t_.nr, in.br);
    ir_.loop(ir_.c64(0), nbr, [&](Value* rb) {
      if (in.whole >= 0) {
        ir_.loop(ir_.c64(0), ceil_div(t_.nc, in.bc), [&](Value* cb) {
          block(i, rb, cb, ir_.b.CreateLoad(ir_.i32, whole_word(in, rb, cb)));
        });
      } else {
        block_amaxes(in, rb, [&](Value* cb, Value* m) { block(i, rb, cb, m); });
      }
      Value* rlo = row_lo(in, rb);
      for (int q : qs) encode_rows(i, q, rlo, row_hi(in, rlo));
    });
  }

  /// The scale of one block from its amax bits m: multiplier and flag for the codes, and every
  /// scales output of this instance (whole-axis blocks: by the tiles at index 0 of the whole axes).
  void block(int i, Value* rb, Value* cb, Value* m) {
    const ScaleInstance& in = t_.plan.instances[size_t(i)];
    const BlockScale s = lower_block_scale(t_, in, m);
    ir_.store(s.mult, t_.blk_mult[size_t(i)], cb, t_.sc_mult[size_t(i)]);
    ir_.store(s.flag, t_.blk_flag[size_t(i)], cb, t_.sc_flag[size_t(i)]);
    auto store = [&] {
      for (size_t o = 0; o < t_.p.outputs().size(); ++o) {
        if (t_.plan.output_instance[o] != i) continue;
        Value* off = lower_scale_offset(t_, int(o), in, rb, cb);
        if (s.stored && t_.p.outputs()[o].dtype == DType::bf16) ir_.store(ir_.f32_to_bf16(s.stored), t_.out_ptr[o], off, t_.sc_out[o]);
        else if (s.stored) ir_.store(ir_.canonical(s.stored), t_.out_ptr[o], off, t_.sc_out[o]);
        else ir_.store(ir_.b.CreateTrunc(s.byte, ir_.i8), t_.out_ptr[o], off, t_.sc_out[o]);
      }
    };
    if (in.whole < 0) return store();
    Value* first = ir_.b.getTrue();
    for (int a = 0; a < t_.plan.rank; ++a) {
      if (!in.whole_along(a)) continue;
      Value* at = a == t_.plan.ax_r ? t_.r0 : a == t_.plan.ax_c ? t_.c0 : t_.batch[size_t(a)];
      first = ir_.b.CreateAnd(first, ir_.b.CreateICmpEQ(at, ir_.c64(0)));
    }
    ir_.if_then(first, store);
  }

  /// Codes of quantize q for rows [rlo, rhi) with the block row's multipliers and flags: read per
  /// block as scalars (bc >= 8: whole vectors per block), per column (bc == 1) or from a row
  /// expanded per column (other bc).
  void encode_rows(int i, int q, Value* rlo, Value* rhi) {
    const ScaleInstance& in = t_.plan.instances[size_t(i)];
    const Node& qn = *vs_.quantizes[size_t(q)];
    const Node& sn = *vs_.scales[size_t(in.scale)];
    const int root = vs_.scale_root[size_t(in.scale)];
    auto& b = ir_.b;
    const uint32_t nan_code = qn.elem.has_nan() ? (1u << (qn.elem.bits() - 1)) - 1u : 0u;
    auto encode = [&](Value* r, Value* c, Value* mult, Value* flag) {
      Value* x = t_.tile_at(root, r, c);
      if (qn.flush_subnormals) x = ir_.flush(x);
      Value* y = lower_scale_element(ir_, sn, x, mult);
      Value* code;
      if (qn.round == Round::stochastic) {
        Value* lin = ir_.c64(0);
        for (int a = 0; a < t_.plan.rank; ++a) lin = b.CreateAdd(lin, b.CreateMul(t_.index(a, r, c), t_.dom_stride[size_t(a)]));
        code = ir_.call("mxcpu_encode_sr", ir_.i32, {ir_.f32, ir_.i32, ir_.i64, ir_.i64, ir_.i64},
                        {y, ir_.c32(format_word(qn.elem)), ir_.c64(int64_t(qn.seed)), ir_.c64(int64_t(qn.offset)), lin});
      } else if (qn.saturate == Saturate::none) {
        code = ir_.call("mxcpu_encode_nosat", ir_.i32, {ir_.f32, ir_.i32}, {y, ir_.c32(format_word(qn.elem))});
      } else {
        code = ir_.encode_rne(qn.elem, y);
      }
      code = b.CreateSelect(b.CreateICmpEQ(flag, ir_.c32(0)), code,
                            b.CreateSelect(b.CreateICmpEQ(flag, ir_.c32(1)), ir_.c32(0), ir_.c32(nan_code)));
      ir_.store(b.CreateTrunc(code, ir_.i8), t_.codes[size_t(q)], row_col(r, c), t_.sc_codes[size_t(q)]);
    };
    Value* mult_buf = t_.blk_mult[size_t(i)];
    Value* flag_buf = t_.blk_flag[size_t(i)];
    const int sm = t_.sc_mult[size_t(i)], sf = t_.sc_flag[size_t(i)];
    if (in.bc >= 8) {
      Value* nbc = ceil_div(t_.nc, in.bc);
      ir_.loop(rlo, rhi, [&](Value* r) {
        ir_.loop(ir_.c64(0), nbc, [&](Value* cb) {
          Value* mult = ir_.load(ir_.f32, mult_buf, cb, sm);
          Value* flag = ir_.load(ir_.i32, flag_buf, cb, sf);
          Value* clo = b.CreateMul(cb, ir_.c64(in.bc));
          ir_.loop(clo, ir_.smin64(t_.nc, b.CreateAdd(clo, ir_.c64(in.bc))), [&](Value* c) { encode(r, c, mult, flag); });
        });
      });
      return;
    }
    if (in.bc > 1) {
      ir_.loop(ir_.c64(0), t_.nc, [&](Value* c) {
        Value* blk = b.CreateSDiv(c, ir_.c64(in.bc));
        ir_.store(ir_.load(ir_.f32, mult_buf, blk, sm), t_.mrow, c, t_.sc_mrow);
        ir_.store(ir_.load(ir_.i32, flag_buf, blk, sf), t_.frow, c, t_.sc_frow);
      });
      mult_buf = t_.mrow;
      flag_buf = t_.frow;
    }
    const int sm2 = in.bc > 1 ? t_.sc_mrow : sm, sf2 = in.bc > 1 ? t_.sc_frow : sf;
    ir_.loop(rlo, rhi, [&](Value* r) {
      ir_.loop(ir_.c64(0), t_.nc, [&](Value* c) {
        encode(r, c, ir_.load(ir_.f32, mult_buf, c, sm2), ir_.load(ir_.i32, flag_buf, c, sf2));
      });
    });
  }

  /// Stores output o along its innermost axis: value(r, c) per element, or pair(r, c, along_c)
  /// per packed byte (FP4: element 2i low nibble, 2i+1 high nibble).
  void store_output(int o, bool packed, const std::function<Value*(Value*, Value*)>& value,
                    const std::function<Value*(Value*, Value*, bool)>& pair) {
    const Output& out = t_.p.outputs()[size_t(o)];
    const int inner = out.layout.order(t_.plan.rank).back();
    const auto& st = t_.out_stride[size_t(o)];
    Value* base_ptr = t_.out_ptr[size_t(o)];
    const int sc = t_.sc_out[size_t(o)];
    auto& b = ir_.b;
    Value* zero = ir_.c64(0);
    if (inner == t_.plan.ax_c) {
      ir_.loop(zero, t_.nr, [&](Value* r) {
        Value* base = t_.linear(st, r, zero, inner);
        if (!packed) {
          base = b.CreateAdd(base, t_.c0);
          ir_.loop(zero, t_.nc, [&](Value* c) { ir_.store(value(r, c), base_ptr, b.CreateAdd(base, c), sc); });
        } else {
          base = b.CreateAdd(base, b.CreateLShr(t_.c0, 1));
          ir_.loop(zero, b.CreateLShr(t_.nc, 1), [&](Value* c2) {
            ir_.store(pair(r, b.CreateShl(c2, 1), true), base_ptr, b.CreateAdd(base, c2), sc);
          });
        }
      });
    } else if (inner == t_.plan.ax_r) {
      ir_.loop(zero, t_.nc, [&](Value* c) {
        Value* base = t_.linear(st, zero, c, inner);
        if (!packed) {
          base = b.CreateAdd(base, t_.r0);
          ir_.loop(zero, t_.nr, [&](Value* r) { ir_.store(value(r, c), base_ptr, b.CreateAdd(base, r), sc); });
        } else {
          base = b.CreateAdd(base, b.CreateLShr(t_.r0, 1));
          ir_.loop(zero, b.CreateLShr(t_.nr, 1), [&](Value* r2) {
            ir_.store(pair(b.CreateShl(r2, 1), c, false), base_ptr, b.CreateAdd(base, r2), sc);
          });
        }
      });
    } else {
      if (packed) throw UsageError(fmt::format("CPU backend: output '{}' packs FP4 along a batch axis", out.name));
      ir_.loop(zero, t_.nr, [&](Value* r) {
        ir_.loop(zero, t_.nc, [&](Value* c) { ir_.store(value(r, c), base_ptr, t_.linear(st, r, c), sc); });
      });
    }
  }

  TileCtx& t_;
  Ir& ir_;
  const ::mxjit::detail::ValueSet& vs_;
};

}  // namespace

std::unique_ptr<llvm::Module> lower_pipeline(const Pipeline& p, const CpuPlan& plan, llvm::LLVMContext& ctx) {
  auto mod = std::make_unique<llvm::Module>(plan.function_name, ctx);
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr, ptr}, false);
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, plan.function_name, *mod);
  for (unsigned a : {0u, 1u, 2u}) f->addParamAttr(a, llvm::Attribute::NoAlias);
  f->addParamAttr(0, llvm::Attribute::ReadOnly);
  f->addParamAttr(1, llvm::Attribute::ReadOnly);
  f->setDoesNotThrow();
  Ir ir(f);
  TileCtx t(p, plan, ir);
  llvm::Value* P = f->getArg(0);
  llvm::Value* T = f->getArg(1);
  llvm::Value* S = f->getArg(2);
  auto word = [&](llvm::Value* base, int k) { return ir.load(ir.i64, base, ir.c64(k)); };
  auto pointer = [&](int k) { return ir.b.CreateIntToPtr(word(P, k), ir.ptr); };
  const int rank = plan.rank;
  for (int k = 0; k < plan.ni; ++k) {
    t.in_ptr.push_back(pointer(plan.p_in(k)));
    const InputDecl& d = p.inputs()[size_t(k)];
    const int r = d.one_dim() ? 1 : rank;
    std::vector<llvm::Value*> s;
    for (int a = 0; a < r; ++a)
      s.push_back(a == plan.unit_axis[size_t(k)] ? nullptr : word(P, plan.p_in_stride(k, a)));
    t.in_stride.push_back(s);
  }
  for (int o = 0; o < plan.no; ++o) {
    t.out_ptr.push_back(pointer(plan.p_out(o)));
    const Output& out = p.outputs()[size_t(o)];
    const bool compact = out.kind == OutputKind::elems || out.kind == OutputKind::values;
    const int inner = compact ? out.layout.order(rank).back() : -1;
    std::vector<llvm::Value*> s, sh;
    for (int a = 0; a < rank; ++a) {
      s.push_back(compact && a == inner ? nullptr : word(P, plan.p_out_stride(o, a)));
      sh.push_back(word(P, plan.p_out_shape(o, a)));
    }
    t.out_stride.push_back(s);
    t.out_shape.push_back(sh);
  }
  for (int a = 0; a < rank; ++a) {
    t.shape.push_back(word(P, plan.p_shape(a)));
    t.dom_stride.push_back(word(P, plan.p_dom_stride(a)));
  }
  t.slots = pointer(plan.p_slots());
  for (int s = 0; s < plan.slots; ++s)
    t.tamax.push_back(ir.fbits(ir.b.CreateTrunc(word(P, plan.p_tamax(s)), ir.i32)));
  for (int k = 0; k < plan.wholes; ++k) {
    t.whole_ptr.push_back(pointer(plan.p_whole(k)));
    std::vector<llvm::Value*> st;
    for (int a = 0; a < rank; ++a) st.push_back(word(P, plan.p_whole_stride(k, a)));
    t.whole_stride.push_back(st);
  }
  t.mode = word(T, kMode);
  t.r0 = word(T, kR0);
  t.nr = word(T, kNr);
  t.c0 = word(T, kC0);
  t.nc = word(T, kNc);
  t.group = word(T, kGroup);
  llvm::Value* cap = word(T, kCap);
  for (int a = 0; a < rank; ++a) t.batch.push_back(word(T, kBatch + a));
  const ScratchLayout L = scratch_layout(plan);
  t.colmax = ir.offset(S, ir.c64(L.colmax));
  t.mrow = ir.offset(S, ir.c64(L.mrow));
  t.frow = ir.offset(S, ir.c64(L.frow));
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    t.blk_mult.push_back(ir.offset(S, ir.c64(L.blk_mult[i])));
    t.blk_flag.push_back(ir.offset(S, ir.c64(L.blk_flag[i])));
  }
  llvm::Value* row_bytes = ir.b.CreateMul(cap, ir.c64(plan.tile_c));
  llvm::Value* fixed = ir.offset(S, ir.c64(L.fixed));
  for (size_t k = 0; k < plan.values.roots.size(); ++k)
    t.root_tile.push_back(ir.offset(fixed, ir.b.CreateMul(row_bytes, ir.c64(int64_t(4 * k)))));
  llvm::Value* codes0 = ir.offset(fixed, ir.b.CreateMul(row_bytes, ir.c64(int64_t(4 * plan.values.roots.size()))));
  for (size_t q = 0; q < plan.values.quantizes.size(); ++q)
    t.codes.push_back(ir.offset(codes0, ir.b.CreateMul(row_bytes, ir.c64(int64_t(q)))));

  // Alias scopes: inputs, each output, each scratch buffer.
  int scopes = 0;
  t.sc_in = scopes++;
  for (int o = 0; o < plan.no; ++o) t.sc_out.push_back(scopes++);
  t.sc_colmax = scopes++;
  t.sc_mrow = scopes++;
  t.sc_frow = scopes++;
  for (size_t i = 0; i < plan.instances.size(); ++i) {
    t.sc_mult.push_back(scopes++);
    t.sc_flag.push_back(scopes++);
  }
  for (size_t k = 0; k < plan.values.roots.size(); ++k) t.sc_root.push_back(scopes++);
  for (size_t q = 0; q < plan.values.quantizes.size(); ++q) t.sc_codes.push_back(scopes++);
  ir.make_scopes(scopes);
  TileEmitter e(t);
  e.phase_values();
  if (plan.prepass) {
    llvm::BasicBlock* pre = llvm::BasicBlock::Create(ctx, "prepass", f);
    llvm::BasicBlock* main = llvm::BasicBlock::Create(ctx, "main", f);
    ir.b.CreateCondBr(ir.b.CreateICmpEQ(t.mode, ir.c64(0)), pre, main);
    ir.b.SetInsertPoint(pre);
    e.prepass_amax();
    ir.b.CreateRetVoid();
    ir.b.SetInsertPoint(main);
  }
  e.output_amax();
  for (size_t i = 0; i < plan.instances.size(); ++i) e.instance(int(i));
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    if (p.outputs()[o].kind == OutputKind::elems) e.store_elems(int(o));
    if (p.outputs()[o].kind == OutputKind::values) e.store_values(int(o));
  }
  ir.b.CreateRetVoid();
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*f, &os)) throw Error("mxjit internal: the CPU lowering produced invalid IR: " + os.str());
  return mod;
}

}  // namespace mxjit::cpu::detail
