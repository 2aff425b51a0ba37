#include "codegen/plan_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/layout_cuda.hpp"
#include "codegen/scale_expr_cuda.hpp"
#include "dsl/errors.hpp"

namespace mxjit::detail {

NodePtr jagged_scale(const ValueSet& v) {
  for (const NodePtr& sn : v.scales)
    if (block_of(sn).jagged()) return sn;
  return nullptr;
}

void check_gpu_runs(const Pipeline& p, const ValueSet& v) {
  if (tensorwise(p, v)) check_tensorwise_runs(p, v);
  else if (whole_axis(v) >= 0)
    check_rows_runs(p, v);
  // Any scale definition runs on the GPU (codegen/scale_expr_cuda.hpp), except a generic one that
  // needs the tensor amax: only NVFP4's library recipe has that pre-pass there.
  for (const NodePtr& sn : v.scales)
    if (generic_scale(*sn) && tensor_amax_of(*sn))
      throw UsageError(fmt::format("GPU generator: scale {} reads tamax_var(); two-level scales other than NVFP4's "
                                   "library recipe run on the CPU backends in this version", scale_definition(*sn)));
  // Grouped layouts other than grouped_blocked128x4, and any layout of the offset function
  // (codegen/layout_cuda.hpp) beside jagged groups, run on the CPU.
  for (const Output& o : p.outputs())
    if ((o.layout.grouped() && !is_blocked(o.layout)) || (generic_layout(o) && jagged_scale(v)))
      throw UsageError(fmt::format("GPU generator: output '{}' in layout {} runs on the CPU reference only in this "
                                   "version", o.name, o.layout.str()));
  if (const NodePtr sn = jagged_scale(v)) {
    // Jagged groups (MoE token groups): one cast, rank 2, elements and/or scales only.
    if (p.rank() != 2 || v.scales.size() != 1 || v.quantizes.size() > 1 || tensor_amax_of(*sn))
      throw UsageError("GPU generator: jagged groups run on the GPU for one rank-2 E8M0 or FP32 cast; this pipeline "
                       "runs on the CPU reference");
    for (const Output& o : p.outputs())
      if (o.kind != OutputKind::elems && o.kind != OutputKind::scales)
        throw UsageError(fmt::format("GPU generator: output '{}' beside a jagged cast runs on the CPU reference only", o.name));
    return;
  }
  std::string tensor_amax;
  for (const NodePtr& sn : v.scales) {
    if (!tensor_amax_of(*sn)) continue;
    // NVFP4: the per-tensor amax comes from a pre-pass kernel (one per pipeline).
    const std::string t = canonical(tensor_amax_of(*sn));
    if (!tensor_amax.empty() && t != tensor_amax)
      throw UsageError("GPU generator: NVFP4 casts of two different values in one pipeline are not supported; "
                       "split the pipeline");
    tensor_amax = t;
    for (size_t q = 0; q < v.quantizes.size(); ++q)
      if (v.scales[size_t(v.quantize_scale[q])] == sn && v.quantizes[q]->flush_subnormals)
        throw UsageError("GPU generator: NVFP4 with flush_subnormals runs on the CPU reference only in this version");
  }
}

int whole_axis(const ValueSet& v) {
  for (const NodePtr& sn : v.scales) {
    const BlockSpec& b = block_of(sn);
    for (size_t i = 0; i < b.axes.size(); ++i)
      if (b.sizes[i] == kWholeAxis) return b.axes[i];
  }
  return -1;
}

void check_rows_runs(const Pipeline& p, const ValueSet& v) {
  const int w = whole_axis(v);
  const auto refuse = [&](const std::string& why) {
    throw UsageError(fmt::format("GPU generator: whole-axis blocks run on the GPU {}; this pipeline runs on the CPU "
                                 "backends", why));
  };
  for (const NodePtr& sn : v.scales) {
    const BlockSpec& b = block_of(sn);
    if (b.axes.size() != 1 || b.axes[0] != w || b.sizes[0] != kWholeAxis)
      refuse(
          fmt::format("when every scale blocks the same one axis whole (here {} beside blocks(axis {}, whole)); "
                      "whole-by-tile blocks are not generated yet",
                      b.str(), w));
    if (tensor_amax_of(*sn)) refuse("without a two-level (NVFP4) scale");
  }
  for (const Output& o : p.outputs()) {
    if (o.kind == OutputKind::amax || o.kind == OutputKind::values)
      refuse(fmt::format("with code and scale outputs only (output '{}' is {})", o.name,
                         o.kind == OutputKind::amax ? "an amax" : "a value tensor"));
    if (o.kind == OutputKind::scales && (o.layout.grouped() || !o.bound.strided() || o.bound.pack != 1))
      refuse(fmt::format("with scales in a strided layout (row_major, col_major, perm); output '{}' is {}", o.name,
                         o.layout.str()));
  }
}

bool tensorwise(const Pipeline& p, const ValueSet& v) {
  for (const NodePtr& sn : v.scales)
    if (block_of(sn).whole_tensor(p.rank())) return true;
  return false;
}

void check_tensorwise_runs(const Pipeline& p, const ValueSet& v) {
  const auto refuse = [&](const std::string& why) {
    throw UsageError(
        fmt::format("GPU generator: tensorwise scales (blocks whole on every axis) run on the GPU {}; this "
                    "pipeline runs on the CPU backends",
                    why));
  };
  for (size_t s = 0; s < v.scales.size(); ++s) {
    const NodePtr& sn = v.scales[s];
    if (!block_of(sn).whole_tensor(p.rank()))
      refuse(fmt::format("when every scale is tensorwise (here {} beside a tensorwise scale; split the pipeline)",
                         block_of(sn).str()));
    if (tensor_amax_of(*sn)) refuse("without a two-level (NVFP4) scale");
    if (v.scale_root[s] != v.scale_root[0] || sn->amax_nan != v.scales[0]->amax_nan)
      refuse("when every scale takes the amax of one value under one NaN rule (one tensor-amax pre-pass)");
  }
  int inner = -1;
  std::string inner_name;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    const Output& out = p.outputs()[o];
    if (out.kind == OutputKind::amax || out.kind == OutputKind::values)
      refuse(fmt::format("with code and scale outputs only (output '{}' is {})", out.name,
                         out.kind == OutputKind::amax ? "an amax" : "a value tensor"));
    if (out.kind == OutputKind::scales &&
        (out.layout.grouped() || is_blocked(out.layout) || !out.bound.strided() || out.bound.pack != 1))
      refuse(fmt::format("with scales in a strided layout (row_major, col_major, perm); output '{}' is {}", out.name,
                         out.layout.str()));
    if (out.kind != OutputKind::elems) continue;
    if (v.quantizes[size_t(v.output_index[o])]->elem.packed())
      refuse(fmt::format("with byte codes (output '{}' packs two FP4 codes a byte)", out.name));
    if (generic_layout(out))
      refuse(fmt::format("with codes in a strided layout; output '{}' is {}", out.name, out.layout.str()));
    const int a = out.layout.order(p.rank()).back();
    if (inner >= 0 && a != inner)
      refuse(fmt::format(
          "when every code output runs along one innermost axis (output '{}' along axis {}, '{}' along axis {})",
          inner_name, inner, out.name, a));
    inner = a;
    inner_name = out.name;
  }
}

