// make_plan: the rules (plan_rules.cpp) decide what runs and which schedule fields apply, the
// per-kind functions (plan_kinds.cpp) fill in the defaults; this file only puts them in order.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/plan_kinds.hpp"
#include "codegen/plan_rules.hpp"
#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {
namespace {

// The kernel kind for a non-jagged cast: the schedule's, where it applies, else the first of
// direct, columns, tiled that does.
KernelKind choose_kind(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc, const Schedule& s, Fit fit) {
  const bool direct = direct_applies(p, v, plan) || direct2d_applies(p, v, plan, sc), columns = columns_applies(p, v, plan, sc);
  auto refuse = [&](const char* why) {
    return UsageError(fmt::format("schedule {}: the {} kernel does not apply to this cast ({})", s.str(), kernel_kind_name(s.kernel), why));
  };
  switch (s.kernel) {
    case KernelKind::tiled: return KernelKind::tiled;
    case KernelKind::direct:
      if (direct) return KernelKind::direct;
      if (fit == Fit::exact) throw refuse("its blocks and code outputs must all run along the input's unit-stride axis, 8..256 elements a block");
      break;
    case KernelKind::columns:
      if (columns) return KernelKind::columns;
      if (fit == Fit::exact)
        throw refuse("it takes one bf16/f16 input with 16-byte loads, E8M0/FP32 blocks of 16..128 across the rows, codes along their blocks");
      break;
    case KernelKind::jagged:
      if (fit == Fit::exact) throw refuse("it runs jagged groups (groups(x, axis, offsets(...)))");
      break;
    case KernelKind::rows:
      if (fit == Fit::exact) throw refuse("it runs whole-axis blocks (blocks(x, axis, whole))");
      break;
    case KernelKind::automatic: break;
  }
  return direct ? KernelKind::direct : columns ? KernelKind::columns : KernelKind::tiled;
}

// The kernel's parameter block: every field 8 bytes a word (in_extent only where an output has a
// grouped scale layout).
ParamLayout param_layout(const Pipeline& p) {
  const int ni = int(p.inputs().size()), no = int(p.outputs().size()), r = p.rank();
  ParamLayout l;
  l.fields = {{Param::in, ni},           {Param::out, no},           {Param::shape, r},   {Param::in_stride, ni * r},
              {Param::out_stride, no * r}, {Param::out_shape, no * r}, {Param::tiles_r, 1}, {Param::tiles_c, 1},
              {Param::aux, 1}};
  for (const Output& o : p.outputs())
    if (o.layout.grouped()) {
      l.fields.push_back({Param::in_extent, ni});
      break;
    }
  return l;
}

// The pre-pass computing `tamax` (a tensor amax node of a value of `p`) into the workspace.
PrePass amax_prepass(const Pipeline& p, const Amax& tamax) {
  PrePass pre{pipeline({output("tamax", tamax)}), {}, 4};
  for (const InputDecl& in : pre.pipeline.inputs()) pre.inputs.push_back(p.input_index(in.name));
  return pre;
}

// NVFP4 scales need the tensor amax first: a pre-pass over the same value (one per pipeline:
// check_gpu_runs refuses two).
std::optional<PrePass> nvfp4_prepass(const Pipeline& p) {
  for (const Output& o : p.outputs()) {
    if (o.kind != OutputKind::scales && o.kind != OutputKind::elems) continue;
    const NodePtr& sn = o.kind == OutputKind::scales ? o.node : o.node->args[1];
    if (tensor_amax_of(*sn)) return amax_prepass(p, Amax(tensor_amax_of(*sn)));
  }
  return std::nullopt;
}

// A tensorwise cast: the pre-pass's tensor amax under the scales' NaN rule (check_tensorwise_runs:
// one value, one rule) is their one block's amax; the cast itself is the direct kernel's
// elementwise form (DirectPlan::tensorwise). Flushing commutes with the maximum, so the kernel
// flushes the pre-pass's word where a cast asks.
void plan_tensorwise(const Pipeline& p, const ValueSet& v, const Target& target, const StrideClass& sc,
                     const Schedule& schedule, Fit fit, Plan& plan) {
  if (schedule.kernel != KernelKind::automatic && schedule.kernel != KernelKind::direct && fit == Fit::exact)
    throw UsageError(
        fmt::format("schedule {}: the {} kernel does not apply to this cast (tensorwise scales run on the direct "
                    "kernel after a tensor-amax pre-pass)",
                    schedule.str(), kernel_kind_name(schedule.kernel)));
  choose_tensorwise_axes(p, sc, plan);
  const NodePtr& sn = v.scales[0];
  plan.prepass = amax_prepass(p, amax(Expr(v.roots[size_t(v.scale_root[0])]), sn->amax_nan));
  plan.kind = KernelKind::direct;
  plan.kernel = plan_direct(p, v, plan, fit_schedule(schedule, KernelKind::direct, false, fit), target, sc);
}

// Masked rows (Pipeline::mask()) run on the direct kernel: its rows' `ok` holds the mask.
// `how`: how this cast runs instead (e.g. "the rows kernel").
void check_mask_runs(const Pipeline& p, KernelKind kind, const std::string& how = "") {
  const Mask& m = p.mask();
  if (m.active() && (kind != KernelKind::direct || !how.empty()))
    throw UsageError(fmt::format("GPU generator: mask({}, {}, '{}') runs on the direct kernel (1-D blocks along the innermost "
                                 "axis of a row-major input); this cast runs on {}. The CPU backends run it",
                                 m.axis, m.by, m.counts, how.empty() ? fmt::format("the {} kernel", kernel_kind_name(kind)) : how));
}

}  // namespace

