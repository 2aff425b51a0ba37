#pragma once
/// \file Pipeline + CPU plan -> one LLVM function per (pipeline, stride class):
///
///   void <plan.function_name>(const int64_t* P, const int64_t* T, char* scratch)
///
/// P is the parameter block (CpuPlan::p_*), T a tile descriptor (TileWord), scratch the worker's
/// buffers (ScratchLayout). One call processes one tile: (1) evaluate the value expressions into
/// FP32 tiles, (2) block amax -> scales (written straight to their outputs), (3) element codes,
/// (4) stores along each output's innermost axis; mode 0 only reduces NVFP4 tensor amaxes and
/// the tile's part of whole-axis block amaxes (cpu_plan.hpp).
#include <map>
#include <memory>
#include <vector>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "backends/llvm/cpu_plan.hpp"
#include "backends/llvm/ir_builder.hpp"

namespace mxjit::cpu::detail {

/// Builds the module holding the tile function of `plan` for `p` (target triple and data layout
/// are set by the caller). Throws UsageError naming an op this backend does not lower.
std::unique_ptr<llvm::Module> lower_pipeline(const Pipeline& p, const CpuPlan& plan, llvm::LLVMContext& ctx);

/// The state shared by the lowering passes while the tile function is being emitted.
struct TileCtx {
  /// Emits for `pipeline` with `cpu_plan` through `builder`; the fields below are filled by
  /// lower_pipeline() before any pass runs.
  TileCtx(const Pipeline& pipeline, const CpuPlan& cpu_plan, Ir& builder) : p(pipeline), plan(cpu_plan), ir(builder) {}
  const Pipeline& p;     ///< the pipeline
  const CpuPlan& plan;   ///< its CPU plan
  Ir& ir;                ///< the IR builder
  // Parameters loaded once in the entry block (SSA, loop-invariant).
  std::vector<llvm::Value*> in_ptr, out_ptr, shape, dom_stride;
  std::vector<std::vector<llvm::Value*>> in_stride, out_stride, out_shape;
  llvm::Value* slots = nullptr;            ///< u32* atomic-max slots
  std::vector<llvm::Value*> tamax;         ///< per slot: f32 from the pre-pass
  std::vector<llvm::Value*> whole_ptr;     ///< per whole-axis buffer: u32* block amaxes
  std::vector<std::vector<llvm::Value*>> whole_stride;  ///< per whole-axis buffer: its scale strides
  // Tile descriptor.
  llvm::Value *mode = nullptr, *r0 = nullptr, *nr = nullptr, *c0 = nullptr, *nc = nullptr, *group = nullptr;
  std::vector<llvm::Value*> batch;         ///< per axis (tile axes: unused)
  // Scratch buffers.
  llvm::Value *colmax = nullptr, *mrow = nullptr, *frow = nullptr;
  std::vector<llvm::Value*> blk_mult, blk_flag, root_tile, codes;
  // Alias scopes (Ir::make_scopes) of every buffer: inputs, outputs, scratch buffers.
  int sc_in = 0, sc_colmax = 0, sc_mrow = 0, sc_frow = 0;
  std::vector<int> sc_out, sc_mult, sc_flag, sc_root, sc_codes;

  /// Domain index along `axis` of tile-local row r / column c (i64).
  llvm::Value* index(int axis, llvm::Value* r, llvm::Value* c);
  /// sum over axes of index * stride, skipping axis `skip`; `strides[a]` null means 1.
  llvm::Value* linear(const std::vector<llvm::Value*>& strides, llvm::Value* r, llvm::Value* c, int skip = -2,
                      int halve_axis = -1);
  /// Element (r, c) of root tile k.
  llvm::Value* tile_at(int k, llvm::Value* r, llvm::Value* c);
};

/// Evaluates value node `n` at tile-local (r, c), memoised in `memo` (one loop body).
llvm::Value* lower_value(TileCtx& t, const NodePtr& n, llvm::Value* r, llvm::Value* c,
                         std::map<const Node*, llvm::Value*>& memo);

/// One block's scale: the E8M0 / E4M3 byte (i32; null for FP32 scales), the flag of its codes
/// (0 scaled, 1 all +0, 2 all NaN), the FP32 multiplier of its elements and the stored FP32 scale
/// (FP32 scales only, else null).
struct BlockScale {
  llvm::Value *byte, *flag, *mult, *stored;
};

/// The scale of one block of instance `in` from its amax bits `m` (i32: |x| patterns, NaN above
/// 0x7f800000; for AmaxNan::ignore taken without the NaN elements), interpreting the scale's
/// definition as the reference does (reference/scale_expr.hpp).
BlockScale lower_block_scale(TileCtx& t, const ScaleInstance& in, llvm::Value* m);

/// Index of block (rb, cb) of the current tile in the scale tensor along `axis` (0 along a whole axis).
llvm::Value* lower_scale_index(TileCtx& t, int axis, const ScaleInstance& in, llvm::Value* rb, llvm::Value* cb);

/// Element offset of block (rb, cb) of the current tile in scales output `o` (linear / permuted
/// strides, or the blocked 128x4 / 8x4 atom formula of dsl/layout.hpp with batches).
llvm::Value* lower_scale_offset(TileCtx& t, int o, const ScaleInstance& in, llvm::Value* rb, llvm::Value* cb);

/// The variables of a scale expression (f32 values; stored may be null before it is known).
struct ScaleVarsIr {
  llvm::Value *amax = nullptr, *tamax = nullptr, *stored = nullptr;
};
/// Evaluates scale-expression value `n` (f32) or condition `n` (i1) with one FP32 rounding per
/// operation, the primitives through mx_math.cuh's own functions (helpers.hpp).
llvm::Value* lower_scale_expr(Ir& ir, const NodePtr& n, const ScaleVarsIr& v);

/// An element value `x` scaled by its block's factor under scale node `sn`: fp32(x * factor) or
/// fp32(x / factor), then the scale's clamp.
llvm::Value* lower_scale_element(Ir& ir, const Node& sn, llvm::Value* x, llvm::Value* factor);

}  // namespace mxjit::cpu::detail
