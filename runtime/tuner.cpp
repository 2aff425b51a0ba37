#include "runtime/tuner.hpp"

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"
#include "codegen/plan_rules.hpp"
#include "codegen/values.hpp"
#include "runtime/compile.hpp"

namespace mxjit::detail {

std::string shape_class(const Pipeline& p, const std::vector<int64_t>& shape) {
  const int64_t n = element_count(shape).value_or(kMaxElements);
  std::string c = n < (int64_t(1) << 20) ? "s" : (n < (int64_t(1) << 26) ? "m" : "l");
  const int w = whole_axis(collect_values(p));
  if (w >= 0 && size_t(w) < shape.size() && shape[size_t(w)] <= kShortWholeAxis) c += "w";
  return c;
}

std::string schedule_key(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& cls) {
  return p.hash().hex() + "/" + t.arch + "/" + sc.str() + "/" + cls + "/" + kGeneratorVersion;
}

Schedule stored_schedule(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& cls) {
  if (auto v = disk_cache().get_tuned(schedule_key(p, t, sc, cls))) {
    try {
      return Schedule::parse(*v);
    } catch (const Error&) {
      // A damaged row means "not tuned".
    }
  }
  return Schedule{};
}

void store_schedule(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& cls, const Schedule& schedule) {
  disk_cache().put_tuned(schedule_key(p, t, sc, cls), schedule.str());
}

std::vector<Schedule> schedule_candidates(const Pipeline& p, const Target& t, const StrideClass& sc) {
  std::vector<Schedule> out{Schedule{}};
  auto add = [&](const Schedule& s) {
    try {
      make_plan(p, t, sc, s);  // e.g. a ring too large for the CTAs asked for, a block larger than the tile
      out.push_back(s);
    } catch (const Error&) {
    }
  };
  const Plan base = make_plan(p, t, sc);
  if (base.kind == KernelKind::jagged) {
    // The vector kernel: columns per CTA x rows in flight per thread x CTAs per SM (the cap that
    // keeps a CTA's rows in L2 between its two passes); the scalar kernel: rows in flight.
    // With clusters (sm_90+), CTAs per group too: more CTAs per SM, each caching fewer rows. The
    // one-CTA candidates say cluster=1: without it, row-major codes plan two kernels (JaggedPlan::plain).
    if (base.jagged().vector) {
      for (int w : {32, 64, 128})
        for (int u : {4, 8})
          for (int mb : {1, 2, 3, 4})
            add(Schedule{.tile_cols = w, .ctas_per_sm = mb, .rows_in_flight = u, .cluster = 1});
      if (t.sm() >= 90)
        for (int k : {2, 4, 8})
          for (int w : {64, 128})
            for (auto [u, mb] : {std::pair{8, 2}, std::pair{4, 4}, std::pair{4, 6}, std::pair{4, 8}})
              add(Schedule{.tile_cols = w, .ctas_per_sm = mb, .rows_in_flight = u, .cluster = k});
      // Column-major codes: runs of 4, 8 or 16 rows (refused for row-major codes).
      for (int w : {32, 64})
        for (int r : {4, 8, 16}) add(Schedule{.tile_cols = w, .rows_per_thread = r});
    } else {
      for (int u : {1, 2, 4, 8, 16})
        if (u != base.jagged().rows_in_flight) add(Schedule{.rows_in_flight = u});
    }
    return out;
  }
  if (base.kind == KernelKind::rows) {
    // Across lines on columns: the jagged vector kernel's tunings, clusters splitting the whole
    // axis; along the line: chunks a thread holds x CTAs per SM.
    if (base.rows().columns) {
      for (int w : {32, 64})
        for (int mb : {1, 2, 3, 4}) {
          add(Schedule{.tile_cols = w, .ctas_per_sm = mb});
          for (int k : {2, 4, 8, 16})
            if (k <= t.max_cluster()) {
              add(Schedule{.tile_cols = w, .ctas_per_sm = mb, .cluster = k});
              // Column-major codes: runs of 8 rows (refused for row-major codes).
              add(Schedule{.tile_cols = w, .ctas_per_sm = mb, .rows_per_thread = 8, .cluster = k});
            }
        }
    } else {
      for (int u : {2, 4, 8})
        for (int mb : {2, 4, 8}) add(Schedule{.ctas_per_sm = mb, .chunks_per_thread = u});
    }
    return out;
  }
  if (base.kind == KernelKind::columns)
    for (int rows : {8, 16})
      for (int mb : {1, 2, 3, 4})
        for (int st : {1, 2, 3}) add(Schedule{.ctas_per_sm = mb, .rows_per_thread = rows, .stages = st});
  if (base.kind == KernelKind::direct)
    for (int u : {1, 2, 4})
      for (int mb : {4, 6, 8}) add(Schedule{.ctas_per_sm = mb, .chunks_per_thread = u});
  for (int tr : {32, 64})
    for (int mb : {2, 3, 4})
      for (int w : {16, 32})
        add(Schedule{.kernel = KernelKind::tiled, .tile_rows = tr, .tile_cols = 128, .ctas_per_sm = mb, .hoist_loads = 1, .rows_per_thread = w});
  return out;
}

}  // namespace mxjit::detail
