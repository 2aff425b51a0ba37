// `mxjit bench`: the benchmark program (bench/bench.hpp) — copy bandwidth, then every cast case
// checked against the reference and timed; a table on stdout, CSV/JSON/SVG files on request.
#include <memory>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "codegen/plan.hpp"
#include "dsl/errors.hpp"
#include "runtime/device.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace mxjit::tool {
namespace {

struct BenchFlags {
  std::string filter, out, schedule;
  int repeats = 20;
  bool no_large = false, no_small = false, synced = false;
};

int run_bench(const BenchFlags& f) {
  if (!f.schedule.empty()) Schedule::parse(f.schedule);  // bad text is an error with or without a GPU
  if (!gpu_available()) {
    print_error(fmt::format("bench needs a GPU: {}", gpu_unavailable_reason()));
    return kExitUsage;
  }
  bench::BenchOptions o;
  o.filter = f.filter;
  o.out_prefix = f.out;
  o.repeats = f.repeats;
  o.large = !f.no_large;
  o.small_sweep = !f.no_small;
  o.schedule = f.schedule;
  o.synced = f.synced;
  auto rows = bench::run_bench(o);
  for (const auto& r : rows)
    if (!r.checked) {
      print_error(fmt::format("case '{}' {} does not match the CPU reference", r.name, r.shape));
      return kExitFailure;
    }
  if (!f.out.empty()) fmt::print("wrote {0}.csv, {0}.json, {0}.svg\n", f.out);
  return kExitOk;
}

Action setup(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  app.add_option("--filter", f->filter, "run only cases whose name contains this text");
  app.add_option("--out", f->out, "write <prefix>.csv, <prefix>.json and <prefix>.svg");
  app.add_option("--repeats", f->repeats, "timed runs per case (the median is reported)")->check(CLI::Range(5, 1000));
  app.add_flag("--no-large", f->no_large, "skip the large shapes");
  app.add_flag("--no-small", f->no_small, "skip the small-shape launch-overhead sweep");
  app.add_flag("--synced", f->synced,
               "time each launch alone (the host's launch latency included; the method before 2026-11-28) "
               "instead of launches queued back to back");
  app.add_option("--schedule,--tuning", f->schedule,
                 "time every case with this schedule, as `mxjit explore` prints it (e.g. \"tune(ctas_per_sm=3, chunks_per_thread=4)\")");
  return [f] { return run_bench(*f); };
}

const bool kRegistered =
    register_command({"bench", "time every cast case against the device's copy bandwidth (GPU)", setup});

}  // namespace
}  // namespace mxjit::tool
