// `mxjit explore`: sweep the scale-layout variants and plan parameters of one pipeline on one
// shape, rank them, draw them (SVG), and store the fastest plan in the kernel cache, where jit()
// finds it in later processes.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "bench/explore.hpp"
#include "codegen/plan.hpp"
#include "dsl/errors.hpp"
#include "dsl/text.hpp"
#include "runtime/device.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace mxjit::tool {
namespace {

struct ExploreFlags {
  std::string spec, shape, svg;
  bool no_layouts = false, no_store = false;
  std::vector<std::string> schedules;
  int rounds = 1;
};

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> s;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v <= 0) throw std::invalid_argument(item);
      s.push_back(v);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("--shape '{}': '{}' is not a positive extent (write e.g. 16384,5120)", text, item));
    }
  }
  return s;
}

int run_explore(const ExploreFlags& f) {
  Pipeline p = parse_pipeline(f.spec);
  std::vector<int64_t> shape = parse_shape(f.shape);
  if (int(shape.size()) != p.rank())
    throw UsageError(fmt::format("--shape has {} extents but the spec's input has rank {}", shape.size(), p.rank()));
  for (const std::string& t : f.schedules) Schedule::parse(t);  // bad text is an error with or without a GPU
  if (!gpu_available()) {
    print_error(fmt::format("explore needs a GPU: {}", gpu_unavailable_reason()));
    return kExitUsage;
  }
  bench::ExploreOptions o;
  o.layout_variants = !f.no_layouts;
  o.store = !f.no_store;
  o.schedules = f.schedules;
  o.rounds = f.rounds;
  bench::ExploreResult r = bench::explore(p, shape, o, [](int done, int total) {
    const int w = 40, filled = done * w / total;
    std::fprintf(stderr, "\r[%s%s] %d/%d", std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(w - filled), '.').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
  });
  fmt::print("{:>4} {:<22} {:<44} {:>10} {:>8} {}\n", "rank", "variant", "schedule", "us", "% copy", "check");
  for (size_t i = 0; i < r.rows.size(); ++i)
    fmt::print("{:>4} {:<22} {:<44} {:>10.1f} {:>7.1f}% {}\n", i + 1, r.rows[i].variant, r.rows[i].schedule, r.rows[i].us,
               r.rows[i].pct_copy, r.rows[i].checked ? "ok" : "FAIL");
  if (!r.stored.empty()) fmt::print("stored {} for this pipeline and shape class in the kernel cache\n", r.stored);
  if (!f.svg.empty()) {
    std::ofstream out(f.svg);
    out << bench::explore_svg(r, to_text(p) + "  " + f.shape);
    if (!out) throw UsageError(fmt::format("--svg '{}': cannot write the file", f.svg));
    fmt::print("wrote {}\n", f.svg);
  }
  for (const auto& row : r.rows)
    if (!row.checked) return kExitFailure;
  return kExitOk;
}

Action setup(CLI::App& app) {
  auto f = std::make_shared<ExploreFlags>();
  app.add_option("--spec", f->spec, "the pipeline, in the text form")->required();
  app.add_option("--shape", f->shape, "the input's extents, e.g. 16384,5120")->required();
  app.add_option("--svg", f->svg, "write a ranked bar chart here");
  app.add_flag("--no-layouts", f->no_layouts, "do not try other scale layouts");
  app.add_flag("--no-store", f->no_store, "do not store the winner in the kernel cache");
  app.add_option("--schedule,--tuning", f->schedules,
                 "time only this schedule (repeatable), as explore prints it, e.g. \"tune(ctas_per_sm=3)\"");
  app.add_option("--rounds", f->rounds, "time every schedule this many times, interleaved; report medians")->check(CLI::Range(1, 100));
  return [f] { return run_explore(*f); };
}

const bool kRegistered = register_command(
    {"explore", "sweep layouts and plan parameters for one pipeline and shape; store the winner (GPU)", setup});

}  // namespace
}  // namespace mxjit::tool