void choose_tensorwise_axes(const Pipeline& p, const StrideClass& sc, Plan& plan) {
  const int rank = p.rank();
  int inner = -1;
  for (const Output& o : p.outputs())
    if (o.kind == OutputKind::elems) inner = o.layout.order(rank).back();
  const int lead = first_tensor_input(p);
  const int unit = lead >= 0 && lead < int(sc.unit_axis.size()) ? sc.unit_axis[size_t(lead)] : -1;
  plan.rank = rank;
  plan.ax_c = inner >= 0 ? inner : unit >= 0 ? unit : rank - 1;
  plan.ax_r = -1;
  for (int a = rank - 1; a >= 0 && plan.ax_r < 0; --a)
    if (a != plan.ax_c) plan.ax_r = a;
  plan.batch_axes.clear();
  for (int a = 0; a < rank; ++a)
    if (a != plan.ax_r && a != plan.ax_c) plan.batch_axes.push_back(a);
}

int first_tensor_input(const Pipeline& p) {
  for (size_t i = 0; i < p.inputs().size(); ++i)
    if (p.inputs()[i].kind == InputDecl::Kind::tensor || p.inputs()[i].kind == InputDecl::Kind::codes) return int(i);
  return -1;
}

int lead_tensor_input(const Pipeline& p) {
  for (size_t i = 0; i < p.inputs().size(); ++i)
    if (p.inputs()[i].kind == InputDecl::Kind::tensor) return int(i);
  return -1;
}

