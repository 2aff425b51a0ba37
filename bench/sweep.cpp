// mxjit_sweep: times schedules of the main cast shapes — the measurements
// behind the default plan parameters.
#include <fmt/format.h>

#include "bench/bench.hpp"
#include "mxjit/mxjit.hpp"

using namespace mxjit;

static Pipeline cast(int axis, Layout q) {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, axis, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", mxjit::cast(e4m3, x / s), q), output("s", s)});
}
static Pipeline fused() {
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q0", mxjit::cast(e4m3, x / s0)), output("s0", s0),
                   output("q1", mxjit::cast(e4m3, x / s1), layout::col_major()), output("s1", s1)});
}

int main(int argc, char** argv) {
  if (!gpu_available()) {
    fmt::print("mxjit_sweep: no GPU ({})\n", gpu_unavailable_reason());
    return 0;
  }
  std::string filter = argc > 1 ? argv[1] : "";
  const double copy = bench::copy_bandwidth();
  fmt::print("copy {:.0f} GB/s\n", copy);
  std::vector<std::pair<std::string, Pipeline>> ps = {{"dim0", cast(1, layout::row_major())},
                                                        {"dim1", cast(0, layout::col_major())},
                                                        {"fused", fused()}};
  std::vector<Schedule> ts;
  for (int mb : {1, 2, 3, 4})
    for (int hoist : {0, 1})
      for (int w : {16, 32})
        for (int tr : {32, 64})
          ts.push_back(Schedule{.kernel = KernelKind::tiled, .tile_rows = tr, .tile_cols = 128, .ctas_per_sm = mb, .hoist_loads = hoist,
                                .rows_per_thread = w});
  for (int u : {2, 4, 8})
    for (int mb : {2, 4, 6}) ts.push_back(Schedule{.ctas_per_sm = mb, .chunks_per_thread = u});
  const Target target = current_target();
  for (auto& [name, p] : ps) {
    if (!filter.empty() && name != filter) continue;
    for (const Schedule& t : ts) {
      if (t.kernel != KernelKind::tiled && name != "dim0") continue;
      Kernel k = jit(p, target, t);
      bench::Timing tm = bench::time_kernel(k, {16384, 16384}, 15);
      fmt::print("{:<6} {:<34} {:8.1f} us {:6.1f}% {}\n", name, t.str(), tm.us, 100.0 * tm.bytes / (tm.us * 1e-6) / 1e9 / copy,
                 tm.checked ? "ok" : "FAIL");
    }
  }
  return 0;
}
