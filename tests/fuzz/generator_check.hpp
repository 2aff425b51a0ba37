#pragma once
// The generator fuzzer's check of one case (pipeline_gen.hpp): the pipeline either builds or is
// refused with a UsageError; the CUDA generator and NVRTC either compile it for sm_90a and sm_100a
// (for the stride class of the launch's inputs) or refuse it with a UsageError, never an NVRTC
// error; the CPU backend (and the GPU, where there is one) either give outputs bit-identical with
// the reference on the case's inputs (every output poisoned differently first, guard bytes
// untouched) or refuse with a UsageError, and refuse whatever the reference refuses.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace mxjit::fuzz {

/// What the cases so far did, for the run's summary.
struct Stats {
  int cases = 0;
  int built = 0;                          ///< pipelines that built
  int compiled = 0, compile_refused = 0;  ///< NVRTC compiles (both arches count), generator refusals
  int reference_ran = 0, reference_refused = 0;
  int cpu_matched = 0, cpu_refused = 0;   ///< bit-identical runs, refusals (not lowered or bad input)
  int gpu_matched = 0, gpu_refused = 0;
  int too_big = 0;                        ///< outputs too large to allocate here: not run
  int64_t bytes_compared = 0;
  std::map<std::string, int> refusals;    ///< UsageError messages, numbers and names left out
  std::string last_recipe;                ///< the last case's choices
  bool echo = false;                      ///< print each case's choices (stderr) before it runs
};

/// A defect: a crash-free but wrong outcome (a mismatch, an NVRTC error, an exception that is
/// not a UsageError, a backend accepting what the reference refuses). what() says which and
/// gives the case's recipe.
struct Defect : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs the case that `data` describes. Throws Defect.
void check_case(const uint8_t* data, size_t size, Stats& stats);

/// The stats as a few lines of text.
std::string summary(const Stats& s);

}  // namespace mxjit::fuzz