void choose_axes(const Pipeline& p, const ValueSet& v, const StrideClass& sc, Plan& plan) {
  const int rank = p.rank();
  plan.rank = rank;
  // ax_c: the unit-stride axis of the first tensor input (loads are then 16-byte vectors).
  const int lead = first_tensor_input(p);
  const int unit = lead >= 0 && lead < int(sc.unit_axis.size()) ? sc.unit_axis[size_t(lead)] : -1;
  // Every block's axes, the scales' too: a pipeline may output scales without their codes.
  std::vector<int> block_axes;
  for (const std::vector<NodePtr>* nodes : {&v.quantizes, &v.scales})
    for (const NodePtr& n : *nodes)
      for (int a : block_of(n).axes)
        if (std::find(block_axes.begin(), block_axes.end(), a) == block_axes.end()) block_axes.push_back(a);
  std::vector<int> inner_axes;
  for (const Output& o : p.outputs())
    if (o.kind == OutputKind::elems || o.kind == OutputKind::values) inner_axes.push_back(o.layout.order(rank).back());
  // A unit-stride axis outside 2-D blocks (an input of extents 1 on the block axes, whose strides
  // are then all 1) gives way to the blocks' inner axis: the loads are element by element.
  const bool unit_fits = unit >= 0 && (block_axes.size() < 2 || std::find(block_axes.begin(), block_axes.end(), unit) != block_axes.end());
  plan.ax_c = unit_fits ? unit
              : block_axes.size() == 1 ? block_axes[0]
              : block_axes.size() == 2 ? std::max(block_axes[0], block_axes[1])
                                       : rank - 1;
  plan.ax_r = -1;
  if (rank > 1) {
    for (int a : block_axes)
      if (a != plan.ax_c && plan.ax_r < 0) plan.ax_r = a;
    for (int a : inner_axes)
      if (a != plan.ax_c && plan.ax_r < 0) plan.ax_r = a;
    for (int a = rank - 1; a >= 0 && plan.ax_r < 0; --a)
      if (a != plan.ax_c) plan.ax_r = a;
  }
  for (int a : block_axes)
    if (a != plan.ax_c && a != plan.ax_r)
      throw UsageError(fmt::format("GPU generator: block axes {} and the input's unit-stride axis {} span more than two axes; one tile "
                                   "covers two axes", fmt::join(block_axes, ","), plan.ax_c));
  plan.batch_axes.clear();
  for (int a = 0; a < rank; ++a)
    if (a != plan.ax_r && a != plan.ax_c) plan.batch_axes.push_back(a);
}

bool direct_applies(const Pipeline& p, const ValueSet& v, const Plan& plan) {
  int64_t bsize = 0;
  auto along_c = [&](const NodePtr& n) {
    const BlockSpec& b = block_of(n);
    const bool ok = b.axes.size() == 1 && b.axes[0] == plan.ax_c && (!bsize || b.sizes[0] == bsize);
    bsize = b.sizes[0];
    return ok;
  };
  for (const NodePtr& q : v.quantizes)
    if (!along_c(q)) return false;
  for (const NodePtr& s : v.scales)
    if (!along_c(s)) return false;
  if (bsize == 0) bsize = 8;
  if (bsize % 8 != 0 || bsize / 8 > 32) return false;
  for (const Output& o : p.outputs())
    if ((o.kind == OutputKind::elems || o.kind == OutputKind::values) && o.layout.order(p.rank()).back() != plan.ax_c)
      return false;
  return true;
}

