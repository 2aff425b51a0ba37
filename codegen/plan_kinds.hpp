#pragma once
/// \file The defaults and derived choices of each kernel kind (codegen/plan_kinds.cpp): one
/// function per kind, taking the schedule already fitted to that kind (plan_rules.hpp).
#include "codegen/plan.hpp"
#include "codegen/values.hpp"

namespace mxjit::detail {

/// The tiled kernel's tile (whole blocks both ways), row padding and store shape. Throws
/// UsageError for a tile that is not a multiple of the blocks or of 32 columns, or a
/// rows_per_thread other than 8, 16, 32.
TiledPlan plan_tiled(const Pipeline& p, const ValueSet& v, const Plan& plan, const Schedule& s, const Target& target);
/// The tiled kernel's CTA: a schedule's threads and CTAs per SM (UsageError where they are not
/// whole warps or overfill the target's SM), else 256 threads, 4 CTAs per SM.
void plan_tiled_ctas(Plan& plan, const Schedule& s, const Target& target);
/// Shared memory of a tiled plan: the value tiles and three words per block of every scale.
int tiled_smem_bytes(const ValueSet& v, const Plan& plan, const TiledPlan& t);
/// The direct kernel: block lanes, chunks per thread, padding covered by the grid, and which
/// scales and codes take its fast paths. Sets plan.threads, ctas_per_sm, smem_bytes.
DirectPlan plan_direct(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target,
                       const StrideClass& sc);
/// The columns kernel: rows per thread, warp shape, stages, staged codes and how they leave.
/// Sets plan.threads, ctas_per_sm, smem_bytes; throws UsageError where the ring does not fit.
ColumnsPlan plan_columns(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target);
/// The jagged kernel (`vector`: jagged_vector_applies; `lanes`: the scalar kernel's warp per
/// column, JaggedPlan::lanes): columns per CTA, rows in flight, cluster, and the row cache that
/// fills the shared memory left. Sets plan.threads, ctas_per_sm, smem_bytes.
JaggedPlan plan_jagged(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target, bool vector,
                       bool lanes = false);
/// The jagged kernel's module: the schedule of the plan's own kernel and the kernels beside it.
struct JaggedKernels {
  Schedule own;                     ///< the plan's own kernel's schedule (plan_jagged)
  std::optional<SideKernel> plain;  ///< JaggedPlan::plain
  std::optional<SideKernel> small;  ///< JaggedPlan::small
};
/// The jagged kernel's default module, for a 2-byte input on sm_90+ where `js` sets no cluster:
/// row-major codes, a plain kernel (one CTA a group) beside the own kernel, a 2-CTA cluster a
/// group; column-major codes of a plain cast where `js` sets no CTA shape, a plain kernel 3 CTAs an
/// SM beside the own kernel at 2, and (where `js` sets no run length) a small groups' kernel of
/// 128 threads, 6 CTAs an SM. Otherwise `js` alone.
JaggedKernels plan_jagged_kernels(const Pipeline& p, const ValueSet& v, const Plan& plan, const Schedule& js,
                                  const Target& target, bool vector, bool lanes);
/// The rows kernel (whole-axis blocks): threads (a power of two, 32..1024), chunks per thread,
/// and which code outputs are stored element by element. Sets plan.threads, ctas_per_sm.
RowsPlan plan_rows(const Pipeline& p, const ValueSet& v, Plan& plan, const Schedule& s, const Target& target,
                   const StrideClass& sc);

/// True when a scale's blocks run along ax_c (the row-wise half of a columns kernel's dim0+dim1).
bool columns_rowwise(const ValueSet& v, int ax_c);

}  // namespace mxjit::detail
