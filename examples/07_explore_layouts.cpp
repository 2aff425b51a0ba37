// Lesson 7: exploring layouts and plans for one shape.
//
// "Which scale layout / tile shape / vector width is fastest here?" is answered by a sweep, not by
// editing kernels. A pipeline's schedule (which kernel kind, chunks per thread, CTAs per SM, ...)
// is a value with named fields, tune(...); the tuner's candidates for this pipeline are listed
// below, each a different specialised kernel (each compiles here without a GPU). On a GPU, the
// sweep times them (and the scale-layout variants) and stores the winner in the SQLite cache, so
// that jit() in every later process uses it: `mxjit explore --spec ... --shape ...`.
#include "bench/explore.hpp"
#include "example_util.hpp"
#include "runtime/compile.hpp"
#include "runtime/tuner.hpp"

int main() {
  using namespace mxjit;
  Pipeline p = parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4");
  const Target t = Target::parse("sm_90a");
  const detail::StrideClass sc = detail::default_stride_class(p);
  std::vector<Schedule> cands = detail::schedule_candidates(p, t, sc);
  std::printf("%zu candidate schedules for %s\n", cands.size(), to_text(p).c_str());
  for (size_t i = 0; i < cands.size(); i += 4) {
    detail::Plan plan = detail::make_plan(p, t, sc, cands[i]);
    std::printf("  %s -> %s kernel, %d threads, %d B shared memory\n", cands[i].str().c_str(), kernel_kind_name(plan.kind),
                plan.threads, plan.smem_bytes);
  }
  if (!gpu_available()) {
    detail::CompileOptions o;
    o.schedule = cands.back();
    detail::compile(p, t, sc, o);
    std::printf("no GPU: compiled the last candidate for %s; run `mxjit explore` on a GPU to time them\n",
                t.arch.c_str());
    return 0;
  }
  bench::ExploreOptions eo;
  eo.store = false;  // every scale layout, the tuner's candidates, nothing stored
  bench::ExploreResult r = bench::explore(p, {4096, 4096}, eo);
  for (size_t i = 0; i < r.rows.size() && i < 5; ++i)
    std::printf("  #%zu %-18s %-44s %8.1f us\n", i + 1, r.rows[i].variant.c_str(), r.rows[i].schedule.c_str(), r.rows[i].us);
  return 0;
}