int amax_words_input(const Pipeline& p, const ValueSet& v, int s) {
  const NodePtr& rn = v.roots[size_t(v.scale_root[size_t(s)])];
  if (rn->op != Op::input) return -1;
  const int k = p.input_index(rn->name);
  const DType dt = p.inputs()[size_t(k)].dtype;
  return dt == DType::bf16 || dt == DType::f16 ? k : -1;
}

Tile2d tile2d(const ValueSet& v, const Plan& plan) {
  Tile2d t;
  for (const NodePtr& s : v.scales) {
    t.rows = std::max(t.rows, block_of(s).size_along(plan.ax_r));
    t.cols = std::max(t.cols, block_of(s).size_along(plan.ax_c));
  }
  return t;
}

Block2d block2d_kind(const BlockSpec& b, const Plan& plan) {
  return b.size_along(plan.ax_r) == 1 ? Block2d::row : b.size_along(plan.ax_c) == 1 ? Block2d::column : Block2d::tile;
}

bool codes_along_rows(const Pipeline& p, const Plan& plan, int o) {
  const Output& out = p.outputs()[size_t(o)];
  return out.kind == OutputKind::elems && out.layout.order(p.rank()).back() == plan.ax_r;
}

bool direct2d_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc) {
  if (plan.ax_r < 0 || v.scales.empty()) return false;
  for (int a = 0; a < p.rank(); ++a)  // ax_r the innermost row axis: a block's rows are consecutive rows
    if (a != plan.ax_c && a > plan.ax_r) return false;
  // The CTA's tile: the largest block extents; each block is the tile, one row of it (1 x bc) or
  // one column (br x 1), and some block spans rows and some columns.
  for (const NodePtr& s : v.scales)
    if (block_of(s).jagged()) return false;
  const Tile2d tile = tile2d(v, plan);
  const int64_t br = tile.rows, bc = tile.cols;
  if (br == 1 || bc == 1) return false;
  auto fits = [&](const NodePtr& n) {
    const BlockSpec& b = block_of(n);
    const int64_t r = b.size_along(plan.ax_r), c = b.size_along(plan.ax_c);
    return !b.jagged() && (r == br || r == 1) && (c == bc || c == 1) && (r > 1 || c > 1);
  };
  for (const NodePtr& q : v.quantizes)
    if (!fits(q)) return false;
  // Column blocks' flags become per-byte masks of one NaN code: the casts of a scale share a format.
  for (size_t i = 0; i < v.quantizes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (v.quantize_scale[i] == v.quantize_scale[j] && !(v.quantizes[i]->elem == v.quantizes[j]->elem)) return false;
  for (int s = 0; s < int(v.scales.size()); ++s) {
    if (!fits(v.scales[size_t(s)]) || tensor_amax_of(*v.scales[size_t(s)])) return false;
    const int k = amax_words_input(p, v, s);
    if (k < 0 || !sc.vector_along(size_t(k), plan.ax_c)) return false;
  }
  if (bc % 8 != 0 || bc / 8 > 32 || br % 8 != 0) return false;
  const int64_t threads = bc / 8 * (br / 8);
  if (threads < 32 || threads > kDirect2dMaxThreads || (threads & (threads - 1))) return false;
  for (size_t i = 0; i < p.outputs().size(); ++i) {
    const Output& o = p.outputs()[i];
    const bool data = o.kind == OutputKind::elems || o.kind == OutputKind::values;
    // Codes transposed (ax_r innermost) through a shared tile: 8-bit codes, 16-row granule pairs.
    const bool transposed = codes_along_rows(p, plan, int(i)) && !v.quantizes[size_t(v.output_index[i])]->elem.packed() && br % 16 == 0;
    if (data && o.layout.order(p.rank()).back() != plan.ax_c && !transposed) return false;
    if (generic_layout(o) || (o.kind == OutputKind::scales && (is_blocked(o.layout) || o.layout.grouped()))) return false;
  }
  return true;
}

bool columns_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc) {
  if (plan.ax_r < 0) return false;
  for (const Output& o : p.outputs())
    if (generic_layout(o)) return false;  // the tiled kernel stores those
  int tensors = 0;
  for (size_t k = 0; k < p.inputs().size(); ++k) {
    const InputDecl& in = p.inputs()[k];
    if (in.kind == InputDecl::Kind::vector || in.kind == InputDecl::Kind::offsets)
      continue;  // offsets: a grouped scale layout's
    if (in.kind != InputDecl::Kind::tensor || (in.dtype != DType::bf16 && in.dtype != DType::f16)) return false;
    if (!sc.vector_along(k, plan.ax_c)) return false;
    ++tensors;
  }
  if (tensors != 1) return false;
  bool along_r = false;
  for (const NodePtr& s : v.scales) {
    const BlockSpec& b = block_of(s);
    if (tensor_amax_of(*s) || b.axes.size() != 1 || b.jagged()) return false;
    if (b.axes[0] == plan.ax_r) {
      if (b.sizes[0] != 16 && b.sizes[0] != 32 && b.sizes[0] != 64 && b.sizes[0] != 128) return false;
      along_r = true;
    } else if (b.axes[0] != plan.ax_c || b.sizes[0] != 32) {
      return false;
    }
  }
  for (const Output& o : p.outputs()) {
    if (o.kind == OutputKind::scales) continue;  // any scale layout, grouped ones too (emit_tile_scales)
    if (o.kind != OutputKind::elems || o.layout.order(p.rank()).back() != block_of(o.node).axes[0]) return false;
  }
  return along_r;
}

