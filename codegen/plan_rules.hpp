#pragma once
/// \file The planner's rules, each its own function: what the GPU generator runs at all, which
/// kernel kinds apply to a cast and stride class, which schedule fields each kind takes, and the
/// checks of their values (all UsageError, naming the rule). codegen/planner.cpp combines them;
/// the defaults per kind live in codegen/plan_defaults.cpp, the hardware limits in the Target.
#include "codegen/plan.hpp"
#include "codegen/values.hpp"

namespace mxjit::detail {

/// Refuses what no GPU kernel runs (jagged groups beside other outputs, two NVFP4 tensor amaxes,
/// NVFP4 with flushed subnormals), naming it; the CPU reference runs those.
void check_gpu_runs(const Pipeline& p, const ValueSet& v);

/// The axis some scale of `v` blocks whole (kWholeAxis), or -1.
int whole_axis(const ValueSet& v);
/// Refuses the whole-axis casts the rows kernel does not run (scales blocking other axes or
/// several, NVFP4, amax and value outputs, scales in split or packed layouts), naming the reason.
/// (FP4 codes are packed along their block axis: the DSL's rule.)
void check_rows_runs(const Pipeline& p, const ValueSet& v);

/// True when some scale of `v` is tensorwise (BlockSpec::whole_tensor on the domain of `p`).
bool tensorwise(const Pipeline& p, const ValueSet& v);
/// Refuses the tensorwise casts the GPU does not run, naming the rule: every scale tensorwise,
/// of one value under one AmaxNan (one pre-pass), no NVFP4; code and scale outputs only, byte
/// codes (not FP4) all with the same innermost axis in layouts the direct kernel stores, scales
/// in a strided layout.
void check_tensorwise_runs(const Pipeline& p, const ValueSet& v);
/// The axes of a tensorwise plan (the direct kernel's): ax_c the code outputs' innermost axis
/// (their stores are vectors; the input may then be read element by element), else the lead
/// input's unit-stride axis; ax_r the last other axis, the rest batch axes.
void choose_tensorwise_axes(const Pipeline& p, const StrideClass& sc, Plan& plan);

/// True when output o of `p` is a grouped layout split along the plan's row axis ax_r with one
/// byte scale per domain row (token groups of 1 x N blocks): a warp then places each scale row
/// once (mx_grouped_rows_place), and the direct kernel of a rank-2 cast writes the layout's
/// padding itself (kernel_writes_padding).
bool grouped_one_per_row(const Pipeline& p, const ValueSet& v, const Plan& plan, int o);
/// Scale columns per tile of grouped output o whose K groups (groups along the columns kernel's
/// ax_r, the block axis) warp 0 finds once a tile into `mx_gt<o>` (mx_grouped_cols_table) instead
/// of each thread walking the ends at the tile's end; 0 where the walk stays (other kernels,
/// pipelined tiles, other group axes). docs/perf-log.md#grouped-cols-table
int grouped_cols_table(const Pipeline& p, const ValueSet& v, const Plan& plan, int o);
/// True when the kernel of `plan` writes output o's padding, so the launcher need not zero it
/// first: the direct kernel of a rank-2 cast with grouped_one_per_row (mx_grouped_rows_pad), and
/// the columns kernel with a K-group table (grouped_cols_table: warp 0 of each tile zeroes the
/// padding the tile owns and its CTA's share of the buffer past the groups, mx_grouped_cols_pad).
bool kernel_writes_padding(const Pipeline& p, const ValueSet& v, const Plan& plan, int o);

/// The jagged scale of `v` (a scale whose blocks are jagged groups), or null.
NodePtr jagged_scale(const ValueSet& v);

/// The tile axes, batch axes and rank of a plan for `p` (non-jagged): ax_c the unit-stride axis of
/// the first tensor input, ax_r the other block or output axis. Throws UsageError when the blocks
/// span more than two axes.
void choose_axes(const Pipeline& p, const ValueSet& v, const StrideClass& sc, Plan& plan);

/// True when the direct kernel applies: every block and every code output runs along ax_c, one
/// block size, a multiple of 8 of at most 256 elements.
bool direct_applies(const Pipeline& p, const ValueSet& v, const Plan& plan);
/// The bare 16-bit tensor input whose loaded words give scale s's amax two elements at a time
/// (max.bf16x2 / f16x2 on |x| words: the scale's root is that bf16/f16 input), or -1.
int amax_words_input(const Pipeline& p, const ValueSet& v, int s);

/// The most threads a CTA of the 2-D direct kernel takes (one block a CTA).
inline constexpr int kDirect2dMaxThreads = 512;
/// The 2-D direct kernel's tile over (ax_r, ax_c): the largest block extents of the scales.
struct Tile2d {
  int64_t rows = 1, cols = 1;
};
Tile2d tile2d(const ValueSet& v, const Plan& plan);
/// A scale's block in the 2-D direct kernel's tile: all of it, one row of it (computed per chunk
/// in phase 2, as 1-D blocks are), or one column of it (8 scales a thread).
enum class Block2d { tile, row, column };
Block2d block2d_kind(const BlockSpec& b, const Plan& plan);
/// Whether codes output o runs along ax_r (rows innermost): in the 2-D direct kernel, codes stored
/// transposed through a shared tile.
bool codes_along_rows(const Pipeline& p, const Plan& plan, int o);

/// True when the direct kernel applies with 2-D blocks (DirectPlan::block_rows): one block shape
/// over ax_r (the innermost row axis) and ax_c, block_cols a multiple of 8 of at most 256,
/// block_rows a multiple of 8 with 32..kDirect2dMaxThreads threads (a power of two) at 8 rows a
/// thread; every scale's amax of a bare bf16/f16 input read with 16-byte loads; no tensor amax;
/// scales in linear or strided layouts (not blocked, grouped or generic); codes and values along
/// ax_c, or byte codes along ax_r (transposed) where block_rows is a multiple of 16.
bool direct2d_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc);
/// True when the columns kernel applies: one 2-byte tensor input read with 16-byte loads along
/// ax_c, 1-D E8M0/FP32 blocks of 16..128 along ax_r (at least one) or of 32 along ax_c, only codes
/// and scales as outputs, codes stored along their block axis.
bool columns_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc);
/// True when the jagged vector kernel applies: one bf16/f16/f32 tensor input read with 16-byte
/// loads along ax_c, a root computed from registers only, codes stored along ax_c (any number of
/// outputs) or one 8-bit code output stored along ax_r (column-major, as grouped GEMMs' weight
/// gradients read it).
bool jagged_vector_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc);
/// True when the jagged kernel's code output is column-major (its unit-stride axis is ax_r): the
/// vector kernel's second pass then runs 8 rows of a column at a time.
bool jagged_codes_along_rows(const Pipeline& p, const Plan& plan);

