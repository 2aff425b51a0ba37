#include "bench/explore.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "bench/bench.hpp"
#include "codegen/plan.hpp"
#include "dsl/errors.hpp"
#include "mxjit/mxjit.hpp"
#include "runtime/compile.hpp"
#include "runtime/tuner.hpp"

namespace mxjit::bench {
namespace {

// The pipeline with output `o`'s scale layout replaced by `l`.
Pipeline with_scale_layout(const Pipeline& p, size_t o, const Layout& l) {
  std::vector<Output> outs = p.outputs();
  outs[o].layout = l;
  return pipeline(outs);
}

}  // namespace

ExploreResult explore(const Pipeline& p, const std::vector<int64_t>& shape, const ExploreOptions& options,
                      const std::function<void(int, int)>& progress) {
  if (options.rounds < 1 || options.rounds > 100)
    throw UsageError(fmt::format("explore: rounds {} must be 1..100", options.rounds));
  ExploreResult res;
  std::vector<std::pair<std::string, Pipeline>> variants = {{"as given", p}};
  if (options.layout_variants)
    for (size_t o = 0; o < p.outputs().size(); ++o) {
      const Output& out = p.outputs()[o];
      if (out.kind != OutputKind::scales || out.dtype != DType::u8 || block_of(out.node).axes.size() != 1 ||
          block_of(out.node).jagged())
        continue;
      for (const Layout& l : {Layout::linear(), Layout::blocked_128x4(), Layout::blocked_8x4()})
        if (!(l == out.layout)) variants.emplace_back(out.name + ":" + l.str(), with_scale_layout(p, o, l));
    }
  const Target t = current_target();
  struct Job {
    size_t variant;
    Schedule schedule;
  };
  std::vector<Job> jobs;
  std::vector<Schedule> asked;
  for (const std::string& text : options.schedules) asked.push_back(Schedule::parse(text));
  for (size_t v = 0; v < variants.size(); ++v) {
    const detail::StrideClass sc = detail::contiguous_stride_class(variants[v].second, shape);
    if (options.schedules.empty()) {
      for (const Schedule& s : detail::schedule_candidates(variants[v].second, t, sc)) jobs.push_back({v, s});
      continue;
    }
    for (size_t i = 0; i < asked.size(); ++i) {
      try {
        detail::make_plan(variants[v].second, t, sc, asked[i]);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("explore: schedule '{}' does not apply to variant '{}': {}", options.schedules[i], variants[v].first,
                                     e.what()));
      }
      jobs.push_back({v, asked[i]});
    }
  }
  res.copy_gbps = copy_bandwidth();
  std::vector<std::vector<double>> us(jobs.size());
  std::vector<bool> checked(jobs.size(), true);
  std::vector<double> bytes(jobs.size(), 0);
  int done = 0;
  for (int round = 0; round < options.rounds; ++round)
    for (size_t i = 0; i < jobs.size(); ++i) {
      Kernel k = jit(variants[jobs[i].variant].second, t, jobs[i].schedule);
      Timing tm = time_kernel(k, shape, 15);
      us[i].push_back(tm.us);
      checked[i] = checked[i] && tm.checked;
      bytes[i] = tm.bytes;
      if (progress) progress(++done, int(jobs.size()) * options.rounds);
    }
  double best_given = 0;
  Schedule best;
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::sort(us[i].begin(), us[i].end());
    const double m = us[i][us[i].size() / 2];
    res.rows.push_back({variants[jobs[i].variant].first, jobs[i].schedule.str(), m, 100.0 * bytes[i] / (m * 1e-6) / 1e9 / res.copy_gbps,
                        bool(checked[i])});
    if (jobs[i].variant == 0 && checked[i] && (best_given == 0 || m < best_given)) {
      best_given = m;
      best = jobs[i].schedule;
    }
  }
  std::sort(res.rows.begin(), res.rows.end(), [](const ExploreRow& a, const ExploreRow& b) { return a.us < b.us; });
  if (options.store && best_given > 0) {
    detail::store_schedule(p, t, detail::contiguous_stride_class(p, shape), detail::shape_class(p, shape), best);
    res.stored = best.str();
  }
  return res;
}

std::string explore_svg(const ExploreResult& r, const std::string& title) {
  const int bar = 16, left = 420, width = 420;
  double worst = 0;
  for (const ExploreRow& row : r.rows) worst = std::max(worst, row.us);
  std::string s = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='monospace' font-size='11'>\n",
      left + width + 120, 40 + bar * int(r.rows.size()));
  s += fmt::format("<text x='10' y='18' font-size='13'>{} (us, fastest first; copy {:.0f} GB/s)</text>\n", title,
                   r.copy_gbps);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const ExploreRow& row = r.rows[i];
    const int y = 30 + bar * int(i);
    const double w = worst > 0 ? row.us / worst * width : 0;
    s += fmt::format("<text x='{}' y='{}' text-anchor='end'>{} {}</text>\n", left - 6, y + 11, row.variant, row.schedule);
    s += fmt::format("<rect x='{}' y='{}' width='{:.1f}' height='{}' fill='{}'/>\n", left, y + 2, w, bar - 4,
                     i == 0 ? "#3a7" : (row.checked ? "#79b" : "#d44"));
    s += fmt::format("<text x='{:.1f}' y='{}'>{:.1f} us ({:.0f}%)</text>\n", left + w + 4, y + 11, row.us, row.pct_copy);
  }
  return s + "</svg>\n";
}

}  // namespace mxjit::bench