bool jagged_vector_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc) {
  int tensors = 0;
  for (size_t k = 0; k < p.inputs().size(); ++k) {
    const InputDecl& in = p.inputs()[k];
    if (in.kind == InputDecl::Kind::offsets) continue;
    if (in.kind != InputDecl::Kind::tensor || (in.dtype != DType::bf16 && in.dtype != DType::f16 && in.dtype != DType::f32))
      return false;
    if (!sc.vector_along(k, plan.ax_c)) return false;
    ++tensors;
  }
  if (tensors != 1 || v.roots.size() != 1 || !register_leaves(v.roots[0])) return false;
  // Codes row-major (along the columns, 8 at a time), or one 8-bit code output column-major (8
  // rows of a column at a time: jagged_codes_along_rows).
  int along_c = 0, along_r = 0, other = 0;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    if (p.outputs()[o].kind != OutputKind::elems) continue;
    const int unit = p.outputs()[o].layout.order(p.rank()).back();
    const bool bytes = !v.quantizes[size_t(v.output_index[o])]->elem.packed();
    if (unit == plan.ax_c) ++along_c;
    else if (unit == plan.ax_r && bytes) ++along_r;
    else ++other;
  }
  return other == 0 && (along_r == 0 || (along_r == 1 && along_c == 0));
}

bool jagged_codes_along_rows(const Pipeline& p, const Plan& plan) {
  for (int o = 0; o < int(p.outputs().size()); ++o)
    if (codes_along_rows(p, plan, o)) return true;
  return false;
}

int rows_across_axis(const Pipeline& p, const Plan& plan, const StrideClass& sc) {
  const int lead = first_tensor_input(p);
  const int unit = lead >= 0 && lead < int(sc.unit_axis.size()) ? sc.unit_axis[size_t(lead)] : -1;
  return unit >= 0 && unit != plan.ax_c ? unit : -1;
}

bool rows_columns_applies(const Pipeline& p, const ValueSet& v, const Plan& plan, const StrideClass& sc) {
  const int across = rows_across_axis(p, plan, sc);
  if (across < 0 || v.scales.size() != 1) return false;
  return jagged_vector_applies(p, v, rows_columns_axes(plan, across), sc);
}