Plan make_plan(const Pipeline& p, const Target& target, const StrideClass& sc, const Schedule& schedule, Fit fit) {
  const ValueSet v = collect_values(p);
  check_gpu_runs(p, v);
  Plan plan;
  plan.rank = p.rank();
  plan.schedule = schedule;
  plan.params = param_layout(p);
  if (const NodePtr sn = jagged_scale(v)) {
    if (schedule.kernel != KernelKind::automatic && schedule.kernel != KernelKind::jagged && fit == Fit::exact)
      throw UsageError(fmt::format("schedule {}: the {} kernel does not apply to this cast (jagged groups run on the jagged kernel)",
                                   schedule.str(), kernel_kind_name(schedule.kernel)));
    plan.kind = KernelKind::jagged;
    plan.ax_r = block_of(sn).axes[0];
    plan.ax_c = 1 - plan.ax_r;
    const bool vec = jagged_vector_applies(p, v, plan, sc);
    // The scalar kernel's lanes along the rows where the input is unit-stride along them.
    const int lead = first_tensor_input(p);
    const bool lanes = !vec && lead >= 0 && lead < int(sc.unit_axis.size()) && sc.unit_axis[size_t(lead)] == plan.ax_r;
    const Schedule js = fit_schedule(schedule, KernelKind::jagged, vec, fit);
    const JaggedKernels kernels = plan_jagged_kernels(p, v, plan, js, target, vec, lanes);
    plan.kernel = plan_jagged(p, v, plan, kernels.own, target, vec, lanes);
    std::get<JaggedPlan>(plan.kernel).plain = kernels.plain;
    std::get<JaggedPlan>(plan.kernel).small = kernels.small;
    if (std::get<JaggedPlan>(plan.kernel).cluster > 8)
      throw UsageError(
          fmt::format("schedule {}: a cluster of more than 8 CTAs applies to whole axes only (the rows kernel's across "
                      "form, which chooses its cluster at launch), not to jagged groups",
                      schedule.str()));
    return plan;
  }
  for (size_t i = 0; i < p.outputs().size(); ++i)
    if (const Output& o = p.outputs()[i]; o.kind == OutputKind::amax || o.layout.grouped() ||
                                          (o.bound.pads() && !mxjit::detail::is_blocked(o.layout)))
      plan.zero_outputs.push_back(int(i));  // grouped, padded strided: kernels write real scales only
  if (tensorwise(p, v)) {
    plan_tensorwise(p, v, target, sc, schedule, fit, plan);
    return plan;
  }
  if (const int w = whole_axis(v); w >= 0) {
    check_mask_runs(p, KernelKind::rows);
    if (schedule.kernel != KernelKind::automatic && schedule.kernel != KernelKind::rows && fit == Fit::exact)
      throw UsageError(fmt::format("schedule {}: the {} kernel does not apply to this cast (whole-axis blocks run on the rows kernel)",
                                   schedule.str(), kernel_kind_name(schedule.kernel)));
    plan.kind = KernelKind::rows;
    plan.ax_c = w;
    plan.ax_r = -1;
    for (int a = 0; a < p.rank(); ++a)
      if (a != w) plan.batch_axes.push_back(a);
    plan.kernel = plan_rows(p, v, plan, fit_schedule(schedule, KernelKind::rows, rows_columns_applies(p, v, plan, sc), fit), target, sc);
    return plan;
  }
  choose_axes(p, v, sc, plan);
  // The tiled kernel's tile and shared memory are checked for every cast (it is the fallback of
  // every stride class).
  const TiledPlan tiled = plan_tiled(p, v, plan, fit_schedule(schedule, KernelKind::tiled, false, Fit::lenient), target);
  const int tiled_smem = tiled_smem_bytes(v, plan, tiled), smem_cap = std::min(200 * 1024, target.smem_per_cta());
  if (tiled_smem > smem_cap)
    throw UsageError(fmt::format("GPU generator: a tile of {}x{} elements ({} value tiles) needs {} bytes of shared memory; at most {} KiB "
                                 "fit (shorter blocks do; the CPU backend and the reference run this cast)",
                                 tiled.tile_rows, tiled.tile_cols, tiled.value_tiles, tiled_smem, smem_cap / 1024));
  plan.prepass = nvfp4_prepass(p);
  plan.kind = choose_kind(p, v, plan, sc, schedule, fit);
  check_mask_runs(p, plan.kind);
  const Schedule s = fit_schedule(schedule, plan.kind, false, fit);
  switch (plan.kind) {
    case KernelKind::direct:
      plan.kernel = plan_direct(p, v, plan, s, target, sc);
      if (p.mask().active() && plan.direct().block_rows > 1) check_mask_runs(p, KernelKind::direct, "the direct kernel's 2-D blocks");
      // One count per chunk row: both mask axes index rows, not the chunks' columns (generator fuzzer seed 428).
      if (p.mask().active() && (p.mask().axis == plan.ax_c || p.mask().by == plan.ax_c))
        check_mask_runs(p, KernelKind::direct, fmt::format("the direct kernel with axis {} along its chunks' columns", plan.ax_c));
      break;
    case KernelKind::columns: plan.kernel = plan_columns(p, v, plan, s, target); break;
    default:
      plan.kernel = tiled;
      plan_tiled_ctas(plan, s, target);
      plan.smem_bytes = tiled_smem;
      break;
  }
  std::erase_if(plan.zero_outputs, [&](int o) { return kernel_writes_padding(p, v, plan, o); });
  return plan;
}

Schedule short_whole_schedule(const Pipeline& p, const Target& target, const StrideClass& sc) {
  const Plan plan = make_plan(p, target, sc);
  if (plan.kind != KernelKind::rows || !plan.rows().columns) return {};
  return Schedule{.threads = 128, .ctas_per_sm = 8};
}

}  // namespace mxjit::detail