/// The rows kernel's across axis for this stride class (the lead input's unit-stride axis where it
/// is not the whole axis plan.ax_c), or -1: lanes along the line.
int rows_across_axis(const Pipeline& p, const Plan& plan, const StrideClass& sc);
/// True when the rows kernel runs its across form on 16-byte columns (RowsPlan::columns): one
/// scale, and the jagged vector kernel applies with the whole axis as its rows and the across
/// axis as its columns.
bool rows_columns_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc);
/// `plan` with the axes the jagged vector kernel takes in the rows kernel's across form on
/// columns: its rows along the whole axis (plan.ax_c), its columns along `across`.
Plan rows_columns_axes(const Plan& plan, int across);

/// The schedule `s` with the fields that kind `k` does not take removed (`vector_columns`: the
/// jagged vector kernel runs it, for the jagged kind or the rows kind's across form); with
/// Fit::exact, such a field is a UsageError naming it and the kernel that runs.
Schedule fit_schedule(const Schedule& s, KernelKind k, bool vector_columns, Fit fit);

/// The index of the first tensor (or codes) input of `p`, or -1.
int first_tensor_input(const Pipeline& p);
/// Index of the first tensor input (codes excluded), -1 for none: the one tensor input of the
/// kernels that take one (columns, jagged), and the lead input whose type sets the vector width.
int lead_tensor_input(const Pipeline& p);

}  // namespace mxjit::detail
