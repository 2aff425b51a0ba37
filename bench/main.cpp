// mxjit_bench [filter] [out_prefix]: the benchmark program (see bench/bench.hpp).
#include <cstdio>

#include "bench/bench.hpp"
#include "dsl/errors.hpp"
#include "runtime/device.hpp"

int main(int argc, char** argv) {
  if (!mxjit::gpu_available()) {
    std::printf("mxjit_bench: no GPU (%s); timings are only taken on a GPU\n", mxjit::gpu_unavailable_reason().c_str());
    return 0;
  }
  mxjit::bench::BenchOptions o;
  if (argc > 1) o.filter = argv[1];
  if (argc > 2) o.out_prefix = argv[2];
  try {
    auto rows = mxjit::bench::run_bench(o);
    for (const auto& r : rows)
      if (!r.checked) return 1;
  } catch (const mxjit::Error& e) {
    std::fprintf(stderr, "mxjit_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
