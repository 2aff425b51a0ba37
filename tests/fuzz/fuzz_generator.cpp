// libFuzzer target: the generator fuzzer (pipeline_gen.hpp, generator_check.hpp). Any bytes give a
// case whose pipeline builds or is refused with a UsageError, compiles with NVRTC for sm_90a and
// sm_100a or is refused with a UsageError, and runs bit-identical with the reference on the CPU
// backend (and the GPU where there is one) or is refused with a UsageError. The seeded driver
// (generator_driver.cpp) runs the same check in CI.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "generator_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static mxjit::fuzz::Stats stats;
  try {
    mxjit::fuzz::check_case(data, size, stats);
  } catch (const mxjit::fuzz::Defect& d) {
    std::fprintf(stderr, "generator fuzzer: %s\n", d.what());
    std::abort();
  }
  return 0;
}