Plan rows_columns_axes(const Plan& plan, int across) {
  Plan cp = plan;
  cp.ax_r = plan.ax_c;
  cp.ax_c = across;
  return cp;
}

Schedule fit_schedule(const Schedule& s, KernelKind k, bool vector_columns, Fit fit) {
  // Which fields each kind takes; the rows kind's across form on columns takes the jagged vector
  // kernel's.
  const bool direct = k == KernelKind::direct, tiled = k == KernelKind::tiled, columns = k == KernelKind::columns,
             jv = (k == KernelKind::jagged || k == KernelKind::rows) && vector_columns, rows = k == KernelKind::rows && !vector_columns;
  Schedule r = s;
  auto field = [&](const char* name, auto Schedule::* m, auto unset, bool applies) {
    if (applies || r.*m == unset) return;
    if (fit == Fit::exact)
      throw UsageError(fmt::format("schedule {}: {} does not apply to the {} kernel, which runs this cast{}", s.str(), name,
                                   k == KernelKind::jagged ? (vector_columns ? "jagged (vector)" : "jagged (scalar)")
                                   : k == KernelKind::rows  ? (vector_columns ? "rows (across, on columns)" : "rows")
                                                            : kernel_kind_name(k),
                                   tiled || k == KernelKind::jagged ? "" : " (kernel=tiled takes every tile field)"));
    r.*m = unset;
  };
  field("tile_rows", &Schedule::tile_rows, 0, tiled);
  field("tile_cols", &Schedule::tile_cols, 0, tiled || jv);
  field("threads", &Schedule::threads, 0, direct || tiled || jv || rows);
  field("ctas_per_sm", &Schedule::ctas_per_sm, 0, direct || tiled || columns || jv || rows);
  field("hoist_loads", &Schedule::hoist_loads, -1, tiled);
  field("rows_per_thread", &Schedule::rows_per_thread, 0, tiled || columns || jv);
  field("chunks_per_thread", &Schedule::chunks_per_thread, 0, direct || rows);
  field("rows_in_flight", &Schedule::rows_in_flight, 0, jv || k == KernelKind::jagged);
  field("cluster", &Schedule::cluster, 0, jv);
  field("stages", &Schedule::stages, 0, columns);
  return r;
}

bool grouped_one_per_row(const Pipeline& p, const ValueSet& v, const Plan& plan, int o) {
  const Output& out = p.outputs().at(size_t(o));
  if (!out.layout.grouped() || out.dtype != DType::u8 || p.input_index(out.layout.group_offsets()) < 0) return false;
  const NodePtr& sn = v.scales.at(size_t(v.output_index.at(size_t(o))));
  const int ra = blocked_axes(block_of(sn), plan.rank).first, ga = out.layout.group_axis();
  return ga == ra && ra == plan.ax_r && block_of(sn).size_along(ga) == 1;
}

int grouped_cols_table(const Pipeline& p, const ValueSet& v, const Plan& plan, int o) {
  const Output& out = p.outputs().at(size_t(o));
  if (plan.kind != KernelKind::columns || plan.columns().stages != 1 || !out.layout.grouped() ||
      out.dtype != DType::u8 || p.input_index(out.layout.group_offsets()) < 0 || out.layout.group_axis() != plan.ax_r)
    return 0;
  const BlockSpec& b = block_of(v.scales.at(size_t(v.output_index.at(size_t(o)))));
  const int64_t br = b.size_along(plan.ax_r), n = plan.tile().first / br;
  const bool cols_r = blocked_axes(b, plan.rank).second == plan.ax_r;  // ax_r runs along the scale columns
  return br > 1 && cols_r && n >= 4 && n <= 32 && n % 4 == 0 ? int(n) : 0;
}

bool kernel_writes_padding(const Pipeline& p, const ValueSet& v, const Plan& plan, int o) {
  if (plan.kind == KernelKind::direct) return p.rank() == 2 && grouped_one_per_row(p, v, plan, o);
  return grouped_cols_table(p, v, plan, o) > 0;
}

}  // namespace mxjit::detail
