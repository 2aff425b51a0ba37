#include "codegen/plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "dsl/errors.hpp"

namespace mxjit::detail {

std::string StrideClass::str() const {
  std::string s;
  for (size_t i = 0; i < unit_axis.size(); ++i)
    s += fmt::format("{}{}{}", i ? "," : "", unit_axis[i], i < aligned.size() && aligned[i] ? "a" : "");
  return "sc(" + s + ")";
}

int ParamLayout::words() const {
  int n = 0;
  for (const Field& f : fields) n += f.words;
  return n;
}

std::pair<int, int> Plan::tile() const {
  if (const auto* t = std::get_if<TiledPlan>(&kernel)) return {t->tile_rows, t->tile_cols};
  if (const auto* c = std::get_if<ColumnsPlan>(&kernel)) return {c->tile_rows, c->tile_cols};
  throw Error(fmt::format("mxjit internal: the {} kernel has no tile", kernel_kind_name(kind)));
}

namespace {

std::string bits(const std::vector<bool>& v) {
  std::string s;
  for (bool b : v) s += b ? '1' : '0';
  return "[" + s + "]";
}

const char* store_name(BlockedStore b) {
  switch (b) {
    case BlockedStore::bytes: return "bytes";
    case BlockedStore::words: return "words";
    case BlockedStore::atom_lines: return "atom_lines";
    case BlockedStore::none: break;
  }
  return "-";
}

const char* param_name(Param p) {
  switch (p) {
    case Param::in: return "in";
    case Param::out: return "out";
    case Param::shape: return "shape";
    case Param::in_stride: return "in_stride";
    case Param::out_stride: return "out_stride";
    case Param::out_shape: return "out_shape";
    case Param::tiles_r: return "tiles_r";
    case Param::tiles_c: return "tiles_c";
    case Param::aux: return "aux";
    case Param::in_extent: return "in_extent";
  }
  return "?";
}

struct KindText {
  std::string operator()(const DirectPlan& d) const {
    std::vector<std::string> st;
    for (BlockedStore b : d.blocked) st.push_back(store_name(b));
    return fmt::format(
               "direct: block_cols={} lanes_per_block={} chunks_per_thread={} pad={}x{} row_step={} wide_rows={} "
               "scatter_scales={} e2m1_words={} eight_at_once={} blocked_scales=[{}]",
               d.block_cols, d.lanes_per_block, d.chunks_per_thread, d.pad_rows, d.pad_block_cols, d.row_step,
               int(d.wide_rows), bits(d.scatter_scales), bits(d.e2m1_words), bits(d.eight_at_once),
               fmt::join(st, ",")) +
           (d.tensorwise ? " tensorwise=1 (the scale from the pre-pass's tensor amax)" : "") +
           (d.block_rows > 1 ? fmt::format(" block_rows={} (one CTA a 2-D block)", d.block_rows) : "");
  }
  std::string operator()(const TiledPlan& t) const {
    return fmt::format("tiled: tile={}x{} row_stride={} hoist_loads={} rows_per_store={} value_tiles={}", t.tile_rows, t.tile_cols,
                       t.row_stride, int(t.hoist_loads), t.rows_per_store, t.value_tiles);
  }
  std::string operator()(const ColumnsPlan& c) const {
    return fmt::format("columns: rows_per_thread={} lanes_along_rows={} tile={}x{} stages={} rowwise_scale={} codes_staged={} "
                       "lines_padded={} bulk_copy_out={} scatter_scales={}",
                       c.rows_per_thread, c.lanes_along_rows, c.tile_rows, c.tile_cols, c.stages, int(c.rowwise_scale),
                       int(c.codes_staged), int(c.lines_padded), int(c.bulk_copy_out), bits(c.scatter_scales));
  }
  std::string operator()(const RowsPlan& r) const {
    if (r.columns) return fmt::format("rows: across_axis={} on columns ({})", r.across_axis, (*this)(*r.columns));
    return fmt::format("rows: chunks_per_thread={} across_axis={} strided_codes={}", r.chunks_per_thread, r.across_axis,
                       bits(r.strided_codes));
  }
  std::string operator()(const JaggedPlan& j) const {
    if (!j.vector)
      return fmt::format("jagged: scalar ({}) rows_in_flight={}",
                         j.lanes ? "a warp per column, lanes along the rows" : "one thread per column", j.rows_in_flight);
    return fmt::format(
               "jagged: vector cols_per_cta={} cached_rows={} cached_rows_per_step={} rows_in_flight={} cluster={}{} run_rows={}",
               j.cols_per_cta, j.cached_rows, j.cached_rows_per_step, j.rows_in_flight, j.cluster,
               j.cluster_at_launch ? " (at most, chosen at launch)" : "", j.run_rows) +
           (j.plain
                ? fmt::format("\njagged: or, chosen at launch, a plain kernel: ctas_per_sm={} smem={} cached_rows={} "
                              "cached_rows_per_step={} rows_in_flight={}",
                              j.plain->ctas_per_sm, j.plain->smem_bytes, j.plain->cached_rows,
                              j.plain->cached_rows_per_step, j.plain->rows_in_flight)
                : "") +
           (j.small ? fmt::format("\njagged: or, for small groups, a kernel of {} threads: ctas_per_sm={} smem={} "
                                  "cached_rows={} cached_rows_per_step={} rows_in_flight={} run_rows={}",
                                  j.small->threads, j.small->ctas_per_sm, j.small->smem_bytes, j.small->cached_rows,
                                  j.small->cached_rows_per_step, j.small->rows_in_flight, j.small->run_rows)
                    : "");
  }
};

}  // namespace

std::string Plan::str() const {
  std::vector<std::string> fields;
  for (const ParamLayout::Field& f : params.fields) fields.push_back(fmt::format("{}:{}", param_name(f.what), f.words));
  std::string s = std::visit(KindText{}, kernel) + "\n";
  s += fmt::format("launch: rank={} ax_r={} ax_c={} batch=[{}] threads={} ctas_per_sm={} smem={} zero=[{}] prepass={}\n", rank, ax_r,
                   ax_c, fmt::join(batch_axes, ","), threads, ctas_per_sm, smem_bytes, fmt::join(zero_outputs, ","),
                   prepass ? fmt::format("tensor_amax({}B)", prepass->workspace_bytes) : "none");
  s += fmt::format("params: {}\n", fmt::join(fields, " "));
  s += "schedule: " + schedule.str();
  return s;
}

Launch Plan::launch(const std::vector<int64_t>& shape, int64_t groups) const {
  Launch l;
  constexpr int64_t k31 = int64_t(1) << 31;
  const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  // Kernels count an offsets input's groups in 32 bits (mx_grouped_cols_table, the row search).
  if (groups >= k31)
    throw UsageError(fmt::format("launch: an offsets input of {} groups (kernels count them in 32 bits)", groups));
  // The direct and columns kernels index within the domain with 32-bit integers.
  auto check_32bit = [&] {
    for (size_t a = 0; a < shape.size(); ++a)
      if (shape[a] >= k31)
        throw UsageError(fmt::format("launch: input extent {} along axis {} exceeds 2^31 - 1 (this cast's kernel indexes "
                                     "the domain with 32-bit integers)", shape[a], a));
  };
  if (const auto* d = std::get_if<DirectPlan>(&kernel); d && d->block_rows > 1) {
    // 2-D blocks: x the block columns, y/z the block rows of every index of the outer row axes.
    check_32bit();
    const int64_t nblk = ceil_div(shape[size_t(ax_c)], d->block_cols);
    l.tiles_c = nblk * d->lanes_per_block;
    l.tiles_r = 1;
    for (int a = 0; a < rank; ++a)
      if (a != ax_c) l.tiles_r *= a == ax_r ? ceil_div(shape[size_t(a)], d->block_rows) : shape[size_t(a)];
    const int64_t gy = std::min<int64_t>(l.tiles_r, 65535), gz = ceil_div(l.tiles_r, gy);
    if (nblk >= k31 || gz > 65535) throw UsageError("launch: the domain is too large for one launch");
    l.grid[0] = unsigned(nblk), l.grid[1] = unsigned(gy), l.grid[2] = unsigned(gz);
    return l;
  }
  if (const auto* d = std::get_if<DirectPlan>(&kernel)) {
    // Slots: chunk positions per row; rows: every index of the axes other than ax_c. With blocked
    // scales both run on into the scale matrices' padding, which the kernel zeroes.
    l.tiles_c = ceil_div(ceil_div(shape[size_t(ax_c)], d->block_cols), d->pad_block_cols) * d->pad_block_cols * d->lanes_per_block;
    int inner = -1;
    for (int a = 0; a < rank; ++a)
      if (a != ax_c) inner = a;
    l.tiles_r = 1;
    for (int a = 0; a < rank; ++a)
      if (a != ax_c) l.tiles_r *= a == inner ? ceil_div(shape[size_t(a)], d->pad_rows) * d->pad_rows : shape[size_t(a)];
    check_32bit();
    // Grouped scale rows are placed in 32 bits (mx_grouped_rows_place): each of G groups pads at
    // most 127 rows, so the extent plus 128 G must stay below 2^31.
    for (size_t a = 0; a < shape.size() && groups > 0; ++a)
      if (groups >= k31 / 128 || shape[a] + 128 * groups >= k31)
        throw UsageError(
            fmt::format("launch: {} groups of a grouped scale layout pad an extent of {} along axis {} past 2^31 - 1 "
                        "rows (this cast's kernel places them with 32-bit integers)",
                        groups, shape[a], a));
    // x: slots of a row; y, z: groups of chunks_per_thread rows.
    const int64_t gx = ceil_div(l.tiles_c, threads), row_groups = ceil_div(l.tiles_r, d->chunks_per_thread);
    const int64_t gy = std::min<int64_t>(row_groups, 65535), gz = ceil_div(row_groups, gy);
    if (gx >= k31 || gz > 65535) throw UsageError("launch: the domain is too large for one launch");
    l.grid[0] = unsigned(gx), l.grid[1] = unsigned(gy), l.grid[2] = unsigned(gz);
    return l;
  }
  if (const auto* r = std::get_if<RowsPlan>(&kernel)) {
    // tiles_r: the lines (every index but ax_c's, row-major); tiles_c: warps per line.
    check_32bit();
    l.tiles_r = 1;
    if (r->columns) {
      // x: cols_per_cta lines along across_axis (times the cluster); y: the other axes' indices.
      for (int a = 0; a < rank; ++a)
        if (a != ax_c && a != r->across_axis) l.tiles_r *= shape[size_t(a)];
      l.tiles_c = ceil_div(shape[size_t(r->across_axis)], r->columns->cols_per_cta);
      if (l.tiles_r > 65535) throw UsageError(fmt::format("launch: {} line tiles along the batch axes exceed 65535", l.tiles_r));
      const JaggedPlan& j = *r->columns;
      int64_t k = j.cluster;
      if (j.cluster_at_launch) {
        // The fewest CTAs (a power of two) whose parts of the whole axis (16-row multiples) fit
        // the row cache, at most j.cluster: a short axis is not cut into slivers.
        const int64_t n = shape[size_t(ax_c)];
        auto part = [&](int64_t c) { return ((n + c - 1) / c + 15) / 16 * 16; };
        for (k = 1; k < j.cluster && part(k) > j.cached_rows;) k *= 2;
        l.cluster = unsigned(k);
      }
      if (l.tiles_c * k >= k31) throw UsageError("launch: the domain is too large for one launch");
      l.grid[0] = unsigned(l.tiles_c * k), l.grid[1] = unsigned(l.tiles_r);
      return l;
    }
    if (r->across_axis >= 0) {
      // tiles_r: the other axes' indices; tiles_c: groups of 32 lines along across_axis.
      for (int a = 0; a < rank; ++a)
        if (a != ax_c && a != r->across_axis) l.tiles_r *= shape[size_t(a)];
      l.tiles_c = ceil_div(shape[size_t(r->across_axis)], 32);
      const int64_t g = l.tiles_r * l.tiles_c;
      if (g >= k31) throw UsageError(fmt::format("launch: {} tiles exceed one launch's 2^31 CTAs", g));
      l.grid[0] = unsigned(g);
      return l;
    }
    for (int a = 0; a < rank; ++a)
      if (a != ax_c) l.tiles_r *= shape[size_t(a)];
    if (l.tiles_r >= k31)
      throw UsageError(
          fmt::format("launch: {} lines exceed 2^31 - 1 (the rows kernel counts lines in 32 bits)", l.tiles_r));
    l.tiles_c = rows_warps_per_line(shape[size_t(ax_c)], threads, r->chunks_per_thread);
    l.grid[0] = unsigned(ceil_div(l.tiles_r, threads / 32 / l.tiles_c));
    return l;
  }
  if (const auto* j = std::get_if<JaggedPlan>(&kernel)) {
    l.tiles_c = ceil_div(shape[size_t(ax_c)], j->cols_per_cta);
    // Rows of a tile: the vector kernel's cache (tiles only bound the domain here), 1 for the scalar one.
    const int64_t tiles = l.tiles_c * ceil_div(shape[size_t(ax_r)], std::max(1, j->vector ? j->cached_rows : 1));
    if (tiles >= k31) throw UsageError(fmt::format("launch: {} tiles exceed one launch's 2^31 CTAs", tiles));
    // x: cols_per_cta columns (times the cluster: its CTAs are neighbours along x); y: one CTA row
    // per group, plus one for the rows past the last end.
    int64_t k = j->cluster;
    if (j->plain) {
      // The smallest kernel whose row cache holds the groups' mean size; the large groups' kernel past them.
      const int64_t rows = shape[size_t(ax_r)], g = std::max<int64_t>(groups, 1);
      const bool large = rows > g * j->plain->cached_rows;
      k = large ? j->cluster : 1;
      l.entry = large ? 1 : 0;
      if (!large) l.smem_bytes = j->plain->smem_bytes;
      if (j->small && rows <= g * j->small->cached_rows) {
        l.entry = 2;
        l.smem_bytes = j->small->smem_bytes;
        l.threads = j->small->threads;
      }
    }
    const int64_t gx = l.tiles_c * k;
    if (groups + 1 > 65535) throw UsageError(fmt::format("launch: {} groups exceed 65534", groups));
    if (gx >= k31) throw UsageError("launch: the domain is too large for one launch");
    l.tiles_r = groups;
    l.grid[0] = unsigned(gx), l.grid[1] = unsigned(groups + 1);
    return l;
  }
  const auto [tr, tc] = tile();
  l.tiles_c = ceil_div(shape[size_t(ax_c)], tc);
  l.tiles_r = ax_r >= 0 ? ceil_div(shape[size_t(ax_r)], tr) : 1;
  int64_t grid = l.tiles_c * l.tiles_r;
  for (int a : batch_axes) grid *= shape[size_t(a)];
  if (grid >= k31) throw UsageError(fmt::format("launch: {} tiles exceed one launch's 2^31 CTAs", grid));
  if (kind == KernelKind::columns) {
    check_32bit();
    l.persistent = columns().stages > 1;  // persistent CTAs walk the tiles
  }
  l.grid[0] = unsigned(grid);
  return l;
}

std::vector<std::string> Plan::entry_names() const {
  if (const auto* j = std::get_if<JaggedPlan>(&kernel); j && j->plain) {
    std::vector<std::string> names{kernel_name, kernel_name + (j->cluster > 1 ? "_cluster" : "_large")};
    if (j->small) names.push_back(kernel_name + "_small");
    return names;
  }
  return {kernel_name};
}

int64_t rows_warps_per_line(int64_t extent, int threads, int chunks_per_thread) {
  int64_t w = 1;
  while (w < threads / 32 && w * 32 * chunks_per_thread * 8 < extent) w *= 2;
  return w;
}

bool chunk_dequant(const Pipeline& p, int ax_c, const StrideClass& sc, const NodePtr& n) {
  if (n->op != Op::dequant || n->block.axes.size() != 1 || n->block.axes[0] != ax_c || n->block.sizes[0] % 8 != 0) return false;
  return sc.vector_along(size_t(p.input_index(n->args[0]->name)), ax_c);
}

}  // namespace mxjit::detail
